// The CUDA kernel object of the masked rank filters (masked_rank.cpp, and a volume's in 3-D,
// masked_rank3d.cpp): the window's mask uploaded once per device, and the launch of
// kernels/cuda/masked/rank.cu on a band the engine staged.
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <vector>

#include "cuda/resources.hpp"
#include "kernels/cpu/masked/masked.hpp"
#include "kernels/cpu/masked/volume.hpp"
#include "kernels/cuda/masked/rank.cuh"
#include "ops/convolution/band_fill.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

static_assert(kMaskedRank3dCudaMaxPlanes == cuda::kMaskedRankMaxPlanes,
              "masked.hpp's limit must be the kernel's");

// The window's fields of a launch, from either the image's or the volume's arguments.
template <class Args>
cuda::MaskedRankLaunch launch_of(const Args& a, const ImageSpec& in, std::int64_t front,
                                 std::int64_t d) {
  cuda::MaskedRankLaunch l;
  l.width = in.width;
  l.channels = in.channels;
  l.type = in.type;
  l.image_height = in.height;
  l.border = a.border;
  l.cval = a.cval;
  l.nodata = a.nodata;
  l.top = a.top;
  l.left = a.left;
  l.h = a.h;
  l.w = a.w;
  l.rank = a.rank;
  l.count = a.count;
  l.front = front;
  l.d = d;
  return l;
}

// An image's band has one plane; a volume's band 2 plane_halo + 1, of which the window takes d
// from plane_halo - front.
class MaskedRankCudaKernel final : public CudaKernel {
 public:
  MaskedRankCudaKernel(const std::vector<int>& devices, const cuda::MaskedRankLaunch& base,
                       const std::vector<std::uint8_t>& mask)
      : base_(base) {
    if (!mask.empty()) mask_.emplace(devices, mask.data(), mask.size());
  }

  void run_async(const CudaBand& b) override {
    cuda::MaskedRankLaunch l = base_;
    if (l.d == 1 && b.plane_halo == 0) {
      l.own = l.planes[0] = b.in + static_cast<std::size_t>(b.halo) * b.in_stride;
    } else {
      for (std::int64_t k = 0; k < l.d; ++k)
        l.planes[k] = cuda_plane(b, b.plane_halo - l.front + k, l.border);
      l.own = cuda_plane(b, b.plane_halo, l.border);
    }
    l.in_stride = b.in_stride;
    l.y0 = b.band.y0;
    l.out_rows = b.band.rows;
    l.out = b.out;
    l.out_stride = b.out_stride;
    l.mask = mask_ ? reinterpret_cast<const std::uint8_t*>(mask_->on(b.device)) : nullptr;
    cuda::masked_rank_async(l, static_cast<cudaStream_t>(b.stream));
  }

 private:
  std::optional<cuda::Replicated> mask_;
  cuda::MaskedRankLaunch base_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_masked_rank_cuda(const std::vector<int>& devices,
                                                  const kernels::masked::RankArgs& a,
                                                  const std::vector<std::uint8_t>& mask,
                                                  const ImageSpec& in) {
  return std::make_unique<MaskedRankCudaKernel>(devices, launch_of(a, in, 0, 1), mask);
}

std::unique_ptr<CudaKernel> make_masked_rank3d_cuda(const std::vector<int>& devices,
                                                    const kernels::masked::VolumeRankArgs& a,
                                                    const std::vector<std::uint8_t>& mask,
                                                    const ImageSpec& in) {
  return std::make_unique<MaskedRankCudaKernel>(devices, launch_of(a, in, a.front, a.d), mask);
}

}  // namespace ooc::detail
