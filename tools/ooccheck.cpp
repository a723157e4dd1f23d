// ooccheck: judges images out of core, band by band, in bounded memory.
//   ooccheck OUT IN [filter options of oocconv]: recomputes in float64 what `oocconv IN OUT
//     <filter options>` must write, and compares OUT with it, sample by sample, against the
//     rounding bound of oocconv's arithmetic for that sample.
//   ooccheck OUT IN --kernel K [options of oocconv]: the same for the 2-D convolution
//     (scipy.ndimage.convolve), the full K x L sum per sample whatever path oocconv took.
//   ooccheck --equalize OUT IN: rebuilds ooceq's table (cv2.equalizeHist's) from its own
//     histogram of all of IN, and requires OUT = table[IN] exactly.
//   ooccheck --compare A B: compares two images of the same geometry.
//   ooccheck --atax Y A --x X: recomputes oocatax's y = A^T (A X) (--op ax: A X, atx: A^T X) in
//     float64 in one pass over the matrix A, and compares Y with it (ooccheck_atax.cpp).
// All report the max abs error and where it is, RMS error, PSNR, the worst error relative to its
// own tolerance and the samples over their tolerance, and exit 0 only when none is. --sample N
// checks N random bands, for files too large to read whole (--equalize still reads all of IN
// for the histogram).
//
// The reference is written apart from the library's code on purpose: a bug shared by the
// reference and the thing it checks would go unseen. It uses only ooc::open_source to read rows
// (also of a .npy kernel), ooc::map_border for coordinates outside the image, and the shared
// option parsing for the options themselves (so that they stay oocconv's) and for the border,
// output type and precision. The taps (Gaussian, box, explicit lists and taps files), the 2-D
// kernels (files and built-ins), the row, column and 2-D sums, the border padding along x, the
// conversion to the output type, the histogram and the equalization table are its own.
#include <sys/resource.h>
#include <sys/stat.h>
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/common.hpp"
#include "cli/filter_options.hpp"
#include "ooc/border.hpp"
#include "ooc/detail/hash.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/pipeline.hpp"
#include "ooccheck_atax.hpp"

namespace ooc::check {

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

std::vector<std::string> line_tokens(std::string line) {
  line.erase(std::min(line.find('#'), line.size()));
  return split_tokens(
      line, [](char c) { return c == ',' || std::isspace(static_cast<unsigned char>(c)); });
}

// Floyd's algorithm on splitmix64, so that a seed picks the same indices in every build.
std::vector<std::int64_t> pick_sample(std::int64_t n, std::int64_t sample, std::uint64_t seed) {
  std::vector<std::int64_t> picked;
  if (sample <= 0 || sample >= n) {
    for (std::int64_t i = 0; i < n; ++i) picked.push_back(i);
    return picked;
  }
  std::uint64_t state = seed;
  auto next = [&state] { return ooc::mix(state += 0x9e3779b97f4a7c15ULL); };
  std::set<std::int64_t> chosen;
  for (std::int64_t j = n - sample; j < n; ++j) {
    const auto t = static_cast<std::int64_t>(
        (static_cast<unsigned __int128>(next()) * static_cast<std::uint64_t>(j + 1)) >> 64);
    chosen.insert(chosen.count(t) ? j : t);
  }
  picked.assign(chosen.begin(), chosen.end());
  return picked;
}

}  // namespace ooc::check

namespace {

using ooc::Error;
using ooc::ErrorKind;
using ooc::SampleType;

// Rows per band, the unit of reading and of --sample.
constexpr std::int64_t kBandRows = 64;
// --compare: a float sample may differ by kCompareRelative x the largest |A| within
// kCompareWindow pixels of it along its row.
constexpr double kCompareRelative = 1e-5;
constexpr std::int64_t kCompareWindow = 16;
// The largest radius the reference takes at all (then memory decides): 2R+1 and the byte counts
// stay far from overflow.
constexpr std::int64_t kMaxRadius = std::int64_t{1} << 31;

constexpr const char* kFooter = R"(
The reference: oocconv convolves along x, then along y (scipy.ndimage.convolve1d semantics), with
the border rule along both axes. ooccheck recomputes that in float64 from taps it builds itself
(Gaussian sigma = R/3, or R = ceil(3 sigma); box 1/(2R+1); explicit lists parsed on their own),
64 output rows at a time, and converts each value to OUT's type as oocconv stores it (integers
rounded to nearest, ties to even, and saturated; NaN to 0). OUT's type comes from its header
(.npy, TIFF), or for a raw OUT from --out-type (default: the input's type). Pass the input and
filter options that made OUT.

Tolerance, per sample (--tolerance T: T for every sample instead):
  reference: the rounding bound of oocconv's arithmetic for that sample. With n = row taps +
    column taps, u = 2^-24 when oocconv accumulates in f32 (2^-53 in f64), and M = the sum over
    the sample's support of |column tap| x |row tap| x |input|:
      b = (n + 4) u M + (2n + 4) 2^-53 M + (n + 4) m max(1, sum |column tap|)
    (second term: the float64 reference's own rounding; third: underflow, m = the accumulator's
    smallest normal number, also the least a non-zero tap counts for in M). |OUT - expected| may
    be b + 1 for integer outputs, b (1 + 2^-24) + 2^-23 |expected| + 2^-149 for f32, and
    b + 2^-52 |expected| for f64. NaN and infinities must match exactly; where M overflows, only
    they are checked.
  --compare: 1 for integers; for floats 1e-5 x the largest finite |A| within 16 pixels of the
    sample along its row (same channel).

--kernel K (2-D): scipy.ndimage.convolve (K flipped), the border rule along both axes, every tap
of the K x L window summed in float64 whether or not oocconv runs K as rank-1 factors. K is read
or built here (text or .npy file; box:N taps 1/N^2; gaussian2d:S the outer product of the
normalized Gaussian of radius ceil(3 S); laplace; sobel-x; sobel-y). Tolerance as above with
n = K x L taps, M = sum |tap| x |input| over the window (sum |tap| in the underflow term), plus
2^-48 max|tap| x S, S = sum |input| over it (rank-1 factors are good to 2^-49 max|tap| only).

--equalize OUT IN: ooccheck counts every sample of IN itself (all bands, also with --sample), builds
cv2.equalizeHist's table per channel (65536 bins for u16; the formula of ooceq --help, float32
rounding emulated exactly) and requires OUT = table[IN] exactly. u8 and u16 only.

--atax Y A --x X: oocatax's y = A^T (A X) (--op ax: A X; --op atx: A^T X) for the matrix A (M
rows x N columns: raw with --width/--cols N and --height/--rows M, .npy (M, N), a one-channel
TIFF, or synth:low-rank), recomputed in float64 by ooccheck's own loops in one pass over A's rows
(memory: X, Y and the reference, never A whole). X and Y: .npy (n,) or (n, k) (Y f4 or f8), or
text (one row per line, k numbers between spaces or commas); --x ones or random regenerates
oocatax's X (n x --k; random: X[i, j] = 2 unit(mix(seed x 0x9E3779B97F4A7C15 + i k + j + 1)) - 1
with splitmix64's finalizer mix, unit = the top 53 bits / 2^53, seed = --seed). Tolerance per
element: gamma x bound + 4 (N + M + 64) x the smallest normal number, gamma = 4 (N + M + 64) x 2^-53
(--precision f64, the default) or 2^-24 (--precision f32: what oocatax accumulated in), bound = the
same product on |A| and |X|, plus the rounding of Y's stored values (f4: 2^-24 |y|; text: half a
unit of the most significant digits any number of the file shows). NaN and infinities must match
exactly. --sample S checks S random rows of y; for atax and atx all of A is still read (every
element of y depends on every row), for ax only those rows of A. A Y or X of the wrong shape is
an input error (exit 3) naming both shapes.

Examples:
  ooccheck out.raw in.raw --width 16384 --type u16 --radius 16
      Recompute `oocconv in.raw out.raw --width 16384 --type u16 --radius 16` and compare.
  ooccheck out.npy in.npy --taps 1,4,6,4,1 --border constant --border-value 10
  ooccheck out.raw synth:noise --width 65536 --height 200000 --seed 3 --sigma 2 --sample 20
      20 random bands of 64 rows of a huge image; --seed makes the synth: image, as it did for
      oocconv, and picks the bands.
  ooccheck out.tif in.tif --kernel laplace --border nearest --sample 10
  ooccheck --equalize eq.raw in.raw --width 65536 --type u16 --sample 20
  ooccheck --compare a.raw b.raw --width 16384 --type f32
  ooccheck --compare ours.raw peer.raw --width 16384 --type u8 --tolerance 1 --margin 16
  ooccheck --atax y.npy A.raw --cols 16384 --rows 65536 --type f32 --x random --k 8 --seed 3
  ooccheck --atax y.npy A.npy --x x.npy --op ax --sample 1000 --precision f32

Exit codes: 0 within tolerance, 1 over it, 2 usage, 3 bad input (geometry mismatch included).
)";

// ---------------------------------------------------------------------------------------------
// The filter, built here from the options' definitions (not through ooc::gaussian_taps & co.).

// Taps in convolution order (scipy.ndimage.convolve1d's weights), along x and along y.
struct OwnFilter {
  std::vector<double> row{1.0}, col{1.0};
  std::string what;    // "--radius 16": the options that made it, for messages
  std::string recipe;  // "gaussian radius 16, sigma 5.33333"

  std::int64_t rx() const { return static_cast<std::int64_t>(row.size() / 2); }
  std::int64_t ry() const { return static_cast<std::int64_t>(col.size() / 2); }
};

// exp(-0.5 (i / sigma)^2) for i in [-r, r], divided by their sum (summed with Neumaier's
// compensation, so that the normalization is good to an ulp or two whatever the count).
std::vector<double> own_gaussian(std::int64_t r, double sigma) {
  if (r == 0) return {1.0};
  std::vector<double> t(static_cast<std::size_t>(2 * r + 1));
  double sum = 0, carry = 0;
  auto add = [&](double v) {
    const double s = sum + v;
    carry += std::abs(sum) >= std::abs(v) ? (sum - s) + v : (v - s) + sum;
    sum = s;
  };
  for (std::int64_t i = 0; i <= r; ++i) {
    const double z = static_cast<double>(i) / sigma;
    const double v = std::exp(-0.5 * z * z);
    t[static_cast<std::size_t>(r + i)] = t[static_cast<std::size_t>(r - i)] = v;
    add(v);
    if (i > 0) add(v);
  }
  const double total = sum + carry;  // >= 1: the centre is exp(0)
  for (double& v : t) v /= total;
  return t;
}

std::vector<double> own_box(std::int64_t r) {
  return std::vector<double>(static_cast<std::size_t>(2 * r + 1),
                             1.0 / static_cast<double>(2 * r + 1));
}

// "a,b c": numbers between commas and white space; an odd count of finite numbers.
std::vector<double> own_parse_taps(const std::string& text, const std::string& origin) {
  auto separator = [](char c) {
    return c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
  };
  std::vector<double> taps;
  for (const std::string& token : ooc::check::split_tokens(text, separator)) {
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size() || !std::isfinite(v))
      throw Error(ErrorKind::usage, origin + ": '" + token + "' is not a finite number");
    taps.push_back(v);
  }
  if (taps.empty()) throw Error(ErrorKind::usage, origin + ": no taps given");
  if (taps.size() % 2 == 0)
    throw Error(ErrorKind::usage, origin + ": " + std::to_string(taps.size()) +
                                      " taps; the count must be odd (2 x radius + 1)");
  return taps;
}

// The lines of a taps file that hold taps: '#' starts a comment, blank lines are skipped.
std::vector<std::string> own_taps_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::input, "cannot read taps file '" + path + "'");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    line.erase(std::min(line.find('#'), line.size()));
    if (line.find_first_not_of(" \t\r,") != std::string::npos) lines.push_back(line);
  }
  if (lines.empty() || lines.size() > 2)
    throw Error(ErrorKind::usage, "taps file '" + path +
                                      "' must hold one line of taps (both directions) or two "
                                      "(x, then y)");
  return lines;
}

// "1.5 GiB", or "6.6e+20 bytes" beyond what format_bytes scales.
std::string bytes_text(double bytes) {
  if (bytes < 0x1p50) return ooc::format_bytes(bytes);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2g bytes", bytes);
  return buf;
}

// The memory this process may use: physical memory, or less under ulimit -v.
std::size_t usable_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  std::size_t bytes = pages > 0 && page > 0
                          ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                          : std::size_t{16} << 30;
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    bytes = std::min(bytes, static_cast<std::size_t>(limit.rlim_cur));
  return bytes;
}

// Bytes the reference holds for radii rx, ry over an image of width x height x channels (with 1
// x 1 x 1: what the taps alone take): the taps and their magnitudes, per thread a padded row and
// the source pointers, per band a slot per row coordinate, and the distinct row-pass rows.
double reference_bytes(double rx, double ry, std::int64_t width, int channels,
                       std::int64_t height) {
  const double threads = tbb::this_task_arena::max_concurrency();
  const double nx = 2 * rx + 1, ny = 2 * ry + 1;
  const double coords = double(kBandRows) + 2 * ry;
  const double slots = std::min(double(height) + 1, coords);
  const double n = double(width) * channels;
  return 16 * (nx + ny) + threads * (8 * (double(width) + 2 * rx) * channels + 8 * nx) +
         8 * coords + threads * (8 * slots + 32 * std::min(ny, slots)) + 16 * slots * n;
}

// Refuses a filter whose reference would not fit in half the machine's memory (or whose radius
// exceeds kMaxRadius), naming the option, before anything is allocated.
void check_fits(const std::string& what, double rx, double ry, std::int64_t width = 1,
                int channels = 1, std::int64_t height = 1) {
  const double have = double(usable_memory_bytes()) / 2;
  auto fits = [&](double x, double y) {
    return x <= double(kMaxRadius) && y <= double(kMaxRadius) &&
           reference_bytes(x, y, width, channels, height) <= have;
  };
  if (fits(rx, ry)) return;
  std::int64_t lo = 0, hi = kMaxRadius;  // the largest radius that fits, for the message
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(double(mid), double(mid))) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  throw Error(ErrorKind::usage,
              what + " is too large for ooccheck's float64 reference: its taps, padded rows and " +
                  "row-pass rows would need about " +
                  bytes_text(reference_bytes(rx, ry, width, channels, height)) +
                  ", more than half of the " + ooc::format_bytes(double(usable_memory_bytes())) +
                  " this process may use (memory, ulimit -v); at most radius " +
                  std::to_string(lo) + " fits");
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Builds the filter from the options, after they passed the shared validation.
OwnFilter own_filter(const ooc::cli::FilterCli& f) {
  OwnFilter out;
  if (!f.taps.empty()) {
    out.row = out.col = own_parse_taps(f.taps, "--taps");
    out.what = "--taps";
  } else if (!f.taps_file.empty()) {
    const auto lines = own_taps_lines(f.taps_file);
    out.row = own_parse_taps(lines.front(), f.taps_file);
    out.col = own_parse_taps(lines.back(), f.taps_file);
    out.what = "--taps-file " + f.taps_file;
  } else if (!f.row_taps.empty() || !f.col_taps.empty()) {
    // A direction without taps is left alone: one tap of 1.
    if (!f.row_taps.empty()) out.row = own_parse_taps(f.row_taps, "--row-taps");
    if (!f.col_taps.empty()) out.col = own_parse_taps(f.col_taps, "--col-taps");
    out.what = !f.row_taps.empty() ? "--row-taps" : "--col-taps";
  }
  if (!out.what.empty()) {
    out.recipe = "explicit taps";
    check_fits(out.what, double(out.rx()), double(out.ry()));
    return out;
  }
  // --radius R, --sigma S, or both; validated (R >= 0, S finite and > 0) before this.
  std::int64_t r = 0;
  if (f.radius) {
    r = *f.radius;
    out.what = "--radius " + std::to_string(r);
  } else {
    // 1e-9: a sigma of k/3 typed in decimal (3 x 0.3333333333333334 is just over 1) is radius k.
    const double rd = std::ceil(3.0 * *f.sigma - 1e-9);
    out.what = "--sigma " + number(*f.sigma) + " (radius ceil(3 sigma) = " + number(rd) + ")";
    check_fits(out.what, rd, rd);
    r = static_cast<std::int64_t>(rd);
  }
  check_fits(out.what, double(r), double(r));
  if (f.filter_kind == "box") {
    out.row = out.col = own_box(r);
    out.recipe = "box radius " + std::to_string(r);
  } else {
    const double sigma = f.sigma.value_or(static_cast<double>(r) / 3.0);
    out.row = out.col = own_gaussian(r, sigma);
    out.recipe = "gaussian radius " + std::to_string(r) + ", sigma " + number(sigma);
  }
  return out;
}

// Checks what the shared parser cannot be trusted with (values that would make it allocate or
// overflow), then runs its validation on a copy with harmless sizes: contradictions, --filter,
// --border, --out-type, --precision and taps syntax are judged exactly as oocconv judges them.
// Its taps are thrown away.
ooc::SeparableParams validated_params(const ooc::cli::FilterCli& f) {
  const bool explicit_taps =
      !f.taps.empty() || !f.row_taps.empty() || !f.col_taps.empty() || !f.taps_file.empty();
  if (!explicit_taps) {
    if (f.radius && *f.radius < 0)
      throw Error(ErrorKind::usage, "--radius must be >= 0, got " + std::to_string(*f.radius));
    if (f.sigma && !(std::isfinite(*f.sigma) && *f.sigma > 0))
      throw Error(ErrorKind::usage, "--sigma must be a finite number > 0, got " + number(*f.sigma));
  }
  ooc::cli::FilterCli probe = f;
  if (probe.radius && *probe.radius > 0) probe.radius = 0;
  if (probe.sigma && std::isfinite(*probe.sigma) && *probe.sigma > 0) probe.sigma = 1.0;
  return ooc::cli::filter_params(probe);
}

// ---------------------------------------------------------------------------------------------
// Reading, storing and tallying.

// Row of samples of type t as doubles.
void to_double(SampleType t, const std::byte* p, std::int64_t n, double* out) {
  auto conv = [&]<class T>(T) {
    for (std::int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * sizeof(T), sizeof(T));
      out[i] = static_cast<double>(v);
    }
  };
  ooc::dispatch_type(t, conv);
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
                                     std::uint64_t seed) {
  const std::int64_t bands = (end - first + kBandRows - 1) / kBandRows;
  std::vector<std::int64_t> picked = ooc::check::pick_sample(bands, sample, seed);
  for (std::int64_t& b : picked) b = first + b * kBandRows;
  return picked;
}

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
std::string where(std::int64_t index, const ooc::ImageSpec& s) {
  const std::int64_t n = s.row_samples();
  std::string w = " at row " + std::to_string(index / n) + " sample " + std::to_string(index % n);
  if (s.channels > 1)
    w += " (x " + std::to_string(index % n / s.channels) + ", channel " +
         std::to_string(index % s.channels) + ")";
  return w;
}

// Prints the summary lines and returns the exit code. `what` says what was checked, `rule` how
// the tolerance was set; PSNR is relative to `range`.
int report(const std::string& what, const std::string& rule, const Tally& t, double range,
           const ooc::ImageSpec& s, const char* name_a, const char* name_b) {
  const double rms = t.count ? std::sqrt(t.sum_sq / double(t.count)) : 0.0;
  const double psnr =
      rms > 0 ? 20 * std::log10(range / rms) : std::numeric_limits<double>::infinity();
  std::printf("%s: max abs error %.6g", what.c_str(), t.max_abs);
  if (t.worst.index >= 0)
    std::printf("%s (%s %.9g, %s %.9g, tolerance %.6g)", where(t.worst.index, s).c_str(), name_a,
                t.worst.a, name_b, t.worst.b, t.worst.tolerance);
  std::printf(", RMS %.6g, PSNR %.2f dB, %lld over tolerance, %lld NaN mismatches\n", rms, psnr,
              (long long)t.over, (long long)t.nan_mismatch);
  std::printf("worst error / its tolerance: %.6g", t.max_ratio);
  if (t.worst_ratio.index >= 0)
    std::printf("%s (%s %.9g, %s %.9g, |error| %.6g, tolerance %.6g)",
                where(t.worst_ratio.index, s).c_str(), name_a, t.worst_ratio.a, name_b,
                t.worst_ratio.b, std::abs(t.worst_ratio.a - t.worst_ratio.b),
                t.worst_ratio.tolerance);
  std::printf("\ntolerance: %s\n", rule.c_str());
  const bool ok = t.over == 0 && t.nan_mismatch == 0;
  if (ok) {
    std::printf("OK: within tolerance\n");
  } else {
    std::printf("FAIL: %lld samples over their tolerance, %lld NaN mismatches\n", (long long)t.over,
                (long long)t.nan_mismatch);
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

// ---------------------------------------------------------------------------------------------
// The reference.

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

// |tap|, at least `floor` for a non-zero tap: the accumulator holds a tap below its smallest
// normal number only to within floor x its epsilon, so the bound counts such a tap as `floor`.
std::vector<double> magnitudes(std::vector<double> v, double floor) {
  for (double& x : v) x = x == 0 ? 0.0 : std::max(std::abs(x), floor);
  return v;
}

// The rows a band reads: coordinate first + j (j < coords) of the band reads slot slot_of[j],
// and slot s holds source row src_rows[s] through the border rule (-1: the constant). Coordinates
// that name one row share its slot: a radius beyond the height folds many onto each, and each
// distinct row is then read (and filtered along x) once.
void band_slots(std::int64_t first, std::int64_t coords, std::int64_t h, ooc::BorderMode border,
                std::vector<std::int64_t>& slot_of, std::vector<std::int64_t>& src_rows) {
  slot_of.resize(static_cast<std::size_t>(coords));
  src_rows.clear();
  // slot_ref(src) names the slot of source row src (-1: the constant), -1 while it has none.
  auto fill_slots = [&](auto&& slot_ref) {
    for (std::int64_t j = 0; j < coords; ++j) {
      const std::int64_t src = ooc::map_border(first + j, h, border);
      std::int64_t& slot = slot_ref(src);
      if (slot < 0) {
        slot = static_cast<std::int64_t>(src_rows.size());
        src_rows.push_back(src);
      }
      slot_of[static_cast<std::size_t>(j)] = slot;
    }
  };
  if (h + 1 <= coords) {  // a radius beyond the height: a table of every row is the smaller
    std::vector<std::int64_t> table(static_cast<std::size_t>(h + 1), -1);
    fill_slots([&](std::int64_t src) -> std::int64_t& {
      return table[static_cast<std::size_t>(src + 1)];
    });
  } else {
    std::unordered_map<std::int64_t, std::int64_t> table;
    table.reserve(static_cast<std::size_t>(coords));
    fill_slots([&](std::int64_t src) -> std::int64_t& {
      return table.try_emplace(src, -1).first->second;
    });
  }
}

// The float64 reference of oocconv's separable convolution, one band of output rows at a time,
// with M = sum |column tap| x |row tap| x |input| over each output sample's support (the scale
// of the rounding errors of any order of summing those products).
class Reference {
 public:
  Reference(ooc::Source& in, const OwnFilter& f, ooc::BorderMode border, double cval,
            double tap_floor)
      : in_(in),
        s_(in.spec()),
        n_(s_.row_samples()),
        tx_(f.row),
        ty_(f.col),
        rx_(f.rx()),
        ry_(f.ry()),
        border_(border),
        cval_(cval),
        ax_(magnitudes(tx_, tap_floor)),
        ay_(magnitudes(ty_, tap_floor)) {}

  std::int64_t row_samples() const { return n_; }

  // Rows [y0, y0 + rows) of the exact result and of M; valid until the next call. Each distinct
  // source row of the band (through the border rule, rows + 2 ry coordinates may name the same
  // row many times over when the radius exceeds the height) is filtered along x once.
  void compute_band(std::int64_t y0, std::int64_t rows) {
    band_slots(y0 - ry_, rows + 2 * ry_, s_.height, border_, slot_of_, src_rows_);
    const auto slots = static_cast<std::int64_t>(src_rows_.size());
    rowpass_.resize(static_cast<std::size_t>(slots * n_));
    rowpass_mag_.resize(rowpass_.size());
    tbb::parallel_for(std::int64_t{0}, slots, [&](std::int64_t s) {
      row_pass(src_rows_[static_cast<std::size_t>(s)], rowpass_.data() + s * n_,
               rowpass_mag_.data() + s * n_);
    });
  }

  // Output row y0 + y of the band (after compute_band) into out, and its M into mag.
  void column_pass(std::int64_t y, double* out, double* mag) const {
    // out(Y) = sum_k ty[k] * rowpass(Y + ry - k), rowpass(Y') at coordinate j = Y' - y0 + ry of
    // the band. Taps that land on one source row are summed first (w), and so are their
    // magnitudes (a): the row is then read once.
    thread_local std::vector<std::int64_t> pos;  // slot -> its entry in w and a, or -1
    thread_local std::vector<std::int64_t> used;
    thread_local std::vector<double> w, a;
    thread_local std::vector<const double*> src;
    if (pos.size() < src_rows_.size()) pos.resize(src_rows_.size(), -1);
    used.clear();
    w.clear();
    a.clear();
    for (std::size_t k = 0; k < ty_.size(); ++k) {
      const std::int64_t slot =
          slot_of_[static_cast<std::size_t>(y + 2 * ry_ - static_cast<std::int64_t>(k))];
      std::int64_t& p = pos[static_cast<std::size_t>(slot)];
      if (p < 0) {
        p = static_cast<std::int64_t>(used.size());
        used.push_back(slot);
        w.push_back(0.0);
        a.push_back(0.0);
      }
      w[static_cast<std::size_t>(p)] += ty_[k];
      a[static_cast<std::size_t>(p)] += ay_[k];
    }
    src.resize(used.size());
    for (std::size_t e = 0; e < used.size(); ++e) src[e] = rowpass_.data() + used[e] * n_;
    weighted_sum(src, w, out, n_);
    for (std::size_t e = 0; e < used.size(); ++e) src[e] = rowpass_mag_.data() + used[e] * n_;
    weighted_sum(src, a, mag, n_);
    for (const std::int64_t slot : used) pos[static_cast<std::size_t>(slot)] = -1;
  }

 private:
  // Source row src_row filtered along x, and its magnitude. A row outside the image under the
  // constant rule (src_row -1) is the constant itself: scipy pads the x-filtered image, not the
  // input, along y.
  void row_pass(std::int64_t src_row, double* out, double* mag) const {
    if (src_row < 0) {
      std::fill(out, out + n_, cval_);
      std::fill(mag, mag + n_, std::abs(cval_));
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
    for (double& v : pad) v = std::abs(v);
    weighted_sum(src, ax_, mag, n_);
  }

  ooc::Source& in_;
  ooc::ImageSpec s_;
  std::int64_t n_;
  std::vector<double> tx_, ty_;
  std::int64_t rx_, ry_;
  ooc::BorderMode border_;
  double cval_;
  std::vector<double> ax_, ay_;                // |taps| (see magnitudes)
  std::vector<std::int64_t> slot_of_;          // band coordinate j (row y0 - ry + j) -> its slot
  std::vector<std::int64_t> src_rows_;         // slot -> source row (-1: the constant border)
  std::vector<double> rowpass_, rowpass_mag_;  // slot s at s * n_
};

// Opens OUT with the geometry of the input; raw OUT takes its type from out_type. `tool` made OUT
// (for the message when the geometry says it cannot have).
std::unique_ptr<ooc::Source> open_output(const std::string& path, const ooc::Source& in,
                                         const std::string& in_path,
                                         std::optional<SampleType> out_type,
                                         const char* tool = "oocconv") {
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
                "output '" + path + "' is " + os.describe() + " but " + in_desc + ": " + tool +
                    " keeps width, height and channels, so OUT cannot be the result of IN; check "
                    "the order (OUT first) and the input options" +
                    (raw ? std::string("; a raw OUT is read as --out-type (default: IN's type)")
                         : std::string()));
  return out;
}

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
    const double b = relative_ * m + s_coefficient_ * s + absolute_;
    switch (out_type_) {
      case SampleType::f32:
        return b * (1 + 0x1p-24) + 0x1p-23 * std::abs(e) + 0x1p-149;
      case SampleType::f64:
        return b + 0x1p-52 * std::abs(e);
      default:
        return b + 1;  // each side rounded to an integer
    }
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

int run_reference(const std::vector<std::string>& files, const ooc::RawHints& hints,
                  std::uint64_t seed, const ooc::cli::FilterCli& filter, double tolerance,
                  std::int64_t sample) {
  const std::string &out_path = files[0], &in_path = files[1];
  // Options checked as oocconv checks them; the taps are ooccheck's own.
  const ooc::SeparableParams params = validated_params(filter);
  const OwnFilter own = own_filter(filter);
  auto in = ooc::open_source(in_path, hints, seed);
  auto out = open_output(out_path, *in, in_path, params.out_type);
  const ooc::ImageSpec& is = in->spec();
  check_fits(own.what, double(own.rx()), double(own.ry()), is.width, is.channels, is.height);
  const SampleType out_type = out->spec().type;
  const bool acc_f64 = ooc::accumulates_in_f64(is.type, out_type, params.precision);
  double col_abs = 0;
  for (const double t : own.col) col_abs += std::abs(t);
  const ReferenceTolerance tolerance_of(
      double(own.row.size() + own.col.size()), acc_f64, out_type, tolerance, col_abs, 0,
      "M = sum of |column tap| x |row tap| x |input| over the sample's support");

  Reference ref(*in, own, params.border, params.border_value, acc_f64 ? DBL_MIN : FLT_MIN);
  const std::int64_t n = ref.row_samples();
  tbb::combinable<double> largest_m([] { return 0.0; });
  auto check = [&](std::int64_t y0, std::int64_t rows, tbb::combinable<Tally>& tallies) {
    ref.compute_band(y0, rows);
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t y) {
      thread_local std::vector<double> expected, mag, got;
      thread_local std::vector<std::byte> raw;
      expected.resize(n);
      got.resize(n);
      mag.resize(n);
      raw.resize(out->spec().row_bytes());
      ref.column_pass(y, expected.data(), mag.data());
      out->read_rows(y0 + y, 1, raw.data());
      to_double(out_type, raw.data(), n, got.data());
      Tally& t = tallies.local();
      double& lm = largest_m.local();
      const std::int64_t base = (y0 + y) * n;
      for (std::int64_t i = 0; i < n; ++i) {
        const double e = expected[i], m = mag[i];
        if (std::isfinite(m)) lm = std::max(lm, m);
        t.add(base + i, as_stored(e, out_type), got[i], tolerance_of(e, m));
      }
    });
  };

  char filter_line[1024];
  std::snprintf(filter_line, sizeof filter_line, "filter (ooccheck's own taps): %s, %zu x %zu taps",
                own.recipe.c_str(), own.row.size(), own.col.size());
  return check_reference(*in, *out, filter_line, params.border, params.border_value, acc_f64,
                         tolerance_of, largest_m, sample, seed, check);
}

// ---------------------------------------------------------------------------------------------
// The 2-D convolution (--kernel): the kernel read or built here from oocconv's documented
// definitions (not through ooc::parse_kernel), and a reference that sums every tap of the window
// in float64, whether or not oocconv runs the kernel as separable factors.

// oocconv refuses longer sides, so no OUT comes from them; the reference would take them.
constexpr std::int64_t kMaxKernelSide = 4097;

// Taps in convolution order (scipy.ndimage.convolve's weights), row major.
struct OwnKernel {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> taps;
  std::string recipe;  // "gaussian2d sigma 1.5 (radius 5)", "text file k.txt", ...

  std::int64_t rx() const { return cols / 2; }
  std::int64_t ry() const { return rows / 2; }
};

OwnKernel outer_kernel(const std::vector<double>& col, const std::vector<double>& row,
                       std::string recipe) {
  OwnKernel k;
  k.rows = static_cast<std::int64_t>(col.size());
  k.cols = static_cast<std::int64_t>(row.size());
  for (const double c : col)
    for (const double r : row) k.taps.push_back(c * r);
  k.recipe = std::move(recipe);
  return k;
}

double kernel_argument(const std::string& spec, const std::string& arg) {
  char* end = nullptr;
  const double v = std::strtod(arg.c_str(), &end);
  if (arg.empty() || end != arg.c_str() + arg.size() || !std::isfinite(v))
    throw Error(ErrorKind::usage, "--kernel " + spec + ": '" + arg + "' is not a finite number");
  return v;
}

OwnKernel own_builtin_kernel(const std::string& spec) {
  const std::size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
  if (name == "box" && colon != std::string::npos) {
    const double n = kernel_argument(spec, arg);
    if (!(n >= 1 && n <= double(kMaxKernelSide) && n == std::floor(n) && std::fmod(n, 2) == 1))
      throw Error(ErrorKind::usage, std::string("--kernel box:N takes an odd N from 1 to ") +
                                        std::to_string(kMaxKernelSide) + ", got " + arg);
    const auto side = static_cast<std::int64_t>(n);
    // The mean of the N x N window: every tap 1 / N^2.
    OwnKernel k;
    k.rows = k.cols = side;
    k.taps.assign(static_cast<std::size_t>(side * side), 1.0 / (n * n));
    k.recipe = std::string("box ") + std::to_string(side) + " x " + std::to_string(side);
    return k;
  }
  if (name == "gaussian2d" && colon != std::string::npos) {
    const double sigma = kernel_argument(spec, arg);
    if (!(sigma > 0) || 3 * sigma > double((kMaxKernelSide - 1) / 2))
      throw Error(ErrorKind::usage,
                  std::string("--kernel gaussian2d:SIGMA takes a sigma above 0 and at most ") +
                      number(double((kMaxKernelSide - 1) / 2) / 3) + ", got " + arg);
    // The outer product of the normalized 1-D Gaussian of radius ceil(3 sigma) with itself (1e-9:
    // as for --sigma, a sigma of k/3 typed in decimal is radius k).
    const auto r = static_cast<std::int64_t>(std::ceil(3 * sigma - 1e-9));
    const std::vector<double> g = own_gaussian(r, sigma);
    return outer_kernel(
        g, g,
        std::string("gaussian2d sigma ") + number(sigma) + " (radius " + std::to_string(r) + ")");
  }
  // The 3 x 3 operators from their definitions: the 4-neighbour Laplacian, and Sobel's central
  // difference along one axis times the [1 2 1] smoothing along the other.
  if (spec == "laplace") {
    OwnKernel k;
    k.rows = k.cols = 3;
    k.taps = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    k.recipe = "laplace (4-neighbour)";
    return k;
  }
  if (spec == "sobel-x") return outer_kernel({1, 2, 1}, {-1, 0, 1}, "sobel-x");
  if (spec == "sobel-y") return outer_kernel({-1, 0, 1}, {1, 2, 1}, "sobel-y");
  throw Error(ErrorKind::usage, "--kernel '" + spec +
                                    "' is neither a file nor a built-in kernel: use a text or .npy "
                                    "file, box:N, gaussian2d:SIGMA, laplace, sobel-x or sobel-y");
}

// Rows of numbers between commas and white space; '#' starts a comment; lines without numbers
// are skipped; every row as long as the first.
OwnKernel own_text_kernel(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::input, "cannot read kernel file '" + path + "'");
  OwnKernel k;
  k.recipe = "text file " + path;
  std::int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::vector<std::string> tokens = ooc::check::line_tokens(line);
    for (const std::string& token : tokens) {
      char* end = nullptr;
      const double v = std::strtod(token.c_str(), &end);
      const bool number_ok = end == token.c_str() + token.size();
      if (!number_ok || !std::isfinite(v))
        throw Error(ErrorKind::usage, "kernel file '" + path + "' line " + std::to_string(line_no) +
                                          ": '" + token + "' is not " +
                                          (number_ok ? "finite" : "a number"));
      k.taps.push_back(v);
    }
    const auto count = static_cast<std::int64_t>(tokens.size());
    if (count == 0) continue;
    if (k.rows > 0 && count != k.cols)
      throw Error(ErrorKind::usage, "kernel file '" + path + "' line " + std::to_string(line_no) +
                                        " has " + std::to_string(count) + " taps, the first row " +
                                        std::to_string(k.cols) + ": every row needs as many");
    k.cols = count;
    // Stop reading what oocconv refuses anyway before it takes the memory.
    if (++k.rows > kMaxKernelSide || k.cols > kMaxKernelSide)
      throw Error(ErrorKind::usage, "kernel file '" + path + "' is larger than " +
                                        std::to_string(kMaxKernelSide) +
                                        " on a side: oocconv refuses it");
  }
  return k;
}

// A 2-D float32 or float64 array (shape (K, L), or (K, L, 1)) through the image reader: its rows
// are the kernel's rows.
OwnKernel own_npy_kernel(const std::string& path) {
  ooc::RawHints h;
  h.format = "npy";
  const std::string what = "; a kernel is a 2-D float32 or float64 array in C order";
  std::unique_ptr<ooc::Source> src;
  try {
    src = ooc::open_source(path, h);
  } catch (const Error& e) {  // a bad kernel is a bad option, not a bad input image
    throw Error(ErrorKind::usage, std::string("kernel file: ") + e.what() + what);
  }
  const ooc::ImageSpec& s = src->spec();
  if (s.channels != 1 || (s.type != SampleType::f64 && s.type != SampleType::f32))
    throw Error(ErrorKind::usage, "kernel file '" + path + "' holds " + s.describe() + what);
  if (s.width > kMaxKernelSide || s.height > kMaxKernelSide)
    throw Error(ErrorKind::usage, "kernel file '" + path + "' is larger than " +
                                      std::to_string(kMaxKernelSide) +
                                      " on a side: oocconv refuses it");
  OwnKernel k;
  k.rows = s.height;
  k.cols = s.width;
  k.recipe = ".npy file " + path;
  k.taps.resize(static_cast<std::size_t>(k.rows * k.cols));
  std::vector<std::byte> raw(s.row_bytes());
  try {
    for (std::int64_t i = 0; i < k.rows; ++i) {
      src->read_rows(i, 1, raw.data());
      to_double(s.type, raw.data(), k.cols, k.taps.data() + i * k.cols);
    }
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, std::string("kernel file: ") + e.what() + what);
  }
  return k;
}

// --kernel as oocconv takes it: an existing path is a file (.npy by its magic bytes, else text),
// anything else the name of a built-in.
OwnKernel own_kernel(const std::string& spec) {
  OwnKernel k;
  struct stat st {};
  if (::stat(spec.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw Error(ErrorKind::usage, "kernel file '" + spec + "' is not a regular file");
    char magic[6] = {};
    std::ifstream(spec, std::ios::binary).read(magic, sizeof magic);
    k = std::memcmp(magic, "\x93NUMPY", 6) == 0 ? own_npy_kernel(spec) : own_text_kernel(spec);
  } else {
    k = own_builtin_kernel(spec);
  }
  if (k.rows == 0 || k.cols == 0)
    throw Error(ErrorKind::usage, "kernel '" + spec + "' has no taps");
  if (k.rows % 2 == 0 || k.cols % 2 == 0)
    throw Error(ErrorKind::usage, "kernel '" + spec + "' is " + std::to_string(k.rows) + " x " +
                                      std::to_string(k.cols) +
                                      ": both sides must be odd (the centre is the origin)");
  for (const double t : k.taps)
    if (!std::isfinite(t))
      throw Error(ErrorKind::usage, "kernel '" + spec + "' holds a tap that is not finite");
  return k;
}

// Checks the options as oocconv checks them (contradictions with the separable filter's options,
// --border, --out-type, --precision) on a copy whose kernel is a harmless built-in: the kernel
// itself is ooccheck's own to read and judge.
ooc::Conv2dParams validated_conv2d_params(const ooc::cli::FilterCli& f) {
  ooc::cli::FilterCli probe = f;
  probe.kernel = "box:1";
  return ooc::cli::conv2d_params(probe);
}

// Bytes the 2-D reference holds for a kernel over an image: the taps and their magnitudes, per
// band the distinct input rows padded along x, per thread a raw row and three output rows.
double reference2d_bytes(const OwnKernel& k, const ooc::ImageSpec& s) {
  const double threads = tbb::this_task_arena::max_concurrency();
  const double slots = std::min(double(s.height) + 1, double(kBandRows) + 2 * double(k.ry()));
  const double n = double(s.width) * s.channels;
  return 16 * double(k.taps.size()) +
         slots * 8 * (double(s.width) + 2 * double(k.rx())) * s.channels +
         threads * (double(s.row_bytes()) + 24 * n);
}

// The float64 reference of scipy.ndimage.convolve: every output sample the sum over its whole
// K x L window, with M = sum |tap| x |input| and S = sum |input| over it (the scales of the
// rounding errors of any order of summing, and of a rank-1 factorization).
class Reference2d {
 public:
  Reference2d(ooc::Source& in, const OwnKernel& k, ooc::BorderMode border, double cval,
              double tap_floor)
      : in_(in),
        s_(in.spec()),
        n_(s_.row_samples()),
        k_(k),
        border_(border),
        cval_(cval),
        pad_n_((s_.width + 2 * k.rx()) * s_.channels),
        mag_(magnitudes(k.taps, tap_floor)) {}

  std::int64_t row_samples() const { return n_; }

  // Reads the input rows that output rows [y0, y0 + rows) need, each distinct one once, padded
  // along x by the border rule; valid until the next call.
  void load_band(std::int64_t y0, std::int64_t rows) {
    const std::int64_t ry = k_.ry();
    band_slots(y0 - ry, rows + 2 * ry, s_.height, border_, slot_of_, src_rows_);
    padded_.resize(src_rows_.size() * static_cast<std::size_t>(pad_n_));
    tbb::parallel_for(std::size_t{0}, src_rows_.size(), [&](std::size_t slot) {
      load_row(src_rows_[slot], padded_.data() + slot * static_cast<std::size_t>(pad_n_));
    });
  }

  // Output row y0 + y of the band (after load_band): the exact result, M and S.
  void output_row(std::int64_t y, double* out, double* mag, double* sum_abs) const {
    std::fill(out, out + n_, 0.0);
    std::fill(mag, mag + n_, 0.0);
    std::fill(sum_abs, sum_abs + n_, 0.0);
    const int C = s_.channels;
    const std::int64_t rx = k_.rx(), ry = k_.ry();
    // out(Y, x) = sum_{i,j} k[i][j] in(Y + ry - i, x + rx - j): input row Y + ry - i is band
    // coordinate y + 2 ry - i; pixel x + rx - j sits at (x + 2 rx - j) C of the padded row. Zero
    // taps too: 0 x inf is NaN in scipy and in oocconv, and S counts every sample.
    for (std::int64_t i = 0; i < k_.rows; ++i) {
      const double* row =
          padded_.data() + slot_of_[static_cast<std::size_t>(y + 2 * ry - i)] * pad_n_;
      for (std::int64_t j = 0; j < k_.cols; ++j) {
        const double w = k_.taps[static_cast<std::size_t>(i * k_.cols + j)];
        const double a = mag_[static_cast<std::size_t>(i * k_.cols + j)];
        const double* src = row + (2 * rx - j) * C;
        for (std::int64_t p = 0; p < n_; ++p) {
          const double v = src[p], av = std::abs(v);
          out[p] += w * v;
          mag[p] += a * av;
          sum_abs[p] += av;
        }
      }
    }
  }

 private:
  // Source row src_row as doubles at dst[(q + rx) C] for pixels q in [-rx, W + rx), the border
  // rule outside the row; row -1 (outside the image under the constant rule) is the constant:
  // scipy pads the input itself along both axes.
  void load_row(std::int64_t src_row, double* dst) const {
    if (src_row < 0) {
      std::fill(dst, dst + pad_n_, cval_);
      return;
    }
    const int C = s_.channels;
    const std::int64_t rx = k_.rx();
    thread_local std::vector<std::byte> raw;
    thread_local std::vector<double> x;
    raw.resize(s_.row_bytes());
    x.resize(static_cast<std::size_t>(n_));
    in_.read_rows(src_row, 1, raw.data());
    to_double(s_.type, raw.data(), n_, x.data());
    for (std::int64_t q = -rx; q < s_.width + rx; ++q) {
      double* p = dst + (q + rx) * C;
      const std::int64_t m = ooc::map_border(q, s_.width, border_);
      for (int c = 0; c < C; ++c) p[c] = m < 0 ? cval_ : x[static_cast<std::size_t>(m * C + c)];
    }
  }

  ooc::Source& in_;
  ooc::ImageSpec s_;
  std::int64_t n_;
  const OwnKernel& k_;
  ooc::BorderMode border_;
  double cval_;
  std::int64_t pad_n_;
  std::vector<double> mag_;             // |taps| (see magnitudes)
  std::vector<std::int64_t> slot_of_;   // band coordinate j (row y0 - ry + j) -> its slot
  std::vector<std::int64_t> src_rows_;  // slot -> source row (-1: the constant border)
  std::vector<double> padded_;          // slot s at s * pad_n_
};

int run_reference2d(const std::vector<std::string>& files, const ooc::RawHints& hints,
                    std::uint64_t seed, const ooc::cli::FilterCli& filter, double tolerance,
                    std::int64_t sample) {
  const std::string &out_path = files[0], &in_path = files[1];
  const ooc::Conv2dParams params = validated_conv2d_params(filter);
  const OwnKernel kernel = own_kernel(filter.kernel);
  auto in = ooc::open_source(in_path, hints, seed);
  auto out = open_output(out_path, *in, in_path, params.out_type);
  const ooc::ImageSpec& is = in->spec();
  const double need = reference2d_bytes(kernel, is), have = double(usable_memory_bytes()) / 2;
  if (need > have)
    throw Error(ErrorKind::usage, "--kernel " + filter.kernel + " (" + std::to_string(kernel.rows) +
                                      " x " + std::to_string(kernel.cols) + ") over " +
                                      is.describe() + " needs about " + bytes_text(need) +
                                      " in ooccheck's float64 reference, more than half of the " +
                                      ooc::format_bytes(double(usable_memory_bytes())) +
                                      " this process may use (memory, ulimit -v)");
  const SampleType out_type = out->spec().type;
  const bool acc_f64 = ooc::accumulates_in_f64(is.type, out_type, params.precision);
  double sum_abs_taps = 0, peak_tap = 0;
  for (const double t : kernel.taps) {
    sum_abs_taps += std::abs(t);
    peak_tap = std::max(peak_tap, std::abs(t));
  }
  const std::string window = std::to_string(kernel.rows) + " x " + std::to_string(kernel.cols);
  // 2^-48 max|tap| per unit of S: oocconv accepts factors whose products are within 2^-49
  // max|tap| of each tap (plus their own rounding), an error relative to the largest tap, not
  // to the tap it replaces, so M alone does not bound it.
  const ReferenceTolerance tolerance_of(
      double(kernel.taps.size()), acc_f64, out_type, tolerance, sum_abs_taps, 0x1p-48 * peak_tap,
      "M = sum of |tap| x |input| and S = sum of |input| over the sample's " + window + " window");

  Reference2d ref(*in, kernel, params.border, params.border_value, acc_f64 ? DBL_MIN : FLT_MIN);
  const std::int64_t n = ref.row_samples();
  tbb::combinable<double> largest_m([] { return 0.0; });
  auto check = [&](std::int64_t y0, std::int64_t rows, tbb::combinable<Tally>& tallies) {
    ref.load_band(y0, rows);
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t y) {
      thread_local std::vector<double> expected, mag, sum_abs, got;
      thread_local std::vector<std::byte> raw;
      expected.resize(n);
      mag.resize(n);
      sum_abs.resize(n);
      got.resize(n);
      raw.resize(out->spec().row_bytes());
      ref.output_row(y, expected.data(), mag.data(), sum_abs.data());
      out->read_rows(y0 + y, 1, raw.data());
      to_double(out_type, raw.data(), n, got.data());
      Tally& t = tallies.local();
      double& lm = largest_m.local();
      const std::int64_t base = (y0 + y) * n;
      for (std::int64_t i = 0; i < n; ++i) {
        const double e = expected[i], m = mag[i];
        if (std::isfinite(m)) lm = std::max(lm, m);
        t.add(base + i, as_stored(e, out_type), got[i], tolerance_of(e, m, sum_abs[i]));
      }
    });
  };

  return check_reference(*in, *out,
                         "2-D kernel (ooccheck's own taps, every tap summed): " + kernel.recipe +
                             ", " + window + " taps",
                         params.border, params.border_value, acc_f64, tolerance_of, largest_m,
                         sample, seed, check);
}

// ---------------------------------------------------------------------------------------------
// Histogram equalization (--equalize): ooceq's table rebuilt from ooccheck's own histogram and
// its own arithmetic, OUT compared with table[IN] exactly.

// Bins of a type ooceq takes; other types are refused as ooceq refuses them.
std::int64_t equalize_bins(SampleType t) {
  if (t == SampleType::u8) return 256;
  if (t == SampleType::u16) return 65536;
  throw Error(ErrorKind::usage,
              std::string("histogram equalization takes u8 or u16 images, this one is ") +
                  std::string(name(t)) +
                  ": ooceq refuses it, so no OUT comes from it (scale and convert it first, e.g. "
                  "for values in [0, M]: oocrun IN OUT 'scale mul=S ! convert type=u16', S = "
                  "65535 / M)");
}

// The float32 nearest a count (ties to even), as a double. In integers, not through a cast: a
// count beyond 2^53 would be rounded twice on its way through double.
double f32_of_count(std::uint64_t v) {
  int shift = 0;
  while ((v >> shift) >= (std::uint64_t{1} << 24)) ++shift;
  if (shift == 0) return static_cast<double>(v);
  std::uint64_t q = v >> shift;
  const std::uint64_t rest = v & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (q & 1) != 0)) ++q;  // q = 2^24 is still exact
  return std::ldexp(static_cast<double>(q), shift);
}

// The float32 nearest a positive double in float32's normal range (ties to even): 24 significant
// bits.
double f32_of(double v) {
  int e = 0;
  const double m = std::frexp(v, &e);  // v = m 2^e, 0.5 <= m < 1
  return std::ldexp(std::nearbyint(std::ldexp(m, 24)), e - 24);
}

// cv2.equalizeHist's table for one channel's histogram h (see ooceq --help): with i0 the smallest
// value present and N the samples, lut[i0] = 0 and lut[i] = round(float(h[i0+1] + ... + h[i]) *
// scale), scale = float(bins - 1) / float(N - h[i0]), every operation rounded to float32 (ties to
// even), the result rounded half to even and saturated; a channel of one value is unchanged.
// The float32 operations are emulated exactly: counts are rounded in integers; the quotient of
// two float32 values computed in double and rounded to float32 is the float32 quotient (53 >=
// 2 x 24 + 2 bits: that double rounding is innocuous), and the product of two float32 values is
// exact in double, so rounding it once gives the float32 product.
std::vector<std::uint32_t> own_equalization_table(const std::uint64_t* h, std::int64_t bins) {
  std::vector<std::uint32_t> lut(static_cast<std::size_t>(bins));
  for (std::int64_t v = 0; v < bins; ++v) lut[static_cast<std::size_t>(v)] = std::uint32_t(v);
  std::uint64_t total = 0;
  std::int64_t i0 = -1;
  for (std::int64_t v = 0; v < bins; ++v) {
    total += h[v];
    if (i0 < 0 && h[v] > 0) i0 = v;
  }
  if (i0 < 0 || h[i0] == total) return lut;  // no samples, or one value: unchanged
  const double scale = f32_of(double(bins - 1) / f32_of_count(total - h[i0]));
  std::uint64_t cumulative = 0;
  lut[static_cast<std::size_t>(i0)] = 0;
  for (std::int64_t v = i0 + 1; v < bins; ++v) {
    cumulative += h[v];
    const double x = std::nearbyint(f32_of(f32_of_count(cumulative) * scale));
    lut[static_cast<std::size_t>(v)] =
        static_cast<std::uint32_t>(std::clamp(x, 0.0, double(bins - 1)));
  }
  return lut;
}

// Row of u8 or u16 samples as bin numbers.
void to_bins(SampleType t, const std::byte* p, std::int64_t n, std::uint32_t* out) {
  if (t == SampleType::u8) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = std::to_integer<std::uint32_t>(p[i]);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    out[i] = v;
  }
}

int run_equalize(const std::vector<std::string>& files, const ooc::RawHints& hints,
                 std::uint64_t seed, std::int64_t sample) {
  const std::string &out_path = files[0], &in_path = files[1];
  auto in = ooc::open_source(in_path, hints, seed);
  const ooc::ImageSpec& is = in->spec();
  const std::int64_t bins = equalize_bins(is.type);
  auto out = open_output(out_path, *in, in_path, std::nullopt, "ooceq");
  if (out->spec().type != is.type)
    throw Error(ErrorKind::input, "output '" + out_path + "' is " + out->spec().describe() +
                                      " but input '" + in_path + "' is " + is.describe() +
                                      ": ooceq writes the input's type, so OUT cannot be the "
                                      "result of IN");
  const int C = is.channels;
  const std::int64_t n = is.row_samples();

  // Pass 1: every row, whatever --sample says: one sample left out changes the table.
  tbb::combinable<std::vector<std::uint64_t>> partial(
      [&] { return std::vector<std::uint64_t>(static_cast<std::size_t>(bins * C), 0); });
  for (std::int64_t y0 = 0; y0 < is.height; y0 += kBandRows) {
    tbb::parallel_for(y0, std::min(is.height, y0 + kBandRows), [&](std::int64_t y) {
      thread_local std::vector<std::byte> raw;
      thread_local std::vector<std::uint32_t> v;
      raw.resize(is.row_bytes());
      v.resize(static_cast<std::size_t>(n));
      in->read_rows(y, 1, raw.data());
      to_bins(is.type, raw.data(), n, v.data());
      std::uint64_t* h = partial.local().data();
      for (std::int64_t i = 0; i < n; ++i) ++h[(i % C) * bins + v[i]];
    });
  }
  std::vector<std::uint64_t> hist(static_cast<std::size_t>(bins * C), 0);
  partial.combine_each([&](const std::vector<std::uint64_t>& p) {
    for (std::size_t i = 0; i < hist.size(); ++i) hist[i] += p[i];
  });
  std::vector<std::vector<std::uint32_t>> lut;
  std::printf("equalization: %s -> %s, %lld bins per channel, histogram of every row\n",
              in->describe().c_str(), out->describe().c_str(), static_cast<long long>(bins));
  for (int c = 0; c < C; ++c) {
    const std::uint64_t* h = hist.data() + c * bins;
    lut.push_back(own_equalization_table(h, bins));
    std::int64_t lo = -1, hi = -1, distinct = 0;
    for (std::int64_t v = 0; v < bins; ++v) {
      if (h[v] == 0) continue;
      lo = lo < 0 ? v : lo;
      hi = v;
      ++distinct;
    }
    std::printf("channel %d: values %lld..%lld, %lld distinct%s\n", c, static_cast<long long>(lo),
                static_cast<long long>(hi), static_cast<long long>(distinct),
                distinct == 1 ? " (one value: unchanged)" : "");
  }

  // Pass 2: the picked bands of OUT against table[IN], exactly.
  auto check = [&](std::int64_t y0, std::int64_t rows, tbb::combinable<Tally>& tallies) {
    tbb::parallel_for(y0, y0 + rows, [&](std::int64_t y) {
      thread_local std::vector<std::byte> raw_in, raw_out;
      thread_local std::vector<std::uint32_t> v, got;
      raw_in.resize(is.row_bytes());
      raw_out.resize(is.row_bytes());
      v.resize(static_cast<std::size_t>(n));
      got.resize(static_cast<std::size_t>(n));
      in->read_rows(y, 1, raw_in.data());
      out->read_rows(y, 1, raw_out.data());
      to_bins(is.type, raw_in.data(), n, v.data());
      to_bins(is.type, raw_out.data(), n, got.data());
      Tally& t = tallies.local();
      for (std::int64_t i = 0; i < n; ++i)
        t.add(y * n + i, double(lut[static_cast<std::size_t>(i % C)][v[i]]), double(got[i]), 0.0);
    });
  };
  const auto bands = pick_bands(0, is.height, sample, seed);
  const Tally t = over_bands(bands, is.height, check);
  const std::string what = "checked " + std::to_string(t.count) + " samples in " +
                           band_summary(bands.size(), 0, is.height, sample, seed);
  return report(what, "exact: OUT = table[IN] (cv2.equalizeHist's, each channel on its own)", t,
                double(bins - 1), is, "expected", "OUT has");
}

// near[x * C + c] = the largest finite |a| of channel c over pixels [x - h, x + h] of the row
// (a monotonic queue: amortized O(1) per sample).
void window_max_abs(const double* a, std::int64_t width, int C, std::int64_t h, double* near) {
  thread_local std::vector<std::int64_t> queue;  // pixels, their values decreasing
  queue.resize(static_cast<std::size_t>(width));
  for (int c = 0; c < C; ++c) {
    auto value = [&](std::int64_t x) {
      const double v = std::abs(a[x * C + c]);
      return std::isfinite(v) ? v : 0.0;
    };
    std::size_t head = 0, tail = 0;
    std::int64_t next = 0;  // the next pixel to enter
    for (std::int64_t x = 0; x < width; ++x) {
      for (; next < width && next <= x + h; ++next) {
        const double v = value(next);
        while (tail > head && value(queue[tail - 1]) <= v) --tail;
        queue[tail++] = next;
      }
      while (queue[head] < x - h) ++head;
      near[x * C + c] = value(queue[head]);
    }
  }
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
  const bool integers = ooc::is_integer(s.type);
  const bool relative = tolerance < 0 && !integers;
  std::vector<std::byte> ba, bb;
  auto check = [&](std::int64_t y0, std::int64_t rows, tbb::combinable<Tally>& tallies) {
    ba.resize(rows * s.row_bytes());
    bb.resize(rows * sb.row_bytes());
    a->read_rows(y0, rows, ba.data());
    b->read_rows(y0, rows, bb.data());
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t r) {
      thread_local std::vector<double> da, db, near;
      da.resize(n);
      db.resize(n);
      to_double(s.type, ba.data() + r * s.row_bytes(), n, da.data());
      to_double(sb.type, bb.data() + r * sb.row_bytes(), n, db.data());
      if (relative) {
        near.resize(n);
        window_max_abs(da.data(), s.width, s.channels, kCompareWindow, near.data());
      }
      Tally& t = tallies.local();
      for (std::int64_t i = margin * s.channels; i < n - margin * s.channels; ++i) {
        const double tol = tolerance >= 0 ? tolerance : integers ? 1.0 : kCompareRelative * near[i];
        t.add((y0 + r) * n + i, da[i], db[i], tol);
      }
    });
  };
  const std::int64_t end = s.height - margin;
  const auto bands = pick_bands(margin, end, sample, seed);
  const Tally t = over_bands(bands, end, check);
  const double range =
      ooc::is_integer(s.type) ? ooc::highest_value(s.type) - ooc::lowest_value(s.type) : t.peak;
  std::string what =
      "compared " + std::to_string(t.count) + " samples (margin " + std::to_string(margin) + ")";
  if (sample > 0) what += " in " + band_summary(bands.size(), margin, end, sample, seed);
  const std::string rule = tolerance >= 0 ? "--tolerance " + number(tolerance) + " for every sample"
                           : integers     ? std::string("1 for every sample (integers)")
                                          : "per sample, 1e-5 x the largest finite |A| within " +
                                            std::to_string(kCompareWindow) +
                                            " pixels along its row (same channel)";
  return report(what, rule, t, range, s, "A", "B");
}

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("ooccheck", [&]() -> int {
    CLI::App app{
        "ooccheck: check oocconv's output against a float64 reference computed out of core\n"
        "(ooccheck OUT IN [input and filter or --kernel options of oocconv]), ooceq's against\n"
        "its own equalization (ooccheck --equalize OUT IN [input options]), oocatax's against\n"
        "its own float64 product (ooccheck --atax Y A --x X), or compare two images\n"
        "(ooccheck --compare A B)."};
    app.footer(kFooter);
    app.get_formatter()->column_width(34);

    std::vector<std::string> files;
    bool compare = false, equalize = false, atax = false;
    app.add_option("FILES", files,
                   "OUT IN (OUT made from IN by oocconv or ooceq), A B, or Y A (--atax)")
        ->expected(2)
        ->required();
    app.add_flag("--compare", compare, "compare two images A B instead");
    app.add_flag("--equalize", equalize, "check ooceq's OUT (histogram equalization) of IN");
    app.add_flag("--atax", atax, "check oocatax's Y (A^T (A X), or --op) of the matrix A");

    ooc::RawHints hints;
    std::string type = "f32";
    std::uint64_t seed = 1;
    auto* g_in = app.add_option_group("Input");
    g_in->add_option("--width,--cols", hints.width,
                     "samples per row (raw files; .npy headers say it)");
    g_in->add_option("--height,--rows", hints.height, "rows (checked against the file size)");
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
    ooc::check::AtaxCli atax_cli;
    ooc::check::add_atax_options(app, atax_cli);

    double tolerance = -1;
    std::int64_t margin = 0, sample = 0;
    auto* g_c = app.add_option_group("Check");
    auto* tolerance_opt =
        g_c->add_option("--tolerance", tolerance,
                        "largest allowed |error| of every sample (default: per sample, see below)");
    g_c->add_option("--sample", sample,
                    "check N random bands of 64 rows (--atax: N rows of y), picked by --seed "
                    "(default: all)");
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
    if (int(compare) + int(equalize) + int(atax) > 1)
      throw Error(ErrorKind::usage, "give one of --compare, --equalize and --atax");
    if (atax) {
      for (const char* opt :
           {"--radius", "--sigma", "--filter", "--taps", "--row-taps", "--col-taps", "--taps-file",
            "--kernel", "--border", "--border-value", "--out-type", "--tolerance", "--margin"}) {
        if (app.get_option(opt)->count() > 0)
          throw Error(ErrorKind::usage,
                      std::string(opt) +
                          " has no meaning for --atax: the tolerance comes from --precision (what "
                          "oocatax accumulated in) and the sizes of A");
      }
      return ooc::check::run_atax(files, hints, seed, atax_cli, filter.precision, sample);
    }
    if (const std::string opt = ooc::check::given_atax_option(app); !opt.empty())
      throw Error(ErrorKind::usage, opt + " belongs to --atax (ooccheck --atax Y A --x X)");
    if (equalize) {
      for (const char* opt : {"--radius", "--sigma", "--filter", "--taps", "--row-taps",
                              "--col-taps", "--taps-file", "--kernel", "--border", "--border-value",
                              "--out-type", "--precision", "--tolerance", "--margin"}) {
        if (app.get_option(opt)->count() > 0)
          throw Error(ErrorKind::usage,
                      std::string(opt) +
                          " has no meaning for --equalize: ooceq takes no filter and OUT must "
                          "equal the table of IN exactly");
      }
      return run_equalize(files, hints, seed, sample);
    }
    if (compare) {
      for (const char* opt :
           {"--radius", "--sigma", "--filter", "--taps", "--row-taps", "--col-taps", "--taps-file",
            "--kernel", "--border", "--border-value", "--out-type", "--precision"}) {
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
    if (!filter.kernel.empty())
      return run_reference2d(files, hints, seed, filter, tolerance, sample);
    return run_reference(files, hints, seed, filter, tolerance, sample);
  });
}
