// A volume's band rows padded across the row by the border rule, for the 3-D rank filters (the box
// of rank3d.cpp and the footprint of footprint3d.cpp): their windows then read any column offset
// without a border test.
#pragma once

#include <tbb/parallel_for.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/morphology/border_constant.hpp"
#include "ooc/border.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/engine.hpp"

namespace ooc::detail::morphology {

// Every input row of `b` (2 plane_halo + 1 planes of band.rows + 2 halo rows), `left` columns
// before and `right` after by the border rule, into `to` (rows `padded_row` bytes apart); a null
// row is the constant.
inline void pad_band_rows(const CpuBand& b, std::int64_t left, std::int64_t right,
                          BorderMode border, double cval, std::byte* to, std::size_t padded_row) {
  const std::int64_t W = b.in.width, C = b.in.channels, Wp = W + left + right;
  const std::int64_t rows = (2 * b.plane_halo + 1) * (b.band.rows + 2 * b.halo);
  tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t r) {
    const std::byte* from = b.rows[r];
    dispatch_type(b.in.type, [&](auto t) {
      using T = decltype(t);
      const T c0 = kernels::constant_of<T>(cval);
      T* d = reinterpret_cast<T*>(to + static_cast<std::size_t>(r) * padded_row);
      const T* s = reinterpret_cast<const T*>(from);
      for (std::int64_t q = 0; q < Wp; ++q) {
        const std::int64_t x = from ? map_border(q - left, W, border) : -1;
        for (std::int64_t c = 0; c < C; ++c) d[q * C + c] = x < 0 ? c0 : s[x * C + c];
      }
    });
  });
}

}  // namespace ooc::detail::morphology
