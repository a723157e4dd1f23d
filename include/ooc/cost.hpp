// What an operation's kernels do to each sample, told to the cost model
// (src/engine/cost_model.cpp) instead of as times: operations describe their work, and every
// measured number lives in the model, where one benchmark run can be checked against all of them.
// --device auto (select_backend) and the 2-D convolution's choice between the direct sum and the
// FFT weigh it.
#pragma once

#include <vector>

namespace ooc {

struct Cost {
  enum class Kind {
    unknown,     // nothing known: the model's guess
    given,       // an operation outside the library that states its own times (cpu_ns, cuda_ns)
    pointwise,   // one read and one write per sample (scale, abs, clamp, threshold, convert)
    convert,     // make_convert's copy and type conversion (oocgen's output type)
    separable,   // a row pass then a column pass: taps = row taps + column taps
    conv2d,      // K x L weighted sum (taps) or overlap-save FFT tiles (fft_work), per backend
    minmax,      // minimum or maximum over a window_rows x window_cols window; footprint_runs
    rank,        // a selection among window_samples samples (median, percentile, rank)
    rank3d,      // a volume's rank window of window_samples samples (a box, or footprint_runs > 0)
    combine,     // stages' filtered copies combined with the input (dog, unsharp, background)
    morphology,  // two minmax stages fused, and a top-hat's difference (opening ... black-tophat)
    fused,       // a pass of several stages, one after the other on each band
    product,     // A^T (A X), A X, A^T X: columns = k, the columns of X
    histogram,   // counts of each value (equalize, first pass)
    lut,         // a table lookup per sample (equalize, second pass)
  };
  Kind kind = Kind::unknown;
  bool f64 = false;  // sums in double (separable, conv2d)
  double taps = 0;   // separable: row + column taps; conv2d: K x L
  // conv2d: butterfly passes per output sample of the FFT tiling (cpu::fft_work_per_sample) as the
  // CPU's vectorized KissFFT spends them (radix-3/5 stages and cache misses weighed), and as
  // cuFFT does (log2 of the points, no cache term: what its constant was fitted to); and which
  // backends take the FFT rather than the direct sum.
  double fft_work = 0, fft_work_cuda = 0;
  bool cpu_fft = false, cuda_fft = false;
  double window_rows = 0, window_cols = 0;  // minmax, rank: the window's rectangle
  double footprint_runs = 0;     // minmax with a footprint: runs of consecutive samples in its rows
  double footprint_lengths = 0;  // minmax with a footprint: the distinct lengths of those runs
  bool floating = false;         // minmax with a footprint: float samples (NaN-aware picks)
  double column_runs = 0;     // rank with a footprint: runs of consecutive samples in its columns
  double window_samples = 0;  // rank, minmax with a footprint: the samples a selection looks at
  bool histogram = false;     // rank: 8- and 16-bit integers, whose CPU kernels count values
  double key_bits = 0;        // rank on CUDA by a radix select: bits of its keys (32, 64), else 0
                              // (rank3d: the sample's bits, which the radix select passes over)
  bool wide = false;          // rank: 16-bit samples (two levels of counts)
  double columns = 0;         // product
  double cpu_ns = 0, cuda_ns = 0;  // given
  std::vector<Cost> stages;        // combine: the filters; morphology, fused: the stages in order
};

// Nanoseconds per input sample for one CPU thread, and for the kernels on one GPU. Estimates from
// the benchmarks, not promises.
double cpu_ns_per_sample(const Cost& cost);
double cuda_ns_per_sample(const Cost& cost);

}  // namespace ooc
