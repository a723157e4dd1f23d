// What the label stage's merge keeps between bands (label.cpp): the runs of whole rows with their
// provisional labels that a later band joins to, which neighbours touch under a connectivity, and
// how many components an image can hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/image.hpp"

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

// The connectivity the label stage `at` takes: `given`, or scipy's default (4, 6 in 3-D). An
// image is a volume of one plane: a 3-D structure's plane (a (1, y, x) array) is its 4 or 8.
// `three_d`: a volume labelled in 3-D (not plane by plane under --planes).
inline int label_connectivity(std::optional<int> given, const ImageSpec& in, bool three_d,
                              const std::string& at) {
  int conn = given.value_or(three_d ? 6 : 4);
  if (!in.volume() && (conn == 6 || conn == 18 || conn == 26)) conn = conn == 6 ? 4 : 8;
  const bool ok = three_d ? (conn == 6 || conn == 18 || conn == 26) : (conn == 4 || conn == 8);
  if (!ok)
    throw Error(ErrorKind::usage,
                at + ": connectivity=" + std::to_string(conn) + " on " +
                    (three_d ? std::string("a volume must be 6, 18 or 26 (4 or 8 label each "
                                           "plane apart under --planes)")
                             : std::string(in.volume() ? "a volume's planes" : "an image") +
                                   " must be 4 or 8"));
  return conn;
}

// The most components an image of `in` can have: one every other sample where neighbours share
// a face (4, 6; 18 too, a bound), one a 2 x 2 (x 2) block where corners touch (8, 26); with
// --planes (`three_d` false on a volume) each plane's, numbers going on.
inline std::uint64_t most_components(const ImageSpec& in, int conn, bool three_d) {
  const auto half = [](std::int64_t n) { return static_cast<std::uint64_t>((n + 1) / 2); };
  const auto w = static_cast<std::uint64_t>(in.width), h = static_cast<std::uint64_t>(in.height);
  const auto d = static_cast<std::uint64_t>(in.depth);
  if (conn == 8) return half(in.width) * half(in.height) * d;
  if (conn == 26) return half(in.width) * half(in.height) * half(in.depth);
  return three_d ? half(in.pixels()) : (w * h + 1) / 2 * d;
}

}  // namespace ooc::detail
