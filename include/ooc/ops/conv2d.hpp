// Non-separable 2-D convolution with the semantics of scipy.ndimage.convolve (the kernel is
// flipped; the border rule along both axes), any odd K x L kernel of float64 taps. A kernel of
// rank 1 runs through the separable filter instead, and its description says so.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/filter.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {

// A 2-D kernel in convolution order, as given: rows x cols taps, row major.
struct Kernel2d {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> taps;
  std::string name;  // where it came from: a file, or the built-in's name
};

// --kernel: a text file (rows of numbers; commas or spaces; '#' comments), a 2-D .npy file
// (f4 or f8), or a built-in: box:N (N x N mean), gaussian2d:SIGMA (radius ceil(3 sigma)),
// laplace (3 x 3, 4-neighbour), sobel-x, sobel-y (3 x 3). Throws a usage Error for an even,
// empty, ragged or non-finite kernel, or one whose taps would not fit in `mem_limit`.
Kernel2d parse_kernel(const std::string& text, std::size_t mem_limit);

// The kernel as an outer product col x row^T, when it is one within float64 rounding.
std::optional<SeparableFilter> separable_factors(const Kernel2d& kernel);

struct Conv2dParams {
  Kernel2d kernel;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::optional<SampleType> out_type;  // default: the input type
  Precision precision = Precision::automatic;
};

std::unique_ptr<Operation> make_conv2d(const ImageSpec& input, const Conv2dParams& params,
                                       const PipelineOptions& options = {});

}  // namespace ooc
