// One plane of a volume's band as a 2-D band: the 3-D stages built as sums or extremes of 2-D
// filters plane by plane (a 3-D kernel's convolution, a 3-D footprint's minimum) run the 2-D
// kernels on the planes of the band the engine gives them.
#pragma once

#include <cstdint>

#include "ooc/engine.hpp"

namespace ooc::detail {

// Plane z + dz of b (|dz| <= b.plane_halo) for a 2-D operation of halo h <= b.halo, writing
// `out`. A plane's rows are contiguous in b's table, so no table is copied.
inline CpuBand plane_band(const CpuBand& b, std::int64_t dz, std::int64_t h, const BandView& out) {
  CpuBand s = b;
  s.rows = b.rows + (b.plane_halo + dz) * (b.band.rows + 2 * b.halo) + (b.halo - h);
  s.halo = h;
  s.plane_halo = 0;
  s.out = out;
  s.partial = nullptr;
  return s;
}

}  // namespace ooc::detail
