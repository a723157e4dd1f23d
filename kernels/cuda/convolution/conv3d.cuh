// CUDA side of a volume's convolution with a 3-D kernel (src/ops/convolution/conv3d.cpp): the
// 2-D convolutions of the kernel's planes run as conv2d.cu's; this adds each into their sum.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ooc::cuda {

// sum[y][i] += part[y][i] (f64: doubles, else floats), one rounding each, as the CPU's loop.
void accumulate_async(std::byte* sum, const std::byte* part, std::size_t stride, std::int64_t rows,
                      std::int64_t row_samples, bool f64, cudaStream_t stream);

}  // namespace ooc::cuda
