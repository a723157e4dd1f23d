// The linear filters as pipeline stages: gaussian, uniform, correlate1d, separable (the
// separable operation) and convolve (the 2-D one, direct or FFT as the plan decides).
#include "ooc/error.hpp"
#include "ooc/limits.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace detail {
namespace {

// The taps of the separable stages, one definition for the builders and for the tools' options.
SeparableFilter taps_of(const std::string& stage, const StageArgs& a) {
  if (stage == "gaussian") {
    const double sigma = a.number("sigma");
    const std::int64_t r =
        a.has("radius") ? static_cast<std::int64_t>(a.number("radius")) : gaussian_radius(sigma);
    auto t = gaussian_taps(r, sigma);
    return {t, t};
  }
  if (stage == "uniform") {
    const auto size = static_cast<std::int64_t>(a.number("size"));
    if (size % 2 == 0)
      throw Error(ErrorKind::usage,
                  a.at() + ": size must be odd (2R+1), got " + std::to_string(size));
    auto t = box_taps(size / 2);
    return {t, t};
  }
  if (stage == "correlate1d") {
    const auto t = correlation_taps(a.taps("taps"));  // to convolution order
    return a.number("axis") == 1 ? SeparableFilter{t, {1.0}} : SeparableFilter{{1.0}, t};
  }
  if (stage == "separable") return {a.taps("row"), a.taps("col")};
  throw Error(ErrorKind::usage, a.at() + ": not a separable filter stage");
}

ConvMethod method_of(const StageArgs& a) {
  try {
    return parse_conv_method(a.text("method"));
  } catch (const Error&) {
    throw Error(ErrorKind::usage,
                a.at() + ": method must be auto, direct or fft, got '" + a.text("method") + "'");
  }
}

}  // namespace

std::vector<StageEntry> filter_stages() {
  using Kind = StageParam::Kind;
  // 3 sigma, the default radius, stays within the largest radius.
  constexpr double kMaxSigma = kMaxStageRadius / 3;
  const StageParam sigma = number_param("sigma", "", 0, true, "Gaussian sigma, pixels", kMaxSigma);
  const StageParam radius =
      integer_param("radius", "auto", 0, kMaxStageRadius, "taps 2R+1 (default ceil(3 sigma))");
  const StageParam method = other_param("method", Kind::text, "auto",
                                        "auto (a cost model), direct or fft (1-D overlap-save "
                                        "blocks along rows, then columns; CPU only)");
  auto separable_builder = [](std::string stage) {
    return [stage](const StageContext& c) {
      return BuiltStage{c.separable(c.in, taps_of(stage, c.args), c.out(), method_of(c.args))};
    };
  };
  std::vector<StageEntry> s;
  s.push_back({{"gaussian",
                "Gaussian filter (scipy.ndimage.gaussian_filter, truncate 3)",
                {sigma, radius, method}},
               separable_builder("gaussian")});
  s.push_back(
      {{"uniform",
        "mean over an N x N window (scipy.ndimage.uniform_filter)",
        {integer_param("size", "", 1, 2 * kMaxStageRadius + 1, "window side N, odd"), method}},
       separable_builder("uniform")});
  s.push_back(
      {{"correlate1d",
        "1-D correlation along one axis (scipy.ndimage.correlate1d)",
        {other_param("taps", Kind::taps, "", "weights a,b,c (an odd count)"),
         integer_param("axis", "1", 0, 1, "0: along columns (y), 1: along rows (x)"), method}},
       separable_builder("correlate1d")});
  s.push_back({{"separable",
                "row taps along x, then column taps along y (scipy.ndimage.convolve1d)",
                {other_param("row", Kind::taps, "1", "taps along x, convolution order"),
                 other_param("col", Kind::taps, "1", "taps along y, convolution order"), method}},
               separable_builder("separable")});
  s.push_back({{"convolve",
                "2-D convolution (scipy.ndimage.convolve)",
                {other_param("kernel", Kind::text, "",
                             "FILE (text or .npy), box:N, gaussian2d:S, laplace, sobel-x, sobel-y"),
                 other_param("method", Kind::text, "auto",
                             "auto (a cost model), direct or fft (overlap-save tiles)")}},
               [](const StageContext& c) {
                 Conv2dParams p;
                 p.kernel =
                     parse_kernel(c.args.text("kernel"),
                                  c.options.mem_limit ? c.options.mem_limit : default_mem_limit());
                 p.border = c.settings.border;
                 p.border_value = c.settings.border_value;
                 p.out_type = c.out();
                 p.precision = c.settings.precision;
                 p.method = method_of(c.args);
                 return BuiltStage{make_conv2d(c.in, p, c.options)};
               }});
  for (StageEntry& e : s) e.decl.takes_convert = true;
  return s;
}

}  // namespace detail

SeparableFilter stage_taps(const StageCall& call) {
  const detail::StageEntry* e = detail::find_stage(call.name);
  if (!e) throw Error(ErrorKind::usage, "unknown stage '" + call.name + "'");
  return detail::taps_of(call.name, detail::StageArgs(call, e->decl, call.name));
}

}  // namespace ooc
