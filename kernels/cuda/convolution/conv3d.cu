// The sum of a 3-D kernel's plane convolutions (conv3d.cuh): one thread per sample, an explicit
// rounding per addition (the CPU adds the planes' results one after the other in the same type).
#include <cuda_runtime.h>

#include "conv3d.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"

namespace ooc::cuda {
namespace {

__device__ __forceinline__ float add_rn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ double add_rn(double a, double b) {
  return __dadd_rn(a, b);
}

template <class Acc>
__global__ void accumulate_kernel(std::byte* sum, const std::byte* part, std::size_t stride,
                                  std::int64_t rows, std::int64_t n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    Acc* s = reinterpret_cast<Acc*>(sum + static_cast<std::size_t>(y) * stride);
    const Acc* p = reinterpret_cast<const Acc*>(part + static_cast<std::size_t>(y) * stride);
    s[i] = add_rn(s[i], p[i]);
  }
}

}  // namespace

void accumulate_async(std::byte* sum, const std::byte* part, std::size_t stride, std::int64_t rows,
                      std::int64_t row_samples, bool f64, cudaStream_t stream) {
  if (rows <= 0 || row_samples <= 0) return;
  constexpr int kThreads = 256;
  const dim3 grid(static_cast<unsigned>((row_samples + kThreads - 1) / kThreads), grid_rows(rows));
  if (f64)
    accumulate_kernel<double><<<grid, kThreads, 0, stream>>>(sum, part, stride, rows, row_samples);
  else
    accumulate_kernel<float><<<grid, kThreads, 0, stream>>>(sum, part, stride, rows, row_samples);
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
