// The CUDA kernel object of normalized convolution (masked_separable.cpp's separable stages under
// nodata): the taps and their magnitudes uploaded once per device, and the launch of
// kernels/cuda/masked on a band the engine staged in device memory.
#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "cuda/resources.hpp"
#include "kernels/cuda/masked/normalized.cuh"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

class MaskedSeparableCudaKernel final : public CudaKernel {
 public:
  MaskedSeparableCudaKernel(const std::vector<int>& devices, const MaskedCudaArgs& a) {
    const bool f64 = a.f64;
    std::vector<double> all = a.row_taps;
    all.insert(all.end(), a.col_taps.begin(), a.col_taps.end());
    double ra = 0, ca = 0;
    for (const double t : a.row_taps) ra += std::fabs(t);
    for (const double t : a.col_taps) ca += std::fabs(t);
    bool negative = false;
    for (std::size_t i = 0, n = all.size(); i < n; ++i) {
      negative |= all[i] < 0;
      all.push_back(std::fabs(all[i]));
    }
    const std::vector<float> f(all.begin(), all.end());
    taps_.emplace(devices, f64 ? static_cast<const void*>(all.data()) : f.data(),
                  all.size() * (f64 ? 8 : 4));
    base_.width = a.out.width;
    base_.channels = a.out.channels;
    base_.out_type = a.out.type;
    base_.border = a.border;
    base_.border_value = a.border_value;
    base_.rx = static_cast<std::int64_t>(a.row_taps.size() / 2);
    base_.ry = static_cast<std::int64_t>(a.col_taps.size() / 2);
    base_.negative = negative;
    base_.nodata = a.nodata;
    base_.min_weight_need = a.min_weight * ra * ca;
    base_.fill = a.fill;
    base_.f64 = f64;
  }

  void run_async(const CudaBand& b) override {
    cuda::NormalizedLaunch l = base_;
    // A band may carry more context than the taps read.
    const std::int64_t skip = b.halo - l.ry;
    l.in = b.in + static_cast<std::size_t>(skip) * b.in_stride;
    l.in_stride = b.in_stride;
    l.in_type = b.in_spec.type;
    l.first_row = b.first_row + skip;
    l.image_height = b.in_spec.height;
    l.out_rows = b.band.rows;
    l.out = b.out;
    l.out_stride = b.out_stride;
    l.taps = taps_->on(b.device);
    l.scratch = b.scratch;
    cuda::normalized_async(l, static_cast<cudaStream_t>(b.stream));
  }

 private:
  std::optional<cuda::Replicated> taps_;
  cuda::NormalizedLaunch base_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_masked_separable_cuda(const std::vector<int>& devices,
                                                       const MaskedCudaArgs& a) {
  return std::make_unique<MaskedSeparableCudaKernel>(devices, a);
}

std::size_t masked_separable_cuda_scratch(std::int64_t band_rows, std::int64_t ry,
                                          std::int64_t row_samples, bool f64) {
  return cuda::normalized_cuda_scratch(band_rows, ry, row_samples, f64);
}

}  // namespace ooc::detail
