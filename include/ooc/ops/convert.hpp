// Copy or convert an image's sample type (integers rounded to nearest, ties to even, and
// saturated; NaN becomes 0), band by band: what oocgen writes files with.
#pragma once

#include <memory>

#include "ooc/engine.hpp"

namespace ooc {

std::unique_ptr<Operation> make_convert(const ImageSpec& input, SampleType out_type);

}  // namespace ooc
