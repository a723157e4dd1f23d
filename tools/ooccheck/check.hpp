// What the checkers of ooccheck share: the band walk and the error tally, the report, OUT opened
// against IN, the per-sample tolerance of the reference modes (the references themselves are
// reference.hpp's, shared with the tests), and the entry point of each checker (separable.cpp,
// conv2d.cpp, equalize.cpp, compare.cpp; --atax is atax.hpp's).
#pragma once

#include <tbb/combinable.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "atax.hpp"  // pick_sample, line_tokens
#include "cli/filter_options.hpp"
#include "ooc/border.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "reference.hpp"  // to_double, magnitudes, band_slots, the references

namespace ooc::check {

// Rows per band, the unit of reading and of --sample.
constexpr std::int64_t kBandRows = 64;

// The runs of characters of `text` between the characters that `separator` accepts.
template <class Separator>
std::vector<std::string> split_tokens(const std::string& text, Separator separator) {
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < text.size();) {
    if (separator(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && !separator(text[j])) ++j;
    tokens.push_back(text.substr(i, j - i));
    i = j;
  }
  return tokens;
}

// "1.5 GiB", or "6.6e+20 bytes" beyond what format_bytes scales.
std::string bytes_text(double bytes);

// The memory this process may use: physical memory, or less under ulimit -v.
std::size_t usable_memory_bytes();

std::string number(double v);

// The value oocconv stores for an exact result v in an output of type t. nearbyint, not round:
// ties go to even, as in the kernels (default rounding mode).
double as_stored(double v, SampleType t);

// Error statistics of a set of samples. Samples are numbered y * row_samples + i.
struct Tally {
  struct Sample {
    std::int64_t index = -1;  // -1: none yet
    double a = 0, b = 0, tolerance = 0;
  };
  double max_abs = 0;
  Sample worst;  // the sample of max_abs (the first of equals), none while all are equal
  double max_ratio = 0;
  Sample worst_ratio;  // the sample of the largest |a - b| / its tolerance
  double sum_sq = 0;
  double peak = 0;  // max |reference| (|A| in --compare), finite values
  std::int64_t count = 0, over = 0, nan_mismatch = 0;

  // a: the reference (or A), b: the sample under test (or B); tolerance: what |a - b| may be.
  // An infinity must be matched by the same infinity, whatever the tolerance.
  void add(std::int64_t index, double a, double b, double tolerance) {
    const bool nan_a = std::isnan(a), nan_b = std::isnan(b);
    if (nan_a || nan_b) {
      nan_mismatch += nan_a != nan_b;
      return;
    }
    const double d = a == b ? 0.0 : std::abs(a - b);  // a == b: equal infinities are no error
    const bool inf_mismatch = d > 0 && (std::isinf(a) || std::isinf(b));
    if (d > max_abs || (d > 0 && d == max_abs && index < worst.index)) {
      max_abs = d;
      worst = {index, a, b, tolerance};
    }
    const double ratio = d == 0 ? 0.0 : inf_mismatch ? INFINITY : d / tolerance;
    if (ratio > max_ratio || (ratio > 0 && ratio == max_ratio && index < worst_ratio.index)) {
      max_ratio = ratio;
      worst_ratio = {index, a, b, tolerance};
    }
    sum_sq += d * d;
    over += inf_mismatch || d > tolerance;
    if (std::isfinite(a)) peak = std::max(peak, std::abs(a));
    ++count;
  }

  void merge(const Tally& t) {
    if (t.worst.index >= 0 && (worst.index < 0 || t.max_abs > max_abs ||
                               (t.max_abs == max_abs && t.worst.index < worst.index))) {
      max_abs = t.max_abs;
      worst = t.worst;
    }
    if (t.worst_ratio.index >= 0 &&
        (worst_ratio.index < 0 || t.max_ratio > max_ratio ||
         (t.max_ratio == max_ratio && t.worst_ratio.index < worst_ratio.index))) {
      max_ratio = t.max_ratio;
      worst_ratio = t.worst_ratio;
    }
    sum_sq += t.sum_sq;
    peak = std::max(peak, t.peak);
    count += t.count;
    over += t.over;
    nan_mismatch += t.nan_mismatch;
  }
};

// First rows of the bands to check: all bands of [first, end), or `sample` of them (pick_sample).
std::vector<std::int64_t> pick_bands(std::int64_t first, std::int64_t end, std::int64_t sample,
                                     std::uint64_t seed);

// Runs check(y0, rows, tally) on every picked band, rows clipped to `end`.
template <class CheckBand>
Tally over_bands(const std::vector<std::int64_t>& bands, std::int64_t end, const CheckBand& check) {
  tbb::combinable<Tally> tallies;
  for (const std::int64_t y0 : bands) check(y0, std::min(kBandRows, end - y0), tallies);
  Tally all;
  tallies.combine_each([&](const Tally& t) { all.merge(t); });
  return all;
}

// " at row 3 sample 7 (x 2, channel 1)".
std::string where(std::int64_t index, const ooc::ImageSpec& s);

// Prints the summary lines and returns the exit code. `what` says what was checked, `rule` how
// the tolerance was set; PSNR is relative to `range`.
int report(const std::string& what, const std::string& rule, const Tally& t, double range,
           const ooc::ImageSpec& s, const char* name_a, const char* name_b);

// "3 of 40 bands of 64 rows (--sample 3, seed 1)".
std::string band_summary(std::size_t picked, std::int64_t first, std::int64_t end,
                         std::int64_t sample, std::uint64_t seed);

// exp(-0.5 (i / sigma)^2) for i in [-r, r], divided by their sum (summed with Neumaier's
// compensation, so that the normalization is good to an ulp or two whatever the count).
std::vector<double> own_gaussian(std::int64_t r, double sigma);

// The reference modes are 2-D: a volume's filters are checked against scipy.ndimage in 3-D
// (tests/cli/test_volumes.py), not here. A usage Error for a volume at `path`.
void refuse_volume(const ooc::ImageSpec& s, const std::string& path);

// Opens OUT with the geometry of the input; raw OUT takes its type from out_type. `tool` made OUT
// (for the message when the geometry says it cannot have).
std::unique_ptr<ooc::Source> open_output(const std::string& path, const ooc::Source& in,
                                         const std::string& in_path,
                                         std::optional<SampleType> out_type,
                                         const char* tool = "oocconv");

// The per-sample tolerance of the reference modes: what |OUT - expected| may be for a sample of
// expected value e, magnitude M and input magnitude S (see the footer), or a fixed --tolerance.
class ReferenceTolerance {
 public:
  // taps: the products summed per sample; underflow_scale: what an absolute rounding error of an
  // inner sum may be multiplied by on its way out; s_coefficient: the allowance per unit of S (a
  // 2-D kernel that oocconv runs as its rank-1 factors); support: the definition of M (and S).
  ReferenceTolerance(double taps, bool acc_f64, SampleType out_type, double fixed,
                     double underflow_scale, double s_coefficient, std::string support)
      : out_type_(out_type),
        fixed_(fixed),
        taps_(taps),
        u_exp_(acc_f64 ? -53 : -24),
        s_coefficient_(s_coefficient),
        support_(std::move(support)) {
    const double u = std::ldexp(1.0, u_exp_);
    relative_ = (taps_ + 4) * u + (2 * taps_ + 4) * 0x1p-53;
    absolute_ = (taps_ + 4) * (acc_f64 ? DBL_MIN : FLT_MIN) * std::max(1.0, underflow_scale);
  }

  double operator()(double e, double m, double s = 0) const {
    if (fixed_ >= 0) return fixed_;
    if (!std::isfinite(e)) return 0.0;       // NaN and infinities exactly
    if (!std::isfinite(m)) return INFINITY;  // no bound: only NaN/inf must agree
    // oocconv's and the reference's rounding
    const double b = relative_ * m + s_coefficient_ * s + absolute_ + fft_;
    switch (out_type_) {
      case SampleType::f32:
        return b * (1 + 0x1p-24) + 0x1p-23 * std::abs(e) + 0x1p-149;
      case SampleType::f64:
        return b + 0x1p-52 * std::abs(e);
      default:
        return b + 1;  // each side rounded to an integer
    }
  }

  // An FFT convolution's rounding, the same for every sample: its transforms spread each tile's
  // rounding over the tile, so it is bounded by the tile's largest |input|, not by M.
  void allow_fft(double absolute, std::string why) {
    fft_ = absolute;
    fft_why_ = std::move(why);
  }

  // A line for the summary when the bound is too loose to tell much (f32 sums of many taps), or
  // an empty string.
  std::string warning() const {
    if (fixed_ >= 0 || relative_ <= 1e-3) return {};
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "note: %lld taps summed in f%d may be off by up to %.3g%% of M, and so may a "
                  "sample here without failing%s\n",
                  static_cast<long long>(taps_), u_exp_ == -24 ? 32 : 64, 100 * relative_,
                  u_exp_ == -24 ? "; --precision f64 (for oocconv and ooccheck) bounds it far "
                                  "tighter"
                                : "");
    return buf;
  }

  // The rule, for the summary.
  std::string describe(double largest_m) const {
    if (fixed_ >= 0) return "--tolerance " + number(fixed_) + " for every sample";
    const std::string n = std::to_string(static_cast<long long>(taps_));
    std::string s = "per sample, ";
    switch (out_type_) {
      case SampleType::f32:
        s += "b x (1 + 2^-24) + 2^-23 x |expected| (f32 output)";
        break;
      case SampleType::f64:
        s += "b + 2^-52 x |expected| (f64 output)";
        break;
      default:
        s += "b + 1 (integer output)";
    }
    s += ", b = (" + n + " taps + 4) x 2^" + std::to_string(u_exp_) + " x M + (2 x " + n +
         " + 4) x 2^-53 x M (float64 reference)";
    if (s_coefficient_ > 0)
      s += std::string(" + ") + number(s_coefficient_) +
           " x S (2^-48 x max|tap|, for a kernel oocconv runs as rank-1 factors)";
    if (fft_ > 0) s += " + " + number(fft_) + " (" + fft_why_ + ")";
    return s + " + underflow, " + support_ + " (largest M " + number(largest_m) + ")";
  }

 private:
  SampleType out_type_;
  double fixed_;
  double taps_ = 0;
  int u_exp_ = -24;
  double s_coefficient_ = 0;
  std::string support_;
  double relative_ = 0, absolute_ = 0;
  double fft_ = 0;
  std::string fft_why_;
};

// What both reference checks (separable and 2-D) do once their reference is built: say what is
// compared, walk the picked bands with `check`, and report against the tolerance.
template <class CheckBand>
int check_reference(const ooc::Source& in, const ooc::Source& out, const std::string& filter_line,
                    ooc::BorderMode border, double border_value, bool acc_f64,
                    const ReferenceTolerance& tolerance_of, tbb::combinable<double>& largest_m,
                    std::int64_t sample, std::uint64_t seed, const CheckBand& check) {
  const ooc::ImageSpec& is = in.spec();
  const SampleType out_type = out.spec().type;
  const auto bands = pick_bands(0, is.height, sample, seed);
  std::printf("reference: %s -> %s\n", in.describe().c_str(), out.describe().c_str());
  std::printf("%s, border %s", filter_line.c_str(), std::string(ooc::name(border)).c_str());
  if (border == ooc::BorderMode::constant) std::printf(" %.9g", border_value);
  std::printf(", output %s, oocconv accumulates in %s\n", std::string(ooc::name(out_type)).c_str(),
              acc_f64 ? "f64" : "f32");
  std::printf("%s", tolerance_of.warning().c_str());
  const Tally t = over_bands(bands, is.height, check);
  const double range = ooc::is_integer(out_type)
                           ? ooc::highest_value(out_type) - ooc::lowest_value(out_type)
                           : t.peak;
  const std::string what = "checked " + std::to_string(t.count) + " samples in " +
                           band_summary(bands.size(), 0, is.height, sample, seed);
  const double m = largest_m.combine([](double a, double b) { return std::max(a, b); });
  return report(what, tolerance_of.describe(m), t, range, is, "expected", "OUT has");
}

// The checkers: each returns the exit code (0 within tolerance, 1 over it) and throws ooc::Error
// for usage (2) and input (3) errors.
// ooccheck OUT IN [filter options of oocconv]: the separable convolution (separable.cpp).
int run_reference(const std::vector<std::string>& files, const ooc::RawHints& hints,
                  std::uint64_t seed, const ooc::FilterOptions& filter, double tolerance,
                  std::int64_t sample);
// ooccheck OUT IN --kernel K: the 2-D convolution (conv2d.cpp).
int run_reference2d(const std::vector<std::string>& files, const ooc::RawHints& hints,
                    std::uint64_t seed, const ooc::FilterOptions& filter, double tolerance,
                    std::int64_t sample);
// ooccheck --equalize OUT IN: ooceq's histogram equalization (equalize.cpp).
int run_equalize(const std::vector<std::string>& files, const ooc::RawHints& hints,
                 std::uint64_t seed, std::int64_t sample);
// ooccheck --compare A B: two images of the same geometry (compare.cpp).
int run_compare(const std::vector<std::string>& files, const ooc::RawHints& hints,
                std::uint64_t seed, double tolerance, std::int64_t margin, std::int64_t sample);

// Raises `peak` to the largest |sample| of the input (NaN and infinities aside: they have no
// bound), reading it in 64-row pieces: what the FFT's error bound is relative to.
void largest_input(ooc::Source& in, double& peak);

}  // namespace ooc::check
