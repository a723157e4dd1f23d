// The CUDA kernel object of the separable convolution: taps uploaded once per device, and the
// launch of kernels/cuda on a band the engine staged in device memory.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "band_fill.hpp"
#include "cuda/resources.hpp"
#include "kernels/cuda/convolution/separable.cuh"
#include "kernels/cuda/convolution/separable_policy.cuh"
#include "ooc/ops/separable.hpp"
#include "ops/cuda_kernels.hpp"

namespace ooc {

namespace {
template <int... R>
constexpr int largest_radius(std::integer_sequence<int, R...>) {
  int m = 0;
  ((m = R > m ? R : m), ...);
  return m;
}
// separable_costs takes the FFT on CUDA only beyond the specialized radii: the two must agree.
static_assert(largest_radius(cuda::separable::FastRadii{}) == kCudaSpecializedMaxRadius,
              "kCudaSpecializedMaxRadius (cuda_kernels.hpp) must be FastRadii's largest");
}  // namespace
namespace {

// OOC_CUDA_GENERIC_KERNELS=1 forces the generic kernels (same results, slower): for comparison.
bool generic_kernels_forced() {
  static const bool forced = [] {
    const char* v = std::getenv("OOC_CUDA_GENERIC_KERNELS");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return forced;
}

class SeparableCudaKernel final : public CudaKernel {
 public:
  SeparableCudaKernel(const std::vector<int>& devices, const ImageSpec& out,
                      const SeparableParams& p, const std::vector<double>& row_taps,
                      const std::vector<double>& col_taps, bool f64) {
    const std::size_t acc = f64 ? 8 : 4;
    // Taps in the accumulator type.
    std::vector<std::byte> taps((row_taps.size() + col_taps.size()) * acc);
    auto put = [&](const std::vector<double>& t, std::size_t offset) {
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (f64) {
          std::memcpy(taps.data() + offset + i * 8, &t[i], 8);
        } else {
          const float f = static_cast<float>(t[i]);
          std::memcpy(taps.data() + offset + i * 4, &f, 4);
        }
      }
    };
    put(row_taps, 0);
    put(col_taps, row_taps.size() * acc);
    taps_.emplace(devices, taps.data(), taps.size());
    host_taps_ = std::move(taps);  // the radius-specialized kernels take them by value
    detail::set_launch_images(base_, out, p.border, p.border_value, p.filter.radius_x(),
                              p.filter.radius_y(), f64);
    base_.generic = generic_kernels_forced();
    col_offset_ = row_taps.size() * acc;
    acc_ = acc;
  }

  void run_async(const CudaBand& b) override {
    cuda::SeparableLaunch l = base_;
    const std::byte* taps = taps_->on(b.device);
    l.row_taps = taps;
    l.col_taps = taps + col_offset_;
    l.row_taps_host = host_taps_.data();
    l.col_taps_host = host_taps_.data() + col_offset_;
    // The band's halo is the FFT's where the CPU takes the FFT: the kernel reads from ry rows
    // above the output.
    detail::set_launch_band(l, detail::with_halo(b, l.ry));
    l.mid = b.scratch;
    l.mid_stride = static_cast<std::size_t>(b.in_spec.row_samples()) * acc_;
    cuda::separable_band_async(l, static_cast<cudaStream_t>(b.stream));
  }

 private:
  std::optional<cuda::Replicated> taps_;
  std::vector<std::byte> host_taps_;  // the same bytes as taps_, on the host
  cuda::SeparableLaunch base_;
  std::size_t col_offset_ = 0, acc_ = 4;
};

}  // namespace

std::unique_ptr<CudaKernel> make_separable_cuda(const std::vector<int>& devices,
                                                const ImageSpec& out, const SeparableParams& p,
                                                const std::vector<double>& row_taps,
                                                const std::vector<double>& col_taps, bool f64) {
  return std::make_unique<SeparableCudaKernel>(devices, out, p, row_taps, col_taps, f64);
}

std::size_t separable_cuda_scratch(std::int64_t band_rows, std::int64_t ry,
                                   std::int64_t row_samples, bool f64) {
  return static_cast<std::size_t>(band_rows + 2 * ry) * static_cast<std::size_t>(row_samples) *
         (f64 ? 8 : 4);
}

}  // namespace ooc
