// CUDA labelling of one band of rows (the label stage's per-band work on the GPU,
// src/ops/labels/label_cuda.cpp): connected components of the non-zero samples in the plane, each
// numbered from 1 in raster order of its first sample within the band, the numbers the CPU's
// kernels/cpu/labels/runs.hpp gives the same band, so that the host's merge of the bands
// (label.cpp) is the same whichever backend labelled them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/image.hpp"

namespace ooc::cuda {

// Launch constants: a block labels a tile of kTileRows x kTileCols samples in shared memory.
struct LabelPolicy {
  static constexpr int kTileCols = 32;
  static constexpr int kTileRows = 16;
  static constexpr int kThreads = 256;  // the flat kernels' blocks
};

// Which samples step 3 numbers: every one, the band's first and last rows only (the rest keep
// their roots' band indices), or none (roots, with their ranks for relabel_roots_async).
enum class LabelNumbers { all, edge_rows, none };

// Device scratch of a band of `samples` samples (rows x width < 2^31): the labels, their numbers
// and the prefix sum's own scratch.
std::size_t label_band_scratch(std::int64_t samples);

// Labels `rows` rows of `width` samples of `type` at `in` (rows `stride` bytes apart), 8-connected
// in the plane where `diagonal`, else 4. Returns the labels in `scratch` (rows x width u32, dense,
// row-major): each foreground sample's component number, 1 to the count, in raster order of the
// components' first samples; 0 for the background. Writes the count to *count (device memory).
// Enqueued on `stream`. `numbers` other than all: see LabelNumbers (none writes no count); the
// roots' ranks (the roots before each, by band index) go to *ranks_out where given.
const std::uint32_t* label_band_async(const std::byte* in, std::size_t stride, std::int64_t rows,
                                      std::int64_t width, SampleType type, bool diagonal,
                                      std::byte* scratch, std::size_t scratch_bytes,
                                      std::uint64_t* count, cudaStream_t stream,
                                      LabelNumbers numbers = LabelNumbers::all,
                                      const std::uint32_t** ranks_out = nullptr);

// out = table[ranks[roots]], 0 where roots are the background: label_band_async's roots
// (LabelNumbers::none) straight to the band's final labels.
void relabel_roots_async(const std::uint32_t* roots, const std::uint32_t* ranks, std::int64_t rows,
                         std::int64_t width, const void* table, bool wide, std::byte* out,
                         std::size_t out_stride, cudaStream_t stream);

}  // namespace ooc::cuda
