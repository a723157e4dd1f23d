// The vectorized transforms shared by the CPU's FFT convolutions (the 2-D one of fft_conv_impl.cpp
// and the separable one of fft_separable_impl.cpp): KissFFT's C++ template on lanes of 32 bytes,
// the lane transposes, and loading and storing lines through the border rule and the sample
// types. Included only by files compiled once per instruction set (OOC_ISA names the namespace);
// everything here has internal linkage, so each such file has its own copy, built for its ISA.
//
// The transforms run on lanes of independent lines at once: KissFFT's C++ template is
// instantiated on a vector of 32 bytes (8 floats, 4 doubles) instead of a scalar, so each of its
// complex butterflies does the same arithmetic as the scalar library on every lane with one
// vector instruction an operation (the C KissFFT's USE_SIMD does the same with SSE). Each lane's
// arithmetic is the one of its line whatever the other lanes hold, so results stay independent of
// which lines share a transform.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>
#include <utility>
#include <vector>

#include "fft_backend.hpp"
#include "ooc/border.hpp"

#if !defined(OOC_WITH_FFTW)
#include <kissfft/kissfft.hh>
#endif

#ifndef OOC_ISA
#error "OOC_ISA must name the instruction-set namespace"
#endif

namespace ooc::kernels::OOC_ISA {
namespace {

// 32 bytes of lanes: what one AVX register holds (two SSE registers in the baseline build).
template <class T>
struct Raw;
template <>
struct Raw<float> {
  using type = float __attribute__((vector_size(32)));
};
template <>
struct Raw<double> {
  using type = double __attribute__((vector_size(32)));
};

// The scalar type KissFFT is instantiated on: lanes with the arithmetic std::complex's generic
// template needs. Built from any arithmetic value by broadcasting it (kissfft.hh writes
// scalar_t(0.5) and scalar_t(-1)).
template <class T>
struct Vec {
  using R = typename Raw<T>::type;
  static constexpr int lanes = 32 / sizeof(T);
  R v;
  Vec() : v{} {}
  explicit Vec(R r) : v(r) {}
  template <class S, std::enable_if_t<std::is_arithmetic_v<S>, int> = 0>
  Vec(S s) : v(R{} + static_cast<T>(s)) {}
  friend Vec operator+(Vec a, Vec b) { return Vec(a.v + b.v); }
  friend Vec operator-(Vec a, Vec b) { return Vec(a.v - b.v); }
  friend Vec operator*(Vec a, Vec b) { return Vec(a.v * b.v); }
  friend Vec operator-(Vec a) { return Vec(-a.v); }
  Vec& operator+=(Vec b) { return v += b.v, *this; }
  Vec& operator-=(Vec b) { return v -= b.v, *this; }
  Vec& operator*=(Vec b) { return v *= b.v, *this; }
};

}  // namespace

}  // namespace ooc::kernels::OOC_ISA

// KissFFT's constructor computes its twiddles with std::acos and std::exp of the scalar type,
// which a vector does not have; this specialization of that one member computes them in double
// and broadcasts them, and factors the size as kissfft.hh does (4s first, then 2, 3, 5, ...).
// The transform and the butterflies are the library's.
#define OOC_KISSFFT_LANES_CTOR(T)                                                             \
  template <>                                                                                 \
  kissfft<ooc::kernels::OOC_ISA::Vec<T>>::kissfft(const std::size_t nfft, const bool inverse) \
      : _nfft(nfft), _inverse(inverse) {                                                      \
    _twiddles.resize(nfft);                                                                   \
    const double phinc = (inverse ? 2 : -2) * std::numbers::pi / double(nfft);                \
    for (std::size_t i = 0; i < nfft; ++i)                                                    \
      _twiddles[i] = cpx_t(std::cos(double(i) * phinc), std::sin(double(i) * phinc));         \
    std::size_t n = nfft, p = 4;                                                              \
    do {                                                                                      \
      while (n % p) {                                                                         \
        p = p == 4 ? 2 : p == 2 ? 3 : p + 2;                                                  \
        if (p * p > n) p = n;                                                                 \
      }                                                                                       \
      n /= p;                                                                                 \
      _stageRadix.push_back(p);                                                               \
      _stageRemainder.push_back(n);                                                           \
    } while (n > 1);                                                                          \
  }
#if !defined(OOC_WITH_FFTW)
OOC_KISSFFT_LANES_CTOR(float)
OOC_KISSFFT_LANES_CTOR(double)
#endif
#undef OOC_KISSFFT_LANES_CTOR

namespace ooc::kernels::OOC_ISA {
namespace {

template <class T>
using VC = std::complex<Vec<T>>;

// Lanes transforms of n points: element k of lane l is (in[k].real()[l], in[k].imag()[l]).
template <class T>
class Lanes {
 public:
  Lanes(std::size_t n, bool inverse)
#if defined(OOC_WITH_FFTW)
      : fft_(n, inverse, Vec<T>::lanes) {
  }
  void run(const VC<T>* in, VC<T>* out) const {
    fft_.run(reinterpret_cast<const T*>(in), reinterpret_cast<T*>(out));
  }

 private:
  FftLanes<T> fft_;
#else
      : fft_(n, inverse) {
  }
  void run(const VC<T>* in, VC<T>* out) const {
    fft_.transform(in, out);
  }

 private:
  kissfft<Vec<T>> fft_;
#endif
};

// Real and imaginary parts of the lanes of a run of VC, as T: lane l of element q is at
// [2 W q + l] (real) and [2 W q + W + l] (imaginary).
template <class T>
T* re(VC<T>* p) {
  return reinterpret_cast<T*>(p);
}
template <class T>
T* im(VC<T>* p) {
  return reinterpret_cast<T*>(p) + Vec<T>::lanes;
}

// Lanes (a0, b0, a1, b1, ...) of the first (lo) or second (hi) halves of a and b.
template <class R, int W, std::size_t... I>
R interleave_lo(R a, R b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, ((I % 2) ? W + I / 2 : I / 2)...);
}
template <class R, int W, std::size_t... I>
R interleave_hi(R a, R b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, ((I % 2) ? W + W / 2 + I / 2 : W / 2 + I / 2)...);
}

// The W x W matrix of lanes x[r][c] transposed: log2(W) rounds of interleaving row i with row
// i + W / 2 (a perfect shuffle of the rows' lanes each round).
template <class T>
void transpose_lanes(typename Vec<T>::R* x) {
  constexpr int W = Vec<T>::lanes;
  using R = typename Vec<T>::R;
  const auto seq = std::make_index_sequence<W>();
  for (int round = 1; round < W; round *= 2) {
    R y[W];
    for (int i = 0; i < W / 2; ++i) {
      y[2 * i] = interleave_lo<R, W>(x[i], x[i + W / 2], seq);
      y[2 * i + 1] = interleave_hi<R, W>(x[i], x[i + W / 2], seq);
    }
    for (int i = 0; i < W; ++i) x[i] = y[i];
  }
}

// dst[c * ds] lane r = src[r * ss] lane c, for W x W lanes, real and imaginary parts.
template <class T>
void transpose(const VC<T>* src, std::int64_t ss, VC<T>* dst, std::int64_t ds) {
  constexpr int W = Vec<T>::lanes;
  typename Vec<T>::R a[W], b[W];
  for (int r = 0; r < W; ++r) a[r] = src[r * ss].real().v, b[r] = src[r * ss].imag().v;
  transpose_lanes<T>(a);
  transpose_lanes<T>(b);
  for (int c = 0; c < W; ++c) dst[c * ds] = VC<T>(Vec<T>(a[c]), Vec<T>(b[c]));
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// Samples m of channel c of a row from column x0 on, through the border rule along x, into dst.
template <class S, class Acc>
void load_line(const std::byte* row, std::int64_t width, int C, int c, std::int64_t x0,
               std::int64_t m, BorderMode border, Acc cval, Acc* dst) {
  if (row == nullptr) {
    std::fill(dst, dst + m, cval);
    return;
  }
  const S* s = reinterpret_cast<const S*>(row) + c;
  const std::int64_t in0 = std::clamp<std::int64_t>(-x0, 0, m);
  const std::int64_t in1 = std::clamp<std::int64_t>(width - x0, in0, m);
  auto edge = [&](std::int64_t j) {
    const std::int64_t x = map_border(x0 + j, width, border);
    dst[j] = x < 0 ? cval : static_cast<Acc>(s[x * C]);
  };
  for (std::int64_t j = 0; j < in0; ++j) edge(j);
  const S* si = s + (x0 + in0) * C;
  if (C == 1) {  // the common case, in vectors
    for (std::int64_t j = in0; j < in1; ++j) dst[j] = static_cast<Acc>(si[j - in0]);
  } else {
    for (std::int64_t j = in0; j < in1; ++j) dst[j] = static_cast<Acc>(si[(j - in0) * C]);
  }
  for (std::int64_t j = in1; j < m; ++j) edge(j);
}

// n values of src to channel c of an output row from pixel x on, as the direct kernels store
// them: integers rounded to nearest even and saturated, NaN as 0.
template <class U, class Acc>
void store_line(const Acc* src, std::byte* row, int C, int c, std::int64_t x, std::int64_t n) {
  U* d = reinterpret_cast<U*>(row) + x * C + c;
  if constexpr (std::is_floating_point_v<U>) {
    if (C == 1) {
      for (std::int64_t i = 0; i < n; ++i) d[i] = static_cast<U>(src[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) d[i * C] = static_cast<U>(src[i]);
    }
  } else {
    using Wd = std::conditional_t<(sizeof(U) >= 4), double, Acc>;
    constexpr Wd lo = static_cast<Wd>(std::numeric_limits<U>::lowest());
    constexpr Wd hi = static_cast<Wd>(std::numeric_limits<U>::max());
    for (std::int64_t i = 0; i < n; ++i) {
      Wd v = static_cast<Wd>(src[i]);
      v = v == v ? v : Wd(0);
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      d[i * C] = static_cast<U>(std::nearbyint(v));
    }
  }
}

}  // namespace
}  // namespace ooc::kernels::OOC_ISA
