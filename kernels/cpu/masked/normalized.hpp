// Normalized convolution of one band (issue 48, nodata): out = sum(k x m) / sum(k m) over each
// window's valid samples (m: 0 on holes, 1 elsewhere), separable (row pass then column pass, each
// padded as scipy pads it) or with a 2-D kernel (one pass, padded once). The sums run through the
// unmasked kernels' vectorized weighted sums (kernels/cpu/convolution/vec_sum.hpp) in the same
// accumulator; the weights are summed only in chunks of columns whose window holds a hole or the
// constant border's row, elsewhere they are the all-valid constant, which the same sums give
// bit for bit: an output never depends on where a band, a strip or a chunk starts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/convolution/band_args.hpp"

namespace ooc::kernels::masked {

struct NormalizedArgs : BandArgs {
  // Separable: row taps (2 rx + 1) and column taps (2 ry + 1), correlation order. 2-D: taps2d
  // (2 ry + 1 rows of 2 rx + 1, correlation order, row-major) and no row/column taps.
  const double* row_taps = nullptr;
  const double* col_taps = nullptr;
  const double* taps2d = nullptr;
  std::int64_t rx = 0, ry = 0;
  double nodata = 0;      // NaN: NaN only
  double min_weight = 0;  // the least fraction of the window's |taps| on valid samples
  bool fill = false;      // holes get their neighbours' value (else they stay holes)
  bool f64 = false;       // accumulate in double (accumulates_in_f64's rule)
  std::int64_t strip_samples = 512;
};

// Filters one band; splits its column strips over TBB threads. An output is nodata where the
// |taps| on valid samples sum to 0 or below min_weight of all |taps|, where the weights sum to 0,
// and where its own input sample is a hole unless fill.
void normalized_band(const NormalizedArgs& args);
// Scratch bytes one thread takes for a band of args.out_rows rows of args.width pixels.
std::size_t normalized_scratch_bytes(const NormalizedArgs& args);

}  // namespace ooc::kernels::masked
