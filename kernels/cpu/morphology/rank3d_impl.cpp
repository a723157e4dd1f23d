// The 3-D rank filter's row (rank3d.hpp), compiled once per instruction set (OOC_ISA): each wire's
// strip of samples copied into scratch, then the network's compare-exchanges over whole strips,
// which the compiler turns into vector minimum/maximum (blends for floats, NaN-aware).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/morphology/minmax.hpp"
#include "kernels/cpu/morphology/rank3d.hpp"
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

template <class T>
void exchange(T* a, T* b) {
  using V = Vec<T>;
  constexpr std::int64_t kLanes = 32 / sizeof(T);
  for (std::int64_t i = 0; i < kStrip; i += kLanes) {
    V x, y;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, b + i, sizeof y);
    V lo, hi;
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

}  // namespace

void rank3d_row(const Rank3dArgs& a, std::byte* scratch) {
  dispatch_type(a.type, [&](auto t) { row_typed<decltype(t)>(a, scratch); });
}

}  // namespace ooc::kernels::OOC_ISA
