// Minimum and maximum filters over a rectangle, and the grey morphology built from them
// (opening, closing, white and black top-hat), with scipy.ndimage's semantics
// (minimum_filter, maximum_filter, grey_opening, grey_closing, white_tophat, black_tophat with
// `size`): the same window origin for even sizes, the same borders, exact results in the input's
// type. The CPU runs van Herk / Gil-Werman per axis (about three comparisons a sample whatever
// the size); a footprint runs van Herk along its row runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/engine.hpp"
#include "ooc/image.hpp"

namespace ooc {

// A window of any shape (scipy.ndimage's `footprint`): odd sides, the origin at the centre; the
// filters take the samples where the mask is 1. An empty mask: none (the rectangle of the sizes).
struct Footprint {
  std::int64_t height = 0, width = 0;
  std::int64_t depth = 1;          // planes: a 3-D footprint filters volumes only
  int axes = 2;                    // 3: read from a 3-D array (even of one plane)
  std::vector<std::uint8_t> mask;  // depth x height x width, row-major, 0 or 1
  std::string name;                // the file it came from, for messages
  bool empty() const noexcept { return mask.empty(); }
  std::int64_t count() const noexcept;  // the samples of the window (the ones)
};
// Reads a 2-D or 3-D .npy of bool or integers, 0 and 1 only, odd sides up to 4095, at least one 1;
// throws a usage Error saying what is wrong with the file.
Footprint load_footprint(const std::string& path);

enum class MorphKind { minimum, maximum, opening, closing, white_tophat, black_tophat };

struct MorphParams {
  MorphKind kind = MorphKind::minimum;
  std::int64_t height = 3, width = 3;  // the window, rows x columns (1 or more each)
  BorderMode border = BorderMode::reflect;
  double border_value = 0;  // the constant border, converted to the image's type
  Footprint footprint;      // when given, the window (height and width are then its sides)
};

std::unique_ptr<Operation> make_morphology(const ImageSpec& input, const MorphParams& params);

// The sample of rank `rank` (0: the smallest) among the window's, as scipy.ndimage.rank_filter
// (median_filter: rank = H x W / 2; percentile_filter: see rank_of_percentile). u8 and 16-bit
// samples use sliding histograms (Huang; two levels for 16 bits; along the footprint's row runs
// for a footprint), other types select in the window. A window holding a NaN gives NaN.
struct RankParams {
  std::int64_t height = 3, width = 3;
  std::int64_t rank = 4;  // 0 .. height x width - 1
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  Footprint footprint;  // when given, the window; rank counts its ones only (as scipy's)
};
std::unique_ptr<Operation> make_rank(const ImageSpec& input, const RankParams& params);
// scipy.ndimage.percentile_filter's rank for percentile q (-100 to 100) of n samples.
std::int64_t rank_of_percentile(double q, std::int64_t n);

}  // namespace ooc
