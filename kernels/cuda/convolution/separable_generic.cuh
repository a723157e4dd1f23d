// The separable convolution's generic CUDA kernels: any radius, float or double accumulation, the
// reference the kernels specialized on the radius (separable_specialized.cuh) give the bits of.
//
// Row pass: a shared-memory tile of a row with its horizontal halo (border rule by index mapping),
// one output sample per thread per step. Column pass: each thread walks down one column, keeping
// kRun outputs in registers, so each row-pass value is read once from memory instead of 2 ry + 1
// times.
//
// Bit-identical by construction: every output sample sees the same sequence of roundings in every
// kernel of the family. Row pass: acc = w[0] * v[0]; acc = fma(w[k], v[k], acc) for k = 1..2 rx,
// values loaded with load_as and out-of-row samples mapped by the border rule; rows outside the
// image in constant mode are rows of cval. Column pass: the same over the intermediate, then
// store_as. All in explicit fma() calls and one plain product, which nvcc neither contracts nor
// reorders. Any width, band heights from 1 row, 64-bit indexing.
//
// P: a GenericPolicy (separable_policy.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/common.cuh"
#include "ooc/border.hpp"

namespace ooc::cuda::separable {

// Row pass, fast path: block (tile, row). Shared memory holds the tile plus rx pixels each side.
template <class P, class T, class Acc>
__global__ void row_pass_tiled(const std::byte* __restrict__ in, std::size_t in_stride,
                               std::byte* __restrict__ mid, std::size_t mid_stride,
                               std::int64_t width, int C, int rx, const Acc* __restrict__ w,
                               BorderMode border, Acc cval, std::int64_t rows,
                               std::int64_t first_row, std::int64_t height) {
  extern __shared__ unsigned char smem_raw[];
  Acc* sh = reinterpret_cast<Acc*>(smem_raw);
  const std::int64_t n = width * C;
  const int tile = (P::kRowTile / C) * C;  // whole pixels: a tap offset of k * C keeps the channel
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.x) * tile;
  const int halo = rx * C;
  const int span = tile + 2 * halo;
  const bool constant_rows = border == BorderMode::constant;
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    Acc* dst = reinterpret_cast<Acc*>(mid + y * mid_stride);
    const std::int64_t image_row = first_row + y;
    if (constant_rows && (image_row < 0 || image_row >= height)) {
      for (int j = threadIdx.x; j < tile && i0 + j < n; j += blockDim.x) dst[i0 + j] = cval;
      continue;
    }
    const T* src = reinterpret_cast<const T*>(in + y * in_stride);
    __syncthreads();  // the previous row's tile is no longer read
    for (int j = threadIdx.x; j < span; j += blockDim.x) {
      const std::int64_t f = i0 - halo + j;  // flat sample index, may be outside the row
      const std::int64_t x = f >= 0 ? f / C : -((-f + C - 1) / C);
      const int c = static_cast<int>(f - x * C);
      Acc v;
      if (x >= 0 && x < width) {
        v = load_as<T, Acc>(src + f);
      } else {
        const std::int64_t xm = map_index(x, width, border);
        v = xm < 0 ? cval : load_as<T, Acc>(src + xm * C + c);
      }
      sh[j] = v;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < tile && i0 + j < n; j += blockDim.x) {
      Acc acc = w[0] * sh[j];
      for (int k = 1; k <= 2 * rx; ++k) acc = fma(w[k], sh[j + k * C], acc);
      dst[i0 + j] = acc;
    }
  }
}

// Row pass for radii too large for a shared tile: each thread reads its taps from global memory.
template <class T, class Acc>
__global__ void row_pass_direct(const std::byte* __restrict__ in, std::size_t in_stride,
                                std::byte* __restrict__ mid, std::size_t mid_stride,
                                std::int64_t width, int C, std::int64_t rx,
                                const Acc* __restrict__ w, BorderMode border, Acc cval,
                                std::int64_t rows, std::int64_t first_row, std::int64_t height) {
  const std::int64_t n = width * C;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const std::int64_t x = j / C;
  const int c = static_cast<int>(j - x * C);
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    Acc* dst = reinterpret_cast<Acc*>(mid + y * mid_stride);
    const std::int64_t image_row = first_row + y;
    if (border == BorderMode::constant && (image_row < 0 || image_row >= height)) {
      dst[j] = cval;
      continue;
    }
    const T* src = reinterpret_cast<const T*>(in + y * in_stride);
    Acc acc = 0;
    for (std::int64_t k = 0; k <= 2 * rx; ++k) {
      const std::int64_t xm = map_index(x + k - rx, width, border);
      const Acc v = xm < 0 ? cval : load_as<T, Acc>(src + xm * C + c);
      acc = k == 0 ? w[0] * v : fma(w[k], v, acc);
    }
    dst[j] = acc;
  }
}

// Column pass: thread (column j, run of kRun output rows). Input row y0 + t feeds output rows
// y0 + o for taps k = t - o, so taps are added in ascending order for every output, as on the CPU.
template <class P, class U, class Acc>
__global__ void column_pass(const std::byte* __restrict__ mid, std::size_t mid_stride,
                            std::byte* __restrict__ out, std::size_t out_stride, std::int64_t n,
                            std::int64_t out_rows, int ry, const Acc* __restrict__ w) {
  constexpr int kRun = P::kRun;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int taps = 2 * ry + 1;
  for (std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * kRun; y0 < out_rows;
       y0 += static_cast<std::int64_t>(gridDim.y) * kRun) {
    const int run = static_cast<int>(out_rows - y0 < kRun ? out_rows - y0 : kRun);
    Acc acc[kRun];
#pragma unroll
    for (int o = 0; o < kRun; ++o) acc[o] = 0;
    for (int t = 0; t < run + taps - 1; ++t) {
      const Acc v = __ldg(reinterpret_cast<const Acc*>(mid + (y0 + t) * mid_stride) + j);
#pragma unroll
      for (int o = 0; o < kRun; ++o) {
        const int k = t - o;
        if (k >= 0 && k < taps) acc[o] = k == 0 ? w[0] * v : fma(w[k], v, acc[o]);
      }
    }
#pragma unroll
    for (int o = 0; o < kRun; ++o)
      if (o < run) reinterpret_cast<U*>(out + (y0 + o) * out_stride)[j] = store_as<U, Acc>(acc[o]);
  }
}

}  // namespace ooc::cuda::separable
