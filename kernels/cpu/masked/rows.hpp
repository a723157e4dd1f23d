// The row helpers normalized convolution's band kernels share (normalized_impl.cpp for images,
// volume_impl.cpp for volumes in 3-D): the hole test in a sample's own type, a padded row's
// values and weights through the border rule, the finish of windows with holes and the store of a
// finished row into the output's type. Compiled once per instruction set with its includer
// (OOC_ISA names the namespace).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "convert.hpp"
#include "kernels/cpu/convolution/band_args.hpp"
#include "kernels/cpu/convolution/vec_sum.hpp"
#include "ooc/border.hpp"

namespace ooc::kernels::OOC_ISA {
namespace {

// The nodata test in the sample's own type (x == nodata in double, or NaN), branch-free so
// that the row loads vectorize.
template <class T>
struct HoleTest {
  bool has = false;
  T nd{};
  explicit HoleTest(double nodata) {
    if (std::isnan(nodata)) return;
    if constexpr (std::is_floating_point_v<T>) {
      nd = static_cast<T>(nodata);
      has = static_cast<double>(nd) == nodata;
    } else if (nodata >= double(std::numeric_limits<T>::lowest()) &&
               nodata <= double(std::numeric_limits<T>::max()) && nodata == std::floor(nodata)) {
      nd = static_cast<T>(nodata);
      has = true;
    }
  }
  bool operator()(T v) const {
    if constexpr (std::is_floating_point_v<T>)
      return (v != v) | (has & (v == nd));
    else
      return has & (v == nd);
  }
};

// A finished row (holes: `hole` or NaN) into U: rounded and saturated, holes as U's nodata value
// for `nodata`, valid samples moved off it.
template <class U, class Acc>
void store_row(const Acc* src, std::byte* dst, std::int64_t n, Acc hole, double nodata) {
  vec::store_samples<U, Acc>(src, dst, n);
  masked::keep_holes<U, Acc>(src, reinterpret_cast<U*>(dst), n, hole, masked::nodata_of<U>(nodata));
}

// o[s] = o[s] / ad[s] where the window is valid (its own sample no hole unless fill, weights aw
// above 0 and at least `least`, ad not 0), else fv; own holes where own8[s] != 0 or, without
// own8, where ownw[s] == 0. In vectors: every division made, the select keeps the valid ones.
template <class Acc>
void finish_valid(Acc* o, const Acc* ad, const Acc* aw, const std::uint8_t* own8, const Acc* ownw,
                  bool fill, Acc least, Acc fv, std::int64_t b, std::int64_t e) {
  using V = vec::Vec32<Acc>;
  constexpr int kL = 32 / sizeof(Acc);
  using I = std::conditional_t<sizeof(Acc) == 4, std::int32_t, std::int64_t>;
  typedef I M __attribute__((vector_size(32)));
  const M all = M{} - I(fill ? 1 : 0);  // -1 lanes: fill=true
  const V zero{}, lv = V{} + least, fvv = V{} + fv;
  const bool simple = aw == ad && !(least > Acc(0));
  std::int64_t s = b;
  for (; s + kL <= e; s += kL) {
    const V ov = vec::load_vec(o + s), adv = vec::load_vec(ad + s);
    const V awv = simple ? adv : vec::load_vec(aw + s);
    M own;
    if (own8) {
#if defined(__AVX2__)
      // vpmovzxbd/bd: GCC builds __builtin_convertvector of these bytes lane by lane (shifts
      // and inserts: most of the finish's time in perf).
      if constexpr (kL == 8) {
        const __m256i w =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(own8 + s)));
        own = reinterpret_cast<M>(w) != 0;
      } else {
        std::int32_t four;
        std::memcpy(&four, own8 + s, sizeof four);
        own = reinterpret_cast<M>(_mm256_cvtepu8_epi64(_mm_cvtsi32_si128(four))) != 0;
      }
#else
      typedef std::uint8_t B __attribute__((vector_size(kL)));
      B bytes;
      std::memcpy(&bytes, own8 + s, sizeof bytes);
      own = __builtin_convertvector(bytes, M) != 0;
#endif
    } else {
      own = vec::load_vec(ownw + s) == zero;
    }
    // The same weights and no min-weight (the usual case): the weight above 0 says it all.
    const M valid = simple ? (all | ~own) & (adv > zero)
                           : (all | ~own) & (awv > zero) & (awv >= lv) & (adv != zero);
    vec::store_vec(o + s, valid ? ov / adv : fvv);
  }
  for (; s < e; ++s) {
    const bool h = own8 ? own8[s] != 0 : ownw[s] == 0;
    const bool valid = (fill || !h) && aw[s] > 0 && aw[s] >= least && ad[s] != 0;
    o[s] = valid ? o[s] / ad[s] : fv;
  }
}

// Samples per chunk: one block of weighted_sum's unrolled vectors.
template <class Acc>
constexpr std::int64_t kChunk = 8 * 32 / sizeof(Acc);

#if defined(__AVX__)
// Eight bytes (0 or 1) from the low eight bits of a movemask.
struct ByteLanes {
  std::uint64_t of[256];
  constexpr ByteLanes() : of{} {
    for (int b = 0; b < 256; ++b)
      for (int l = 0; l < 8; ++l) of[b] |= std::uint64_t((b >> l) & 1) << (8 * l);
  }
};
inline constexpr ByteLanes kByteLanes{};
#endif

// Pixels [q0, q1) of a row through the border rule: values (holes 0) into v, weights (holes 0,
// else 1) into m, and where hb is given a byte a sample, 1 where m is not 1; a null row (the
// constant border) is the constant.
template <class T, class Acc>
void load_row(const std::byte* row, std::int64_t W, int C, BorderMode border, Acc cv, Acc cm,
              const HoleTest<T>& hole, std::int64_t q0, std::int64_t q1, Acc* v, Acc* m,
              std::uint8_t* hb = nullptr) {
  const T* p = reinterpret_cast<const T*>(row);
  const std::uint8_t chole = cm != Acc(1);  // the constant's byte
  const auto span = [&](std::int64_t src, std::int64_t n, Acc* dv, Acc* dm) {
    std::int64_t i = 0;
#if defined(__AVX__)
    if constexpr (std::is_same_v<T, float> && std::is_same_v<Acc, float>) {
      // One compare a vector (equal or unordered: the value or NaN; NaN alone without one), and
      // masks instead of GCC's two compares and two blends; the bytes from its sign bits.
      const __m256 nd = _mm256_set1_ps(hole.nd), one = _mm256_set1_ps(1.0f);
      std::uint8_t* const db = hb ? hb + (dm - m) : nullptr;
      for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(p + src + i);
        const __m256 h =
            hole.has ? _mm256_cmp_ps(x, nd, _CMP_EQ_UQ) : _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        _mm256_storeu_ps(dv + i, _mm256_andnot_ps(h, x));
        _mm256_storeu_ps(dm + i, _mm256_andnot_ps(h, one));
        if (db) std::memcpy(db + i, &kByteLanes.of[_mm256_movemask_ps(h)], 8);
      }
    }
#endif
    for (; i < n; ++i) {
      const T x = p[src + i];
      const bool h = hole(x);
      dv[i] = h ? Acc(0) : static_cast<Acc>(x);
      dm[i] = h ? Acc(0) : Acc(1);
      if (hb) hb[(dm - m) + i] = h;
    }
  };
  if (!row) {
    std::fill(v, v + (q1 - q0) * C, cv);
    std::fill(m, m + (q1 - q0) * C, cm);
    if (hb) std::fill(hb, hb + (q1 - q0) * C, chole);
    return;
  }
  const std::int64_t in0 = std::max<std::int64_t>(q0, 0), in1 = std::min(q1, W);
  const auto edge = [&](std::int64_t q) {
    const std::int64_t o = (q - q0) * C, src = map_border(q, W, border);
    if (src < 0) {
      std::fill(v + o, v + o + C, cv);
      std::fill(m + o, m + o + C, cm);
      if (hb) std::fill(hb + o, hb + o + C, chole);
    } else {
      span(src * C, C, v + o, m + o);
    }
  };
  for (std::int64_t q = q0; q < in0; ++q) edge(q);
  span(in0 * C, (in1 - in0) * C, v + (in0 - q0) * C, m + (in0 - q0) * C);
  for (std::int64_t q = in1; q < q1; ++q) edge(q);
}

// What the band kernels derive alike from their arguments: the constant border's value and
// weight (both 0 where the constant is a hole), the value of an output without one, whether the
// output is the accumulator's type (written directly), and the least Acc at or above `need`
// (min-weight x the |taps|' sum: x >= least exactly where double(x) >= need).
template <class Acc>
struct NormalizedConstants {
  Acc cv, cm, fillv, least;
  bool direct;
  NormalizedConstants(const BandArgs& a, double nodata, double need) {
    const bool cval_ok = !(std::isnan(a.border_value) || a.border_value == nodata);
    cv = cval_ok ? static_cast<Acc>(a.border_value) : Acc(0);
    cm = cval_ok ? Acc(1) : Acc(0);
    fillv = std::isnan(nodata) ? std::numeric_limits<Acc>::quiet_NaN() : static_cast<Acc>(nodata);
    direct = a.out_type == (std::is_same_v<Acc, float> ? SampleType::f32 : SampleType::f64);
    least = static_cast<Acc>(need);
    if (double(least) < need) least = std::nextafter(least, std::numeric_limits<Acc>::max());
  }
};

}  // namespace
}  // namespace ooc::kernels::OOC_ISA
