// CUDA kernels of histogram equalization. u8: each block counts into a private histogram in
// shared memory (256 bins per channel, 32-bit) and adds it to the band's counts once at the end,
// so global atomics are few. u16: 65536 bins per channel do not fit in shared memory with room to
// spare, so threads add straight into the band's u64 counts in global memory (L2 atomics; spread
// values rarely collide, a constant image serializes but stays correct). The mapping reads the
// table through the read-only cache.
#include "equalize.cuh"
#include "kernels/cuda/check.cuh"

namespace ooc::cuda {
namespace {

using P = EqualizePolicy;

__global__ void histogram_u8(const std::byte* in, std::size_t stride, std::int64_t rows,
                             std::int64_t n, int C, unsigned long long* counts) {
  extern __shared__ unsigned int sh[];
  for (int i = threadIdx.x; i < 256 * C; i += blockDim.x) sh[i] = 0;
  __syncthreads();
  const std::int64_t total = rows * n;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t y = k / n, i = k - y * n;
    const int c = static_cast<int>(i % C);
    const unsigned v = __ldg(reinterpret_cast<const unsigned char*>(in + y * stride) + i);
    atomicAdd(&sh[c * 256 + v], 1u);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 256 * C; i += blockDim.x)
    if (sh[i] != 0) atomicAdd(&counts[i], static_cast<unsigned long long>(sh[i]));
}

__global__ void histogram_u16(const std::byte* in, std::size_t stride, std::int64_t rows,
                              std::int64_t n, int C, unsigned long long* counts) {
  const std::int64_t total = rows * n;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t y = k / n, i = k - y * n;
    const int c = static_cast<int>(i % C);
    const unsigned v = __ldg(reinterpret_cast<const unsigned short*>(in + y * stride) + i);
    atomicAdd(&counts[static_cast<std::int64_t>(c) * 65536 + v], 1ull);
  }
}

template <class T>
__global__ void lut_kernel(const std::byte* in, std::size_t in_stride, std::byte* out,
                           std::size_t out_stride, std::int64_t rows, std::int64_t n, int C,
                           int bins, const std::uint16_t* lut) {
  const std::int64_t total = rows * n;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t y = k / n, i = k - y * n;
    const int c = static_cast<int>(i % C);
    const unsigned v = __ldg(reinterpret_cast<const T*>(in + y * in_stride) + i);
    reinterpret_cast<T*>(out + y * out_stride)[i] =
        static_cast<T>(__ldg(lut + static_cast<std::int64_t>(c) * bins + v));
  }
}

unsigned blocks_for(std::int64_t total) {
  const std::int64_t b = (total + P::kThreads - 1) / P::kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > P::kMaxBlocks ? P::kMaxBlocks : b));
}

}  // namespace

void histogram_async(const std::byte* in, std::size_t stride, std::int64_t rows, std::int64_t width,
                     int channels, SampleType type, std::uint64_t* counts, cudaStream_t s) {
  const std::int64_t n = width * channels;
  auto* c = reinterpret_cast<unsigned long long*>(counts);
  if (type == SampleType::u8) {
    histogram_u8<<<blocks_for(rows * n), P::kThreads, 256 * channels * sizeof(unsigned), s>>>(
        in, stride, rows, n, channels, c);
  } else {
    histogram_u16<<<blocks_for(rows * n), P::kThreads, 0, s>>>(in, stride, rows, n, channels, c);
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

void apply_lut_async(const std::byte* in, std::size_t in_stride, std::byte* out,
                     std::size_t out_stride, std::int64_t rows, std::int64_t width, int channels,
                     SampleType type, const std::uint16_t* lut, cudaStream_t s) {
  const std::int64_t n = width * channels;
  if (type == SampleType::u8) {
    lut_kernel<std::uint8_t><<<blocks_for(rows * n), P::kThreads, 0, s>>>(
        in, in_stride, out, out_stride, rows, n, channels, 256, lut);
  } else {
    lut_kernel<std::uint16_t><<<blocks_for(rows * n), P::kThreads, 0, s>>>(
        in, in_stride, out, out_stride, rows, n, channels, 65536, lut);
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
