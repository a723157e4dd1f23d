// The CUDA side of a volume's rank filters (src/ops/morphology/rank3d.cpp) and of its 3-D
// footprints' rank, minimum and maximum filters (footprint3d.cpp): the window's planes of a band
// in device memory, from the engine's layout or a fused chain's, to one launch; a footprint's
// runs of ones copied once to every device.
#include <cuda_runtime.h>

#include <optional>

#include "cuda/resources.hpp"
#include "kernels/cuda/morphology/rank3d.cuh"
#include "ops/convolution/band_fill.hpp"
#include "ops/cuda_kernels.hpp"

namespace ooc {
namespace {

class Rank3dCudaKernel final : public CudaKernel {
 public:
  Rank3dCudaKernel(const Rank3dCudaBox& box, std::int64_t count, BorderMode border, double cval)
      : front_(box.front) {
    l_.planes = static_cast<int>(box.planes);
    l_.rows = static_cast<int>(box.rows);
    l_.cols = static_cast<int>(box.cols);
    l_.top = static_cast<int>(box.top);
    l_.left = static_cast<int>(box.left);
    l_.rank = static_cast<int>(box.rank);
    l_.count = static_cast<int>(count);
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
    if (runs_) l.runs = reinterpret_cast<const cuda::Rank3dRun*>(runs_->on(b.device));
    cuda::rank3d_band_async(l, static_cast<cudaStream_t>(b.stream));
  }
  // A footprint's runs on every device.
  void set_runs(const std::vector<int>& devices, const std::vector<cuda::Rank3dRun>& runs) {
    runs_.emplace(devices, runs.data(), runs.size() * sizeof(runs[0]));
    l_.run_count = static_cast<int>(runs.size());
  }

 private:
  cuda::Rank3dLaunch l_;
  std::int64_t front_;
  std::optional<cuda::Replicated> runs_;
};

bool fits(const Rank3dCudaBox& box, std::int64_t count) {
  return count >= 1 && count <= kRank3dCudaMaxSamples && box.planes <= kRank3dCudaMaxPlanes;
}

}  // namespace

std::unique_ptr<CudaKernel> make_rank3d_cuda(const Rank3dCudaBox& box, BorderMode border,
                                             double cval) {
  const std::int64_t count = box.planes * box.rows * box.cols;
  if (!fits(box, count)) return nullptr;
  return std::make_unique<Rank3dCudaKernel>(box, count, border, cval);
}

namespace detail::morphology {

// Declared in footprint3d.cpp (which builds without CUDA): the footprint's mask of box.planes x
// box.rows x box.cols (row-major, planes first), its window `front` planes, `top` rows and `left`
// columns before its sample.
std::unique_ptr<CudaKernel> make_footprint3d_cuda(const std::vector<int>& devices,
                                                  const Rank3dCudaBox& box,
                                                  const std::vector<std::uint8_t>& mask,
                                                  BorderMode border, double cval) {
  std::vector<cuda::Rank3dRun> runs;
  for (std::int64_t z = 0; z < box.planes; ++z)
    for (std::int64_t y = 0; y < box.rows; ++y) {
      const std::uint8_t* m = mask.data() + (z * box.rows + y) * box.cols;
      for (std::int64_t x = 0; x < box.cols;) {
        if (!m[x]) {
          ++x;
          continue;
        }
        const std::int64_t start = x;
        while (x < box.cols && m[x]) ++x;
        runs.push_back({static_cast<std::int32_t>(z), static_cast<std::int32_t>(y),
                        static_cast<std::int32_t>(start), static_cast<std::int32_t>(x - start)});
      }
    }
  std::int64_t count = 0;
  for (const auto& r : runs) count += r.len;
  if (!fits(box, count)) return nullptr;
  auto k = std::make_unique<Rank3dCudaKernel>(box, count, border, cval);
  k->set_runs(devices, runs);
  return k;
}

}  // namespace detail::morphology

}  // namespace ooc
