// Grey morphology (see ooc/ops/rank.hpp): opening, closing and the top-hats, run as a chain of two
// minimum/maximum stages (minmax.cpp), each applying the border rule to its own input, as
// scipy.ndimage composes them; make_morphology, which builds every operation of the family but the
// ranks; and the stages of the compositions.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/morphology/clamp_window.hpp"
#include "ops/morphology/window.hpp"
#include "ops/pipeline/chain_impl.hpp"

namespace ooc {
namespace detail {
// rank_cuda.cpp: a volume's top-hat from the CUDA kernel of its opening or closing.
std::unique_ptr<CudaKernel> make_volume_tophat_cuda(std::unique_ptr<CudaKernel> chain, int sign,
                                                    BorderMode border);
}  // namespace detail
namespace detail::morphology {
namespace {

// a - b in T; integers wrap as NumPy's subtract does (never needed where b <= a).
template <class T>
T difference(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}

using Pool = BufferPool;

// Opening, closing and the top-hats: two MinMax stages fused as a chain (the second applies the
// border rule to the first's image, as scipy's grey_dilation(grey_erosion(x)) does), and for
// the top-hats the difference with the input (in the image's type; never negative).
class TophatKernel final : public CpuKernel {
 public:
  TophatKernel(std::unique_ptr<CpuKernel> chain, int sign)
      : sign_(sign), chain_(std::move(chain)) {}
  void start(int slot) override { chain_->start(slot); }
  void stop(int slot) override { chain_->stop(slot); }
  void run(const CpuBand& b) override {
    if (sign_ == 0) {
      chain_->run(b);
      return;
    }
    detail::ScratchBuffer buf =
        pool_.take(static_cast<std::size_t>(b.band.rows) * b.in.row_bytes());
    CpuBand inner = b;
    inner.out =
        BandView{buf.data(), b.in.row_bytes(), b.band.rows, b.in.width, b.in.channels, b.in.type};
    chain_->run(inner);
    const std::int64_t S = b.in.row_samples();
    // The input's own rows: the middle plane's (a volume's band carries its planes of context).
    const std::int64_t centre = b.plane_halo * (b.band.rows + 2 * b.halo);
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      dispatch_type(b.in.type, [&](auto t) {
        using T = decltype(t);
        const T* x = reinterpret_cast<const T*>(b.rows[centre + b.halo + y]);
        const T* o = reinterpret_cast<const T*>(inner.out.row(y));
        T* d = reinterpret_cast<T*>(b.out.row(y));
        for (std::int64_t i = 0; i < S; ++i)
          d[i] = difference<T>(sign_ > 0 ? x[i] : o[i], sign_ > 0 ? o[i] : x[i]);
      });
    });
    pool_.give(std::move(buf));
  }

 private:
  int sign_;  // 0: the chain alone (opening, closing); +1: x - it; -1: it - x
  std::unique_ptr<CpuKernel> chain_;
  Pool pool_;
};

class Morphology final : public Operation {
 public:
  Morphology(const ImageSpec& in, const MorphParams& p, std::unique_ptr<Operation> first,
             std::unique_ptr<Operation> second, int sign, std::string what)
      : in_(in),
        p_(p),
        first_(std::move(first)),
        second_(std::move(second)),
        sign_(sign),
        what_(std::move(what)) {
    g_.border = p.border;
    g_.height = in.height;
    g_.stages.push_back({first_.get(), in, first_->halo()});
    g_.stages.push_back({second_.get(), in, second_->halo()});
  }
  std::string describe() const override { return what_; }
  std::string fingerprint() const override {
    return what_ + " (" + first_->fingerprint() + " ! " + second_->fingerprint() + ")";
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return g_.halo(); }
  BorderMode border() const override { return p_.border; }
  std::optional<std::int64_t> column_halo() const override {
    const auto a = first_->column_halo(), b = second_->column_halo();
    if (!a || !b) return std::nullopt;
    return *a + *b;
  }
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    const std::size_t row = static_cast<std::size_t>(cols) * in_.pixel_bytes();
    return static_cast<std::size_t>(rows) * row +
           static_cast<std::size_t>(g_.max_out_rows(0, rows)) * row +
           first_->cpu_scratch_bytes(g_.max_out_rows(0, rows), cols) +
           second_->cpu_scratch_bytes(rows, cols);
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return detail::align_up(static_cast<std::size_t>(rows) * in_.row_bytes()) +
           detail::chain_cuda_scratch(g_, rows);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<TophatKernel>(detail::make_chain_cpu(g_), sign_);
  }
  bool has_cuda() const override { return first_->has_cuda() && second_->has_cuda(); }
  bool cpu_gives_cuda_bits() const override { return true; }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    return detail::make_tophat_cuda(devices, g_, sign_);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::morphology;
    c.stages = {first_->cost(), second_->cost()};
    return c;
  }

 private:
  ImageSpec in_;
  MorphParams p_;
  std::unique_ptr<Operation> first_, second_;
  int sign_;
  std::string what_;
  detail::ChainGeometry g_;
};

}  // namespace

namespace {

// A volume's top-hat: its opening or closing, stages that the operation owns fused as a chain
// (planes of context and all), and the difference with the input's middle plane.
class VolumeTophat final : public Operation {
 public:
  VolumeTophat(const ImageSpec& in, std::unique_ptr<Operation> chain, int sign, std::string what)
      : in_(in), chain_(std::move(chain)), sign_(sign), what_(std::move(what)) {}
  std::string describe() const override { return what_ + ": " + chain_->describe(); }
  std::string fingerprint() const override { return what_ + " (" + chain_->fingerprint() + ")"; }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return chain_->halo(); }
  std::int64_t plane_halo() const override { return chain_->plane_halo(); }
  BorderMode border() const override { return chain_->border(); }
  std::optional<std::int64_t> column_halo() const override { return chain_->column_halo(); }
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    return chain_->cpu_scratch_bytes(rows, cols);
  }
  // The opening or closing of a band, beside the band.
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    return static_cast<std::size_t>(rows * cols) * in_.pixel_bytes() +
           chain_->cpu_band_bytes(rows, cols);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<TophatKernel>(chain_->make_cpu(), sign_);
  }
  // The opening or closing of a band, then the chain's own.
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return detail::align_up(static_cast<std::size_t>(rows) * in_.row_bytes()) +
           chain_->cuda_scratch_bytes(rows);
  }
  bool has_cuda() const override { return chain_->has_cuda(); }
  bool cpu_gives_cuda_bits() const override { return chain_->cpu_gives_cuda_bits(); }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    return detail::make_volume_tophat_cuda(chain_->make_cuda(devices), sign_, chain_->border());
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::morphology;
    c.stages = {chain_->cost()};
    return c;
  }

 private:
  ImageSpec in_;
  std::unique_ptr<Operation> chain_;
  int sign_;
  std::string what_;
};

// A volume's minimum, maximum, opening, closing or top-hat. Of a box: each minimum or maximum is
// a z pass over the planes of the window (scipy's placement, the dilation's shifted for even
// sizes), then the 2-D filter of the planes. Of a 3-D footprint: the rank filter of its ones
// (footprint3d.cpp), the dilation's footprint mirrored along its three axes (scipy's
// grey_dilation). The top-hats own their opening or closing.
BuiltStage volume_stage(MorphKind kind, const StageContext& c, MorphParams p) {
  std::int64_t depth = box_depth(c, p.height);
  if (!p.footprint.empty()) {
    if (c.args.has("size-z"))
      throw Error(ErrorKind::usage, c.args.at() +
                                        ": size-z is a box's; a footprint's planes are "
                                        "its first axis");
    const Footprint& f = p.footprint;
    if (f.axes == 3 && f.count() == f.depth * f.height * f.width) {  // a box
      depth = f.depth;
      p.footprint = Footprint{};
    }
  }
  std::vector<std::unique_ptr<Operation>> ops;
  ImageSpec in = c.in;
  auto add = [&](bool max, bool dilation) {
    if (!p.footprint.empty()) {
      Footprint f = p.footprint;
      if (dilation) std::reverse(f.mask.begin(), f.mask.end());
      ops.push_back(make_rank3d(in, f, max ? f.count() - 1 : 0, p.border, p.border_value));
      return;
    }
    const Extent e = clamp_extent(extent(depth, dilation), c.in.depth);  // past the planes
    if (depth > 1) {
      ops.push_back(make_zpass(in, max ? kernels::ZPassKind::maximum : kernels::ZPassKind::minimum,
                               std::vector<double>(static_cast<std::size_t>(depth), 1.0), e.left,
                               in.type, p.border, p.border_value));
      in = *ops.back()->output();
    }
    ops.push_back(make_minmax(in, window(p, max, dilation)));
  };
  int sign = 0;
  switch (kind) {
    case MorphKind::minimum:
    case MorphKind::maximum:
      add(kind == MorphKind::maximum, false);
      break;
    case MorphKind::opening:
    case MorphKind::white_tophat:
      add(false, false);
      add(true, true);
      sign = kind == MorphKind::white_tophat ? 1 : 0;
      break;
    default:  // closing, black top-hat
      add(true, true);
      add(false, false);
      sign = kind == MorphKind::black_tophat ? -1 : 0;
      break;
  }
  BuiltStage b;
  if (sign != 0) {
    b.op = std::make_unique<VolumeTophat>(c.in, make_owning_chain(std::move(ops), c.in, p.border),
                                          sign, sign > 0 ? "white top-hat" : "black top-hat");
    return b;
  }
  b.op = std::move(ops.back());
  ops.pop_back();
  b.before = std::move(ops);
  return b;
}

}  // namespace

StageEntry morphology_stage(const char* name, MorphKind kind, const char* help) {
  std::vector<StageParam> params{
      size_param(), footprint_param(),
      computed(integer_param("size-z", std::nullopt, 1, 1 << 20,
                             "volumes: window along z (a box; or size=DxHxW)"),
               "the size's rows")};
  StageEntry e{{name, help, params}, [kind](const StageContext& c) {
                 MorphParams p;
                 p.kind = kind;
                 std::tie(p.height, p.width, p.footprint) = window_of(c.args);
                 check_footprint_axes(c, p.footprint);
                 (void)box_depth(c, p.height);  // a DxHxW size on an image refused
                 p.border = c.settings.border;
                 p.border_value = c.settings.border_value;
                 if (c.volume()) return volume_stage(kind, c, p);
                 return BuiltStage{make_morphology(c.in, p)};
               }};
  e.decl.volume = true;
  return e;
}

}  // namespace detail::morphology

std::unique_ptr<Operation> make_morphology(const ImageSpec& input, const MorphParams& given) {
  constexpr std::int64_t kMax = std::int64_t{1} << 20;
  MorphParams p = given;
  if (!p.footprint.empty()) {
    p.height = p.footprint.height;
    p.width = p.footprint.width;
  }
  if (p.height < 1 || p.width < 1 || p.height > kMax || p.width > kMax)
    throw Error(ErrorKind::usage, "the window " + std::to_string(p.height) + "x" +
                                      std::to_string(p.width) +
                                      " is not a size: give 1 to 1048576 rows and columns");
  const std::string size =
      (p.footprint.empty() ? std::string() : "footprint " + p.footprint.name + " of ") +
      std::to_string(p.height) + "x" + std::to_string(p.width);
  using detail::morphology::Morphology;
  auto mm = [&](bool max, bool dilation) {
    return detail::morphology::make_minmax(input, detail::morphology::window(p, max, dilation));
  };
  switch (p.kind) {
    case MorphKind::minimum:
      return mm(false, false);
    case MorphKind::maximum:
      return mm(true, false);
    case MorphKind::opening:
      return std::make_unique<Morphology>(input, p, mm(false, false), mm(true, true), 0,
                                          "opening " + size);
    case MorphKind::closing:
      return std::make_unique<Morphology>(input, p, mm(true, true), mm(false, false), 0,
                                          "closing " + size);
    case MorphKind::white_tophat:
      return std::make_unique<Morphology>(input, p, mm(false, false), mm(true, true), 1,
                                          "white top-hat " + size);
    case MorphKind::black_tophat:
      return std::make_unique<Morphology>(input, p, mm(true, true), mm(false, false), -1,
                                          "black top-hat " + size);
  }
  throw Error(ErrorKind::usage, "unknown morphology");
}

namespace detail {

std::vector<StageEntry> morphology_stages() {
  using morphology::morphology_stage;
  return {morphology_stage("opening", MorphKind::opening,
                           "maximum of the minimum (scipy.ndimage.grey_opening)"),
          morphology_stage("closing", MorphKind::closing,
                           "minimum of the maximum (scipy.ndimage.grey_closing)"),
          morphology_stage("white-tophat", MorphKind::white_tophat,
                           "x - opening (scipy.ndimage.white_tophat)"),
          morphology_stage("black-tophat", MorphKind::black_tophat,
                           "closing - x (scipy.ndimage.black_tophat)")};
}

#if !defined(OOC_HAVE_CUDA)
// A build without CUDA: has_cuda() says no, so this is never called.
std::unique_ptr<CudaKernel> make_tophat_cuda(const std::vector<int>&, const ChainGeometry&, int) {
  return nullptr;
}
std::unique_ptr<CudaKernel> make_volume_tophat_cuda(std::unique_ptr<CudaKernel>, int, BorderMode) {
  return nullptr;
}
#endif

}  // namespace detail
}  // namespace ooc
