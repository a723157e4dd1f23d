// Overlap-save FFT convolution of a band on the CPU (see fft_conv.hpp). Two real tiles share one
// complex transform (one as the real part, the other as the imaginary part): the kernel is real,
// so the product with its spectrum keeps them apart, and no real-to-complex packing is needed.
// Which tiles share is fixed by the tile grid (consecutive tiles and channels of one tile row),
// never by the band, so results do not depend on the band either.
#include "fft_conv.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "fft_backend.hpp"
#include "ooc/detail/sample_type.hpp"

namespace ooc::cpu {

namespace {

// Columns of a tile transformed together (64 bytes of each row in float).
constexpr std::int64_t kColumnBlock = 8;

// Complex points of a thread's scratch: two tiles, a line, a block of columns.
std::size_t scratch_points(const FftTiling& t) {
  return static_cast<std::size_t>(2 * t.n * t.m + std::max(t.n, t.m) + kColumnBlock * t.n);
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// Sizes with factors 2, 3 and 5 from lo to hi; at least 2 (KissFFT has no transform of 1).
std::vector<std::int64_t> fast_sizes(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t n = std::max<std::int64_t>(lo, 2); n <= std::max<std::int64_t>(hi, 2); ++n)
    if (fft_fast_size(static_cast<std::size_t>(n))) v.push_back(n);
  return v;
}

// Samples m of channel c of a row from column x0 on, through the border rule along x, into
// every second element of dst (the real or imaginary parts of a complex line).
template <class T, class Acc>
void load_line(const std::byte* row, std::int64_t width, int C, int c, std::int64_t x0,
               std::int64_t m, BorderMode border, Acc cval, Acc* dst) {
  if (row == nullptr) {
    for (std::int64_t j = 0; j < m; ++j) dst[2 * j] = cval;
    return;
  }
  const T* s = reinterpret_cast<const T*>(row) + c;
  const std::int64_t in0 = std::clamp<std::int64_t>(-x0, 0, m);
  const std::int64_t in1 = std::clamp<std::int64_t>(width - x0, in0, m);
  auto edge = [&](std::int64_t j) {
    const std::int64_t x = map_border(x0 + j, width, border);
    dst[2 * j] = x < 0 ? cval : static_cast<Acc>(s[x * C]);
  };
  for (std::int64_t j = 0; j < in0; ++j) edge(j);
  const T* si = s + (x0 + in0) * C;
  for (std::int64_t j = in0; j < in1; ++j) dst[2 * j] = static_cast<Acc>(si[(j - in0) * C]);
  for (std::int64_t j = in1; j < m; ++j) edge(j);
}

// n values (every second element of src) to channel c of an output row from pixel x on, as the
// direct kernels store them: integers rounded to nearest even and saturated, NaN as 0.
template <class U, class Acc>
void store_line(const Acc* src, std::byte* row, int C, int c, std::int64_t x, std::int64_t n) {
  U* d = reinterpret_cast<U*>(row) + x * C + c;
  if constexpr (std::is_floating_point_v<U>) {
    for (std::int64_t i = 0; i < n; ++i) d[i * C] = static_cast<U>(src[2 * i]);
  } else {
    using W = std::conditional_t<(sizeof(U) >= 4), double, Acc>;
    constexpr W lo = static_cast<W>(std::numeric_limits<U>::lowest());
    constexpr W hi = static_cast<W>(std::numeric_limits<U>::max());
    for (std::int64_t i = 0; i < n; ++i) {
      W v = static_cast<W>(src[2 * i]);
      v = v == v ? v : W(0);
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      d[i * C] = static_cast<U>(std::nearbyint(v));
    }
  }
}

}  // namespace

FftTiling plan_fft_tiling(std::int64_t K, std::int64_t L, std::int64_t H, std::int64_t W,
                          const FftTilingPolicy& policy) {
  FftTiling best;
  double best_work = std::numeric_limits<double>::infinity();
  if (K < 1 || L < 1 || H < 1 || W < 1) return best;
  // No taller (wider) tile than one covering the whole image: more would be zeros.
  // Kernels beyond the policy's tile get tiles of about 4 K x L points: half their outputs valid.
  const std::int64_t most =
      std::max(policy.max_points, std::min(4 * K * L, policy.max_points_large_kernel));
  const std::int64_t n_hi = std::min<std::int64_t>(
      most, static_cast<std::int64_t>(fft_next_fast_size(static_cast<std::size_t>(H + K - 1))));
  const std::int64_t m_hi = std::min<std::int64_t>(
      most, static_cast<std::int64_t>(fft_next_fast_size(static_cast<std::size_t>(W + L - 1))));
  const std::vector<std::int64_t> ns = fast_sizes(K, n_hi), ms = fast_sizes(L, m_hi);
  for (std::int64_t n : ns)
    for (std::int64_t m : ms) {
      if (n * m > most) break;
      const FftTiling t{n, m, n - K + 1, m - L + 1};
      const double work = fft_work_per_sample(t, H, W, policy);
      if (work < best_work * (1 - 1e-12)) best_work = work, best = t;
    }
  return best;
}

double fft_work_per_sample(const FftTiling& t, std::int64_t H, std::int64_t W,
                           const FftTilingPolicy& policy) {
  if (!t.valid()) return std::numeric_limits<double>::infinity();
  const double points = double(t.n) * double(t.m);
  const double outputs = double(std::min(t.h, H)) * double(std::min(t.w, W));
  return points * (std::log2(points) + policy.overhead_passes) / outputs;
}

struct FftConv2d::Impl {
  virtual ~Impl() = default;
  virtual void band(const FftConvArgs& a) const = 0;
};

namespace {

template <class T>
class Engine final : public FftConv2d::Impl {
  using Cx = std::complex<T>;

 public:
  Engine(const std::vector<double>& taps, std::int64_t K, std::int64_t L, const FftTiling& t)
      : K_(K),
        L_(L),
        t_(t),
        row_fwd_(t.m, false, 1),
        row_inv_(t.m, true, 1),
        col_fwd_(t.n, false, 1),
        col_inv_(t.n, true, 1) {
    // The kernel's spectrum, in double whatever T, scaled by 1 / (n m) (the inverse's factor),
    // stored column by column (spec_[j n + i]) as the column pass reads it.
    const std::int64_t n = t.n, m = t.m;
    std::vector<std::complex<double>> a(static_cast<std::size_t>(n * m)), b(a.size());
    for (std::int64_t i = 0; i < K; ++i)
      for (std::int64_t j = 0; j < L; ++j) a[i * m + j] = taps[i * L + j];
    Fft1d<double> rows(m, false, 1), cols(n, false, m);
    for (std::int64_t i = 0; i < n; ++i) rows.run(a.data() + i * m, b.data() + i * m);
    spec_.resize(static_cast<std::size_t>(n * m));
    std::vector<std::complex<double>> col(static_cast<std::size_t>(n));
    const double scale = 1.0 / (double(n) * double(m));
    for (std::int64_t j = 0; j < m; ++j) {
      cols.run(b.data() + j, col.data());
      for (std::int64_t i = 0; i < n; ++i) spec_[j * n + i] = Cx(col[i] * scale);
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
    const int C = a.channels;
    thread_local std::vector<Cx> scratch;
    const std::size_t need = scratch_points(t_);
    if (scratch.size() < need) scratch.resize(need);
    Cx* A = scratch.data();
    Cx* B = A + n * m;
    Cx* line = B + n * m;
    Cx* cols = line + std::max(n, m);  // kColumnBlock columns, each contiguous
    const T cval = static_cast<T>(a.border_value);

    // Input row i of the tile is image row ty - ry + i, band row ty - ry + i - (y0 - halo):
    // inside the band's rows by the choice of the halo, up to image row H + ry (zeros below).
    const std::int64_t row0 = ty - ry - (a.y0 - a.halo);
    const std::int64_t rows_in = std::clamp<std::int64_t>(a.height + ry - (ty - ry), 0, n);
    std::fill(A + rows_in * m, A + n * m, Cx(0));
    for (std::int64_t i = 0; i < rows_in; ++i) {
      T* dst = reinterpret_cast<T*>(A + i * m);
      const std::byte* src = a.rows[row0 + i];
      for (std::int64_t k = 0; k < 2; ++k) {
        if (k < count) {
          const std::int64_t p = p0 + k;
          load(src, a.width, C, static_cast<int>(p % C), (p / C) * w - rx, m, a.border, cval,
               dst + k);
        } else {
          for (std::int64_t j = 0; j < m; ++j) dst[2 * j + 1] = T(0);
        }
      }
    }
    for (std::int64_t i = 0; i < n; ++i) row_fwd_.run(A + i * m, B + i * m);
    // Columns: forward, times the spectrum, back; only the rows that give outputs are kept. A
    // block of columns is copied out and back whole (a cache line of each row at a time): the
    // transforms' strided reads of a tile larger than the cache would miss on every point.
    for (std::int64_t j0 = 0; j0 < m; j0 += kColumnBlock) {
      const std::int64_t nb = std::min<std::int64_t>(kColumnBlock, m - j0);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t b = 0; b < nb; ++b) cols[b * n + i] = B[i * m + j0 + b];
      for (std::int64_t b = 0; b < nb; ++b) {
        Cx* col = cols + b * n;
        col_fwd_.run(col, line);
        const Cx* s = spec_.data() + (j0 + b) * n;
        for (std::int64_t i = 0; i < n; ++i) {
          const T re = line[i].real() * s[i].real() - line[i].imag() * s[i].imag();
          const T im = line[i].real() * s[i].imag() + line[i].imag() * s[i].real();
          line[i] = Cx(re, im);
        }
        col_inv_.run(line, col);
      }
      for (std::int64_t i = K_ - 1; i < n; ++i)
        for (std::int64_t b = 0; b < nb; ++b) A[i * m + j0 + b] = cols[b * n + i];
    }
    // Output row y = ty + i - (K - 1) for i >= K - 1: those in the band.
    const std::int64_t i_lo = std::max(K_ - 1, a.y0 - ty + K_ - 1);
    const std::int64_t i_hi = std::min(n, a.y0 + a.out_rows - ty + K_ - 1);
    for (std::int64_t i = i_lo; i < i_hi; ++i) {
      row_inv_.run(A + i * m, line);
      std::byte* out = a.out + (ty + i - (K_ - 1) - a.y0) * a.out_stride;
      const T* v = reinterpret_cast<const T*>(line + (L_ - 1));
      for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t p = p0 + k, x = (p / C) * w;
        const std::int64_t cnt = std::min(w, a.width - x);
        store(v + k, out, C, static_cast<int>(p % C), x, cnt);
      }
    }
  }

  std::int64_t K_, L_;
  FftTiling t_;
  Fft1d<T> row_fwd_, row_inv_, col_fwd_, col_inv_;
  std::vector<Cx> spec_;
};

}  // namespace

FftConv2d::FftConv2d(const std::vector<double>& taps, std::int64_t K, std::int64_t L,
                     const FftTiling& tiling, bool f64) {
  if (f64) {
    impl_ = std::make_unique<Engine<double>>(taps, K, L, tiling);
  } else {
    impl_ = std::make_unique<Engine<float>>(taps, K, L, tiling);
  }
}

FftConv2d::~FftConv2d() = default;

void FftConv2d::band(const FftConvArgs& args) const {
  impl_->band(args);
}

std::size_t FftConv2d::thread_bytes(const FftTiling& t, bool f64) {
  return scratch_points(t) * (f64 ? 16 : 8);
}

std::size_t FftConv2d::shared_bytes(const FftTiling& t, bool f64) {
  const std::size_t point = f64 ? 16 : 8;
  // The spectrum, and while it is made two double tiles; the transforms' twiddles.
  return static_cast<std::size_t>(t.n * t.m) * (point + 32) +
         static_cast<std::size_t>(2 * (t.n + t.m)) * point;
}

}  // namespace ooc::cpu
