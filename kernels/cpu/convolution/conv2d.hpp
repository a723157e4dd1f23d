// CPU kernel of the non-separable 2-D convolution: one band, in column strips, every output sample
// a weighted sum over the K x L window in a fixed order (so results never depend on the strip or
// the band it falls in).
#pragma once

#include <cstddef>
#include <cstdint>

#include "band_args.hpp"

namespace ooc::kernels {

// rows: out_rows + 2 * ry input rows.
struct Conv2dArgs : BandArgs {
  const double* taps = nullptr;  // (2 ry + 1) x (2 rx + 1), row major, correlation order
  std::int64_t rx = 0, ry = 0;
  std::int64_t strip_samples = 512;
  bool f64 = false;  // accumulate in double
};

void conv2d_band(const Conv2dArgs& args);
std::size_t conv2d_scratch_bytes(const Conv2dArgs& args);  // per thread

}  // namespace ooc::kernels
