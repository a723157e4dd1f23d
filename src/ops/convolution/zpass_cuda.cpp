// The CUDA side of the z pass (src/ops/convolution/zpass.cpp): the planes of a band already in
// device memory, from the engine's layout or a fused chain's (CudaBand::plane_in), to one launch.
#include <cuda_runtime.h>

#include "kernels/cuda/convolution/zpass.cuh"
#include "ops/convolution/band_fill.hpp"
#include "ops/cuda_kernels.hpp"

namespace ooc {
namespace {

class ZPassCudaKernel final : public CudaKernel {
 public:
  ZPassCudaKernel(kernels::ZPassKind kind, const std::vector<double>& taps, std::int64_t before,
                  SampleType out, BorderMode border, double cval)
      : before_(before), border_(border) {
    l_.kind = static_cast<int>(kind);
    l_.planes = static_cast<int>(taps.size());
    for (std::size_t k = 0; k < taps.size(); ++k) l_.taps[k] = taps[k];
    l_.out_type = out;
    l_.border_value = cval;
  }
  void run_async(const CudaBand& b) override {
    cuda::ZPassLaunch l = l_;
    const std::int64_t first = b.plane_halo - before_;
    for (int k = 0; k < l.planes; ++k) l.in[k] = detail::cuda_plane(b, first + k, border_);
    l.in_stride = b.in_stride;
    l.in_type = b.in_spec.type;
    l.samples = b.in_spec.row_samples();
    l.rows = b.band.rows;
    l.out = b.out;
    l.out_stride = b.out_stride;
    cuda::zpass_async(l, static_cast<cudaStream_t>(b.stream));
  }

 private:
  cuda::ZPassLaunch l_;
  std::int64_t before_;
  BorderMode border_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_zpass_cuda(kernels::ZPassKind kind,
                                            const std::vector<double>& taps, std::int64_t before,
                                            SampleType out, BorderMode border, double cval) {
  if (taps.size() > static_cast<std::size_t>(cuda::ZPassLaunch::kMaxPlanes)) return nullptr;
  return std::make_unique<ZPassCudaKernel>(kind, taps, before, out, border, cval);
}

}  // namespace ooc
