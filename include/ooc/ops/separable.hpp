// Separable convolution (row pass along x, then column pass along y) as a pipeline Operation.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/cost.hpp"
#include "ooc/engine.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/precision.hpp"

namespace ooc {

struct SeparableParams {
  SeparableFilter filter;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::optional<SampleType> out_type;  // default: the input type
  Precision precision = Precision::automatic;
  // automatic: the FFT where the cost model finds it faster on the CPU (separable_costs); direct:
  // the weighted sums; fft: 1-D overlap-save FFTs along rows, then columns, on the CPU. CUDA runs
  // the weighted sums whatever the method.
  ConvMethod method = ConvMethod::automatic;
};

// What ConvMethod::automatic weighs for the CPU, in nanoseconds per output sample of one thread
// (the cost model's, ooc/cost.hpp), and what it picked; --stats and oocinfo show the pick.
struct SeparableCosts {
  double cpu_direct = 0, cpu_fft = 0;  // inf: not possible
  bool cpu_uses_fft = false;
  // CUDA: the direct kernels, or (radii beyond the kernels specialized on the radius) the 2-D
  // FFT of the taps' outer product on tiles of the CPU's block lengths (so both grids are one).
  double cuda_direct = 0, cuda_fft = 0;  // inf: not possible
  bool cuda_uses_fft = false;
  std::int64_t block_rows = 0, block_cols = 0;  // the FFT's lengths along y and x (0: none fits)
  Cost work;
};
SeparableCosts separable_costs(const ImageSpec& input, const SeparableParams& params);

// `params` with taps longer than the image's axes folded onto them by the border rule, as
// make_separable runs them (the same sums up to the folded taps' rounding): what a checker sizes
// the run's method and error from.
SeparableParams folded_separable(const SeparableParams& params, const ImageSpec& input);

// The operation: the CPU kernels of kernels/cpu, and the CUDA ones of kernels/cuda where this
// build has CUDA.
std::unique_ptr<Operation> make_separable(const ImageSpec& input, const SeparableParams& params,
                                          const EngineOptions& options = {});

}  // namespace ooc
