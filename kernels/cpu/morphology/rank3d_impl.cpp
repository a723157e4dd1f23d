// The 3-D rank filter's row (rank3d.hpp), compiled once per instruction set (OOC_ISA): each wire's
// strip of samples copied into scratch, then the network's compare-exchanges over whole strips,
// which the compiler turns into vector minimum/maximum (blends for floats, NaN-aware). The
// shared-column road (Rank3dPlan) works on the same strips, split into even and odd pixels so
// that a pair of neighbouring windows sits in one lane of each.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/morphology/minmax.hpp"
#include "kernels/cpu/morphology/rank3d.hpp"
#include "kernels/cpu/morphology/rank3d_sorts.hpp"
#include "ooc/detail/sample_type.hpp"

namespace ooc::kernels::OOC_ISA {
namespace {

constexpr std::int64_t kStrip = 256;  // samples a wire holds in scratch

// 32 bytes of samples: GCC's vector extension (the plain loop was left scalar).
template <class T>
using Vec [[gnu::vector_size(32)]] = T;
// The integers of a float's width, for its bits.
template <class T>
using Bits = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;

// The lower and the higher of x and y, lane by lane.
template <class T, class V>
[[gnu::always_inline]] inline void order(V x, V y, V& lo, V& hi) {
  if constexpr (std::is_floating_point_v<T>) {
    // pick (minmax.hpp): a NaN wins both; of equal values -0 is the lower, +0 the higher
    // (their bits or'ed and and'ed: equal values otherwise have the same bits).
    using B = Vec<Bits<T>>;
    const auto y_nan = y != y;
    lo = (y < x) | y_nan ? y : x;
    hi = (y > x) | y_nan ? y : x;
    B xb, yb, lb, hb;
    std::memcpy(&xb, &x, sizeof x);
    std::memcpy(&yb, &y, sizeof y);
    std::memcpy(&lb, &lo, sizeof lo);
    std::memcpy(&hb, &hi, sizeof hi);
    const auto eq = x == y;
    lb = eq ? (xb | yb) : lb;
    hb = eq ? (xb & yb) : hb;
    std::memcpy(&lo, &lb, sizeof lo);
    std::memcpy(&hi, &hb, sizeof hi);
  } else {
    lo = x < y ? x : y;
    hi = x < y ? y : x;
  }
}

// The compare-exchange of two strips of n samples (a multiple of the lanes).
template <class T>
void exchange(T* a, T* b, std::int64_t n = kStrip) {
  using V = Vec<T>;
  constexpr std::int64_t kLanes = 32 / sizeof(T);
  for (std::int64_t i = 0; i < n; i += kLanes) {
    V x, y, lo, hi;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, b + i, sizeof y);
    order<T>(x, y, lo, hi);
    std::memcpy(a + i, &lo, sizeof lo);
    std::memcpy(b + i, &hi, sizeof hi);
  }
}

template <class T>
void row_typed(const Rank3dArgs& a, std::byte* scratch) {
  T* w = reinterpret_cast<T*>(scratch);
  T* out = reinterpret_cast<T*>(a.out);
  for (std::int64_t s0 = 0; s0 < a.samples; s0 += kStrip) {
    const std::int64_t m = std::min(kStrip, a.samples - s0);
    for (std::int64_t r = 0; r < a.window_rows; ++r) {
      const T* row = reinterpret_cast<const T*>(a.rows[r]) + s0;
      for (std::int64_t c = 0; c < a.cols; ++c)
        std::memcpy(w + (r * a.cols + c) * kStrip, row + c * a.channels,
                    static_cast<std::size_t>(m) * sizeof(T));
    }
    for (const auto& [lo, hi] : *a.network) exchange(w + lo * kStrip, w + hi * kStrip);
    std::memcpy(out + s0, w + a.out_wire * kStrip, static_cast<std::size_t>(m) * sizeof(T));
  }
}

// Wires 0..R-1 of a vector each, `stride` apart, into v and back: one load or store each, written
// out (a loop of copies into the array made halves the compiler stored and then read whole).
template <class V, class T, std::size_t... W>
[[gnu::always_inline]] inline void load_wires(V* v, const T* base, std::int64_t stride,
                                              std::index_sequence<W...>) {
  (std::memcpy(&v[W], base + static_cast<std::int64_t>(W) * stride, sizeof(V)), ...);
}
template <class V, class T, std::size_t... W>
[[gnu::always_inline]] inline void store_wires(const V* v, T* base, std::int64_t stride,
                                               std::index_sequence<W...>) {
  (std::memcpy(base + static_cast<std::int64_t>(W) * stride, &v[W], sizeof(V)), ...);
}

// A column sort from a table (rank3d_sorts.hpp), one vector of each wire in a register throughout:
// the strip-wide exchanges store and load every wire at every comparator.
template <class T, std::size_t R, std::size_t N, std::size_t... I>
[[gnu::always_inline]] inline void sort_table(T* base, std::int64_t stride, std::int64_t n,
                                              const unsigned char (&net)[N][2],
                                              std::index_sequence<I...>) {
  using V = Vec<T>;
  constexpr std::int64_t L = 32 / sizeof(T);
  for (std::int64_t l = 0; l < n; l += L) {
    V v[R];
    load_wires(v, base + l, stride, std::make_index_sequence<R>{});
    auto ex = [&v](unsigned char a, unsigned char b) { order<T>(v[a], v[b], v[a], v[b]); };
    (ex(net[I][0], net[I][1]), ...);
    store_wires(v, base + l, stride, std::make_index_sequence<R>{});
  }
}

// Pixels a strip of the shared road holds (even): about 256 bytes of one wire, so that the merge's
// wires stay in the first-level cache.
constexpr std::int64_t kSharedStripBytes = 256;

std::int64_t round_up(std::int64_t n, std::int64_t m) {
  return (n + m - 1) / m * m;
}

// The 3x3x3 median's merge and selection (shared_typed's, for its tables) with every wire of a
// vector in a register: the two common columns c1 and c2 (9 sorted wires each, TS apart) merged by
// kMerge9x2Median, then each window's two-list selection with its own column (own[0], own[1]),
// results to res and res + US. The same order of the same operations as the general loop.
template <class T, std::size_t... M, std::size_t... S>
[[gnu::always_inline]] inline void median27_lanes(const T* c1, const T* c2, const T* const own[2],
                                                  std::int64_t TS, std::int64_t US, T* res,
                                                  std::index_sequence<M...>,
                                                  std::index_sequence<S...>) {
  using V = Vec<T>;
  constexpr std::int64_t L = 32 / sizeof(T);
  for (std::int64_t l = 0; l < US; l += L) {
    V m[18];
    load_wires(m, c1 + l, TS, std::make_index_sequence<9>{});
    load_wires(m + 9, c2 + l, TS, std::make_index_sequence<9>{});
    auto ex = [&m](unsigned char a, unsigned char b) { order<T>(m[a], m[b], m[a], m[b]); };
    (ex(kMerge9x2Median[M][0], kMerge9x2Median[M][1]), ...);
    for (int e = 0; e < 2; ++e) {
      V acc = m[kKept9x2Median[9]], lo, hi;
      // Term i (1..9): the larger of the merge's rank 13 - i and the own column's i - 1.
      auto term = [&](std::size_t i) {
        V b, t = m[kKept9x2Median[9 - i]];
        std::memcpy(&b, own[e] + (i - 1) * TS + l, sizeof b);
        order<T>(t, b, lo, t);
        order<T>(acc, t, acc, hi);
      };
      (term(S + 1), ...);
      if constexpr (std::is_floating_point_v<T>) {
        // A NaN in a column spreads to all its sorted wires: the window's result is NaN.
        const T* const cols[3] = {e == 0 ? own[0] : c1, e == 0 ? c1 : c2, e == 0 ? c2 : own[1]};
        for (const T* c : cols) {
          V v;
          std::memcpy(&v, c + l, sizeof v);
          acc = v != v ? v : acc;
        }
      }
      std::memcpy(res + e * US + l, &acc, sizeof acc);
    }
  }
}

// The shared road (Rank3dPlan): per strip of pixels, every column's rows x samples sorted (the
// even pixels' columns and the odd ones' apart); the windows of pixels 2q and 2q + 1 share columns
// 2q + 1 .. 2q + cols - 1, merged once to the ranks [lo, hi]; each window's rank then is the
// smallest over i of max(merge[rank - i], own[i - 1]) (the rank + 1 smallest of the two lists hold
// some i of its own column's; any such i gives a set of rank + 1 samples whose largest is at
// least the rank's, and the right one gives it).
template <class T>
void shared_typed(const Rank3dArgs& a, const Rank3dPlan& p, std::byte* scratch) {
  using V = Vec<T>;
  constexpr std::int64_t L = 32 / sizeof(T);
  const std::int64_t C = a.channels, R = p.rows, K = p.cols - 1, W = a.samples / C;
  const std::int64_t Pp =
      std::min(std::max<std::int64_t>(2, kSharedStripBytes / sizeof(T) / C) & ~std::int64_t{1},
               W & ~std::int64_t{1});
  const std::int64_t H = Pp / 2 * C;                               // lanes of a half strip
  const std::int64_t even = (Pp + K + 1) / 2, odd = (Pp + K) / 2;  // pixels of the columns
  const std::int64_t TS = round_up(even * C, L) + L, US = round_up(H, L);
  T* const te = reinterpret_cast<T*>(scratch);
  T* const to = te + R * TS;
  T* const u = to + R * TS;
  T* const res = u + K * R * US;  // two half strips of results
  T* const out = reinterpret_cast<T*>(a.out);
  // Column d of the pair's (pixel 2q + d): its half strip and offset.
  auto column = [&](std::int64_t d) { return (d % 2 ? to : te) + d / 2 * C; };
  for (std::int64_t x0 = 0;; x0 += Pp) {
    x0 = std::min(x0, W - Pp);  // the last strip overlaps the one before
    for (std::int64_t r = 0; r < R; ++r) {
      const T* src = reinterpret_cast<const T*>(a.rows[r]) + x0 * C;
      T* e = te + r * TS;
      T* o = to + r * TS;
      if (C == 1) {
        for (std::int64_t q = 0; q < odd; ++q) e[q] = src[2 * q], o[q] = src[2 * q + 1];
        if (even > odd) e[odd] = src[2 * odd];
      } else {
        for (std::int64_t x = 0; x < Pp + K; ++x)
          for (std::int64_t c = 0; c < C; ++c) (x % 2 ? o : e)[x / 2 * C + c] = src[x * C + c];
      }
    }
    if (p.sort_table == 25) {
      sort_table<T, 25>(te, TS, round_up(even * C, L), kSort25, std::make_index_sequence<140>{});
      sort_table<T, 25>(to, TS, round_up(odd * C, L), kSort25, std::make_index_sequence<140>{});
    } else if (p.sort_table == 9) {
      sort_table<T, 9>(te, TS, round_up(even * C, L), kSort9, std::make_index_sequence<28>{});
      sort_table<T, 9>(to, TS, round_up(odd * C, L), kSort9, std::make_index_sequence<28>{});
    } else {
      for (const auto& [lo, hi] : p.sort) {
        exchange(te + lo * TS, te + hi * TS, round_up(even * C, L));
        exchange(to + lo * TS, to + hi * TS, round_up(odd * C, L));
      }
    }
    if (p.median27) {
      const T* const own[2] = {column(0), column(K + 1)};
      median27_lanes(column(1), column(2), own, TS, US, res, std::make_index_sequence<28>{},
                     std::make_index_sequence<9>{});
    } else {
      for (std::int64_t j = 0; j < K; ++j) {
        const T* col = column(1 + j);
        for (std::int64_t i = 0; i < R; ++i)
          std::memcpy(u + (j * R + i) * US, col + p.sorted[static_cast<std::size_t>(i)] * TS,
                      static_cast<std::size_t>(US) * sizeof(T));
      }
      for (const auto& [lo, hi] : p.merge) exchange(u + lo * US, u + hi * US, US);
      for (std::int64_t e = 0; e < 2; ++e) {
        const T* own = column(e == 0 ? 0 : K + 1);
        for (std::int64_t l = 0; l < US; l += L) {
          V acc{}, term, lo, hi;
          bool first = true;
          for (std::int64_t i = 0; i <= R; ++i) {
            const std::int64_t k = p.rank - i;
            if (k > p.hi) continue;
            V b{};
            if (i > 0)
              std::memcpy(&b, own + p.sorted[static_cast<std::size_t>(i - 1)] * TS + l, sizeof b);
            if (k < 0) {
              term = b;
            } else {
              std::memcpy(&term, u + p.kept[static_cast<std::size_t>(k - p.lo)] * US + l,
                          sizeof term);
              if (i > 0) order<T>(term, b, lo, term);
            }
            if (first)
              acc = term, first = false;
            else
              order<T>(acc, term, acc, hi);
          }
          if constexpr (std::is_floating_point_v<T>) {
            // A NaN in a column spreads to all its sorted wires: the window's result is NaN.
            for (std::int64_t j = 0; j <= K; ++j) {
              V v;
              std::memcpy(&v, column(e + j) + p.sorted[0] * TS + l, sizeof v);
              acc = v != v ? v : acc;
            }
          }
          std::memcpy(res + e * US + l, &acc, sizeof acc);
        }
      }
    }
    T* dst = out + x0 * C;
    if (C == 1) {
      for (std::int64_t q = 0; q < Pp / 2; ++q) dst[2 * q] = res[q], dst[2 * q + 1] = res[US + q];
    } else {
      for (std::int64_t x = 0; x < Pp; ++x)
        for (std::int64_t c = 0; c < C; ++c) dst[x * C + c] = res[(x % 2) * US + x / 2 * C + c];
    }
    if (x0 + Pp >= W) break;
  }
}

}  // namespace

void rank3d_row(const Rank3dArgs& a, std::byte* scratch) {
  dispatch_type(a.type, [&](auto t) { row_typed<decltype(t)>(a, scratch); });
}

void rank3d_row_shared(const Rank3dArgs& a, const Rank3dPlan& p, std::byte* scratch) {
  dispatch_type(a.type, [&](auto t) { shared_typed<decltype(t)>(a, p, scratch); });
}

}  // namespace ooc::kernels::OOC_ISA
