// The CUDA kernel object of a volume's normalized convolution in 3-D by separable taps
// (masked_volume.cpp): the taps and the magnitudes min-weight weighs uploaded once per device,
// and the launch of kernels/cuda/masked/normalized.cu's volume passes on a band the engine staged.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "cuda/resources.hpp"
#include "kernels/cuda/masked/normalized.cuh"
#include "ops/convolution/band_fill.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

static_assert(kMaskedVolumeCudaMaxPlanes == cuda::kVolumeNormalizedMaxPlanes,
              "masked.hpp's limit must be the kernel's");

class MaskedVolumeCudaKernel final : public CudaKernel {
 public:
  MaskedVolumeCudaKernel(const std::vector<int>& devices, const MaskedVolumeCudaArgs& a) {
    // z, column, row, then the magnitudes in the same order (z's as given: folded taps fold
    // their magnitudes apart).
    std::vector<double> all = a.z;
    all.insert(all.end(), a.col.begin(), a.col.end());
    all.insert(all.end(), a.row.begin(), a.row.end());
    bool negative = false;
    for (const double t : all) negative |= t < 0;
    for (std::size_t i = 0; i < a.z.size(); ++i) {
      all.push_back(a.z_abs[i]);
      negative |= a.z_abs[i] != std::fabs(a.z[i]);
    }
    for (const double t : a.col) all.push_back(std::fabs(t));
    for (const double t : a.row) all.push_back(std::fabs(t));
    std::vector<std::byte> bytes(all.size() * (a.f64 ? 8 : 4));
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (a.f64) {
        std::memcpy(bytes.data() + i * 8, &all[i], 8);
      } else {
        const float f = static_cast<float>(all[i]);
        std::memcpy(bytes.data() + i * 4, &f, 4);
      }
    }
    taps_.emplace(devices, bytes.data(), bytes.size());
    base_.width = a.out.width;
    base_.channels = a.out.channels;
    base_.image_height = a.out.height;
    base_.out_type = a.out.type;
    base_.border = a.border;
    base_.border_value = a.border_value;
    base_.rz = static_cast<std::int64_t>(a.z.size() / 2);
    base_.ry = static_cast<std::int64_t>(a.col.size() / 2);
    base_.rx = static_cast<std::int64_t>(a.row.size() / 2);
    base_.negative = negative;
    base_.nodata = a.nodata;
    base_.min_weight_need = a.min_weight_need;
    base_.fill = a.fill;
    base_.f64 = a.f64;
  }

  void run_async(const CudaBand& b) override {
    cuda::VolumeNormalizedLaunch l = base_;
    for (std::int64_t k = 0; k <= 2 * l.rz; ++k)
      l.planes[k] = cuda_plane(b, b.plane_halo - l.rz + k, l.border);
    l.own = cuda_plane(b, b.plane_halo, l.border);
    l.in_stride = b.in_stride;
    l.in_type = b.in_spec.type;
    l.y0 = b.band.y0;
    l.out_rows = b.band.rows;
    l.out = b.out;
    l.out_stride = b.out_stride;
    l.taps = taps_->on(b.device);
    l.scratch = b.scratch;
    cuda::volume_normalized_async(l, static_cast<cudaStream_t>(b.stream));
  }

 private:
  std::optional<cuda::Replicated> taps_;
  cuda::VolumeNormalizedLaunch base_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_masked_volume_cuda(const std::vector<int>& devices,
                                                    const MaskedVolumeCudaArgs& a) {
  return std::make_unique<MaskedVolumeCudaKernel>(devices, a);
}

std::size_t masked_volume_cuda_scratch(const MaskedVolumeCudaArgs& a, std::int64_t band_rows) {
  return cuda::volume_normalized_cuda_scratch(
      band_rows, static_cast<std::int64_t>(a.col.size() / 2),
      static_cast<std::int64_t>(a.row.size() / 2), a.out.width, a.out.channels, a.f64);
}

}  // namespace ooc::detail
