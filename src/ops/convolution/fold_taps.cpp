// Folding of separable taps longer than the image (fold_taps.hpp).
#include "ops/convolution/fold_taps.hpp"

#include <algorithm>

namespace ooc::detail {

std::vector<double> fold_taps(const std::vector<double>& taps, std::int64_t n, BorderMode border) {
  const auto r = static_cast<std::int64_t>(taps.size() / 2);
  if (taps.size() % 2 == 0 || n < 1 || r <= n) return taps;
  // The folded radius R and the offset in [-R, R] that reads what offset d reads, for every
  // output of the axis: the same residue of the border's period, or (nearest, constant) the
  // nearest offset that is past the edge for every output as d is.
  std::int64_t R = 0, period = 0;
  switch (border) {
    case BorderMode::wrap:
      period = n, R = n / 2;
      break;
    case BorderMode::reflect:  // of one sample, every coordinate reads it
      period = n == 1 ? 1 : 2 * n, R = n == 1 ? 0 : n;
      break;
    case BorderMode::mirror:
      period = n == 1 ? 1 : 2 * n - 2, R = n - 1;
      break;
    case BorderMode::nearest:  // offsets of n - 1 or more read the last sample from every output
      R = n - 1;
      break;
    case BorderMode::constant:  // offsets of n or more read the constant from every output
      R = n;
      break;
  }
  auto fold = [&](std::int64_t d) {
    if (period == 0) return std::clamp(d, -R, R);
    std::int64_t m = d % period;
    if (m < 0) m += period;
    return m > R ? m - period : m;
  };
  std::vector<double> out(static_cast<std::size_t>(2 * R + 1), 0.0);
  for (std::int64_t k = 0; k < 2 * r + 1; ++k) out[fold(k - r) + R] += taps[k];
  return out;
}

SeparableParams fold_separable(SeparableParams p, const ImageSpec& in) {
  p.filter.row = fold_taps(p.filter.row, in.width, p.border);
  p.filter.col = fold_taps(p.filter.col, in.height, p.border);
  return p;
}

}  // namespace ooc::detail

namespace ooc {
SeparableParams folded_separable(const SeparableParams& params, const ImageSpec& input) {
  return detail::fold_separable(params, input);
}
}  // namespace ooc
