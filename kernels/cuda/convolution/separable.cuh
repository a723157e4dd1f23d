// CUDA kernels of the separable convolution: launches for one band already in device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

struct SeparableLaunch {
  const void* in = nullptr;    // in_rows rows of the input type
  std::size_t in_stride = 0;   // bytes
  void* mid = nullptr;         // in_rows rows of the accumulator type (row-pass result)
  std::size_t mid_stride = 0;  // bytes
  void* out = nullptr;         // out_rows rows of the output type
  std::size_t out_stride = 0;  // bytes
  std::int64_t width = 0;
  int channels = 1;
  SampleType in_type = SampleType::f32;
  SampleType out_type = SampleType::f32;
  std::int64_t out_rows = 0;  // in_rows = out_rows + 2 * ry
  std::int64_t rx = 0, ry = 0;
  const void* row_taps = nullptr;  // device, accumulator type, correlation order
  const void* col_taps = nullptr;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::int64_t first_row = 0;     // image row of input row 0 (y0 - ry)
  std::int64_t image_height = 0;  // rows outside [0, height) are constant rows in constant mode
  bool f64 = false;               // accumulate in double
  // Host copies of the same taps (accumulator type, 2 rx + 1 and 2 ry + 1 values). The kernels
  // specialized on the radius take them by value, in the launch's parameter constant bank; without
  // them (null) only the generic kernels run.
  const void* row_taps_host = nullptr;
  const void* col_taps_host = nullptr;
  bool generic = false;  // force the generic kernels (for comparison; same results)
};

// Which kernels separable_band_async would run for `args` on the current device.
enum class SeparablePath {
  generic,   // generic row pass + generic column pass
  two_pass,  // row and column passes apart, at least one of them specialized on its radius
  fused,     // one kernel: row pass into shared memory, then the column pass
};
SeparablePath separable_path(const SeparableLaunch& args);

// Enqueues the row pass and the column pass on `stream`; returns at once.
void separable_band_async(const SeparableLaunch& args, cudaStream_t stream);

// Largest row radius the shared-memory row kernel takes; larger radii use the direct kernel.
inline constexpr std::int64_t kRowTileMaxRadius = 64;

}  // namespace ooc::cuda
