// Filling the convolution kernels' arguments, shared by the separable and the 2-D operations: what
// an operation knows once (the images, the border) and what each band brings (its rows, its
// output). The kernels take these fields under the same names, so they are written here once and
// every kernel is given them the same way.
#pragma once

#include <cstdint>

#include "kernels/cpu/band_args.hpp"
#include "ooc/border.hpp"
#include "ooc/image.hpp"
#include "ooc/pipeline.hpp"

namespace ooc::detail {

// The CPU kernels' fields known before any band: the input's and the output's shape and types,
// and the border rule.
inline void set_images(cpu::BandArgs& a, const ImageSpec& in, const ImageSpec& out,
                       BorderMode border, double border_value) {
  a.width = in.width;
  a.channels = in.channels;
  a.in_type = in.type;
  a.out_type = out.type;
  a.out_stride = out.row_bytes();
  a.border = border;
  a.border_value = border_value;
}

// One band's input rows and output. skip: rows of the band's halo the kernel does not read (a
// halo the operation sized for another kernel, e.g. the FFT's on the other backend).
inline void set_band(cpu::BandArgs& a, const CpuBand& b, std::int64_t skip = 0) {
  a.rows = b.rows + skip;
  a.out = b.out.data;
  a.out_rows = b.band.rows;
}

}  // namespace ooc::detail
