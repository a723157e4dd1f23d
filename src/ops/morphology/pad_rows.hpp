// A volume's band rows padded across the row by the border rule, for the 3-D rank filters (the box
// of rank3d.cpp and the footprint of footprint3d.cpp): their windows then read any column offset
// without a border test.
#pragma once

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/morphology/border_constant.hpp"
#include "ooc/border.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/engine.hpp"

namespace ooc::detail::morphology {

// One row of `width` pixels of `channels` samples (null: a row of the constant c0), `left` pixels
// before and `right` after by the border rule, into `to`. Only the end pixels go through the rule;
// the interior is one copy, channels interleaved as they are.
template <typename T>
void pad_row(const T* from, std::int64_t width, std::int64_t channels, std::int64_t left,
             std::int64_t right, BorderMode border, T c0, T* to) {
  const std::int64_t C = channels, Wp = width + left + right;
  if (!from) {
    std::fill_n(to, Wp * C, c0);
    return;
  }
  auto end_pixel = [&](std::int64_t q) {
    const std::int64_t x = map_border(q - left, width, border);
    if (x < 0)
      std::fill_n(to + q * C, C, c0);
    else
      std::copy_n(from + x * C, C, to + q * C);
  };
  for (std::int64_t q = 0; q < left; ++q) end_pixel(q);
  std::memcpy(to + left * C, from, static_cast<std::size_t>(width * C) * sizeof(T));
  for (std::int64_t q = left + width; q < Wp; ++q) end_pixel(q);
}

// Every input row of `b` (2 plane_halo + 1 planes of band.rows + 2 halo rows), `left` columns
// before and `right` after by the border rule, into `to` (rows `padded_row` bytes apart); a null
// row is the constant.
inline void pad_band_rows(const CpuBand& b, std::int64_t left, std::int64_t right,
                          BorderMode border, double cval, std::byte* to, std::size_t padded_row) {
  const std::int64_t W = b.in.width, C = b.in.channels;
  const std::int64_t rows = (2 * b.plane_halo + 1) * (b.band.rows + 2 * b.halo);
  dispatch_type(b.in.type, [&](auto t) {
    using T = decltype(t);
    const T c0 = kernels::constant_of<T>(cval);
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t r) {
      pad_row(reinterpret_cast<const T*>(b.rows[r]), W, C, left, right, border, c0,
              reinterpret_cast<T*>(to + static_cast<std::size_t>(r) * padded_row));
    });
  });
}

}  // namespace ooc::detail::morphology
