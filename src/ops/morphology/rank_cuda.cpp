// The CUDA side of the minimum/maximum filters (rectangles and footprints), the morphology built
// on them and the rank filters (small windows in registers, larger 8/16-bit windows by sliding
// histograms; see ooc/ops/rank.hpp):
// launches on a band in device memory, the scratch from the slot.
#include <cuda_runtime.h>

#include <algorithm>
#include <optional>

#include "cuda/resources.hpp"
#include "kernels/cuda/morphology/minmax.cuh"
#include "kernels/cuda/morphology/minmax_van_herk.hpp"
#include "kernels/cuda/morphology/rank.cuh"
#include "kernels/cuda/morphology/rank_histogram.hpp"
#include "ops/convolution/band_fill.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/pipeline/chain_impl.hpp"

namespace ooc::detail {
namespace {

class MinMaxCudaKernel final : public CudaKernel {
 public:
  MinMaxCudaKernel(bool max, std::int64_t ly, std::int64_t ry, std::int64_t lx, std::int64_t rx,
                   BorderMode border, double border_value) {
    l_.max = max;
    l_.ly = ly;
    l_.ry = ry;
    l_.lx = lx;
    l_.rx = rx;
    l_.border = border;
    l_.border_value = border_value;
  }
  void run_async(const CudaBand& b) override {
    cuda::MinMaxLaunch l = l_;
    const CudaBand w = detail::with_halo(b, l.ly);  // the window's ly rows above the output
    l.in = w.in;
    l.in_stride = b.in_stride;
    l.first_row = w.first_row;
    l.image_height = b.in_spec.height;
    l.width = b.in_spec.width;
    l.channels = b.in_spec.channels;
    l.type = b.in_spec.type;
    l.mid = b.scratch;
    l.out = b.out;
    l.out_stride = b.out_stride;
    l.out_rows = b.band.rows;
    if (runs_) {
      l.runs = runs_->on(b.device);
      l.host_runs = host_runs_.data();
    }
    cuda::minmax_band_async(l, static_cast<cudaStream_t>(b.stream));
  }
  // A footprint's row runs (van_herk::RowRun) on every device, and on the host.
  void set_runs(const std::vector<int>& devices, std::vector<cuda::van_herk::RowRun> runs) {
    host_runs_ = std::move(runs);
    runs_.emplace(devices, host_runs_.data(), host_runs_.size() * sizeof(host_runs_[0]));
    l_.run_count = static_cast<int>(host_runs_.size());
    l_.by_lengths = cuda::van_herk::by_lengths(host_runs_);
  }

 private:
  cuda::MinMaxLaunch l_;
  std::optional<cuda::Replicated> runs_;
  std::vector<cuda::van_herk::RowRun> host_runs_;
};

class TophatCudaKernel final : public CudaKernel {
 public:
  TophatCudaKernel(const std::vector<int>& devices, const ChainGeometry& g, int sign)
      : sign_(sign) {
    chain_ = make_chain_cuda(devices, g);
  }
  // A volume's: `chain` computes the opening or closing of the band's middle plane from its
  // planes of context; the difference reads that plane (border: the chain's, naming no plane
  // outside the volume for the middle one).
  TophatCudaKernel(std::unique_ptr<CudaKernel> chain, int sign, BorderMode border)
      : sign_(sign), border_(border), chain_(std::move(chain)) {}
  void start(const CudaSlotInfo& slot) override { chain_->start(slot); }
  void stop(const CudaSlotInfo& slot) override { chain_->stop(slot); }
  void run_async(const CudaBand& b) override {
    const std::size_t row_bytes = b.in_spec.row_bytes();
    CudaBand inner = b;
    if (sign_ != 0) {
      inner.out = b.scratch;
      inner.out_stride = row_bytes;
      inner.scratch = b.scratch + align_up(static_cast<std::size_t>(b.band.rows) * row_bytes);
    } else {
      inner.scratch = b.scratch + align_up(static_cast<std::size_t>(b.band.rows) * row_bytes);
    }
    chain_->run_async(inner);
    const std::byte* x = b.plane_halo > 0 ? cuda_plane(b, b.plane_halo, border_)
                                          : b.in + static_cast<std::size_t>(b.halo) * b.in_stride;
    if (sign_ != 0)
      cuda::tophat_difference_async(x, b.in_stride, inner.out, row_bytes, b.out, b.out_stride,
                                    b.band.rows, b.in_spec.row_samples(), b.in_spec.type, sign_,
                                    static_cast<cudaStream_t>(b.stream));
  }

 private:
  int sign_;
  BorderMode border_ = BorderMode::reflect;
  std::unique_ptr<CudaKernel> chain_;
};

class RankCudaKernel final : public CudaKernel {
 public:
  RankCudaKernel(const cuda::RankLaunch& l, RankCudaPath path) : l_(l), path_(path) {}
  void run_async(const CudaBand& b) override {
    cuda::RankLaunch l = l_;
    const CudaBand w = detail::with_halo(b, top_);  // the window's top_ rows above the output
    l.in = w.in;
    l.in_stride = b.in_stride;
    l.first_row = w.first_row;
    l.image_height = b.in_spec.height;
    l.width = b.in_spec.width;
    l.channels = b.in_spec.channels;
    l.type = b.in_spec.type;
    l.out = b.out;
    l.out_stride = b.out_stride;
    l.out_rows = b.band.rows;
    if (table_) l.footprint = table_->on(b.device);
    const auto stream = static_cast<cudaStream_t>(b.stream);
    if (path_ == RankCudaPath::histogram)
      cuda::rank_histogram_band_async(l, stream);
    else if (path_ == RankCudaPath::radix)
      cuda::rank_radix_band_async(l, stream);
    else
      cuda::rank_band_async(l, stream);
  }
  std::int64_t top_ = 0;
  // A footprint's table (rank_hist::FootprintTable) on every device, for the histograms.
  void set_footprint(const std::vector<int>& devices, const cuda::rank_hist::FootprintTable& t) {
    table_.emplace(devices, t.bytes.data(), t.bytes.size());
    l_.footprint_runs = t.runs;
    l_.footprint_spans = t.spans;
  }

 private:
  cuda::RankLaunch l_;
  RankCudaPath path_;
  std::optional<cuda::Replicated> table_;
};

}  // namespace

// Declared in rank.cpp (which builds without CUDA): the window's rectangle from row -top and
// column -left, its samples' (row, column) in it (registers), or the rectangle, or the mask's ones
// (histograms, radix select), the rank among them.
std::unique_ptr<CudaKernel> make_rank_cuda(const std::vector<int>& devices, RankCudaPath path,
                                           std::int64_t top, std::int64_t left, std::int64_t rows,
                                           std::int64_t cols,
                                           const std::vector<std::pair<int, int>>& samples,
                                           const std::vector<std::uint8_t>* mask, std::int64_t rank,
                                           BorderMode border, double border_value) {
  cuda::RankLaunch l;
  l.rows = static_cast<int>(rows);
  l.cols = static_cast<int>(cols);
  l.left = static_cast<int>(left);
  l.count = static_cast<int>(samples.size());
  if (path != RankCudaPath::registers)
    l.count = static_cast<int>(mask ? std::count(mask->begin(), mask->end(), std::uint8_t{1})
                                    : rows * cols);
  l.rank = static_cast<int>(rank);
  for (std::size_t j = 0; j < samples.size(); ++j) {
    l.dy[j] = static_cast<signed char>(samples[j].first);
    l.dx[j] = static_cast<signed char>(samples[j].second);
  }
  l.border = border;
  l.border_value = border_value;
  auto k = std::make_unique<RankCudaKernel>(l, path);
  k->top_ = top;
  // The histograms of a footprint, and every radix select (a rectangle: all ones), read a table.
  if ((path == RankCudaPath::histogram && mask) || path == RankCudaPath::radix) {
    std::vector<std::uint8_t> all;
    if (!mask) all.assign(static_cast<std::size_t>(rows * cols), 1);
    const std::uint8_t* m = mask ? mask->data() : all.data();
    k->set_footprint(devices, cuda::rank_hist::footprint_table(m, l.rows, l.cols));
  }
  return k;
}

std::unique_ptr<CudaKernel> make_minmax_footprint_cuda(const std::vector<int>& devices, bool max,
                                                       std::int64_t ly, std::int64_t lx,
                                                       std::int64_t rows, std::int64_t cols,
                                                       const std::vector<std::uint8_t>& mask,
                                                       BorderMode border, double border_value) {
  auto k = std::make_unique<MinMaxCudaKernel>(max, ly, rows - 1 - ly, lx, cols - 1 - lx, border,
                                              border_value);
  k->set_runs(devices, cuda::van_herk::row_runs(mask.data(), static_cast<int>(rows),
                                                static_cast<int>(cols)));
  return k;
}

std::unique_ptr<CudaKernel> make_minmax_cuda(bool max, std::int64_t ly, std::int64_t ry,
                                             std::int64_t lx, std::int64_t rx, BorderMode border,
                                             double border_value) {
  return std::make_unique<MinMaxCudaKernel>(max, ly, ry, lx, rx, border, border_value);
}

std::unique_ptr<CudaKernel> make_tophat_cuda(const std::vector<int>& devices,
                                             const ChainGeometry& g, int sign) {
  return std::make_unique<TophatCudaKernel>(devices, g, sign);
}

// Declared in morphology.cpp (which builds without CUDA).
std::unique_ptr<CudaKernel> make_volume_tophat_cuda(std::unique_ptr<CudaKernel> chain, int sign,
                                                    BorderMode border) {
  return std::make_unique<TophatCudaKernel>(std::move(chain), sign, border);
}

}  // namespace ooc::detail
