// Stages that combine their input with filtered copies of it (gradient-magnitude, dog, unsharp,
// subtract-background): the filters run on the band, then one pass per row combines them.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ops/convolution/fold_taps.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"
#include "ops/pipeline/chain_impl.hpp"
#include "ops/stage_registry.hpp"

namespace ooc::detail {
#if defined(OOC_HAVE_CUDA)
// combine_cuda.cpp: a volume's gradient magnitude from its three derivatives `g`.
std::unique_ptr<CudaKernel> make_magnitude3_cuda(const std::vector<int>& devices,
                                                 std::vector<const Operation*> g, bool f64,
                                                 SampleType out);
std::size_t magnitude3_cuda_scratch(const std::vector<const Operation*>& g, std::int64_t band_rows,
                                    std::int64_t row_samples, bool f64);
#endif
namespace {

// A band of `b` for a sub-operation of halo h <= b.halo and plane halo ph <= b.plane_halo, its
// rows in `table` where the planes must be picked out.
CpuBand sub_band(const CpuBand& b, std::int64_t h, std::int64_t ph, const BandView& out,
                 std::vector<const std::byte*>& table) {
  CpuBand s = b;
  s.rows = b.rows + (b.halo - h);
  s.halo = h;
  s.plane_halo = ph;
  s.out = out;
  s.partial = nullptr;
  if (b.plane_halo > 0) {  // the middle 2 ph + 1 planes, each plane's rows from row halo - h
    const std::int64_t count = b.band.rows + 2 * b.halo, sub = b.band.rows + 2 * h;
    table.resize(static_cast<std::size_t>(sub * (2 * ph + 1)));
    for (std::int64_t k = 0; k <= 2 * ph; ++k) {
      const std::byte* const* from = b.rows + (b.plane_halo - ph + k) * count + (b.halo - h);
      std::copy(from, from + sub, table.begin() + k * sub);
    }
    s.rows = table.data();
  }
  return s;
}

// sqrt(a^2 + b^2 + c^2) of the three Sobel derivatives of a volume, in Acc, to Out; spelled one
// rounding at a time as combine_row's magnitude is.
template <class Acc, class Out>
void magnitude3_row(const Acc* a, const Acc* b, const Acc* c, std::byte* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const Acc p = a[i] * a[i];
    const Acc q = b[i] * b[i];
    const Acc r = c[i] * c[i];
    const Acc s = p + q;
    kernels::store<Out>(out, i, kernels::convert_sample<Acc, Out>(std::sqrt(s + r)));
  }
}

class CombineKernel final : public CpuKernel {
 public:
  CombineKernel(kernels::CombineKind kind, double amount, std::vector<const Operation*> g, bool f64,
                SampleType out)
      : kind_(kind), amount_(amount), g_(std::move(g)), f64_(f64), out_(out) {
    for (const Operation* op : g_) k_.push_back(op->make_cpu());
  }
  void start(int slot) override {
    for (auto& k : k_) k->start(slot);
  }
  void stop(int slot) override {
    for (auto& k : k_) k->stop(slot);
  }
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples(), rows = b.band.rows;
    const std::size_t acc = f64_ ? 8 : 4, row_bytes = static_cast<std::size_t>(n) * acc;
    detail::ScratchBuffer buf = pool_.take(k_.size() * row_bytes * static_cast<std::size_t>(rows));
    const SampleType at = f64_ ? SampleType::f64 : SampleType::f32;
    std::vector<BandView> v;
    std::vector<const std::byte*> table;
    for (std::size_t i = 0; i < k_.size(); ++i) {
      v.push_back(
          {buf.data() + i * row_bytes * rows, row_bytes, rows, b.in.width, b.in.channels, at});
      k_[i]->run(sub_band(b, g_[i]->halo(), g_[i]->plane_halo(), v[i], table));
    }
    const bool reads_x =
        kind_ == kernels::CombineKind::subtract || kind_ == kernels::CombineKind::unsharp;
    // The input's own rows: the middle plane's.
    const std::int64_t centre = b.plane_halo * (b.band.rows + 2 * b.halo);
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t y) {
      const std::byte* x = reads_x ? b.rows[centre + b.halo + y] : nullptr;
      dispatch_type(b.in.type, [&](auto in) {
        dispatch_type(out_, [&](auto out) {
          using In = decltype(in);
          using Out = decltype(out);
          auto row = [&](auto acc) {
            using Acc = decltype(acc);
            auto g = [&](std::size_t i) {
              return i < v.size() ? reinterpret_cast<const Acc*>(v[i].row(y)) : nullptr;
            };
            if (v.size() == 3)
              magnitude3_row<Acc, Out>(g(0), g(1), g(2), b.out.row(y), n);
            else
              kernels::combine_row<In, Acc, Out>(kind_, x, g(0), g(1), b.out.row(y), n, amount_);
          };
          if (f64_)
            row(double{});
          else
            row(float{});
        });
      });
    });
    pool_.give(std::move(buf));
  }

 private:
  kernels::CombineKind kind_;
  double amount_;
  std::vector<const Operation*> g_;
  bool f64_;
  SampleType out_;
  std::vector<std::unique_ptr<CpuKernel>> k_;
  BufferPool pool_;
};

class CombineOp final : public Operation {
 public:
  // out: the accumulator's type, or that of a convert fused into the stage. g: the filtered
  // copies (one, two, or a volume's three Sobel derivatives).
  CombineOp(const ImageSpec& in, kernels::CombineKind kind, double amount,
            std::vector<std::unique_ptr<Operation>> g, BorderMode border, bool f64, SampleType out,
            std::string what)
      : in_(in),
        out_{in.width, in.height, in.channels, out, in.depth, in.stack},
        kind_(kind),
        amount_(amount),
        g_(std::move(g)),
        border_(border),
        f64_(f64),
        what_(std::move(what)) {}
  // The call and how its filters compute (the FFT or the direct sum).
  std::string describe() const override {
    std::string d = what_ + ": ";
    for (std::size_t i = 0; i < g_.size(); ++i) d += (i ? "; " : "") + g_[i]->describe();
    return d;
  }
  std::string fingerprint() const override {
    std::string f = what_ + " (" + exact_number(amount_) + ": ";
    for (std::size_t i = 0; i < g_.size(); ++i) f += (i ? "; " : "") + g_[i]->fingerprint();
    return f + ") to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override {
    std::int64_t h = 0;
    for (const auto& g : g_) h = std::max(h, g->halo());
    return h;
  }
  std::int64_t plane_halo() const override {
    std::int64_t h = 0;
    for (const auto& g : g_) h = std::max(h, g->plane_halo());
    return h;
  }
  BorderMode border() const override { return border_; }
  std::optional<std::int64_t> column_halo() const override {
    std::int64_t h = 0;
    for (const auto& g : g_) {
      const auto c = g->column_halo();
      if (!c) return std::nullopt;
      h = std::max(h, *c);
    }
    return h;
  }
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    std::size_t n = 0;
    for (const auto& g : g_) n += g->cpu_scratch_bytes(rows, cols);
    return n;
  }
  // The filtered copies of a band (a buffer from the pool a band being computed).
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    std::size_t n = g_.size() * static_cast<std::size_t>(rows) *
                    static_cast<std::size_t>(cols * in_.channels) * (f64_ ? 8 : 4);
    for (const auto& g : g_) n += g->cpu_band_bytes(rows, cols);
    return n;
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
#if defined(OOC_HAVE_CUDA)
    if (g_.size() > 2) return magnitude3_cuda_scratch(filters(), rows, in_.row_samples(), f64_);
#endif
    return detail::combine_cuda_scratch(g_[0].get(), second(), rows, in_.row_samples(), f64_);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<CombineKernel>(kind_, amount_, filters(), f64_, out_.type);
  }
  // A volume's gradient magnitude: its three derivatives' chains (combine_cuda.cpp).
  bool has_cuda() const override {
    if (g_.size() <= 2) return kCudaBuilt && g_[0]->has_cuda();
    return kCudaBuilt &&
           std::all_of(g_.begin(), g_.end(), [](const auto& g) { return g->has_cuda(); });
  }
  bool cpu_gives_cuda_bits() const override {
    for (const auto& g : g_)
      if (!g->cpu_gives_cuda_bits()) return false;
    return true;
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    if (g_.size() > 2) return make_magnitude3_cuda(devices, filters(), f64_, out_.type);
#endif
    return detail::make_combine_cuda(devices, kind_, amount_, g_[0].get(), second(), halo(),
                                     in_.type, f64_, out_.type);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::combine;
    for (const auto& g : g_) c.stages.push_back(g->cost());
    return c;
  }

 private:
  const Operation* second() const {
    return g_.size() > 1 ? g_[1].get() : nullptr;
  }
  std::vector<const Operation*> filters() const {
    std::vector<const Operation*> g;
    for (const auto& op : g_) g.push_back(op.get());
    return g;
  }
  ImageSpec in_, out_;
  kernels::CombineKind kind_;
  double amount_;
  std::vector<std::unique_ptr<Operation>> g_;
  BorderMode border_;
  bool f64_;
  std::string what_;
};

// A volume's Sobel derivative along z (axis 0), y or x: the z pass of `z` (the derivative or the
// smoothing, convolution order; folded onto a volume of fewer planes), then the 2-D passes, fused
// in a chain the stage owns.
std::unique_ptr<Operation> sobel3(const StageContext& c, std::vector<double> z,
                                  SeparableFilter xy) {
  z = fold_taps(z, c.in.depth, c.settings.border);
  std::vector<std::unique_ptr<Operation>> ops;
  ops.push_back(make_zpass(c.in, kernels::ZPassKind::sum, std::vector<double>(z.rbegin(), z.rend()),
                           static_cast<std::int64_t>(z.size() / 2), c.acc(), c.settings.border,
                           c.settings.border_value));
  ops.push_back(c.separable(*ops.back()->output(), std::move(xy)));
  return make_owning_chain(std::move(ops), c.in, c.settings.border);
}

constexpr double kMaxSigma = kMaxStageRadius / 3;

// A compound stage's sigma `key` in pixels along z, y and x: `key`=S on every axis, or
// `key`-um=S micrometres divided by the voxel size of each (the input's, or --voxel-size), as
// gaussian's sigma-um. z only where the stage filters a volume in 3-D.
struct AxisSigmas {
  double z = 0, y = 0, x = 0;
};
AxisSigmas stage_sigmas(const StageContext& c, const std::string& key) {
  const StageArgs& a = c.args;
  const std::string um_key = key + "-um";
  if (a.has(key) == a.has(um_key))
    throw Error(ErrorKind::usage, a.at() + ": give " + key + "=S (pixels) or " + um_key +
                                      "=S (micrometres)" + (a.has(key) ? ", not both" : ""));
  if (a.has(key)) {
    const double s = a.number(key);
    return {s, s, s};
  }
  const double um = a.number(um_key);
  const VoxelSize& v = c.settings.voxel;
  const bool volume = c.volume();
  const std::string give =
      "give --voxel-size " + std::string(volume ? "z,y,x" : "y,x") + " (micrometres)";
  if (!v.known())
    throw Error(
        ErrorKind::usage,
        a.at() + ": " + um_key + " needs the voxel size, and the input does not say it: " + give);
  if (volume && !(v.z > 0))
    throw Error(ErrorKind::usage, a.at() + ": " + um_key +
                                      " on a volume needs the voxel size along z, and the input "
                                      "says only y and x: " +
                                      give);
  const AxisSigmas s{volume ? um / v.z : 0.0, um / v.y, um / v.x};
  for (const auto& [axis, px] : {std::pair{"z", s.z}, std::pair{"y", s.y}, std::pair{"x", s.x}})
    if (px > kMaxSigma)
      throw Error(ErrorKind::usage, a.at() + ": " + um_key + "=" + exact_number(um) + " is " +
                                        exact_number(px) + " pixels along " + axis +
                                        ", above the largest sigma " + exact_number(kMaxSigma));
  return s;
}

}  // namespace

std::vector<StageEntry> combine_stages() {
  using kernels::CombineKind;
  auto combine = [](const StageContext& c, CombineKind kind, double amount,
                    std::unique_ptr<Operation> g1, std::unique_ptr<Operation> g2,
                    std::unique_ptr<Operation> g3 = nullptr) {
    std::vector<std::unique_ptr<Operation>> g;
    for (auto* op : {&g1, &g2, &g3})
      if (*op) g.push_back(std::move(*op));
    std::unique_ptr<Operation> op = std::make_unique<CombineOp>(
        c.in, kind, amount, std::move(g), c.settings.border, c.settings.precision == Precision::f64,
        c.out(), c.args.call_text());
    if (c.settings.nodata && !c.volume()) op = keep_holes(std::move(op), *c.settings.nodata);
    return BuiltStage{std::move(op)};
  };
  // The Gaussian of sigma `key` (sigma, sigma1, sigma2), or of `key`-um; under nodata the masked
  // one (masked_separable.cpp), its holes put back by keep_holes.
  auto gaussian = [](const StageContext& c, const std::string& key) {
    const AxisSigmas s = stage_sigmas(c, key);
    return c.settings.nodata && !c.volume() ? make_masked_gaussian(c, s.y, s.x)
                                            : c.gaussian_axes(c.in, s.z, s.y, s.x);
  };
  // sigma (pixels) or sigma-um (micrometres): one of the two.
  auto sigma_pair = [](const std::string& key, const std::string& what) {
    return std::vector<StageParam>{
        computed(number_param(key, std::nullopt, 0, true, what + ", pixels", kMaxSigma),
                 key + "-um"),
        computed(number_param(key + "-um", std::nullopt, 0, true,
                              what + " in micrometres: S / the voxel size along each axis (the "
                                     "input's, or --voxel-size)"),
                 key)};
  };
  std::vector<StageEntry> s;
  s.push_back(
      {{"gradient-magnitude",
        "hypot of scipy.ndimage.sobel along x and along y, volumes: and z "
        "(generic_gradient_magnitude; each smoothed along z, then x first: under "
        "--border constant with a value other than 0 the later passes pad the earlier "
        "passes' rows, where scipy pads the derivative's)",
        {}},
       [combine](const StageContext& c) {
         // scipy.ndimage.sobel: correlate [-1, 0, 1] along the axis, [1, 2, 1] across it.
         const std::vector<double> d1{1.0, 0.0, -1.0}, s1{1.0, 2.0, 1.0};
         if (c.volume())  // along x, y and z; each smoothed along z first
           return combine(c, CombineKind::magnitude, 0.0, sobel3(c, s1, SeparableFilter{d1, s1}),
                          sobel3(c, s1, SeparableFilter{s1, d1}),
                          sobel3(c, d1, SeparableFilter{s1, s1}));
         return combine(c, CombineKind::magnitude, 0.0, c.separable(c.in, SeparableFilter{d1, s1}),
                        c.separable(c.in, SeparableFilter{s1, d1}));
       }});
  s.push_back({{"dog", "difference of Gaussians: gaussian(sigma1) - gaussian(sigma2)",
                [&] {
                  auto p = sigma_pair("sigma1", "sigma of the first Gaussian");
                  for (StageParam& q : sigma_pair("sigma2", "sigma of the second Gaussian"))
                    p.push_back(std::move(q));
                  return p;
                }()},
               [combine, gaussian](const StageContext& c) {
                 return combine(c, CombineKind::difference, 0.0, gaussian(c, "sigma1"),
                                gaussian(c, "sigma2"));
               }});
  s.push_back({{"unsharp", "unsharp mask: x + amount (x - gaussian(sigma))",
                [&] {
                  auto p = sigma_pair("sigma", "Gaussian sigma");
                  p.push_back(number_param("amount", 1.0, -kInf, false, "weight of the detail"));
                  return p;
                }()},
               [combine, gaussian](const StageContext& c) {
                 return combine(c, CombineKind::unsharp, c.args.number("amount"),
                                gaussian(c, "sigma"), nullptr);
               }});
  s.push_back({{"subtract-background", "x - gaussian(sigma): removes what varies slower than sigma",
                sigma_pair("sigma", "Gaussian sigma")},
               [combine, gaussian](const StageContext& c) {
                 return combine(c, CombineKind::subtract, 0.0, gaussian(c, "sigma"), nullptr);
               }});
  for (StageEntry& e : s) {
    e.decl.takes_convert = true;
    // Their Gaussians filter a volume in 3-D (StageContext::gaussian); the Sobel derivatives are
    // three on a volume.
    e.decl.volume = true;
    // Normalized convolution under nodata (issue 48); gradient-magnitude has no masked form.
    e.decl.masked = e.decl.name != "gradient-magnitude";
  }
  return s;
}

}  // namespace ooc::detail
