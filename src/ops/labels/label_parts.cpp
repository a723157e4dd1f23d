// The parts' merge of the label stage (label_parts.hpp). Everything goes through sums: a bit per
// row where a part begins gives every part the order of all of them; then each part's counts,
// then its face runs, each in its own place of a vector the others leave at zero. Every part then
// joins the same face roots the same way, so they agree on the numbering without a leader.
#include "ops/labels/label_parts.hpp"

#include <algorithm>
#include <utility>

#include "kernels/cpu/labels/runs.hpp"

namespace ooc::detail {

namespace {

// A component's root as the parts know it: its part and its rank among the part's roots. Their
// order is the order of the roots' provisional labels over the whole image.
using Key = std::pair<std::uint64_t, std::uint64_t>;

// Calls f(i, j) for each run i of a and j of b (start, end, label triples) that touch (b the row
// under a).
template <class F>
void touching(const std::uint64_t* a, std::uint64_t na, const std::uint64_t* b, std::uint64_t nb,
              bool diagonal, F&& f) {
  kernels::merge_touching(
      0, na,
      [&](std::uint64_t i) {
        return std::pair{a[3 * i], a[3 * i + 1]};
      },
      0, nb,
      [&](std::uint64_t j) {
        return std::pair{b[3 * j], b[3 * j + 1]};
      },
      diagonal, f);
}

}  // namespace

std::uint64_t finish_label_parts(const LabelPart& part, std::uint64_t* t, std::uint64_t n,
                                 const LabelSumFn& sum) {
  // Where every part begins (distinct rows: the sum of the bits is their union).
  std::vector<std::uint64_t> starts(static_cast<std::size_t>((part.total_rows + 63) / 64), 0);
  starts[static_cast<std::size_t>(part.first_row / 64)] |= std::uint64_t{1}
                                                           << (part.first_row % 64);
  sum(starts);
  std::vector<std::int64_t> begin;
  for (std::size_t w = 0; w < starts.size(); ++w)
    for (std::uint64_t bits = starts[w]; bits; bits &= bits - 1)
      begin.push_back(static_cast<std::int64_t>(w * 64) + __builtin_ctzll(bits));
  const std::size_t parts = begin.size();
  const auto me = static_cast<std::size_t>(
      std::lower_bound(begin.begin(), begin.end(), part.first_row) - begin.begin());

  // This part's face roots, ranked among its roots (a scan of the table, in order).
  std::vector<std::uint64_t> face;
  for (const FaceRuns* f : {&part.top, &part.bottom})
    face.insert(face.end(), f->root.begin(), f->root.end());
  std::sort(face.begin(), face.end());
  face.erase(std::unique(face.begin(), face.end()), face.end());
  std::vector<std::uint64_t> face_rank(face.size());
  std::uint64_t roots = 0;
  for (std::uint64_t p = 0, k = 0; p < n; ++p) {
    if (t[p] != p) continue;
    if (k < face.size() && face[k] == p) face_rank[k++] = roots;
    ++roots;
  }
  auto rank_of = [&](std::uint64_t root) {
    return face_rank[static_cast<std::size_t>(std::lower_bound(face.begin(), face.end(), root) -
                                              face.begin())];
  };

  // Each part's roots and face runs, then the runs: (x0, x1, root's rank), top row then bottom.
  std::vector<std::uint64_t> sizes(3 * parts, 0);
  sizes[3 * me] = roots;
  sizes[3 * me + 1] = part.top.x0.size();
  sizes[3 * me + 2] = part.bottom.x0.size();
  sum(sizes);
  std::vector<std::uint64_t> at(parts + 1, 0);
  for (std::size_t j = 0; j < parts; ++j)
    at[j + 1] = at[j] + 3 * (sizes[3 * j + 1] + sizes[3 * j + 2]);
  std::vector<std::uint64_t> runs(static_cast<std::size_t>(at[parts]), 0);
  std::uint64_t* mine = runs.data() + at[me];
  for (const FaceRuns* f : {&part.top, &part.bottom})
    for (std::size_t i = 0; i < f->x0.size(); ++i) {
      *mine++ = f->x0[i];
      *mine++ = f->x1[i];
      *mine++ = rank_of(f->root[i]);
    }
  sum(runs);

  // Every face root of every part, in the image's order, joined across each cut that is not a
  // plane's start (the same rule as between two bands).
  std::vector<Key> keys;
  for (std::size_t j = 0; j < parts; ++j)
    for (std::uint64_t i = at[j]; i < at[j + 1]; i += 3) keys.emplace_back(j, runs[i + 2]);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  auto node = [&](std::size_t j, std::uint64_t rank) {
    return static_cast<std::uint64_t>(std::lower_bound(keys.begin(), keys.end(), Key(j, rank)) -
                                      keys.begin());
  };
  std::vector<std::uint64_t> parent(keys.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  for (std::size_t j = 0; j + 1 < parts; ++j) {
    if (begin[j + 1] % part.plane_rows == 0) continue;
    const std::uint64_t* bottom = runs.data() + at[j] + 3 * sizes[3 * j + 1];
    const std::uint64_t* top = runs.data() + at[j + 1];
    touching(bottom, sizes[3 * j + 2], top, sizes[3 * (j + 1) + 1], part.diagonal,
             [&](std::uint64_t a, std::uint64_t b) {
               kernels::unite(parent.data(), node(j, bottom[3 * a + 2]),
                              node(j + 1, top[3 * b + 2]));
             });
  }

  // A root joined to an earlier one is no new component: each part's new components are its
  // roots less those, numbered on from the parts before it.
  std::vector<std::uint64_t> joined(parts, 0), before(parts + 1, 0);
  std::vector<bool> is_joined(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (kernels::find_root(parent.data(), static_cast<std::uint64_t>(i)) != i) {
      is_joined[i] = true;
      ++joined[static_cast<std::size_t>(keys[i].first)];
    }
  for (std::size_t j = 0; j < parts; ++j) before[j + 1] = before[j] + sizes[3 * j] - joined[j];
  // Final labels of the face roots, in order (a joined one takes its root's, numbered before).
  std::vector<std::uint64_t> label(keys.size());
  for (std::size_t i = 0, j = 0, gone = 0; i < keys.size(); ++i) {
    if (keys[i].first != j) {
      j = static_cast<std::size_t>(keys[i].first);
      gone = 0;
    }
    if (is_joined[i]) {
      label[i] = label[kernels::find_root(parent.data(), static_cast<std::uint64_t>(i))];
      ++gone;
    } else {
      label[i] = before[j] + keys[i].second - gone + 1;
    }
  }

  // This part's table: every root its label, every other entry its root's.
  const std::uint64_t first = node(me, 0);
  std::uint64_t k = first, gone = 0, rank = 0;
  for (std::uint64_t p = 0; p < n; ++p) {
    if (t[p] != p) {
      t[p] = t[t[p]];
      continue;
    }
    if (k < keys.size() && keys[k].first == me && keys[k].second == rank) {
      t[p] = label[k];
      if (is_joined[k++]) ++gone;
    } else {
      t[p] = before[me] + rank - gone + 1;
    }
    ++rank;
  }
  return before[parts];
}

}  // namespace ooc::detail
