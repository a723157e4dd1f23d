// The 3-D rank filter's networks (rank3d.hpp): the plain one and the shared-column plan, and the
// run-time choice between the builds of the row for each instruction set (rank3d_impl.cpp).
#include "rank3d.hpp"

#include <algorithm>
#include <bitset>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/morphology/rank3d_sorts.hpp"

namespace ooc::kernels {

namespace baseline {
void rank3d_row(const Rank3dArgs& a, std::byte* scratch);
void rank3d_row_shared(const Rank3dArgs& a, const Rank3dPlan& p, std::byte* scratch);
}  // namespace baseline
#if defined(__x86_64__)
namespace avx2 {
void rank3d_row(const Rank3dArgs& a, std::byte* scratch);
void rank3d_row_shared(const Rank3dArgs& a, const Rank3dPlan& p, std::byte* scratch);
}  // namespace avx2
#endif

namespace {

// Batcher's odd-even merge sort of p wires from runs of `first` already sorted (1: all of it).
std::vector<std::pair<int, int>> batcher(int p, int first) {
  std::vector<std::pair<int, int>> all;
  for (int size = first; size < p; size *= 2)
    for (int step = size; step >= 1; step /= 2)
      for (int j = step % size; j + step < p; j += 2 * step)
        for (int i = 0; i < std::min(step, p - j - step); ++i)
          if ((i + j) / (2 * size) == (i + j + step) / (2 * size))
            all.emplace_back(i + j, i + j + step);
  return all;
}

constexpr int kMaxPlanWires = 256;
using Set = std::bitset<kMaxPlanWires>;

struct Pruned {
  std::vector<std::pair<int, int>> pairs;  // on the slots the samples start in
  std::vector<int> at;                     // at[w]: the slot wire w's sample ends in
};

// `comps` on p wires whose samples start in sorted runs of `run` slots from multiples of `block`
// (slots outside the runs: larger than every sample), for the ranks [lo, hi] of the n samples:
// a comparator whose order is known (from the runs and the comparators before it) moves nothing
// or renames its wires; a sample known to have hi + 1 samples at or below it lies above every rank
// wanted, so it may as well be +inf (n - lo at or above it: -inf), and its comparators are known
// too; then only the comparators the ranks' wires depend on are kept. What a comparator keeps
// known: its lower output is at or below whatever either input was at or below, and at or above
// what both were at or above; the higher output the other way round.
Pruned prune(int p, const std::vector<std::pair<int, int>>& comps, int block, int run, int n,
             int lo, int hi) {
  std::vector<Set> below(static_cast<std::size_t>(p)), above(below);
  std::vector<int> state(static_cast<std::size_t>(p), 1);  // 1: +inf, -1: -inf, 0: a sample
  Set real;
  for (int b = 0; b + run <= p && b / block * run < n; b += block)
    for (int i = 0; i < run; ++i) {
      real.set(static_cast<std::size_t>(b + i));
      state[static_cast<std::size_t>(b + i)] = 0;
      for (int j = 0; j < i; ++j) {
        below[static_cast<std::size_t>(b + i)].set(static_cast<std::size_t>(b + j));
        above[static_cast<std::size_t>(b + j)].set(static_cast<std::size_t>(b + i));
      }
    }
  auto reclass = [&] {
    for (std::size_t s = 0; s < static_cast<std::size_t>(p); ++s) {
      if (state[s] != 0) continue;
      if (static_cast<int>((below[s] & real).count()) >= hi + 1)
        state[s] = 1;
      else if (static_cast<int>((above[s] & real).count()) >= n - lo)
        state[s] = -1;
    }
  };
  auto le = [&](int x, int y) {  // x's sample known to be <= y's
    const auto sx = state[static_cast<std::size_t>(x)], sy = state[static_cast<std::size_t>(y)];
    if (sx == -1 || sy == 1) return true;
    if (sx == 1 || sy == -1) return false;
    return bool(below[static_cast<std::size_t>(y)][static_cast<std::size_t>(x)]);
  };
  reclass();
  Pruned r;
  r.at.resize(static_cast<std::size_t>(p));
  for (int w = 0; w < p; ++w) r.at[static_cast<std::size_t>(w)] = w;
  std::vector<std::pair<int, int>> moved;
  for (const auto& [a, b] : comps) {
    int& sa = r.at[static_cast<std::size_t>(a)];
    int& sb = r.at[static_cast<std::size_t>(b)];
    if (le(sa, sb)) continue;
    if (le(sb, sa)) {
      std::swap(sa, sb);
      continue;
    }
    const auto x = static_cast<std::size_t>(sa), y = static_cast<std::size_t>(sb);
    Set drop;
    drop.set(x).set(y);
    Set bl_lo = (below[x] & below[y]) & ~drop, ab_lo = (above[x] | above[y]) & ~drop;
    Set bl_hi = (below[x] | below[y]) & ~drop, ab_hi = (above[x] & above[y]) & ~drop;
    ab_lo.set(y);
    bl_hi.set(x);
    for (std::size_t z = 0; z < static_cast<std::size_t>(p); ++z) {
      below[z] &= ~drop, above[z] &= ~drop;
      if (bl_lo[z]) above[z].set(x);
      if (ab_lo[z]) below[z].set(x);
      if (bl_hi[z]) above[z].set(y);
      if (ab_hi[z]) below[z].set(y);
    }
    below[x] = bl_lo, above[x] = ab_lo, below[y] = bl_hi, above[y] = ab_hi;
    moved.emplace_back(sa, sb);
    reclass();
  }
  std::vector<char> live(static_cast<std::size_t>(p), 0);
  for (int k = lo; k <= hi; ++k)
    live[static_cast<std::size_t>(r.at[static_cast<std::size_t>(k)])] = 1;
  for (auto it = moved.rbegin(); it != moved.rend(); ++it) {
    auto& [a, b] = *it;
    if (!live[static_cast<std::size_t>(a)] && !live[static_cast<std::size_t>(b)]) continue;
    live[static_cast<std::size_t>(a)] = live[static_cast<std::size_t>(b)] = 1;
    r.pairs.push_back(*it);
  }
  std::reverse(r.pairs.begin(), r.pairs.end());
  return r;
}

template <std::size_t N>
bool is_table(const std::vector<std::pair<int, int>>& pairs, const unsigned char (&net)[N][2]) {
  if (pairs.size() != N) return false;
  for (std::size_t i = 0; i < N; ++i)
    if (pairs[i].first != net[i][0] || pairs[i].second != net[i][1]) return false;
  return true;
}

template <std::size_t N>
bool is_list(const std::vector<int>& v, const unsigned char (&t)[N]) {
  if (v.size() != N) return false;
  for (std::size_t i = 0; i < N; ++i)
    if (v[i] != t[i]) return false;
  return true;
}

int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

std::unique_ptr<Rank3dPlan> make_plan(int rows, int cols, int rank) {
  auto plan = std::make_unique<Rank3dPlan>();
  plan->rows = rows, plan->cols = cols, plan->rank = rank;
  const int q = pow2_at_least(rows);
  const Pruned s = prune(q, batcher(q, 1), 1, 1, rows, 0, rows - 1);
  plan->sort = s.pairs;
  plan->sorted.assign(s.at.begin(), s.at.begin() + rows);
  // The common columns' ranks that the window's rank can take with its own column's `rows` added.
  const int lists = cols - 1, n = lists * rows;
  plan->lo = std::max(0, rank - rows), plan->hi = std::min(rank, n - 1);
  const int p = pow2_at_least(lists * q);
  const Pruned m = prune(p, batcher(p, q), q, rows, n, plan->lo, plan->hi);
  auto slot = [&](int s) { return s / q * rows + s % q; };  // the runs packed together
  for (const auto& [a, b] : m.pairs) plan->merge.emplace_back(slot(a), slot(b));
  for (int k = plan->lo; k <= plan->hi; ++k)
    plan->kept.push_back(slot(m.at[static_cast<std::size_t>(k)]));
  plan->sort_table = is_table(plan->sort, kSort25) ? 25 : is_table(plan->sort, kSort9) ? 9 : 0;
  plan->median27 = plan->sort_table == 9 && cols == 3 && rank == 13 &&
                   is_table(plan->merge, kMerge9x2Median) && is_list(plan->kept, kKept9x2Median);
  return plan;
}

// The rank a rank_network leaves on its wire: samples 0, 1, ... through it.
int network_rank(const std::vector<std::pair<int, int>>& net, int wires, int out) {
  std::vector<int> v(static_cast<std::size_t>(pow2_at_least(wires)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
  for (const auto& [a, b] : net)
    if (v[static_cast<std::size_t>(a)] > v[static_cast<std::size_t>(b)])
      std::swap(v[static_cast<std::size_t>(a)], v[static_cast<std::size_t>(b)]);
  return v[static_cast<std::size_t>(out)];
}

}  // namespace

const Rank3dPlan* rank3d_plan(const Rank3dArgs& a) {
  if (a.cols < 2 || a.samples / a.channels < 2) return nullptr;
  const int rows = static_cast<int>(a.window_rows), cols = static_cast<int>(a.cols);
  if (pow2_at_least(rows) * (cols - 1) > kMaxPlanWires) return nullptr;
  // A rank_network's output wire says its rank (the wires' renaming does not depend on it).
  using Key = std::tuple<int, int, std::int64_t, std::size_t>;
  const Key key{rows, cols, a.out_wire, a.network->size()};
  thread_local Key last{};
  thread_local const Rank3dPlan* last_plan = nullptr;
  if (last_plan && key == last) return last_plan;
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Rank3dPlan>> plans;
  std::lock_guard<std::mutex> lock(mutex);
  auto& plan = plans[key];
  if (!plan)
    plan =
        make_plan(rows, cols, network_rank(*a.network, rows * cols, static_cast<int>(a.out_wire)));
  last = key, last_plan = plan.get();
  return last_plan;
}

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
  if (const Rank3dPlan* p = rank3d_plan(a)) {
#if defined(__x86_64__)
    if (has_avx2()) return avx2::rank3d_row_shared(a, *p, scratch);
#endif
    return baseline::rank3d_row_shared(a, *p, scratch);
  }
#if defined(__x86_64__)
  if (has_avx2()) return avx2::rank3d_row(a, scratch);
#endif
  baseline::rank3d_row(a, scratch);
}

}  // namespace ooc::kernels
