// Running minimum and maximum over a window of L samples before and R after each one, by van
// Herk / Gil-Werman: per block of N = L + R + 1 samples a prefix and a suffix, then one comparison
// per output; about three comparisons a sample whatever N. Exact: these select, never round.
// A NaN in the window gives NaN (as numpy.minimum does), whatever its place: the result does not
// depend on the order the samples are combined in (scipy.ndimage's depends on the NaN's place).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ooc::kernels {

// b replaces a if it is beyond it or NaN; of -0 and +0 the minimum is -0 and the maximum +0 (the
// total order's), so that which zero comes out does not depend on the order the samples are
// combined in, which follows the bands (a NaN's payload still may).
template <bool Max, class T>
inline T pick(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == a) return std::signbit(b) != Max ? b : a;
  }
  if constexpr (Max)
    return (b > a || b != b) ? b : a;
  else
    return (b < a || b != b) ? b : a;
}

// out[i] = pick over p[i .. i + N - 1] for i in [0, n), of samples `stride` apart (channels), with
// scratch g (m = n + N - 1 samples, same stride) for the prefixes; p becomes the suffixes.
// Blocks [k0, k0 + N) in turn, no division per sample (a modulo a sample took most of the
// filter's time); kStride 0: `stride` at run time.
template <bool Max, int kStride, class T>
void running_extreme_blocks(T* p, T* g, T* out, std::int64_t n, std::int64_t N, int stride) {
  const std::int64_t s = kStride > 0 ? kStride : stride, m = n + N - 1;
  for (std::int64_t k0 = 0; k0 < m; k0 += N) {
    const std::int64_t k1 = std::min(m, k0 + N);
    for (std::int64_t c = 0; c < s; ++c) g[k0 * s + c] = p[k0 * s + c];
    for (std::int64_t k = k0 + 1; k < k1; ++k)
      for (std::int64_t c = 0; c < s; ++c)
        g[k * s + c] = pick<Max>(g[(k - 1) * s + c], p[k * s + c]);
    for (std::int64_t k = k1 - 2; k >= k0; --k)
      for (std::int64_t c = 0; c < s; ++c)
        p[k * s + c] = pick<Max>(p[(k + 1) * s + c], p[k * s + c]);
  }
  for (std::int64_t i = 0; i < n * s; ++i) out[i] = pick<Max>(p[i], g[i + (N - 1) * s]);
}
template <bool Max, class T>
void running_extreme(T* p, T* g, T* out, std::int64_t n, std::int64_t N, int stride) {
  if (stride == 1)
    running_extreme_blocks<Max, 1>(p, g, out, n, N, 1);
  else
    running_extreme_blocks<Max, 0>(p, g, out, n, N, stride);
}

// The same down a stack of m rows of `width` samples (the rows' own pointers), row by row: G
// gets the prefixes, the rows P the suffixes (in place), out row i = pick(P[i], G[i + N - 1]).
template <bool Max, class T>
void prefix_rows(T* const* P, T* const* G, std::int64_t k0, std::int64_t k1, std::int64_t N,
                 std::int64_t width) {
  for (std::int64_t k = k0; k < k1; ++k) {
    if (k % N == 0) {
      std::memcpy(G[k], P[k], static_cast<std::size_t>(width) * sizeof(T));
    } else {
      const T* a = G[k - 1];
      const T* b = P[k];
      T* o = G[k];
      for (std::int64_t x = 0; x < width; ++x) o[x] = pick<Max>(a[x], b[x]);
    }
  }
}
template <bool Max, class T>
void suffix_rows(T* const* P, std::int64_t k0, std::int64_t k1, std::int64_t N, std::int64_t m,
                 std::int64_t width) {
  for (std::int64_t k = k1 - 1; k >= k0; --k) {
    if (k == m - 1 || (k + 1) % N == 0) continue;
    const T* a = P[k + 1];
    T* o = P[k];
    for (std::int64_t x = 0; x < width; ++x) o[x] = pick<Max>(a[x], o[x]);
  }
}

}  // namespace ooc::kernels
