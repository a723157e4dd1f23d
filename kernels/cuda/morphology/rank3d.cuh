// CUDA rank filters of a volume's D x H x W box or 3-D footprint (median, percentile, rank, and
// the footprints' minimum and maximum): one thread an output sample, reading its window from the
// planes of a band in device memory. Boxes of up to kMaxSamples samples: gathered into registers
// and selected by counting. Larger boxes (up to the CPU's 1024 samples) and every footprint: a
// radix select over the window's order-preserving keys (one pass a key bit: 8 for u8, 16 for
// u16/i16, 32 for 4-byte types, 64 for f64; the window re-read through the caches each pass), or
// one pass for the smallest or largest. Selection only moves samples: the CPU's bytes
// (kernels/cpu/morphology/rank3d.hpp), a NaN in the window giving NaN and -0 below +0.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

// A footprint's run of ones: columns [col, col + len) of its row `row` in plane `plane`.
struct Rank3dRun {
  std::int32_t plane = 0, row = 0, col = 0, len = 0;
};

struct Rank3dLaunch {
  static constexpr int kMaxSamples = 64;  // a box's samples in one thread's registers
  static constexpr int kMaxPlanes = 256;  // the plane addresses a launch carries
  int planes = 1, rows = 1, cols = 1;     // the box (or the footprint's): planes x rows x columns
  int top = 0, left = 0;                  // the box's rows above and columns left of its sample
  int rank = 0;                           // 0 .. count - 1
  int count = 0;                          // the window's samples: the box's, or the ones'
  const Rank3dRun* runs = nullptr;        // a footprint's runs in device memory; null: the box
  int run_count = 0;
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
