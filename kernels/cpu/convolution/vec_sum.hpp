// The vectorized weighted sums of the CPU convolutions (separable_impl.cpp's row and column
// passes, the 2-D direct sum, and the masked kernels of kernels/cpu/masked): one rounding per tap
// in tap order, the same in vector code and scalar tails, so that a sample's result never depends
// on where a strip, a chunk or a band starts. Included inside an OOC_ISA namespace's .cpp only.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#ifndef OOC_ISA
#error "OOC_ISA must name the instruction-set namespace"
#endif

namespace ooc::kernels::OOC_ISA::vec {
namespace {

// dst[i] = sum_k w[k] * src[k][i], k ascending for every i (so results never depend on where a
// strip or a band starts). GCC vector extensions rather than auto-vectorization: the compiler
// would interchange these loops and run the taps in scalar code; here a block of kUnroll vectors
// stays in registers across all taps. The same source builds for SSE2 (pairs of 16-byte ops).
typedef float F32x8 __attribute__((vector_size(32)));
typedef double F64x4 __attribute__((vector_size(32)));
template <class Acc>
using Vec32 = std::conditional_t<std::is_same_v<Acc, float>, F32x8, F64x4>;
// The same vectors at any element's address, for loads and stores through a plain pointer. Not
// memcpy into a local: that takes the accumulator's address, and GCC then keeps all of them on
// the stack and copies each out 16 bytes at a time (most of the row pass's time, in perf).
typedef float F32x8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef double F64x4u __attribute__((vector_size(32), aligned(8), may_alias));

F32x8 load_vec(const float* p) {
  return *reinterpret_cast<const F32x8u*>(p);
}
F64x4 load_vec(const double* p) {
  return *reinterpret_cast<const F64x4u*>(p);
}
void store_vec(float* p, F32x8 v) {
  *reinterpret_cast<F32x8u*>(p) = v;
}
void store_vec(double* p, F64x4 v) {
  *reinterpret_cast<F64x4u*>(p) = v;
}

// Columns [begin, n) only, where given.
template <class Acc>
void weighted_sum(const Acc* const* src, const Acc* w, std::int64_t taps, Acc* dst, std::int64_t n,
                  std::int64_t begin = 0) {
  using V = Vec32<Acc>;
  constexpr int kLanes = 32 / sizeof(Acc);
  constexpr int kUnroll = 8;  // 8 independent accumulators cover the FMA latency
  std::int64_t i = begin;
  for (; i + kUnroll * kLanes <= n; i += kUnroll * kLanes) {
    V acc[kUnroll];
    const V w0 = V{} + w[0];
    for (int u = 0; u < kUnroll; ++u) acc[u] = w0 * load_vec(src[0] + i + u * kLanes);
    for (std::int64_t k = 1; k < taps; ++k) {
      const V wk = V{} + w[k];
      const Acc* s = src[k] + i;
      for (int u = 0; u < kUnroll; ++u) acc[u] += wk * load_vec(s + u * kLanes);
    }
    for (int u = 0; u < kUnroll; ++u) store_vec(dst + i + u * kLanes, acc[u]);
  }
  for (; i + kLanes <= n; i += kLanes) {
    V acc = (V{} + w[0]) * load_vec(src[0] + i);
    for (std::int64_t k = 1; k < taps; ++k) acc += (V{} + w[k]) * load_vec(src[k] + i);
    store_vec(dst + i, acc);
  }
  // The vectors' rounding, one FMA a tap: GCC compiles the contracted double sum of this scalar
  // loop otherwise (a last bit apart from the vectors' on 1 sample in 3 with 7 taps), and a
  // sample's result must not depend on whether a tile's or a strip's tail computed it.
  for (; i < n; ++i) {
    Acc a = w[0] * src[0][i];
    for (std::int64_t k = 1; k < taps; ++k) {
#if defined(__FMA__)
      a = std::fma(w[k], src[k][i], a);
#else
      a += w[k] * src[k][i];
#endif
    }
    dst[i] = a;
  }
}

// The column pass's sum for kColumnRows output rows at once: dst[m] = sum_t w[t] src[m + t],
// t ascending for every output (the same roundings as weighted_sum row by row). Each source row
// is loaded once for all the outputs it feeds, so the pass reads its rows from the cache
// kColumnRows times less often. Needs taps >= kColumnRows.
constexpr int kColumnRows = 6;

template <class Acc>
void column_sums(const Acc* const* src, const Acc* w, std::int64_t taps, Acc* const* dst,
                 std::int64_t n) {
  using V = Vec32<Acc>;
  constexpr int kLanes = 32 / sizeof(Acc);
  constexpr int M = kColumnRows,
                U = 2;  // M x U accumulators, U loaded vectors, a tap: 15 registers
  // Row k feeds output m with tap t = k - m. Every "+=" below must stay one fused multiply-add,
  // as in weighted_sum: no product is shared between statements.
  auto rows_at = [&](std::int64_t k, std::int64_t i, V(&v)[U]) {
    for (int u = 0; u < U; ++u) v[u] = load_vec(src[k] + i + u * kLanes);
  };
  std::int64_t i = 0;
  for (; i + U * kLanes <= n; i += U * kLanes) {
    V acc[M][U], v[U];
    for (int k = 0; k < M; ++k) {  // row k: the first tap of output k, later taps of those above
      rows_at(k, i, v);
      for (int m = 0; m < k; ++m) {
        const V wt = V{} + w[k - m];
        for (int u = 0; u < U; ++u) acc[m][u] += wt * v[u];
      }
      const V w0 = V{} + w[0];
      for (int u = 0; u < U; ++u) acc[k][u] = w0 * v[u];
    }
    for (std::int64_t k = M; k < taps; ++k) {  // the hot loop: a tap of every output
      rows_at(k, i, v);
      for (int m = 0; m < M; ++m) {
        const V wt = V{} + w[k - m];
        for (int u = 0; u < U; ++u) acc[m][u] += wt * v[u];
      }
    }
    for (std::int64_t k = taps; k < taps + M - 1; ++k) {  // the last taps of the lower outputs
      rows_at(k, i, v);
      for (int m = static_cast<int>(k - taps) + 1; m < M; ++m) {
        const V wt = V{} + w[k - m];
        for (int u = 0; u < U; ++u) acc[m][u] += wt * v[u];
      }
    }
    for (int m = 0; m < M; ++m)
      for (int u = 0; u < U; ++u) store_vec(dst[m] + i + u * kLanes, acc[m][u]);
  }
  if (i < n)
    for (int m = 0; m < M; ++m) weighted_sum<Acc>(src + m, w, taps, dst[m], n, i);
}

// Samples to the accumulator's type and back, as every CPU convolution converts them.
template <class T, class Acc>
void load_samples(const std::byte* src, Acc* dst, std::int64_t n) {
  const T* s = reinterpret_cast<const T*>(src);
  for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<Acc>(s[i]);
}

// Integers are rounded to nearest and saturated; NaN becomes 0 (there is no integer NaN).
template <class U, class Acc>
void store_samples(const Acc* src, std::byte* dst, std::int64_t n) {
  U* d = reinterpret_cast<U*>(dst);
  if constexpr (std::is_floating_point_v<U>) {
    for (std::int64_t i = 0; i < n; ++i) d[i] = static_cast<U>(src[i]);
  } else {
    // 32-bit limits are not exact in float: clamp in double for them.
    using W = std::conditional_t<(sizeof(U) >= 4), double, Acc>;
    constexpr W lo = static_cast<W>(std::numeric_limits<U>::lowest());
    constexpr W hi = static_cast<W>(std::numeric_limits<U>::max());
    for (std::int64_t i = 0; i < n; ++i) {
      W v = static_cast<W>(src[i]);
      v = v == v ? v : W(0);
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      d[i] = static_cast<U>(std::nearbyint(v));
    }
  }
}

}  // namespace
}  // namespace ooc::kernels::OOC_ISA::vec
