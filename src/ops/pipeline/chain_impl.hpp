// What the pipeline's parser, plan, CPU side (chain.cpp) and CUDA side (chain_cuda.cpp) share: the
// rows each stage computes for a band, the fused operation's factory, and those of the CUDA
// kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/point/pointwise.hpp"
#include "ooc/border.hpp"
#include "ooc/engine.hpp"
#include "ooc/image.hpp"

namespace ooc::detail {

// "stage 2 (median)": how messages name a stage of a pipeline (index from 0).
inline std::string stage_at(std::size_t index, const std::string& name) {
  return "stage " + std::to_string(index + 1) + " (" + name + ")";
}

struct ChainStage {
  Operation* op = nullptr;  // a histogram's merge() takes the band's counts
  ImageSpec in;             // the previous stage's output (the image for the first stage)
  std::int64_t halo = 0;
  std::int64_t plane_halo = 0;  // a volume's stage along z: planes of context
};

// The rows of the stages of a fused band.
struct ChainGeometry {
  std::vector<ChainStage> stages;
  BorderMode border = BorderMode::reflect;
  std::int64_t height = 0;
  std::int64_t depth = 1;  // planes of a volume

  std::int64_t halo() const noexcept;
  std::int64_t plane_halo() const noexcept;  // the stages' added up
  bool projects() const noexcept;            // a stage is a projection along z
  // Most planes stage k's output spans for one output plane (the later stages' plane halos).
  std::int64_t max_out_planes(std::size_t k) const noexcept;
  // Rows [first, second) of stage k's output that the band of output rows [y0, y1) needs.
  // Each stage's input outside the image comes from the border rule on the previous stage's
  // image rows, so those are computed (clipped to the image), except under wrap, where a
  // stage's output is periodic like its input and the rows outside are computed directly.
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges(std::int64_t y0, std::int64_t y1) const;
  // Most rows stage k's output can span for bands of `band_rows` rows (halos of the later
  // stages on both sides), and the rows of stage k+1's input (its halo added).
  std::int64_t max_out_rows(std::size_t k, std::int64_t band_rows) const noexcept;
  std::int64_t max_in_rows(std::size_t k, std::int64_t band_rows) const noexcept;
  // The row of the previous stage's output that input row r is: r itself under wrap (computed
  // outside the image too) or inside the image, the border's row, or none (the constant).
  std::optional<std::int64_t> source_row(std::int64_t r) const noexcept {
    if (border == BorderMode::wrap) return r;
    const std::int64_t m = map_border(r, height, border);
    return m < 0 ? std::nullopt : std::optional<std::int64_t>(m);
  }
};

// g for bands on its last stage's row grid (Operation::row_grid): that stage's halo is its
// grid_halo(), and the stages before it compute only the rows that reads. A chain's kernels take
// this geometry for a band that carries less than g's halo().
ChainGeometry on_grid(const ChainGeometry& g);

// The operation of a pass: the stages of g fused per band, writing an image of `out` (none: the
// last stage is a reduction), described as `what`.
std::unique_ptr<Operation> make_chain(ChainGeometry g, std::optional<ImageSpec> out,
                                      std::string what);
// The stages `ops` (each reading the previous one's output, the first an image of `in`) fused
// as one operation that owns them: a stage made of several (a volume's Gaussian is a z pass and
// the 2-D passes) inside another operation.
std::unique_ptr<Operation> make_owning_chain(std::vector<std::unique_ptr<Operation>> ops,
                                             const ImageSpec& in, BorderMode border);
// The fused kernels of a chain (stages [0, n) of g, the last writing the band's output).
std::unique_ptr<CpuKernel> make_chain_cpu(const ChainGeometry& g);
std::unique_ptr<CudaKernel> make_chain_cuda(const std::vector<int>& devices,
                                            const ChainGeometry& g);
// Minimum/maximum over rows [-ly, +ry] and columns [-lx, +rx] of each sample; the chain of a
// morphology with, for the top-hats (sign +1: x - chain, -1: chain - x), the difference.
std::unique_ptr<CudaKernel> make_minmax_cuda(bool max, std::int64_t ly, std::int64_t ry,
                                             std::int64_t lx, std::int64_t rx, BorderMode border,
                                             double border_value);
std::unique_ptr<CudaKernel> make_tophat_cuda(const std::vector<int>& devices,
                                             const ChainGeometry& g, int sign);
std::size_t chain_cuda_scratch(const ChainGeometry& g, std::int64_t band_rows);
std::unique_ptr<CudaKernel> make_point_cuda(const kernels::PointParams& p, SampleType in,
                                            SampleType out);
// g1 (and g2) filter the stage's input with halos h1 (h2) of the stage's halo `halo`.
std::unique_ptr<CudaKernel> make_combine_cuda(const std::vector<int>& devices,
                                              kernels::CombineKind kind, double amount,
                                              const Operation* g1, const Operation* g2,
                                              std::int64_t halo, SampleType in, bool f64,
                                              SampleType out);
std::size_t combine_cuda_scratch(const Operation* g1, const Operation* g2, std::int64_t band_rows,
                                 std::int64_t row_samples, bool f64);

// Scratch of a band (a pipeline's intermediates, a filter's rows), aligned to 64 bytes: the
// kernels read and write it with vector loads of any sample type, and a stage's rows start at
// offsets rounded to kScratchAlign, so each is aligned for whatever type reads it next.
inline constexpr std::size_t kScratchAlign = 64;
inline std::size_t scratch_align_up(std::size_t n) {
  return (n + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

class ScratchBuffer {
 public:
  std::byte* data() noexcept { return p_.get(); }
  std::size_t size() const noexcept { return n_; }
  // At least n bytes. A buffer that grows is new and zeroed (some users keep counts in it that
  // they leave at zero for the next band); one that does not keeps its contents.
  void grow(std::size_t n) {
    if (n <= n_) return;
    p_.reset(static_cast<std::byte*>(::operator new (n, std::align_val_t{kScratchAlign})));
    std::memset(p_.get(), 0, n);
    n_ = n;
  }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept {
      ::operator delete (p, std::align_val_t{kScratchAlign});
    }
  };
  std::unique_ptr<std::byte, Free> p_;
  std::size_t n_ = 0;
};

// Buffers that outlive a band, handed from band to band (several threads take them at once).
class BufferPool {
 public:
  ScratchBuffer take(std::size_t n) {
    ScratchBuffer v;
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        v = std::move(free_.back());
        free_.pop_back();
      }
    }
    v.grow(n);
    return v;
  }
  void give(ScratchBuffer v) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(v));
  }

 private:
  std::mutex mutex_;
  std::vector<ScratchBuffer> free_;
};

inline constexpr std::size_t kDeviceAlign = 256;
inline std::size_t align_up(std::size_t n) {
  return (n + kDeviceAlign - 1) / kDeviceAlign * kDeviceAlign;
}

}  // namespace ooc::detail
