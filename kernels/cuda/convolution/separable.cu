// The separable convolution's CUDA entry points (separable.cuh) with the library's tuning: the
// dispatch of separable_dispatch.cuh instantiated on the default policy. The kernels live in
// separable_generic.cuh (any radius, float or double sums) and separable_specialized.cuh (fused,
// quad and two-pass kernels specialized on the radius, the same bits), their launch constants in
// separable_policy.cuh.
#include "separable.cuh"

#include "separable_dispatch.cuh"
#include "separable_policy.cuh"

namespace ooc::cuda {
namespace {

using Library = separable::Dispatch<separable::SeparablePolicy<>>;

}  // namespace

SeparablePath separable_path(const SeparableLaunch& a) {
  return Library::path(a);
}

void separable_band_async(const SeparableLaunch& a, cudaStream_t stream) {
  Library::band_async(a, stream);
}

}  // namespace ooc::cuda
