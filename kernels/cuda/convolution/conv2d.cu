// CUDA kernels of the 2-D convolution. Tiled: a block stages its 32 x 32 outputs' window (the
// tile plus rx columns and ry rows each side, through the border rule, as the accumulator type)
// in shared memory, then each thread sums the K x L taps for 4 outputs down a column, taps in the
// same order as the CPU (i major, then j). Windows too large for shared memory read global
// memory directly. Any width, channels 1-4, 64-bit offsets.
#include <cuda_runtime.h>

#include "conv2d.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "ooc/detail/sample_type.hpp"

namespace ooc::cuda {
namespace {

using P = Conv2dPolicy;

// Input sample (pixel x, channel c) of band row r, with the border rule along x and, for the
// constant rule, along y.
template <class T, class Acc>
__device__ __forceinline__ Acc input_at(const std::byte* in, std::size_t stride, std::int64_t r,
                                        std::int64_t x, int c, std::int64_t width, int C,
                                        BorderMode border, Acc cval, std::int64_t first_row,
                                        std::int64_t height) {
  const std::int64_t image_row = first_row + r;
  if (border == BorderMode::constant && (image_row < 0 || image_row >= height)) return cval;
  const std::int64_t xm = map_index(x, width, border);
  if (xm < 0) return cval;
  return load_as<T, Acc>(reinterpret_cast<const T*>(in + r * stride) + xm * C + c);
}

template <class T, class Acc>
__global__ void conv2d_tiled(Conv2dLaunch a, Acc cval) {
  extern __shared__ unsigned char smem_raw[];
  Acc* sh = reinterpret_cast<Acc*>(smem_raw);
  const int C = a.channels;
  const int rx = static_cast<int>(a.rx), ry = static_cast<int>(a.ry);
  const int L = 2 * rx + 1, K = 2 * ry + 1;
  const int tile_h = P::kThreadsY * P::kRowsPerThread;
  const int span_x = P::kThreadsX + 2 * rx, span_y = tile_h + K - 1;
  const std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * P::kThreadsX;
  const std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * tile_h;
  const auto* in = static_cast<const std::byte*>(a.in);
  const Acc* w = static_cast<const Acc*>(a.taps);
  const int tid = threadIdx.y * P::kThreadsX + threadIdx.x;
  const int threads = P::kThreadsX * P::kThreadsY;
  for (int c = 0; c < C; ++c) {
    __syncthreads();  // the previous channel's window is no longer read
    for (int k = tid; k < span_x * span_y; k += threads) {
      const int sy = k / span_x, sx = k % span_x;
      const std::int64_t r = y0 + sy;  // band row (input rows start ry above the output)
      sh[k] = r < a.out_rows + 2 * a.ry
                  ? input_at<T, Acc>(in, a.in_stride, r, x0 - rx + sx, c, a.width, C, a.border,
                                     cval, a.first_row, a.image_height)
                  : Acc(0);
    }
    __syncthreads();
    const std::int64_t x = x0 + threadIdx.x;
    if (x >= a.width) continue;
    Acc acc[P::kRowsPerThread];
    for (int r = 0; r < P::kRowsPerThread; ++r) acc[r] = 0;
    const int ty = threadIdx.y * P::kRowsPerThread;
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < L; ++j) {
        const Acc wk = __ldg(w + i * L + j);
        const Acc* s = sh + (ty + i) * span_x + threadIdx.x + j;
        for (int r = 0; r < P::kRowsPerThread; ++r)
          acc[r] = (i == 0 && j == 0) ? wk * s[r * span_x] : fma(wk, s[r * span_x], acc[r]);
      }
    for (int r = 0; r < P::kRowsPerThread; ++r) {
      const std::int64_t y = y0 + ty + r;
      if (y < a.out_rows)
        store_any(a.out_type, static_cast<std::byte*>(a.out) + y * a.out_stride, x * C + c, acc[r]);
    }
  }
}

// Windows beyond shared memory: each thread reads its window from global memory (cached).
template <class T, class Acc>
__global__ void conv2d_direct(Conv2dLaunch a, Acc cval) {
  const std::int64_t n = a.width * a.channels;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int C = a.channels;
  const std::int64_t x = i / C;
  const int c = static_cast<int>(i - x * C);
  const std::int64_t L = 2 * a.rx + 1, K = 2 * a.ry + 1;
  const auto* in = static_cast<const std::byte*>(a.in);
  const Acc* w = static_cast<const Acc*>(a.taps);
  for (std::int64_t y = blockIdx.y; y < a.out_rows; y += gridDim.y) {
    Acc acc = 0;
    for (std::int64_t ki = 0; ki < K; ++ki)
      for (std::int64_t kj = 0; kj < L; ++kj) {
        const Acc v = input_at<T, Acc>(in, a.in_stride, y + ki, x + kj - a.rx, c, a.width, C,
                                       a.border, cval, a.first_row, a.image_height);
        const Acc wk = __ldg(w + ki * L + kj);
        acc = (ki == 0 && kj == 0) ? wk * v : fma(wk, v, acc);
      }
    store_any(a.out_type, static_cast<std::byte*>(a.out) + y * a.out_stride, i, acc);
  }
}

template <class T, class Acc>
void launch(const Conv2dLaunch& a, cudaStream_t s) {
  const Acc cval = static_cast<Acc>(a.border_value);
  const int tile_h = P::kThreadsY * P::kRowsPerThread;
  const std::size_t smem = static_cast<std::size_t>(P::kThreadsX + 2 * a.rx) *
                           static_cast<std::size_t>(tile_h + 2 * a.ry) * sizeof(Acc);
  const std::int64_t tiles_down = (a.out_rows + tile_h - 1) / tile_h;
  if (smem <= P::kMaxShared && tiles_down <= 65535) {
    const dim3 block(P::kThreadsX, P::kThreadsY);
    const dim3 grid(static_cast<unsigned>((a.width + P::kThreadsX - 1) / P::kThreadsX),
                    static_cast<unsigned>((a.out_rows + tile_h - 1) / tile_h));
    conv2d_tiled<T, Acc><<<grid, block, smem, s>>>(a, cval);
  } else {
    constexpr int kThreads = 128;
    const std::int64_t n = a.width * a.channels;
    const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads), grid_rows(a.out_rows));
    conv2d_direct<T, Acc><<<grid, kThreads, 0, s>>>(a, cval);
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace

void conv2d_band_async(const Conv2dLaunch& a, cudaStream_t stream) {
  dispatch_type(a.in_type, [&](auto t) {
    if (a.f64) {
      launch<decltype(t), double>(a, stream);
    } else {
      launch<decltype(t), float>(a, stream);
    }
  });
}

}  // namespace ooc::cuda
