// The masked conversion's CUDA kernel and the compound stages' holes kept (convert.cuh). The values
// that depend only on the types and the nodata value (the output's nodata, the step off it, the
// input's hole value) are worked out on the host by the CPU's own functions, so that both sides use
// one definition of them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/masked/convert.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/masked/convert.cuh"
#include "ooc/detail/sample_type.hpp"

namespace ooc::cuda {
namespace {

constexpr int kThreads = 256;

// kConvert: each sample of src converted into dst; else dst holds the values already (the
// combination's), and src says only where the holes are.
template <bool kConvert, class In, class Out>
__global__ void holes_to_nodata(const std::byte* src, std::size_t src_stride, std::byte* dst,
                                std::size_t dst_stride, std::int64_t rows, std::int64_t n, bool has,
                                In hv, Out nd, Out step) {
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    const In* s = reinterpret_cast<const In*>(src + static_cast<std::size_t>(y) * src_stride);
    Out* d = reinterpret_cast<Out*>(dst + static_cast<std::size_t>(y) * dst_stride);
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const In v = s[i];
      bool h = has & (v == hv);
      if constexpr (std::is_floating_point_v<In>) h = h | (v != v);
      Out o;
      if constexpr (!kConvert) {
        o = d[i];
      } else {
        if constexpr (std::is_floating_point_v<Out>) {
          o = static_cast<Out>(v);
        } else {
          double w = static_cast<double>(v);
          w = w == w ? w : 0.0;
          w = fmin(fmax(w, double(std::numeric_limits<Out>::lowest())),
                   double(std::numeric_limits<Out>::max()));
          o = static_cast<Out>(rint(w));
        }
      }
      d[i] = h ? nd : (o == nd ? step : o);
    }
  }
}

// The launch of either kernel over In and Out with the nodata values worked out on the host.
template <bool kConvert>
void launch(const std::byte* src, std::size_t src_stride, SampleType in, std::byte* dst,
            std::size_t dst_stride, SampleType out, std::int64_t rows, std::int64_t samples,
            double nodata, cudaStream_t stream) {
  if (rows <= 0 || samples <= 0) return;
  dispatch_type(in, [&](auto i) {
    dispatch_type(out, [&](auto o) {
      using In = decltype(i);
      using Out = decltype(o);
      const Out nd = kernels::masked::nodata_of<Out>(nodata);
      const Out step = kernels::masked::off_nodata(nd);
      const bool has = kernels::masked::holds<In>(nodata) && !std::isnan(nodata);
      const In hv = has ? static_cast<In>(nodata) : In{};
      const std::int64_t blocks = std::min<std::int64_t>((samples + kThreads - 1) / kThreads, 4096);
      const dim3 grid(static_cast<unsigned>(blocks), grid_rows(rows));
      holes_to_nodata<kConvert, In, Out><<<grid, kThreads, 0, stream>>>(
          src, src_stride, dst, dst_stride, rows, samples, has, hv, nd, step);
      OOC_KERNEL_TRY(cudaGetLastError());
    });
  });
}

}  // namespace

void masked_convert_async(const std::byte* src, std::size_t src_stride, SampleType in,
                          std::byte* dst, std::size_t dst_stride, SampleType out, std::int64_t rows,
                          std::int64_t samples, double nodata, cudaStream_t stream) {
  launch<true>(src, src_stride, in, dst, dst_stride, out, rows, samples, nodata, stream);
}

void keep_holes_async(const std::byte* src, std::size_t src_stride, SampleType in, std::byte* dst,
                      std::size_t dst_stride, SampleType out, std::int64_t rows,
                      std::int64_t samples, double nodata, cudaStream_t stream) {
  launch<false>(src, src_stride, in, dst, dst_stride, out, rows, samples, nodata, stream);
}

}  // namespace ooc::cuda
