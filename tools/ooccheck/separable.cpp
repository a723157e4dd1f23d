// ooccheck OUT IN [filter options of oocconv]: the separable convolution recomputed in float64
// from taps built here (not through ooc::gaussian_taps & co.), band by band, and compared with OUT
// sample by sample against the rounding bound of oocconv's arithmetic.
#include <sys/stat.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "cli/filter_options.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/ops/separable.hpp"

namespace ooc::check {
namespace {

// The largest radius the reference takes at all (then memory decides): 2R+1 and the byte counts
// stay far from overflow.
constexpr std::int64_t kMaxRadius = std::int64_t{1} << 31;

// Taps in convolution order (scipy.ndimage.convolve1d's weights), along x and along y.
struct OwnFilter {
  std::vector<double> row{1.0}, col{1.0};
  std::string what;    // "--radius 16": the options that made it, for messages
  std::string recipe;  // "gaussian radius 16, sigma 5.33333"

  std::int64_t rx() const { return static_cast<std::int64_t>(row.size() / 2); }
  std::int64_t ry() const { return static_cast<std::int64_t>(col.size() / 2); }
};

}  // namespace

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

namespace {

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

// Builds the filter from the options, after they passed the shared validation.
OwnFilter own_filter(const ooc::FilterOptions& f) {
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
ooc::SeparableParams validated_params(const ooc::FilterOptions& f) {
  const bool explicit_taps =
      !f.taps.empty() || !f.row_taps.empty() || !f.col_taps.empty() || !f.taps_file.empty();
  if (!explicit_taps) {
    if (f.radius && *f.radius < 0)
      throw Error(ErrorKind::usage, "--radius must be >= 0, got " + std::to_string(*f.radius));
    if (f.sigma && !(std::isfinite(*f.sigma) && *f.sigma > 0))
      throw Error(ErrorKind::usage, "--sigma must be a finite number > 0, got " + number(*f.sigma));
  }
  ooc::FilterOptions probe = f;
  if (probe.radius && *probe.radius > 0) probe.radius = 0;
  if (probe.sigma && std::isfinite(*probe.sigma) && *probe.sigma > 0) probe.sigma = 1.0;
  return ooc::filter_params(probe);
}

}  // namespace

int run_reference(const std::vector<std::string>& files, const ooc::RawHints& hints,
                  std::uint64_t seed, const ooc::FilterOptions& filter, double tolerance,
                  std::int64_t sample) {
  const std::string &out_path = files[0], &in_path = files[1];
  // Options checked as oocconv checks them; the taps are ooccheck's own.
  const ooc::SeparableParams params = validated_params(filter);
  const OwnFilter own = own_filter(filter);
  auto in = ooc::open_source(in_path, hints, seed);
  auto out = open_output(out_path, *in, in_path, params.out_type);
  const ooc::ImageSpec& is = in->spec();
  refuse_volume(is, in_path);
  check_fits(own.what, double(own.rx()), double(own.ry()), is.width, is.channels, is.height);
  const SampleType out_type = out->spec().type;
  const bool acc_f64 = ooc::accumulates_in_f64(is.type, out_type, params.precision);
  double col_abs = 0;
  for (const double t : own.col) col_abs += std::abs(t);
  ReferenceTolerance tolerance_of(
      double(own.row.size() + own.col.size()), acc_f64, out_type, tolerance, col_abs, 0,
      "M = sum of |column tap| x |row tap| x |input| over the sample's support");

  // The FFT (--method fft, or auto's pick): on the CPU each pass's error bound (fft_error_bound
  // of its block length), on CUDA the 2-D transform's of a block-sized tile (the file does not
  // say which backend wrote it: the larger), relative to sum|row| x sum|col| x max|x|, with the
  // largest |x| of the whole input (and the constant border).
  ooc::SeparableParams planned = params;
  planned.filter = ooc::SeparableFilter{own.row, own.col};
  planned = ooc::folded_separable(planned, is);  // taps past the image run folded
  const ooc::SeparableCosts costs = ooc::separable_costs(is, planned);
  if (costs.cpu_uses_fft || costs.cuda_uses_fft) {
    double peak = params.border == ooc::BorderMode::constant ? std::abs(params.border_value) : 0;
    largest_input(*in, peak);
    double row_abs = 0;
    for (const double t : own.row) row_abs += std::abs(t);
    const double bound =
        std::max(ooc::fft_error_bound(costs.block_rows, 1, acc_f64) +
                     ooc::fft_error_bound(costs.block_cols, 1, acc_f64),
                 ooc::fft_error_bound(costs.block_rows, costs.block_cols, acc_f64));
    tolerance_of.allow_fft(bound * row_abs * col_abs * peak,
                           "the FFT's rounding: " + number(bound) + " x sum|row| x sum|col| " +
                               number(row_abs * col_abs) + " x max|input| " + number(peak) +
                               ", blocks " + std::to_string(costs.block_cols) + " along x, " +
                               std::to_string(costs.block_rows) + " along y");
  }

  SeparableReference ref(*in, own.row, own.col, params.border, params.border_value,
                         acc_f64 ? DBL_MIN : FLT_MIN);
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

}  // namespace ooc::check
