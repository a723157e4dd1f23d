// The CUDA kernel object of a volume's normalized convolution in 3-D (masked_volume.cpp): the
// separable taps and the magnitudes min-weight weighs, or a 3-D kernel's non-zero taps and where
// they lie, uploaded once per device, and the launch of kernels/cuda/masked/normalized.cu's
// volume kernels on a band the engine staged.
#include <cuda_runtime.h>

#include <cmath>
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
    common(a);
    if (!a.taps3d.empty()) {
      kernel3d(devices, a);
      return;
    }
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
    upload(devices, all, a.f64);
    base_.rz = static_cast<std::int64_t>(a.z.size() / 2);
    base_.ry = static_cast<std::int64_t>(a.col.size() / 2);
    base_.rx = static_cast<std::int64_t>(a.row.size() / 2);
    base_.negative = negative;
  }

  void run_async(const CudaBand& b) override {
    cuda::VolumeNormalizedLaunch l = base_;
    if (tap_at_) l.tap_at = reinterpret_cast<const std::int32_t*>(tap_at_->on(b.device));
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
  void common(const MaskedVolumeCudaArgs& a) {
    base_.width = a.out.width;
    base_.channels = a.out.channels;
    base_.image_height = a.out.height;
    base_.out_type = a.out.type;
    base_.border = a.border;
    base_.border_value = a.border_value;
    base_.nodata = a.nodata;
    base_.min_weight_need = a.min_weight_need;
    base_.fill = a.fill;
    base_.f64 = a.f64;
  }

  // The taps as the accumulator's type, to each device.
  void upload(const std::vector<int>& devices, const std::vector<double>& taps, bool f64) {
    const std::vector<float> f(taps.begin(), taps.end());
    taps_.emplace(devices, f64 ? static_cast<const void*>(taps.data()) : f.data(),
                  taps.size() * (f64 ? 8 : 4));
  }

  // A 3-D kernel: its non-zero taps as the CPU keeps them (one, the last, where all are zero),
  // then their magnitudes; each one's plane, row and column.
  void kernel3d(const std::vector<int>& devices, const MaskedVolumeCudaArgs& a) {
    const std::int64_t P = 2 * a.rz + 1, K = 2 * a.ry + 1, L = 2 * a.rx + 1;
    std::vector<double> w, wa;
    std::vector<std::int32_t> at;
    bool negative = false;
    for (std::int64_t t = 0; t < P * K * L; ++t) {
      const double v = a.taps3d[static_cast<std::size_t>(t)];
      negative |= v < 0;
      if (v == 0 && !(w.empty() && t == P * K * L - 1)) continue;
      w.push_back(v);
      wa.push_back(std::fabs(v));
      at.insert(at.end(),
                {static_cast<std::int32_t>(t / (K * L)), static_cast<std::int32_t>((t / L) % K),
                 static_cast<std::int32_t>(t % L)});
    }
    base_.tap_count = static_cast<std::int64_t>(w.size());
    w.insert(w.end(), wa.begin(), wa.end());
    upload(devices, w, a.f64);
    tap_at_.emplace(devices, at.data(), at.size() * sizeof(std::int32_t));
    base_.rz = a.rz;
    base_.ry = a.ry;
    base_.rx = a.rx;
    base_.negative = negative;
  }

  std::optional<cuda::Replicated> taps_, tap_at_;
  cuda::VolumeNormalizedLaunch base_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_masked_volume_cuda(const std::vector<int>& devices,
                                                    const MaskedVolumeCudaArgs& a) {
  return std::make_unique<MaskedVolumeCudaKernel>(devices, a);
}

std::size_t masked_volume_cuda_scratch(const MaskedVolumeCudaArgs& a, std::int64_t band_rows) {
  if (!a.taps3d.empty()) return 0;
  return cuda::volume_normalized_cuda_scratch(
      band_rows, static_cast<std::int64_t>(a.col.size() / 2),
      static_cast<std::int64_t>(a.row.size() / 2), a.out.width, a.out.channels, a.f64);
}

}  // namespace ooc::detail
