// The CUDA kernel objects of histogram equalization: launches on bands the engine staged, and the
// lookup table uploaded once per device.
#include <cuda_runtime.h>

#include <vector>

#include "../../kernels/cuda/equalize.cuh"
#include "../cuda/check.hpp"
#include "../cuda/resources.hpp"
#include "cuda_kernels.hpp"

namespace ooc {
namespace {

class HistogramCuda final : public CudaKernel {
 public:
  void run_async(const CudaBand& b) override {
    // The engine zeroed the partial; the halo is 0, so the input rows are the band's.
    cuda::histogram_async(b.in, b.in_stride, b.band.rows, b.in_spec.width, b.in_spec.channels,
                          b.in_spec.type, reinterpret_cast<std::uint64_t*>(b.partial),
                          static_cast<cudaStream_t>(b.stream));
  }
};

class LutCuda final : public CudaKernel {
 public:
  LutCuda(const std::vector<int>& devices, const std::vector<std::uint16_t>& lut) {
    const std::size_t bytes = lut.size() * sizeof(std::uint16_t);
    for (int d : devices) {
      if (d >= static_cast<int>(lut_.size())) lut_.resize(static_cast<std::size_t>(d) + 1);
      lut_[static_cast<std::size_t>(d)] = cuda::DeviceBuffer(d, bytes);
      OOC_CUDA_TRY(cudaMemcpy(lut_[static_cast<std::size_t>(d)].data(), lut.data(), bytes,
                              cudaMemcpyHostToDevice));
    }
  }
  void run_async(const CudaBand& b) override {
    cuda::apply_lut_async(
        b.in, b.in_stride, b.out, b.out_stride, b.band.rows, b.in_spec.width, b.in_spec.channels,
        b.in_spec.type,
        reinterpret_cast<const std::uint16_t*>(lut_[static_cast<std::size_t>(b.device)].data()),
        static_cast<cudaStream_t>(b.stream));
  }

 private:
  std::vector<cuda::DeviceBuffer> lut_;  // by device index
};

}  // namespace

std::unique_ptr<CudaKernel> make_histogram_cuda(const std::vector<int>&, std::int64_t) {
  return std::make_unique<HistogramCuda>();
}

std::unique_ptr<CudaKernel> make_lut_cuda(const std::vector<int>& devices, std::int64_t,
                                          const std::vector<std::uint16_t>& lut) {
  return std::make_unique<LutCuda>(devices, lut);
}

}  // namespace ooc
