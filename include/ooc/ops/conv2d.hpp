// Non-separable 2-D convolution with the semantics of scipy.ndimage.convolve (the kernel is
// flipped; the border rule along both axes), any odd K x L kernel of float64 taps. A kernel of
// rank 1 runs through the separable filter instead, and its description says so. Large kernels
// run as an overlap-save FFT convolution (a plan decision: ConvMethod), with the same semantics.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/engine.hpp"
#include "ooc/filter.hpp"
#include "ooc/precision.hpp"

namespace ooc {

// A 2-D kernel in convolution order, as given: rows x cols taps, row major.
struct Kernel2d {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> taps;
  std::string name;  // where it came from: a file, or the built-in's name
  // A volume's 3-D kernel (a .npy of 3 axes): planes x rows x cols taps, row major. A (K, L, 1)
  // array is read as the K x L kernel of an image (one channel), and on a volume as K planes of
  // L x 1 (`one_column`).
  std::int64_t planes = 1;
  bool axes3 = false;
  bool one_column = false;
};

// --kernel: a text file (rows of numbers; commas or spaces; '#' comments), a 2-D .npy file
// (f4 or f8), or a built-in: box:N (N x N mean), gaussian2d:SIGMA (radius ceil(3 sigma)),
// laplace (3 x 3, 4-neighbour), sobel-x, sobel-y (3 x 3). Throws a usage Error for an even,
// empty, ragged or non-finite kernel, or one whose taps would not fit in `mem_limit`.
Kernel2d parse_kernel(const std::string& text, std::size_t mem_limit);

// The kernel as an outer product col x row^T, when it is one within float64 rounding.
std::optional<SeparableFilter> separable_factors(const Kernel2d& kernel);

// How the 2-D convolution is computed. automatic: the separable filter for a rank-1 kernel, else
// direct or FFT by a cost model of the kernel's size, the image's width and height, the
// precision and the backend (conv2d_costs()); direct: the K x L weighted sum; fft: overlap-save
// tiles through KissFFT (or FFTW3, a build option) on the CPU and cuFFT on CUDA, even for a
// rank-1 kernel. The FFT's results differ from the direct sum by rounding only, bounded by
// fft_error_bound().
enum class ConvMethod { automatic, direct, fft };
ConvMethod parse_conv_method(const std::string& text);  // auto, direct, fft; throws a usage Error
const char* name(ConvMethod m) noexcept;

// Bound on |FFT result - exact result| for one output sample, relative to sum |k| |x| over the
// kernel's support (or max|x| sum|k|): c log2(n m) u, u the unit roundoff of the transforms'
// type, for tiles of n x m points.
double fft_error_bound(std::int64_t n, std::int64_t m, bool f64) noexcept;

struct Conv2dParams {
  Kernel2d kernel;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::optional<SampleType> out_type;  // default: the input type
  Precision precision = Precision::automatic;
  ConvMethod method = ConvMethod::automatic;
};

// What ConvMethod::automatic weighs, in nanoseconds per output sample for one CPU thread and for
// one GPU (the cost model's, ooc/cost.hpp, for `work`), and what it picked (oocinfo and --stats
// show the description).
struct Conv2dCosts {
  double cpu_direct = 0, cpu_fft = 0, cuda_direct = 0, cuda_fft = 0;  // inf: not possible
  bool cpu_uses_fft = false, cuda_uses_fft = false;
  std::int64_t tile_rows = 0, tile_cols = 0;  // the FFT's transform size (0: none fits)
  Cost work;  // the kernel's taps and the FFT tiling's work (Cost::Kind::conv2d)
};
Conv2dCosts conv2d_costs(const ImageSpec& input, const Conv2dParams& params);

std::unique_ptr<Operation> make_conv2d(const ImageSpec& input, const Conv2dParams& params,
                                       const EngineOptions& options = {});
// A volume's convolution with a 3-D kernel (params.kernel.planes planes; conv3d.cpp): the sum
// over the kernel's planes of the 2-D convolutions of the matching input planes, each direct or
// through the FFT as the cost model picks for one plane, summed in the 2-D convolution's
// accumulator.
std::unique_ptr<Operation> make_conv3d(const ImageSpec& input, const Conv2dParams& params,
                                       const EngineOptions& options = {});

}  // namespace ooc
