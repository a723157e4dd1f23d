// The band kernels of the separable and the 2-D convolution, which share the vectorized weighted
// sum. This file is compiled once per instruction set (see CMakeLists.txt: OOC_ISA names the
// namespace); separable.cpp picks one at run time.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "conv2d.hpp"
#include "ooc/detail/sample_type.hpp"
#include "separable.hpp"
#include "vec_sum.hpp"

#ifndef OOC_ISA
#error "OOC_ISA must name the instruction-set namespace"
#endif

namespace ooc::kernels::OOC_ISA {
namespace {

template <class Acc>
using LoadFn = void (*)(const std::byte*, Acc*, std::int64_t);
template <class Acc>
using StoreFn = void (*)(const Acc*, std::byte*, std::int64_t);

template <class Acc>
LoadFn<Acc> loader(SampleType t) {
  return dispatch_type(t,
                       [](auto v) -> LoadFn<Acc> { return vec::load_samples<decltype(v), Acc>; });
}

template <class Acc>
StoreFn<Acc> storer(SampleType t) {
  return dispatch_type(t,
                       [](auto v) -> StoreFn<Acc> { return vec::store_samples<decltype(v), Acc>; });
}

// Band rows that are the same source row (the halo of an image shorter than the filter, reflected
// back and forth) are loaded and filtered along x once: same[j] is the first band row with row
// j's source. Otherwise a 50-row image with a radius of 5000 filters 10050 rows.
std::vector<std::int64_t> first_of_same_row(const std::byte* const* rows, std::int64_t n) {
  std::vector<std::int64_t> same(static_cast<std::size_t>(n));
  std::unordered_map<const std::byte*, std::int64_t> first;
  for (std::int64_t j = 0; j < n; ++j) same[j] = first.try_emplace(rows[j], j).first->second;
  return same;
}

// Pixels [q0, q1) of an input row as the accumulator type into pad, through the border rule
// where they fall outside the row; a null row (the constant border) is all the constant.
template <class Acc>
void load_padded(const std::byte* row, LoadFn<Acc> load, std::size_t in_pixel, std::int64_t width,
                 int C, BorderMode border, Acc cval, std::int64_t q0, std::int64_t q1, Acc* pad) {
  if (row == nullptr) {
    std::fill(pad, pad + (q1 - q0) * C, cval);
    return;
  }
  const std::int64_t inner0 = std::max<std::int64_t>(q0, 0), inner1 = std::min(q1, width);
  auto edge_pixel = [&](std::int64_t q) {
    Acc* p = pad + (q - q0) * C;
    const std::int64_t src = map_border(q, width, border);
    if (src < 0) {
      std::fill(p, p + C, cval);
    } else {
      load(row + src * in_pixel, p, C);
    }
  };
  for (std::int64_t q = q0; q < inner0; ++q) edge_pixel(q);
  load(row + inner0 * in_pixel, pad + (inner0 - q0) * C, (inner1 - inner0) * C);
  for (std::int64_t q = inner1; q < q1; ++q) edge_pixel(q);
}

using vec::column_sums;
using vec::kColumnRows;
using vec::weighted_sum;

struct Geometry {
  std::int64_t strip_px;  // pixels per strip
  std::int64_t strips;
  std::int64_t in_rows;    // out_rows + 2 * ry
  std::int64_t scratch_n;  // Acc elements of one thread's scratch
};

Geometry geometry(const SeparableArgs& a) {
  Geometry g{};
  g.strip_px = std::clamp<std::int64_t>(a.strip_samples / a.channels, 1, a.width);
  g.strips = (a.width + g.strip_px - 1) / g.strip_px;
  g.in_rows = a.out_rows + 2 * a.ry;
  const std::int64_t strip_n = g.strip_px * a.channels;
  g.scratch_n = g.in_rows * strip_n + (g.strip_px + 2 * a.rx) * a.channels + kColumnRows * strip_n +
                2 * (std::max(a.rx, a.ry) + 1);
  return g;
}

template <class Acc>
void run_band(const SeparableArgs& a) {
  const Geometry g = geometry(a);
  const int C = a.channels;
  const std::size_t in_pixel = sample_bytes(a.in_type) * C;
  const std::size_t out_sample = sample_bytes(a.out_type);
  const LoadFn<Acc> load = loader<Acc>(a.in_type);
  const StoreFn<Acc> store = storer<Acc>(a.out_type);
  const Acc cval = static_cast<Acc>(a.border_value);
  constexpr SampleType acc_type = std::is_same_v<Acc, float> ? SampleType::f32 : SampleType::f64;
  const bool direct = a.out_type == acc_type;    // outputs summed straight into the band
  const bool direct_in = a.in_type == acc_type;  // inputs read where they lie

  std::vector<Acc> wr(a.row_taps, a.row_taps + 2 * a.rx + 1);
  std::vector<Acc> wc(a.col_taps, a.col_taps + 2 * a.ry + 1);

  const std::vector<std::int64_t> same = first_of_same_row(a.rows, g.in_rows);

  tbb::parallel_for(std::int64_t{0}, g.strips, [&](std::int64_t strip) {
    // Per-thread scratch, kept between bands: its size depends only on the plan.
    thread_local std::vector<Acc> scratch;
    thread_local std::vector<const Acc*> taps_src;
    if (scratch.size() < static_cast<std::size_t>(g.scratch_n)) scratch.resize(g.scratch_n);
    taps_src.resize(2 * std::max(a.rx, a.ry) + kColumnRows);

    const std::int64_t p0 = strip * g.strip_px;
    const std::int64_t p1 = std::min(a.width, p0 + g.strip_px);
    const std::int64_t n = (p1 - p0) * C;
    Acc* rowpass = scratch.data();                   // in_rows x n
    Acc* pad = rowpass + g.in_rows * n;              // (p1 - p0 + 2 rx) x C
    Acc* out_rows = pad + (p1 - p0 + 2 * a.rx) * C;  // kColumnRows x n

    // Row pass over every input row of the band, this strip's columns only.
    // A strip away from the row's ends, of samples of the accumulator's type, is read where it
    // lies; others are copied into pad first, through the border rule and the conversion.
    const std::int64_t q0 = p0 - a.rx, q1 = p1 + a.rx;  // padded pixel range
    const bool in_place = direct_in && q0 >= 0 && q1 <= a.width;
    for (std::int64_t j = 0; j < g.in_rows; ++j) {
      if (same[j] != j) continue;
      Acc* dst = rowpass + j * n;
      if (a.rows[j] == nullptr) {  // a constant-border row stays constant after the row pass
        std::fill(dst, dst + n, cval);
        continue;
      }
      const Acc* src = pad;
      if (in_place)
        src = reinterpret_cast<const Acc*>(a.rows[j] + q0 * in_pixel);
      else
        load_padded<Acc>(a.rows[j], load, in_pixel, a.width, C, a.border, cval, q0, q1, pad);
      for (std::int64_t k = 0; k <= 2 * a.rx; ++k) taps_src[k] = src + k * C;
      weighted_sum<Acc>(taps_src.data(), wr.data(), 2 * a.rx + 1, dst, n);
    }

    // Column pass: output row y reads row-pass rows y .. y + 2 ry, all still in cache;
    // kColumnRows output rows at a time where the filter has as many taps.
    // Outputs of the accumulator's type are summed straight into the band's output rows.
    const std::int64_t col_taps = 2 * a.ry + 1;
    const std::int64_t run = col_taps >= kColumnRows ? kColumnRows : 1;
    for (std::int64_t y = 0; y < a.out_rows; y += run) {
      const std::int64_t rows = std::min(run, a.out_rows - y);
      for (std::int64_t k = 0; k < col_taps + rows - 1; ++k)
        taps_src[k] = rowpass + same[y + k] * n;
      Acc* dst[kColumnRows];
      for (std::int64_t m = 0; m < rows; ++m)
        dst[m] = direct
                     ? reinterpret_cast<Acc*>(a.out + (y + m) * a.out_stride + p0 * C * out_sample)
                     : out_rows + m * n;
      if (rows == kColumnRows)
        column_sums<Acc>(taps_src.data(), wc.data(), col_taps, dst, n);
      else
        for (std::int64_t m = 0; m < rows; ++m)
          weighted_sum<Acc>(taps_src.data() + m, wc.data(), col_taps, dst[m], n);
      if (!direct)
        for (std::int64_t m = 0; m < rows; ++m)
          store(out_rows + m * n, a.out + (y + m) * a.out_stride + p0 * C * out_sample, n);
    }
  });
}

struct Conv2dGeometry {
  std::int64_t strip_px, strips, in_rows, pad_n, scratch_n;
};

Conv2dGeometry conv2d_geometry(const Conv2dArgs& a) {
  Conv2dGeometry g{};
  g.strip_px = std::clamp<std::int64_t>(a.strip_samples / a.channels, 1, a.width);
  g.strips = (a.width + g.strip_px - 1) / g.strip_px;
  g.in_rows = a.out_rows + 2 * a.ry;
  g.pad_n = (g.strip_px + 2 * a.rx) * a.channels;
  g.scratch_n = g.in_rows * g.pad_n + g.strip_px * a.channels;
  return g;
}

template <class Acc>
void run_conv2d(const Conv2dArgs& a) {
  const Conv2dGeometry g = conv2d_geometry(a);
  const int C = a.channels;
  const std::size_t in_pixel = sample_bytes(a.in_type) * C;
  const std::size_t out_sample = sample_bytes(a.out_type);
  const LoadFn<Acc> load = loader<Acc>(a.in_type);
  const StoreFn<Acc> store = storer<Acc>(a.out_type);
  const Acc cval = static_cast<Acc>(a.border_value);
  const std::int64_t K = 2 * a.ry + 1, L = 2 * a.rx + 1;
  std::vector<Acc> w(a.taps, a.taps + K * L);
  const std::vector<std::int64_t> same = first_of_same_row(a.rows, g.in_rows);

  tbb::parallel_for(std::int64_t{0}, g.strips, [&](std::int64_t strip) {
    thread_local std::vector<Acc> scratch;
    thread_local std::vector<const Acc*> src;
    if (scratch.size() < static_cast<std::size_t>(g.scratch_n)) scratch.resize(g.scratch_n);
    src.resize(static_cast<std::size_t>(K * L));
    const std::int64_t p0 = strip * g.strip_px;
    const std::int64_t p1 = std::min(a.width, p0 + g.strip_px);
    const std::int64_t n = (p1 - p0) * C;
    Acc* padded = scratch.data();                 // in_rows x pad_n: the strip with rx each side
    Acc* out_row = padded + g.in_rows * g.pad_n;  // n
    const std::int64_t q0 = p0 - a.rx, q1 = p1 + a.rx;
    for (std::int64_t j = 0; j < g.in_rows; ++j)
      if (same[j] == j)
        load_padded<Acc>(a.rows[j], load, in_pixel, a.width, C, a.border, cval, q0, q1,
                         padded + j * g.pad_n);
    // out(y, p) = sum over (i, j), i major: w[i][j] * in(y + i - ry, p + j - rx).
    for (std::int64_t y = 0; y < a.out_rows; ++y) {
      for (std::int64_t i = 0; i < K; ++i) {
        const Acc* base = padded + same[y + i] * g.pad_n;
        for (std::int64_t j = 0; j < L; ++j) src[i * L + j] = base + j * C;
      }
      weighted_sum<Acc>(src.data(), w.data(), K * L, out_row, n);
      store(out_row, a.out + y * a.out_stride + p0 * C * out_sample, n);
    }
  });
}

}  // namespace

void conv2d_band(const Conv2dArgs& args) {
  if (args.f64) {
    run_conv2d<double>(args);
  } else {
    run_conv2d<float>(args);
  }
}

std::size_t conv2d_scratch_bytes(const Conv2dArgs& args) {
  const std::int64_t taps = (2 * args.rx + 1) * (2 * args.ry + 1);
  return static_cast<std::size_t>(conv2d_geometry(args).scratch_n) * (args.f64 ? 8 : 4) +
         static_cast<std::size_t>(taps) * (sizeof(void*) + 8);
}

void separable_band(const SeparableArgs& args) {
  if (args.f64) {
    run_band<double>(args);
  } else {
    run_band<float>(args);
  }
}

std::size_t separable_scratch_bytes(const SeparableArgs& args) {
  return static_cast<std::size_t>(geometry(args).scratch_n) * (args.f64 ? 8 : 4);
}

}  // namespace ooc::kernels::OOC_ISA
