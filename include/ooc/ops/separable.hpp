// Separable convolution (row pass along x, then column pass along y) as a pipeline Operation.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/filter.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {

enum class Precision { automatic, f32, f64 };
enum class Device { automatic, cpu, cuda };

struct SeparableParams {
  SeparableFilter filter;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::optional<SampleType> out_type;  // default: the input type
  Precision precision = Precision::automatic;
};

// f64 for f64 data and for 32-bit integers (f32 cannot hold them to within 1); f32 otherwise.
bool accumulates_in_f64(SampleType input, Precision precision) noexcept;

std::unique_ptr<Operation> make_separable_cpu(const ImageSpec& input, const SeparableParams& params,
                                              const PipelineOptions& options);

}  // namespace ooc
