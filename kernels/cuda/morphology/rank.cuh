// CUDA kernels of the rank filters (median, percentile, rank). Small windows (rank_band_async):
// each thread gathers its window's samples from a shared-memory tile into registers and selects
// the rank there. Rectangles of u8, u16 and i16 of any size up to 65535 samples
// (rank_histogram_band_async): sliding histograms (rank_histogram.hpp). Selection only moves
// samples, so the result is the CPU's exactly (kernels/cpu/morphology/); a window holding
// a NaN gives NaN, as on the CPU.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

struct RankPolicy {
  static constexpr int kMaxSamples = 49;         // the window's samples a thread keeps in registers
  static constexpr int kMaxSide = 15;            // the window's rows and columns (the tile's halo)
  static constexpr int kTileX = 32, kTileY = 8;  // outputs of a block (its threads)
};
// The radix select's tile: kernels/cpu/morphology/rank_keys.hpp (kRadixTileX/Y, radix_tile_bytes).

struct RankLaunch {
  const std::byte* in = nullptr;  // input row 0 = the window's first row for output row 0
  std::size_t in_stride = 0;
  std::int64_t first_row = 0;  // image row of input row 0 (constant-border rows are unset)
  std::int64_t image_height = 0;
  std::int64_t width = 0;
  int channels = 1;
  SampleType type = SampleType::f32;
  int rows = 1, cols = 1;  // the window's rectangle; column 0 is x - left
  int left = 0;
  int count = 1;  // the window's samples (the footprint's ones)
  int rank = 0;   // 0 .. count - 1
  signed char dy[RankPolicy::kMaxSamples] = {}, dx[RankPolicy::kMaxSamples] = {};
  // rank_histogram_band_async: a footprint's table (rank_hist::FootprintTable's bytes, in device
  // memory) of runs column runs and spans row spans, or none for the whole rectangle.
  const void* footprint = nullptr;
  int footprint_runs = 0, footprint_spans = 0;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  std::int64_t out_rows = 0;
};
void rank_band_async(const RankLaunch& l, cudaStream_t stream);

// u32, i32, f32 and f64 windows of any size whose tile fits (kernels::radix_tile_bytes): the
// window's row runs from l.footprint's table (its row spans; a rectangle's table has one a row),
// each output by a radix select over its window's keys in shared memory
// (kernels/cpu/morphology/rank_keys.hpp).
void rank_radix_band_async(const RankLaunch& l, cudaStream_t stream);

// The rectangle rows x cols of l, or the footprint of its column runs, by sliding histograms (dy
// and dx unused), every count in shared memory (no device scratch); count: the window's samples.
void rank_histogram_band_async(const RankLaunch& l, cudaStream_t stream);

}  // namespace ooc::cuda
