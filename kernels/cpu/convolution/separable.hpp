// CPU kernels of the separable convolution: one band, row pass then column pass, in column strips
// so that the row-pass result of a strip stays in cache until the column pass consumes it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "band_args.hpp"

namespace ooc::kernels {

// rows: out_rows + 2 * ry input rows.
struct SeparableArgs : BandArgs {
  const double* row_taps = nullptr;  // 2 * rx + 1, correlation order
  std::int64_t rx = 0;
  const double* col_taps = nullptr;  // 2 * ry + 1, correlation order
  std::int64_t ry = 0;
  std::int64_t strip_samples = 512;
  bool f64 = false;  // accumulate in double
};

// Filters one band; splits the strips over TBB threads.
void separable_band(const SeparableArgs& args);
// Scratch bytes one thread needs for a band of `out_rows` rows (for the memory plan).
std::size_t separable_scratch_bytes(const SeparableArgs& args);
// Which instruction set the kernels were dispatched to: "avx2+fma" or "baseline".
const char* separable_isa();
// Whether the vector sums round as the CUDA kernels' do (a plain first product, then one fma a
// tap): every instruction set but the baseline.
bool sums_fma();

}  // namespace ooc::kernels
