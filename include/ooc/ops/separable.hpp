// Separable convolution (row pass along x, then column pass along y) as a pipeline Operation.
#pragma once

#include <memory>
#include <optional>
#include <string>
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

// f64 when the input or the output is f64, u32 or i32 (f32 cannot hold 32-bit integers to within
// 1); f32 otherwise. --precision overrides.
bool accumulates_in_f64(SampleType input, SampleType output, Precision precision) noexcept;

std::unique_ptr<Operation> make_separable_cpu(const ImageSpec& input, const SeparableParams& params,
                                              const PipelineOptions& options);

// The CUDA backend: slots spread round robin over `devices`, each with its own stream. Throws a
// device Error when the build has no CUDA or a device is not usable.
std::unique_ptr<Operation> make_separable_cuda(const ImageSpec& input,
                                               const SeparableParams& params,
                                               const PipelineOptions& options,
                                               const std::vector<int>& devices);

// Number of usable CUDA devices (0 in a build without CUDA, or without a driver or device).
int cuda_device_count() noexcept;
// "NVIDIA H100 80GB HBM3", or an empty string.
std::string cuda_device_name(int device);

}  // namespace ooc
