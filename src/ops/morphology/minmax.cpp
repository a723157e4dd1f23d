// The minimum and maximum filters (see ooc/ops/rank.hpp): the van Herk kernels of
// kernels/cpu/morphology/minmax.hpp on a band, over a rectangle or a footprint's runs, their
// CUDA twins (rank_cuda.cpp), and the minimum and maximum stages.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/morphology/border_constant.hpp"
#include "kernels/cpu/morphology/minmax.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"
#include "ops/morphology/clamp_window.hpp"
#include "ops/morphology/window.hpp"
#include "ops/pipeline/chain_impl.hpp"

namespace ooc {
namespace detail {
// rank_cuda.cpp: the minimum/maximum over the ones of `mask` (rows x cols, row-major) from row
// -ly, column -lx.
std::unique_ptr<CudaKernel> make_minmax_footprint_cuda(const std::vector<int>& devices, bool max,
                                                       std::int64_t ly, std::int64_t lx,
                                                       std::int64_t rows, std::int64_t cols,
                                                       const std::vector<std::uint8_t>& mask,
                                                       BorderMode border, double border_value);
}  // namespace detail

namespace detail::morphology {
namespace {

using kernels::constant_of;  // the constant border in the image's type
using Pool = BufferPool;

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

// Runs k.run_typed<Max, T>(b) for the band's sample type T and the window's direction.
template <class Kernel>
void run_min_or_max(Kernel& k, bool max, const CpuBand& b) {
  dispatch_type(b.in.type, [&](auto t) {
    using T = decltype(t);
    if (max)
      k.template run_typed<true, T>(b);
    else
      k.template run_typed<false, T>(b);
  });
}

// Minimum or maximum over a footprint: for each run length L of its rows, van Herk's running
// extreme of every padded input row over L samples, then each run of that length folds its
// row and offset into the output (a contiguous, vectorized pick per run and output row).
class MinMaxFootprintKernel final : public CpuKernel {
 public:
  explicit MinMaxFootprintKernel(const Window& w) : w_(w), runs_(runs_of(w)) {}
  void run(const CpuBand& b) override { run_min_or_max(*this, w_.max, b); }

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

 private:
  Window w_;
  std::vector<Run> runs_;
  Pool pool_;
};

class MinMaxKernel final : public CpuKernel {
 public:
  explicit MinMaxKernel(const Window& w) : w_(w) {}
  void run(const CpuBand& b) override { run_min_or_max(*this, w_.max, b); }

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
 private:
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

class MinMax final : public Operation {
 public:
  MinMax(const ImageSpec& in, const Window& w) : in_(in), w_(clamp_window(w, in)) {}
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
  std::optional<std::int64_t> column_halo() const override {
    return std::max(w_.x.left, w_.x.right);
  }
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    // With a footprint: two padded planes, and two padded rows per thread.
    return 2 * static_cast<std::size_t>(rows + w_.y.left + w_.y.right) *
               static_cast<std::size_t>(cols + w_.x.left + w_.x.right) * in_.pixel_bytes() +
           2 * static_cast<std::size_t>(cols + w_.x.left + w_.x.right) * in_.pixel_bytes();
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

}  // namespace

std::unique_ptr<Operation> make_minmax(const ImageSpec& in, const Window& w) {
  return std::make_unique<MinMax>(in, w);
}

}  // namespace detail::morphology

namespace detail {

std::vector<StageEntry> minmax_stages() {
  std::vector<StageEntry> s{
      morphology::morphology_stage("minimum", MorphKind::minimum,
                                   "minimum over the window (scipy.ndimage.minimum_filter)"),
      morphology::morphology_stage("maximum", MorphKind::maximum,
                                   "maximum over the window (scipy.ndimage.maximum_filter)")};
  mask_morphology(s);  // with --nodata: over the valid samples (masked_rank.cpp)
  return s;
}

#if !defined(OOC_HAVE_CUDA)
// A build without CUDA: has_cuda() says no, so these are never called.
std::unique_ptr<CudaKernel> make_minmax_cuda(bool, std::int64_t, std::int64_t, std::int64_t,
                                             std::int64_t, BorderMode, double) {
  return nullptr;
}
std::unique_ptr<CudaKernel> make_minmax_footprint_cuda(const std::vector<int>&, bool, std::int64_t,
                                                       std::int64_t, std::int64_t, std::int64_t,
                                                       const std::vector<std::uint8_t>&, BorderMode,
                                                       double) {
  return nullptr;
}
#endif

}  // namespace detail
}  // namespace ooc
