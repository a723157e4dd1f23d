// What the label stage's merge keeps between bands (label.cpp): the runs of whole rows with their
// provisional labels that a later band joins to, and which neighbours touch under a connectivity.
#pragma once

#include <cstdint>
#include <vector>

namespace ooc::detail {

// Runs of whole rows with their provisional labels: the rows a later band joins to.
struct RowRuns {
  std::vector<std::uint64_t> row_start{0};
  std::vector<std::uint32_t> x0, x1;
  std::vector<std::uint64_t> id;
  std::int64_t first_row = 0;  // image row of row 0

  void clear(std::int64_t first) {
    row_start.assign(1, 0);
    x0.clear();
    x1.clear();
    id.clear();
    first_row = first;
  }
  std::int64_t rows() const { return static_cast<std::int64_t>(row_start.size()) - 1; }
  bool has(std::int64_t y) const {
    return y >= first_row && y - first_row + 1 < static_cast<std::int64_t>(row_start.size());
  }
};

// Which neighbours touch: in the plane (8: diagonals too, else 4), and across planes, the rows
// of the plane before (dy) with or without their diagonal columns.
struct Connectivity {
  int n = 4;
  bool diagonal = false;  // in the plane
  bool across = false;    // a volume in 3-D
  struct Across {
    int dy;
    bool diagonal;
  };
  std::vector<Across> before;

  explicit Connectivity(int c) : n(c) {
    diagonal = c == 8 || c == 18 || c == 26;
    across = c == 6 || c == 18 || c == 26;  // 8 is an image's
    if (c == 6) before = {{0, false}};
    if (c == 18) before = {{-1, false}, {0, true}, {1, false}};
    if (c == 26) before = {{-1, true}, {0, true}, {1, true}};
  }
};

}  // namespace ooc::detail
