// Masked rank filters (issue 48, nodata): a window's valid samples only. A sample is a hole where
// it equals the nodata value or is NaN; holes are found per band from the values (no mask image).
// Normalized convolution is normalized.hpp's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "convert.hpp"
#include "ooc/border.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/image.hpp"

namespace ooc::kernels::masked {

// The hole rule: NaN always (no value to weigh), and the nodata value.
inline bool hole(double v, double nodata) noexcept {
  return std::isnan(v) || v == nodata;
}

// For columns -r .. cols + r - 1: the pixel each reads under the border rule (cols: the
// constant's pixel at the end of a decoded row).
inline std::vector<std::int64_t> column_table(std::int64_t cols, std::int64_t r,
                                              BorderMode border) {
  std::vector<std::int64_t> t(static_cast<std::size_t>(cols + 2 * r));
  for (std::int64_t x = -r; x < cols + r; ++x) {
    const std::int64_t m = map_border(x, cols, border);
    t[static_cast<std::size_t>(x + r)] = m < 0 ? cols : m;
  }
  return t;
}

// Stores v as T: floats as they are (NaN included), integers rounded half to even and saturated.
template <class T>
inline T store(double v) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T{0};
    v = std::nearbyint(v);
    v = std::clamp(v, double(std::numeric_limits<T>::lowest()),
                   double(std::numeric_limits<T>::max()));
    return static_cast<T>(v);
  }
}

// A rank filter over a window's valid samples: of n valid samples, the one of rank
// r (n - 1) / (count - 1) (integer division), r being scipy's rank in the full window of `count`
// samples: a window without holes gives scipy's sample, the minimum and maximum stay the
// extremes, and the median of an even number of valid samples is the lower middle. Nodata where
// the window has no valid sample, or the output's own input sample is a hole (holes stay holes).
struct RankArgs {
  std::int64_t width = 0;
  int channels = 1;
  SampleType type = SampleType::f32;  // input and output
  BorderMode border = BorderMode::reflect;
  double cval = 0, nodata = 0;
  // The window around (y, x): rows y - top .. y - top + h - 1, columns x - left .. x - left + w -
  // 1, the samples where mask (h x w, row-major) is 1 (null: all).
  std::int64_t top = 0, left = 0, h = 1, w = 1;
  const std::uint8_t* mask = nullptr;
  std::int64_t rank = 0, count = 1;
  // The band: out_rows + 2 halo input rows (null: the constant border), halo >= the window's.
  const std::byte* const* rows = nullptr;
  std::int64_t halo = 0, out_rows = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
};

// Bytes of a band's hole map (shared by its threads) and of one thread's counts and window.
inline std::size_t rank_scratch_bytes(std::int64_t rows, std::int64_t halo, std::int64_t cols,
                                      int channels, std::int64_t h, std::int64_t w) {
  const auto padded = static_cast<std::size_t>((cols + 2 * w) * channels);
  return static_cast<std::size_t>(rows + 2 * halo) * padded + 2 * (padded + 1) * 4 +
         static_cast<std::size_t>(h * w) * sizeof(double);
}

// The k-th smallest of v[0, n) (k < n, no NaN), where v has room for n rounded up to 4: in
// float, by counting for each sample those below it and those equal, 4 at a time (a window of
// tens of samples: several times faster than std::nth_element's partitions); else nth_element.
typedef float MaskedF4 __attribute__((vector_size(16)));
typedef int MaskedI4 __attribute__((vector_size(16)));
typedef float MaskedF4u __attribute__((vector_size(16), aligned(4), may_alias));

template <class V>
V kth_smallest(V* v, std::int64_t n, std::int64_t k) {
  if constexpr (std::is_same_v<V, float>) {
    const std::int64_t m = (n + 3) / 4 * 4;
    std::fill(v + n, v + m, std::numeric_limits<float>::infinity());
    for (std::int64_t i = 0; i < n; ++i) {
      const MaskedF4 x = MaskedF4{} + v[i];
      MaskedI4 lt{}, eq{};
      for (std::int64_t j = 0; j < m; j += 4) {
        const MaskedF4 y = *reinterpret_cast<const MaskedF4u*>(v + j);
        lt += y < x;
        eq += y == x;
      }
      const std::int64_t less = -(lt[0] + lt[1] + lt[2] + lt[3]);
      const std::int64_t same = -(eq[0] + eq[1] + eq[2] + eq[3]);
      if (less <= k && k < less + same) return v[i];
    }
  }
  std::nth_element(v, v + k, v + n);
  return v[k];
}

// The output already holds the unmasked kernel's filter of every sample (its sample is the
// masked one wherever a window has no hole): only outputs whose window's rectangle holds a hole
// are computed again, found by sliding counts of holes down and across a map of the band's holes
// (through the border rule along x). Rows in blocks over TBB threads.
template <class T>
void rank_band_of(const RankArgs& a, std::vector<std::uint8_t>& map) {
  const int C = a.channels;
  const std::int64_t W = a.width, in_rows = a.out_rows + 2 * a.halo;
  const std::int64_t reach = std::max(a.left, a.w - 1 - a.left), PS = (W + 2 * reach) * C;
  const std::vector<std::int64_t> cols = column_table(W, reach, a.border);
  const bool cval_hole = hole(a.cval, a.nodata);
  map.resize(static_cast<std::size_t>(in_rows * PS));
  tbb::parallel_for(std::int64_t{0}, in_rows, [&](std::int64_t r) {
    std::uint8_t* m = map.data() + r * PS;
    const T* src = reinterpret_cast<const T*>(a.rows[r]);
    if (!src) {
      std::fill(m, m + PS, std::uint8_t(cval_hole));
      return;
    }
    for (std::int64_t p = 0; p < W + 2 * reach; ++p) {
      const std::int64_t q = cols[static_cast<std::size_t>(p)];
      if (p >= reach && p < W + reach) {  // the row's own columns, in one run
        for (std::int64_t i = 0; i < W * C; ++i)
          m[reach * C + i] = hole(static_cast<double>(src[i]), a.nodata);
        p = W + reach - 1;
        continue;
      }
      for (int c = 0; c < C; ++c)
        m[p * C + c] = q == W ? cval_hole : hole(static_cast<double>(src[q * C + c]), a.nodata);
    }
  });
  // Holes as T's nodata value (convert.hpp). The other outputs are samples of the window, never
  // a hole's value.
  const T fill_value = nodata_of<T>(a.nodata);
  constexpr std::int64_t kBlock = 16;
  tbb::parallel_for(std::int64_t{0}, (a.out_rows + kBlock - 1) / kBlock, [&](std::int64_t blk) {
    thread_local std::vector<std::int32_t> down, across;
    // Float holds every value of the small types exactly.
    using V = std::conditional_t<(sizeof(T) <= 2 || std::is_same_v<T, float>), float, double>;
    thread_local std::vector<V> win;
    down.assign(static_cast<std::size_t>(PS), 0);
    across.resize(static_cast<std::size_t>(PS + C));
    win.resize(static_cast<std::size_t>(a.h * a.w + 4));
    const std::int64_t y0 = blk * kBlock, y1 = std::min(a.out_rows, y0 + kBlock);
    for (std::int64_t y = y0; y < y1; ++y) {
      const std::int64_t top = y + a.halo - a.top;  // the window's first row
      const auto add = [&](std::int64_t r, std::int32_t sign) {
        const std::uint8_t* m = map.data() + r * PS;
        for (std::int64_t i = 0; i < PS; ++i) down[i] += sign * std::int32_t(m[i]);
      };
      if (y == y0) {
        for (std::int64_t i = 0; i < a.h; ++i) add(top + i, 1);
      } else {
        add(top + a.h - 1, 1);
        add(top - 1, -1);
      }
      for (int c = 0; c < C; ++c) across[c] = 0;
      for (std::int64_t i = 0; i < PS; ++i) across[i + C] = across[i] + down[i];
      const std::uint8_t* own = map.data() + (y + a.halo) * PS + reach * C;
      T* o = reinterpret_cast<T*>(a.out + static_cast<std::size_t>(y) * a.out_stride);
      for (std::int64_t x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) {
          const std::int64_t p0 = x - a.left + reach;
          if (across[(p0 + a.w) * C + c] == across[p0 * C + c]) continue;  // no hole
          if (own[x * C + c]) {
            o[x * C + c] = fill_value;
            continue;
          }
          std::int64_t n = 0;
          for (std::int64_t i = 0; i < a.h; ++i) {
            const std::uint8_t* m = map.data() + (top + i) * PS;
            const T* src = reinterpret_cast<const T*>(a.rows[top + i]);
            for (std::int64_t j = 0; j < a.w; ++j) {
              const std::int64_t p = p0 + j;
              if ((a.mask && !a.mask[i * a.w + j]) || m[p * C + c]) continue;
              const std::int64_t q = cols[static_cast<std::size_t>(p)];
              win[n++] = !src || q == W ? static_cast<V>(a.cval) : static_cast<V>(src[q * C + c]);
            }
          }
          if (n == 0) {
            o[x * C + c] = fill_value;
            continue;
          }
          const std::int64_t k = a.count > 1 ? a.rank * (n - 1) / (a.count - 1) : 0;
          o[x * C + c] = store<T>(kth_smallest(win.data(), n, k));
        }
    }
  });
}

inline void rank_band(const RankArgs& a, std::vector<std::uint8_t>& map) {
  dispatch_type(a.type, [&](auto t) { rank_band_of<decltype(t)>(a, map); });
}

}  // namespace ooc::kernels::masked
