// The CUDA kernel object of the 2-D convolution: taps uploaded once per device, and the launch of
// kernels/cuda/conv2d on a band the engine staged in device memory.
#include <cuda_runtime.h>

#include <optional>
#include <vector>

#include "cuda/resources.hpp"
#include "cuda_kernels.hpp"
#include "kernels/cuda/conv2d.cuh"

namespace ooc {
namespace {

class Conv2dCudaKernel final : public CudaKernel {
 public:
  Conv2dCudaKernel(const std::vector<int>& devices, const ImageSpec& out, BorderMode border,
                   double border_value, const std::vector<double>& taps, std::int64_t rx,
                   std::int64_t ry, bool f64) {
    std::vector<float> f(taps.begin(), taps.end());
    const void* host = f64 ? static_cast<const void*>(taps.data()) : f.data();
    taps_.emplace(devices, host, taps.size() * (f64 ? 8 : 4));
    base_.width = out.width;
    base_.channels = out.channels;
    base_.out_type = out.type;
    base_.rx = rx;
    base_.ry = ry;
    base_.border = border;
    base_.border_value = border_value;
    base_.f64 = f64;
  }

  void run_async(const CudaBand& b) override {
    cuda::Conv2dLaunch l = base_;
    l.taps = taps_->on(b.device);
    l.in = b.in;
    l.in_stride = b.in_stride;
    l.in_type = b.in_spec.type;
    l.out = b.out;
    l.out_stride = b.out_stride;
    l.out_rows = b.band.rows;
    l.first_row = b.first_row;
    l.image_height = b.in_spec.height;
    cuda::conv2d_band_async(l, static_cast<cudaStream_t>(b.stream));
  }

 private:
  std::optional<cuda::Replicated> taps_;
  cuda::Conv2dLaunch base_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_conv2d_cuda(const std::vector<int>& devices, const ImageSpec& out,
                                             BorderMode border, double border_value,
                                             const std::vector<double>& taps, std::int64_t rx,
                                             std::int64_t ry, bool f64) {
  return std::make_unique<Conv2dCudaKernel>(devices, out, border, border_value, taps, rx, ry, f64);
}

}  // namespace ooc
