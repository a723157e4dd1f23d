// The point operations of pipelines (scale, abs, clamp, threshold, convert) and the combinations
// of a stage's input with its filtered copies (dog, unsharp, background, gradient magnitude), on
// one row. The arithmetic is spelled one rounding at a time (compiled without contraction), so
// that kernels/cuda/point/pointwise.cu, which uses the _rn intrinsics, gives the same bits. The
// loops are instantiated per operation and type so that they vectorize.
#pragma once

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
// exactly where it can (as the filters' output stage). Clamped first, |d| < 2^52, where adding
// and subtracting 2^52 rounds to the nearest integer, ties to even (the default rounding mode),
// as nearbyint does, without a library call.
template <class In, class Out>
inline Out convert_sample(In v) {
  if constexpr (std::is_same_v<In, Out>) {
    return v;
  } else if constexpr (std::is_floating_point_v<Out>) {
    return static_cast<Out>(v);
  } else {
    double d = static_cast<double>(v);
    d = d == d ? d : 0.0;
    constexpr double lo = double(std::numeric_limits<Out>::lowest());
    constexpr double hi = double(std::numeric_limits<Out>::max());
    d = d < lo ? lo : (d > hi ? hi : d);
    if constexpr (std::is_integral_v<In> && sizeof(In) <= 4) {
      return static_cast<Out>(d);  // an integer already
    } else {
      // IEEE arithmetic (no -ffast-math): the compiler may not fold (d + 2^52) - 2^52 to d.
      constexpr double big = 4503599627370496.0;
      const double t = d >= 0 ? (d + big) - big : (d - big) + big;
      return static_cast<Out>(t);
    }
  }
}

template <class T>
inline T load(const std::byte* p, std::int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<std::int64_t>(sizeof(T)), sizeof v);
  return v;
}
template <class T>
inline void store(std::byte* p, std::int64_t i, T v) {
  std::memcpy(p + i * static_cast<std::int64_t>(sizeof(T)), &v, sizeof v);
}

template <PointKind K, class Acc>
inline Acc point_sample(Acc v, Acc a, Acc b) {
  if constexpr (K == PointKind::scale) {
    const Acc t = v * a;
    return t + b;
  } else if constexpr (K == PointKind::abs) {
    return std::fabs(v);
  } else if constexpr (K == PointKind::clamp) {
    return v < a ? a : (v > b ? b : v);
  } else {
    return v > a ? Acc(1) : Acc(0);
  }
}

template <PointKind K, class In, class Out>
void point_loop(const std::byte* src, std::byte* dst, std::int64_t n, Out a, Out b) {
  for (std::int64_t i = 0; i < n; ++i)
    store<Out>(dst, i, point_sample<K, Out>(static_cast<Out>(load<In>(src, i)), a, b));
}

template <class In, class Out>
void point_row(const std::byte* src, std::byte* dst, std::int64_t n, const PointParams& p) {
  if (p.kind == PointKind::convert) {
    if constexpr (std::is_same_v<In, Out>) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(In));
    } else {
      for (std::int64_t i = 0; i < n; ++i)
        store<Out>(dst, i, convert_sample<In, Out>(load<In>(src, i)));
    }
    return;
  }
  if constexpr (std::is_floating_point_v<Out>) {
    const Out a = static_cast<Out>(p.a), b = static_cast<Out>(p.b);
    switch (p.kind) {
      case PointKind::scale:
        return point_loop<PointKind::scale, In, Out>(src, dst, n, a, b);
      case PointKind::abs:
        return point_loop<PointKind::abs, In, Out>(src, dst, n, a, b);
      case PointKind::clamp:
        return point_loop<PointKind::clamp, In, Out>(src, dst, n, a, b);
      case PointKind::threshold:
        return point_loop<PointKind::threshold, In, Out>(src, dst, n, a, b);
      case PointKind::convert:
        break;
    }
  }
}

template <CombineKind K, class Acc>
inline Acc combine_sample(Acc x, Acc g1, Acc g2, Acc amount) {
  if constexpr (K == CombineKind::subtract) {
    return x - g1;
  } else if constexpr (K == CombineKind::unsharp) {
    const Acc d = x - g1;
    const Acc t = amount * d;
    return x + t;
  } else if constexpr (K == CombineKind::difference) {
    return g1 - g2;
  } else {
    const Acc p = g1 * g1;
    const Acc q = g2 * g2;
    return std::sqrt(p + q);
  }
}

template <CombineKind K, class In, class Acc, class Out>
void combine_loop(const std::byte* x, const Acc* g1, const Acc* g2, std::byte* out, std::int64_t n,
                  Acc amount) {
  constexpr bool reads_x = K == CombineKind::subtract || K == CombineKind::unsharp;
  constexpr bool reads_g2 = K == CombineKind::difference || K == CombineKind::magnitude;
  for (std::int64_t i = 0; i < n; ++i) {
    const Acc xv = reads_x ? static_cast<Acc>(load<In>(x, i)) : Acc(0);
    const Acc v = combine_sample<K, Acc>(xv, g1[i], reads_g2 ? g2[i] : Acc(0), amount);
    store<Out>(out, i, convert_sample<Acc, Out>(v));
  }
}

// x: the stage's input (type In), g1, g2: its filtered copies (Acc); out: type Out (the
// accumulator's, or a convert that follows the stage, fused).
template <class In, class Acc, class Out>
void combine_row(CombineKind k, const std::byte* x, const Acc* g1, const Acc* g2, std::byte* out,
                 std::int64_t n, double amount) {
  const Acc am = static_cast<Acc>(amount);
  switch (k) {
    case CombineKind::subtract:
      return combine_loop<CombineKind::subtract, In, Acc, Out>(x, g1, g2, out, n, am);
    case CombineKind::unsharp:
      return combine_loop<CombineKind::unsharp, In, Acc, Out>(x, g1, g2, out, n, am);
    case CombineKind::difference:
      return combine_loop<CombineKind::difference, In, Acc, Out>(x, g1, g2, out, n, am);
    case CombineKind::magnitude:
      return combine_loop<CombineKind::magnitude, In, Acc, Out>(x, g1, g2, out, n, am);
  }
}

}  // namespace ooc::kernels
