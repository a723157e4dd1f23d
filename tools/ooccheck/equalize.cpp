// ooccheck --equalize OUT IN: ooceq's table (cv2.equalizeHist's) rebuilt from ooccheck's own
// histogram of all of IN and its own float32 arithmetic, OUT compared with table[IN] exactly.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"

namespace ooc::check {
namespace {

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

}  // namespace

int run_equalize(const std::vector<std::string>& files, const ooc::RawHints& hints,
                 std::uint64_t seed, std::int64_t sample) {
  const std::string &out_path = files[0], &in_path = files[1];
  auto in = ooc::open_source(in_path, hints, seed);
  const ooc::ImageSpec& is = in->spec();
  refuse_volume(is, in_path);
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

}  // namespace ooc::check
