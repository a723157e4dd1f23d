// CUDA rank filters of a volume's D x H x W box (median, percentile, rank on a volume): each
// thread gathers its window from the 2R + 1 planes of a band in device memory into registers and
// selects the rank by counting. Selection only moves samples: the CPU's bytes
// (kernels/cpu/morphology/rank3d.hpp), a NaN in the window giving NaN and -0 below +0.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

struct Rank3dLaunch {
  static constexpr int kMaxSamples = 64;  // a window's samples in one thread's registers
  static constexpr int kMaxPlanes = 64;
  int planes = 1, rows = 1, cols = 1;  // the box: planes x rows x columns
  int top = 0, left = 0;               // the box's rows above and columns left of its sample
  int rank = 0;                        // 0 .. planes x rows x cols - 1
  // The band's first row (band.y0) in each of the box's planes, first first; null: a plane of
  // the constant border. Rows in_stride apart, the band's halo rows above and below it.
  const std::byte* in[kMaxPlanes] = {};
  std::size_t in_stride = 0;
  std::int64_t first_row = 0;  // image row of the band's first row
  std::int64_t image_height = 0;
  std::int64_t width = 0;
  int channels = 1;
  SampleType type = SampleType::f32;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  std::int64_t out_rows = 0;
};

void rank3d_band_async(const Rank3dLaunch& l, cudaStream_t stream);

}  // namespace ooc::cuda
