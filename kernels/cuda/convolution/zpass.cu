// CUDA z pass (zpass.cuh): one thread per output sample, the planes in tap order. The sums round
// as the CPU's vector build does (its -ffp-contract=fast makes each later term one FMA), and the
// extremes pick as kernels/cpu/morphology/minmax.hpp does, so both give the CPU's bytes.
#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/cpu/morphology/border_constant.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "ooc/detail/sample_type.hpp"
#include "zpass.cuh"

namespace ooc::cuda {
namespace {

template <class T, class Acc>
__global__ void zsum_kernel(const ZPassLaunch l) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= l.samples) return;
  const Acc cval = static_cast<Acc>(l.border_value);  // scipy's double, as the 2-D passes
  for (std::int64_t y = blockIdx.y; y < l.rows; y += gridDim.y) {
    const std::size_t at = static_cast<std::size_t>(y) * l.in_stride;
    Acc acc = 0;
    for (int k = 0; k < l.planes; ++k) {
      const Acc t = static_cast<Acc>(l.taps[k]);
      const Acc v = l.in[k] ? load_as<T, Acc>(reinterpret_cast<const T*>(l.in[k] + at) + i) : cval;
      if (k == 0)
        acc = t * v;
      else if constexpr (std::is_same_v<Acc, float>)
        acc = __fmaf_rn(t, v, acc);
      else
        acc = __fma_rn(t, v, acc);
    }
    reinterpret_cast<Acc*>(l.out + static_cast<std::size_t>(y) * l.out_stride)[i] = acc;
  }
}

// minmax.hpp's pick: a NaN wins, -0 below +0.
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

template <bool Max, class T>
__global__ void zextreme_kernel(const ZPassLaunch l, T cval) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= l.samples) return;
  for (std::int64_t y = blockIdx.y; y < l.rows; y += gridDim.y) {
    const std::size_t at = static_cast<std::size_t>(y) * l.in_stride;
    T r = cval;
    for (int k = 0; k < l.planes; ++k) {
      const T v = l.in[k] ? __ldg(reinterpret_cast<const T*>(l.in[k] + at) + i) : cval;
      r = k == 0 ? v : pick<Max>(r, v);
    }
    reinterpret_cast<T*>(l.out + static_cast<std::size_t>(y) * l.out_stride)[i] = r;
  }
}

}  // namespace

void zpass_async(const ZPassLaunch& l, cudaStream_t stream) {
  if (l.rows <= 0 || l.samples <= 0) return;
  constexpr int kThreads = 256;
  const dim3 grid(static_cast<unsigned>((l.samples + kThreads - 1) / kThreads), grid_rows(l.rows));
  dispatch_type(l.in_type, [&](auto in) {
    using T = decltype(in);
    if (l.kind == 0) {
      if (l.out_type == SampleType::f64)
        zsum_kernel<T, double><<<grid, kThreads, 0, stream>>>(l);
      else
        zsum_kernel<T, float><<<grid, kThreads, 0, stream>>>(l);
    } else if (l.kind == 1) {
      zextreme_kernel<false, T>
          <<<grid, kThreads, 0, stream>>>(l, kernels::constant_of<T>(l.border_value));
    } else {
      zextreme_kernel<true, T>
          <<<grid, kThreads, 0, stream>>>(l, kernels::constant_of<T>(l.border_value));
    }
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
