// The 5 x 5 and 3 x 3 medians by selection networks (Paeth's / Devillard's opt_med25: 99
// compare-exchanges, the median ends on wire 12; opt_med9: 19, on wire 4), run on vectors of
// adjacent output columns at once, for every sample type. A selection network only moves samples,
// so the result is the window's 13th smallest exactly: the value nth_element and scipy pick (for
// floats, +0 and -0 compare equal and either may come out where both sit at the median's rank, as
// with any selection). A NaN in the window gives NaN, as the other rank paths (a NaN poisons the
// comparisons). Checked by the 0-1 principle: all 2^25 (2^9) inputs of 0 and 1 give their majority
// on wire 12 (wire 4).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace ooc::kernels {

// The vectors' width differs between the builds for each instruction set (kernels/cpu/
// rank_network_impl.cpp is compiled once per set): a namespace per width keeps their inline
// functions and templates apart (the same names would otherwise be one definition to the linker).
#if defined(__AVX2__)
inline namespace vec32 {
#else
inline namespace vec16 {
#endif

inline constexpr unsigned char kMedian25[99][2] = {
    {0, 1},   {3, 4},   {2, 4},   {2, 3},   {6, 7},   {5, 7},   {5, 6},   {9, 10},  {8, 10},
    {8, 9},   {12, 13}, {11, 13}, {11, 12}, {15, 16}, {14, 16}, {14, 15}, {18, 19}, {17, 19},
    {17, 18}, {21, 22}, {20, 22}, {20, 21}, {23, 24}, {2, 5},   {3, 6},   {0, 6},   {0, 3},
    {4, 7},   {1, 7},   {1, 4},   {11, 14}, {8, 14},  {8, 11},  {12, 15}, {9, 15},  {9, 12},
    {13, 16}, {10, 16}, {10, 13}, {20, 23}, {17, 23}, {17, 20}, {21, 24}, {18, 24}, {18, 21},
    {19, 22}, {8, 17},  {9, 18},  {0, 18},  {0, 9},   {10, 19}, {1, 19},  {1, 10},  {11, 20},
    {2, 20},  {2, 11},  {12, 21}, {3, 21},  {3, 12},  {13, 22}, {4, 22},  {4, 13},  {14, 23},
    {5, 23},  {5, 14},  {15, 24}, {6, 24},  {6, 15},  {7, 16},  {7, 19},  {13, 21}, {15, 23},
    {7, 13},  {7, 15},  {1, 9},   {3, 11},  {5, 17},  {11, 17}, {9, 17},  {4, 10},  {6, 12},
    {7, 14},  {4, 6},   {4, 7},   {12, 14}, {10, 14}, {6, 7},   {10, 12}, {6, 10},  {6, 17},
    {12, 17}, {7, 17},  {7, 10},  {12, 18}, {7, 12},  {10, 18}, {12, 20}, {10, 20}, {10, 12}};

// opt_med9: a pair {a, b} leaves the smaller on wire a.
inline constexpr unsigned char kMedian9[19][2] = {
    {1, 2}, {4, 5}, {7, 8}, {0, 1}, {3, 4}, {6, 7}, {1, 2}, {4, 5}, {7, 8}, {0, 3},
    {5, 8}, {4, 7}, {3, 6}, {1, 4}, {2, 5}, {4, 7}, {4, 2}, {6, 4}, {4, 2}};

// One register of samples: 32 bytes with AVX2, else 16 (GCC lowers the compare-selects of a
// vector wider than the machine's one lane at a time for floats).
#if defined(__AVX2__)
inline constexpr std::size_t kVecBytes = 32;
#else
inline constexpr std::size_t kVecBytes = 16;
#endif
template <class T>
using Vec32 [[gnu::vector_size(kVecBytes)]] = T;
template <class T>
inline constexpr int kLanes25 = static_cast<int>(kVecBytes / sizeof(T));

// minps/maxps are exactly a < b ? a : b and a > b ? a : b, but GCC lowers the vector select of
// floats to compare-and-blend: ask for them.
template <class V>
[[gnu::always_inline]] inline void exchange(V& a, V& b) {
  using T = std::remove_reference_t<decltype(a[0])>;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) {
    const V lo = (V)_mm256_min_ps((__m256)a, (__m256)b),
            hi = (V)_mm256_max_ps((__m256)a, (__m256)b);
    a = lo, b = hi;
    return;
  } else if constexpr (std::is_same_v<T, double>) {
    const V lo = (V)_mm256_min_pd((__m256d)a, (__m256d)b),
            hi = (V)_mm256_max_pd((__m256d)a, (__m256d)b);
    a = lo, b = hi;
    return;
  }
#elif defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    const V lo = (V)_mm_min_ps((__m128)a, (__m128)b), hi = (V)_mm_max_ps((__m128)a, (__m128)b);
    a = lo, b = hi;
    return;
  } else if constexpr (std::is_same_v<T, double>) {
    const V lo = (V)_mm_min_pd((__m128d)a, (__m128d)b), hi = (V)_mm_max_pd((__m128d)a, (__m128d)b);
    a = lo, b = hi;
    return;
  }
#endif
  const V lo = a < b ? a : b, hi = a < b ? b : a;
  a = lo;
  b = hi;
}

template <int N, class V, std::size_t... I>
[[gnu::always_inline]] inline void median_network(V* v, std::index_sequence<I...>) {
  if constexpr (N == 5)
    (exchange(v[kMedian25[I][0]], v[kMedian25[I][1]]), ...);
  else
    (exchange(v[kMedian9[I][0]], v[kMedian9[I][1]]), ...);
}

// out[x * stride] for x in [x0, x0 + kLanes25<T>): the sample `network` leaves on the wire it
// returns, of the window rows[r][x + j], r < Ny, j < Nx (rows hold at least x0 + kLanes25<T> +
// Nx - 1 samples; Ny * Nx <= kMaxNetworkSamples). A NaN in a lane's window gives NaN there: the
// network's comparisons say nothing about NaN.
template <class T, class Network>
inline void network_lanes(const T* const* rows, int Ny, int Nx, std::int64_t x0, T* out,
                          std::int64_t stride, Network&& network);

// One output row: rows[0..Ny-1] are the window's padded rows (W + Nx - 1 samples each), out[x *
// stride] for x in [0, W). Needs W >= kLanes25<T>: the last vector overlaps the one before it
// instead of reading past the rows.
template <class T, class Network>
void network_row(const T* const* rows, int Ny, int Nx, std::int64_t W, T* out, std::int64_t stride,
                 const Network& network) {
  constexpr int L = kLanes25<T>;
  std::int64_t x = 0;
  for (; x + L <= W; x += L) network_lanes<T>(rows, Ny, Nx, x, out, stride, network);
  if (x < W) network_lanes<T>(rows, Ny, Nx, W - L, out, stride, network);
}

// out[x * stride] for x in [x0, x0 + kLanes25<T>): the N x N median (N = 5 or 3) by its
// hand-made network, unrolled, of the window rows[r][x + j], r, j < N. Inlined with the sizes
// known, the samples are loaded straight into registers (network_lanes' array of
// kMaxNetworkSamples vectors, filled by loops of run-time length and called per vector, took
// twice the network's time on a 3 x 3 u8 median: two 16-byte stores a 32-byte load could not
// forward from).
template <class T, int N>
[[gnu::always_inline]] inline void median_lanes(const T* const* rows, std::int64_t x0, T* out,
                                                std::int64_t stride) {
  static_assert(N == 5 || N == 3);
  using V = Vec32<T>;
  V v[N * N];
#pragma GCC unroll 5
  for (int r = 0; r < N; ++r)
#pragma GCC unroll 5
    for (int j = 0; j < N; ++j) std::memcpy(&v[r * N + j], rows[r] + x0 + j, sizeof(V));
  using M = Vec32<std::conditional_t<sizeof(T) == 8, std::int64_t,
                                     std::conditional_t<sizeof(T) == 4, std::int32_t, T>>>;
  [[maybe_unused]] M numbers = M{} - 1;
  if constexpr (std::is_floating_point_v<T>)
    for (int i = 0; i < N * N; ++i) numbers &= (v[i] == v[i]);
  median_network<N>(v, std::make_index_sequence < N == 5 ? 99 : 19 > {});
  V m = v[N * N / 2];
  if constexpr (std::is_floating_point_v<T>)
    m = numbers != 0 ? m : V{} + std::numeric_limits<T>::quiet_NaN();
  if (stride == 1) {
    std::memcpy(out + x0, &m, sizeof(V));
  } else {
    for (int t = 0; t < kLanes25<T>; ++t) out[(x0 + t) * stride] = m[t];
  }
}

// One output row of an N x N median (N = 5 or 3), as network_row.
template <class T, int N = 5>
void median25_row(const T* const* rows, std::int64_t W, T* out, std::int64_t stride) {
  constexpr int L = kLanes25<T>;
  std::int64_t x = 0;
  for (; x + L <= W; x += L) median_lanes<T, N>(rows, x, out, stride);
  if (x < W) median_lanes<T, N>(rows, W - L, out, stride);
}

// The k-th smallest of n samples (n <= kMaxNetworkSamples) by a network built at run time:
// Batcher's odd-even merge sort on the next power of two, the wires from n on holding +infinity.
// A comparator whose second wire holds infinity does nothing and is dropped; one whose first
// does is a swap, done by renaming the wires; then only the comparators the output wire depends
// on are kept (49 samples: 319 of the sort's 543). Padding wires are never read, so the samples
// need n places. Correct as the sort is, by the 0-1 principle.
inline constexpr int kMaxNetworkSamples = 128;

struct SelectionNetwork {
  std::vector<std::pair<std::uint8_t, std::uint8_t>> pairs;
  int out = 0;  // the wire the k-th smallest ends on
};

inline SelectionNetwork make_selection_network(int n, int k) {
  int P = 1;
  while (P < n) P *= 2;
  std::vector<std::pair<int, int>> sort;
  for (int p = 1; p < P; p *= 2)
    for (int q = p; q >= 1; q /= 2)
      for (int j = q % p; j < P - q; j += 2 * q)
        for (int i = 0; i < std::min(q, P - j - q); ++i)
          if ((i + j) / (2 * p) == (i + j + q) / (2 * p)) sort.emplace_back(i + j, i + j + q);
  std::vector<char> inf(static_cast<std::size_t>(P));
  std::vector<int> phys(static_cast<std::size_t>(P));
  for (int w = 0; w < P; ++w) inf[w] = w >= n, phys[w] = w;
  std::vector<std::pair<int, int>> live;
  for (const auto& [a, b] : sort) {
    if (inf[b]) continue;
    if (inf[a]) {
      std::swap(phys[a], phys[b]);
      std::swap(inf[a], inf[b]);
      continue;
    }
    live.emplace_back(phys[a], phys[b]);
  }
  SelectionNetwork net;
  net.out = phys[k];
  std::vector<char> need(static_cast<std::size_t>(P));
  need[net.out] = 1;
  for (auto it = live.rbegin(); it != live.rend(); ++it)
    if (need[it->first] || need[it->second]) {
      need[it->first] = need[it->second] = 1;
      net.pairs.emplace_back(static_cast<std::uint8_t>(it->first),
                             static_cast<std::uint8_t>(it->second));
    }
  std::reverse(net.pairs.begin(), net.pairs.end());
  return net;
}

template <class T, class Network>
inline void network_lanes(const T* const* rows, int Ny, int Nx, std::int64_t x0, T* out,
                          std::int64_t stride, Network&& network) {
  using V = Vec32<T>;
  V v[kMaxNetworkSamples];
  for (int r = 0; r < Ny; ++r)
    for (int j = 0; j < Nx; ++j) std::memcpy(&v[r * Nx + j], rows[r] + x0 + j, sizeof(V));
  using M = Vec32<std::conditional_t<sizeof(T) == 8, std::int64_t,
                                     std::conditional_t<sizeof(T) == 4, std::int32_t, T>>>;
  [[maybe_unused]] M numbers = M{} - 1;
  if constexpr (std::is_floating_point_v<T>)
    for (int i = 0; i < Ny * Nx; ++i) numbers &= (v[i] == v[i]);
  V m = v[network(v)];
  if constexpr (std::is_floating_point_v<T>)
    m = numbers != 0 ? m : V{} + std::numeric_limits<T>::quiet_NaN();
  if (stride == 1) {
    std::memcpy(out + x0, &m, sizeof(V));
  } else {
    for (int t = 0; t < kLanes25<T>; ++t) out[(x0 + t) * stride] = m[t];
  }
}

// The k-th smallest by `net` (made for Ny * Nx samples) over one output row, as network_row.
template <class T>
void select_row_network(const SelectionNetwork& net, const T* const* rows, int Ny, int Nx,
                        std::int64_t W, T* out, std::int64_t stride) {
  network_row<T>(rows, Ny, Nx, W, out, stride, [&net](auto* v) {
    for (const auto& [a, b] : net.pairs) exchange(v[a], v[b]);
    return net.out;
  });
}

}  // namespace vec32 / vec16
}  // namespace ooc::kernels
