// Filter taps and the factories behind --radius/--sigma/--filter/--taps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ooc {

// A separable filter as scipy.ndimage.convolve1d sees it: `row` runs along x, then `col` along y.
// Taps are stored in convolution order, as the user gave them; kernels correlate with the
// reversed list (see correlation_taps).
struct SeparableFilter {
  std::vector<double> row;
  std::vector<double> col;

  std::int64_t radius_x() const noexcept { return static_cast<std::int64_t>(row.size() / 2); }
  std::int64_t radius_y() const noexcept { return static_cast<std::int64_t>(col.size() / 2); }
  std::string describe() const;
};

// Normalized Gaussian of the given radius; sigma <= 0 means radius / 3.
std::vector<double> gaussian_taps(std::int64_t radius, double sigma);
// The radius of a Gaussian of `sigma` (truncate 3: ceil(3 sigma)), as scipy.ndimage takes it; the
// one rule for the gaussian stage, oocconv's --sigma and the gaussian2d: kernel.
std::int64_t gaussian_radius(double sigma);
// Normalized box (mean) filter of width 2 * radius + 1.
std::vector<double> box_taps(std::int64_t radius);
// Parses "a,b,c" (commas, spaces or newlines). Throws a usage Error unless the count is odd.
std::vector<double> parse_taps(const std::string& text, const std::string& origin);
// Taps reversed: out[i] = sum_k correlation_taps[k] * in[i + k - r] equals convolve1d.
std::vector<double> correlation_taps(const std::vector<double>& taps);

}  // namespace ooc
