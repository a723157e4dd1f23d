// CUDA kernels of the pipelines' point operations and combinations (and the chains' border row
// copies): one thread per sample, rows along the grid's y. Roundings are explicit (_rn
// intrinsics, never contracted into FMAs) so that the results equal
// kernels/cpu/point/pointwise.hpp's.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/check.cuh"
#include "ooc/detail/sample_type.hpp"
#include "pointwise.cuh"

namespace ooc::cuda {
namespace {

__device__ __forceinline__ float mul_rn(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ __forceinline__ double mul_rn(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ __forceinline__ float add_rn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ double add_rn(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ __forceinline__ float sub_rn(float a, float b) {
  return __fsub_rn(a, b);
}
__device__ __forceinline__ double sub_rn(double a, double b) {
  return __dsub_rn(a, b);
}
__device__ __forceinline__ float sqrt_rn(float a) {
  return __fsqrt_rn(a);
}
__device__ __forceinline__ double sqrt_rn(double a) {
  return __dsqrt_rn(a);
}

template <class In, class Out>
__device__ __forceinline__ Out convert_one(In v) {
  if constexpr (std::is_same_v<In, Out>) {
    return v;
  } else if constexpr (std::is_floating_point_v<Out>) {
    return static_cast<Out>(v);
  } else {
    double d = static_cast<double>(v);
    d = d == d ? d : 0.0;
    d = fmin(fmax(d, double(std::numeric_limits<Out>::lowest())),
             double(std::numeric_limits<Out>::max()));
    return static_cast<Out>(rint(d));
  }
}

template <class In, class Out>
__global__ void point_kernel(const std::byte* src, std::size_t src_stride, std::byte* dst,
                             std::size_t dst_stride, std::int64_t rows, std::int64_t n,
                             kernels::PointKind kind, double pa, double pb) {
  const Out a = static_cast<Out>(pa), b = static_cast<Out>(pb);
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    const In* s = reinterpret_cast<const In*>(src + y * src_stride);
    Out* d = reinterpret_cast<Out*>(dst + y * dst_stride);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const In v = s[i];
      Out o;
      if (kind == kernels::PointKind::convert) {
        o = convert_one<In, Out>(v);
      } else if constexpr (std::is_floating_point_v<Out>) {
        const Out x = static_cast<Out>(v);
        switch (kind) {
          case kernels::PointKind::scale:
            o = add_rn(mul_rn(x, a), b);
            break;
          case kernels::PointKind::abs:
            if constexpr (sizeof(Out) == 4)
              o = fabsf(x);
            else
              o = fabs(x);
            break;
          case kernels::PointKind::clamp:
            o = x < a ? a : (x > b ? b : x);
            break;
          case kernels::PointKind::threshold:
            o = x > a ? Out(1) : Out(0);
            break;
          default:
            o = x;
        }
      } else {
        o = Out(0);  // point operations other than convert write a floating-point type
      }
      d[i] = o;
    }
  }
}

template <class X, class Acc, class Out>
__global__ void combine_kernel(kernels::CombineKind k, const std::byte* x, std::size_t x_stride,
                               const std::byte* g1, const std::byte* g2, std::size_t g_stride,
                               std::byte* dst, std::size_t dst_stride, std::int64_t rows,
                               std::int64_t n, double amount) {
  const Acc am = static_cast<Acc>(amount);
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    const X* xs = x ? reinterpret_cast<const X*>(x + y * x_stride) : nullptr;
    const Acc* a = reinterpret_cast<const Acc*>(g1 + y * g_stride);
    const Acc* b = g2 ? reinterpret_cast<const Acc*>(g2 + y * g_stride) : nullptr;
    Out* d = reinterpret_cast<Out*>(dst + y * dst_stride);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const Acc xv = xs ? static_cast<Acc>(xs[i]) : Acc(0);
      const Acc g = a[i];
      Acc o;
      switch (k) {
        case kernels::CombineKind::subtract:
          o = sub_rn(xv, g);
          break;
        case kernels::CombineKind::unsharp:
          o = add_rn(xv, mul_rn(am, sub_rn(xv, g)));
          break;
        case kernels::CombineKind::difference:
          o = sub_rn(g, b[i]);
          break;
        default:
          o = sqrt_rn(add_rn(mul_rn(g, g), mul_rn(b[i], b[i])));
      }
      d[i] = convert_one<Acc, Out>(o);
    }
  }
}

// sqrt(a^2 + b^2 + c^2), each operation rounded as combine.cpp's magnitude3_row (compiled without
// contraction).
template <class Acc, class Out>
__global__ void magnitude3_kernel(const std::byte* g1, const std::byte* g2, const std::byte* g3,
                                  std::size_t g_stride, std::byte* dst, std::size_t dst_stride,
                                  std::int64_t rows, std::int64_t n) {
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    const Acc* a = reinterpret_cast<const Acc*>(g1 + y * g_stride);
    const Acc* b = reinterpret_cast<const Acc*>(g2 + y * g_stride);
    const Acc* c = reinterpret_cast<const Acc*>(g3 + y * g_stride);
    Out* d = reinterpret_cast<Out*>(dst + y * dst_stride);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const Acc s = add_rn(mul_rn(a[i], a[i]), mul_rn(b[i], b[i]));
      d[i] = convert_one<Acc, Out>(sqrt_rn(add_rn(s, mul_rn(c[i], c[i]))));
    }
  }
}

// One block row per copy; 4-byte words where the rows allow, else bytes.
template <class Word>
__global__ void copy_rows_kernel(std::byte* base, std::size_t pitch, std::int64_t words,
                                 RowCopies c) {
  const int k = static_cast<int>(blockIdx.y);
  Word* d = reinterpret_cast<Word*>(base + static_cast<std::size_t>(c.dst[k]) * pitch);
  const Word* s = reinterpret_cast<const Word*>(base + static_cast<std::size_t>(c.src[k]) * pitch);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < words;
       i += std::int64_t(gridDim.x) * blockDim.x)
    d[i] = s[i];
}

dim3 grid_for(std::int64_t rows, std::int64_t n) {
  const std::int64_t bx =
      std::min<std::int64_t>((n + PointwisePolicy::kThreads - 1) / PointwisePolicy::kThreads, 64);
  const std::int64_t by = std::min<std::int64_t>(rows, PointwisePolicy::kMaxBlocksY);
  return dim3(static_cast<unsigned>(std::max<std::int64_t>(bx, 1)),
              static_cast<unsigned>(std::max<std::int64_t>(by, 1)));
}

}  // namespace

void point_async(const std::byte* src, std::size_t src_stride, SampleType in, std::byte* dst,
                 std::size_t dst_stride, SampleType out, std::int64_t rows,
                 std::int64_t row_samples, const kernels::PointParams& p, cudaStream_t stream) {
  if (rows <= 0 || row_samples <= 0) return;
  dispatch_type(in, [&](auto i) {
    dispatch_type(out, [&](auto o) {
      point_kernel<decltype(i), decltype(o)>
          <<<grid_for(rows, row_samples), PointwisePolicy::kThreads, 0, stream>>>(
              src, src_stride, dst, dst_stride, rows, row_samples, p.kind, p.a, p.b);
    });
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

void combine_async(kernels::CombineKind k, const std::byte* x, std::size_t x_stride,
                   SampleType x_type, const std::byte* g1, const std::byte* g2,
                   std::size_t g_stride, std::byte* dst, std::size_t dst_stride, SampleType out,
                   std::int64_t rows, std::int64_t row_samples, double amount, bool f64,
                   cudaStream_t stream) {
  if (rows <= 0 || row_samples <= 0) return;
  dispatch_type(x_type, [&](auto xt) {
    dispatch_type(out, [&](auto ot) {
      using X = decltype(xt);
      using O = decltype(ot);
      if (f64)
        combine_kernel<X, double, O>
            <<<grid_for(rows, row_samples), PointwisePolicy::kThreads, 0, stream>>>(
                k, x, x_stride, g1, g2, g_stride, dst, dst_stride, rows, row_samples, amount);
      else
        combine_kernel<X, float, O>
            <<<grid_for(rows, row_samples), PointwisePolicy::kThreads, 0, stream>>>(
                k, x, x_stride, g1, g2, g_stride, dst, dst_stride, rows, row_samples, amount);
    });
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

void magnitude3_async(const std::byte* g1, const std::byte* g2, const std::byte* g3,
                      std::size_t g_stride, std::byte* dst, std::size_t dst_stride, SampleType out,
                      std::int64_t rows, std::int64_t row_samples, bool f64, cudaStream_t stream) {
  if (rows <= 0 || row_samples <= 0) return;
  dispatch_type(out, [&](auto ot) {
    using O = decltype(ot);
    if (f64)
      magnitude3_kernel<double, O>
          <<<grid_for(rows, row_samples), PointwisePolicy::kThreads, 0, stream>>>(
              g1, g2, g3, g_stride, dst, dst_stride, rows, row_samples);
    else
      magnitude3_kernel<float, O>
          <<<grid_for(rows, row_samples), PointwisePolicy::kThreads, 0, stream>>>(
              g1, g2, g3, g_stride, dst, dst_stride, rows, row_samples);
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

void copy_rows_async(std::byte* base, std::size_t pitch, std::size_t row_bytes, const RowCopies& c,
                     cudaStream_t stream) {
  if (c.count <= 0 || row_bytes == 0) return;
  const bool wide =
      row_bytes % 4 == 0 && pitch % 4 == 0 && reinterpret_cast<std::uintptr_t>(base) % 4 == 0;
  const auto words = static_cast<std::int64_t>(wide ? row_bytes / 4 : row_bytes);
  const dim3 grid = grid_for(c.count, words);
  if (wide)
    copy_rows_kernel<std::uint32_t>
        <<<grid, PointwisePolicy::kThreads, 0, stream>>>(base, pitch, words, c);
  else
    copy_rows_kernel<unsigned char>
        <<<grid, PointwisePolicy::kThreads, 0, stream>>>(base, pitch, words, c);
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
