// Separable taps longer than the image folded onto a window no longer than the image, so that a
// radius beyond the image costs what the image's does (make_separable folds every filter it is
// given; the sums stay scipy.ndimage's convolve1d up to the rounding of the folded taps).
#pragma once

#include <cstdint>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/ops/separable.hpp"

namespace ooc::detail {

// The odd, centred `taps` (either order) of a 1-D filter along an axis of n samples under
// `border`, where their radius exceeds n, summed (in double, in tap order) onto the smallest
// window that reads the same samples: wrap repeats every n samples, reflect every 2n, mirror
// every 2n - 2, and past the image nearest reads the edge sample and constant the value for
// every output. Otherwise (radius at most n, an even count) the taps unchanged.
std::vector<double> fold_taps(const std::vector<double>& taps, std::int64_t n, BorderMode border);

// p with its row taps folded over the width of `in` and its column taps over its height: they
// depend on the image's shape and the border only, never on bands, threads or parts.
SeparableParams fold_separable(SeparableParams p, const ImageSpec& in);

}  // namespace ooc::detail
