// What every CPU convolution kernel of one band is given the same way (the separable, the direct
// 2-D and the FFT kernels): the band's input rows, the image's shape and types, where the output
// goes and the border rule. Each kernel's arguments derive from it and add their own taps and
// geometry, so the operations fill these fields once for all three (src/ops/band_fill.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::kernels {

struct BandArgs {
  // out_rows + 2 * halo input rows through the border rule along y (the halo: the kernel's ry, or
  // FftConvArgs::halo); a null row is a row of the constant border.
  const std::byte* const* rows = nullptr;
  std::int64_t width = 0;
  int channels = 1;
  SampleType in_type = SampleType::f32;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  std::int64_t out_rows = 0;
  SampleType out_type = SampleType::f32;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
};

}  // namespace ooc::kernels
