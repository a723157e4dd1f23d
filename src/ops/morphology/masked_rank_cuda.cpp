// The CUDA kernel object of the masked rank filters (masked_rank.cpp): the window's mask uploaded
// once per device, and the launch of kernels/cuda/masked/rank.cu on a band the engine staged.
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <vector>

#include "cuda/resources.hpp"
#include "kernels/cpu/masked/masked.hpp"
#include "kernels/cuda/masked/rank.cuh"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

class MaskedRankCudaKernel final : public CudaKernel {
 public:
  MaskedRankCudaKernel(const std::vector<int>& devices, const kernels::masked::RankArgs& a,
                       const std::vector<std::uint8_t>& mask, const ImageSpec& in) {
    if (!mask.empty()) mask_.emplace(devices, mask.data(), mask.size());
    base_.width = in.width;
    base_.channels = in.channels;
    base_.type = in.type;
    base_.image_height = in.height;
    base_.border = a.border;
    base_.cval = a.cval;
    base_.nodata = a.nodata;
    base_.top = a.top;
    base_.left = a.left;
    base_.h = a.h;
    base_.w = a.w;
    base_.rank = a.rank;
    base_.count = a.count;
  }

  void run_async(const CudaBand& b) override {
    cuda::MaskedRankLaunch l = base_;
    l.in = b.in;
    l.in_stride = b.in_stride;
    l.halo = b.halo;
    l.first_row = b.first_row;
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
  return std::make_unique<MaskedRankCudaKernel>(devices, a, mask, in);
}

}  // namespace ooc::detail
