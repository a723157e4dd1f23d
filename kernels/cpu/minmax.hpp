// Running minimum and maximum over a window of L samples before and R after each one, by van
// Herk / Gil-Werman: per block of N = L + R + 1 samples a prefix and a suffix, then one comparison
// per output; about three comparisons a sample whatever N. Exact: these select, never round.
// A NaN in the window gives NaN (as numpy.minimum does), whatever its place: the result does not
// depend on the order the samples are combined in (scipy.ndimage's depends on the NaN's place).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ooc::kernels {

template <bool Max, class T>
inline T pick(T a, T b) {
  if constexpr (Max)
    return (b > a || b != b) ? b : a;
  else
    return (b < a || b != b) ? b : a;
}

// out[i] = pick over p[i .. i + N - 1] for i in [0, n), of samples `stride` apart (channels), with
// scratch g (m = n + N - 1 samples, same stride) for the prefixes; p becomes the suffixes.
template <bool Max, class T>
void running_extreme(T* p, T* g, T* out, std::int64_t n, std::int64_t N, int stride) {
  const std::int64_t m = n + N - 1;
  for (std::int64_t k = 0; k < m; ++k)
    for (int c = 0; c < stride; ++c)
      g[k * stride + c] =
          k % N == 0 ? p[k * stride + c] : pick<Max>(g[(k - 1) * stride + c], p[k * stride + c]);
  for (std::int64_t k = m - 2; k >= 0; --k)
    if ((k + 1) % N != 0)
      for (int c = 0; c < stride; ++c)
        p[k * stride + c] = pick<Max>(p[(k + 1) * stride + c], p[k * stride + c]);
  for (std::int64_t i = 0; i < n; ++i)
    for (int c = 0; c < stride; ++c)
      out[i * stride + c] = pick<Max>(p[i * stride + c], g[(i + N - 1) * stride + c]);
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
