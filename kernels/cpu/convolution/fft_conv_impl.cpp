// The engine of the CPU's overlap-save FFT convolution (fft_conv.hpp). This file is compiled once
// per instruction set (CMakeLists.txt: OOC_ISA names the namespace); fft_conv.cpp picks one at
// run time.
//
// The transforms run on lanes of independent lines (fft_lanes.hpp). Columns are transformed in
// lanes of adjacent columns, rows in lanes of adjacent rows; an 8 x 8 transpose between the two
// keeps every access contiguous.
//
// Two real tiles share one complex transform (one as the real part, the other as the imaginary
// part): the kernel is real, so the product with its spectrum keeps them apart. Which tiles share
// is fixed by the tile grid (consecutive tiles and channels of one tile row), never by the band.
// Normalized convolution shares a transform between a tile's x m and m the same way.
#include <tbb/parallel_for.h>

#include "fft_conv.hpp"
#include "fft_lanes.hpp"
#include "kernels/cpu/masked/convert.hpp"
#include "ooc/detail/sample_type.hpp"

namespace ooc::kernels::OOC_ISA {
namespace {
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
    if (a.normalized) {  // a plane's x m and m share a transform: one plane an item
      const auto load =
          dispatch_type(a.in_type, [](auto v) { return &load_normalized<decltype(v), T>; });
      tbb::parallel_for(std::int64_t{0}, (last - first + 1) * planes, [&](std::int64_t item) {
        tile(a, (first + item / planes) * h, item % planes, 1, nullptr, nullptr, load);
      });
      return;
    }
    const std::int64_t items = (last - first + 1) * pairs;
    const auto load = dispatch_type(a.in_type, [](auto v) { return &load_line<decltype(v), T>; });
    const auto store =
        dispatch_type(a.out_type, [](auto v) { return &store_line<decltype(v), T>; });
    tbb::parallel_for(std::int64_t{0}, items, [&](std::int64_t item) {
      const std::int64_t tile_row = first + item / pairs, pair = item % pairs;
      tile(a, tile_row * h, 2 * pair, std::min<std::int64_t>(2, planes - 2 * pair), load, store,
           nullptr);
    });
  }

 private:
  // A row's x m into v and m into m (normalized convolution), as load_line reads the samples.
  template <class S, class Acc>
  static void load_normalized(const std::byte* row, std::int64_t width, int C, int c,
                              std::int64_t x0, std::int64_t m, BorderMode border,
                              const FftNormalized& nz, Acc* v, Acc* w) {
    const Acc cv = static_cast<Acc>(nz.cv), cm = static_cast<Acc>(nz.cm);
    if (row == nullptr) {
      std::fill(v, v + m, cv);
      std::fill(w, w + m, cm);
      return;
    }
    const bool has = !std::isnan(nz.nodata) && masked::holds<S>(nz.nodata);
    const S nd = has ? static_cast<S>(nz.nodata) : S{};
    const S* s = reinterpret_cast<const S*>(row) + c;
    const auto put = [&](std::int64_t j, S u) {
      bool hole = has & (u == nd);
      if constexpr (std::is_floating_point_v<S>) hole = hole | (u != u);
      v[j] = hole ? Acc(0) : static_cast<Acc>(u);
      w[j] = hole ? Acc(0) : Acc(1);
    };
    // The border rule only past the row's ends (as load_line); the rest a straight run.
    const std::int64_t in0 = std::clamp<std::int64_t>(-x0, 0, m);
    const std::int64_t in1 = std::clamp<std::int64_t>(width - x0, in0, m);
    const auto edge = [&](std::int64_t j) {
      const std::int64_t x = map_border(x0 + j, width, border);
      if (x < 0) {
        v[j] = cv;
        w[j] = cm;
      } else {
        put(j, s[x * C]);
      }
    };
    for (std::int64_t j = 0; j < in0; ++j) edge(j);
    const S* si = s + (x0 + in0) * C;
    if (C == 1) {
      for (std::int64_t j = in0; j < in1; ++j) put(j, si[j - in0]);
    } else {
      for (std::int64_t j = in0; j < in1; ++j) put(j, si[(j - in0) * C]);
    }
    for (std::int64_t j = in1; j < m; ++j) edge(j);
  }

  using LoadFn = void (*)(const std::byte*, std::int64_t, int, int, std::int64_t, std::int64_t,
                          BorderMode, T, T*);
  using StoreFn = void (*)(const T*, std::byte*, int, int, std::int64_t, std::int64_t);
  using NormalizedFn = void (*)(const std::byte*, std::int64_t, int, int, std::int64_t,
                                std::int64_t, BorderMode, const FftNormalized&, T*, T*);

  // The tile row whose outputs start at image row ty; planes p0 (and p0 + 1 when count is 2),
  // plane p being channel p % C of the tile p / C of the row. With `normalized`, plane p0's x m
  // and m (load and store unused; a.normalized->finish makes the outputs).
  void tile(const FftConvArgs& a, std::int64_t ty, std::int64_t p0, std::int64_t count, LoadFn load,
            StoreFn store, NormalizedFn normalized) const {
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
      if (i < rows_in && normalized) {
        normalized(a.rows[row0 + i], a.width, C, static_cast<int>(p0 % C), (p0 / C) * w - rx, m,
                   a.border, *a.normalized, ra, rb);
      } else if (i < rows_in) {
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
      if (normalized) {
        const std::int64_t x = (p0 / C) * w;
        a.normalized->finish(a.normalized->context, ty + i - (K_ - 1), static_cast<int>(p0 % C), x,
                             std::min(w, a.width - x), ra + (L_ - 1), rb + (L_ - 1), out);
        continue;
      }
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

}  // namespace ooc::kernels::OOC_ISA
