// Masked kernels (issue 48, nodata): normalized convolution of a band along rows then columns, and
// rank filters over a window's valid samples. A sample is a hole where it equals the nodata value
// or is NaN; holes are found per band from the values (no mask image). The math is scalar in
// double: the masked paths are new and their bytes must follow scipy's float64 reference, not
// the unmasked kernels' vector order (which stay untouched, byte for byte).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/image.hpp"

namespace ooc::kernels::masked {

// The hole rule: NaN always (no value to weigh), and the nodata value.
inline bool hole(double v, double nodata) noexcept {
  return std::isnan(v) || v == nodata;
}

// Row `src` (cols x channels samples of `type`) as doubles, holes as NaN; null: the constant
// border's row (cval, or NaN where cval is a hole). One more pixel at the end holds cval: the
// column table sends columns of the constant border there.
inline void decode_row(const std::byte* src, SampleType type, std::int64_t cols, int channels,
                       double cval, double nodata, double* dst) {
  const std::int64_t n = cols * channels;
  const double c = hole(cval, nodata) ? std::numeric_limits<double>::quiet_NaN() : cval;
  if (!src) {
    std::fill(dst, dst + n + channels, c);
    return;
  }
  dispatch_type(type, [&](auto t) {
    using T = decltype(t);
    const T* p = reinterpret_cast<const T*>(src);
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(p[i]);
      dst[i] = hole(v, nodata) ? std::numeric_limits<double>::quiet_NaN() : v;
    }
  });
  std::fill(dst + n, dst + n + channels, c);
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

// Normalized convolution of one band: out = sum(k x m) / sum(k m) with the row taps along x, then
// the column taps along y, each pass over the weighted values and over the weights as scipy's
// correlate1d would (a row of the constant border is the constant after the row pass, as
// scipy pads each pass with cval). An output is nodata where the fraction of the window's |taps|
// on valid samples is 0 or below min_weight, where the weights sum to 0, and where its own input
// sample is a hole unless `fill`.
struct SeparableArgs {
  std::int64_t width = 0;
  int channels = 1;
  SampleType in_type = SampleType::f32, out_type = SampleType::f32;
  BorderMode border = BorderMode::reflect;
  double cval = 0;
  const double* row = nullptr;  // correlation order, 2 rx + 1
  std::int64_t rx = 0;
  const double* col = nullptr;  // correlation order, 2 ry + 1
  std::int64_t ry = 0;
  double nodata = 0, min_weight = 0;
  bool fill = false;
  // The band: out_rows + 2 ry input rows (null: the constant border), out_rows output rows.
  const std::byte* const* rows = nullptr;
  std::int64_t out_rows = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
};

// Doubles a band of `rows` output rows takes: values, weights and |weights| after the row pass,
// a decoded row, a row's padded values and weights, and the column pass's three sums.
inline std::size_t separable_scratch_doubles(std::int64_t rows, std::int64_t ry, std::int64_t rx,
                                             std::int64_t cols, int channels) {
  const auto S = static_cast<std::size_t>(cols * channels);
  return 3 * static_cast<std::size_t>(rows + 2 * ry) * S +
         static_cast<std::size_t>((cols + 1) * channels) +
         2 * static_cast<std::size_t>((cols + 2 * rx) * channels) + 3 * S;
}

// Both passes run over whole rows, tap by tap (the row's values and weights laid out once with
// the border's columns, holes as value 0 and weight 0), so that the inner loops have no branch
// and vectorize; a hole adds 0 to each sum, which leaves every sum as a skip would.
inline void separable_band(const SeparableArgs& a, std::vector<double>& scratch) {
  const int C = a.channels;
  const std::int64_t W = a.width, S = W * C, in_rows = a.out_rows + 2 * a.ry;
  const std::int64_t PW = (W + 2 * a.rx) * C;
  scratch.resize(separable_scratch_doubles(a.out_rows, a.ry, a.rx, W, C));
  double* num = scratch.data();
  double* den = num + in_rows * S;
  double* wab = den + in_rows * S;
  double* row = wab + in_rows * S;
  double* pv = row + (W + 1) * C;
  double* pm = pv + PW;
  double* an = pm + PW;
  double* ad = an + S;
  double* aw = ad + S;
  const std::vector<std::int64_t> cols = column_table(W, a.rx, a.border);
  for (std::int64_t i = 0; i < in_rows; ++i) {
    double* n = num + i * S;
    double* d = den + i * S;
    double* w = wab + i * S;
    decode_row(a.rows[i], a.in_type, W, C, a.cval, a.nodata, row);
    if (!a.rows[i]) {  // scipy pads the column pass with cval: the constant, weight 1
      const bool ok = !std::isnan(row[0]);
      std::fill(n, n + S, ok ? row[0] : 0.0);
      std::fill(d, d + S, ok ? 1.0 : 0.0);
      std::fill(w, w + S, ok ? 1.0 : 0.0);
      continue;
    }
    for (std::int64_t p = 0; p < W + 2 * a.rx; ++p)
      for (int c = 0; c < C; ++c) {
        const double v = row[cols[static_cast<std::size_t>(p)] * C + c];
        const bool ok = !std::isnan(v);
        pv[p * C + c] = ok ? v : 0.0;
        pm[p * C + c] = ok ? 1.0 : 0.0;
      }
    std::fill(n, n + S, 0.0);
    std::fill(d, d + S, 0.0);
    std::fill(w, w + S, 0.0);
    for (std::int64_t j = 0; j <= 2 * a.rx; ++j) {
      const double k = a.row[j], ka = std::fabs(k);
      const double* v = pv + j * C;
      const double* m = pm + j * C;
      for (std::int64_t s = 0; s < S; ++s) {
        n[s] += k * v[s];
        d[s] += k * m[s];
        w[s] += ka * m[s];
      }
    }
  }
  double row_abs = 0, col_abs = 0;
  for (std::int64_t j = 0; j <= 2 * a.rx; ++j) row_abs += std::fabs(a.row[j]);
  for (std::int64_t j = 0; j <= 2 * a.ry; ++j) col_abs += std::fabs(a.col[j]);
  const double need = a.min_weight * row_abs * col_abs;
  const double fill_value =
      std::isnan(a.nodata) ? std::numeric_limits<double>::quiet_NaN() : a.nodata;
  dispatch_type(a.out_type, [&](auto t) {
    using T = decltype(t);
    for (std::int64_t y = 0; y < a.out_rows; ++y) {
      std::fill(an, an + S, 0.0);
      std::fill(ad, ad + S, 0.0);
      std::fill(aw, aw + S, 0.0);
      for (std::int64_t i = 0; i <= 2 * a.ry; ++i) {
        const double k = a.col[i], ka = std::fabs(k);
        const double* n = num + (y + i) * S;
        const double* d = den + (y + i) * S;
        const double* w = wab + (y + i) * S;
        for (std::int64_t s = 0; s < S; ++s) {
          an[s] += k * n[s];
          ad[s] += k * d[s];
          aw[s] += ka * w[s];
        }
      }
      T* o = reinterpret_cast<T*>(a.out + static_cast<std::size_t>(y) * a.out_stride);
      // The output's own input sample, for the hole it may be.
      decode_row(a.rows[y + a.ry], a.in_type, W, C, a.cval, a.nodata, row);
      for (std::int64_t s = 0; s < S; ++s) {
        const bool valid =
            (a.fill || !std::isnan(row[s])) && aw[s] > 0 && aw[s] >= need && ad[s] != 0;
        o[s] = store<T>(valid ? an[s] / ad[s] : fill_value);
      }
    }
  });
}

// Normalized convolution with a 2-D kernel (scipy.ndimage.convolve's): out = sum(k x m) / sum(k m)
// over the K x L window, in one pass (the constant border is one padding, as scipy's). Nodata
// as separable_band says.
struct Conv2dArgs {
  std::int64_t width = 0;
  int channels = 1;
  SampleType in_type = SampleType::f32, out_type = SampleType::f32;
  BorderMode border = BorderMode::reflect;
  double cval = 0;
  const double* taps = nullptr;  // correlation order, K x L, row-major
  std::int64_t ry = 0, rx = 0;   // K = 2 ry + 1, L = 2 rx + 1
  double nodata = 0, min_weight = 0;
  bool fill = false;
  const std::byte* const* rows = nullptr;  // out_rows + 2 ry (null: the constant border)
  std::int64_t out_rows = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
};

inline std::size_t conv2d_scratch_doubles(std::int64_t rows, std::int64_t ry, std::int64_t cols,
                                          int channels) {
  return static_cast<std::size_t>(rows + 2 * ry) * static_cast<std::size_t>((cols + 1) * channels);
}

inline void conv2d_band(const Conv2dArgs& a, std::vector<double>& scratch) {
  const int C = a.channels;
  const std::int64_t W = a.width, P = (W + 1) * C, in_rows = a.out_rows + 2 * a.ry;
  const std::int64_t K = 2 * a.ry + 1, L = 2 * a.rx + 1;
  scratch.resize(conv2d_scratch_doubles(a.out_rows, a.ry, W, C));
  double* rows = scratch.data();
  for (std::int64_t i = 0; i < in_rows; ++i)
    decode_row(a.rows[i], a.in_type, W, C, a.cval, a.nodata, rows + i * P);
  const std::vector<std::int64_t> cols = column_table(W, a.rx, a.border);
  double total_abs = 0;
  for (std::int64_t t = 0; t < K * L; ++t) total_abs += std::fabs(a.taps[t]);
  const double need = a.min_weight * total_abs;
  const double fill_value =
      std::isnan(a.nodata) ? std::numeric_limits<double>::quiet_NaN() : a.nodata;
  dispatch_type(a.out_type, [&](auto t) {
    using T = decltype(t);
    for (std::int64_t y = 0; y < a.out_rows; ++y) {
      T* o = reinterpret_cast<T*>(a.out + static_cast<std::size_t>(y) * a.out_stride);
      const double* own = rows + (y + a.ry) * P;
      for (std::int64_t x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) {
          double sn = 0, sd = 0, sw = 0;
          for (std::int64_t i = 0; i < K; ++i) {
            const double* r = rows + (y + i) * P;
            const double* k = a.taps + i * L;
            for (std::int64_t j = 0; j < L; ++j) {
              const double v = r[cols[static_cast<std::size_t>(x + j)] * C + c];
              if (std::isnan(v)) continue;
              sn += k[j] * v;
              sd += k[j];
              sw += std::fabs(k[j]);
            }
          }
          const bool valid =
              (a.fill || !std::isnan(own[x * C + c])) && sw > 0 && sw >= need && sd != 0;
          o[x * C + c] = store<T>(valid ? sn / sd : fill_value);
        }
    }
  });
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

inline std::size_t rank_scratch_doubles(std::int64_t rows, std::int64_t halo, std::int64_t cols,
                                        int channels, std::int64_t h, std::int64_t w) {
  return static_cast<std::size_t>(rows + 2 * halo) *
             static_cast<std::size_t>((cols + 1) * channels) +
         static_cast<std::size_t>(h * w) + 2 * static_cast<std::size_t>((cols + w + 1) * channels);
}

// only_holes: the output holds the filter of every sample already (the unmasked kernel's, which
// gives the same sample where a window has no hole): only outputs whose window's rectangle holds a
// hole are computed here, found by sliding counts of holes down and across.
inline void rank_band(const RankArgs& a, std::vector<double>& scratch, bool only_holes = false) {
  const int C = a.channels;
  const std::int64_t W = a.width, P = (W + 1) * C, in_rows = a.out_rows + 2 * a.halo;
  const std::int64_t reach = std::max(a.left, a.w - 1 - a.left);
  scratch.resize(rank_scratch_doubles(a.out_rows, a.halo, W, C, a.h, a.w));
  double* rows = scratch.data();
  double* win = rows + in_rows * P;
  double* down = win + a.h * a.w;             // holes in the window's rows, per padded column
  double* across = down + (W + a.w + 1) * C;  // their running sums along the padded row
  for (std::int64_t i = 0; i < in_rows; ++i)
    decode_row(a.rows[i], a.type, W, C, a.cval, a.nodata, rows + i * P);
  const std::vector<std::int64_t> cols = column_table(W, reach, a.border);
  const std::int64_t PW = W + 2 * reach;
  const auto add_row = [&](std::int64_t r, double sign) {
    const double* src = rows + r * P;
    for (std::int64_t p = 0; p < PW; ++p)
      for (int c = 0; c < C; ++c)
        if (std::isnan(src[cols[static_cast<std::size_t>(p)] * C + c])) down[p * C + c] += sign;
  };
  const double fill_value =
      std::isnan(a.nodata) ? std::numeric_limits<double>::quiet_NaN() : a.nodata;
  dispatch_type(a.type, [&](auto t) {
    using T = decltype(t);
    for (std::int64_t y = 0; y < a.out_rows; ++y) {
      T* o = reinterpret_cast<T*>(a.out + static_cast<std::size_t>(y) * a.out_stride);
      const std::int64_t top = y + a.halo - a.top;
      const double* first = rows + top * P;  // the window's first row
      const double* own = rows + (y + a.halo) * P;
      if (only_holes) {
        if (y == 0) {
          std::fill(down, down + PW * C, 0.0);
          for (std::int64_t i = 0; i < a.h; ++i) add_row(top + i, 1);
        } else {
          add_row(top + a.h - 1, 1);
          add_row(top - 1, -1);
        }
        std::fill(across, across + C, 0.0);
        for (std::int64_t p = 0; p < PW; ++p)
          for (int c = 0; c < C; ++c) across[(p + 1) * C + c] = across[p * C + c] + down[p * C + c];
      }
      for (std::int64_t x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) {
          if (std::isnan(own[x * C + c])) {
            o[x * C + c] = store<T>(fill_value);
            continue;
          }
          if (only_holes) {
            const std::int64_t p0 = x - a.left + reach;
            if (across[(p0 + a.w) * C + c] - across[p0 * C + c] == 0) continue;
          }
          std::int64_t n = 0;
          for (std::int64_t i = 0; i < a.h; ++i)
            for (std::int64_t j = 0; j < a.w; ++j) {
              if (a.mask && !a.mask[i * a.w + j]) continue;
              const double v =
                  first[i * P + cols[static_cast<std::size_t>(x - a.left + j + reach)] * C + c];
              if (!std::isnan(v)) win[n++] = v;
            }
          if (n == 0) {
            o[x * C + c] = store<T>(fill_value);
            continue;
          }
          const std::int64_t k = a.count > 1 ? a.rank * (n - 1) / (a.count - 1) : 0;
          std::nth_element(win, win + k, win + n);
          o[x * C + c] = store<T>(win[k]);
        }
    }
  });
}

}  // namespace ooc::kernels::masked
