// The accumulator type of the weighted sums (separable and 2-D convolutions, pipelines):
// --precision and the rule that picks it.
#pragma once

#include <string>

#include "ooc/image.hpp"

namespace ooc {

enum class Precision { automatic, f32, f64 };

// f64 when the input or the output is f64, u32 or i32 (f32 cannot hold 32-bit integers to within
// 1); f32 otherwise. --precision overrides.
bool accumulates_in_f64(SampleType input, SampleType output, Precision precision) noexcept;
// "auto", "f32" or "f64" (--precision); a usage Error naming --precision for anything else.
Precision parse_precision(const std::string& text);

}  // namespace ooc
