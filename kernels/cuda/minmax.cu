// CUDA kernels of the minimum/maximum filters: a pass along x into the slot's scratch, then one
// along y; each output scans its window (kernels/cpu/minmax.hpp's pick, whose result does not
// depend on the order: the CPU's van Herk selects the same sample).
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "check.cuh"
#include "common.cuh"
#include "minmax.cuh"
#include "ooc/detail/sample_type.hpp"

namespace ooc::cuda {
namespace {

// As kernels/cpu/minmax.hpp's: a NaN anywhere in the window gives NaN.
template <bool Max, class T>
__device__ __forceinline__ T pick(T a, T b) {
  if constexpr (Max)
    return (b > a || b != b) ? b : a;
  else
    return (b < a || b != b) ? b : a;
}

template <class T>
__host__ __device__ T constant_of(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (!(v == v)) return T(0);
    v = trunc(v);
    v = fmin(fmax(v, double(std::numeric_limits<T>::lowest())),
             double(std::numeric_limits<T>::max()));
    return static_cast<T>(v);
  }
}

// mid row k, sample (q, c) = pick over columns [q - lx, q + rx] of input row k.
template <bool Max, class T>
__global__ void rows_kernel(MinMaxLaunch l, std::int64_t m, T cval) {
  const std::int64_t S = l.width * l.channels;
  for (std::int64_t k = blockIdx.y; k < m; k += gridDim.y) {
    const std::int64_t image_row = l.first_row + k;
    const bool constant_row =
        l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height);
    const T* in = reinterpret_cast<const T*>(l.in + k * l.in_stride);
    T* mid = reinterpret_cast<T*>(l.mid + k * S * std::int64_t(sizeof(T)));
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < S;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      if (constant_row) {
        mid[i] = cval;
        continue;
      }
      const std::int64_t q = i / l.channels, c = i % l.channels;
      T best{};
      for (std::int64_t d = -l.lx; d <= l.rx; ++d) {
        const std::int64_t s = map_index(q + d, l.width, l.border);
        const T v = s < 0 ? cval : in[s * l.channels + c];
        best = d == -l.lx ? v : pick<Max>(best, v);
      }
      mid[i] = best;
    }
  }
}

template <bool Max, class T>
__global__ void cols_kernel(MinMaxLaunch l) {
  const std::int64_t S = l.width * l.channels, N = l.ly + l.ry + 1;
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    T* out = reinterpret_cast<T*>(l.out + y * l.out_stride);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < S;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const T* mid = reinterpret_cast<const T*>(l.mid) + y * S + i;
      T best = mid[0];
      for (std::int64_t k = 1; k < N; ++k) best = pick<Max>(best, mid[k * S]);
      out[i] = best;
    }
  }
}

template <class T>
__global__ void difference_kernel(const std::byte* x, std::size_t xs, const std::byte* o,
                                  std::size_t os, std::byte* out, std::size_t ds, std::int64_t rows,
                                  std::int64_t n, int sign) {
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    const T* a = reinterpret_cast<const T*>(x + y * xs);
    const T* b = reinterpret_cast<const T*>(o + y * os);
    T* d = reinterpret_cast<T*>(out + y * ds);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const T p = sign > 0 ? a[i] : b[i], q = sign > 0 ? b[i] : a[i];
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        d[i] = static_cast<T>(static_cast<U>(static_cast<U>(p) - static_cast<U>(q)));
      } else {
        d[i] = p - q;
      }
    }
  }
}

dim3 grid_for(std::int64_t rows, std::int64_t n) {
  const std::int64_t bx =
      std::min<std::int64_t>((n + MinMaxPolicy::kThreads - 1) / MinMaxPolicy::kThreads, 64);
  const std::int64_t by = std::min<std::int64_t>(rows, MinMaxPolicy::kMaxBlocksY);
  return dim3(static_cast<unsigned>(std::max<std::int64_t>(bx, 1)),
              static_cast<unsigned>(std::max<std::int64_t>(by, 1)));
}

}  // namespace

void minmax_band_async(const MinMaxLaunch& l, cudaStream_t stream) {
  const std::int64_t m = l.out_rows + l.ly + l.ry, S = l.width * l.channels;
  if (l.out_rows <= 0 || S <= 0) return;
  dispatch_type(l.type, [&](auto t) {
    using T = decltype(t);
    const T cval = constant_of<T>(l.border_value);
    if (l.max) {
      rows_kernel<true, T><<<grid_for(m, S), MinMaxPolicy::kThreads, 0, stream>>>(l, m, cval);
      cols_kernel<true, T><<<grid_for(l.out_rows, S), MinMaxPolicy::kThreads, 0, stream>>>(l);
    } else {
      rows_kernel<false, T><<<grid_for(m, S), MinMaxPolicy::kThreads, 0, stream>>>(l, m, cval);
      cols_kernel<false, T><<<grid_for(l.out_rows, S), MinMaxPolicy::kThreads, 0, stream>>>(l);
    }
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

void tophat_difference_async(const std::byte* x, std::size_t x_stride, const std::byte* o,
                             std::size_t o_stride, std::byte* out, std::size_t out_stride,
                             std::int64_t rows, std::int64_t row_samples, SampleType type, int sign,
                             cudaStream_t stream) {
  if (rows <= 0 || row_samples <= 0) return;
  dispatch_type(type, [&](auto t) {
    difference_kernel<decltype(t)>
        <<<grid_for(rows, row_samples), MinMaxPolicy::kThreads, 0, stream>>>(
            x, x_stride, o, o_stride, out, out_stride, rows, row_samples, sign);
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
