// The 3-D rank filter's network (rank3d.hpp) and the run-time choice between the builds of its
// row for each instruction set (rank3d_impl.cpp).
#include "rank3d.hpp"

#include <algorithm>

#include "kernels/cpu/cpu_features.hpp"

namespace ooc::kernels {

namespace baseline {
void rank3d_row(const Rank3dArgs& a, std::byte* scratch);
}
#if defined(__x86_64__)
namespace avx2 {
void rank3d_row(const Rank3dArgs& a, std::byte* scratch);
}
#endif

std::vector<std::pair<int, int>> rank_network(int n, int rank, int* out_wire) {
  int p = 1;
  while (p < n) p *= 2;
  // Batcher's odd-even merge sort of p wires (Knuth 5.3.4, exercise 5.2.2-32's iterative form).
  std::vector<std::pair<int, int>> all;
  for (int size = 1; size < p; size *= 2)
    for (int step = size; step >= 1; step /= 2)
      for (int j = step % size; j + step < p; j += 2 * step)
        for (int i = 0; i < std::min(step, p - j - step); ++i)
          if ((i + j) / (2 * size) == (i + j + step) / (2 * size))
            all.emplace_back(i + j, i + j + step);
  // Forward: wires past the window hold the largest value, so a comparator with one of them
  // exchanges nothing or only moves a sample: the sample's wire is renamed instead (wire w's value
  // lives in slot at[w]), and the padding is never read.
  std::vector<int> at(static_cast<std::size_t>(p));
  for (int w = 0; w < p; ++w) at[static_cast<std::size_t>(w)] = w;
  auto top = [n](int slot) { return slot >= n; };
  std::vector<std::pair<int, int>> moved;
  for (const auto& [a, b] : all) {
    int& sa = at[static_cast<std::size_t>(a)];
    int& sb = at[static_cast<std::size_t>(b)];
    if (top(sb)) continue;  // b holds the largest: nothing moves
    if (top(sa)) {          // a holds it: the sample moves down to a, the largest up to b
      std::swap(sa, sb);
      continue;
    }
    moved.emplace_back(sa, sb);
  }
  const int out = at[static_cast<std::size_t>(rank)];
  *out_wire = out;
  // Backward: only the comparators whose outputs reach the output's slot.
  std::vector<char> live(static_cast<std::size_t>(p), 0);
  live[static_cast<std::size_t>(out)] = 1;
  std::vector<std::pair<int, int>> kept;
  for (auto it = moved.rbegin(); it != moved.rend(); ++it) {
    auto& [a, b] = *it;
    if (!live[static_cast<std::size_t>(a)] && !live[static_cast<std::size_t>(b)]) continue;
    live[static_cast<std::size_t>(a)] = live[static_cast<std::size_t>(b)] = 1;
    kept.push_back(*it);
  }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

std::size_t rank3d_scratch_bytes(std::int64_t wires) {
  std::int64_t p = 1;
  while (p < wires) p *= 2;
  return static_cast<std::size_t>(p) * 256 * sizeof(double);
}

void rank3d_row(const Rank3dArgs& a, std::byte* scratch) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::rank3d_row(a, scratch);
#endif
  baseline::rank3d_row(a, scratch);
}

}  // namespace ooc::kernels
