// The CUDA kernel objects of the masked conversion (masked_convert.cpp) and of the compound
// stages' holes kept (masked_combine.cpp): launches of kernels/cuda/masked/convert.cu on a band
// the engine staged.
#include <cuda_runtime.h>

#include <memory>
#include <utility>

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

// The combination's kernel, then its output's holes put back from the band's own samples.
class HolesKeptCudaKernel final : public CudaKernel {
 public:
  HolesKeptCudaKernel(std::unique_ptr<CudaKernel> inner, SampleType out, double nodata)
      : inner_(std::move(inner)), out_(out), nodata_(nodata) {}
  void start(const CudaSlotInfo& slot) override { inner_->start(slot); }
  void stop(const CudaSlotInfo& slot) override { inner_->stop(slot); }
  void run_async(const CudaBand& b) override {
    inner_->run_async(b);
    cuda::keep_holes_async(b.in + static_cast<std::size_t>(b.halo) * b.in_stride, b.in_stride,
                           b.in_spec.type, b.out, b.out_stride, out_, b.band.rows,
                           b.in_spec.row_samples(), nodata_, static_cast<cudaStream_t>(b.stream));
  }

 private:
  std::unique_ptr<CudaKernel> inner_;
  SampleType out_;
  double nodata_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_keep_holes_cuda(std::unique_ptr<CudaKernel> inner, SampleType out,
                                                 double nodata) {
  return std::make_unique<HolesKeptCudaKernel>(std::move(inner), out, nodata);
}

std::unique_ptr<CudaKernel> make_masked_convert_cuda(SampleType in, SampleType out, double nodata) {
  return std::make_unique<MaskedConvertCudaKernel>(in, out, nodata);
}

}  // namespace ooc::detail
