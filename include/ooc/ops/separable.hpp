// Separable convolution (row pass along x, then column pass along y) as a pipeline Operation.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/filter.hpp"
#include "ooc/pipeline.hpp"
#include "ooc/precision.hpp"

namespace ooc {

struct SeparableParams {
  SeparableFilter filter;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::optional<SampleType> out_type;  // default: the input type
  Precision precision = Precision::automatic;
};

// The operation: the CPU kernels of kernels/cpu, and the CUDA ones of kernels/cuda where this
// build has CUDA.
std::unique_ptr<Operation> make_separable(const ImageSpec& input, const SeparableParams& params,
                                          const PipelineOptions& options = {});

}  // namespace ooc
