// A minimum or maximum window longer than the image clamped to the image's size, so that a
// window past the image costs what the image's does (make_minmax, and the openings, closings and
// top-hats built on it, clamp every window they are given).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/morphology/window.hpp"

namespace ooc::detail::morphology {

// Past n samples on both sides, every output's window holds the whole axis and a sample past
// either edge: under every border rule the same set of values as with n on either side (the
// image's samples, and the constant for constant), and the pick (pick<Max>: signed zeros and NaN
// whatever the order) depends on that set only.
inline Extent clamp_extent(Extent e, std::int64_t n) {
  if (std::min(e.left, e.right) > n) return {n, n};
  return e;
}

// w clamped along the height and the width of the image; a footprint's mask is kept as it is.
inline Window clamp_window(Window w, const ImageSpec& in) {
  if (w.mask) return w;
  w.y = clamp_extent(w.y, in.height);
  w.x = clamp_extent(w.x, in.width);
  return w;
}

}  // namespace ooc::detail::morphology
