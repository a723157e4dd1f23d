// CUDA projections along z (project.cuh): one thread per output sample walks its column of planes
// in order, so each sample's extremes and sums are combined as the CPU's loop combines them, NaNs
// included (the CPU's x86 NaNs, not the GPU's canonical one).
#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "ooc/detail/sample_type.hpp"
#include "project.cuh"

namespace ooc::cuda {
namespace {

// kernels/cpu/morphology/minmax.hpp's pick: a NaN wins, -0 below +0.
template <bool Max, class T>
__device__ __forceinline__ T pick(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == a) return signbit(b) != Max ? b : a;
  }
  if constexpr (Max)
    return (b > a || b != b) ? b : a;
  else
    return (b < a || b != b) ? b : a;
}

// acc + v with the NaN the CPU's (x86) addition gives, not the GPU's canonical one: the first NaN
// operand made quiet, else for inf + -inf the negative default NaN.
__device__ __forceinline__ double x86_add(double acc, double v) {
  const double r = __dadd_rn(acc, v);
  if (r == r) return r;
  unsigned long long bits = 0xFFF8000000000000ull;
  if (acc != acc)
    bits = static_cast<unsigned long long>(__double_as_longlong(acc)) | 0x0008000000000000ull;
  else if (v != v)
    bits = static_cast<unsigned long long>(__double_as_longlong(v)) | 0x0008000000000000ull;
  return __longlong_as_double(static_cast<long long>(bits));
}

// A sample as a double as x86 widens it: a float NaN keeps its sign and payload (made quiet).
template <class T>
__device__ __forceinline__ double x86_widen(T v) {
  if constexpr (std::is_same_v<T, float>) {
    if (v != v) {
      const auto f = static_cast<unsigned long long>(__float_as_uint(v));
      const unsigned long long bits =
          ((f & 0x80000000ull) << 32) | 0x7FF8000000000000ull | ((f & 0x007FFFFFull) << 29);
      return __longlong_as_double(static_cast<long long>(bits));
    }
  }
  return static_cast<double>(v);
}

// A double to O as x86 converts it: a NaN keeps its sign and its payload's high bits.
template <class O>
__device__ __forceinline__ O x86_narrow(double v) {
  if constexpr (sizeof(O) == 8) {
    return v;
  } else {
    if (v == v) return static_cast<float>(v);
    const auto bits = static_cast<unsigned long long>(__double_as_longlong(v));
    const unsigned f = static_cast<unsigned>(bits >> 32) & 0x80000000u;
    return __uint_as_float(f | 0x7FC00000u | static_cast<unsigned>((bits >> 29) & 0x003FFFFFu));
  }
}

template <bool Max, class T>
__global__ void project_extreme_kernel(const ProjectLaunch l) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= l.samples) return;
  for (std::int64_t y = blockIdx.y; y < l.rows; y += gridDim.y) {
    const std::byte* row = l.in + static_cast<std::size_t>(y) * l.in_stride;
    T r = __ldg(reinterpret_cast<const T*>(row) + i);
    for (std::int64_t k = 1; k < l.planes; ++k)
      r = pick<Max>(r, __ldg(reinterpret_cast<const T*>(row + k * l.plane_step) + i));
    reinterpret_cast<T*>(l.out + static_cast<std::size_t>(y) * l.out_stride)[i] = r;
  }
}

template <class T, class O>
__global__ void project_sum_kernel(const ProjectLaunch l, double scale, bool mean) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= l.samples) return;
  for (std::int64_t y = blockIdx.y; y < l.rows; y += gridDim.y) {
    const std::byte* row = l.in + static_cast<std::size_t>(y) * l.in_stride;
    double acc = 0.0;
    for (std::int64_t k = 0; k < l.planes; ++k)
      acc = x86_add(acc, x86_widen(__ldg(reinterpret_cast<const T*>(row + k * l.plane_step) + i)));
    // A NaN sum times the (finite) scale is that NaN, as on the CPU.
    if (mean && acc == acc) acc = __dmul_rn(acc, scale);
    reinterpret_cast<O*>(l.out + static_cast<std::size_t>(y) * l.out_stride)[i] =
        x86_narrow<O>(acc);
  }
}

}  // namespace

void project_async(const ProjectLaunch& l, cudaStream_t stream) {
  if (l.rows <= 0 || l.samples <= 0 || l.planes <= 0) return;
  constexpr int kThreads = 256;
  const dim3 grid(static_cast<unsigned>((l.samples + kThreads - 1) / kThreads), grid_rows(l.rows));
  dispatch_type(l.in_type, [&](auto in) {
    using T = decltype(in);
    if (l.kind == 0) {
      project_extreme_kernel<true, T><<<grid, kThreads, 0, stream>>>(l);
    } else if (l.kind == 1) {
      project_extreme_kernel<false, T><<<grid, kThreads, 0, stream>>>(l);
    } else {
      const bool mean = l.kind == 3;
      const double scale = 1.0 / static_cast<double>(l.planes);
      if (l.out_type == SampleType::f64)
        project_sum_kernel<T, double><<<grid, kThreads, 0, stream>>>(l, scale, mean);
      else
        project_sum_kernel<T, float><<<grid, kThreads, 0, stream>>>(l, scale, mean);
    }
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
