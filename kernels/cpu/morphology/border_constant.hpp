// scipy's cval (a double) in the image's sample type, as every minimum/maximum and rank path
// fills the constant border with it, on the CPU (src/ops/morphology/) and in the CUDA kernels
// (kernels/cuda/morphology/rank.cu, rank_histogram.hpp, minmax_van_herk.hpp): one definition, so
// that the GPU's border is the CPU's. Floats converted; integers truncated toward zero and
// saturated to the type's range (a minimum or maximum against it then matches scipy's comparison in
// double), NaN as 0.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#if defined(__CUDACC__)
#define OOC_BORDER_CONSTANT_HD __host__ __device__
#else
#define OOC_BORDER_CONSTANT_HD
#endif

namespace ooc::kernels {

template <class T>
OOC_BORDER_CONSTANT_HD inline T constant_of(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (!(v == v)) return T(0);
    v = trunc(v);
    v = fmin(fmax(v, double(std::numeric_limits<T>::lowest())),
             double(std::numeric_limits<T>::max()));
    return static_cast<T>(v);
  }
}

}  // namespace ooc::kernels
