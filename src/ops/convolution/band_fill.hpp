// Filling the convolution kernels' arguments, shared by the separable and the 2-D operations and
// their CUDA adapters: what an operation knows once (the images, the border) and what each band
// brings (its rows, its output). The kernels take these fields under the same names, so they are
// written here once and every kernel is given them the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "kernels/cpu/convolution/band_args.hpp"
#include "kernels/cpu/convolution/fft_conv.hpp"
#include "ooc/border.hpp"
#include "ooc/engine.hpp"
#include "ooc/image.hpp"

namespace ooc::detail {

// The CPU kernels' fields known before any band: the input's and the output's shape and types,
// and the border rule.
inline void set_images(kernels::BandArgs& a, const ImageSpec& in, const ImageSpec& out,
                       BorderMode border, double border_value) {
  a.width = in.width;
  a.channels = in.channels;
  a.in_type = in.type;
  a.out_type = out.type;
  a.out_stride = out.row_bytes();
  a.border = border;
  a.border_value = border_value;
}

// A GPU band as a kernel of halo h <= b.halo reads it: its input starts b.halo - h rows lower
// (a sub-operation of a combined stage, or a direct kernel in a band sized for the FFT).
inline CudaBand with_halo(CudaBand b, std::int64_t h) {
  b.in += static_cast<std::size_t>(b.halo - h) * b.in_stride;
  b.first_row += b.halo - h;
  b.halo = h;
  return b;
}

// The device address of the band's first row (band.y0) in plane k of its 2 plane_halo + 1
// (CudaBand::plane_in), or null for a plane of the constant border.
inline const std::byte* cuda_plane(const CudaBand& b, std::int64_t k, BorderMode border) {
  if (b.plane_in) return b.plane_in[k];
  const std::int64_t z = b.band.z - b.plane_halo + k;
  if (map_border(z, b.in_spec.depth, border) < 0) return nullptr;
  const std::int64_t count = b.band.rows + 2 * b.halo;
  return b.in + static_cast<std::size_t>(k * count + b.halo) * b.in_stride;
}

// One band's input rows and output. skip: rows of the band's halo the kernel does not read (a
// halo the operation sized for another kernel, e.g. the FFT's on the other backend).
// A tile of a band (CpuBand) is an image of its own width.
inline void set_band(kernels::BandArgs& a, const CpuBand& b, std::int64_t skip = 0) {
  a.rows = b.rows + skip;
  a.width = b.in.width;
  a.out = b.out.data;
  a.out_stride = b.out.row_stride;
  a.out_rows = b.band.rows;
}

// The CPU kernel of an overlap-save FFT engine (kernels::FftConv2d, kernels::FftSeparable: made
// once per run, shared by every slot): each band with its halo and its place in the image, which
// fixes the engine's grid.
template <class Engine>
class FftBandKernel final : public CpuKernel {
 public:
  FftBandKernel(std::shared_ptr<const Engine> fft, const kernels::FftConvArgs& base)
      : fft_(std::move(fft)), base_(base) {}
  void run(const CpuBand& b) override {
    kernels::FftConvArgs a = base_;
    set_band(a, b);
    a.halo = b.halo;
    a.y0 = b.band.y0;
    a.height = b.in.height;
    fft_->band(a);
  }

 private:
  std::shared_ptr<const Engine> fft_;
  kernels::FftConvArgs base_;
};

// The same for the CUDA launches of kernels/cuda (Conv2dLaunch, SeparableLaunch), which also take
// the radii and the accumulator's precision once; the input's type comes with each band.
template <class Launch>
void set_launch_images(Launch& l, const ImageSpec& out, BorderMode border, double border_value,
                       std::int64_t rx, std::int64_t ry, bool f64) {
  l.width = out.width;
  l.channels = out.channels;
  l.out_type = out.type;
  l.rx = rx;
  l.ry = ry;
  l.border = border;
  l.border_value = border_value;
  l.f64 = f64;
}

// A band staged in device memory: its rows from image row first_row on, and its output.
template <class Launch>
void set_launch_band(Launch& l, const CudaBand& b) {
  l.in = b.in;
  l.in_stride = b.in_stride;
  l.in_type = b.in_spec.type;
  l.out = b.out;
  l.out_stride = b.out_stride;
  l.out_rows = b.band.rows;
  l.first_row = b.first_row;
  l.image_height = b.in_spec.height;
}

}  // namespace ooc::detail
