// CUDA kernels around cuFFT for the 2-D convolution by FFT (overlap-save on the tile grid of
// kernels/cpu/convolution/fft_conv.hpp): packing one tile row of a band into real n x m planes
// through the border rule, the product with the kernel's half spectrum, and unpacking the valid
// outputs. The transforms themselves are cuFFT's (src/ops/conv2d_fft_cuda.cpp).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

// One tile row: planes = tiles across x channels, plane p = channel p % C of tile p / C, each
// n rows of `pitch` real samples (in-place R2C layout: pitch = 2 (m / 2 + 1)).
struct FftTileRow {
  const void* in = nullptr;  // the band's input rows (constant-border rows unset)
  std::size_t in_stride = 0;
  SampleType in_type = SampleType::f32;
  std::int64_t first_row = 0;  // image row of input row 0
  // Every row is the constant border's: a volume's plane outside it (conv3d_cuda.cpp).
  bool outside = false;
  std::int64_t height = 0, width = 0;
  int channels = 1;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::int64_t ty = 0;  // image row of the tile row's first output
  std::int64_t K = 0, L = 0, n = 0, m = 0, h = 0, w = 0;
  std::int64_t planes = 0;
  void* planes_data = nullptr;  // planes x n x pitch, accumulator type
  std::int64_t pitch = 0;
  // Output: rows [y0, y0 + out_rows) of the image at out.
  void* out = nullptr;
  std::size_t out_stride = 0;
  SampleType out_type = SampleType::f32;
  std::int64_t y0 = 0, out_rows = 0;
  bool f64 = false;
};

void fft_pack_async(const FftTileRow& r, cudaStream_t stream);
// planes x n x (m / 2 + 1) complex values times the spectrum (n x (m / 2 + 1), scaled by
// 1 / (n m)), in place.
void fft_multiply_async(void* spectra, const void* kernel_spectrum, std::int64_t planes,
                        std::int64_t points, bool f64, cudaStream_t stream);
void fft_unpack_async(const FftTileRow& r, cudaStream_t stream);

// Launch constants of the FFT's helper kernels, in one place (CUB's policy style).
struct FftConvPolicy {
  static constexpr int kThreads = 256;
  static constexpr unsigned kMaxBlocksX = 1u << 16;  // the kernels loop over the rest
};

}  // namespace ooc::cuda
