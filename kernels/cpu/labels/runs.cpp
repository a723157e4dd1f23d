// Labeling of one band's runs (runs.hpp): a union-find over the runs, each row's runs joined to
// the touching runs of the row above, then the roots numbered in order.
#include "kernels/cpu/labels/runs.hpp"

namespace ooc::kernels {

void label_runs(BandRuns& r, bool diagonal) {
  const std::size_t n = r.runs();
  std::vector<std::uint32_t>& parent = r.label;
  parent.resize(n);
  for (std::size_t i = 0; i < n; ++i) parent[i] = static_cast<std::uint32_t>(i);
  std::uint32_t* p = parent.data();
  for (std::int64_t row = 1; row < r.rows(); ++row) {
    const auto u = static_cast<std::size_t>(row);
    for_touching(r, r.row_start[u], r.row_start[u + 1], r.x0.data(), r.x1.data(),
                 r.row_start[u - 1], r.row_start[u], diagonal,
                 [&](std::uint64_t i, std::uint64_t j) {
                   unite(p, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
                 });
  }
  // Every parent is below its child, so a run's parent already holds its component's number: the
  // roots, in index order (raster order of their first sample), are numbered 1, 2, ...
  std::uint32_t count = 0;
  for (std::size_t i = 0; i < n; ++i) p[i] = p[i] == i ? ++count : p[p[i]];
  r.count = count;
}

}  // namespace ooc::kernels
