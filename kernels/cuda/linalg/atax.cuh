// CUDA helper kernels of the matrix products; the products themselves are cuBLAS calls
// (src/ops/atax_cuda.cpp). Element-wise, so their results never depend on the launch shape.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/image.hpp"

namespace ooc::cuda {

// dst (rows x cols, dense) = src (rows x cols, `src_stride` bytes apart) converted from `from`
// to `to` (f32 or f64).
void convert_rows_async(const std::byte* src, std::size_t src_stride, SampleType from,
                        std::byte* dst, SampleType to, std::int64_t rows, std::int64_t cols,
                        cudaStream_t stream);

// dst[i] += src[i], i < n.
void add_async(double* dst, const double* src, std::size_t n, cudaStream_t stream);

// dst[i] = double(src[i]), i < n.
void widen_async(const float* src, double* dst, std::size_t n, cudaStream_t stream);

}  // namespace ooc::cuda
