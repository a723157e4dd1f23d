// Connected components of a band of rows, as runs of foreground samples (non-zero): the math of
// the label stage's two passes (src/ops/labels/label.cpp). A band's components are numbered in
// raster order of each one's first sample, which is scipy.ndimage.label's numbering; the engine's
// merge of the bands keeps that order, because a component's first run is its smallest index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ooc::kernels {

// Runs of a band: run i covers columns [x0[i], x1[i]) of band row r for
// row_start[r] <= i < row_start[r + 1]. After label_runs, label[i] is run i's component in the
// band, from 1 to count.
struct BandRuns {
  std::vector<std::uint64_t> row_start{0};
  std::vector<std::uint32_t> x0, x1;
  std::vector<std::uint32_t> label;
  std::uint32_t count = 0;

  void clear() {
    row_start.assign(1, 0);
    x0.clear();
    x1.clear();
    label.clear();
    count = 0;
  }
  std::int64_t rows() const { return static_cast<std::int64_t>(row_start.size()) - 1; }
  std::size_t runs() const { return x0.size(); }
};

// Appends the runs of one row of `width` samples (foreground: != 0, so -0.0 is background and NaN
// foreground, as NumPy's `a != 0`).
template <class T>
void append_row_runs(const T* row, std::int64_t width, BandRuns& r) {
  std::int64_t x = 0;
  while (x < width) {
    while (x < width && row[x] == T(0)) ++x;
    if (x == width) break;
    const std::int64_t s = x;
    while (x < width && row[x] != T(0)) ++x;
    r.x0.push_back(static_cast<std::uint32_t>(s));
    r.x1.push_back(static_cast<std::uint32_t>(x));
  }
  r.row_start.push_back(r.x0.size());
}

// Calls f(i, j) for every run i of [a0, a1) and run j of [b0, b1) (runs of two rows, each sorted)
// that touch: share a column, or with `diagonal` also meet at a corner.
template <class F>
void for_touching(const BandRuns& a, std::uint64_t a0, std::uint64_t a1, const std::uint32_t* bx0,
                  const std::uint32_t* bx1, std::uint64_t b0, std::uint64_t b1, bool diagonal,
                  F&& f) {
  const std::uint32_t d = diagonal ? 1 : 0;
  std::uint64_t i = a0, j = b0;
  while (i < a1 && j < b1) {
    const std::uint32_t as = a.x0[i], ae = a.x1[i], bs = bx0[j], be = bx1[j];
    if (ae + d <= bs) {
      ++i;
    } else if (be + d <= as) {
      ++j;
    } else {
      f(i, j);
      if (ae < be)
        ++i;
      else
        ++j;
    }
  }
}

// Numbers the components of the runs (label, count); `diagonal`: 8-connected rows, else 4.
void label_runs(BandRuns& r, bool diagonal);

// Root of x in a union-find table whose roots are the smallest member (parents point down), with
// path halving.
template <class I>
I find_root(I* parent, I x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

// Joins the sets of a and b; the root is the smaller, so that every parent is below its child.
template <class I>
void unite(I* parent, I a, I b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a < b)
    parent[b] = a;
  else if (b < a)
    parent[a] = b;
}

}  // namespace ooc::kernels
