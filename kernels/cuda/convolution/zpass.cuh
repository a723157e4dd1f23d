// CUDA z pass of a volume's filters (kernels/cpu/convolution/zpass.hpp on the GPU): each output
// sample from the same sample of 2R + 1 planes already in device memory, as a weighted sum in
// tap order (FMA from a plain first product, as the CPU's vector build) or a minimum or maximum.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/image.hpp"

namespace ooc::cuda {

struct ZPassLaunch {
  // The planes' input rows, by value in the launch's parameters: more would not fit there.
  static constexpr int kMaxPlanes = 129;
  int kind = 0;  // kernels::ZPassKind: 0 sum, 1 minimum, 2 maximum
  int planes = 0;
  const std::byte* in[kMaxPlanes] = {};  // row 0 of each plane; null: a plane of the constant
  double taps[kMaxPlanes] = {};          // sum: the weight of each plane
  std::size_t in_stride = 0;
  SampleType in_type = SampleType::f32;
  SampleType out_type = SampleType::f32;  // sum: f32 or f64; minimum, maximum: in_type
  std::int64_t samples = 0;               // of a row (width x channels)
  std::int64_t rows = 0;
  double border_value = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
};

void zpass_async(const ZPassLaunch& l, cudaStream_t stream);

}  // namespace ooc::cuda
