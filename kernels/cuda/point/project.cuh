// CUDA projections of a volume along z (src/ops/point/project.cpp on the GPU): each output sample
// the maximum, minimum, sum or mean of its column of planes already in device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/image.hpp"

namespace ooc::cuda {

struct ProjectLaunch {
  int kind = 0;  // 0 max, 1 min, 2 sum, 3 mean (ProjectKind's order)
  // Row 0 of plane k is in + k * plane_step; rows in_stride apart.
  const std::byte* in = nullptr;
  std::size_t plane_step = 0;
  std::size_t in_stride = 0;
  std::int64_t planes = 0;
  SampleType in_type = SampleType::f32;
  SampleType out_type = SampleType::f32;  // max, min: in_type; sum, mean: f32 or f64
  std::int64_t samples = 0;               // of a row (width x channels)
  std::int64_t rows = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
};

// As the CPU's: extremes pick in plane order (a NaN wins, -0 below +0); sums add the planes in
// order in double from 0, a mean multiplies by 1 / planes (as a double), then rounds to the output.
void project_async(const ProjectLaunch& l, cudaStream_t stream);

}  // namespace ooc::cuda
