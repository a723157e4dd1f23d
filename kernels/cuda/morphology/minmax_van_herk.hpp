// Van Herk / Gil-Werman running minimum and maximum along one axis for the CUDA kernels
// (minmax.cu), written once as plain host/device code so that the unit test runs this very code
// on the CPU (the build machine has no GPU) against kernels/cpu/morphology/minmax.hpp.
//
// A thread owns a unit: N consecutive outputs of a line (a row along x, a column along y), whose
// windows span blocks t and t + 1 of the line's padded input cut into blocks of N from its start,
// as the CPU cuts it. The thread walks block t from both ends at once (its suffixes, waiting in the
// outputs, and its whole prefix), then block t + 1 from its start (the prefixes, each combined with
// a suffix): about 3 comparisons and 3 loads of the input per output whatever N, and each output
// written twice. The samples are combined in the CPU's order (suffixes from the right keeping the
// later sample on ties, prefixes from the left keeping the earlier, then pick(suffix, prefix)), so
// that even the sign of a zero among equal extremes and which NaN comes out are the CPU's, not
// only the value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "footprint_runs.hpp"
#include "kernels/cpu/morphology/border_constant.hpp"

#if defined(__CUDACC__)
#define OOC_MINMAX_HD __host__ __device__
#else
#define OOC_MINMAX_HD
#endif

namespace ooc::cuda::van_herk {

using kernels::constant_of;  // the constant border in the image's type, as the CPU's

// As kernels/cpu/morphology/minmax.hpp's pick: b replaces a if it is strictly beyond it or NaN; -0
// is below +0.
template <bool Max, class T>
OOC_MINMAX_HD inline T pick(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == a) return std::signbit(b) != Max ? b : a;
  }
  if constexpr (Max)
    return (b > a || b != b) ? b : a;
  else
    return (b < a || b != b) ? b : a;
}

// Along an axis, windows of up to kScanMax samples are scanned per output (window(): N - 1 to
// 2N - 1 comparisons, each output written once, coalesced along x); longer ones run units (~3
// comparisons, 3 loads and 2 stores an output, the x pass's units N samples apart). The one place
// that chooses, for the kernels and their emulation; 5 is an estimate, not measured.
constexpr std::int64_t kScanMax = 5;
OOC_MINMAX_HD constexpr bool by_units(std::int64_t window) {
  return window > kScanMax;
}

// Output i alone (p as for unit()), combined as the CPU's van Herk combines it: the suffix of its
// block from i, then the prefix of the next block up to i + N - 1 (i at a block's start: the
// whole block's prefix). Scanning in another order could pick the other zero of +0/-0 ties.
template <bool Max, class T, class Load>
OOC_MINMAX_HD T window(std::int64_t i, std::int64_t N, const Load& load) {
  const std::int64_t b = i - i % N, e = b + N - 1;  // i's block [b, e]
  T s = load(e);
  for (std::int64_t k = e - 1; k >= i; --k) s = pick<Max>(s, load(k));
  std::int64_t k = i == b ? b : e + 1;
  T g = load(k);
  for (++k; k <= i + N - 1; ++k) g = pick<Max>(g, load(k));
  return pick<Max>(s, g);
}

// Unit t of a line of n outputs of a window of N samples: outputs [tN, min(tN + N, n)), output i
// the extreme of the padded input p(i) .. p(i + N - 1) (p defined on [0, n + N - 1)). load(k)
// reads p(k); put(i, v) writes output i; get(i) reads back what put wrote there (the same thread,
// so plain loads, never the read-only cache).
template <bool Max, class T, class Load, class Put, class Get>
OOC_MINMAX_HD void unit(std::int64_t t, std::int64_t N, std::int64_t n, const Load& load,
                        const Put& put, const Get& get) {
  const std::int64_t b = t * N;                  // block t: [b, b + N), inside p since b < n
  const std::int64_t e = n - b < N ? n - b : N;  // the unit's outputs
  T s = load(b + N - 1), g = load(b);
  if (N - 1 < e) put(b + N - 1, s);
  for (std::int64_t j = 1; j < N; ++j) {
    s = pick<Max>(s, load(b + N - 1 - j));
    g = pick<Max>(g, load(b + j));
    if (N - 1 - j < e) put(b + N - 1 - j, s);
  }
  put(b, pick<Max>(s, g));  // its window is block t: its suffix from b and its whole prefix
  if (e < 2) return;
  T h = load(b + N);  // block t + 1's prefixes
  put(b + 1, pick<Max>(get(b + 1), h));
  for (std::int64_t j = 2; j < e; ++j) {
    h = pick<Max>(h, load(b + N + j - 1));
    put(b + j, pick<Max>(get(b + j), h));
  }
}

// Footprints (a 0/1 mask over the window's rectangle): the CPU (MinMaxFootprintKernel in
// src/ops/morphology/minmax.cpp) runs van Herk along each padded row once per distinct length of
// the mask's row runs and picks, from the pick's identity, each run's windowed extreme, the lengths
// in ascending order and the runs of one length in row-major order. The GPU combines the same
// samples in the same order, so the same bits, one of two ways: a thread computes one output,
// each run's extreme by window() (footprint_output: about 1.5 loads and comparisons a footprint
// sample, no scratch), or, as the CPU, a pass of van Herk per distinct length into scratch and a
// pass picking over that length's runs (two passes over the band a length, whatever its runs'
// samples). The first costs about 0.0003 ns a footprint sample and output from L1, a band pass
// about 0.007 ns a sample from DRAM (estimates for an sm_90 GPU): by lengths from 16 samples a
// distinct length (a disk of radius 25: 2,000 samples, 26 lengths).

using cuda::RowRun;

// The row runs of a rows x cols mask (row-major, 1: a sample of the window) in the CPU's order of
// combination: by length, then row by row.
inline std::vector<RowRun> row_runs(const std::uint8_t* mask, int rows, int cols) {
  std::vector<RowRun> v = cuda::row_runs(mask, rows, cols);
  std::stable_sort(v.begin(), v.end(),
                   [](const RowRun& a, const RowRun& b) { return a.len < b.len; });
  return v;
}

// Whether the GPU takes a footprint by passes per distinct length rather than output by output.
inline bool by_lengths(const std::vector<RowRun>& runs) {
  std::int64_t samples = 0, lengths = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    samples += runs[i].len;
    lengths += i == 0 || runs[i].len != runs[i - 1].len;  // sorted by length
  }
  return samples > 16 * lengths;
}

// The pick's identity: any sample replaces it (a NaN too).
template <bool Max, class T>
OOC_MINMAX_HD inline T identity() {
  if constexpr (std::is_floating_point_v<T>)
    return Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else
    return Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

// The output whose window starts at padded column x: load(k, q) reads window row k's padded
// column q (image column q - the window's left extent, the border rule applied).
template <bool Max, class T, class Load>
OOC_MINMAX_HD T footprint_output(std::int64_t x, const RowRun* runs, int run_count,
                                 const Load& load) {
  T o = identity<Max, T>();
  for (int i = 0; i < run_count; ++i) {
    const RowRun r = runs[i];
    const auto row = [&](std::int64_t q) { return load(r.row, q); };
    o = pick<Max>(o, r.len == 1 ? row(x + r.col) : window<Max, T>(x + r.col, r.len, row));
  }
  return o;
}

}  // namespace ooc::cuda::van_herk
