// The engine of the CPU's separable convolution by 1-D FFTs (fft_separable.hpp). This file is
// compiled once per instruction set (CMakeLists.txt: OOC_ISA names the namespace); fft_conv.cpp
// picks one at run time.
//
// Work is split by pairs of planes (plane p: channel p % C of x-block p / C; planes 2k and 2k + 1
// share the transforms' real and imaginary parts, fixed by the grid). A pair's row pass over the
// band's rows goes into its thread's scratch, then its column pass reads it; both run in parallel
// inside the pair, isolated (tbb::this_task_arena::isolate) so that a thread holding a pair's
// scratch never starts another pair while it waits: at most one pair's scratch per thread, which
// is what the memory plan counts.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "fft_lanes.hpp"
#include "fft_separable.hpp"
#include "ooc/detail/sample_type.hpp"

namespace ooc::kernels::OOC_ISA {
namespace {

template <class T>
class SeparableEngine final : public FftSeparable::Impl {
  static constexpr int W = Vec<T>::lanes;
  using R = typename Vec<T>::R;

 public:
  SeparableEngine(const std::vector<double>& row, const std::vector<double>& col,
                  const FftSeparablePlan& p)
      : p_(p),
        L_(static_cast<std::int64_t>(row.size())),
        K_(static_cast<std::int64_t>(col.size())),
        row_fwd_(p.m, false),
        row_inv_(p.m, true),
        col_fwd_(p.n, false),
        col_inv_(p.n, true),
        row_spec_(spectrum(row, p.m)),
        col_spec_(spectrum(col, p.n)) {}

  void band(const FftConvArgs& a) const override {
    const std::int64_t h = p_.h, w = p_.w, ry = (K_ - 1) / 2;
    Shape b;
    b.first = floor_div(a.y0, h);
    b.last = floor_div(a.y0 + a.out_rows - 1, h);
    b.r_lo = b.first * h - ry;
    b.rows = std::min(b.last * h - ry + p_.n, a.height + ry) - b.r_lo;
    b.rows_up = (b.rows + W - 1) / W * W;
    b.stride = (w + 2 * W - 1) / (2 * W) * (2 * W);
    b.planes = (a.width + w - 1) / w * a.channels;
    b.load = dispatch_type(a.in_type, [](auto v) { return &load_line<decltype(v), T>; });
    b.store = dispatch_type(a.out_type, [](auto v) { return &store_line<decltype(v), T>; });
    const std::int64_t pairs = (b.planes + 1) / 2;
    tbb::parallel_for(std::int64_t{0}, pairs, [&](std::int64_t pair) { run_pair(a, b, pair); });
  }

 private:
  using LoadFn = void (*)(const std::byte*, std::int64_t, int, int, std::int64_t, std::int64_t,
                          BorderMode, T, T*);
  using StoreFn = void (*)(const T*, std::byte*, int, int, std::int64_t, std::int64_t);

  // What every pair of one band shares: the y-blocks [first, last], the row-pass result's rows
  // (image rows r_lo on, rows of them, rows_up allocated, stride samples apart) and the planes.
  struct Shape {
    std::int64_t first, last, r_lo, rows, rows_up, stride, planes;
    LoadFn load;
    StoreFn store;
  };

  // The taps' spectrum over n points, in double whatever T, scaled by 1 / n (the inverse's
  // factor), the same in every lane.
  static std::vector<VC<T>> spectrum(const std::vector<double>& taps, std::int64_t n) {
    std::vector<std::complex<double>> a(static_cast<std::size_t>(n)), f(a.size());
    for (std::size_t i = 0; i < taps.size(); ++i) a[i] = taps[i];
    Fft1d<double>(static_cast<std::size_t>(n), false, 1).run(a.data(), f.data());
    std::vector<VC<T>> s(a.size());
    for (std::size_t j = 0; j < s.size(); ++j)
      s[j] = VC<T>(Vec<T>(f[j].real() / double(n)), Vec<T>(f[j].imag() / double(n)));
    return s;
  }

  // Two lines of transform points per thread, with room past the longest for a last lane group.
  struct Lines {
    std::vector<VC<T>> x, y;
    std::vector<T> loaded;  // 2 planes x W rows x m samples
  };
  Lines& lines() const {
    thread_local Lines l;
    const std::size_t need = static_cast<std::size_t>(std::max(p_.m, p_.n) + W);
    if (l.x.size() < need) l.x.assign(need, VC<T>()), l.y.assign(need, VC<T>());
    const std::size_t loaded = static_cast<std::size_t>(2 * W * p_.m);
    if (l.loaded.size() < loaded) l.loaded.resize(loaded);
    return l;
  }

  int channel(const FftConvArgs& a, std::int64_t plane) const {
    return static_cast<int>(plane % a.channels);
  }
  std::int64_t x0(const FftConvArgs& a, std::int64_t plane) const {
    return plane / a.channels * p_.w;
  }
  // Output columns of a plane: w, or fewer in the last x-block.
  std::int64_t columns(const FftConvArgs& a, std::int64_t plane) const {
    return std::min(p_.w, a.width - x0(a, plane));
  }

  void run_pair(const FftConvArgs& a, const Shape& b, std::int64_t pair) const {
    const std::int64_t p0 = 2 * pair, count = std::min<std::int64_t>(2, b.planes - p0);
    thread_local std::vector<T> scratch;
    const std::size_t need = static_cast<std::size_t>(2 * b.rows_up * b.stride);
    if (scratch.size() < need) scratch.resize(need);
    T* const mid[2] = {scratch.data(), scratch.data() + b.rows_up * b.stride};
    const std::int64_t groups = b.rows_up / W;
    std::int64_t cols = columns(a, p0);
    if (count == 2) cols = std::max(cols, columns(a, p0 + 1));
    const std::int64_t col_groups = (cols + W - 1) / W;
    const std::int64_t blocks = b.last - b.first + 1;
    tbb::this_task_arena::isolate([&] {
      tbb::parallel_for(std::int64_t{0}, groups,
                        [&](std::int64_t g) { row_group(a, b, p0, count, g, mid); });
      tbb::parallel_for(std::int64_t{0}, blocks * col_groups, [&](std::int64_t item) {
        column_group(a, b, p0, count, b.first + item / col_groups, item % col_groups, mid);
      });
    });
  }

  // Rows g W .. g W + W - 1 of the row-pass result of planes p0 (and p0 + 1) along x.
  void row_group(const FftConvArgs& a, const Shape& b, std::int64_t p0, std::int64_t count,
                 std::int64_t g, T* const* mid) const {
    const std::int64_t m = p_.m, w = p_.w, rx = (L_ - 1) / 2;
    Lines& l = lines();
    VC<T>* x = l.x.data();
    VC<T>* y = l.y.data();
    const T cval = static_cast<T>(a.border_value);
    const std::int64_t band_row0 = a.y0 - a.halo;
    const std::byte* src[W];
    for (int r = 0; r < W; ++r) {
      const std::int64_t j = g * W + r;  // row of the result: image row r_lo + j
      src[r] = j < b.rows ? a.rows[b.r_lo + j - band_row0] : nullptr;
      for (std::int64_t k = 0; k < 2; ++k) {
        T* dst = l.loaded.data() + (k * W + r) * m;
        if (j >= b.rows || k >= count) {
          std::fill(dst, dst + m, T(0));
        } else {
          const std::int64_t p = p0 + k;
          b.load(src[r], a.width, a.channels, channel(a, p), x0(a, p) - rx, m, a.border, cval, dst);
        }
      }
    }
    // Lanes of W rows: point j of lane r is sample j of row r.
    for (std::int64_t j0 = 0; j0 < m; j0 += W) {
      R re[W], im[W];
      for (int r = 0; r < W; ++r) {
        std::memcpy(&re[r], l.loaded.data() + r * m + j0, sizeof(R));
        std::memcpy(&im[r], l.loaded.data() + (W + r) * m + j0, sizeof(R));
      }
      transpose_lanes<T>(re);
      transpose_lanes<T>(im);
      for (int c = 0; c < W; ++c) x[j0 + c] = VC<T>(Vec<T>(re[c]), Vec<T>(im[c]));
    }
    row_fwd_.run(x, y);
    for (std::int64_t j = 0; j < m; ++j) y[j] *= row_spec_[j];
    row_inv_.run(y, x);
    // Output t of the block is point L - 1 + t; x holds W points past m for the last group.
    for (std::int64_t t0 = 0; t0 < w; t0 += W) {
      R re[W], im[W];
      for (int c = 0; c < W; ++c)
        re[c] = x[L_ - 1 + t0 + c].real().v, im[c] = x[L_ - 1 + t0 + c].imag().v;
      transpose_lanes<T>(re);
      transpose_lanes<T>(im);
      for (int r = 0; r < W; ++r) {
        T* row = mid[0] + (g * W + r) * b.stride + t0;
        std::memcpy(row, &re[r], sizeof(R));
        if (count == 2) std::memcpy(mid[1] + (g * W + r) * b.stride + t0, &im[r], sizeof(R));
      }
    }
    // A row of the constant border is the constant after the row pass, as in the direct kernel.
    for (int r = 0; r < W; ++r)
      if (g * W + r < b.rows && src[r] == nullptr)
        for (std::int64_t k = 0; k < count; ++k) {
          T* row = mid[k] + (g * W + r) * b.stride;
          std::fill(row, row + b.stride, cval);
        }
  }

  // Columns q W .. q W + W - 1 of planes p0 (and p0 + 1) along y, in the y-block of block's rows.
  void column_group(const FftConvArgs& a, const Shape& b, std::int64_t p0, std::int64_t count,
                    std::int64_t block, std::int64_t q, T* const* mid) const {
    const std::int64_t n = p_.n, h = p_.h, ry = (K_ - 1) / 2;
    Lines& l = lines();
    VC<T>* x = l.x.data();
    VC<T>* y = l.y.data();
    const std::int64_t ty = block * h, top = ty - ry;
    const std::int64_t rows_in = std::clamp<std::int64_t>(a.height + ry - top, 0, n);
    for (std::int64_t i = 0; i < n; ++i) {
      if (i < rows_in) {
        const std::int64_t j = top + i - b.r_lo;
        R re, im{};
        std::memcpy(&re, mid[0] + j * b.stride + q * W, sizeof(R));
        if (count == 2) std::memcpy(&im, mid[1] + j * b.stride + q * W, sizeof(R));
        x[i] = VC<T>(Vec<T>(re), Vec<T>(im));
      } else {
        x[i] = VC<T>();
      }
    }
    col_fwd_.run(x, y);
    for (std::int64_t i = 0; i < n; ++i) y[i] *= col_spec_[i];
    col_inv_.run(y, x);
    // Output row ty + i - (K - 1) for i >= K - 1: those in the band.
    const std::int64_t i_lo = std::max(K_ - 1, a.y0 - ty + K_ - 1);
    const std::int64_t i_hi = std::min(n, a.y0 + a.out_rows - ty + K_ - 1);
    for (std::int64_t i = i_lo; i < i_hi; ++i) {
      std::byte* out = a.out + (ty + i - (K_ - 1) - a.y0) * a.out_stride;
      for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t p = p0 + k;
        const std::int64_t cnt = std::min<std::int64_t>(W, columns(a, p) - q * W);
        if (cnt > 0)
          b.store(k == 0 ? re<T>(x + i) : im<T>(x + i), out, a.channels, channel(a, p),
                  x0(a, p) + q * W, cnt);
      }
    }
  }

  FftSeparablePlan p_;
  std::int64_t L_, K_;
  Lanes<T> row_fwd_, row_inv_, col_fwd_, col_inv_;
  std::vector<VC<T>> row_spec_, col_spec_;
};

}  // namespace

std::unique_ptr<FftSeparable::Impl> make_fft_separable(const std::vector<double>& row,
                                                       const std::vector<double>& col,
                                                       const FftSeparablePlan& plan, bool f64) {
  if (f64) return std::make_unique<SeparableEngine<double>>(row, col, plan);
  return std::make_unique<SeparableEngine<float>>(row, col, plan);
}

}  // namespace ooc::kernels::OOC_ISA
