// The label stage run in parts (MPI ranks, each labelling its rows): after its first pass, each
// part's table holds its own components; the parts exchange their first and last rows' runs,
// join the components that touch across the cuts, and number every component as one process
// would (raster order of first samples), so the second pass writes the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ooc::detail {

// Element-wise sums over the processes, the same on every one (ProcessGroup::sum).
using LabelSumFn = std::function<void(std::vector<std::uint64_t>&)>;

// A row's runs: columns [x0[i], x1[i]) of root label root[i] (an index into the part's table).
struct FaceRuns {
  std::vector<std::uint32_t> x0, x1;
  std::vector<std::uint64_t> root;
};

struct LabelPart {
  std::int64_t first_row = 0;  // stacked rows [first_row, first_row + rows) are this part's
  std::int64_t rows = 0;
  std::int64_t total_rows = 0;  // the image's stacked rows
  std::int64_t plane_rows = 0;  // rows of a plane: parts cut at a plane's start do not touch
  bool diagonal = false;        // 8-connected rows
  FaceRuns top, bottom;         // the part's first and last rows
};

// `t` holds the part's `n` provisional labels, each pointing at its root (t[r] == r for a root,
// roots in raster order of first samples). Rewrites every entry to its final label over the whole
// image and returns the image's count of components; every part must call it (collective).
std::uint64_t finish_label_parts(const LabelPart& part, std::uint64_t* t, std::uint64_t n,
                                 const LabelSumFn& sum);

}  // namespace ooc::detail
