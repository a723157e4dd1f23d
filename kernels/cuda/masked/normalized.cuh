// Normalized convolution on the GPU (issue 48, nodata): the separable form of
// kernels/cpu/masked/normalized.hpp, sum(k x m) / sum(k m) over each window's valid samples, as a
// row pass over x m, m and |k| m (holes 0, weight 0) and a column pass over those, then the
// division and the nodata rule. The same roundings as the CPU's AVX2 kernel: each sum a plain
// first product and one fma a tap in tap order, rows of the constant border as the constant (not
// a row pass of it), a float division, holes written as the output type's nodata value and valid
// samples kept off it (kernels/cpu/masked/convert.hpp).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

struct NormalizedLaunch {
  // The band: out_rows + 2 ry input rows from image row first_row (rows of the constant border
  // outside the image are not staged), in_stride apart.
  const std::byte* in = nullptr;
  std::size_t in_stride = 0;
  SampleType in_type = SampleType::f32;
  std::int64_t first_row = 0, image_height = 0, out_rows = 0;
  std::int64_t width = 0;
  int channels = 1;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  SampleType out_type = SampleType::f32;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  // Taps in correlation order, in device memory, in the accumulator type: row (2 rx + 1), column
  // (2 ry + 1), then their magnitudes in the same order.
  const std::byte* taps = nullptr;
  std::int64_t rx = 0, ry = 0;
  bool negative = false;                   // a negative tap: |k| m summed apart for min-weight
  double nodata = 0, min_weight_need = 0;  // need: min-weight times the sum of all |taps|
  bool fill = false, f64 = false;
  std::byte* scratch = nullptr;  // normalized_cuda_scratch bytes
};

// convolve's normalized sums (masked_conv2d_cuda.cpp) go through the unmasked 2-D convolution,
// direct or FFT, over two planes made from the band: V = x m and M = m in the accumulator type
// (holes 0, weight 0). Rows of the constant border outside the image are left unset: the
// convolutions give them the constant.
struct NormalizedSplit {
  const std::byte* in = nullptr;
  std::size_t in_stride = 0;
  SampleType in_type = SampleType::f32;
  std::int64_t rows = 0, first_row = 0, image_height = 0, row_samples = 0;
  bool constant_border = false;
  double nodata = 0;
  std::byte *v = nullptr, *m = nullptr;  // rows x row_samples each, pitch bytes a row
  std::size_t pitch = 0;
  bool f64 = false;
};
void normalized_split_async(const NormalizedSplit& s, cudaStream_t stream);

// Then num / den where the window is valid, the nodata rule and the output's type. The direct
// sum's rule and rounding are the CPU's direct 2-D kernel's (weights above 0, at least
// min_weight_need, den not 0; a valid value equal to the nodata value becomes nodata in another
// type); the FFT's the CPU's masked_fft.cpp's (weights above tolerance, valid values kept off
// nodata).
struct NormalizedFinish {
  const std::byte *num = nullptr, *den = nullptr, *weights = nullptr;  // weights: den's or |k| m's
  const std::byte* own = nullptr;  // M's row of the first output row
  std::size_t pitch = 0;           // of num, den, weights and own
  std::int64_t rows = 0, row_samples = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  SampleType out_type = SampleType::f32;
  double nodata = 0, min_weight_need = 0, tolerance = 0;
  bool fill = false, f64 = false, fft = false;
};
void normalized_finish_async(const NormalizedFinish& f, cudaStream_t stream);

// A volume's normalized convolution in 3-D (the CPU's volume_impl.cpp, its roundings). Separable
// taps: per column-pass row, the z sums of x m, m and |k| m over the padded row (the constant
// border's columns the constant: the row pass pads its own input), then the row pass, then the
// column pass, the division and the nodata rule. A 3-D kernel: one thread an output, one sum a
// tap over the kernel's non-zero taps.
inline constexpr int kVolumeNormalizedMaxPlanes = 127;
struct VolumeNormalizedLaunch {
  // The z taps' planes, first to last: the device address of the band's first output row in each
  // (rows in_stride apart, ry rows of context above and below; rows of the constant border outside
  // the image are not staged), null for a plane of the constant border outside the volume; `own`
  // the output's plane.
  const std::byte* planes[kVolumeNormalizedMaxPlanes] = {};
  const std::byte* own = nullptr;
  std::size_t in_stride = 0;
  SampleType in_type = SampleType::f32;
  std::int64_t y0 = 0, image_height = 0, out_rows = 0, width = 0;  // y0: output row 0's image row
  int channels = 1;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  SampleType out_type = SampleType::f32;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  // Taps in correlation order, in device memory, in the accumulator type: z (2 rz + 1), column
  // (2 ry + 1), row (2 rx + 1), then the magnitudes min-weight weighs in the same order.
  const std::byte* taps = nullptr;
  std::int64_t rz = 0, ry = 0, rx = 0;
  bool negative = false;  // |k| m summed apart (a negative tap, or folded z magnitudes)
  double nodata = 0, min_weight_need = 0;
  bool fill = false, f64 = false;
  std::byte* scratch = nullptr;  // volume_normalized_cuda_scratch bytes
  // A 3-D kernel's direct sum instead (no scratch): `taps` holds its non-zero taps (as the CPU
  // keeps them, in plane, row, column order) then their magnitudes, `tap_at` each one's plane,
  // row and column in the window (3 a tap).
  const std::int32_t* tap_at = nullptr;
  std::int64_t tap_count = 0;
};
std::size_t volume_normalized_cuda_scratch(std::int64_t rows, std::int64_t ry, std::int64_t rx,
                                           std::int64_t width, int channels, bool f64);
void volume_normalized_async(const VolumeNormalizedLaunch& l, cudaStream_t stream);

// Device memory of a band of `rows` output rows: the row pass's three sums of every input row.
std::size_t normalized_cuda_scratch(std::int64_t rows, std::int64_t ry, std::int64_t row_samples,
                                    bool f64);
void normalized_async(const NormalizedLaunch& l, cudaStream_t stream);

}  // namespace ooc::cuda
