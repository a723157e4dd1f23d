// The CUDA kernel object of the masked conversion (masked_convert.cpp): the launch of
// kernels/cuda/masked/convert.cu on a band the engine staged.
#include <cuda_runtime.h>

#include <memory>

#include "kernels/cuda/masked/convert.cuh"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

class MaskedConvertCudaKernel final : public CudaKernel {
 public:
  MaskedConvertCudaKernel(SampleType in, SampleType out, double nodata)
      : in_(in), out_(out), nodata_(nodata) {}
  void run_async(const CudaBand& b) override {
    cuda::masked_convert_async(b.in + static_cast<std::size_t>(b.halo) * b.in_stride, b.in_stride,
                               in_, b.out, b.out_stride, out_, b.band.rows, b.in_spec.row_samples(),
                               nodata_, static_cast<cudaStream_t>(b.stream));
  }

 private:
  SampleType in_, out_;
  double nodata_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_masked_convert_cuda(SampleType in, SampleType out, double nodata) {
  return std::make_unique<MaskedConvertCudaKernel>(in, out, nodata);
}

}  // namespace ooc::detail
