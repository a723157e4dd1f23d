// A volume's rank filters (median, percentile, rank of a D x H x W box) on the CPU: the window's
// samples as wires of a sorting network (Batcher's odd-even merge sort, padded to a power of two
// with the type's largest value), pruned to the comparators the wanted rank depends on, run on
// vectors of adjacent output samples at once. Exact: a network only moves samples. A NaN in the
// window gives NaN (its compare-exchange spreads it), -0 sorts below +0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ooc/image.hpp"

namespace ooc::kernels {

// The comparators (lo, hi) among `n` wires that put their `rank`-th smallest on wire *out_wire, in
// order (a sorting network of the next power of two, the padding's comparators taken out).
std::vector<std::pair<int, int>> rank_network(int n, int rank, int* out_wire);
// The most samples a window may have (its network's wires: the next power of two).
inline constexpr int kMaxRank3dSamples = 1024;

struct Rank3dArgs {
  // The window's rows, each padded by the border rule to (width + cols - 1) pixels of `channels`
  // samples: wire w of output sample s is rows[w / cols][s + (w % cols) x channels].
  const std::byte* const* rows = nullptr;
  std::int64_t window_rows = 0;  // planes x rows of the window
  std::int64_t cols = 0;         // the window's columns
  std::int64_t samples = 0;      // output samples of the row (width x channels)
  int channels = 1;
  SampleType type = SampleType::f32;
  std::int64_t out_wire = 0;                                  // rank_network's, for the rank wanted
  const std::vector<std::pair<int, int>>* network = nullptr;  // rank_network(wires, rank)
  std::byte* out = nullptr;
};

// One output row; `scratch`: rank3d_scratch_bytes() bytes.
void rank3d_row(const Rank3dArgs& a, std::byte* scratch);
std::size_t rank3d_scratch_bytes(std::int64_t wires);

}  // namespace ooc::kernels
