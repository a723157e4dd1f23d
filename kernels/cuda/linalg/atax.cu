// CUDA helper kernels of the matrix products (see atax.cuh): grid-stride element-wise loops.
#include <algorithm>

#include "atax.cuh"
#include "kernels/cuda/check.cuh"

namespace ooc::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  return static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535));
}

template <class From, class To>
__global__ void convert_kernel(const std::byte* src, std::size_t src_stride, To* dst,
                               std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const From* s = reinterpret_cast<const From*>(src + static_cast<std::size_t>(r) * src_stride);
    To* d = dst + static_cast<std::size_t>(r) * static_cast<std::size_t>(cols);
    for (std::int64_t c = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; c < cols;
         c += std::int64_t{gridDim.x} * blockDim.x)
      d[c] = static_cast<To>(s[c]);
  }
}

__global__ void add_kernel(double* dst, const double* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    dst[i] += src[i];
}

__global__ void widen_kernel(const float* src, double* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

void convert_rows_async(const std::byte* src, std::size_t src_stride, SampleType from,
                        std::byte* dst, SampleType to, std::int64_t rows, std::int64_t cols,
                        cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid(
      static_cast<unsigned>(std::min<std::int64_t>((cols + kThreads - 1) / kThreads, 64)),
      static_cast<unsigned>(std::min<std::int64_t>(rows, 1024)));
  if (from == SampleType::f32 && to == SampleType::f64)
    convert_kernel<float, double><<<grid, kThreads, 0, stream>>>(
        src, src_stride, reinterpret_cast<double*>(dst), rows, cols);
  else
    convert_kernel<double, float>
        <<<grid, kThreads, 0, stream>>>(src, src_stride, reinterpret_cast<float*>(dst), rows, cols);
  OOC_KERNEL_TRY(cudaGetLastError());
}

void add_async(double* dst, const double* src, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, src, n);
  OOC_KERNEL_TRY(cudaGetLastError());
}

void widen_async(const float* src, double* dst, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  widen_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
