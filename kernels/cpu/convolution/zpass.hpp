// A volume's filters along z, on the CPU: each output row from the same row of 2R + 1 planes,
// as a weighted sum (the z pass of a separable 3-D filter) or a minimum or maximum (the z pass of
// a box). The x and y passes are the 2-D kernels'; scipy.ndimage filters a volume axis by axis,
// z first, which is the order a pipeline runs these in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ooc/image.hpp"

namespace ooc::kernels {

enum class ZPassKind { sum, minimum, maximum };

struct ZPassArgs {
  ZPassKind kind = ZPassKind::sum;
  // The planes' rows, one per tap: null is a plane of the constant border (`border_value`).
  const std::byte* const* rows = nullptr;
  std::int64_t planes = 0;
  const double* taps = nullptr;  // sum: planes weights, plane k weighted by taps[k]
  SampleType in_type = SampleType::f32;
  SampleType out_type = SampleType::f32;  // sum: f32 or f64; minimum, maximum: in_type
  std::int64_t samples = 0;               // a row's samples (width x channels)
  double border_value = 0;
  std::byte* out = nullptr;
};

// One output row. Sums run plane by plane, each sample's terms in plane order with one rounding
// each (FMA where the build has it), in the output's type; minimum and maximum pick as the 2-D
// kernels do (kernels/cpu/morphology/minmax.hpp: a NaN wins, -0 below +0).
void zpass_row(const ZPassArgs& a);

}  // namespace ooc::kernels
