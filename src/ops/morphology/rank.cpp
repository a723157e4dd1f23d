// Minimum/maximum filters and grey morphology (see ooc/ops/rank.hpp): the van Herk kernels of
// kernels/cpu/morphology/minmax.hpp on a band, and the compositions run as a chain of two such
// stages, each applying the border rule to its own input, as scipy.ndimage composes them.
#include "ooc/ops/rank.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "io/npy.hpp"
#include "kernels/cpu/morphology/border_constant.hpp"
#include "kernels/cpu/morphology/median_network.hpp"
#include "kernels/cpu/morphology/minmax.hpp"
#include "kernels/cpu/morphology/rank_keys.hpp"
#include "kernels/cpu/morphology/rank_network.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/pipeline/chain_impl.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace detail {
// rank_cuda.cpp: the rank filter on CUDA of the window rows x cols from row -top, column -left,
// by `path`: registers, `samples` the (row, column) of its samples in that rectangle (up to 49,
// rows and columns up to 15); sliding histograms (u8, u16, i16, up to 65535 samples; their counts
// in shared memory, no scratch) or a radix select (u32, i32, f32, f64; a tile of keys in shared
// memory) of the whole rectangle, or of `mask`'s ones (row-major over it) where there is one.
std::unique_ptr<CudaKernel> make_rank_cuda(const std::vector<int>& devices, RankCudaPath path,
                                           std::int64_t top, std::int64_t left, std::int64_t rows,
                                           std::int64_t cols,
                                           const std::vector<std::pair<int, int>>& samples,
                                           const std::vector<std::uint8_t>* mask, std::int64_t rank,
                                           BorderMode border, double border_value);
// The minimum/maximum over the ones of `mask` (rows x cols, row-major) from row -ly, column -lx.
std::unique_ptr<CudaKernel> make_minmax_footprint_cuda(const std::vector<int>& devices, bool max,
                                                       std::int64_t ly, std::int64_t lx,
                                                       std::int64_t rows, std::int64_t cols,
                                                       const std::vector<std::uint8_t>& mask,
                                                       BorderMode border, double border_value);
}  // namespace detail
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

using kernels::constant_of;  // the constant border in the image's type

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

// The window: a rectangle of y.left + y.right + 1 rows and x.left + x.right + 1 columns, or
// the samples of it where `mask` (row-major over that rectangle) is 1.
struct Window {
  bool max = false;
  Extent y, x;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::shared_ptr<const std::vector<std::uint8_t>> mask;  // none: every sample
  std::string footprint;                                  // the mask's file and digest
  std::int64_t rows() const { return y.left + y.right + 1; }
  std::int64_t cols() const { return x.left + x.right + 1; }
};

// A footprint row's run of ones: row k of the window, columns [a, a + len).
struct Run {
  std::int64_t k, a, len;
};
std::vector<Run> runs_of(const Window& w) {
  std::vector<Run> r;
  const std::int64_t Nx = w.cols();
  for (std::int64_t k = 0; k < w.rows(); ++k)
    for (std::int64_t q = 0; q < Nx;) {
      if (!(*w.mask)[static_cast<std::size_t>(k * Nx + q)]) {
        ++q;
        continue;
      }
      const std::int64_t a = q;
      while (q < Nx && (*w.mask)[static_cast<std::size_t>(k * Nx + q)]) ++q;
      r.push_back({k, a, q - a});
    }
  return r;
}

// Input rows [first, first + m) of a band, each padded by the border rule to W + Nx - 1 samples
// per channel, channels interleaved: padded column q is image column q - x.left.
template <class T>
void pad_rows(const CpuBand& b, const Window& w, std::int64_t first, std::int64_t m, T* pad) {
  const std::int64_t W = b.in.width, C = b.in.channels, Sp = (W + w.cols() - 1) * C;
  const T cval = constant_of<T>(w.border_value);
  tbb::parallel_for(std::int64_t{0}, m, [&](std::int64_t k) {
    T* d = pad + k * Sp;
    const T* in = reinterpret_cast<const T*>(b.rows[first + k]);
    if (in == nullptr) {
      std::fill(d, d + Sp, cval);
      return;
    }
    // The row itself, then the border columns on either side.
    std::memcpy(d + w.x.left * C, in, static_cast<std::size_t>(W * C) * sizeof(T));
    for (std::int64_t q = 0; q < W + w.cols() - 1; ++q) {
      if (q == w.x.left) q += W;
      if (q >= W + w.cols() - 1) break;
      const std::int64_t s = map_border(q - w.x.left, W, w.border);
      for (std::int64_t c = 0; c < C; ++c) d[q * C + c] = s < 0 ? cval : in[s * C + c];
    }
  });
}

// Minimum or maximum over a footprint: for each run length L of its rows, van Herk's running
// extreme of every padded input row over L samples, then each run of that length folds its
// row and offset into the output (a contiguous, vectorized pick per run and output row).
class MinMaxFootprintKernel final : public CpuKernel {
 public:
  explicit MinMaxFootprintKernel(const Window& w) : w_(w), runs_(runs_of(w)) {}
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
    const std::int64_t Nx = w_.cols(), Ny = w_.rows(), Wp = W + Nx - 1, Sp = Wp * C;
    const std::int64_t m = rows + Ny - 1, first = b.halo - w_.y.left;
    detail::ScratchBuffer buf = pool_.take(2 * static_cast<std::size_t>(m * Sp) * sizeof(T));
    T* pad = reinterpret_cast<T*>(buf.data());
    T* ext = pad + m * Sp;
    pad_rows<T>(b, w_, first, m, pad);
    // The identity of the pick: the window's samples replace it (a NaN too).
    T init;
    if constexpr (std::is_floating_point_v<T>)
      init = Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else
      init = Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t i) {
      T* o = reinterpret_cast<T*>(b.out.row(i));
      std::fill(o, o + S, init);
    });
    std::vector<std::int64_t> lengths;
    for (const Run& r : runs_) lengths.push_back(r.len);
    std::sort(lengths.begin(), lengths.end());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
    for (const std::int64_t L : lengths) {
      const T* E = pad;
      if (L > 1) {
        E = ext;
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, m, 4), [&](const auto& r) {
          std::vector<T> p(static_cast<std::size_t>(Sp)), g(p.size());
          for (std::int64_t k = r.begin(); k < r.end(); ++k) {
            std::copy(pad + k * Sp, pad + (k + 1) * Sp, p.data());
            kernels::running_extreme<Max, T>(p.data(), g.data(), ext + k * Sp, Wp - L + 1, L,
                                             static_cast<int>(C));
          }
        });
      }
      tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t i) {
        T* o = reinterpret_cast<T*>(b.out.row(i));
        for (const Run& r : runs_) {
          if (r.len != L) continue;
          const T* e = E + (i + r.k) * Sp + r.a * C;
          for (std::int64_t x = 0; x < S; ++x) o[x] = kernels::pick<Max>(o[x], e[x]);
        }
      });
    }
    pool_.give(std::move(buf));
  }

  Window w_;
  std::vector<Run> runs_;
  Pool pool_;
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
    if constexpr (std::is_integral_v<T>) {
      run_columns_first<Max, T>(b);
      return;
    }
    const std::int64_t W = b.in.width, C = b.in.channels, S = W * C, rows = b.band.rows;
    const std::int64_t Nx = w_.x.left + w_.x.right + 1, Ny = w_.y.left + w_.y.right + 1;
    const std::int64_t m = rows + Ny - 1, first = b.halo - w_.y.left;
    const T cval = constant_of<T>(w_.border_value);
    detail::ScratchBuffer buf = pool_.take(2 * static_cast<std::size_t>(m * S) * sizeof(T));
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

  // Integers, whose minimum and maximum do not depend on the order the samples are combined in:
  // down the columns first (vectorized, over the band and its halo rows), then along the rows of
  // the output only, so that the row pass (serial within each block) does not run again on the
  // halo rows each band shares with the next. Floats keep the rows-first order above, which the
  // GPU's kernels follow for signed zeros.
  template <bool Max, class T>
  void run_columns_first(const CpuBand& b) {
    const std::int64_t W = b.in.width, C = b.in.channels, rows = b.band.rows;
    const std::int64_t Nx = w_.cols(), Ny = w_.rows(), Sp = (W + Nx - 1) * C;
    const std::int64_t m = rows + Ny - 1, first = b.halo - w_.y.left;
    detail::ScratchBuffer buf = pool_.take(2 * static_cast<std::size_t>(m * Sp) * sizeof(T));
    T* Pbase = reinterpret_cast<T*>(buf.data());
    T* Gbase = Pbase + m * Sp;
    pad_rows<T>(b, w_, first, m, Pbase);
    std::vector<T*> P(static_cast<std::size_t>(m)), G(static_cast<std::size_t>(m));
    for (std::int64_t k = 0; k < m; ++k) P[k] = Pbase + k * Sp, G[k] = Gbase + k * Sp;
    if (Ny > 1) {
      const std::int64_t blocks = (m + Ny - 1) / Ny;
      tbb::parallel_for(std::int64_t{0}, blocks, [&](std::int64_t blk) {
        const std::int64_t k0 = blk * Ny, k1 = std::min(m, k0 + Ny);
        kernels::prefix_rows<Max, T>(P.data(), G.data(), k0, k1, Ny, Sp);
        kernels::suffix_rows<Max, T>(P.data(), k0, k1, Ny, m, Sp);
      });
    }
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, rows, 4), [&](const auto& r) {
      std::vector<T> col(static_cast<std::size_t>(Sp)), g(col.size());
      for (std::int64_t i = r.begin(); i < r.end(); ++i) {
        T* o = reinterpret_cast<T*>(b.out.row(i));
        T* c = Nx == 1 ? o : col.data();
        if (Ny == 1) {
          std::memcpy(c, P[i], static_cast<std::size_t>(Sp) * sizeof(T));
        } else {
          const T* a = P[i];
          const T* e = G[i + Ny - 1];
          for (std::int64_t x = 0; x < Sp; ++x) c[x] = kernels::pick<Max>(a[x], e[x]);
        }
        if (Nx > 1) kernels::running_extreme<Max, T>(c, g.data(), o, W, Nx, static_cast<int>(C));
      }
    });
    pool_.give(std::move(buf));
  }

  Window w_;
  Pool pool_;
};

std::string window_text(const Window& w) {
  return (w.mask ? "footprint " + w.footprint + " of " : std::string()) + std::to_string(w.rows()) +
         "x" + std::to_string(w.cols());
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
    // With a footprint: two padded planes, and two padded rows per thread.
    return 2 * static_cast<std::size_t>(rows + w_.y.left + w_.y.right) *
               static_cast<std::size_t>(in_.width + w_.x.left + w_.x.right) * in_.pixel_bytes() +
           2 * static_cast<std::size_t>(in_.width + w_.x.left + w_.x.right) * in_.pixel_bytes();
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    // The x pass's rows; a footprint's by lengths, padded (none output by output).
    const auto m = static_cast<std::size_t>(rows + w_.y.left + w_.y.right);
    if (!w_.mask) return m * in_.row_bytes();
    return m * static_cast<std::size_t>(in_.width + w_.cols() - 1) * in_.pixel_bytes();
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    if (w_.mask) return std::make_unique<MinMaxFootprintKernel>(w_);
    return std::make_unique<MinMaxKernel>(w_);
  }
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }  // selections, no arithmetic
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    if (w_.mask)
      return detail::make_minmax_footprint_cuda(devices, w_.max, w_.y.left, w_.x.left, w_.rows(),
                                                w_.cols(), *w_.mask, w_.border, w_.border_value);
    return detail::make_minmax_cuda(w_.max, w_.y.left, w_.y.right, w_.x.left, w_.x.right, w_.border,
                                    w_.border_value);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::minmax;
    c.window_rows = double(w_.y.left + w_.y.right + 1);
    c.window_cols = double(w_.x.left + w_.x.right + 1);
    if (w_.mask) {
      std::vector<std::int64_t> lengths;
      for (const Run& r : runs_of(w_)) lengths.push_back(r.len);
      std::sort(lengths.begin(), lengths.end());
      c.footprint_runs = double(lengths.size());
      c.footprint_lengths = double(std::unique(lengths.begin(), lengths.end()) - lengths.begin());
      c.floating = in_.type == SampleType::f32 || in_.type == SampleType::f64;
      c.window_samples = double(std::count(w_.mask->begin(), w_.mask->end(), std::uint8_t{1}));
    }
    return c;
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
  void start(int slot) override { chain_->start(slot); }
  void stop(int slot) override { chain_->stop(slot); }
  void run(const CpuBand& b) override {
    if (sign_ == 0) {
      chain_->run(b);
      return;
    }
    detail::ScratchBuffer buf =
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
  bool has_cuda() const override { return first_->has_cuda() && second_->has_cuda(); }
  bool cpu_gives_cuda_bits() const override { return true; }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    return detail::make_tophat_cuda(devices, g_, sign_);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::morphology;
    c.stages = {first_->cost(), second_->cost()};
    return c;
  }

 private:
  ImageSpec in_;
  MorphParams p_;
  std::unique_ptr<Operation> first_, second_;
  int sign_;
  std::string what_;
  detail::ChainGeometry g_;
};

// FNV-1a of the mask: a resumed run's fingerprint notices another footprint of the same name.
std::string digest_of(const std::vector<std::uint8_t>& mask) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint8_t v : mask) h = (h ^ v) * 1099511628211ull;
  char t[24];
  std::snprintf(t, sizeof t, "%016llx", static_cast<unsigned long long>(h));
  return t;
}

// The dilations of grey_opening/closing use the footprint mirrored (scipy's grey_dilation).
Window window(const MorphParams& p, bool max, bool dilation) {
  Window w;
  w.max = max;
  w.border = p.border;
  w.border_value = p.border_value;
  if (p.footprint.empty()) {
    w.y = extent(p.height, dilation);
    w.x = extent(p.width, dilation);
    return w;
  }
  const Footprint& f = p.footprint;
  w.y = extent(f.height, false);
  w.x = extent(f.width, false);
  if (f.count() == f.height * f.width) return w;  // all ones: the rectangle's fast paths
  std::vector<std::uint8_t> m = f.mask;
  if (dilation) std::reverse(m.begin(), m.end());
  w.footprint = (f.name.empty() ? std::string("(mask)") : f.name) + " [" + digest_of(m) + "]";
  w.mask = std::make_shared<const std::vector<std::uint8_t>>(std::move(m));
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
  RankKernel(const Window& w, std::int64_t rank, std::shared_ptr<Pool> pool)
      : w_(w),
        rank_(rank),
        runs_(w.mask ? runs_of(w) : std::vector<Run>{}),
        pool_(std::move(pool)) {
    const std::int64_t n = (w.x.left + w.x.right + 1) * (w.y.left + w.y.right + 1);
    if (!w.mask && n <= kernels::kMaxNetworkSamples)
      net_ = kernels::make_selection_network(static_cast<int>(n), static_cast<int>(rank));
  }
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
    // The 3 x 3 and 5 x 5 medians of one channel: the network reads the image rows themselves
    // (no padded planes: their copy and fresh pages took about a third of a 3 x 3 u8 median's
    // time), the two vectors at the row's edges from pieces padded by the border rule.
    if (!w_.mask && C == 1 && Nx == Ny && (Nx == 3 || Nx == 5) && w_.x.left == Nx / 2 &&
        rank_ == Nx * Nx / 2) {
      const std::int64_t L = cpu::median_network_lanes(sizeof(T)), h = Nx / 2;
      if (L <= kMaxDirectLanes && W >= 2 * L + Nx) {
        std::vector<T> constant;  // the rows of a constant border
        for (std::int64_t k = 0; k < m && constant.empty(); ++k)
          if (b.rows[first + k] == nullptr) constant.assign(static_cast<std::size_t>(W), cval);
        const int n = static_cast<int>(Nx);
        std::int64_t sl[kMaxDirectLanes + 4], sr[kMaxDirectLanes + 4];  // the pieces' columns
        for (std::int64_t q = 0; q < L + Nx - 1; ++q) {
          sl[q] = map_border(q - h, W, w_.border);
          sr[q] = map_border(W - L - h + q, W, w_.border);
        }
        tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t i) {
          const T* r[5];
          T left[5][kMaxDirectLanes + 4], right[5][kMaxDirectLanes + 4];
          const T *lp[5], *rp[5];
          for (int k = 0; k < n; ++k) {
            const T* in = reinterpret_cast<const T*>(b.rows[first + i + k]);
            r[k] = in != nullptr ? in : constant.data();
            for (std::int64_t q = 0; q < L + Nx - 1; ++q) {
              left[k][q] = sl[q] < 0 ? cval : r[k][sl[q]];
              right[k][q] = sr[q] < 0 ? cval : r[k][sr[q]];
            }
            lp[k] = left[k], rp[k] = right[k];
          }
          cpu::median_network_row_direct(n, r, lp, rp, W, reinterpret_cast<T*>(b.out.row(i)));
        });
        return;
      }
    }
    Planes<T> p;
    p.width = Wp;
    p.data.resize(static_cast<std::size_t>(C * m * Wp));
    tbb::parallel_for(std::int64_t{0}, m, [&](std::int64_t k) {
      const T* in = reinterpret_cast<const T*>(b.rows[first + k]);
      for (std::int64_t c = 0; c < C; ++c) {
        T* d = const_cast<T*>(p.row(c, k, m));
        if (in == nullptr) {
          std::fill(d, d + Wp, cval);
          continue;
        }
        // The row's own samples (a border lookup per sample took most of a 3 x 3 median's
        // time), then the border columns on either side.
        if (C == 1)
          std::memcpy(d + w_.x.left, in, static_cast<std::size_t>(W) * sizeof(T));
        else
          for (std::int64_t x = 0; x < W; ++x) d[w_.x.left + x] = in[x * C + c];
        for (std::int64_t q = 0; q < Wp; ++q) {
          if (q == w_.x.left) q += W;
          if (q >= Wp) break;
          const std::int64_t s = map_border(q - w_.x.left, W, w_.border);
          d[q] = s < 0 ? cval : in[s * C + c];
        }
      }
    });
    constexpr bool counted = sizeof(T) == 1 || (sizeof(T) == 2 && std::is_integral_v<T>);
    if constexpr (!counted) {
      // Floats and 32-bit integers, windows beyond the networks: ranked histograms.
      const std::int64_t samples = w_.mask ? std::int64_t(footprint_samples()) : Nx * Ny;
      if (samples > (w_.mask ? kRankedFootprint : kernels::kMaxNetworkSamples)) {
        const std::vector<Run> runs = w_.mask ? runs_ : rectangle_runs(Nx, Ny);
        strip_jobs(rows, W, C, kRankedRows, kRankedCols,
                   [&](std::int64_t c, std::int64_t i0, std::int64_t i1, std::int64_t x0,
                       std::int64_t x1) {
                     ranked_rows<T>(p, m, c, i0, i1, x0, x1, Nx, Ny, C, runs, b.out);
                   });
        return;
      }
    }
    if (w_.mask) {
      tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
        const std::int64_t i = job / C, c = job % C;
        T* out = reinterpret_cast<T*>(b.out.row(i));
        if constexpr (counted)
          footprint_histogram_row<T>(p, m, c, i, W, C, out);
        else
          footprint_select_row<T>(p, m, c, i, W, C, out);
      });
      return;
    }
    // The 5 x 5 median of every type: a selection network on vectors of adjacent columns.
    if (Nx == 5 && Ny == 5 && rank_ == 12 && W >= cpu::median_network_min_width(sizeof(T))) {
      tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
        const std::int64_t i = job / C, c = job % C;
        const T* r[5];
        for (int k = 0; k < 5; ++k) r[k] = p.row(c, i + k, m);
        cpu::median_network_row(5, r, W, reinterpret_cast<T*>(b.out.row(i)) + c, C);
      });
      return;
    }
    // The 3 x 3 median of every type: the 19-exchange network, NaN-aware as the 5 x 5's (the
    // column sort below would let a NaN through; nth_element took 7x the 5 x 5's time). For 8-
    // and 16-bit integers too: the column sort took 2.5x the 5 x 5 network's time there.
    if (Nx == 3 && Ny == 3 && rank_ == 4 && W >= cpu::median_network_min_width(sizeof(T))) {
      tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
        const std::int64_t i = job / C, c = job % C;
        const T* r[3];
        for (int k = 0; k < 3; ++k) r[k] = p.row(c, i + k, m);
        cpu::median_network_row(3, r, W, reinterpret_cast<T*>(b.out.row(i)) + c, C);
      });
      return;
    }
    if constexpr (std::is_integral_v<T>) {
      // The 3 x 3 median of integers narrower than the network's vectors: sort each column of
      // three once, then the median of (the largest minimum, the median median, the smallest
      // maximum): exact.
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
        strip_jobs(rows, W, C, kChunkRows, kStripCols,
                   [&](std::int64_t c, std::int64_t i0, std::int64_t i1, std::int64_t x0,
                       std::int64_t x1) {
                     column_histogram_rows<T>(p, m, c, i0, i1, x0, x1, Nx, Ny, C, b.out);
                   });
        return;
      }
    }
    if constexpr (sizeof(T) == 2 && std::is_integral_v<T>) {
      if (wide_column_histograms(Nx, Ny)) {
        strip_jobs(rows, W, C, kChunkRows16, kStripCols16,
                   [&](std::int64_t c, std::int64_t i0, std::int64_t i1, std::int64_t x0,
                       std::int64_t x1) {
                     column_histogram_rows16<T>(p, m, c, i0, i1, x0, x1, Nx, Ny, C, b.out);
                   });
        return;
      }
    }
    if constexpr (!(sizeof(T) == 1 || (sizeof(T) == 2 && std::is_integral_v<T>))) {
      // Windows of up to 128 samples of the other types: a selection network on vectors of
      // adjacent columns (7 x 7 f32: 319 compare-exchanges for 8 outputs instead of a
      // nth_element per output, an order of magnitude slower).
      if (!net_.pairs.empty() && W >= kernels::kLanes25<T>) {
        tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
          const std::int64_t i = job / C, c = job % C;
          const T* r[kernels::kMaxNetworkSamples];
          for (std::int64_t k = 0; k < Ny; ++k) r[k] = p.row(c, i + k, m);
          kernels::select_row_network<T>(net_, r, static_cast<int>(Ny), static_cast<int>(Nx), W,
                                         reinterpret_cast<T*>(b.out.row(i)) + c, C);
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

  std::size_t footprint_samples() const {
    std::size_t n = 0;
    for (const Run& r : runs_) n += static_cast<std::size_t>(r.len);
    return n;
  }
  static std::vector<Run> rectangle_runs(std::int64_t Nx, std::int64_t Ny) {
    std::vector<Run> v;
    for (std::int64_t k = 0; k < Ny; ++k) v.push_back({k, 0, Nx});
    return v;
  }

  // Floats and 32-bit integers, windows too large for the selection networks (and footprints of
  // more than kRankedFootprint samples): the job's input samples are ranked (their distinct values
  // sorted once, a job being a strip of output columns by a chunk of rows), then Huang's sliding
  // histogram runs along each output row over those ranks, in two levels (kRankBin ranks a coarse
  // bin, the answer's coarse bin tracked from step to step): two updates per run of the window's
  // rows per step, whatever the window's area, against a selection among all its samples per
  // output before (nth_element: 9.7 us an output at 51 x 51 f32 here). Equal values share a rank,
  // so the answer is exact; -0 and +0 are one value, given as +0 (as the GPU's radix select gives
  // it). A window holding a NaN gives NaN: NaN ranks last and is counted.
  template <class T>
  void ranked_rows(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                   std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                   std::int64_t Ny, std::int64_t C, const std::vector<Run>& runs,
                   const BandView& out) const {
    // The samples' keys, unsigned in the values' order (NaN last, -0 as +0), as the GPU's.
    using Keys = kernels::RankKey<T>;
    using K = typename Keys::type;
    const std::int64_t rows = i1 - i0 + Ny - 1, cols = x1 - x0 + Nx - 1;
    const auto n = static_cast<std::size_t>(rows * cols);
    auto key = [](T v) { return Keys::of(v); };
    // (key, position) sorted: 32-bit keys in one 64-bit word, 64-bit ones in pairs.
    std::vector<std::uint32_t> rank(n);
    std::vector<T> value;  // of each rank
    auto sample = [&](std::size_t at) {
      return p.row(c, i0 + static_cast<std::int64_t>(at) / cols, m)[x0 + at % cols];
    };
    auto assign = [&](std::size_t at, K k, K& last) {
      if (value.empty() || k != last) {
        value.push_back(Keys::value(k));  // zeros as +0, as the GPU gives them
        last = k;
      }
      rank[at] = static_cast<std::uint32_t>(value.size() - 1);
    };
    K last = 0;
    if constexpr (sizeof(K) == 4) {
      std::vector<std::uint64_t> order(n);
      for (std::size_t at = 0; at < n; ++at)
        order[at] = (std::uint64_t{key(sample(at))} << 32) | at;
      std::sort(order.begin(), order.end());
      for (const std::uint64_t o : order)
        assign(static_cast<std::size_t>(o & 0xFFFFFFFFu), static_cast<K>(o >> 32), last);
    } else {
      std::vector<std::pair<K, std::uint32_t>> order(n);
      for (std::size_t at = 0; at < n; ++at)
        order[at] = {key(sample(at)), static_cast<std::uint32_t>(at)};
      std::sort(order.begin(), order.end());
      for (const auto& [k, at] : order) assign(at, k, last);
    }
    const std::size_t distinct = value.size();
    const bool nan = std::is_floating_point_v<T> && last == Keys::nan;
    const std::uint32_t nan_rank = static_cast<std::uint32_t>(distinct - 1);
    std::vector<std::uint32_t> fine(distinct, 0), coarse(distinct / kRankBin + 2, 0);
    for (std::int64_t i = i0; i < i1; ++i) {
      T* o = reinterpret_cast<T*>(out.row(i));
      const std::uint32_t* base = rank.data() + (i - i0) * cols;
      std::int64_t cb = 0, below = 0;  // the answer's coarse bin, the samples in bins before it
      auto update = [&](std::uint32_t r, int d) {
        fine[r] += static_cast<std::uint32_t>(d);
        coarse[r / kRankBin] += static_cast<std::uint32_t>(d);
        if (std::int64_t(r / kRankBin) < cb) below += d;
      };
      auto window = [&](std::int64_t q0, int d) {
        for (const Run& u : runs)
          for (std::int64_t q = 0; q < u.len; ++q) update(base[u.k * cols + q0 + u.a + q], d);
      };
      window(0, 1);
      for (std::int64_t x = x0; x < x1; ++x) {
        const std::int64_t q = x - x0;
        if (q > 0)
          for (const Run& u : runs) {
            const std::uint32_t* r = base + u.k * cols + q + u.a;
            update(r[-1], -1);
            update(r[u.len - 1], 1);
          }
        if (nan && fine[nan_rank] > 0) {
          o[x * C + c] = std::numeric_limits<T>::quiet_NaN();
          continue;
        }
        while (below > rank_) below -= coarse[static_cast<std::size_t>(--cb)];
        while (below + coarse[static_cast<std::size_t>(cb)] <= rank_)
          below += coarse[static_cast<std::size_t>(cb++)];
        std::int64_t left = rank_ - below;
        std::size_t f = static_cast<std::size_t>(cb) * kRankBin;
        while (left >= fine[f]) left -= fine[f++];
        o[x * C + c] = value[f];
      }
      window(x1 - 1 - x0, -1);  // the counts back to zero for the next row
    }
  }

  // The column histograms' jobs, in parallel: a strip of output columns (whose column counts
  // stay in cache) by a chunk of rows (over which building the counts from Ny rows is spread),
  // per channel. fn(c, i0, i1, x0, x1): rows [i0, i1) and columns [x0, x1) of channel c.
  template <class Fn>
  static void strip_jobs(std::int64_t rows, std::int64_t W, std::int64_t C, std::int64_t chunk_rows,
                         std::int64_t strip_cols, const Fn& fn) {
    const std::int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
    const std::int64_t strips = (W + strip_cols - 1) / strip_cols;
    tbb::parallel_for(std::int64_t{0}, chunks * strips * C, [&](std::int64_t job) {
      const std::int64_t c = job % C, strip = (job / C) % strips;
      const std::int64_t i0 = (job / C / strips) * chunk_rows, x0 = strip * strip_cols;
      fn(c, i0, std::min(rows, i0 + chunk_rows), x0, std::min(W, x0 + strip_cols));
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

  // Ranked histograms (ranked_rows): ranks a coarse bin; a job's rows and columns.
  static constexpr std::uint32_t kRankBin = 16;
  static constexpr std::int64_t kRankedRows = 128;
  static constexpr std::int64_t kRankedCols = 512;
  // The most lanes of the direct 3 x 3 / 5 x 5 median's vectors (8-bit samples, 32-byte vectors).
  static constexpr std::int64_t kMaxDirectLanes = 32;
  // Windows taller than this use column histograms (8 bits): Huang's per-step cost grows with
  // the height, Perreault-Hebert's (two 256-bin vector updates) does not.
  static constexpr std::int64_t kHuangRows = 48;
  static constexpr std::int64_t kChunkRows = 128;   // output rows sharing one set of column counts
  static constexpr std::int64_t kStripCols = 1024;  // output columns a job: ~0.6 MiB of counts
  // 16 bits: a job's second pass keeps a column's fine counts of kGroup coarse bins (9 blocks of
  // 544 bytes with the coarse one), about 5 MiB for a strip of 512 and a window of 101 columns.
  static constexpr std::int64_t kChunkRows16 = 256;
  static constexpr std::int64_t kStripCols16 = 512;
  static constexpr std::int64_t kGroup = 8;

 public:
  static bool wide_column_histograms(std::int64_t Nx, std::int64_t Ny) {
    return Ny > kHuangRows && Nx * Ny < 65536;
  }
  // The bytes of a job's counts for windows of `cols` columns: the window's blocks (kGroup fine,
  // one coarse), the columns' (one coarse, kGroup fine each), then each output's coarse bin and
  // rank left in it.
  // Footprints of floats and 32-bit integers with more samples than this take ranked histograms
  // (the smaller ones select among their samples).
  static constexpr std::int64_t kRankedFootprint = 48;
  // Ranked histograms: a job's ranks, sort keys, values and counts, at most (32 bytes a sample
  // of its input).
  static std::size_t ranked_job_bytes(std::int64_t rows, std::int64_t cols) {
    return static_cast<std::size_t>((kRankedRows + rows - 1) * (kRankedCols + cols - 1)) * 32;
  }
  static std::size_t wide_job_bytes(std::int64_t cols) {
    const std::int64_t columns = kStripCols16 + cols - 1;
    return static_cast<std::size_t>((kGroup + 1 + columns * (kGroup + 1)) * kBlock * 2 +
                                    kChunkRows16 * kStripCols16 * 3);
  }

 private:
  // Perreault-Hebert: a 256-bin histogram per padded column over the window's rows, moved down a
  // row at a time; the window's histogram moves along x by adding the entering column's and
  // subtracting the leaving one's; the answer is tracked as in Huang's.
  template <class T>
  void column_histogram_rows(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                             std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                             std::int64_t Ny, std::int64_t C, const BandView& outv) {
    constexpr std::int64_t offset = std::is_signed_v<T> ? 128 : 0;
    // The padded columns of outputs [x0, x1): x0 .. x1 + Nx - 2, counted from x0.
    const std::int64_t Wp = x1 - x0 + Nx - 1;
    // Per padded column: 256 fine counts, then 16 coarse ones (sums of 16 fine bins each).
    constexpr std::int64_t kStride = 256 + 16;
    std::vector<std::uint16_t> cols(static_cast<std::size_t>(Wp * kStride), 0);
    auto col = [&](std::int64_t q) { return cols.data() + q * kStride; };
    auto count = [&](std::int64_t q, std::int64_t v, int d) {
      std::uint16_t* h = col(q);
      h[v] = std::uint16_t(h[v] + d);
      h[256 + (v >> 4)] = std::uint16_t(h[256 + (v >> 4)] + d);
    };
    for (std::int64_t k = 0; k < Ny; ++k) {
      const T* r = p.row(c, i0 + k, m) + x0;
      for (std::int64_t q = 0; q < Wp; ++q) count(q, r[q] + offset, 1);
    }
    alignas(32) std::uint16_t kernel[kStride];
    for (std::int64_t i = i0; i < i1; ++i) {
      if (i > i0) {
        const T* gone = p.row(c, i - 1, m) + x0;
        const T* come = p.row(c, i + Ny - 1, m) + x0;
        for (std::int64_t q = 0; q < Wp; ++q) {
          count(q, gone[q] + offset, -1);
          count(q, come[q] + offset, 1);
        }
      }
      std::fill(kernel, kernel + kStride, std::uint16_t{0});
      for (std::int64_t q = 0; q < Nx; ++q) add_counts(kernel, col(q), nullptr);
      T* out = reinterpret_cast<T*>(outv.row(i));
      for (std::int64_t x = 0; x < x1 - x0; ++x) {
        // The window moves by a column: the entering column's counts in, the leaving one's out
        // (one pass of 272 lanes, vectorized); then the rank's coarse bin, and its fine bin in
        // it (at most 32 steps, where tracking the answer cost a scan up to it per output).
        if (x > 0) add_counts(kernel, col(x + Nx - 1), col(x - 1));
        std::int64_t left = rank_, hi = 0;
        while (left >= kernel[256 + hi]) left -= kernel[256 + hi++];
        std::int64_t v = hi << 4;
        while (left >= kernel[v]) left -= kernel[v++];
        out[(x0 + x) * C + c] = static_cast<T>(v - offset);
      }
    }
  }

  // 16 bits, tall windows: Perreault-Hebert on two levels of 256 bins, in two passes over a job.
  // The first finds every output's high byte (coarse bin) as the 8-bit path does, from column
  // counts of high bytes, and keeps it with the rank left within that bin. The second finds the
  // low byte, for a group of up to kGroup of the coarse bins the outputs fell in at a time: its
  // columns count only the samples in those bins (so they stay small, and a sample outside them
  // costs one look-up), and the window's counts of a bin are brought up to date when an output
  // falls in it, from the columns that entered and left since its last use or rebuilt from the
  // window's Nx columns, whichever reads fewer. Every block of 256 counts carries 16 sums of 16
  // for the search (at most 32 steps a level), each sum before its 16 counts so that a sample's
  // two increments share a cache line.
  static constexpr std::int64_t kBlock = 272;
  static constexpr std::int64_t lane(std::int64_t v) { return 17 * (v >> 4) + 1 + (v & 15); }
  static constexpr std::int64_t sum_lane(std::int64_t v) { return 17 * (v >> 4); }
  // The bin in a block's 256 whose counts reach past `left` (reduced by those below it).
  static std::int64_t find_in_block(const std::uint16_t* k, std::int64_t& left) {
    std::int64_t j = 0;
    while (left >= k[17 * j]) left -= k[17 * j++];
    const std::uint16_t* f = k + 17 * j + 1;
    std::int64_t t = 0;
    while (left >= f[t]) left -= f[t++];
    return 16 * j + t;
  }

  template <class T>
  void column_histogram_rows16(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                               std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                               std::int64_t Ny, std::int64_t C, const BandView& outv) const {
    constexpr std::int64_t offset = std::is_signed_v<T> ? 32768 : 0;
    const std::int64_t S = x1 - x0, Wp = S + Nx - 1, maxWp = kStripCols16 + Nx - 1;
    // Fixed offsets whatever the strip's width: the fine column counts, at the end, are zero
    // when the buffer goes back to the pool (every sample counted is taken out again), so a job
    // does not clear them.
    detail::ScratchBuffer buf = pool_->take(wide_job_bytes(Nx));
    std::uint16_t* kfine = reinterpret_cast<std::uint16_t*>(buf.data());  // kGroup blocks
    std::uint16_t* kcoarse = kfine + kGroup * kBlock;
    std::uint16_t* ccoarse = kcoarse + kBlock;               // maxWp blocks
    std::uint16_t* cfine = ccoarse + maxWp * kBlock;         // [group slot][column]: kGroup x maxWp
    std::uint16_t* lefts = cfine + kGroup * maxWp * kBlock;  // per output of the job
    std::uint8_t* his = reinterpret_cast<std::uint8_t*>(lefts + kChunkRows16 * kStripCols16);
    auto value = [&](const T* r, std::int64_t q) {
      return static_cast<std::int64_t>(r[q]) + offset;
    };
    auto bump = [](std::uint16_t* h, std::int64_t v, int d) {
      h[lane(v)] = std::uint16_t(h[lane(v)] + d);
      h[sum_lane(v)] = std::uint16_t(h[sum_lane(v)] + d);
    };

    // Pass 1: the coarse bins.
    std::fill(ccoarse, ccoarse + Wp * kBlock, std::uint16_t{0});
    for (std::int64_t k = 0; k < Ny; ++k) {
      const T* r = p.row(c, i0 + k, m) + x0;
      for (std::int64_t q = 0; q < Wp; ++q) bump(ccoarse + q * kBlock, value(r, q) >> 8, 1);
    }
    bool used[256] = {};
    for (std::int64_t i = i0; i < i1; ++i) {
      if (i > i0) {
        const T* gone = p.row(c, i - 1, m) + x0;
        const T* come = p.row(c, i + Ny - 1, m) + x0;
        for (std::int64_t q = 0; q < Wp; ++q) {
          bump(ccoarse + q * kBlock, value(gone, q) >> 8, -1);
          bump(ccoarse + q * kBlock, value(come, q) >> 8, 1);
        }
      }
      std::fill(kcoarse, kcoarse + kBlock, std::uint16_t{0});
      for (std::int64_t q = 0; q < Nx; ++q) add_counts(kcoarse, ccoarse + q * kBlock, nullptr);
      std::uint16_t* l = lefts + (i - i0) * S;
      std::uint8_t* h = his + (i - i0) * S;
      for (std::int64_t x = 0; x < S; ++x) {
        if (x > 0) add_counts(kcoarse, ccoarse + (x + Nx - 1) * kBlock, ccoarse + (x - 1) * kBlock);
        std::int64_t left = rank_;
        const std::int64_t hi = find_in_block(kcoarse, left);
        used[hi] = true;
        h[x] = static_cast<std::uint8_t>(hi);
        l[x] = static_cast<std::uint16_t>(left);
      }
    }

    // Pass 2: the fine bins, a group of coarse bins at a time.
    std::int8_t slot[256];
    for (std::int64_t b0 = 0; b0 < 256;) {
      std::fill(slot, slot + 256, std::int8_t{-1});
      std::int64_t n = 0;
      for (; b0 < 256 && n < kGroup; ++b0)
        if (used[b0]) slot[b0] = static_cast<std::int8_t>(n++);
      if (n == 0) break;
      auto fine_col = [&](std::int64_t g, std::int64_t q) { return cfine + (g * Wp + q) * kBlock; };
      auto count = [&](const T* r, std::int64_t q, int d) {
        const std::int64_t v = value(r, q), g = slot[v >> 8];
        if (g >= 0) bump(fine_col(g, q), v & 255, d);
      };
      auto count_rows = [&](std::int64_t first, int d) {
        for (std::int64_t k = 0; k < Ny; ++k) {
          const T* r = p.row(c, first + k, m) + x0;
          for (std::int64_t q = 0; q < Wp; ++q) count(r, q, d);
        }
      };
      count_rows(i0, 1);
      // last[g]: the output column whose window the fine counts of slot g hold; none: stale.
      constexpr std::int64_t none = -(std::int64_t{1} << 40);
      std::int64_t last[kGroup];
      for (std::int64_t i = i0; i < i1; ++i) {
        if (i > i0) {
          const T* gone = p.row(c, i - 1, m) + x0;
          const T* come = p.row(c, i + Ny - 1, m) + x0;
          for (std::int64_t q = 0; q < Wp; ++q) {
            count(gone, q, -1);
            count(come, q, 1);
          }
        }
        std::fill(last, last + kGroup, none);
        const std::uint16_t* l = lefts + (i - i0) * S;
        const std::uint8_t* h = his + (i - i0) * S;
        T* out = reinterpret_cast<T*>(outv.row(i));
        for (std::int64_t x = 0; x < S; ++x) {
          const std::int64_t g = slot[h[x]];
          if (g < 0) continue;
          std::uint16_t* kf = kfine + g * kBlock;
          if (2 * (x - last[g]) >= Nx) {  // rebuilding reads Nx columns, catching up 2 a step
            std::fill(kf, kf + kBlock, std::uint16_t{0});
            for (std::int64_t q = x; q < x + Nx; ++q) add_counts(kf, fine_col(g, q), nullptr);
          } else {
            for (std::int64_t s = last[g] + 1; s <= x; ++s)
              add_counts(kf, fine_col(g, s + Nx - 1), fine_col(g, s - 1));
          }
          last[g] = x;
          std::int64_t left = l[x];
          const std::int64_t lo = find_in_block(kf, left);
          out[(x0 + x) * C + c] = static_cast<T>((std::int64_t{h[x]} << 8 | lo) - offset);
        }
      }
      count_rows(i1 - 1, -1);
    }
    pool_->give(std::move(buf));
  }

  // kernel += in - gone over the 272 counts of a column (gone may be null); AVX2 where the CPU has
  // it (16 counts a vector instead of 8).
  __attribute__((target_clones("avx2", "default"))) static void add_counts(
      std::uint16_t* __restrict kernel, const std::uint16_t* __restrict in,
      const std::uint16_t* __restrict gone) {
    constexpr int n = 256 + 16;
    if (gone) {
      for (int b = 0; b < n; ++b) kernel[b] = std::uint16_t(kernel[b] + in[b] - gone[b]);
    } else {
      for (int b = 0; b < n; ++b) kernel[b] = std::uint16_t(kernel[b] + in[b]);
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

  // A footprint, 8 and 16 bits: the histogram of its samples moves along the row by the ends of
  // its row runs (one sample leaves and one enters per run and step). 8 bits track the answer
  // as Huang's; 16 bits track the coarse bin (256 values) and scan within it.
  template <class T>
  void footprint_histogram_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                               std::int64_t W, std::int64_t C, T* out) const {
    constexpr bool wide = sizeof(T) == 2;
    constexpr std::int64_t offset = std::is_signed_v<T> ? (wide ? 32768 : 128) : 0;
    constexpr int shift = wide ? 8 : 0;
    std::vector<std::uint32_t> fine(wide ? 65536 : 256, 0), coarse(256, 0);
    std::vector<const T*> row(runs_.size());
    for (std::size_t r = 0; r < runs_.size(); ++r) row[r] = p.row(c, i + runs_[r].k, m);
    // v: the tracked (coarse) bin; below: the samples under it.
    std::int64_t v = 0, below = 0;
    auto add = [&](T x, int d) {
      const std::int64_t s = static_cast<std::int64_t>(x) + offset;
      fine[static_cast<std::size_t>(s)] += d;
      if constexpr (wide) coarse[static_cast<std::size_t>(s >> shift)] += d;
      if ((s >> shift) < v) below += d;
    };
    const std::vector<std::uint32_t>& level = wide ? coarse : fine;
    for (std::size_t r = 0; r < runs_.size(); ++r)
      for (std::int64_t q = 0; q < runs_[r].len; ++q) add(row[r][runs_[r].a + q], 1);
    for (std::int64_t x = 0; x < W; ++x) {
      if (x > 0)
        for (std::size_t r = 0; r < runs_.size(); ++r) {
          add(row[r][x - 1 + runs_[r].a], -1);
          add(row[r][x - 1 + runs_[r].a + runs_[r].len], 1);
        }
      while (below > rank_) below -= level[static_cast<std::size_t>(--v)];
      while (below + static_cast<std::int64_t>(level[static_cast<std::size_t>(v)]) <= rank_)
        below += level[static_cast<std::size_t>(v++)];
      std::int64_t value = v;
      if constexpr (wide) {
        std::int64_t left = rank_ - below;
        value = v << shift;
        while (left >= static_cast<std::int64_t>(fine[static_cast<std::size_t>(value)]))
          left -= fine[static_cast<std::size_t>(value++)];
      }
      out[x * C + c] = static_cast<T>(value - offset);
    }
  }

  // A footprint, other types: its samples, partially sorted to the rank (NaN gives NaN).
  template <class T>
  void footprint_select_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                            std::int64_t W, std::int64_t C, T* out) const {
    std::vector<const T*> at;  // every sample's address for x = 0
    for (const Run& r : runs_)
      for (std::int64_t q = 0; q < r.len; ++q) at.push_back(p.row(c, i + r.k, m) + r.a + q);
    std::vector<T> win(at.size());
    for (std::int64_t x = 0; x < W; ++x) {
      bool nan = false;
      for (std::size_t n = 0; n < at.size(); ++n) {
        const T v = at[n][x];
        nan = nan || v != v;
        win[n] = v;
      }
      if (nan) {
        out[x * C + c] = std::numeric_limits<T>::quiet_NaN();
        continue;
      }
      std::nth_element(win.begin(), win.begin() + rank_, win.end());
      out[x * C + c] = win[static_cast<std::size_t>(rank_)];
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
  std::vector<Run> runs_;          // of the footprint, if any
  kernels::SelectionNetwork net_;  // rectangular windows of up to 128 samples
  std::shared_ptr<Pool> pool_;     // the 16-bit column counts, shared by the slots' kernels
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
  // The window's samples, (row, column) in its rectangle.
  std::vector<std::pair<int, int>> samples() const {
    std::vector<std::pair<int, int>> v;
    if (w_.rows() > 15 || w_.cols() > 15) return std::vector<std::pair<int, int>>(50);
    for (int k = 0; k < w_.rows(); ++k)
      for (int q = 0; q < w_.cols(); ++q)
        if (!w_.mask || (*w_.mask)[static_cast<std::size_t>(k * w_.cols() + q)])
          v.emplace_back(k, q);
    return v;
  }
  std::size_t cpu_scratch_bytes(std::int64_t rows) const override {
    return static_cast<std::size_t>(rows + w_.y.left + w_.y.right) *
               static_cast<std::size_t>(in_.width + w_.x.left + w_.x.right) * in_.pixel_bytes() +
           (65536 + 256) * 4 +
           // 8 bits, tall windows: a job's column counts (kStripCols + cols - 1 columns of 272)
           static_cast<std::size_t>(1024 + w_.cols()) * (256 + 16) * 2 +
           // 16 bits: a job's column counts, in a buffer kept for the next job
           (!w_.mask && (in_.type == SampleType::u16 || in_.type == SampleType::i16) &&
                    RankKernel::wide_column_histograms(w_.cols(), w_.rows())
                ? RankKernel::wide_job_bytes(w_.cols())
                : 0) +
           // floats and 32-bit integers beyond the networks: a ranked histograms' job
           (sample_bytes(in_.type) >= 4 && window_count() > (w_.mask ? RankKernel::kRankedFootprint
                                                                     : kernels::kMaxNetworkSamples)
                ? RankKernel::ranked_job_bytes(w_.rows(), w_.cols())
                : 0);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<RankKernel>(w_, rank_, pool_);
  }
  // CUDA: windows of up to 49 samples (sides up to 15) in registers
  // (kernels/cuda/morphology/rank.cuh); larger ones of u8, u16 and i16 (up to 65535 samples),
  // rectangles or footprints, by sliding histograms (kernels/cuda/morphology/rank_histogram.hpp),
  // of the other types by a radix select over a tile of keys (kernels/cpu/morphology/rank_keys.hpp,
  // rank.cu) up to what shared memory holds (about 150 x 150 for 4-byte samples). The rest run on
  // the CPU (a pipeline holding one runs on the CPU, and
  // --device cuda says so).
  std::int64_t window_count() const {
    if (!w_.mask) return w_.rows() * w_.cols();
    return std::count(w_.mask->begin(), w_.mask->end(), std::uint8_t{1});
  }
  bool in_registers() const { return w_.rows() <= 15 && w_.cols() <= 15 && window_count() <= 49; }
  bool cuda_histogram() const {
    const std::int64_t n = window_count();
    return (in_.type == SampleType::u8 || in_.type == SampleType::u16 ||
            in_.type == SampleType::i16) &&
           n <= 65535 && (n > 25 || !in_registers());
  }
  // Floats and 32-bit integers where the CPU takes ranked histograms (whose keys, and so whose
  // zeros, the radix select shares: the networks below that may give either zero of a tie): a
  // radix select whose tile of keys fits.
  bool cuda_radix() const {
    const std::int64_t n = window_count();
    return sample_bytes(in_.type) >= 4 &&
           n > (w_.mask ? RankKernel::kRankedFootprint : kernels::kMaxNetworkSamples) &&
           n <= 65535 &&
           kernels::radix_tile_bytes(w_.rows(), w_.cols(), sample_bytes(in_.type)) <=
               kernels::kMaxRadixTileBytes;
  }
  detail::RankCudaPath cuda_path() const {
    if (cuda_histogram()) return detail::RankCudaPath::histogram;
    if (cuda_radix()) return detail::RankCudaPath::radix;
    return detail::RankCudaPath::registers;
  }
  bool has_cuda() const override {
    return kCudaBuilt && (cuda_histogram() || cuda_radix() || in_registers());
  }
  bool cpu_gives_cuda_bits() const override { return true; }  // selections, no arithmetic
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    const detail::RankCudaPath path = cuda_path();
    const bool registers = path == detail::RankCudaPath::registers;
    return detail::make_rank_cuda(devices, path, w_.y.left, w_.x.left, w_.rows(), w_.cols(),
                                  registers ? samples() : std::vector<std::pair<int, int>>{},
                                  registers ? nullptr : w_.mask.get(), rank_, w_.border,
                                  w_.border_value);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::rank;
    c.window_rows = double(w_.y.left + w_.y.right + 1);
    c.window_cols = double(w_.x.left + w_.x.right + 1);
    c.window_samples = double(window_count());
    if (cuda_radix()) c.key_bits = sample_bytes(in_.type) == 8 ? 64 : 32;
    if (w_.mask) {
      const auto& m = *w_.mask;
      const std::int64_t Nx = w_.cols();
      for (std::int64_t k = 0; k < w_.rows(); ++k)  // a run starts at a 1 under a 0 or the edge
        for (std::int64_t q = 0; q < Nx; ++q)
          c.column_runs += m[static_cast<std::size_t>(k * Nx + q)] &&
                           (k == 0 || !m[static_cast<std::size_t>((k - 1) * Nx + q)]);
    }
    c.histogram = sample_bytes(in_.type) <= 2;  // u8, u16, i16: the CPU counts values
    c.wide = sample_bytes(in_.type) == 2;
    return c;
  }

 private:
  ImageSpec in_;
  Window w_;
  std::int64_t rank_;
  std::shared_ptr<Pool> pool_ = std::make_shared<Pool>();
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
std::unique_ptr<CudaKernel> make_rank_cuda(const std::vector<int>&, RankCudaPath, std::int64_t,
                                           std::int64_t, std::int64_t, std::int64_t,
                                           const std::vector<std::pair<int, int>>&,
                                           const std::vector<std::uint8_t>*, std::int64_t,
                                           BorderMode, double) {
  return nullptr;
}
std::unique_ptr<CudaKernel> make_minmax_footprint_cuda(const std::vector<int>&, bool, std::int64_t,
                                                       std::int64_t, std::int64_t, std::int64_t,
                                                       const std::vector<std::uint8_t>&, BorderMode,
                                                       double) {
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
  const bool fp = !p.footprint.empty();
  const std::int64_t height = fp ? p.footprint.height : p.height;
  const std::int64_t width = fp ? p.footprint.width : p.width;
  if (height < 1 || width < 1 || height > kMax || width > kMax)
    throw Error(ErrorKind::usage, "the window " + std::to_string(height) + "x" +
                                      std::to_string(width) +
                                      " is not a size: give 1 to 1048576 rows and columns");
  const std::int64_t n = fp ? p.footprint.count() : height * width;
  if (p.rank < 0 || p.rank >= n)
    throw Error(ErrorKind::usage, "rank " + std::to_string(p.rank) + " is not in the window's " +
                                      std::to_string(n) + " samples (0 to " +
                                      std::to_string(n - 1) + ")");
  MorphParams m;
  m.height = height;
  m.width = width;
  m.border = p.border;
  m.border_value = p.border_value;
  m.footprint = p.footprint;
  // The extremes are the minimum and maximum filters (as scipy does too).
  if (p.rank == 0 || p.rank == n - 1) {
    m.kind = p.rank == 0 ? MorphKind::minimum : MorphKind::maximum;
    return make_morphology(input, m);
  }
  return std::make_unique<Rank>(input, window(m, false, false), p.rank);
}

std::int64_t Footprint::count() const noexcept {
  std::int64_t n = 0;
  for (std::uint8_t v : mask) n += v != 0;
  return n;
}

Footprint load_footprint(const std::string& path) {
  constexpr std::int64_t kMaxSide = 4095;
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::usage, "footprint '" + path + "' " + what +
                                       "; a footprint is a 2-D .npy of bool or integers, 0 and 1, "
                                       "of odd sides (numpy.save('f.npy', mask))");
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw bad("cannot be read (no such file?)");
  if (!S_ISREG(st.st_mode)) throw bad("is not a regular file");
  if (st.st_size > (std::int64_t{1} << 28)) throw bad("is too large");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string bytes = text.str();
  if (!in && !in.eof()) throw bad("cannot be read");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  NpyArray a;
  try {
    a = parse_npy_array(u, bytes.size(), path);
  } catch (const Error& e) {
    throw bad(std::string("is not a .npy file (") + e.what() + ")");
  }
  if (a.dims.size() != 2) throw bad("has shape " + a.shape + ", not 2-D");
  const char kind = a.kind.empty() ? '?' : a.kind[0];
  if (kind != 'b' && kind != 'u' && kind != 'i') throw bad("holds '" + a.kind + "' samples");
  const std::size_t width = a.kind.size() == 2 ? std::size_t(a.kind[1] - '0') : 0;
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw bad("holds '" + a.kind + "' samples");
  Footprint f;
  f.height = a.dims[0];
  f.width = a.dims[1];
  f.name = path;
  if (f.height < 1 || f.width < 1 || f.height % 2 == 0 || f.width % 2 == 0)
    throw bad("is " + std::to_string(f.height) + " x " + std::to_string(f.width) +
              ": both sides must be odd (the centre is the origin)");
  if (f.height > kMaxSide || f.width > kMaxSide)
    throw bad("is larger than " + std::to_string(kMaxSide) + " on a side");
  const std::size_t count = static_cast<std::size_t>(f.height * f.width);
  if (bytes.size() < a.data_offset + count * width) throw bad("is truncated");
  f.mask.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    // The value in its byte order ('<', '>', '|' for single bytes, '=' the native one: little).
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < width; ++k) {
      const std::size_t at = a.order == '>' ? k : width - 1 - k;
      v = (v << 8) | u[a.data_offset + i * width + at];
    }
    if (v > 1) throw bad("holds a value other than 0 and 1 (at sample " + std::to_string(i) + ")");
    const bool one = v == 1;
    // Fortran order: element (r, q) is at q * height + r.
    const std::size_t at =
        a.fortran ? (i % static_cast<std::size_t>(f.height)) * static_cast<std::size_t>(f.width) +
                        i / static_cast<std::size_t>(f.height)
                  : i;
    f.mask[at] = one ? 1 : 0;
  }
  if (f.count() == 0) throw bad("has no 1: the window would be empty");
  return f;
}

std::unique_ptr<Operation> make_morphology(const ImageSpec& input, const MorphParams& given) {
  constexpr std::int64_t kMax = std::int64_t{1} << 20;
  MorphParams p = given;
  if (!p.footprint.empty()) {
    p.height = p.footprint.height;
    p.width = p.footprint.width;
  }
  if (p.height < 1 || p.width < 1 || p.height > kMax || p.width > kMax)
    throw Error(ErrorKind::usage, "the window " + std::to_string(p.height) + "x" +
                                      std::to_string(p.width) +
                                      " is not a size: give 1 to 1048576 rows and columns");
  const std::string size =
      (p.footprint.empty() ? std::string() : "footprint " + p.footprint.name + " of ") +
      std::to_string(p.height) + "x" + std::to_string(p.width);
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

namespace detail {
namespace {

// The window of a rank or morphology stage: size=, or footprint= (exactly one of them).
std::tuple<std::int64_t, std::int64_t, Footprint> window_of(const StageArgs& a) {
  if (a.has("size") == a.has("footprint"))
    throw Error(
        ErrorKind::usage,
        a.at() + (a.has("size") ? ": give size or footprint, not both"
                                : ": size is required (size=N or HxW), or footprint=FILE.npy"));
  if (a.has("size")) {
    const auto hw = *parse_window(a.text("size"));
    return {hw.first, hw.second, Footprint{}};
  }
  try {
    Footprint f = load_footprint(a.text("footprint"));
    return {f.height, f.width, std::move(f)};
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, a.at() + ": " + e.what());
  }
}

}  // namespace

std::vector<StageEntry> rank_stages() {
  using Kind = StageParam::Kind;
  // size or footprint: "none" is no default, the builder asks for one of the two.
  const StageParam window = other_param(
      "size", Kind::size, "none",
      "window N x N, or H x W as HxW (scipy's size; even sizes too); this or footprint");
  const StageParam footprint =
      other_param("footprint", Kind::text, "none",
                  "FILE.npy: a 2-D 0/1 array of odd sides, the window's shape (scipy's footprint; "
                  "origin at the centre)");
  std::vector<StageEntry> s;
  for (const auto& [name_, kind, help] :
       {std::tuple<const char*, MorphKind, const char*>{
            "minimum", MorphKind::minimum,
            "minimum over the window (scipy.ndimage.minimum_filter)"},
        {"maximum", MorphKind::maximum, "maximum over the window (scipy.ndimage.maximum_filter)"},
        {"opening", MorphKind::opening, "maximum of the minimum (scipy.ndimage.grey_opening)"},
        {"closing", MorphKind::closing, "minimum of the maximum (scipy.ndimage.grey_closing)"},
        {"white-tophat", MorphKind::white_tophat, "x - opening (scipy.ndimage.white_tophat)"},
        {"black-tophat", MorphKind::black_tophat, "closing - x (scipy.ndimage.black_tophat)"}}) {
    const MorphKind k = kind;
    s.push_back({{name_, help, {window, footprint}}, [k](const StageContext& c) {
                   MorphParams p;
                   p.kind = k;
                   std::tie(p.height, p.width, p.footprint) = window_of(c.args);
                   p.border = c.settings.border;
                   p.border_value = c.settings.border_value;
                   return BuiltStage{make_morphology(c.in, p)};
                 }});
  }
  // median, percentile and rank: the window's sample of a rank each computes from its count.
  auto ranked = [](std::function<std::int64_t(const StageArgs&, std::int64_t)> rank_of) {
    return [rank_of](const StageContext& c) {
      RankParams p;
      std::tie(p.height, p.width, p.footprint) = window_of(c.args);
      p.border = c.settings.border;
      p.border_value = c.settings.border_value;
      const std::int64_t count = p.footprint.empty() ? p.height * p.width : p.footprint.count();
      p.rank = rank_of(c.args, count);
      return BuiltStage{make_rank(c.in, p)};
    };
  };
  s.push_back(
      {{"median",
        "median of the window (scipy.ndimage.median_filter; CUDA: u8/u16/i16 windows of up to "
        "65535 samples, others of up to 49)",
        {window, footprint}},
       ranked([](const StageArgs&, std::int64_t count) { return count / 2; })});
  s.push_back({{"percentile",
                "percentile of the window (scipy.ndimage.percentile_filter; CUDA as median)",
                {window, footprint,
                 number_param("q", "", -100, false, "percentile (negative: from 100 down)", 100)}},
               ranked([](const StageArgs& a, std::int64_t count) {
                 return rank_of_percentile(a.number("q"), count);
               })});
  s.push_back({{"rank",
                "the sample of this rank in the window, 0 the smallest (scipy.ndimage.rank_filter;"
                " CUDA as median)",
                {window, footprint,
                 integer_param("index", "", -kMaxStageRadius * kMaxStageRadius,
                               kMaxStageRadius * kMaxStageRadius,
                               "rank; negative: from the largest (-1)")}},
               ranked([](const StageArgs& a, std::int64_t count) {
                 std::int64_t r = static_cast<std::int64_t>(a.number("index"));
                 if (r < 0) r += count;
                 if (r < 0 || r >= count)
                   throw Error(ErrorKind::usage, a.at() + ": index " + a.text("index") +
                                                     " is outside the window's " +
                                                     std::to_string(count) + " samples");
                 return r;
               })});
  return s;
}

}  // namespace detail
}  // namespace ooc
