// The label stage's CUDA kernel objects (label_cuda.hpp): launches on the bands the engine staged,
// each slot with pinned host memory of its own for the labels that go back to the merge (pass 1)
// and the table slice that goes in (pass 2).
#include "ops/labels/label_cuda.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "kernels/cuda/labels/label.cuh"

namespace ooc::detail {
namespace {

std::size_t aligned(std::size_t n) {
  return (n + 255) & ~std::size_t{255};
}

// The provisional labels of a band at most: a component every other sample.
std::uint64_t most_components(std::int64_t samples) {
  return static_cast<std::uint64_t>(samples + 1) / 2;
}

// A slot's pinned buffer, grown when a band needs more (the slot's band before it is done: the
// engine reuses a slot only once its band was written and merged). At least 1 MiB from the
// first band on (a table slice of 256 Ki u32 labels): replacing a registered buffer mid-run
// unregisters the old one, which may wait for the device.
std::byte* pinned(cuda::PinnedBuffer& b, std::size_t bytes) {
  constexpr std::size_t kLeast = std::size_t{1} << 20;
  if (b.size() < bytes) b = cuda::PinnedBuffer(std::max({bytes, b.size() * 2, kLeast}));
  return b.data();
}

class ScanCuda final : public CudaKernel {
 public:
  explicit ScanCuda(std::shared_ptr<LabelCudaShared> s) : s_(std::move(s)) {}
  void run_async(const CudaBand& b) override {
    const LabelCudaShared& s = *s_;
    auto stream = static_cast<cudaStream_t>(b.stream);
    const std::int64_t rows = b.band.rows, width = b.in_spec.width;
    const std::size_t row_bytes = static_cast<std::size_t>(width) * sizeof(std::uint32_t);
    auto* partial = reinterpret_cast<std::uint64_t*>(b.partial);
    const std::int64_t back = s.all_rows ? rows : std::min<std::int64_t>(rows, 2);
    cuda::PinnedBuffer& host = host_[b.slot];
    std::byte* h = pinned(host, 256 + static_cast<std::size_t>(back) * row_bytes);
    // The partial's first word says the band is the GPU's, in which slot. Copied before the
    // kernels, beside the band's own copy in: a copy between two kernels waits for the copy
    // engine, busy with the other slots' bands, and holds the kernels after it.
    *reinterpret_cast<std::uint64_t*>(h) = kLabelGpuBand | static_cast<std::uint64_t>(b.slot);
    OOC_CUDA_TRY(
        cudaMemcpyAsync(partial, h, sizeof(std::uint64_t), cudaMemcpyHostToDevice, stream));
    // Only the rows that come back need their numbers (the count needs none).
    const std::uint32_t* labels = cuda::label_band_async(
        b.in, b.in_stride, rows, width, b.in_spec.type, b.in_bits, s.diagonal, b.scratch,
        cuda::label_band_scratch(rows, width), partial + 1, stream, !s.all_rows);
    auto* rows_to = reinterpret_cast<std::uint32_t*>(h + 256);
    if (s.all_rows || rows <= 2) {
      OOC_CUDA_TRY(cudaMemcpyAsync(rows_to, labels, static_cast<std::size_t>(back) * row_bytes,
                                   cudaMemcpyDeviceToHost, stream));
    } else {
      OOC_CUDA_TRY(cudaMemcpyAsync(rows_to, labels, row_bytes, cudaMemcpyDeviceToHost, stream));
      OOC_CUDA_TRY(cudaMemcpyAsync(rows_to + width, labels + (rows - 1) * width, row_bytes,
                                   cudaMemcpyDeviceToHost, stream));
    }
    s_->set(b.slot, LabelCudaRows{b.band.index, rows_to});
  }

 private:
  std::shared_ptr<LabelCudaShared> s_;
  std::map<int, cuda::PinnedBuffer> host_;  // by slot; start, run_async and stop: one thread
};

class ApplyCuda final : public CudaKernel {
 public:
  explicit ApplyCuda(std::shared_ptr<LabelCudaShared> s) : s_(std::move(s)) {}
  void run_async(const CudaBand& b) override {
    auto stream = static_cast<cudaStream_t>(b.stream);
    const std::int64_t rows = b.band.rows, width = b.in_spec.width;
    const std::size_t label_bytes = cuda::label_band_scratch(rows, width);
    const std::uint64_t most = most_components(rows * width);
    std::byte* d_table = b.scratch + label_bytes;
    const std::size_t entry = s_->wide ? sizeof(std::uint64_t) : sizeof(std::uint32_t);
    // The slot's previous slice went in before its band was written: the buffer is free. Sized
    // by the band's count (asked first), not by the most a band can have. It goes in before the
    // kernels, after the band's rows: a copy between the labelling and the relabelling would wait
    // for the copy engine (the other slots' bands going in) and hold the band's last kernel.
    const std::uint64_t count = s_->table_slice(b.band, nullptr, most);
    std::byte* slice = pinned(host_[b.slot], static_cast<std::size_t>(count + 1) * entry);
    const std::uint64_t n = s_->table_slice(b.band, slice, count);
    if (n > 0)
      OOC_CUDA_TRY(cudaMemcpyAsync(d_table, slice, static_cast<std::size_t>(n) * entry,
                                   cudaMemcpyHostToDevice, stream));
    cuda::label_band_through_async(b.in, b.in_stride, rows, width, b.in_spec.type, b.in_bits,
                                   s_->diagonal, b.scratch, label_bytes, d_table, s_->wide, b.out,
                                   b.out_stride, stream);
  }

 private:
  std::shared_ptr<LabelCudaShared> s_;
  std::map<int, cuda::PinnedBuffer> host_;
};

}  // namespace

std::size_t label_cuda_scratch(std::int64_t rows, std::int64_t width, bool wide) {
  // The table slice's entries as the labels' type.
  const std::size_t entry = wide ? sizeof(std::uint64_t) : sizeof(std::uint32_t);
  return cuda::label_band_scratch(rows, width) +
         aligned(static_cast<std::size_t>(most_components(rows * width)) * entry);
}

std::unique_ptr<CudaKernel> make_label_scan_cuda(std::shared_ptr<LabelCudaShared> shared) {
  return std::make_unique<ScanCuda>(std::move(shared));
}

std::unique_ptr<CudaKernel> make_label_apply_cuda(std::shared_ptr<LabelCudaShared> shared) {
  return std::make_unique<ApplyCuda>(std::move(shared));
}

}  // namespace ooc::detail
