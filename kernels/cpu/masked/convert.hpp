// Nodata across a change of sample type (issue 48: --out-type, convert and the filters' fused
// stores under --nodata): the value holes take in the output type where the input's does not fit
// (-9999 into u8, NaN into any integer type), and the rule that keeps valid samples off it, so
// that a hole stays a hole and a sample stays a sample (GDAL's warper moves valid samples off the
// destination nodata the same way).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ooc/detail/sample_type.hpp"
#include "ooc/image.hpp"

namespace ooc::kernels::masked {

// Whether a sample of T holds nodata v exactly (NaN: the float types), so that it can be a hole.
template <class T>
inline bool holds(double v) noexcept {
  if (std::isnan(v)) return std::is_floating_point_v<T>;
  if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(v) <= double(std::numeric_limits<T>::max()) && double(static_cast<T>(v)) == v;
  } else {
    return v >= double(std::numeric_limits<T>::lowest()) &&
           v <= double(std::numeric_limits<T>::max()) && v == std::floor(v);
  }
}

// The nodata value of type T for nodata v: v where T holds it; a number rounded half to even and
// saturated as every conversion rounds (-9999 into u8 or u16: 0; 70000 into u16: 65535); NaN into
// an integer type: the type's lowest (0, -32768, ...); beyond a float type's range: its extreme.
template <class T>
inline T nodata_of(double v) noexcept {
  constexpr double lo = double(std::numeric_limits<T>::lowest());
  constexpr double hi = double(std::numeric_limits<T>::max());
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return std::numeric_limits<T>::quiet_NaN();
    return static_cast<T>(std::clamp(v, lo, hi));
  } else {
    if (std::isnan(v)) return std::numeric_limits<T>::lowest();
    return static_cast<T>(std::clamp(std::nearbyint(v), lo, hi));
  }
}

// nodata_of for a type named at run time, as a double (NaN for NaN).
inline double nodata_in(SampleType t, double v) {
  return dispatch_type(t, [&](auto u) { return static_cast<double>(nodata_of<decltype(u)>(v)); });
}

inline bool holds_in(SampleType t, double v) {
  return dispatch_type(t, [&](auto u) { return holds<decltype(u)>(v); });
}

// Where a valid sample that converts to nodata nd goes instead: one step up, or down where nd is
// the type's largest value (a float: the next representable value).
template <class U>
inline U off_nodata(U nd) noexcept {
  constexpr U hi = std::numeric_limits<U>::max();
  if constexpr (std::is_floating_point_v<U>)
    return std::nextafter(
        nd, nd == hi ? -std::numeric_limits<U>::infinity() : std::numeric_limits<U>::infinity());
  else
    return nd == hi ? static_cast<U>(nd - 1) : static_cast<U>(nd + 1);
}

// After a row of values src (holes: NaN or `hole`) was stored into dst by the usual rounding and
// saturation: holes become nd, valid samples that landed on nd move off it. Branch-free, so that
// it vectorizes; `hole` NaN: NaN only.
template <class U, class Acc>
inline void keep_holes(const Acc* src, U* dst, std::int64_t n, Acc hole, U nd) noexcept {
  const U step = off_nodata(nd);
  for (std::int64_t i = 0; i < n; ++i) {
    const Acc s = src[i];
    const U d = dst[i];
    const bool h = (s != s) | (s == hole);
    dst[i] = h ? nd : (d == nd ? step : d);
  }
}

// One valid value v stored as U (rounded half to even, saturated) and kept off nodata nd.
template <class U>
inline U store_valid(double v, U nd) noexcept {
  U u;
  if constexpr (std::is_floating_point_v<U>) {
    u = static_cast<U>(v);
  } else {
    u = static_cast<U>(std::clamp(std::nearbyint(v), double(std::numeric_limits<U>::lowest()),
                                  double(std::numeric_limits<U>::max())));
  }
  return u == nd ? off_nodata(nd) : u;
}

// The convert of a pipeline under nodata: n samples of In to Out, holes (NaN, or `nodata` where
// In holds it) to Out's nodata_of(nodata), valid samples rounded half to even and saturated as
// the unmasked convert does, and moved off that value where they land on it.
template <class In, class Out>
void convert_row(const In* src, Out* dst, std::int64_t n, double nodata) noexcept {
  const Out nd = nodata_of<Out>(nodata);
  const Out step = off_nodata(nd);
  const bool has = holds<In>(nodata) && !std::isnan(nodata);
  const In hv = has ? static_cast<In>(nodata) : In{};
  for (std::int64_t i = 0; i < n; ++i) {
    const In s = src[i];
    bool h = has & (s == hv);
    if constexpr (std::is_floating_point_v<In>) h = h | (s != s);
    Out d;
    if constexpr (std::is_floating_point_v<Out>) {
      d = static_cast<Out>(s);
    } else {
      double v = static_cast<double>(s);
      v = v == v ? v : 0.0;
      v = std::clamp(v, double(std::numeric_limits<Out>::lowest()),
                     double(std::numeric_limits<Out>::max()));
      d = static_cast<Out>(std::nearbyint(v));
    }
    dst[i] = h ? nd : (d == nd ? step : d);
  }
}

}  // namespace ooc::kernels::masked
