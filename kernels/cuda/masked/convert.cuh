// The conversion to another sample type under nodata on the GPU (issue 48): the rule of
// kernels/cpu/masked/convert.hpp's convert_row, one thread a sample: holes (NaN, or the nodata
// value where the input type holds it) become the output type's nodata value, valid samples are
// rounded half to even and saturated as the unmasked convert does and moved one step off that
// value where they land on it. The same bytes as the CPU.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/image.hpp"

namespace ooc::cuda {

// rows x samples of type `in` (src_stride bytes apart) into `out` (dst_stride apart).
void masked_convert_async(const std::byte* src, std::size_t src_stride, SampleType in,
                          std::byte* dst, std::size_t dst_stride, SampleType out, std::int64_t rows,
                          std::int64_t samples, double nodata, cudaStream_t stream);

// The compound stages' last step (masked_combine.cpp): out (rows x samples of type `out`, already
// the combination) becomes the output type's nodata value wherever the band's own input sample
// (type `in`, src_stride apart) is a hole, and valid values that landed on it move off it.
void keep_holes_async(const std::byte* src, std::size_t src_stride, SampleType in, std::byte* dst,
                      std::size_t dst_stride, SampleType out, std::int64_t rows,
                      std::int64_t samples, double nodata, cudaStream_t stream);

}  // namespace ooc::cuda
