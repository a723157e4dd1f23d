// The hole test of the masked CUDA kernels (normalized.cu, rank.cu), the CPU's
// (kernels/cpu/masked): NaN, and the nodata value where the sample type holds it exactly.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "kernels/cpu/masked/convert.hpp"

namespace ooc::cuda {

template <class T>
struct Holes {
  bool has = false;
  T nd{};
  __device__ bool operator()(T v) const {
    if constexpr (std::is_floating_point_v<T>)
      return (v != v) | (has & (v == nd));
    else
      return has & (v == nd);
  }
};

template <class T>
Holes<T> holes_of(double nodata) {
  Holes<T> h;
  if (!std::isnan(nodata) && kernels::masked::holds<T>(nodata)) {
    h.has = true;
    h.nd = static_cast<T>(nodata);
  }
  return h;
}

}  // namespace ooc::cuda
