// Separable convolution (row pass along x, then column pass along y): its declaration and CPU
// kernel; the CUDA kernel is made in separable_cuda.cpp.
#include "ooc/ops/separable.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "band_fill.hpp"
#include "io/digest.hpp"
#include "kernels/cpu/convolution/fft_backend.hpp"
#include "kernels/cpu/convolution/fft_separable.hpp"
#include "kernels/cpu/convolution/separable.hpp"
#include "ooc/error.hpp"
#include "ops/convolution/fold_taps.hpp"
#include "ops/convolution/method_param.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {

bool accumulates_in_f64(SampleType input, SampleType output, Precision precision) noexcept {
  if (precision != Precision::automatic) return precision == Precision::f64;
  // f32 holds integers exactly only up to 2^24: 32-bit integers, read or written, need f64.
  auto wide = [](SampleType t) {
    return t == SampleType::f64 || t == SampleType::u32 || t == SampleType::i32;
  };
  return wide(input) || wide(output);
}

Precision parse_precision(const std::string& text) {
  if (text == "auto") return Precision::automatic;
  if (text == "f32") return Precision::f32;
  if (text == "f64") return Precision::f64;
  throw Error(ErrorKind::usage, "--precision takes auto, f32 or f64, got '" + text + "'");
}

SeparableCosts separable_costs(const ImageSpec& in, const SeparableParams& p) {
  SeparableCosts c;
  const std::int64_t K = static_cast<std::int64_t>(p.filter.col.size());
  const std::int64_t L = static_cast<std::int64_t>(p.filter.row.size());
  c.work.kind = Cost::Kind::separable;
  c.work.f64 = accumulates_in_f64(in.type, p.out_type.value_or(in.type), p.precision);
  c.work.taps = double(K + L);
  c.cpu_direct = cpu_ns_per_sample(c.work);
  c.cpu_fft = std::numeric_limits<double>::infinity();
  c.cuda_direct = cuda_ns_per_sample(c.work);
  c.cuda_fft = std::numeric_limits<double>::infinity();
  if (p.method != ConvMethod::direct) {
    // A band holds whole column blocks (n input rows for h = n - K + 1 outputs): blocks planned
    // for the least work alone are up to thousands of rows, which on wide images no ring holds
    // (65536 f32 columns at radius 300: 3496-row bands, 1.9 GiB for one slot). Blocks are kept
    // to kFftBandBytes a band, so that several slots fit under the default limit; where no block
    // fits, the FFT is not possible (auto takes the direct sum).
    constexpr std::size_t kFftBandBytes = std::size_t{256} << 20;
    const std::size_t row =
        static_cast<std::size_t>(in.width * in.channels) *
        std::max(sample_bytes(in.type), sample_bytes(p.out_type.value_or(in.type)));
    kernels::FftLinePolicy col;
    col.max_points = std::min<std::int64_t>(
        col.max_points,
        (static_cast<std::int64_t>(kFftBandBytes / std::max<std::size_t>(row, 1)) + K - 1) / 2);
    kernels::FftSeparablePlan plan;
    plan.n = kernels::plan_fft_line(K, in.height, col);
    plan.m = kernels::plan_fft_line(L, in.width);
    if (plan.n > 0 && plan.m > 0) {
      plan.h = plan.n - K + 1;
      plan.w = plan.m - L + 1;
    }
    if (plan.valid()) {
      c.block_rows = plan.n;
      c.block_cols = plan.m;
      Cost fft = c.work;
      fft.fft_work = kernels::fft_separable_work(plan, K, L, in.height, in.width);
      fft.cpu_fft = true;
      c.cpu_fft = cpu_ns_per_sample(fft);
      // The model has no sample type: 8- and 16-bit samples cost the direct sum about 1.35x a
      // float's a sample and the FFT about 1.17x (`tools/bench/run fft-auto`, u8 against f32;
      // docs/performance.md), so the choice weighs their direct sum 1.15x.
      const double direct =
          sample_bytes(in.type) <= 2 && in.type != SampleType::f32 && in.type != SampleType::f64
              ? 1.15 * c.cpu_direct
              : c.cpu_direct;
      c.cpu_uses_fft = p.method == ConvMethod::fft || c.cpu_fft < direct;
      if (c.cpu_uses_fft) c.work = fft;
      // CUDA: up to radius 64 its kernels specialized on the radius run at least as fast as a
      // cuFFT convolution (kernels alone, `tools/bench/run stages` against `ooc_gpu_stages
      // --stages fft`; docs/performance.md); beyond, its generic kernels cost about 4x a tap and
      // the FFT is the cheaper. Not with a constant border:
      // filtered axis by axis (scipy's semantics), the rows past the image are the constant
      // after the row pass, where one 2-D transform would give them the row taps' sum times it.
      if (kCudaBuilt && p.border != BorderMode::constant &&
          std::max(K, L) > 2 * kCudaSpecializedMaxRadius + 1) {
        Cost g = c.work;
        g.kind = Cost::Kind::conv2d;
        g.cuda_fft = true;
        g.fft_work_cuda =
            kernels::fft_work_per_sample(plan, in.height, in.width, kernels::kCufftWorkPolicy);
        c.cuda_fft = cuda_ns_per_sample(g);
        c.cuda_uses_fft = p.method == ConvMethod::fft || c.cuda_fft < c.cuda_direct;
        if (c.cuda_uses_fft) {
          c.work.cuda_fft = true;
          c.work.fft_work_cuda = g.fft_work_cuda;
        }
      }
    }
  }
  return c;
}

namespace {

class SeparableCpuKernel final : public CpuKernel {
 public:
  explicit SeparableCpuKernel(const kernels::SeparableArgs& base) : base_(base) {}
  void run(const CpuBand& b) override {
    kernels::SeparableArgs a = base_;
    detail::set_band(a, b, b.halo - a.ry);  // the halo is the FFT's where the CPU would take it
    kernels::separable_band(a);
  }

 private:
  kernels::SeparableArgs base_;
};

class Separable final : public Operation {
 public:
  Separable(const ImageSpec& in, const SeparableParams& p, const EngineOptions& o)
      : params_(p),
        out_spec_{in.width, in.height, in.channels, p.out_type.value_or(in.type),
                  in.depth, in.stack},
        row_taps_(correlation_taps(p.filter.row)),
        col_taps_(correlation_taps(p.filter.col)),
        costs_(separable_costs(in, p)) {
    if (row_taps_.size() % 2 == 0 || col_taps_.size() % 2 == 0)
      throw Error(ErrorKind::usage, "filter tap counts must be odd");
    if (p.method == ConvMethod::fft && !costs_.cpu_uses_fft)
      throw Error(ErrorKind::usage, "--method fft: no FFT block of at most 2^16 points holds " +
                                        std::to_string(p.filter.row.size()) + " x " +
                                        std::to_string(p.filter.col.size()) +
                                        " taps: use --method direct");
    if (uses_fft()) {
      plan_ = kernels::FftSeparablePlan{costs_.block_rows, costs_.block_cols,
                                        costs_.block_rows - std::int64_t(p.filter.col.size()) + 1,
                                        costs_.block_cols - std::int64_t(p.filter.row.size()) + 1};
      detail::set_images(fft_args_, in, out_spec_, p.border, p.border_value);
    }
    detail::set_images(args_, in, out_spec_, p.border, p.border_value);
    args_.row_taps = row_taps_.data();
    args_.rx = p.filter.radius_x();
    args_.col_taps = col_taps_.data();
    args_.ry = p.filter.radius_y();
    args_.strip_samples = o.strip_samples;
    args_.f64 = accumulates_in_f64(in.type, out_spec_.type, p.precision);
  }

  std::string describe() const override {
    return params_.filter.describe() + ", border " + std::string(name(params_.border)) +
           ", accumulate " + (args_.f64 ? "f64" : "f32") + ", " + method_text(true);
  }
  // The model's numbers left out: retuning them must not stop a resume.
  std::string fingerprint() const override {
    return params_.filter.describe() + ", border " + std::string(name(params_.border)) +
           ", accumulate " + (args_.f64 ? "f64" : "f32") + ", " + method_text(false) + ", values " +
           detail::Digest()
               .add(params_.filter.row)
               .add(params_.filter.col)
               .add(params_.border_value)
               .add(std::string(name(params_.border)))
               .hex() +
           " to " + std::string(name(out_spec_.type));
  }
  std::optional<ImageSpec> output() const override { return out_spec_; }
  // The FFT's y-blocks need every row of a block that touches the band (fft_separable.hpp): a
  // band on the block grid only the taps' rows, any other band up to a block more. CUDA's direct
  // kernel reads the ry rows next to its band of these (separable_cuda.cpp).
  std::int64_t halo() const override {
    return uses_fft() ? kernels::fft_halo(2 * args_.ry + 1, plan_) : args_.ry;
  }
  std::int64_t row_grid() const override { return uses_fft() ? plan_.h : 1; }
  std::int64_t grid_halo() const override { return args_.ry; }
  BorderMode border() const override { return params_.border; }
  // Whole block rows per band where the band is taller than one: fewer blocks cut by a band edge
  // (each is transformed by both bands).
  std::int64_t fit_band_rows(std::int64_t rows, std::int64_t /*span*/) const override {
    if (!uses_fft() || rows < plan_.h) return rows;
    return rows / plan_.h * plan_.h;
  }

  // The direct kernels filter any tile as an image; the FFT's blocks are fixed in image columns.
  std::optional<std::int64_t> column_halo() const override {
    if (costs_.cpu_uses_fft) return std::nullopt;
    return args_.rx;
  }
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    if (costs_.cpu_uses_fft)  // the shared spectra counted with each thread: a bound
      return kernels::FftSeparable::thread_bytes(plan_, band_rows, halo(), args_.f64) +
             kernels::FftSeparable::shared_bytes(plan_, args_.f64);
    kernels::SeparableArgs a = args_;
    a.out_rows = band_rows;
    a.width = cols;
    return kernels::separable_scratch_bytes(a);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    if (costs_.cpu_uses_fft)
      return std::make_unique<detail::FftBandKernel<kernels::FftSeparable>>(
          std::make_shared<const kernels::FftSeparable>(params_.filter.row, params_.filter.col,
                                                        plan_, args_.f64),
          fft_args_);
    return std::make_unique<SeparableCpuKernel>(args_);
  }

  Cost cost() const override { return costs_.work; }
  bool has_cuda() const override { return kCudaBuilt; }
  // Float sums: both round every sample the same way (FMA in tap order from a plain first
  // product, a float intermediate, round-to-nearest-even stores), checked byte for byte by
  // test_gpu (docs/design.md, "Starting CUDA"). Without FMA the CPU rounds each product; double
  // sums differ in the last bit (f64 images, radius 3).
  // The FFT rounds otherwise.
  bool cpu_gives_cuda_bits() const override {
    return !uses_fft() && !args_.f64 && kernels::sums_fma();
  }
  std::size_t cuda_scratch_bytes(std::int64_t band_rows) const override {
#if defined(OOC_HAVE_CUDA)
    if (costs_.cuda_uses_fft)
      return conv2d_fft_cuda_scratch(fft_cuda_shape(), band_rows, args_.f64);
    return separable_cuda_scratch(band_rows, args_.ry, out_spec_.row_samples(), args_.f64);
#else
    (void)band_rows;
    return 0;
#endif
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    if (costs_.cuda_uses_fft) {
      // The 2-D kernel the filter stands for: column tap i times row tap j, convolution order.
      const auto& row = params_.filter.row;
      const auto& col = params_.filter.col;
      std::vector<double> outer;
      outer.reserve(row.size() * col.size());
      for (const double c : col)
        for (const double r : row) outer.push_back(c * r);
      return make_conv2d_fft_cuda(devices, fft_cuda_shape(), outer, args_.f64);
    }
    return make_separable_cuda(devices, out_spec_, params_, row_taps_, col_taps_, args_.f64);
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  // The pick and, where the FFT was possible, what the cost model weighed (ns a sample and thread).
  std::string method_text(bool with_model) const {
    char model[96] = "";
    if (with_model && std::isfinite(costs_.cpu_fft))
      std::snprintf(model, sizeof model, "; model %.3g ns direct, %.3g FFT", costs_.cpu_direct,
                    costs_.cpu_fft);
    const std::string cuda = !kCudaBuilt            ? ""
                             : costs_.cuda_uses_fft ? ", FFT on CUDA (the taps' outer product, " +
                                                          std::to_string(plan_.n) + "x" +
                                                          std::to_string(plan_.m) + " tiles, cuFFT)"
                                                    : ", direct on CUDA";
    if (!costs_.cpu_uses_fft) return std::string("direct") + model + (uses_fft() ? cuda : "");
    return "FFT on the CPU (overlap-save, blocks of " + std::to_string(plan_.m) + " along x, " +
           std::to_string(plan_.n) + " along y, " + kernels::fft_library() + model + ")" + cuda;
  }
  bool uses_fft() const {
    return costs_.cpu_uses_fft || costs_.cuda_uses_fft;
  }
#if defined(OOC_HAVE_CUDA)
  FftCudaShape fft_cuda_shape() const {
    return ooc::fft_cuda_shape(static_cast<std::int64_t>(params_.filter.col.size()),
                               static_cast<std::int64_t>(params_.filter.row.size()), plan_,
                               out_spec_, params_.border, params_.border_value);
  }
#endif

  SeparableParams params_;
  ImageSpec out_spec_;
  std::vector<double> row_taps_, col_taps_;
  SeparableCosts costs_;
  kernels::SeparableArgs args_;
  kernels::FftSeparablePlan plan_;
  kernels::FftConvArgs fft_args_;
};

}  // namespace

std::unique_ptr<Operation> make_separable(const ImageSpec& input, const SeparableParams& params,
                                          const EngineOptions& options) {
  // Taps longer than the image folded onto it: no dearer than the image's (fold_taps.hpp).
  return std::make_unique<Separable>(input, detail::fold_separable(params, input), options);
}

namespace detail {
namespace {

// 3 sigma, the default radius, stays within the largest radius.
constexpr double kMaxSigma = kMaxStageRadius / 3;

// A Gaussian's sigma along z (planes), y and x (pixels).
struct Sigmas {
  double z = 0, y = 0, x = 0;
};

// Per-axis sigmas, scipy's sequence: as many as the axes filtered (Sy,Sx; Sz,Sy,Sx on a volume
// filtered in 3-D), as scipy.ndimage.gaussian_filter asks.
Sigmas axis_sigmas(const std::vector<double>& v, bool volume) {
  Sigmas s;
  if (volume) s.z = v[0];
  s.y = v[v.size() - 2];
  s.x = v.back();
  return s;
}

// The sigmas of a gaussian call: sigma, one number (sigma-z along z) or one a axis (scipy's tuple:
// Sy,Sx, or Sz,Sy,Sx on a volume filtered in 3-D; 0 leaves an axis alone); sigmas, the tuple under
// its earlier name; or sigma-um, one physical sigma divided by the voxel size of each axis.
// `volume`: the call filters in 3-D.
Sigmas gaussian_sigmas(const StageArgs& a, const VoxelSize* voxel, bool volume) {
  const int given = int(a.has("sigma")) + int(a.has("sigmas")) + int(a.has("sigma-um"));
  if (given == 0)
    throw Error(ErrorKind::usage, a.at() +
                                      ": sigma is required (sigma=S pixels, or one per axis: "
                                      "sigma=Sy,Sx, Sz,Sy,Sx on a volume; or sigma-um=S "
                                      "micrometres)");
  if (given > 1) throw Error(ErrorKind::usage, a.at() + ": give one of sigma, sigmas and sigma-um");
  Sigmas s;
  if (a.has("sigma")) {
    const std::vector<double> v = a.numbers("sigma");
    if (v.size() == 1) {
      s.y = s.x = v[0];
      s.z = a.has("sigma-z") ? a.number("sigma-z") : s.y;
      return s;
    }
    const std::size_t axes = volume ? 3 : 2;
    if (v.size() != axes)
      throw Error(ErrorKind::usage,
                  a.at() + ": sigma takes one value or " + std::to_string(axes) + " (" +
                      (volume ? "Sz,Sy,Sx: a volume filtered in 3-D"
                              : "Sy,Sx: an image, or a volume's planes") +
                      "), got " + std::to_string(v.size()) + ": '" + a.text("sigma") + "'");
    if (a.has("sigma-z"))
      throw Error(ErrorKind::usage,
                  a.at() + ": sigma-z goes with one sigma; sigma=Sz,Sy,Sx gives z's first");
    return axis_sigmas(v, volume);
  }
  if (a.has("sigma-z"))
    throw Error(ErrorKind::usage, a.at() + ": sigma-z goes with sigma; " +
                                      (a.has("sigmas") ? "sigmas gives z's sigma first"
                                                       : "sigma-um gives z's from the voxel size"));
  if (a.has("sigmas")) {
    const std::string text = a.text("sigmas");
    const std::string rule = a.at() + ": sigmas takes " +
                             (volume ? std::string("Sz,Sy,Sx (a volume filtered in 3-D)")
                                     : std::string("Sy,Sx (an image, or planes)")) +
                             ", pixels from 0 to " + exact_number(kMaxSigma) + ", got '" + text +
                             "'";
    std::vector<double> v;
    std::size_t from = 0;
    for (;;) {
      const std::size_t comma = text.find(',', from);
      const std::string word =
          text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      std::size_t used = 0;
      double x = -1;
      try {
        x = std::stod(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (word.empty() || used != word.size() || !std::isfinite(x) || x < 0 || x > kMaxSigma)
        throw Error(ErrorKind::usage, rule);
      v.push_back(x);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    if (v.size() != (volume ? 3u : 2u)) throw Error(ErrorKind::usage, rule);
    return axis_sigmas(v, volume);
  }
  const double um = a.number("sigma-um");
  const std::string give =
      "give --voxel-size " + std::string(volume ? "z,y,x" : "y,x") + " (micrometres)";
  if (!voxel || !voxel->known())
    throw Error(ErrorKind::usage, a.at() +
                                      ": sigma-um needs the voxel size, and the input does not "
                                      "say it: " +
                                      give);
  if (volume && !(voxel->z > 0))
    throw Error(ErrorKind::usage, a.at() +
                                      ": sigma-um on a volume needs the voxel size along z, "
                                      "and the input says only y and x: " +
                                      give);
  if (volume) s.z = um / voxel->z;
  s.y = um / voxel->y;
  s.x = um / voxel->x;
  for (const auto& [axis, v] : {std::pair{"z", s.z}, std::pair{"y", s.y}, std::pair{"x", s.x}})
    if (v > kMaxSigma)
      throw Error(ErrorKind::usage, a.at() + ": sigma-um=" + exact_number(um) + " is " +
                                        exact_number(v) + " pixels along " + axis +
                                        ", above the largest sigma " + exact_number(kMaxSigma));
  return s;
}

// A Gaussian's taps for `sigma` (the identity for 0), of radius `radius` (-1: ceil(3 sigma)).
std::vector<double> gaussian_axis(double sigma, std::int64_t radius) {
  if (sigma == 0) return {1.0};
  return gaussian_taps(radius >= 0 ? radius : gaussian_radius(sigma), sigma);
}

// The mean over `size` samples as scipy places it (origin 0: size / 2 samples before the output
// sample, the rest after), as taps of an odd count in convolution order: an even size's extra far
// tap weighs 0 (as ooc's Python functions pad scipy's even windows).
std::vector<double> uniform_taps(std::int64_t size) {
  std::vector<double> t = box_taps(size / 2);
  if (size % 2 == 0) {
    std::fill(t.begin(), t.end(), 1.0 / static_cast<double>(size));
    t.front() = 0.0;  // convolution order: the correlation's last offset, size / 2 after, first
  }
  return t;
}

// The taps of the separable stages, one definition for the builders and for the tools' options
// (which have no voxel size).
SeparableFilter taps_of(const std::string& stage, const StageArgs& a,
                        const VoxelSize* voxel = nullptr) {
  if (stage == "gaussian") {
    const Sigmas s = gaussian_sigmas(a, voxel, false);
    const std::int64_t r = a.has("radius") ? a.integer("radius") : -1;
    auto t = gaussian_axis(s.x, r);
    if (s.y == s.x) return {t, t};
    return {std::move(t), gaussian_axis(s.y, r)};
  }
  if (stage == "uniform") {
    const StageSize size = a.size("size");
    if (size.d != 0)
      throw Error(ErrorKind::usage, a.at() + ": size=" + a.text("size") +
                                        " (DxHxW) is a volume's window in 3-D; a 2-D image, or "
                                        "a volume's planes (--planes), takes size=N or HxW");
    auto t = uniform_taps(size.w);
    if (size.h == size.w) return {t, t};
    return {std::move(t), uniform_taps(size.h)};
  }
  if (stage == "correlate1d") {
    const auto t = correlation_taps(a.taps("taps"));  // to convolution order
    if (a.integer("axis") == 2)
      throw Error(ErrorKind::usage, a.at() +
                                        ": axis 2 (x) is a volume's; an image's axes are "
                                        "0 (y) and 1 (x)");
    return a.integer("axis") == 1 ? SeparableFilter{t, {1.0}} : SeparableFilter{{1.0}, t};
  }
  if (stage == "separable") return {a.taps("row"), a.taps("col")};
  throw Error(ErrorKind::usage, a.at() + ": not a separable filter stage");
}

// A volume's separable stage's taps: along z (convolution order) and the 2-D filter of planes.
struct VolumeTaps {
  std::vector<double> z{1.0};
  SeparableFilter xy;
};

VolumeTaps volume_taps(const std::string& stage, const StageContext& c) {
  const StageArgs& a = c.args;
  VolumeTaps v;
  std::vector<double>& z = v.z;
  SeparableFilter& xy = v.xy;
  if (stage == "gaussian") {
    const Sigmas s = gaussian_sigmas(a, &c.settings.voxel, true);
    // radius-z, else the radius given for a sigma along z that is the same, else sigma z's own.
    const std::int64_t r = a.has("radius-z")                      ? a.integer("radius-z")
                           : a.has("radius") && !a.has("sigma-z") ? a.integer("radius")
                                                                  : -1;
    z = gaussian_axis(s.z, r);
    const std::int64_t rxy = a.has("radius") ? a.integer("radius") : -1;
    xy = {gaussian_axis(s.x, rxy), gaussian_axis(s.y, rxy)};
  } else if (stage == "uniform") {
    // size=DxHxW, else size-z, else the size's rows (N for size=N).
    const StageSize hw = a.size("size");
    if (hw.d != 0 && a.has("size-z"))
      throw Error(ErrorKind::usage, a.at() + ": size=" + a.text("size") +
                                        " gives the planes already: give size=DxHxW or size-z, "
                                        "not both");
    z = uniform_taps(hw.d != 0 ? hw.d : a.has("size-z") ? a.integer("size-z") : hw.h);
    auto t = uniform_taps(hw.w);
    xy = hw.h == hw.w ? SeparableFilter{t, t} : SeparableFilter{std::move(t), uniform_taps(hw.h)};
  } else if (stage == "correlate1d") {
    const auto t = correlation_taps(a.taps("taps"));
    const std::int64_t axis = a.integer("axis");
    if (axis == 0) z = t;
    xy = axis == 2   ? SeparableFilter{t, {1.0}}
         : axis == 1 ? SeparableFilter{{1.0}, t}
                     : SeparableFilter{{1.0}, {1.0}};
  } else {
    z = a.taps("plane");
    xy = {a.taps("row"), a.taps("col")};
  }
  if (z.size() % 2 == 0)
    throw Error(ErrorKind::usage, a.at() + ": the taps along z must be an odd count, got " +
                                      std::to_string(z.size()));
  return v;
}

// A volume's separable stage: the z pass (plane taps), then the 2-D passes on its output, as
// scipy.ndimage filters axis by axis from axis 0. The z pass writes the accumulator's type.
BuiltStage volume_stage(const std::string& stage, const StageContext& c) {
  auto [z, xy] = volume_taps(stage, c);
  BuiltStage b;
  const bool identity =
      xy.row.size() == 1 && xy.row[0] == 1.0 && xy.col.size() == 1 && xy.col[0] == 1.0;
  // Taps past the volume's planes folded onto it (a radius beyond the depth costs what the depth's
  // does); the z pass's weights are plane by plane, first plane first: the taps reversed.
  z = fold_taps(z, c.in.depth, c.settings.border);
  std::vector<double> w(z.rbegin(), z.rend());
  const auto before = static_cast<std::int64_t>(w.size() / 2);
  auto zpass = make_zpass(c.in, kernels::ZPassKind::sum, std::move(w), before, c.acc(),
                          c.settings.border, c.settings.border_value);
  const ImageSpec mid = *zpass->output();
  if (identity) {  // correlate1d axis=0: the z pass alone, converted to the stage's type
    if (c.out() == mid.type) {
      b.op = std::move(zpass);
      return b;
    }
    kernels::PointParams p;
    p.kind = kernels::PointKind::convert;
    b.before.push_back(std::move(zpass));
    b.op = make_point(mid, p, c.out(), "convert type=" + std::string(name(c.out())));
    return b;
  }
  if (z.size() > 1) b.before.push_back(std::move(zpass));
  b.op = c.separable(z.size() > 1 ? mid : c.in, xy, c.out(), method_of(c.args));
  return b;
}

}  // namespace

// The separable linear filters as pipeline stages: gaussian, uniform, correlate1d, separable.
std::vector<StageEntry> separable_stages() {
  using Kind = StageParam::Kind;
  // The tools' --sigma reads this help too: one number there.
  StageParam sigma =
      number_param("sigma", std::nullopt, 0, true, "Gaussian sigma, pixels", kMaxSigma);
  // Also per axis as scipy's sigma tuple. Not required: sigmas or sigma-um may give it instead
  // (the builder asks for one of them).
  sigma.per_axis = true;
  const StageParam gaussian_sigma = computed(sigma, "sigmas or sigma-um");
  const StageParam sigmas =
      computed(other_param("sigmas", Kind::text, std::nullopt,
                           "per-axis sigmas, pixels, as sigma=Sy,Sx (scipy's sigma tuple): Sy,Sx; "
                           "a volume filtered in 3-D Sz,Sy,Sx; 0 leaves an axis alone"),
               "sigma");
  const StageParam sigma_um = computed(
      number_param("sigma-um", std::nullopt, 0, true,
                   "sigma in micrometres: S / the voxel size along each axis (the input's, or "
                   "--voxel-size)"),
      "sigma");
  const StageParam radius = computed(integer_param("radius", std::nullopt, 0, kMaxStageRadius,
                                                   "taps 2R+1 (default ceil(3 sigma))"),
                                     "auto");
  const StageParam method = other_param("method", Kind::text, std::string("auto"),
                                        "auto (a cost model), direct or fft (1-D overlap-save "
                                        "blocks along rows, then columns; CPU only)");
  auto separable_builder = [](std::string stage) {
    return [stage](const StageContext& c) {
      // Holes: normalized convolution, its own operation (masked_separable.cpp).
      if (c.settings.nodata && !c.volume())
        return BuiltStage{make_masked_separable(c, taps_of(stage, c.args, &c.settings.voxel))};
      if (c.settings.nodata) {  // in 3-D (masked_volume.cpp)
        const VolumeTaps t = volume_taps(stage, c);
        return BuiltStage{make_masked_volume_separable(c, t.z, t.xy, c.args.call_text())};
      }
      if (c.args.has("min-weight") || c.args.has("fill"))
        throw Error(ErrorKind::usage, c.args.at() +
                                          ": min-weight and fill weigh holes: give "
                                          "--nodata (or an input with a nodata tag)");
      if (c.volume()) return volume_stage(stage, c);
      return BuiltStage{
          c.separable(c.in, taps_of(stage, c.args, &c.settings.voxel), c.out(), method_of(c.args))};
    };
  };
  const StageParam sigma_z = computed(
      number_param("sigma-z", std::nullopt, 0, true, "volumes: sigma along z, planes", kMaxSigma),
      "sigma");
  const StageParam radius_z =
      computed(integer_param("radius-z", std::nullopt, 0, kMaxStageRadius,
                             "volumes: taps 2R+1 along z (default: radius, or sigma-z's)"),
               "auto");
  // A window's sides as scipy's size: N, HxW, or on a volume DxHxW (size-z D).
  StageParam uniform_size = integer_param("size", std::nullopt, 1, 2 * kMaxStageRadius + 1,
                                          "window side N, or sides HxW (volumes: DxHxW)");
  uniform_size.per_axis = true;
  const StageParam min_weight = min_weight_param(), fill = fill_param();
  std::vector<StageEntry> s;
  s.push_back(
      {{"gaussian",
        "Gaussian filter (scipy.ndimage.gaussian_filter, truncate 3; as oocconv --sigma); "
        "3-D on a volume",
        {gaussian_sigma, radius, method, sigma_z, radius_z, sigmas, sigma_um, min_weight, fill}},
       separable_builder("gaussian")});
  s.push_back({{"uniform",
                "mean over an N x N or H x W (volumes: N x N x N or D x H x W) window, placed as "
                "scipy.ndimage.uniform_filter places it",
                {uniform_size, method,
                 computed(integer_param("size-z", std::nullopt, 1, 2 * kMaxStageRadius + 1,
                                        "volumes: window along z"),
                          "size"),
                 min_weight, fill}},
               separable_builder("uniform")});
  s.push_back({{"correlate1d",
                "1-D correlation along one axis (scipy.ndimage.correlate1d)",
                {other_param("taps", Kind::taps, std::nullopt, "weights a,b,c (an odd count)"),
                 integer_param("axis", 1, 0, 2,
                               "0: along columns (y), 1: along rows (x); volumes: 0 z, 1 y, 2 x"),
                 method, min_weight, fill}},
               separable_builder("correlate1d")});
  s.push_back({{"separable",
                "row taps along x, then column taps along y (scipy.ndimage.convolve1d; as oocconv "
                "--row-taps and --col-taps); volumes: plane taps along z first",
                {other_param("row", Kind::taps, std::vector<double>{1.0},
                             "taps along x, convolution order"),
                 other_param("col", Kind::taps, std::vector<double>{1.0},
                             "taps along y, convolution order"),
                 method,
                 other_param("plane", Kind::taps, std::vector<double>{1.0},
                             "volumes: taps along z, convolution order"),
                 min_weight, fill}},
               separable_builder("separable")});
  for (StageEntry& e : s) e.decl.takes_convert = e.decl.volume = e.decl.masked = true;
  return s;
}

}  // namespace detail

SeparableFilter stage_taps(const StageCall& call) {
  const detail::StageEntry* e = detail::find_stage(call.name);
  if (!e) throw Error(ErrorKind::usage, "unknown stage '" + call.name + "'");
  check_stage_call(call, call.name);
  return detail::taps_of(call.name, detail::StageArgs(call, e->decl, call.name));
}

}  // namespace ooc
