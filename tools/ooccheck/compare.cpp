// ooccheck --compare A B: two images of the same geometry compared sample by sample (integers
// exactly, floats within a relative tolerance of their neighbourhood), --margin pixels at the
// edges ignored.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"

namespace ooc::check {
namespace {

// --compare: a float sample may differ by kCompareRelative x the largest |A| within
// kCompareWindow pixels of it along its row.
constexpr double kCompareRelative = 1e-5;
constexpr std::int64_t kCompareWindow = 16;

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

}  // namespace

int run_compare(const std::vector<std::string>& files, const ooc::RawHints& hints,
                std::uint64_t seed, double tolerance, std::int64_t margin, std::int64_t sample) {
  auto a = ooc::open_source(files[0], hints, seed);
  auto b = ooc::open_source(files[1], hints, seed);
  const ooc::ImageSpec s = a->spec();
  const ooc::ImageSpec& sb = b->spec();
  // Types may differ (a peer's f64 against our f32): each is read as its own.
  if (sb.width != s.width || sb.height != s.height || sb.depth != s.depth ||
      sb.channels != s.channels)
    throw Error(ErrorKind::input, "'" + files[0] + "' is " + s.describe() + ", '" + files[1] +
                                      "' is " + sb.describe() +
                                      ": only images of one geometry can be compared");
  if (margin < 0 || 2 * margin >= std::min(s.width, s.height))
    throw Error(ErrorKind::usage, "--margin must leave part of the image");
  if (margin > 0 && s.depth > 1)
    throw Error(ErrorKind::usage, "--margin applies to images of one plane; '" + files[0] +
                                      "' has " + std::to_string(s.depth));

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
  const std::int64_t end = s.stacked_rows() - margin;  // every plane's rows
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

}  // namespace ooc::check
