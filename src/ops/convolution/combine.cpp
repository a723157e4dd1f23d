// Stages that combine their input with filtered copies of it (gradient-magnitude, dog, unsharp,
// subtract-background): the filters run on the band, then one pass per row combines them.
#include <tbb/parallel_for.h>

#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/pipeline/chain_impl.hpp"
#include "ops/stage_registry.hpp"

namespace ooc::detail {
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

class CombineKernel final : public CpuKernel {
 public:
  CombineKernel(kernels::CombineKind kind, double amount, const Operation* g1, const Operation* g2,
                bool f64, SampleType out)
      : kind_(kind), amount_(amount), g1_(g1), g2_(g2), f64_(f64), out_(out) {
    k1_ = g1->make_cpu();
    if (g2) k2_ = g2->make_cpu();
  }
  void start(int slot) override {
    k1_->start(slot);
    if (k2_) k2_->start(slot);
  }
  void stop(int slot) override {
    k1_->stop(slot);
    if (k2_) k2_->stop(slot);
  }
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples(), rows = b.band.rows;
    const std::size_t acc = f64_ ? 8 : 4, row_bytes = static_cast<std::size_t>(n) * acc;
    detail::ScratchBuffer buf =
        pool_.take((k2_ ? 2 : 1) * row_bytes * static_cast<std::size_t>(rows));
    const SampleType at = f64_ ? SampleType::f64 : SampleType::f32;
    BandView v1{buf.data(), row_bytes, rows, b.in.width, b.in.channels, at};
    BandView v2{buf.data() + row_bytes * rows, row_bytes, rows, b.in.width, b.in.channels, at};
    std::vector<const std::byte*> table;
    k1_->run(sub_band(b, g1_->halo(), g1_->plane_halo(), v1, table));
    if (k2_) k2_->run(sub_band(b, g2_->halo(), g2_->plane_halo(), v2, table));
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
          if (f64_)
            kernels::combine_row<In, double, Out>(
                kind_, x, reinterpret_cast<const double*>(v1.row(y)),
                k2_ ? reinterpret_cast<const double*>(v2.row(y)) : nullptr, b.out.row(y), n,
                amount_);
          else
            kernels::combine_row<In, float, Out>(
                kind_, x, reinterpret_cast<const float*>(v1.row(y)),
                k2_ ? reinterpret_cast<const float*>(v2.row(y)) : nullptr, b.out.row(y), n,
                amount_);
        });
      });
    });
    pool_.give(std::move(buf));
  }

 private:
  kernels::CombineKind kind_;
  double amount_;
  const Operation *g1_, *g2_;
  bool f64_;
  SampleType out_;
  std::unique_ptr<CpuKernel> k1_, k2_;
  BufferPool pool_;
};

class CombineOp final : public Operation {
 public:
  // out: the accumulator's type, or that of a convert fused into the stage.
  CombineOp(const ImageSpec& in, kernels::CombineKind kind, double amount,
            std::unique_ptr<Operation> g1, std::unique_ptr<Operation> g2, BorderMode border,
            bool f64, SampleType out, std::string what)
      : in_(in),
        out_{in.width, in.height, in.channels, out, in.depth, in.stack},
        kind_(kind),
        amount_(amount),
        g1_(std::move(g1)),
        g2_(std::move(g2)),
        border_(border),
        f64_(f64),
        what_(std::move(what)) {}
  // The call and how its filters compute (the FFT or the direct sum).
  std::string describe() const override {
    return what_ + ": " + g1_->describe() + (g2_ ? "; " + g2_->describe() : "");
  }
  std::string fingerprint() const override {
    return what_ + " (" + exact_number(amount_) + ": " + g1_->fingerprint() +
           (g2_ ? "; " + g2_->fingerprint() : "") + ") to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override {
    return std::max(g1_->halo(), g2_ ? g2_->halo() : std::int64_t{0});
  }
  std::int64_t plane_halo() const override {
    return std::max(g1_->plane_halo(), g2_ ? g2_->plane_halo() : std::int64_t{0});
  }
  BorderMode border() const override { return border_; }
  std::optional<std::int64_t> column_halo() const override {
    const auto a = g1_->column_halo();
    const auto b = g2_ ? g2_->column_halo() : std::optional<std::int64_t>(0);
    if (!a || !b) return std::nullopt;
    return std::max(*a, *b);
  }
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    return g1_->cpu_scratch_bytes(rows, cols) + (g2_ ? g2_->cpu_scratch_bytes(rows, cols) : 0);
  }
  // The filtered copies of a band (a buffer from the pool a band being computed).
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    return (g2_ ? 2 : 1) * static_cast<std::size_t>(rows) *
               static_cast<std::size_t>(cols * in_.channels) * (f64_ ? 8 : 4) +
           g1_->cpu_band_bytes(rows, cols) + (g2_ ? g2_->cpu_band_bytes(rows, cols) : 0);
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return detail::combine_cuda_scratch(g1_.get(), g2_.get(), rows, in_.row_samples(), f64_);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<CombineKernel>(kind_, amount_, g1_.get(), g2_.get(), f64_, out_.type);
  }
  bool has_cuda() const override { return kCudaBuilt && g1_->has_cuda(); }
  bool cpu_gives_cuda_bits() const override {
    return g1_->cpu_gives_cuda_bits() && (!g2_ || g2_->cpu_gives_cuda_bits());
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    return detail::make_combine_cuda(devices, kind_, amount_, g1_.get(), g2_.get(), halo(),
                                     in_.type, f64_, out_.type);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::combine;
    c.stages.push_back(g1_->cost());
    if (g2_) c.stages.push_back(g2_->cost());
    return c;
  }

 private:
  ImageSpec in_, out_;
  kernels::CombineKind kind_;
  double amount_;
  std::unique_ptr<Operation> g1_, g2_;
  BorderMode border_;
  bool f64_;
  std::string what_;
};

}  // namespace

std::vector<StageEntry> combine_stages() {
  using kernels::CombineKind;
  auto combine = [](const StageContext& c, CombineKind kind, double amount,
                    std::unique_ptr<Operation> g1, std::unique_ptr<Operation> g2) {
    return BuiltStage{std::make_unique<CombineOp>(
        c.in, kind, amount, std::move(g1), std::move(g2), c.settings.border,
        c.settings.precision == Precision::f64, c.out(), c.args.call_text())};
  };
  constexpr double kMaxSigma = kMaxStageRadius / 3;
  const StageParam sigma =
      number_param("sigma", std::nullopt, 0, true, "Gaussian sigma, pixels", kMaxSigma);
  std::vector<StageEntry> s;
  s.push_back({{"gradient-magnitude",
                "hypot of scipy.ndimage.sobel along x and along y (each smoothed along x "
                "first: under --border constant with a value other than 0 the y derivative's "
                "edge rows pad the smoothed rows, where scipy pads the derivative's)",
                {}},
               [combine](const StageContext& c) {
                 // scipy.ndimage.sobel: correlate [-1, 0, 1] along the axis, [1, 2, 1] across it.
                 const std::vector<double> d1{1.0, 0.0, -1.0}, s1{1.0, 2.0, 1.0};
                 return combine(c, CombineKind::magnitude, 0.0,
                                c.separable(c.in, SeparableFilter{d1, s1}),
                                c.separable(c.in, SeparableFilter{s1, d1}));
               }});
  s.push_back(
      {{"dog",
        "difference of Gaussians: gaussian(sigma1) - gaussian(sigma2)",
        {number_param("sigma1", std::nullopt, 0, true, "sigma of the first Gaussian", kMaxSigma),
         number_param("sigma2", std::nullopt, 0, true, "sigma of the second Gaussian", kMaxSigma)}},
       [combine](const StageContext& c) {
         return combine(c, CombineKind::difference, 0.0, c.gaussian(c.in, c.args.number("sigma1")),
                        c.gaussian(c.in, c.args.number("sigma2")));
       }});
  s.push_back({{"unsharp",
                "unsharp mask: x + amount (x - gaussian(sigma))",
                {sigma, number_param("amount", 1.0, -kInf, false, "weight of the detail")}},
               [combine](const StageContext& c) {
                 return combine(c, CombineKind::unsharp, c.args.number("amount"),
                                c.gaussian(c.in, c.args.number("sigma")), nullptr);
               }});
  s.push_back({{"subtract-background",
                "x - gaussian(sigma): removes what varies slower than sigma",
                {sigma}},
               [combine](const StageContext& c) {
                 return combine(c, CombineKind::subtract, 0.0,
                                c.gaussian(c.in, c.args.number("sigma")), nullptr);
               }});
  for (StageEntry& e : s) {
    e.decl.takes_convert = true;
    // Their Gaussians filter a volume in 3-D (StageContext::gaussian); not the 2-D Sobel pair.
    e.decl.volume = e.decl.name != "gradient-magnitude";
  }
  return s;
}

}  // namespace ooc::detail
