// Connected components of a band of rows, as runs of foreground samples (non-zero): the math of
// the label stage's two passes (src/ops/labels/label.cpp). A band's components are numbered in
// raster order of each one's first sample, which is scipy.ndimage.label's numbering; the engine's
// merge of the bands keeps that order, because a component's first run is its smallest index.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Bit i of the result: whether sample i of the 64 at p is foreground (!= 0, so -0.0 is
// background and NaN foreground, as NumPy's `a != 0`); a branch-free loop the compiler vectorizes.
template <class T>
std::uint64_t foreground_bits(const T* p, int n = 64) {
  std::uint64_t m = 0;
  for (int i = 0; i < n; ++i) m |= static_cast<std::uint64_t>(p[i] != T(0)) << i;
  return m;
}

#if defined(__SSE2__)
// Bytes (masks, the common input): 16 at a time by SSE2, x86-64's baseline.
inline std::uint64_t foreground_bits(const std::uint8_t* p) {
  const __m128i zero = _mm_setzero_si128();
  std::uint64_t m = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    m |= static_cast<std::uint64_t>(
             static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero))))
         << (16 * k);
  }
  return ~m;
}
#endif

// Appends the runs of one row of `width` samples. The row is read 64 samples at a time as a
// mask of foreground bits, so that a block without a change of state costs one test, and each
// run two bit scans: the loop that compared sample by sample set the pace of both passes.
template <class T>
void append_row_runs(const T* row, std::int64_t width, BandRuns& r) {
  const std::size_t most = r.x0.size() + static_cast<std::size_t>((width + 1) / 2);
  if (r.x0.capacity() < most) {  // at most every other sample a run; grown geometrically
    r.x0.reserve(std::max(most, 2 * r.x0.capacity()));
    r.x1.reserve(r.x0.capacity());
  }
  bool in = false;
  std::uint64_t start = 0;
  auto block = [&](std::uint64_t x, std::uint64_t w) {
    std::uint64_t look = in ? ~w : w;
    while (look) {
      const int b = __builtin_ctzll(look);
      if (!in) {
        start = x + static_cast<std::uint64_t>(b);
      } else {
        r.x0.push_back(static_cast<std::uint32_t>(start));
        r.x1.push_back(static_cast<std::uint32_t>(x + static_cast<std::uint64_t>(b)));
      }
      in = !in;
      look = (in ? ~w : w) & (~std::uint64_t{0} << b);
    }
  };
  std::int64_t x = 0;
  for (; x + 64 <= width; x += 64) {
    const std::uint64_t w = foreground_bits(row + x);
    if (w == (in ? ~std::uint64_t{0} : 0)) continue;  // no change of state
    block(static_cast<std::uint64_t>(x), w);
  }
  // The rest, the samples past the row's end background (an open run ends at the width).
  block(static_cast<std::uint64_t>(x), foreground_bits(row + x, static_cast<int>(width - x)));
  r.row_start.push_back(r.x0.size());
}

// Appends the runs of a row of labels (0: the background) with their labels, as a band's runs
// after label_runs: a stretch of one label (within a row, touching samples are one component).
inline void append_label_runs(const std::uint32_t* row, std::int64_t width, BandRuns& r) {
  for (std::int64_t x = 0; x < width;) {
    const std::uint32_t v = row[x];
    if (v == 0) {
      ++x;
      continue;
    }
    const std::int64_t x0 = x;
    while (x < width && row[x] == v) ++x;
    r.x0.push_back(static_cast<std::uint32_t>(x0));
    r.x1.push_back(static_cast<std::uint32_t>(x));
    r.label.push_back(v);
  }
  r.row_start.push_back(r.x0.size());
}

// Calls f(i, j) for every run i of [i, i_end) and run j of [j, j_end) of two rows (each sorted;
// a(i) and b(j) give a run's first column and its end) that touch: share a column, or with
// `diagonal` also meet at a corner.
template <class A, class B, class F>
void merge_touching(std::uint64_t i, std::uint64_t i_end, A&& a, std::uint64_t j,
                    std::uint64_t j_end, B&& b, bool diagonal, F&& f) {
  const std::uint64_t d = diagonal ? 1 : 0;
  while (i < i_end && j < j_end) {
    const auto [as, ae] = a(i);
    const auto [bs, be] = b(j);
    if (std::uint64_t{ae} + d <= bs) {
      ++i;
    } else if (std::uint64_t{be} + d <= as) {
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

// merge_touching over runs [a0, a1) of `a` and [b0, b1) held as bx0/bx1.
template <class F>
void for_touching(const BandRuns& a, std::uint64_t a0, std::uint64_t a1, const std::uint32_t* bx0,
                  const std::uint32_t* bx1, std::uint64_t b0, std::uint64_t b1, bool diagonal,
                  F&& f) {
  merge_touching(
      a0, a1,
      [&](std::uint64_t i) {
        return std::pair{a.x0[i], a.x1[i]};
      },
      b0, b1,
      [&](std::uint64_t j) {
        return std::pair{bx0[j], bx1[j]};
      },
      diagonal, f);
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
