// CUDA kernels of the pipelines' point operations and combinations (kernels/cpu/point/pointwise.hpp
// has the same arithmetic on the CPU, bit for bit).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/point/pointwise.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

// dst (type `out`) = the point operation of src (type `in`); point operations other than
// convert write the accumulator type (f32, or f64 when out is f64).
void point_async(const std::byte* src, std::size_t src_stride, SampleType in, std::byte* dst,
                 std::size_t dst_stride, SampleType out, std::int64_t rows,
                 std::int64_t row_samples, const kernels::PointParams& p, cudaStream_t stream);

// dst = combine(x, g1, g2) in the accumulator type (f64: double), stored as `out` (rounded
// and saturated as convert); x of type `x_type` (null for kinds that do not read it), g1 and g2
// of the accumulator type, g2 null where unused.
void combine_async(kernels::CombineKind k, const std::byte* x, std::size_t x_stride,
                   SampleType x_type, const std::byte* g1, const std::byte* g2,
                   std::size_t g_stride, std::byte* dst, std::size_t dst_stride, SampleType out,
                   std::int64_t rows, std::int64_t row_samples, double amount, bool f64,
                   cudaStream_t stream);

// dst = sqrt(g1^2 + g2^2 + g3^2) (a volume's gradient magnitude) in the accumulator type,
// stored as `out`.
void magnitude3_async(const std::byte* g1, const std::byte* g2, const std::byte* g3,
                      std::size_t g_stride, std::byte* dst, std::size_t dst_stride, SampleType out,
                      std::int64_t rows, std::int64_t row_samples, bool f64, cudaStream_t stream);

// Rows of one buffer (rows `pitch` bytes apart from `base`) copied within it, row dst[k] from
// row src[k], in one launch: a fused chain's border rows, which the border rule takes from its
// computed rows (reflect and mirror walk them backwards, which no 2-D copy expresses). No source
// row may be a destination.
struct RowCopies {
  static constexpr int kMax = 64;
  int count = 0;
  std::int32_t dst[kMax] = {}, src[kMax] = {};
};
void copy_rows_async(std::byte* base, std::size_t pitch, std::size_t row_bytes, const RowCopies& c,
                     cudaStream_t stream);

struct PointwisePolicy {
  static constexpr int kThreads = 256;
  static constexpr int kMaxBlocksY = 65535;
};

}  // namespace ooc::cuda
