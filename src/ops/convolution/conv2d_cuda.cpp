// The CUDA kernel object of the 2-D convolution: taps uploaded once per device, and the launch of
// kernels/cuda/conv2d on a band the engine staged in device memory.
#include <cuda_runtime.h>

#include <optional>
#include <vector>

#include "band_fill.hpp"
#include "cuda/resources.hpp"
#include "kernels/cuda/convolution/conv2d.cuh"
#include "ops/cuda_kernels.hpp"

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
    detail::set_launch_images(base_, out, border, border_value, rx, ry, f64);
  }

  void run_async(const CudaBand& b) override {
    cuda::Conv2dLaunch l = base_;
    l.taps = taps_->on(b.device);
    // The band's halo is the FFT's where the CPU takes the FFT (and CUDA the direct sum): the
    // kernel reads from ry rows above the output, as the CPU's direct kernel does.
    detail::set_launch_band(l, detail::with_halo(b, l.ry));
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
