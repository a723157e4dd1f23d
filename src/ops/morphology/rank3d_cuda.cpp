// The CUDA side of a volume's rank filters (src/ops/morphology/rank3d.cpp): the box's planes of a
// band in device memory, from the engine's layout or a fused chain's, to one launch.
#include <cuda_runtime.h>

#include "kernels/cuda/morphology/rank3d.cuh"
#include "ops/convolution/band_fill.hpp"
#include "ops/cuda_kernels.hpp"

namespace ooc {
namespace {

class Rank3dCudaKernel final : public CudaKernel {
 public:
  Rank3dCudaKernel(const Rank3dCudaBox& box, BorderMode border, double cval) : front_(box.front) {
    l_.planes = static_cast<int>(box.planes);
    l_.rows = static_cast<int>(box.rows);
    l_.cols = static_cast<int>(box.cols);
    l_.top = static_cast<int>(box.top);
    l_.left = static_cast<int>(box.left);
    l_.rank = static_cast<int>(box.rank);
    l_.border = border;
    l_.border_value = cval;
  }
  void run_async(const CudaBand& b) override {
    cuda::Rank3dLaunch l = l_;
    for (int k = 0; k < l.planes; ++k)
      l.in[k] = detail::cuda_plane(b, b.plane_halo - front_ + k, l.border);
    l.in_stride = b.in_stride;
    l.first_row = b.band.y0;
    l.image_height = b.in_spec.height;
    l.width = b.in_spec.width;
    l.channels = b.in_spec.channels;
    l.type = b.in_spec.type;
    l.out = b.out;
    l.out_stride = b.out_stride;
    l.out_rows = b.band.rows;
    cuda::rank3d_band_async(l, static_cast<cudaStream_t>(b.stream));
  }

 private:
  cuda::Rank3dLaunch l_;
  std::int64_t front_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_rank3d_cuda(const Rank3dCudaBox& box, BorderMode border,
                                             double cval) {
  if (box.planes * box.rows * box.cols > kRank3dCudaMaxSamples ||
      box.planes > cuda::Rank3dLaunch::kMaxPlanes)
    return nullptr;
  return std::make_unique<Rank3dCudaKernel>(box, border, cval);
}

}  // namespace ooc
