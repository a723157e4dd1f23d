// The engine of the CPU's overlap-save FFT convolution (fft_conv.hpp). This file is compiled once
// per instruction set (CMakeLists.txt: OOC_ISA names the namespace); fft_conv.cpp picks one at
// run time.
//
// The transforms run on lanes of independent lines at once: KissFFT's C++ template is
// instantiated on a vector of 32 bytes (8 floats, 4 doubles) instead of a scalar, so each of its
// complex butterflies does the same arithmetic as the scalar library on every lane with one
// vector instruction an operation (the C KissFFT's USE_SIMD does the same with SSE). Columns are
// transformed in lanes of adjacent columns, rows in lanes of adjacent rows; an 8 x 8 transpose
// between the two keeps every access contiguous. Each lane's arithmetic is the one of its line
// whatever the other lanes hold, so results stay independent of the band and thread count.
//
// Two real tiles share one complex transform (one as the real part, the other as the imaginary
// part): the kernel is real, so the product with its spectrum keeps them apart. Which tiles share
// is fixed by the tile grid (consecutive tiles and channels of one tile row), never by the band.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>
#include <utility>

#include "fft_backend.hpp"
#include "fft_conv.hpp"
#include "ooc/detail/sample_type.hpp"

#if !defined(OOC_WITH_FFTW)
#include <kissfft/kissfft.hh>
#endif

#ifndef OOC_ISA
#error "OOC_ISA must name the instruction-set namespace"
#endif

namespace ooc::cpu::OOC_ISA {
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

}  // namespace ooc::cpu::OOC_ISA

// KissFFT's constructor computes its twiddles with std::acos and std::exp of the scalar type,
// which a vector does not have; this specialization of that one member computes them in double
// and broadcasts them, and factors the size as kissfft.hh does (4s first, then 2, 3, 5, ...).
// The transform and the butterflies are the library's.
#define OOC_KISSFFT_LANES_CTOR(T)                                                         \
  template <>                                                                             \
  kissfft<ooc::cpu::OOC_ISA::Vec<T>>::kissfft(const std::size_t nfft, const bool inverse) \
      : _nfft(nfft), _inverse(inverse) {                                                  \
    _twiddles.resize(nfft);                                                               \
    const double phinc = (inverse ? 2 : -2) * std::numbers::pi / double(nfft);            \
    for (std::size_t i = 0; i < nfft; ++i)                                                \
      _twiddles[i] = cpx_t(std::cos(double(i) * phinc), std::sin(double(i) * phinc));     \
    std::size_t n = nfft, p = 4;                                                          \
    do {                                                                                  \
      while (n % p) {                                                                     \
        p = p == 4 ? 2 : p == 2 ? 3 : p + 2;                                              \
        if (p * p > n) p = n;                                                             \
      }                                                                                   \
      n /= p;                                                                             \
      _stageRadix.push_back(p);                                                           \
      _stageRemainder.push_back(n);                                                       \
    } while (n > 1);                                                                      \
  }
#if !defined(OOC_WITH_FFTW)
OOC_KISSFFT_LANES_CTOR(float)
OOC_KISSFFT_LANES_CTOR(double)
#endif
#undef OOC_KISSFFT_LANES_CTOR

namespace ooc::cpu::OOC_ISA {
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

template <class T>
class Engine final : public FftConv2d::Impl {
  static constexpr int W = Vec<T>::lanes;

 public:
  Engine(const std::vector<double>& taps, std::int64_t K, std::int64_t L, const FftTiling& t)
      : K_(K),
        L_(L),
        t_(t),
        row_fwd_(t.m, false),
        row_inv_(t.m, true),
        col_fwd_(t.n, false),
        col_inv_(t.n, true) {
    // The kernel's spectrum, in double whatever T, scaled by 1 / (n m) (the inverse's factor),
    // laid out as the row pass leaves the tile: lanes of W rows, spec_[(i / W) m + j] lane i % W.
    const std::int64_t n = t.n, m = t.m;
    std::vector<std::complex<double>> a(static_cast<std::size_t>(n * m)), b(a.size());
    for (std::int64_t i = 0; i < K; ++i)
      for (std::int64_t j = 0; j < L; ++j) a[i * m + j] = taps[i * L + j];
    Fft1d<double> rows(m, false, 1), cols(n, false, m);
    for (std::int64_t i = 0; i < n; ++i) rows.run(a.data() + i * m, b.data() + i * m);
    spec_.resize(static_cast<std::size_t>(n * m / W));
    std::vector<std::complex<double>> col(static_cast<std::size_t>(n));
    const double scale = 1.0 / (double(n) * double(m));
    for (std::int64_t j = 0; j < m; ++j) {
      cols.run(b.data() + j, col.data());
      for (std::int64_t i = 0; i < n; ++i) {
        VC<T>* s = &spec_[(i / W) * m + j];
        re<T>(s)[i % W] = static_cast<T>(col[i].real() * scale);
        im<T>(s)[i % W] = static_cast<T>(col[i].imag() * scale);
      }
    }
  }

  void band(const FftConvArgs& a) const override {
    const std::int64_t h = t_.h, w = t_.w;
    const std::int64_t first = floor_div(a.y0, h), last = floor_div(a.y0 + a.out_rows - 1, h);
    const std::int64_t across = (a.width + w - 1) / w;
    const std::int64_t planes = across * a.channels, pairs = (planes + 1) / 2;
    const std::int64_t items = (last - first + 1) * pairs;
    const auto load = dispatch_type(a.in_type, [](auto v) { return &load_line<decltype(v), T>; });
    const auto store =
        dispatch_type(a.out_type, [](auto v) { return &store_line<decltype(v), T>; });
    tbb::parallel_for(std::int64_t{0}, items, [&](std::int64_t item) {
      const std::int64_t tile_row = first + item / pairs, pair = item % pairs;
      tile(a, tile_row * h, 2 * pair, std::min<std::int64_t>(2, planes - 2 * pair), load, store);
    });
  }

 private:
  using LoadFn = void (*)(const std::byte*, std::int64_t, int, int, std::int64_t, std::int64_t,
                          BorderMode, T, T*);
  using StoreFn = void (*)(const T*, std::byte*, int, int, std::int64_t, std::int64_t);

  // The tile row whose outputs start at image row ty; planes p0 (and p0 + 1 when count is 2),
  // plane p being channel p % C of the tile p / C of the row.
  void tile(const FftConvArgs& a, std::int64_t ty, std::int64_t p0, std::int64_t count, LoadFn load,
            StoreFn store) const {
    const std::int64_t n = t_.n, m = t_.m, w = t_.w;
    const std::int64_t rx = (L_ - 1) / 2, ry = (K_ - 1) / 2;
    const std::int64_t col_batches = m / W, row_batches = n / W;
    const int C = a.channels;
    thread_local std::vector<VC<T>> scratch;
    const std::size_t need = static_cast<std::size_t>(fft_scratch_points(t_) / W);
    if (scratch.size() < need) scratch.resize(need);
    // A: the tile in lanes of W columns (A[(j / W) n + i] lane j % W); B: in lanes of W rows;
    // line: one batch's transform; ra, rb: one row of each plane.
    VC<T>* A = scratch.data();
    VC<T>* B = A + n * m / W;
    VC<T>* line = B + n * m / W;
    T* ra = reinterpret_cast<T*>(line + std::max(n, m));
    T* rb = ra + m;
    const T cval = static_cast<T>(a.border_value);

    // Input row i of the tile is image row ty - ry + i, band row ty - ry + i - (y0 - halo):
    // inside the band's rows by the choice of the halo, up to image row H + ry (zeros below).
    const std::int64_t row0 = ty - ry - (a.y0 - a.halo);
    const std::int64_t rows_in = std::clamp<std::int64_t>(a.height + ry - (ty - ry), 0, n);
    for (std::int64_t i = 0; i < n; ++i) {
      if (i < rows_in) {
        const std::byte* src = a.rows[row0 + i];
        load(src, a.width, C, static_cast<int>(p0 % C), (p0 / C) * w - rx, m, a.border, cval, ra);
        if (count == 2) {
          const std::int64_t p = p0 + 1;
          load(src, a.width, C, static_cast<int>(p % C), (p / C) * w - rx, m, a.border, cval, rb);
        } else {
          std::fill(rb, rb + m, T(0));
        }
      } else {
        std::fill(ra, ra + m, T(0));
        std::fill(rb, rb + m, T(0));
      }
      for (std::int64_t jb = 0; jb < col_batches; ++jb) {
        VC<T>* d = A + jb * n + i;
        std::memcpy(re<T>(d), ra + jb * W, W * sizeof(T));
        std::memcpy(im<T>(d), rb + jb * W, W * sizeof(T));
      }
    }
    // Columns forward, each batch transposed into B, the tile in lanes of W rows
    // (B[(i / W) m + j] lane i % W).
    for (std::int64_t jb = 0; jb < col_batches; ++jb) {
      col_fwd_.run(A + jb * n, line);
      for (std::int64_t ib = 0; ib < row_batches; ++ib)
        transpose<T>(line + ib * W, 1, B + ib * m + jb * W, 1);
    }
    // Rows forward, times the spectrum, back.
    for (std::int64_t ib = 0; ib < row_batches; ++ib) {
      VC<T>* r = B + ib * m;
      const VC<T>* s = spec_.data() + ib * m;
      row_fwd_.run(r, line);
      for (std::int64_t j = 0; j < m; ++j) line[j] *= s[j];
      row_inv_.run(line, r);
    }
    // Columns back into A, only the batches holding columns that give outputs (j >= L - 1).
    for (std::int64_t jb = (L_ - 1) / W; jb < col_batches; ++jb) {
      for (std::int64_t ib = 0; ib < row_batches; ++ib)
        transpose<T>(B + ib * m + jb * W, 1, line + ib * W, 1);
      col_inv_.run(line, A + jb * n);
    }
    // Output row y = ty + i - (K - 1) for i >= K - 1: those in the band.
    const std::int64_t i_lo = std::max(K_ - 1, a.y0 - ty + K_ - 1);
    const std::int64_t i_hi = std::min(n, a.y0 + a.out_rows - ty + K_ - 1);
    for (std::int64_t i = i_lo; i < i_hi; ++i) {
      for (std::int64_t jb = (L_ - 1) / W; jb < col_batches; ++jb) {
        VC<T>* s = A + jb * n + i;
        std::memcpy(ra + jb * W, re<T>(s), W * sizeof(T));
        std::memcpy(rb + jb * W, im<T>(s), W * sizeof(T));
      }
      std::byte* out = a.out + (ty + i - (K_ - 1) - a.y0) * a.out_stride;
      for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t p = p0 + k, x = (p / C) * w;
        const std::int64_t cnt = std::min(w, a.width - x);
        store((k == 0 ? ra : rb) + (L_ - 1), out, C, static_cast<int>(p % C), x, cnt);
      }
    }
  }

  std::int64_t K_, L_;
  FftTiling t_;
  Lanes<T> row_fwd_, row_inv_, col_fwd_, col_inv_;
  std::vector<VC<T>> spec_;
};

}  // namespace

std::unique_ptr<FftConv2d::Impl> make_fft_engine(const std::vector<double>& taps, std::int64_t K,
                                                 std::int64_t L, const FftTiling& tiling,
                                                 bool f64) {
  if (f64) return std::make_unique<Engine<double>>(taps, K, L, tiling);
  return std::make_unique<Engine<float>>(taps, K, L, tiling);
}

}  // namespace ooc::cpu::OOC_ISA
