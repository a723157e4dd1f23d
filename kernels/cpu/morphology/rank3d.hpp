// A volume's rank filters (median, percentile, rank of a D x H x W box) on the CPU: the window's
// samples as wires of a sorting network (Batcher's odd-even merge sort, padded to a power of two
// with the type's largest value), pruned to the comparators the wanted rank depends on, run on
// vectors of adjacent output samples at once. Exact: a network only moves samples. A NaN in the
// window gives NaN (its compare-exchange spreads it), -0 sorts below +0.
//
// A box at least two columns wide takes a shorter road (Rank3dPlan): the D x H samples of each
// column sorted once and shared by the W windows that hold the column, and two neighbouring
// windows sharing the merge of their W - 1 common columns (only the ranks either can need), each
// then finishing with its own column by a two-list selection. The same samples come out: every
// step selects under the same order.
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

// The shared-column road for windows of `rows` x `cols` samples and rank `rank`: every column's
// sorting network, then the merge of `cols` - 1 sorted columns pruned to the ranks [lo, hi] a
// window's rank can fall on once its own column joins (comparators known redundant from the order
// the merge has established so far, or touching a sample known to lie outside [lo, hi], left out).
struct Rank3dPlan {
  int rows = 0, cols = 0, rank = 0;
  std::vector<std::pair<int, int>> sort;  // on `rows` wires
  std::vector<int> sorted;                // sorted[i]: the wire of the i-th smallest after `sort`
  // On (cols - 1) x rows wires, list j's i-th smallest on wire j x rows + i.
  std::vector<std::pair<int, int>> merge;
  int lo = 0, hi = 0;
  std::vector<int> kept;  // kept[r - lo]: the wire of the merge's rank r
  // The compile-time tables (rank3d_sorts.hpp) that equal this plan's networks, found once: the
  // column sort's (25 or 9 wires; 0: none), and whether the merge and kept ranks are the 3x3x3
  // median's.
  int sort_table = 0;
  bool median27 = false;
};
// The plan for a box row (window_rows x cols, the network and wire of a rank_network), built once
// and kept; null where the plain network is the way (one column, too many wires, a row narrower
// than two pixels).
const Rank3dPlan* rank3d_plan(const Rank3dArgs& a);

// One output row; `scratch`: rank3d_scratch_bytes() bytes.
void rank3d_row(const Rank3dArgs& a, std::byte* scratch);
std::size_t rank3d_scratch_bytes(std::int64_t wires);

}  // namespace ooc::kernels
