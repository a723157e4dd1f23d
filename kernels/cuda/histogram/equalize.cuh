// CUDA kernels of histogram equalization: a band's histogram, and the lookup-table mapping.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/image.hpp"

namespace ooc::cuda {

// Adds the counts of `rows` rows (width x channels samples of u8 or u16, `stride` bytes apart)
// to `counts` (u64, channel-major, bins per channel), which the caller zeroed.
void histogram_async(const std::byte* in, std::size_t stride, std::int64_t rows, std::int64_t width,
                     int channels, SampleType type, std::uint64_t* counts, cudaStream_t stream);

// out = lut[channel * bins + in], same type as in.
void apply_lut_async(const std::byte* in, std::size_t in_stride, std::byte* out,
                     std::size_t out_stride, std::int64_t rows, std::int64_t width, int channels,
                     SampleType type, const std::uint16_t* lut, cudaStream_t stream);

// Launch constants (CUB's policy style).
struct EqualizePolicy {
  static constexpr int kThreads = 256;
  static constexpr int kMaxBlocks = 1024;  // per band: each privatizes a u8 histogram
};

}  // namespace ooc::cuda
