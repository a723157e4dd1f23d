// Minimum/maximum filters and grey morphology (see ooc/ops/rank.hpp): the van Herk kernels of
// kernels/cpu/minmax.hpp on a band, and the compositions run as a chain of two such stages, each
// applying the border rule to its own input, as scipy.ndimage composes them.
#include "ooc/ops/rank.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "chain_impl.hpp"
#include "cpu/minmax.hpp"
#include "cuda_kernels.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"

namespace ooc {
namespace {

// The window of `n` samples around each one, as scipy places it: `left` before, n - 1 - left
// after; the dilations of grey_opening/closing shift it by one for even sizes (origin -1).
struct Extent {
  std::int64_t left = 0, right = 0;
};
Extent extent(std::int64_t n, bool dilation) {
  const std::int64_t left = n / 2 - (dilation && n % 2 == 0 ? 1 : 0);
  return {left, n - 1 - left};
}

// The constant border in the image's type, as scipy's double cval becomes one: truncated,
// saturated (a min or max against it then matches scipy's comparison in double).
template <class T>
T constant_of(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (!(v == v)) return T(0);
    v = std::trunc(v);
    v = std::clamp(v, double(std::numeric_limits<T>::lowest()),
                   double(std::numeric_limits<T>::max()));
    return static_cast<T>(v);
  }
}

// a - b in T; integers wrap as NumPy's subtract does (never needed where b <= a).
template <class T>
T difference(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}

using Pool = detail::BufferPool;

struct Window {
  bool max = false;
  Extent y, x;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
};

class MinMaxKernel final : public CpuKernel {
 public:
  explicit MinMaxKernel(const Window& w) : w_(w) {}
  void run(const CpuBand& b) override {
    dispatch_type(b.in.type, [&](auto t) {
      using T = decltype(t);
      if (w_.max)
        run_typed<true, T>(b);
      else
        run_typed<false, T>(b);
    });
  }

 private:
  template <bool Max, class T>
  void run_typed(const CpuBand& b) {
    const std::int64_t W = b.in.width, C = b.in.channels, S = W * C, rows = b.band.rows;
    const std::int64_t Nx = w_.x.left + w_.x.right + 1, Ny = w_.y.left + w_.y.right + 1;
    const std::int64_t m = rows + Ny - 1, first = b.halo - w_.y.left;
    const T cval = constant_of<T>(w_.border_value);
    std::vector<std::byte> buf = pool_.take(2 * static_cast<std::size_t>(m * S) * sizeof(T));
    T* Pbase = reinterpret_cast<T*>(buf.data());
    T* Gbase = Pbase + m * S;
    std::vector<T*> P(static_cast<std::size_t>(m)), G(static_cast<std::size_t>(m));
    for (std::int64_t k = 0; k < m; ++k) P[k] = Pbase + k * S, G[k] = Gbase + k * S;
    // Along x, each input row the window needs.
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, m, 4), [&](const auto& r) {
      std::vector<T> pad(static_cast<std::size_t>((W + Nx - 1) * C)), g(pad.size());
      for (std::int64_t k = r.begin(); k < r.end(); ++k) {
        const std::byte* src = b.rows[first + k];
        if (src == nullptr) {
          std::fill(P[k], P[k] + S, cval);
          continue;
        }
        const T* in = reinterpret_cast<const T*>(src);
        if (Nx == 1) {
          std::memcpy(P[k], in, static_cast<std::size_t>(S) * sizeof(T));
          continue;
        }
        for (std::int64_t q = -w_.x.left; q < W + w_.x.right; ++q) {
          const std::int64_t s = map_border(q, W, w_.border);
          T* d = pad.data() + (q + w_.x.left) * C;
          for (std::int64_t c = 0; c < C; ++c) d[c] = s < 0 ? cval : in[s * C + c];
        }
        kernels::running_extreme<Max, T>(pad.data(), g.data(), P[k], W, Nx, static_cast<int>(C));
      }
    });
    // Along y, block by block (blocks of Ny rows are independent).
    const std::int64_t blocks = (m + Ny - 1) / Ny;
    tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t blk) {
      const std::int64_t k0 = blk * Ny, k1 = std::min(m, k0 + Ny);
      kernels::prefix_rows<Max, T>(P.data(), G.data(), k0, k1, Ny, S);
      kernels::suffix_rows<Max, T>(P.data(), k0, k1, Ny, m, S);
    });
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t i) {
      const T* a = P[i];
      const T* g = G[i + Ny - 1];
      T* o = reinterpret_cast<T*>(b.out.row(i));
      for (std::int64_t x = 0; x < S; ++x) o[x] = kernels::pick<Max>(a[x], g[x]);
    });
    pool_.give(std::move(buf));
  }

  Window w_;
  Pool pool_;
};

std::string window_text(const Window& w) {
  return std::to_string(w.y.left + w.y.right + 1) + "x" + std::to_string(w.x.left + w.x.right + 1);
}

class MinMax final : public Operation {
 public:
  MinMax(const ImageSpec& in, const Window& w) : in_(in), w_(w) {}
  std::string describe() const override {
    return std::string(w_.max ? "maximum " : "minimum ") + window_text(w_) + ", border " +
           std::string(name(w_.border));
  }
  std::string fingerprint() const override {
    char v[40];
    std::snprintf(v, sizeof v, "%.17g", w_.border_value);
    return describe() + " (rows -" + std::to_string(w_.y.left) + "/+" + std::to_string(w_.y.right) +
           ", columns -" + std::to_string(w_.x.left) + "/+" + std::to_string(w_.x.right) +
           ", value " + v + ") " + std::string(name(in_.type));
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return std::max(w_.y.left, w_.y.right); }
  BorderMode border() const override { return w_.border; }
  std::size_t cpu_scratch_bytes(std::int64_t rows) const override {
    return 2 * static_cast<std::size_t>(rows + w_.y.left + w_.y.right) * in_.row_bytes() +
           2 * static_cast<std::size_t>(in_.width + w_.x.left + w_.x.right) * in_.pixel_bytes();
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return static_cast<std::size_t>(rows + w_.y.left + w_.y.right) * in_.row_bytes();
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<MinMaxKernel>(w_);
  }
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }  // selections, no arithmetic
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>&) const override {
    return detail::make_minmax_cuda(w_.max, w_.y.left, w_.y.right, w_.x.left, w_.x.right, w_.border,
                                    w_.border_value);
  }
  double cpu_ns_per_sample() const override { return 1.5; }
  double cuda_ns_per_sample() const override {
    return 0.0005 * double(w_.y.left + w_.y.right + w_.x.left + w_.x.right + 2);
  }

 private:
  ImageSpec in_;
  Window w_;
};

// Opening, closing and the top-hats: two MinMax stages fused as a chain (the second applies the
// border rule to the first's image, as scipy's grey_dilation(grey_erosion(x)) does), and for
// the top-hats the difference with the input (in the image's type; never negative).
class TophatKernel final : public CpuKernel {
 public:
  TophatKernel(const detail::ChainGeometry& g, int sign) : sign_(sign) {
    chain_ = detail::make_chain_cpu(g);
  }
  void run(const CpuBand& b) override {
    if (sign_ == 0) {
      chain_->run(b);
      return;
    }
    std::vector<std::byte> buf =
        pool_.take(static_cast<std::size_t>(b.band.rows) * b.in.row_bytes());
    CpuBand inner = b;
    inner.out =
        BandView{buf.data(), b.in.row_bytes(), b.band.rows, b.in.width, b.in.channels, b.in.type};
    chain_->run(inner);
    const std::int64_t S = b.in.row_samples();
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      dispatch_type(b.in.type, [&](auto t) {
        using T = decltype(t);
        const T* x = reinterpret_cast<const T*>(b.rows[b.halo + y]);
        const T* o = reinterpret_cast<const T*>(inner.out.row(y));
        T* d = reinterpret_cast<T*>(b.out.row(y));
        for (std::int64_t i = 0; i < S; ++i)
          d[i] = difference<T>(sign_ > 0 ? x[i] : o[i], sign_ > 0 ? o[i] : x[i]);
      });
    });
    pool_.give(std::move(buf));
  }

 private:
  int sign_;  // 0: the chain alone (opening, closing); +1: x - it; -1: it - x
  std::unique_ptr<CpuKernel> chain_;
  Pool pool_;
};

class Morphology final : public Operation {
 public:
  Morphology(const ImageSpec& in, const MorphParams& p, std::unique_ptr<Operation> first,
             std::unique_ptr<Operation> second, int sign, std::string what)
      : in_(in),
        p_(p),
        first_(std::move(first)),
        second_(std::move(second)),
        sign_(sign),
        what_(std::move(what)) {
    g_.border = p.border;
    g_.height = in.height;
    g_.stages.push_back({first_.get(), in, first_->halo()});
    g_.stages.push_back({second_.get(), in, second_->halo()});
  }
  std::string describe() const override { return what_; }
  std::string fingerprint() const override {
    return what_ + " (" + first_->fingerprint() + " ! " + second_->fingerprint() + ")";
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return g_.halo(); }
  BorderMode border() const override { return p_.border; }
  std::size_t cpu_scratch_bytes(std::int64_t rows) const override {
    return static_cast<std::size_t>(rows) * in_.row_bytes() +
           static_cast<std::size_t>(g_.max_out_rows(0, rows)) * in_.row_bytes() +
           std::max(first_->cpu_scratch_bytes(g_.max_out_rows(0, rows)),
                    second_->cpu_scratch_bytes(rows));
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return detail::align_up(static_cast<std::size_t>(rows) * in_.row_bytes()) +
           detail::chain_cuda_scratch(g_, rows);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<TophatKernel>(g_, sign_);
  }
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    return detail::make_tophat_cuda(devices, g_, sign_);
  }
  double cpu_ns_per_sample() const override { return 3.5; }
  double cuda_ns_per_sample() const override {
    return first_->cuda_ns_per_sample() + second_->cuda_ns_per_sample();
  }

 private:
  ImageSpec in_;
  MorphParams p_;
  std::unique_ptr<Operation> first_, second_;
  int sign_;
  std::string what_;
  detail::ChainGeometry g_;
};

Window window(const MorphParams& p, bool max, bool dilation) {
  Window w;
  w.max = max;
  w.y = extent(p.height, dilation);
  w.x = extent(p.width, dilation);
  w.border = p.border;
  w.border_value = p.border_value;
  return w;
}

}  // namespace

namespace {

// --- rank filters ---------------------------------------------------------------------------

// The window's samples of one channel for an output row, from planes padded by the border rule:
// plane row k, column q is image row (first + k), column (q - lx) mapped.
template <class T>
struct Planes {
  std::vector<T> data;
  std::int64_t width = 0;  // padded: W + Nx - 1
  const T* row(std::int64_t c, std::int64_t k, std::int64_t m) const {
    return data.data() + (c * m + k) * width;
  }
};

class RankKernel final : public CpuKernel {
 public:
  RankKernel(const Window& w, std::int64_t rank) : w_(w), rank_(rank) {}
  void run(const CpuBand& b) override {
    dispatch_type(b.in.type, [&](auto t) { run_typed<decltype(t)>(b); });
  }

 private:
  template <class T>
  void run_typed(const CpuBand& b) {
    const std::int64_t W = b.in.width, C = b.in.channels, rows = b.band.rows;
    const std::int64_t Nx = w_.x.left + w_.x.right + 1, Ny = w_.y.left + w_.y.right + 1;
    const std::int64_t m = rows + Ny - 1, first = b.halo - w_.y.left, Wp = W + Nx - 1;
    const T cval = constant_of<T>(w_.border_value);
    Planes<T> p;
    p.width = Wp;
    p.data.resize(static_cast<std::size_t>(C * m * Wp));
    tbb::parallel_for(std::int64_t{0}, m, [&](std::int64_t k) {
      const T* in = reinterpret_cast<const T*>(b.rows[first + k]);
      for (std::int64_t c = 0; c < C; ++c) {
        T* d = const_cast<T*>(p.row(c, k, m));
        for (std::int64_t q = 0; q < Wp; ++q) {
          const std::int64_t s = in ? map_border(q - w_.x.left, W, w_.border) : -1;
          d[q] = s < 0 ? cval : in[s * C + c];
        }
      }
    });
    if constexpr (std::is_integral_v<T>) {
      // The 3 x 3 median of integers: sort each column of three once, then the median of (the
      // largest minimum, the median median, the smallest maximum): exact, and it vectorizes.
      if (Nx == 3 && Ny == 3 && rank_ == 4) {
        tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
          const std::int64_t i = job / C, c = job % C;
          median3x3_row<T>(p, m, c, i, W, C, reinterpret_cast<T*>(b.out.row(i)));
        });
        return;
      }
    }
    if constexpr (sizeof(T) == 1) {
      // Tall windows: Perreault-Hebert, whose cost does not grow with the window.
      if (Ny > kHuangRows && Nx * Ny < 65536) {  // the counts are 16-bit
        const std::int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
        tbb::parallel_for(std::int64_t{0}, chunks * C, [&](std::int64_t job) {
          const std::int64_t i0 = (job / C) * kChunkRows, c = job % C;
          column_histogram_rows<T>(p, m, c, i0, std::min(rows, i0 + kChunkRows), Nx, Ny, W, C,
                                   b.out);
        });
        return;
      }
    }
    tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
      const std::int64_t i = job / C, c = job % C;
      T* out = reinterpret_cast<T*>(b.out.row(i));
      if constexpr (sizeof(T) == 1 || (sizeof(T) == 2 && std::is_integral_v<T>))
        histogram_row<T>(p, m, c, i, Nx, Ny, W, C, out);
      else
        select_row<T>(p, m, c, i, Nx, Ny, W, C, out);
    });
  }

  template <class T>
  static void median3x3_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                            std::int64_t W, std::int64_t C, T* out) {
    const std::int64_t Wp = p.width;
    const T* r0 = p.row(c, i, m);
    const T* r1 = p.row(c, i + 1, m);
    const T* r2 = p.row(c, i + 2, m);
    std::vector<T> lo(static_cast<std::size_t>(Wp)), md(lo.size()), hi(lo.size());
    for (std::int64_t q = 0; q < Wp; ++q) {
      const T a = std::min(r0[q], r1[q]), b = std::max(r0[q], r1[q]);
      lo[q] = std::min(a, r2[q]);
      hi[q] = std::max(b, r2[q]);
      md[q] = std::max(a, std::min(b, r2[q]));
    }
    auto med3 = [](T a, T b, T c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); };
    for (std::int64_t x = 0; x < W; ++x) {
      const T l = std::max(std::max(lo[x], lo[x + 1]), lo[x + 2]);
      const T h = std::min(std::min(hi[x], hi[x + 1]), hi[x + 2]);
      out[x * C + c] = med3(l, med3(md[x], md[x + 1], md[x + 2]), h);
    }
  }

  // Windows taller than this use column histograms (8 bits): Huang's per-step cost grows with
  // the height, Perreault-Hebert's (two 256-bin vector updates) does not.
  static constexpr std::int64_t kHuangRows = 48;
  static constexpr std::int64_t kChunkRows = 16;  // output rows sharing one set of column counts

  // Perreault-Hebert: a 256-bin histogram per padded column over the window's rows, moved down a
  // row at a time; the window's histogram moves along x by adding the entering column's and
  // subtracting the leaving one's; the answer is tracked as in Huang's.
  template <class T>
  void column_histogram_rows(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                             std::int64_t i1, std::int64_t Nx, std::int64_t Ny, std::int64_t W,
                             std::int64_t C, const BandView& outv) {
    constexpr std::int64_t offset = std::is_signed_v<T> ? 128 : 0;
    const std::int64_t Wp = p.width;
    std::vector<std::uint16_t> cols(static_cast<std::size_t>(Wp * 256), 0);
    auto col = [&](std::int64_t q) { return cols.data() + q * 256; };
    for (std::int64_t k = 0; k < Ny; ++k) {
      const T* r = p.row(c, i0 + k, m);
      for (std::int64_t q = 0; q < Wp; ++q) ++col(q)[r[q] + offset];
    }
    std::uint16_t kernel[256];
    for (std::int64_t i = i0; i < i1; ++i) {
      if (i > i0) {
        const T* gone = p.row(c, i - 1, m);
        const T* come = p.row(c, i + Ny - 1, m);
        for (std::int64_t q = 0; q < Wp; ++q) {
          --col(q)[gone[q] + offset];
          ++col(q)[come[q] + offset];
        }
      }
      std::fill(kernel, kernel + 256, std::uint16_t{0});
      for (std::int64_t q = 0; q < Nx; ++q)
        for (int v = 0; v < 256; ++v) kernel[v] = std::uint16_t(kernel[v] + col(q)[v]);
      T* out = reinterpret_cast<T*>(outv.row(i));
      std::int64_t v = 0, below = 0;
      for (std::int64_t x = 0; x < W; ++x) {
        if (x > 0) {
          const std::uint16_t* in = col(x + Nx - 1);
          const std::uint16_t* gone = col(x - 1);
          for (int b = 0; b < 256; ++b) kernel[b] = std::uint16_t(kernel[b] + in[b] - gone[b]);
          std::int64_t moved = 0;
          for (std::int64_t b = 0; b < v; ++b) moved += std::int64_t(in[b]) - std::int64_t(gone[b]);
          below += moved;
        }
        while (below > rank_) below -= kernel[--v];
        while (below + kernel[v] <= rank_) below += kernel[v++];
        out[x * C + c] = static_cast<T>(v - offset);
      }
    }
  }

  // Huang's sliding histogram along the row: a column of Ny samples leaves and one enters per
  // step; the rank is found from the counts (two levels of 256 bins for 16-bit samples).
  template <class T>
  void histogram_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                     std::int64_t Nx, std::int64_t Ny, std::int64_t W, std::int64_t C, T* out) {
    constexpr bool wide = sizeof(T) == 2;
    constexpr std::int64_t offset = std::is_signed_v<T> ? (wide ? 32768 : 128) : 0;
    std::vector<std::uint32_t> fine(wide ? 65536 : 256, 0), coarse(256, 0);
    auto bin = [&](T v) { return static_cast<std::int64_t>(v) + offset; };
    auto add = [&](std::int64_t q, int d) {
      for (std::int64_t k = 0; k < Ny; ++k) {
        const std::int64_t v = bin(p.row(c, i + k, m)[q]);
        fine[static_cast<std::size_t>(v)] += d;
        if (wide) coarse[static_cast<std::size_t>(v >> 8)] += d;
      }
    };
    if constexpr (!wide) {
      // 8 bits: Huang's tracking of the answer v and of `below`, the samples under it; a step
      // moves v by a few bins, where a scan would cost up to 256.
      std::int64_t v = 0, below = 0;
      auto step = [&](std::int64_t q, int d) {
        for (std::int64_t k = 0; k < Ny; ++k) {
          const std::int64_t s = bin(p.row(c, i + k, m)[q]);
          fine[static_cast<std::size_t>(s)] += d;
          if (s < v) below += d;
        }
      };
      for (std::int64_t q = 0; q < Nx; ++q) step(q, 1);
      for (std::int64_t x = 0; x < W; ++x) {
        if (x > 0) {
          step(x - 1, -1);
          step(x + Nx - 1, 1);
        }
        while (below > rank_) below -= fine[static_cast<std::size_t>(--v)];
        while (below + static_cast<std::int64_t>(fine[static_cast<std::size_t>(v)]) <= rank_)
          below += fine[static_cast<std::size_t>(v++)];
        out[x * C + c] = static_cast<T>(v - offset);
      }
      return;
    }
    for (std::int64_t q = 0; q < Nx; ++q) add(q, 1);
    for (std::int64_t x = 0; x < W; ++x) {
      if (x > 0) {
        add(x - 1, -1);
        add(x + Nx - 1, 1);
      }
      std::int64_t left = rank_, v = 0;
      std::int64_t hi = 0;
      while (left >= static_cast<std::int64_t>(coarse[static_cast<std::size_t>(hi)]))
        left -= coarse[static_cast<std::size_t>(hi++)];
      v = hi << 8;
      while (left >= static_cast<std::int64_t>(fine[static_cast<std::size_t>(v)]))
        left -= fine[static_cast<std::size_t>(v++)];
      out[x * C + c] = static_cast<T>(v - offset);
    }
  }

  // Other types: the window's samples, partially sorted to the rank (NaN anywhere gives NaN).
  template <class T>
  void select_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                  std::int64_t Nx, std::int64_t Ny, std::int64_t W, std::int64_t C, T* out) {
    std::vector<T> win(static_cast<std::size_t>(Nx * Ny));
    for (std::int64_t x = 0; x < W; ++x) {
      bool nan = false;
      std::size_t n = 0;
      for (std::int64_t k = 0; k < Ny; ++k) {
        const T* r = p.row(c, i + k, m) + x;
        for (std::int64_t q = 0; q < Nx; ++q) {
          nan = nan || r[q] != r[q];
          win[n++] = r[q];
        }
      }
      if (nan) {
        out[x * C + c] = std::numeric_limits<T>::quiet_NaN();
        continue;
      }
      std::nth_element(win.begin(), win.begin() + rank_, win.end());
      out[x * C + c] = win[static_cast<std::size_t>(rank_)];
    }
  }

  Window w_;
  std::int64_t rank_;
};

class Rank final : public Operation {
 public:
  Rank(const ImageSpec& in, const Window& w, std::int64_t rank) : in_(in), w_(w), rank_(rank) {}
  std::string describe() const override {
    return "rank " + std::to_string(rank_) + " of " + window_text(w_) + ", border " +
           std::string(name(w_.border));
  }
  std::string fingerprint() const override {
    char v[40];
    std::snprintf(v, sizeof v, "%.17g", w_.border_value);
    return describe() + " (value " + v + ") " + std::string(name(in_.type));
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return std::max(w_.y.left, w_.y.right); }
  BorderMode border() const override { return w_.border; }
  std::size_t cpu_scratch_bytes(std::int64_t rows) const override {
    return static_cast<std::size_t>(rows + w_.y.left + w_.y.right) *
               static_cast<std::size_t>(in_.width + w_.x.left + w_.x.right) * in_.pixel_bytes() +
           (65536 + 256) * 4;
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<RankKernel>(w_, rank_);
  }
  double cpu_ns_per_sample() const override {
    return 2.0 + 0.5 * double(w_.y.left + w_.y.right + 1);
  }

 private:
  ImageSpec in_;
  Window w_;
  std::int64_t rank_;
};

}  // namespace

#if !defined(OOC_HAVE_CUDA)
namespace detail {
// A build without CUDA: has_cuda() says no, so these are never called.
std::unique_ptr<CudaKernel> make_minmax_cuda(bool, std::int64_t, std::int64_t, std::int64_t,
                                             std::int64_t, BorderMode, double) {
  return nullptr;
}
std::unique_ptr<CudaKernel> make_tophat_cuda(const std::vector<int>&, const ChainGeometry&, int) {
  return nullptr;
}
}  // namespace detail
#endif

std::int64_t rank_of_percentile(double q, std::int64_t n) {
  if (q < 0) q += 100.0;
  if (q == 100.0) return n - 1;
  return static_cast<std::int64_t>(double(n) * q / 100.0);
}

std::unique_ptr<Operation> make_rank(const ImageSpec& input, const RankParams& p) {
  constexpr std::int64_t kMax = std::int64_t{1} << 20;
  if (p.height < 1 || p.width < 1 || p.height > kMax || p.width > kMax)
    throw Error(ErrorKind::usage, "the window " + std::to_string(p.height) + "x" +
                                      std::to_string(p.width) +
                                      " is not a size: give 1 to 1048576 rows and columns");
  const std::int64_t n = p.height * p.width;
  if (p.rank < 0 || p.rank >= n)
    throw Error(ErrorKind::usage, "rank " + std::to_string(p.rank) + " is not in the window's " +
                                      std::to_string(n) + " samples (0 to " +
                                      std::to_string(n - 1) + ")");
  MorphParams m;
  m.height = p.height;
  m.width = p.width;
  m.border = p.border;
  m.border_value = p.border_value;
  // The extremes are the minimum and maximum filters (as scipy does too).
  if (p.rank == 0 || p.rank == n - 1) {
    m.kind = p.rank == 0 ? MorphKind::minimum : MorphKind::maximum;
    return make_morphology(input, m);
  }
  return std::make_unique<Rank>(input, window(m, false, false), p.rank);
}

std::unique_ptr<Operation> make_morphology(const ImageSpec& input, const MorphParams& p) {
  constexpr std::int64_t kMax = std::int64_t{1} << 20;
  if (p.height < 1 || p.width < 1 || p.height > kMax || p.width > kMax)
    throw Error(ErrorKind::usage, "the window " + std::to_string(p.height) + "x" +
                                      std::to_string(p.width) +
                                      " is not a size: give 1 to 1048576 rows and columns");
  const std::string size = std::to_string(p.height) + "x" + std::to_string(p.width);
  auto mm = [&](bool max, bool dilation) {
    return std::make_unique<MinMax>(input, window(p, max, dilation));
  };
  switch (p.kind) {
    case MorphKind::minimum:
      return mm(false, false);
    case MorphKind::maximum:
      return mm(true, false);
    case MorphKind::opening:
      return std::make_unique<Morphology>(input, p, mm(false, false), mm(true, true), 0,
                                          "opening " + size);
    case MorphKind::closing:
      return std::make_unique<Morphology>(input, p, mm(true, true), mm(false, false), 0,
                                          "closing " + size);
    case MorphKind::white_tophat:
      return std::make_unique<Morphology>(input, p, mm(false, false), mm(true, true), 1,
                                          "white top-hat " + size);
    case MorphKind::black_tophat:
      return std::make_unique<Morphology>(input, p, mm(true, true), mm(false, false), -1,
                                          "black top-hat " + size);
  }
  throw Error(ErrorKind::usage, "unknown morphology");
}

}  // namespace ooc
