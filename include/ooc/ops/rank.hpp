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

}  // namespace ooc
