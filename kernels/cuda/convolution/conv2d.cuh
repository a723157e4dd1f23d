// CUDA kernels of the 2-D convolution: the launch for one band already in device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

struct Conv2dLaunch {
  const void* in = nullptr;   // out_rows + 2 ry rows of the input type
  std::size_t in_stride = 0;  // bytes
  void* out = nullptr;        // out_rows rows of the output type
  std::size_t out_stride = 0;
  std::int64_t width = 0;
  int channels = 1;
  SampleType in_type = SampleType::f32, out_type = SampleType::f32;
  std::int64_t out_rows = 0;
  std::int64_t rx = 0, ry = 0;
  const void* taps =
      nullptr;  // device, accumulator type, (2 ry + 1) x (2 rx + 1), correlation order
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::int64_t first_row = 0;     // image row of input row 0
  std::int64_t image_height = 0;  // rows outside it are the constant in constant mode
  bool f64 = false;
};

void conv2d_band_async(const Conv2dLaunch& args, cudaStream_t stream);

// Launch constants of the 2-D kernels, in one place (CUB's policy style).
struct Conv2dPolicy {
  static constexpr int kThreadsX = 32;      // output pixels across per block
  static constexpr int kThreadsY = 8;       // threads down per block
  static constexpr int kRowsPerThread = 4;  // output rows per thread: a tile of 32 x 32 outputs
  static constexpr std::size_t kMaxShared = 48 * 1024;  // larger windows read global memory
};

}  // namespace ooc::cuda
