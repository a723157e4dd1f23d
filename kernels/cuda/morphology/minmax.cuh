// CUDA kernels of the minimum/maximum filters and the top-hat differences (van Herk as the CPU's,
// kernels/cpu/morphology/minmax.hpp, for windows longer than a few samples: the same samples
// combined in the same order, so the results are identical).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

struct MinMaxLaunch {
  bool max = false;
  const std::byte* in = nullptr;  // `rows` input rows (the window's rows), `in_stride` apart
  std::size_t in_stride = 0;
  std::int64_t first_row = 0;  // image row of input row 0 (constant-border rows are unset)
  std::int64_t image_height = 0;
  std::int64_t width = 0;
  int channels = 1;
  SampleType type = SampleType::f32;
  std::int64_t ly = 0, ry = 0, lx = 0, rx = 0;
  BorderMode border = BorderMode::reflect;
  double border_value = 0;
  std::byte* mid = nullptr;  // out_rows + ly + ry rows of the x pass, row_bytes apart
  // A footprint's row runs (van_herk::RowRun in the CPU's order), in device memory and the same
  // on the host, or none: the whole rectangle (two passes through mid). A footprint taken by
  // lengths (van_herk::by_lengths) needs mid for out_rows + ly + ry rows of width + lx + rx
  // samples; one taken output by output none.
  const void* runs = nullptr;
  const void* host_runs = nullptr;
  int run_count = 0;
  bool by_lengths = false;  // van_herk::by_lengths of the runs
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  std::int64_t out_rows = 0;
};
void minmax_band_async(const MinMaxLaunch& l, cudaStream_t stream);

// out = sign > 0 ? x - o : o - x, in `type` (integers wrap, as NumPy's subtract).
void tophat_difference_async(const std::byte* x, std::size_t x_stride, const std::byte* o,
                             std::size_t o_stride, std::byte* out, std::size_t out_stride,
                             std::int64_t rows, std::int64_t row_samples, SampleType type, int sign,
                             cudaStream_t stream);

struct MinMaxPolicy {
  static constexpr int kThreads = 256;
  static constexpr int kMaxBlocksY = 65535;
};

}  // namespace ooc::cuda
