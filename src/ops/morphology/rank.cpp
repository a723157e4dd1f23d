// The rank filters (see ooc/ops/rank.hpp): median, percentile and rank over a rectangle or a
// footprint. The CPU adapter picks among the algorithms of kernels/cpu/morphology/ (selection
// networks, sliding and ranked histograms, selections) by window, type and width; the CUDA one
// among registers, sliding histograms and a radix select (rank_cuda.cpp); the extremes are the
// minimum and maximum filters (make_morphology). And their stages.
#include "kernels/cpu/morphology/rank.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kernels/cpu/morphology/border_constant.hpp"
#include "kernels/cpu/morphology/median_network.hpp"
#include "kernels/cpu/morphology/rank_keys.hpp"
#include "kernels/cpu/morphology/rank_network.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/rank.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"
#include "ops/morphology/window.hpp"
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
}  // namespace detail

namespace detail::morphology {
namespace {

using kernels::constant_of;  // the constant border in the image's type
using kernels::kChunkRows;
using kernels::kChunkRows16;
using kernels::kHuangRows;
using kernels::kMaxDirectLanes;
using kernels::kRankedCols;
using kernels::kRankedFootprint;
using kernels::kRankedRows;
using kernels::kStripCols;
using kernels::kStripCols16;
using kernels::Planes;
using Pool = BufferPool;

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
      const std::int64_t L = kernels::median_network_lanes(sizeof(T)), h = Nx / 2;
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
          kernels::median_network_row_direct(n, r, lp, rp, W, reinterpret_cast<T*>(b.out.row(i)));
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
                     kernels::ranked_rows<T>(p, m, c, i0, i1, x0, x1, Nx, Ny, C, runs, rank_,
                                             b.out);
                   });
        return;
      }
    }
    if (w_.mask) {
      tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
        const std::int64_t i = job / C, c = job % C;
        T* out = reinterpret_cast<T*>(b.out.row(i));
        if constexpr (counted)
          kernels::footprint_histogram_row<T>(p, m, c, i, W, C, runs_, rank_, out);
        else
          kernels::footprint_select_row<T>(p, m, c, i, W, C, runs_, rank_, out);
      });
      return;
    }
    // The 5 x 5 median of every type: a selection network on vectors of adjacent columns.
    if (Nx == 5 && Ny == 5 && rank_ == 12 && W >= kernels::median_network_min_width(sizeof(T))) {
      tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
        const std::int64_t i = job / C, c = job % C;
        const T* r[5];
        for (int k = 0; k < 5; ++k) r[k] = p.row(c, i + k, m);
        kernels::median_network_row(5, r, W, reinterpret_cast<T*>(b.out.row(i)) + c, C);
      });
      return;
    }
    // The 3 x 3 median of every type: the 19-exchange network, NaN-aware as the 5 x 5's (the
    // column sort below would let a NaN through; nth_element took 7x the 5 x 5's time). For 8-
    // and 16-bit integers too: the column sort took 2.5x the 5 x 5 network's time there.
    if (Nx == 3 && Ny == 3 && rank_ == 4 && W >= kernels::median_network_min_width(sizeof(T))) {
      tbb::parallel_for(std::int64_t{0}, rows * C, [&](std::int64_t job) {
        const std::int64_t i = job / C, c = job % C;
        const T* r[3];
        for (int k = 0; k < 3; ++k) r[k] = p.row(c, i + k, m);
        kernels::median_network_row(3, r, W, reinterpret_cast<T*>(b.out.row(i)) + c, C);
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
          kernels::median3x3_row<T>(p, m, c, i, W, C, reinterpret_cast<T*>(b.out.row(i)));
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
                     kernels::column_histogram_rows<T>(p, m, c, i0, i1, x0, x1, Nx, Ny, C, rank_,
                                                       b.out);
                   });
        return;
      }
    }
    if constexpr (sizeof(T) == 2 && std::is_integral_v<T>) {
      if (kernels::wide_column_histograms(Nx, Ny)) {
        strip_jobs(rows, W, C, kChunkRows16, kStripCols16,
                   [&](std::int64_t c, std::int64_t i0, std::int64_t i1, std::int64_t x0,
                       std::int64_t x1) {
                     ScratchBuffer buf = pool_->take(kernels::wide_job_bytes(Nx));
                     kernels::column_histogram_rows16<T>(p, m, c, i0, i1, x0, x1, Nx, Ny, C, rank_,
                                                         buf.data(), b.out);
                     pool_->give(std::move(buf));
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
        kernels::histogram_row<T>(p, m, c, i, Nx, Ny, W, C, rank_, out);
      else
        kernels::select_row<T>(p, m, c, i, Nx, Ny, W, C, rank_, out);
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
  std::optional<std::int64_t> column_halo() const override {
    return std::max(w_.x.left, w_.x.right);
  }
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    return static_cast<std::size_t>(rows + w_.y.left + w_.y.right) *
               static_cast<std::size_t>(cols + w_.x.left + w_.x.right) * in_.pixel_bytes() +
           (65536 + 256) * 4 +
           // 8 bits, tall windows: a job's column counts (kStripCols + cols - 1 columns of 272)
           static_cast<std::size_t>(1024 + w_.cols()) * (256 + 16) * 2 +
           // 16 bits: a job's column counts, in a buffer kept for the next job
           (!w_.mask && (in_.type == SampleType::u16 || in_.type == SampleType::i16) &&
                    kernels::wide_column_histograms(w_.cols(), w_.rows())
                ? kernels::wide_job_bytes(w_.cols())
                : 0) +
           // floats and 32-bit integers beyond the networks: a ranked histograms' job
           (sample_bytes(in_.type) >= 4 && window_count() > (w_.mask ? kernels::kRankedFootprint
                                                                     : kernels::kMaxNetworkSamples)
                ? kernels::ranked_job_bytes(w_.rows(), w_.cols())
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
           n > (w_.mask ? kernels::kRankedFootprint : kernels::kMaxNetworkSamples) && n <= 65535 &&
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
}  // namespace detail::morphology

#if !defined(OOC_HAVE_CUDA)
namespace detail {
// A build without CUDA: has_cuda() says no, so this is never called.
std::unique_ptr<CudaKernel> make_rank_cuda(const std::vector<int>&, RankCudaPath, std::int64_t,
                                           std::int64_t, std::int64_t, std::int64_t,
                                           const std::vector<std::pair<int, int>>&,
                                           const std::vector<std::uint8_t>*, std::int64_t,
                                           BorderMode, double) {
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
  return std::make_unique<detail::morphology::Rank>(
      input, detail::morphology::window(m, false, false), p.rank);
}

namespace detail {

std::vector<StageEntry> rank_stages() {
  using morphology::window_of;
  const StageParam window = morphology::size_param();
  const StageParam footprint = morphology::footprint_param();
  std::vector<StageEntry> s;
  // median, percentile and rank: the window's sample of a rank each computes from its count.
  const StageParam size_z =
      computed(integer_param("size-z", std::nullopt, 1, 1 << 20,
                             "volumes: window along z (a box; or size=DxHxW)"),
               "the size's rows");
  auto ranked = [](std::function<std::int64_t(const StageArgs&, std::int64_t)> rank_of) {
    return [rank_of](const StageContext& c) {
      RankParams p;
      std::tie(p.height, p.width, p.footprint) = window_of(c.args);
      morphology::check_footprint_axes(c, p.footprint);
      const std::int64_t depth = morphology::box_depth(c, p.height);
      p.border = c.settings.border;
      p.border_value = c.settings.border_value;
      if (c.settings.nodata) {  // holes: the valid samples' rank (masked_rank*.cpp)
        MorphParams m;
        m.height = p.height;
        m.width = p.width;
        m.border = p.border;
        m.border_value = p.border_value;
        m.footprint = p.footprint;
        const std::int64_t n =
            p.footprint.empty() ? depth * p.height * p.width : p.footprint.count();
        const std::int64_t r = rank_of(c.args, n);
        if (c.volume())
          return BuiltStage{make_masked_rank_volume(c, m, depth, r, c.args.call_text())};
        return BuiltStage{make_masked_rank(c, m, r, c.args.call_text())};
      }
      if (c.volume()) {  // a box of size-z planes, or a 3-D footprint
        if (!p.footprint.empty())
          return BuiltStage{morphology::make_rank3d(
              c.in, p.footprint, rank_of(c.args, p.footprint.count()), p.border, p.border_value)};
        return BuiltStage{morphology::make_rank3d(c.in, depth, p.height, p.width,
                                                  rank_of(c.args, depth * p.height * p.width),
                                                  p.border, p.border_value)};
      }
      const std::int64_t count = p.footprint.empty() ? p.height * p.width : p.footprint.count();
      p.rank = rank_of(c.args, count);
      return BuiltStage{make_rank(c.in, p)};
    };
  };
  s.push_back(
      {{"median",
        "median of the window (scipy.ndimage.median_filter; CUDA: u8/u16/i16 windows of up to "
        "65535 samples, others of up to 49); with --nodata of the valid samples (an even count: "
        "the lower middle; rank r of n samples: r (valid - 1) / (n - 1)), nodata where none",
        {window, footprint, size_z}},
       ranked([](const StageArgs&, std::int64_t count) { return count / 2; })});
  s.push_back({{"percentile",
                "percentile of the window (scipy.ndimage.percentile_filter; CUDA as median)",
                {window, footprint, size_z,
                 number_param("q", std::nullopt, -100, false,
                              "percentile (negative: from 100 down)", 100)}},
               ranked([](const StageArgs& a, std::int64_t count) {
                 return rank_of_percentile(a.number("q"), count);
               })});
  s.push_back({{"rank",
                "the sample of this rank in the window, 0 the smallest (scipy.ndimage.rank_filter;"
                " CUDA as median)",
                {window, footprint, size_z,
                 integer_param("index", std::nullopt, -kMaxStageRadius * kMaxStageRadius,
                               kMaxStageRadius * kMaxStageRadius,
                               "rank; negative: from the largest (-1)")}},
               ranked([](const StageArgs& a, std::int64_t count) {
                 std::int64_t r = a.integer("index");
                 if (r < 0) r += count;
                 if (r < 0 || r >= count)
                   throw Error(ErrorKind::usage, a.at() + ": index " + a.text("index") +
                                                     " is outside the window's " +
                                                     std::to_string(count) + " samples");
                 return r;
               })});
  for (StageEntry& e : s) e.decl.volume = e.decl.masked = true;
  return s;
}

}  // namespace detail
}  // namespace ooc
