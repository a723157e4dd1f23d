// The method= parameter of the convolution family's stages (separable.cpp, conv2d.cpp): auto,
// direct or fft, named in a usage error by the stage that gave it.
#pragma once

#include "ooc/error.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ops/stage_registry.hpp"

namespace ooc::detail {

inline ConvMethod method_of(const StageArgs& a) {
  try {
    return parse_conv_method(a.text("method"));
  } catch (const Error&) {
    throw Error(ErrorKind::usage,
                a.at() + ": method must be auto, direct or fft, got '" + a.text("method") + "'");
  }
}

}  // namespace ooc::detail
