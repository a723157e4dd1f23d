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

// Device scratch of a band of rows x width samples (rows x width rounded up to 32 < 2^31).
std::size_t label_band_scratch(std::int64_t rows, std::int64_t width);

// Labels `rows` rows of `width` samples of `type` at `in` (rows `stride` bytes apart), or where
// `bits`, of one bit a sample (CudaBand::in_bits; `type` unused), 8-connected in the plane where
// `diagonal`, else 4. Returns the labels in `scratch` (rows x width u32, dense,
// row-major): each foreground sample's component number, 1 to the count, in raster order of the
// components' first samples; 0 for the background. Only the first row and the last where
// `edge_rows` (the rest are left unwritten). Writes the count to *count (device memory). Enqueued
// on `stream`.
const std::uint32_t* label_band_async(const std::byte* in, std::size_t stride, std::int64_t rows,
                                      std::int64_t width, SampleType type, bool bits, bool diagonal,
                                      std::byte* scratch, std::size_t scratch_bytes,
                                      std::uint64_t* count, cudaStream_t stream,
                                      bool edge_rows = false);

// Labels the band as label_band_async does and writes table[number - 1] of each foreground sample
// (0 for the background) to `out`'s rows, `out_stride` bytes apart: u64 entries and samples where
// `wide`, else u32. No numbers are written between.
void label_band_through_async(const std::byte* in, std::size_t stride, std::int64_t rows,
                              std::int64_t width, SampleType type, bool bits, bool diagonal,
                              std::byte* scratch, std::size_t scratch_bytes, const void* table,
                              bool wide, std::byte* out, std::size_t out_stride,
                              cudaStream_t stream);

}  // namespace ooc::cuda
