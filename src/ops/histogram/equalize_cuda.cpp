// The CUDA kernel objects of histogram equalization: launches on bands the engine staged, and the
// lookup table uploaded once per device.
#include <cuda_runtime.h>

#include <vector>

#include "cuda/resources.hpp"
#include "kernels/cuda/histogram/equalize.cuh"
#include "ops/cuda_kernels.hpp"

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
  LutCuda(const std::vector<int>& devices, const std::vector<std::uint16_t>& lut)
      : lut_(devices, lut.data(), lut.size() * sizeof(std::uint16_t)) {}
  void run_async(const CudaBand& b) override {
    cuda::apply_lut_async(b.in, b.in_stride, b.out, b.out_stride, b.band.rows, b.in_spec.width,
                          b.in_spec.channels, b.in_spec.type,
                          reinterpret_cast<const std::uint16_t*>(lut_.on(b.device)),
                          static_cast<cudaStream_t>(b.stream));
  }

 private:
  cuda::Replicated lut_;
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
