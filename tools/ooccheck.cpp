// ooccheck: judges images out of core, band by band, in bounded memory.
//   ooccheck OUT IN [filter options of oocconv]: recomputes in float64 what `oocconv IN OUT
//     <filter options>` must write, and compares OUT with it.
//   ooccheck --compare A B: compares two images of the same geometry.
// Both report the max abs error and where it is, RMS error, PSNR and the samples over the
// tolerance, and exit 0 only within it. --sample N checks N random bands, for files too large to
// read whole.
//
// The reference is written apart from the library's filtering code on purpose: a bug shared by
// the reference and the thing it checks would go unseen. It uses only ooc::open_source to read
// rows, ooc::map_border for coordinates outside the image, and the shared option parsing for the
// taps; the row and column passes, the border padding along x and the conversion to the output
// type are its own.
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/filter_options.hpp"
#include "ooc/border.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/ops/separable.hpp"

namespace {

using ooc::Error;
using ooc::ErrorKind;
using ooc::SampleType;

// Rows per band, the unit of reading and of --sample.
constexpr std::int64_t kBandRows = 64;

constexpr const char* kFooter = R"(
The reference: oocconv convolves along x, then along y (scipy.ndimage.convolve1d semantics), with
the border rule along both axes. ooccheck recomputes that in float64, 64 output rows at a time,
and converts each value to OUT's type as oocconv stores it (integers rounded to nearest, ties to
even, and saturated; NaN to 0). OUT's type comes from its header (.npy, TIFF), or for a raw OUT
from --out-type (default: the input's type). Pass the input and filter options that made OUT.

Default tolerance: 1 for integer outputs (f32 accumulation may round the other way at .5), or
1e-5 x max|expected| where that is larger and oocconv sums in f32; for float outputs 1e-5 x
max|expected| (1e-10 x when oocconv sums in f64 into f64). With taps of both signs max|expected|
is the largest sum of |tap| x |sample|: f32 sums lose digits to cancellation relative to that.
--compare: 1 for integers, 1e-5 x max|A| for floats.

Examples:
  ooccheck out.raw in.raw --width 16384 --type u16 --radius 16
      Recompute `oocconv in.raw out.raw --width 16384 --type u16 --radius 16` and compare.
  ooccheck out.npy in.npy --taps 1,4,6,4,1 --border constant --border-value 10
  ooccheck out.raw synth:noise --width 65536 --height 200000 --seed 3 --sigma 2 --sample 20
      20 random bands of 64 rows of a huge image; --seed makes the synth: image, as it did for
      oocconv, and picks the bands.
  ooccheck --compare a.raw b.raw --width 16384 --type f32
  ooccheck --compare ours.raw peer.raw --width 16384 --type u8 --tolerance 1 --margin 16

Exit codes: 0 within tolerance, 1 over it, 2 usage, 3 bad input (geometry mismatch included).
)";

// Row of samples of type t as doubles.
void to_double(SampleType t, const std::byte* p, std::int64_t n, double* out) {
  auto conv = [&]<class T>(T) {
    for (std::int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * sizeof(T), sizeof(T));
      out[i] = static_cast<double>(v);
    }
  };
  switch (t) {
    case SampleType::u8:
      return conv(std::uint8_t{});
    case SampleType::u16:
      return conv(std::uint16_t{});
    case SampleType::i16:
      return conv(std::int16_t{});
    case SampleType::u32:
      return conv(std::uint32_t{});
    case SampleType::i32:
      return conv(std::int32_t{});
    case SampleType::f32:
      return conv(float{});
    case SampleType::f64:
      return conv(double{});
  }
}

// The value oocconv stores for an exact result v in an output of type t. nearbyint, not round:
// ties go to even, as in the kernels (default rounding mode).
double as_stored(double v, SampleType t) {
  switch (t) {
    case SampleType::f32:
      return static_cast<double>(static_cast<float>(v));
    case SampleType::f64:
      return v;
    default:
      if (std::isnan(v)) return 0;  // there is no integer NaN
      return std::nearbyint(std::clamp(v, ooc::lowest_value(t), ooc::highest_value(t)));
  }
}

// Error statistics of a set of samples. Samples are numbered y * row_samples + i.
struct Tally {
  double max_abs = 0;
  std::int64_t worst = -1;  // the sample of max_abs (the first of equals), -1 while all equal
  double worst_a = 0, worst_b = 0;
  double sum_sq = 0;
  double peak = 0;   // max |reference| (|A| in --compare), finite values
  double scale = 0;  // what a relative tolerance is relative to
  std::int64_t count = 0, over = 0, nan_mismatch = 0;

  // a: the reference (or A), b: the sample under test (or B).
  void add(std::int64_t index, double a, double b, double tolerance) {
    const bool nan_a = std::isnan(a), nan_b = std::isnan(b);
    if (nan_a || nan_b) {
      nan_mismatch += nan_a != nan_b;
      return;
    }
    const double d = a == b ? 0.0 : std::abs(a - b);  // a == b: equal infinities are no error
    if (d > max_abs || (d > 0 && d == max_abs && index < worst)) {
      max_abs = d;
      worst = index;
      worst_a = a;
      worst_b = b;
    }
    sum_sq += d * d;
    over += d > tolerance;
    if (std::isfinite(a)) peak = std::max(peak, std::abs(a));
    ++count;
  }

  void merge(const Tally& t) {
    if (t.worst >= 0 &&
        (worst < 0 || t.max_abs > max_abs || (t.max_abs == max_abs && t.worst < worst))) {
      max_abs = t.max_abs;
      worst = t.worst;
      worst_a = t.worst_a;
      worst_b = t.worst_b;
    }
    sum_sq += t.sum_sq;
    peak = std::max(peak, t.peak);
    scale = std::max(scale, t.scale);
    count += t.count;
    over += t.over;
    nan_mismatch += t.nan_mismatch;
  }
};

// First rows of the bands to check: all bands of [first, end), or `sample` of them picked at
// random (Floyd's algorithm on splitmix64, so that a seed picks the same bands in every build).
std::vector<std::int64_t> pick_bands(std::int64_t first, std::int64_t end, std::int64_t sample,
                                     std::uint64_t seed) {
  const std::int64_t bands = (end - first + kBandRows - 1) / kBandRows;
  std::vector<std::int64_t> picked;
  if (sample <= 0 || sample >= bands) {
    for (std::int64_t b = 0; b < bands; ++b) picked.push_back(first + b * kBandRows);
    return picked;
  }
  std::uint64_t state = seed;
  auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::set<std::int64_t> chosen;
  for (std::int64_t j = bands - sample; j < bands; ++j) {
    const auto t = static_cast<std::int64_t>(
        (static_cast<unsigned __int128>(next()) * static_cast<std::uint64_t>(j + 1)) >> 64);
    chosen.insert(chosen.count(t) ? j : t);
  }
  for (const std::int64_t b : chosen) picked.push_back(first + b * kBandRows);
  return picked;
}

// Runs check(y0, rows, tolerance, tally) on every picked band, rows clipped to `end`.
template <class CheckBand>
Tally over_bands(const std::vector<std::int64_t>& bands, std::int64_t end, double tolerance,
                 const CheckBand& check) {
  tbb::combinable<Tally> tallies;
  for (const std::int64_t y0 : bands) check(y0, std::min(kBandRows, end - y0), tolerance, tallies);
  Tally all;
  tallies.combine_each([&](const Tally& t) { all.merge(t); });
  return all;
}

// Runs the check once, counting samples over `tolerance` when it is known up front; otherwise
// (a tolerance relative to a maximum found on the way) finds the tolerance, and counts in a second
// pass only if the worst error is over it.
template <class CheckBand, class DefaultTolerance>
Tally run_check(const std::vector<std::int64_t>& bands, std::int64_t end, double tolerance,
                const DefaultTolerance& default_tolerance, const CheckBand& check,
                double& used_tolerance) {
  const bool known = tolerance >= 0;
  Tally all =
      over_bands(bands, end, known ? tolerance : std::numeric_limits<double>::infinity(), check);
  used_tolerance = known ? tolerance : default_tolerance(all);
  if (!known) {
    all.over = 0;
    if (all.max_abs > used_tolerance) all.over = over_bands(bands, end, used_tolerance, check).over;
  }
  return all;
}

// Prints the summary lines and returns the exit code. `what` says what was checked; PSNR is
// relative to `range`.
int report(const std::string& what, const Tally& t, double tolerance, double range,
           const ooc::ImageSpec& s, const char* name_a, const char* name_b) {
  const double rms = t.count ? std::sqrt(t.sum_sq / double(t.count)) : 0.0;
  const double psnr =
      rms > 0 ? 20 * std::log10(range / rms) : std::numeric_limits<double>::infinity();
  std::printf("%s: max abs error %.6g", what.c_str(), t.max_abs);
  if (t.worst >= 0) {
    const std::int64_t n = s.row_samples();
    std::printf(" at row %lld sample %lld", (long long)(t.worst / n), (long long)(t.worst % n));
    if (s.channels > 1)
      std::printf(" (x %lld, channel %lld)", (long long)(t.worst % n / s.channels),
                  (long long)(t.worst % s.channels));
    std::printf(" (%s %.9g, %s %.9g)", name_a, t.worst_a, name_b, t.worst_b);
  }
  std::printf(", RMS %.6g, PSNR %.2f dB, %lld over tolerance %.6g, %lld NaN mismatches\n", rms,
              psnr, (long long)t.over, tolerance, (long long)t.nan_mismatch);
  const bool ok = t.over == 0 && t.nan_mismatch == 0;
  if (ok) {
    std::printf("OK: within tolerance\n");
  } else {
    std::printf("FAIL: %lld samples over tolerance %.6g, %lld NaN mismatches\n", (long long)t.over,
                tolerance, (long long)t.nan_mismatch);
  }
  return ok ? 0 : 1;
}

// "3 of 40 bands of 64 rows (--sample 3, seed 1)".
std::string band_summary(std::size_t picked, std::int64_t first, std::int64_t end,
                         std::int64_t sample, std::uint64_t seed) {
  const std::int64_t bands = (end - first + kBandRows - 1) / kBandRows;
  std::string s = std::to_string(picked) + " of " + std::to_string(bands) + " bands of " +
                  std::to_string(kBandRows) + " rows";
  if (sample > 0 && static_cast<std::int64_t>(picked) < bands)
    s += " (--sample " + std::to_string(sample) + ", seed " + std::to_string(seed) + ")";
  return s;
}

// out[i] = sum_k w[k] * src[k][i], k ascending.
void weighted_sum(const std::vector<const double*>& src, const std::vector<double>& w, double* out,
                  std::int64_t n) {
  std::fill(out, out + n, 0.0);
  for (std::size_t k = 0; k < w.size(); ++k) {
    const double wk = w[k];
    const double* s = src[k];
    for (std::int64_t i = 0; i < n; ++i) out[i] += wk * s[i];
  }
}

std::vector<double> abs_of(std::vector<double> v) {
  for (double& x : v) x = std::abs(x);
  return v;
}

// The float64 reference of oocconv's separable convolution, one band of output rows at a time.
class Reference {
 public:
  Reference(ooc::Source& in, const ooc::SeparableParams& p, bool magnitude)
      : in_(in),
        s_(in.spec()),
        n_(s_.row_samples()),
        tx_(p.filter.row),
        ty_(p.filter.col),
        rx_(static_cast<std::int64_t>(tx_.size() / 2)),
        ry_(static_cast<std::int64_t>(ty_.size() / 2)),
        border_(p.border),
        cval_(p.border_value),
        magnitude_(magnitude),
        ax_(abs_of(tx_)),
        ay_(abs_of(ty_)) {}

  std::int64_t row_samples() const { return n_; }

  // Rows [y0, y0 + rows) of the exact result (and, with magnitude, of sum |tap| x |sample|);
  // valid until the next call.
  void compute_band(std::int64_t y0, std::int64_t rows) {
    const std::int64_t in_rows = rows + 2 * ry_;
    rowpass_.resize(static_cast<std::size_t>(in_rows * n_));
    if (magnitude_) rowpass_mag_.resize(rowpass_.size());
    // Row j holds input row y0 - ry + j after the pass along x.
    tbb::parallel_for(std::int64_t{0}, in_rows, [&](std::int64_t j) {
      row_pass(y0 - ry_ + j, rowpass_.data() + j * n_,
               magnitude_ ? rowpass_mag_.data() + j * n_ : nullptr);
    });
  }

  // Output row y0 + y of the band (after compute_band) into out (and mag).
  void column_pass(std::int64_t y, double* out, double* mag) const {
    // out(Y) = sum_k ty[k] * rowpass(Y + ry - k); rowpass(Y') is row Y' - y0 + ry of the band.
    thread_local std::vector<const double*> src;
    src.resize(ty_.size());
    for (std::size_t k = 0; k < ty_.size(); ++k)
      src[k] = rowpass_.data() + (y + 2 * ry_ - static_cast<std::int64_t>(k)) * n_;
    weighted_sum(src, ty_, out, n_);
    if (mag != nullptr) {
      for (std::size_t k = 0; k < ty_.size(); ++k)
        src[k] = rowpass_mag_.data() + (y + 2 * ry_ - static_cast<std::int64_t>(k)) * n_;
      weighted_sum(src, ay_, mag, n_);
    }
  }

 private:
  // Image row yy (any integer) filtered along x. A row outside the image under the constant rule
  // is the constant itself: scipy pads the x-filtered image, not the input, along y.
  void row_pass(std::int64_t yy, double* out, double* mag) const {
    const std::int64_t src_row = ooc::map_border(yy, s_.height, border_);
    if (src_row < 0) {
      std::fill(out, out + n_, cval_);
      if (mag != nullptr) std::fill(mag, mag + n_, std::abs(cval_));
      return;
    }
    const int C = s_.channels;
    thread_local std::vector<std::byte> raw;
    thread_local std::vector<double> x, pad;
    thread_local std::vector<const double*> src;
    raw.resize(s_.row_bytes());
    x.resize(static_cast<std::size_t>(n_));
    in_.read_rows(src_row, 1, raw.data());
    to_double(s_.type, raw.data(), n_, x.data());
    // Pixel q in [-rx, W + rx) at pad[(q + rx) * C]; outside the row, the border rule along x.
    pad.resize(static_cast<std::size_t>((s_.width + 2 * rx_) * C));
    for (std::int64_t q = -rx_; q < s_.width + rx_; ++q) {
      double* p = pad.data() + (q + rx_) * C;
      const std::int64_t m = ooc::map_border(q, s_.width, border_);
      for (int c = 0; c < C; ++c) p[c] = m < 0 ? cval_ : x[m * C + c];
    }
    // convolve1d: out(p) = sum_k tx[k] * in(p + rx - k), in(p') at pad[(p' + rx) * C].
    src.resize(tx_.size());
    for (std::size_t k = 0; k < tx_.size(); ++k)
      src[k] = pad.data() + (2 * rx_ - static_cast<std::int64_t>(k)) * C;
    weighted_sum(src, tx_, out, n_);
    if (mag != nullptr) {
      for (double& v : pad) v = std::abs(v);
      weighted_sum(src, ax_, mag, n_);
    }
  }

  ooc::Source& in_;
  ooc::ImageSpec s_;
  std::int64_t n_;
  std::vector<double> tx_, ty_;
  std::int64_t rx_, ry_;
  ooc::BorderMode border_;
  double cval_;
  bool magnitude_;
  std::vector<double> ax_, ay_;  // |taps|
  std::vector<double> rowpass_, rowpass_mag_;
};

bool has_negative(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return x < 0; });
}

// Opens OUT with the geometry of the input; raw OUT takes its type from out_type.
std::unique_ptr<ooc::Source> open_output(const std::string& path, const ooc::Source& in,
                                         const std::string& in_path,
                                         std::optional<SampleType> out_type) {
  const ooc::ImageSpec& is = in.spec();
  const std::string in_desc = "input '" + in_path + "' is " + is.describe();
  ooc::RawHints h;
  const bool raw = path.rfind("synth:", 0) != 0 && ooc::detect_format(path) == "raw";
  if (raw) {
    h.width = is.width;
    h.channels = is.channels;
  }
  h.type = out_type.value_or(is.type);
  h.type_given = out_type.has_value();
  std::unique_ptr<ooc::Source> out;
  try {
    out = ooc::open_source(path, h);
  } catch (const Error& e) {
    if (!raw) throw;
    throw Error(e.kind(), std::string(e.what()) + " (output '" + path + "' read as raw " +
                              std::string(ooc::name(h.type)) + " rows of the input's width; " +
                              in_desc + ")");
  }
  const ooc::ImageSpec& os = out->spec();
  if (os.width != is.width || os.height != is.height || os.channels != is.channels)
    throw Error(ErrorKind::input,
                "output '" + path + "' is " + os.describe() + " but " + in_desc +
                    ": oocconv keeps width, height and channels, so OUT cannot be the result of "
                    "IN; check the order (OUT first) and the input options" +
                    (raw ? std::string("; a raw OUT is read as --out-type (default: IN's type)")
                         : std::string()));
  return out;
}

int run_reference(const std::vector<std::string>& files, const ooc::RawHints& hints,
                  std::uint64_t seed, const ooc::cli::FilterCli& filter, double tolerance,
                  std::int64_t sample) {
  const std::string &out_path = files[0], &in_path = files[1];
  const ooc::SeparableParams params = ooc::cli::filter_params(filter);
  auto in = ooc::open_source(in_path, hints, seed);
  auto out = open_output(out_path, *in, in_path, params.out_type);
  const ooc::ImageSpec& is = in->spec();
  const SampleType out_type = out->spec().type;
  const bool acc_f64 = ooc::accumulates_in_f64(is.type, out_type, params.precision);
  // With taps of both signs f32 sums lose digits to cancellation: the default tolerance is then
  // relative to sum |tap| x |sample|, not to the (smaller) result.
  const bool magnitude = has_negative(params.filter.row) || has_negative(params.filter.col);

  Reference ref(*in, params, magnitude);
  const std::int64_t n = ref.row_samples();
  auto check = [&](std::int64_t y0, std::int64_t rows, double tol,
                   tbb::combinable<Tally>& tallies) {
    ref.compute_band(y0, rows);
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t y) {
      thread_local std::vector<double> expected, mag, got;
      thread_local std::vector<std::byte> raw;
      expected.resize(n);
      got.resize(n);
      mag.resize(magnitude ? n : 0);
      raw.resize(out->spec().row_bytes());
      ref.column_pass(y, expected.data(), magnitude ? mag.data() : nullptr);
      out->read_rows(y0 + y, 1, raw.data());
      to_double(out_type, raw.data(), n, got.data());
      Tally& t = tallies.local();
      const std::int64_t base = (y0 + y) * n;
      for (std::int64_t i = 0; i < n; ++i) {
        const double e = expected[i];
        const double m = magnitude ? mag[i] : std::abs(e);
        if (std::isfinite(m)) t.scale = std::max(t.scale, m);
        t.add(base + i, as_stored(e, out_type), got[i], tol);
      }
    });
  };
  // f32 output, or f32 sums, carry ~1e-7 relative error per operation; f64 all the way ~1e-16.
  const double rel = acc_f64 && out_type != SampleType::f32 ? 1e-10 : 1e-5;
  auto default_tolerance = [&](const Tally& t) {
    const double r = rel * t.scale;
    return ooc::is_integer(out_type) ? (acc_f64 ? 1.0 : std::max(1.0, r)) : r;
  };

  const auto bands = pick_bands(0, is.height, sample, seed);
  std::printf("reference: %s -> %s\n", in->describe().c_str(), out->describe().c_str());
  std::printf("filter: %s, border %s", params.filter.describe().c_str(),
              std::string(ooc::name(params.border)).c_str());
  if (params.border == ooc::BorderMode::constant) std::printf(" %.9g", params.border_value);
  std::printf(", output %s, oocconv accumulates in %s\n", std::string(ooc::name(out_type)).c_str(),
              acc_f64 ? "f64" : "f32");
  double used = 0;
  const Tally t = run_check(bands, is.height, tolerance, default_tolerance, check, used);
  const double range = ooc::is_integer(out_type)
                           ? ooc::highest_value(out_type) - ooc::lowest_value(out_type)
                           : t.peak;
  const std::string what = "checked " + std::to_string(t.count) + " samples in " +
                           band_summary(bands.size(), 0, is.height, sample, seed);
  return report(what, t, used, range, is, "expected", "OUT has");
}

int run_compare(const std::vector<std::string>& files, const ooc::RawHints& hints,
                std::uint64_t seed, double tolerance, std::int64_t margin, std::int64_t sample) {
  auto a = ooc::open_source(files[0], hints, seed);
  auto b = ooc::open_source(files[1], hints, seed);
  const ooc::ImageSpec s = a->spec();
  const ooc::ImageSpec& sb = b->spec();
  // Types may differ (a peer's f64 against our f32): each is read as its own.
  if (sb.width != s.width || sb.height != s.height || sb.channels != s.channels)
    throw Error(ErrorKind::input, "'" + files[0] + "' is " + s.describe() + ", '" + files[1] +
                                      "' is " + sb.describe() +
                                      ": only images of one geometry can be compared");
  if (margin < 0 || 2 * margin >= std::min(s.width, s.height))
    throw Error(ErrorKind::usage, "--margin must leave part of the image");

  const std::int64_t n = s.row_samples();
  std::vector<std::byte> ba, bb;
  auto check = [&](std::int64_t y0, std::int64_t rows, double tol,
                   tbb::combinable<Tally>& tallies) {
    ba.resize(rows * s.row_bytes());
    bb.resize(rows * sb.row_bytes());
    a->read_rows(y0, rows, ba.data());
    b->read_rows(y0, rows, bb.data());
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t r) {
      thread_local std::vector<double> da, db;
      da.resize(n);
      db.resize(n);
      to_double(s.type, ba.data() + r * s.row_bytes(), n, da.data());
      to_double(sb.type, bb.data() + r * sb.row_bytes(), n, db.data());
      Tally& t = tallies.local();
      for (std::int64_t i = margin * s.channels; i < n - margin * s.channels; ++i)
        t.add((y0 + r) * n + i, da[i], db[i], tol);
    });
  };
  auto default_tolerance = [&](const Tally& t) {
    return ooc::is_integer(s.type) ? 1.0 : 1e-5 * t.peak;
  };
  const std::int64_t end = s.height - margin;
  const auto bands = pick_bands(margin, end, sample, seed);
  double used = 0;
  const Tally t = run_check(bands, end, tolerance, default_tolerance, check, used);
  const double range =
      ooc::is_integer(s.type) ? ooc::highest_value(s.type) - ooc::lowest_value(s.type) : t.peak;
  std::string what =
      "compared " + std::to_string(t.count) + " samples (margin " + std::to_string(margin) + ")";
  if (sample > 0) what += " in " + band_summary(bands.size(), margin, end, sample, seed);
  return report(what, t, used, range, s, "A", "B");
}

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("ooccheck", [&]() -> int {
    CLI::App app{
        "ooccheck: check oocconv's output against a float64 reference computed out of core\n"
        "(ooccheck OUT IN [input and filter options of oocconv]), or compare two images\n"
        "(ooccheck --compare A B)."};
    app.footer(kFooter);
    app.get_formatter()->column_width(34);

    std::vector<std::string> files;
    bool compare = false;
    app.add_option("FILES", files, "OUT IN (OUT written by oocconv from IN), or A B with --compare")
        ->expected(2)
        ->required();
    app.add_flag("--compare", compare, "compare two images A B instead");

    ooc::RawHints hints;
    std::string type = "f32";
    std::uint64_t seed = 1;
    auto* g_in = app.add_option_group("Input");
    g_in->add_option("--width", hints.width, "samples per row (raw files; .npy headers say it)");
    g_in->add_option("--height", hints.height, "rows (checked against the file size)");
    auto* type_opt = g_in->add_option("--type", type,
                                      "sample type of IN (of A and B): u8 u16 i16 u32 i32 f32 f64")
                         ->default_str("f32");
    auto* channels_opt =
        g_in->add_option("--channels", hints.channels, "interleaved channels, 1 to 4")
            ->default_str("1");
    g_in->add_option("--in-format", hints.format, "auto (magic bytes), raw, npy or tiff")
        ->default_str("auto");
    g_in->add_option("--page", hints.page, "TIFF: the page of IN (of A and B with --compare)")
        ->default_str("0");
    g_in->add_option("--seed", seed, "seed of a synth: input and of --sample")->default_str("1");

    ooc::cli::FilterCli filter;
    ooc::cli::add_filter_options(app, filter);

    double tolerance = -1;
    std::int64_t margin = 0, sample = 0;
    auto* g_c = app.add_option_group("Check");
    auto* tolerance_opt =
        g_c->add_option("--tolerance", tolerance, "largest allowed |error| (default: see below)");
    g_c->add_option("--sample", sample,
                    "check N random bands of 64 rows, picked by --seed (default: all)");
    auto* margin_opt =
        g_c->add_option("--margin", margin,
                        "--compare: ignore this many pixels at every edge (other border rules)");

    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "ooccheck")) return *code;
    hints.type = ooc::parse_sample_type(type);
    hints.type_given = type_opt->count() > 0;
    hints.channels_given = channels_opt->count() > 0;
    if (sample < 0) throw Error(ErrorKind::usage, "--sample must be >= 0 (0: every band)");
    if (tolerance_opt->count() > 0 && !(tolerance >= 0))
      throw Error(ErrorKind::usage, "--tolerance must be >= 0, got " + std::to_string(tolerance));
    if (compare) {
      for (const char* opt :
           {"--radius", "--sigma", "--filter", "--taps", "--row-taps", "--col-taps", "--taps-file",
            "--border", "--border-value", "--out-type", "--precision"}) {
        if (app.get_option(opt)->count() > 0)
          throw Error(ErrorKind::usage, std::string(opt) +
                                            " belongs to the reference mode (ooccheck OUT IN), "
                                            "not to --compare");
      }
      return run_compare(files, hints, seed, tolerance, margin, sample);
    }
    if (margin_opt->count() > 0)
      throw Error(ErrorKind::usage,
                  "--margin belongs to --compare: the reference computes the borders exactly");
    return run_reference(files, hints, seed, filter, tolerance, sample);
  });
}
