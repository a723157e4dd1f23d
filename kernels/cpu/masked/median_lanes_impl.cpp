// The masked 3 x 3 and 5 x 5 medians on vectors of adjacent output columns (masked.hpp), compiled
// once per instruction set (CMakeLists.txt: OOC_ISA names the namespace; select.cpp picks one at
// run time). Each lane's holes become -inf and +inf in turn (-inf first): ceil(h / 2) of h holes
// are -inf, which puts the network's median wire on the valid samples' median, the lower middle
// of an even count (n = N^2 - h valid samples: wire (N^2 - 1) / 2 - ceil(h / 2) of them is
// (n - 1) / 2 rounded down). Then the unmasked median network
// (kernels/cpu/morphology/rank_network.hpp) gives the masked median exactly, since it only moves
// samples, and a window without holes gives the unmasked filter's sample.
#include <algorithm>
#include <cstdint>
#include <cstring>
#if defined(__AVX__)
#include <immintrin.h>
#endif
#include <limits>
#include <utility>

#include "kernels/cpu/morphology/rank_network.hpp"

#ifndef OOC_ISA
#error "OOC_ISA must name the instruction-set namespace"
#endif

namespace ooc::kernels::OOC_ISA {

namespace {

using V = kernels::Vec32<float>;
constexpr int kL = kernels::kLanes25<float>;
using I [[gnu::vector_size(kL * 4)]] = std::int32_t;
using B [[gnu::vector_size(kL)]] = std::uint8_t;
typedef float Vu __attribute__((vector_size(kL * 4), aligned(4), may_alias));

template <int N>
void lanes(const float* const* rows, const std::uint8_t* const* holes, float* out) {
  const V lo = V{} - std::numeric_limits<float>::infinity();
  const V hi = V{} + std::numeric_limits<float>::infinity();
  I seen{};  // holes so far in each lane's window, in wire order
  V v[N * N];
  for (int i = 0; i < N; ++i) {
    std::uint8_t any = 0;  // a hole in this row of any lane's window
    for (int q = 0; q < kL + N - 1; ++q) any |= holes[i][q];
    if (!any) {
      for (int j = 0; j < N; ++j) v[i * N + j] = *reinterpret_cast<const Vu*>(rows[i] + j);
      continue;
    }
    for (int j = 0; j < N; ++j) {
      B b;
      std::memcpy(&b, holes[i] + j, sizeof b);
      const I h = __builtin_convertvector(b, I) != 0;  // -1 on a hole
      const V x = *reinterpret_cast<const Vu*>(rows[i] + j);
      const V sub = (seen & 1) == 0 ? lo : hi;
      v[i * N + j] = h ? sub : x;
      seen -= h;
    }
  }
  kernels::median_network<N>(v, std::make_index_sequence < N == 5 ? 99 : 19 > {});
  *reinterpret_cast<Vu*>(out) = v[N == 5 ? 12 : 4];
}

// The hole test of a vector of samples: -1 where NaN, or (unless NanOnly) equal to nd.
template <bool NanOnly>
[[gnu::always_inline]] inline I holes_of(V x, V nd) {
  if constexpr (NanOnly) {
    return x != x;
  } else {
#if defined(__AVX__)
    return (I)_mm256_cmp_ps((__m256)x, (__m256)nd, _CMP_EQ_UQ);  // equal, or NaN: one compare
#else
    return (x != x) | (x == nd);
#endif
  }
}

// Outputs [x, x + kL) of one row: every window's samples loaded once, their holes found from the
// values; a window without holes goes through the network as the unmasked filter's does (the
// same sample), one with holes as lanes() substitutes them (-inf, +inf in turn, wire order).
template <int N, bool NanOnly>
[[gnu::always_inline]] inline void row_lanes(const float* const* rows,
                                             const std::uint8_t* const* bits, std::int64_t x, V nd,
                                             V fill, float* out) {
  constexpr int h = N / 2;
  V v[N * N];
  // The window's columns x - h .. x + kL - 1 + h in each row's hole bits: none, and the network
  // alone gives the unmasked filter's sample.
  std::uint64_t holes = 0;
  const std::int64_t c = x - h;
  for (int i = 0; i < N; ++i) {
    std::uint64_t word;
    std::memcpy(&word, bits[i] + c / 8, sizeof word);
    holes |= word >> (c % 8);
  }
  if ((holes & ((std::uint64_t{1} << (kL + 2 * h)) - 1)) == 0) {
#pragma GCC unroll 5
    for (int i = 0; i < N; ++i)
#pragma GCC unroll 5
      for (int j = 0; j < N; ++j) v[i * N + j] = *reinterpret_cast<const Vu*>(rows[i] + x - h + j);
    kernels::median_network<N>(v, std::make_index_sequence < N == 5 ? 99 : 19 > {});
    *reinterpret_cast<Vu*>(out + x) = v[N * N / 2];
    return;
  }
  I hm[N * N];
  I any{};
#pragma GCC unroll 5
  for (int i = 0; i < N; ++i)
#pragma GCC unroll 5
    for (int j = 0; j < N; ++j) {
      v[i * N + j] = *reinterpret_cast<const Vu*>(rows[i] + x - h + j);
      hm[i * N + j] = holes_of<NanOnly>(v[i * N + j], nd);
      any |= hm[i * N + j];
    }
  bool clean = true;
  for (int l = 0; l < kL; ++l) clean = clean && any[l] == 0;
  if (clean) {
    kernels::median_network<N>(v, std::make_index_sequence < N == 5 ? 99 : 19 > {});
    *reinterpret_cast<Vu*>(out + x) = v[N * N / 2];
    return;
  }
  const I own = hm[N * N / 2];
  const V lo = V{} - std::numeric_limits<float>::infinity();
  const V hi = V{} + std::numeric_limits<float>::infinity();
  I seen{};
#pragma GCC unroll 25
  for (int k = 0; k < N * N; ++k) {
    v[k] = hm[k] ? ((seen & 1) == 0 ? lo : hi) : v[k];
    seen -= hm[k];
  }
  kernels::median_network<N>(v, std::make_index_sequence < N == 5 ? 99 : 19 > {});
  *reinterpret_cast<Vu*>(out + x) = own ? fill : v[N * N / 2];
}

template <int N, bool NanOnly>
void row(const float* const* rows, const std::uint8_t* const* bits, std::int64_t x0,
         std::int64_t x1, float nd, float fill, float* out) {
  const V ndv = V{} + nd, fv = V{} + fill;
  std::int64_t x = x0;
  for (; x + kL <= x1; x += kL) row_lanes<N, NanOnly>(rows, bits, x, ndv, fv, out);
  if (x < x1) row_lanes<N, NanOnly>(rows, bits, x1 - kL, ndv, fv, out);  // overlaps: the same
}

template <int N>
void windows(const float* w, std::int64_t count, float* out) {
  V v[N * N];
  for (int k = 0; k < N * N; ++k)
    for (int l = 0; l < kL; ++l) v[k][l] = w[std::min<std::int64_t>(l, count - 1) * N * N + k];
  kernels::median_network<N>(v, std::make_index_sequence < N == 5 ? 99 : 19 > {});
  for (std::int64_t l = 0; l < count; ++l) out[l] = v[N * N / 2][l];
}

}  // namespace

void masked_median_windows_f32(int n, const float* w, std::int64_t count, float* out) {
  if (n == 5)
    windows<5>(w, count, out);
  else
    windows<3>(w, count, out);
}

void masked_median_row_f32(int n, const float* const* rows, const std::uint8_t* const* bits,
                           std::int64_t x0, std::int64_t x1, bool nan_only, float nd, float fill,
                           float* out) {
  if (n == 5)
    nan_only ? row<5, true>(rows, bits, x0, x1, nd, fill, out)
             : row<5, false>(rows, bits, x0, x1, nd, fill, out);
  else
    nan_only ? row<3, true>(rows, bits, x0, x1, nd, fill, out)
             : row<3, false>(rows, bits, x0, x1, nd, fill, out);
}

void masked_hole_bits_f32(const float* row, std::int64_t w, bool nan_only, float nd,
                          std::uint8_t* bits) {
  std::int64_t x = 0;
#if defined(__AVX__)
  const __m256 ndv = _mm256_set1_ps(nd);
  for (; x + 8 <= w; x += 8) {
    const __m256 v = _mm256_loadu_ps(row + x);
    const __m256 h =
        nan_only ? _mm256_cmp_ps(v, v, _CMP_UNORD_Q) : _mm256_cmp_ps(v, ndv, _CMP_EQ_UQ);
    bits[x / 8] = static_cast<std::uint8_t>(_mm256_movemask_ps(h));
  }
#endif
  std::fill(bits + x / 8, bits + w / 8 + 16, std::uint8_t(0));
  for (; x < w; ++x) {
    const float v = row[x];
    if (v != v || (!nan_only && v == nd)) bits[x / 8] |= static_cast<std::uint8_t>(1u << (x % 8));
  }
}

std::int64_t masked_median_lanes() {
  return kernels::kLanes25<float>;
}

void masked_median_f32(int n, const float* const* rows, const std::uint8_t* const* holes,
                       float* out) {
  if (n == 5)
    lanes<5>(rows, holes, out);
  else
    lanes<3>(rows, holes, out);
}

}  // namespace ooc::kernels::OOC_ISA
