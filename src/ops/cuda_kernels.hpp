// The CUDA halves of the operations, made by the operations when this build has CUDA (each
// factory lives beside its kernels in a file compiled only then).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/convolution/zpass.hpp"
#include "ooc/border.hpp"
#include "ooc/engine.hpp"
#include "ooc/filter.hpp"
#include "ooc/image.hpp"

namespace ooc {

#if defined(OOC_HAVE_CUDA)
inline constexpr bool kCudaBuilt = true;
#else
inline constexpr bool kCudaBuilt = false;
#endif

// The largest radius the separable CUDA kernels are specialized on (FastRadii in
// kernels/cuda/convolution/separable_policy.cuh; checked there by separable_cuda.cpp): beyond it
// the generic kernels run, and a separable filter may take the FFT on CUDA (separable_costs).
inline constexpr std::int64_t kCudaSpecializedMaxRadius = 64;

namespace detail {
// How the CUDA rank filters take a window: in registers, by sliding histograms, or by a radix
// select (src/ops/morphology/rank.cpp chooses, rank_cuda.cpp launches).
enum class RankCudaPath { registers, histogram, radix };
}  // namespace detail

struct SeparableParams;

// Separable convolution: taps in correlation order, as doubles; f64: accumulate in double.
std::unique_ptr<CudaKernel> make_separable_cuda(const std::vector<int>& devices,
                                                const ImageSpec& out, const SeparableParams& p,
                                                const std::vector<double>& row_taps,
                                                const std::vector<double>& col_taps, bool f64);
// The row pass's intermediate rows in device memory.
std::size_t separable_cuda_scratch(std::int64_t band_rows, std::int64_t ry,
                                   std::int64_t row_samples, bool f64);

// 2-D convolution: taps (2 ry + 1) x (2 rx + 1) in correlation order.
std::unique_ptr<CudaKernel> make_conv2d_cuda(const std::vector<int>& devices, const ImageSpec& out,
                                             BorderMode border, double border_value,
                                             const std::vector<double>& taps, std::int64_t rx,
                                             std::int64_t ry, bool f64);

// 2-D convolution by FFT (overlap-save in tiles of n x m points giving h x w outputs, on the
// tile grid of kernels/cpu/convolution/fft_conv.hpp), through cuFFT; taps K x L in convolution
// order.
struct FftCudaShape {
  std::int64_t K = 0, L = 0, n = 0, m = 0, h = 0, w = 0;
  std::int64_t width = 0, height = 0;
  int channels = 1;
  SampleType out_type = SampleType::f32;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
};
// The shape of a K x L kernel on tiles `t` (an FftTiling: n, m, h, w) for the output `out`.
template <class Tiling>
FftCudaShape fft_cuda_shape(std::int64_t K, std::int64_t L, const Tiling& t, const ImageSpec& out,
                            BorderMode border, double border_value) {
  return FftCudaShape{K,         L,          t.n,          t.m,      t.h,    t.w,
                      out.width, out.height, out.channels, out.type, border, border_value};
}
std::unique_ptr<CudaKernel> make_conv2d_fft_cuda(const std::vector<int>& devices,
                                                 const FftCudaShape& shape,
                                                 const std::vector<double>& taps, bool f64);
// Device memory of a slot for bands of `band_rows` rows: the tiles' spectra and cuFFT's work
// area.
std::size_t conv2d_fft_cuda_scratch(const FftCudaShape& shape, std::int64_t band_rows, bool f64);

// A volume's z pass (kernels/cpu/convolution/zpass.hpp): plane weights `taps` (first plane first),
// the window from z - before; null beyond kZPassCudaMaxPlanes planes.
inline constexpr std::size_t kZPassCudaMaxPlanes = 129;  // cuda::ZPassLaunch::kMaxPlanes
std::unique_ptr<CudaKernel> make_zpass_cuda(kernels::ZPassKind kind,
                                            const std::vector<double>& taps, std::int64_t before,
                                            SampleType out, BorderMode border, double cval);

// A volume's rank filter of a box of planes x rows x cols, `front` planes before, `top` rows
// above and `left` columns left of its sample; null beyond kRank3dCudaMaxSamples samples or
// kRank3dCudaMaxPlanes planes.
struct Rank3dCudaBox {
  std::int64_t planes = 1, rows = 1, cols = 1, front = 0, top = 0, left = 0, rank = 0;
};
inline constexpr std::int64_t kRank3dCudaMaxSamples = 1024;  // kernels::kMaxRank3dSamples
inline constexpr std::int64_t kRank3dCudaMaxPlanes = 256;    // cuda::Rank3dLaunch::kMaxPlanes
std::unique_ptr<CudaKernel> make_rank3d_cuda(const Rank3dCudaBox& box, BorderMode border,
                                             double cval);

// Histogram equalization: per-band histograms (u64 counts, channel-major) and the table mapping.
std::unique_ptr<CudaKernel> make_histogram_cuda(const std::vector<int>& devices, std::int64_t bins);
std::unique_ptr<CudaKernel> make_lut_cuda(const std::vector<int>& devices, std::int64_t bins,
                                          const std::vector<std::uint16_t>& lut);

// Matrix products (atax.hpp): X padded to kp columns, leaves of `leaf` rows.
struct ProductParams;
std::unique_ptr<CudaKernel> make_product_cuda(const std::vector<int>& devices, const ImageSpec& a,
                                              const ProductParams& p, int kp, std::int64_t leaf,
                                              const std::vector<double>& x_padded);
std::size_t product_cuda_scratch(const ImageSpec& a, const ProductParams& p, int kp,
                                 std::int64_t leaf, std::int64_t band_rows);

}  // namespace ooc
