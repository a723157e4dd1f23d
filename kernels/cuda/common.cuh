// What the CUDA kernels share: the border rule on indices, loading samples as the accumulator
// type, and storing them as the output type (rounded to nearest, ties to even, and saturated, as
// on the CPU).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

__device__ __forceinline__ std::int64_t map_index(std::int64_t i, std::int64_t n, BorderMode m) {
  return map_border(i, n, m);  // constexpr host/device function from border.hpp
}

template <class T, class Acc>
__device__ __forceinline__ Acc load_as(const T* p) {
  return static_cast<Acc>(__ldg(p));
}

// NaN becomes 0 in integer outputs (there is no integer NaN).
template <class U, class Acc>
__device__ __forceinline__ U store_as(Acc v) {
  if constexpr (std::is_floating_point_v<U>) {
    return static_cast<U>(v);
  } else {
    double d = static_cast<double>(v);
    if (d != d) d = 0;
    d = fmin(fmax(d, static_cast<double>(std::numeric_limits<U>::lowest())),
             static_cast<double>(std::numeric_limits<U>::max()));
    return static_cast<U>(rint(d));
  }
}

// Stores v as the output type picked at run time (a uniform branch), not by a template: 7 x 7 x 2
// instances of each kernel using it would cost minutes of nvcc for nothing measurable.
template <class Acc>
__device__ __forceinline__ void store_any(SampleType t, void* row, std::int64_t i, Acc v) {
  switch (t) {
    case SampleType::u8:
      static_cast<std::uint8_t*>(row)[i] = store_as<std::uint8_t, Acc>(v);
      return;
    case SampleType::u16:
      static_cast<std::uint16_t*>(row)[i] = store_as<std::uint16_t, Acc>(v);
      return;
    case SampleType::i16:
      static_cast<std::int16_t*>(row)[i] = store_as<std::int16_t, Acc>(v);
      return;
    case SampleType::u32:
      static_cast<std::uint32_t*>(row)[i] = store_as<std::uint32_t, Acc>(v);
      return;
    case SampleType::i32:
      static_cast<std::int32_t*>(row)[i] = store_as<std::int32_t, Acc>(v);
      return;
    case SampleType::f32:
      static_cast<float*>(row)[i] = store_as<float, Acc>(v);
      return;
    case SampleType::f64:
      static_cast<double*>(row)[i] = store_as<double, Acc>(v);
      return;
    case SampleType::u64:  // the labels' type: no filter stores it (dispatch_type refuses it)
      return;
  }
}

// A grid's y extent: at most 65535, the kernels loop over the rest.
inline unsigned grid_rows(std::int64_t rows) {
  return static_cast<unsigned>(rows < 65535 ? (rows > 0 ? rows : 1) : 65535);
}

}  // namespace ooc::cuda
