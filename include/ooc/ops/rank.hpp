// Minimum and maximum filters over a rectangle, and the grey morphology built from them
// (opening, closing, white and black top-hat), with scipy.ndimage's semantics
// (minimum_filter, maximum_filter, grey_opening, grey_closing, white_tophat, black_tophat with
// `size`): the same window origin for even sizes, the same borders, exact results in the input's
// type. The CPU runs van Herk / Gil-Werman per axis (about three comparisons a sample whatever
// the size).
#pragma once

#include <cstdint>
#include <memory>

#include "ooc/border.hpp"
#include "ooc/image.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {

enum class MorphKind { minimum, maximum, opening, closing, white_tophat, black_tophat };

struct MorphParams {
  MorphKind kind = MorphKind::minimum;
  std::int64_t height = 3, width = 3;  // the window, rows x columns (1 or more each)
  BorderMode border = BorderMode::reflect;
  double border_value = 0;  // the constant border, converted to the image's type
};

std::unique_ptr<Operation> make_morphology(const ImageSpec& input, const MorphParams& params);

// The sample of rank `rank` (0: the smallest) among the window's, as scipy.ndimage.rank_filter
// (median_filter: rank = H x W / 2; percentile_filter: see rank_of_percentile). u8 and 16-bit
// samples use sliding histograms (Huang; two levels for 16 bits), other types select in the
// window. A window holding a NaN gives NaN. CPU only for now.
struct RankParams {
  std::int64_t height = 3, width = 3;
  std::int64_t rank = 4;  // 0 .. height x width - 1
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
};
std::unique_ptr<Operation> make_rank(const ImageSpec& input, const RankParams& params);
// scipy.ndimage.percentile_filter's rank for percentile q (-100 to 100) of n samples.
std::int64_t rank_of_percentile(double q, std::int64_t n);

}  // namespace ooc
