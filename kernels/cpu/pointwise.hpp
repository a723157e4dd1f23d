// The point operations of pipelines (scale, abs, clamp, threshold, convert) and the combinations
// of a stage's input with its filtered copies (dog, unsharp, background, gradient magnitude), on
// one row. The arithmetic is spelled one rounding at a time (compiled without contraction), so
// that kernels/cuda/pointwise.cu, which uses the _rn intrinsics, gives the same bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace ooc::kernels {

enum class PointKind { scale, abs, clamp, threshold, convert };
enum class CombineKind { subtract, unsharp, difference, magnitude };

struct PointParams {
  PointKind kind = PointKind::scale;
  double a = 0, b = 0;  // scale: mul, add; clamp: min, max; threshold: value
};

// Round half to even and saturate, NaN to 0, in double: every value of every type converts
// exactly where it can (as the filters' output stage).
template <class In, class Out>
inline Out convert_sample(In v) {
  if constexpr (std::is_same_v<In, Out>) {
    return v;
  } else if constexpr (std::is_floating_point_v<Out>) {
    return static_cast<Out>(v);
  } else {
    double d = static_cast<double>(v);
    d = d == d ? d : 0.0;
    d = std::clamp(d, double(std::numeric_limits<Out>::lowest()),
                   double(std::numeric_limits<Out>::max()));
    return static_cast<Out>(std::nearbyint(d));
  }
}

// One sample of a point operation other than convert, in the accumulator type Acc.
template <class Acc>
inline Acc point_sample(Acc v, const PointParams& p, Acc a, Acc b) {
  switch (p.kind) {
    case PointKind::scale: {
      const Acc t = v * a;
      return t + b;
    }
    case PointKind::abs:
      return std::fabs(v);
    case PointKind::clamp:
      return v < a ? a : (v > b ? b : v);
    case PointKind::threshold:
      return v > a ? Acc(1) : Acc(0);
    case PointKind::convert:
      break;
  }
  return v;
}

template <class In, class Out>
void point_row(const std::byte* src, std::byte* dst, std::int64_t n, const PointParams& p) {
  if (p.kind == PointKind::convert) {
    if constexpr (std::is_same_v<In, Out>) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(In));
    } else {
      for (std::int64_t i = 0; i < n; ++i) {
        In v;
        std::memcpy(&v, src + i * sizeof(In), sizeof v);
        const Out o = convert_sample<In, Out>(v);
        std::memcpy(dst + i * sizeof(Out), &o, sizeof o);
      }
    }
    return;
  }
  if constexpr (std::is_floating_point_v<Out>) {
    const Out a = static_cast<Out>(p.a), b = static_cast<Out>(p.b);
    for (std::int64_t i = 0; i < n; ++i) {
      In v;
      std::memcpy(&v, src + i * sizeof(In), sizeof v);
      const Out o = point_sample<Out>(static_cast<Out>(v), p, a, b);
      std::memcpy(dst + i * sizeof(Out), &o, sizeof o);
    }
  }
}

// x: the stage's input (type In), g1, g2: its filtered copies (Acc); out in Acc.
template <class Acc>
inline Acc combine_sample(CombineKind k, Acc x, Acc g1, Acc g2, Acc amount) {
  switch (k) {
    case CombineKind::subtract:
      return x - g1;
    case CombineKind::unsharp: {
      const Acc d = x - g1;
      const Acc t = amount * d;
      return x + t;
    }
    case CombineKind::difference:
      return g1 - g2;
    case CombineKind::magnitude: {
      const Acc p = g1 * g1;
      const Acc q = g2 * g2;
      return std::sqrt(p + q);
    }
  }
  return x;
}

template <class In, class Acc>
void combine_row(CombineKind k, const std::byte* x, const Acc* g1, const Acc* g2, Acc* out,
                 std::int64_t n, double amount) {
  const Acc am = static_cast<Acc>(amount);
  for (std::int64_t i = 0; i < n; ++i) {
    Acc xv = 0;
    if (x != nullptr) {
      In v;
      std::memcpy(&v, x + i * sizeof(In), sizeof v);
      xv = static_cast<Acc>(v);
    }
    out[i] = combine_sample<Acc>(k, xv, g1[i], g2 != nullptr ? g2[i] : Acc(0), am);
  }
}

}  // namespace ooc::kernels
