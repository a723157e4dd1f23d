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

// The k-th smallest of v[0, n) (k < n, no NaN), where v has room for n rounded up to 8: float
// by counting (select.cpp), double by std::nth_element.
float kth_smallest_f32(float* v, std::int64_t n, std::int64_t k);

// The masked n x n median (n 3 or 5, float) of median_lanes() adjacent windows at once
// (median_lanes_impl.cpp): rows[i] and holes[i] point at window row i's first sample and its hole
// flags (1: hole) for the first lane; out takes the lanes' medians, the rule's.
std::int64_t median_lanes();
void median_f32(int n, const float* const* rows, const std::uint8_t* const* holes, float* out);

// Outputs [x0, x1) of one row of the masked n x n median (n 3 or 5, float), x1 - x0 >= the lanes,
// every window inside the rows: rows[i] is window row i's image column 0, bits[i] its holes
// (hole_bits_f32). A window with a hole finds which samples are holes (NaN, or nd unless
// nan_only) from the values as they are loaded; own holes take `fill`.
void median_row_f32(int n, const float* const* rows, const std::uint8_t* const* bits,
                    std::int64_t x0, std::int64_t x1, bool nan_only, float nd, float fill,
                    float* out);
// out[l] = the n x n median network's sample of window l (n 3 or 5; its n^2 samples at
// w[l n^2], row by row), l < count <= median_lanes(): windows without a hole, as the unmasked
// filter's network filters them, bit for bit (which of two zeros it leaves included).
void median_windows_f32(int n, const float* w, std::int64_t count, float* out);
// The holes of a row of w floats as bits (bit x % 8 of byte x / 8), for median_row_f32: its
// windows without one skip the hole tests. bits has room for w / 8 + 16 bytes (read past w).
void hole_bits_f32(const float* row, std::int64_t w, bool nan_only, float nd, std::uint8_t* bits);
inline std::int64_t hole_bits_bytes(std::int64_t w) {
  return w / 8 + 16;
}

// Whether the masked 3 x 3 and 5 x 5 float medians of one channel take this band in one pass
// (rank_band computes every output; the unmasked kernel need not run first): the windows hold
// every sample and are centred, and a row holds the lanes and both window edges.
inline bool rank_band_fused(const RankArgs& a) {
  return a.type == SampleType::f32 && a.channels == 1 && !a.mask && a.h == a.w &&
         (a.h == 3 || a.h == 5) && a.top == a.h / 2 && a.left == a.w / 2 && a.count == a.h * a.w &&
         a.rank == a.count / 2 && a.width >= median_lanes() + a.w;
}

template <class V>
V kth_smallest(V* v, std::int64_t n, std::int64_t k) {
  if constexpr (std::is_same_v<V, float>) {
    return kth_smallest_f32(v, n, k);
  } else {
    std::nth_element(v, v + k, v + n);
    return v[k];
  }
}

// The output already holds the unmasked kernel's filter of every sample (its sample is the
// masked one wherever a window has no hole): only outputs whose window's rectangle holds a hole
// are computed again, found by sliding counts of holes down and across a map of the band's holes
// (through the border rule along x). Rows in blocks over TBB threads. Where rank_band_fused, no
// unmasked output is there: each row's inner windows go through median_row_f32 in one pass over
// the samples (a second pass over a band that no longer fits the cache cost more than the
// filter), and only the outputs whose window meets the row's ends or the constant border's rows
// through the map, which then holds only the columns those read unless such a row is there.
template <class T>
void rank_band_of(const RankArgs& a, std::vector<std::uint8_t>& map) {
  const int C = a.channels;
  const std::int64_t W = a.width, in_rows = a.out_rows + 2 * a.halo;
  const std::int64_t reach = std::max(a.left, a.w - 1 - a.left), PS = (W + 2 * reach) * C;
  const std::vector<std::int64_t> cols = column_table(W, reach, a.border);
  const bool cval_hole = hole(a.cval, a.nodata);
  const bool has_value = !std::isnan(a.nodata) && holds<T>(a.nodata);
  const T value = has_value ? static_cast<T>(a.nodata) : T{};
  const bool fused = rank_band_fused(a);
  const std::int64_t BS = fused ? hole_bits_bytes(W) : 0;  // a row's hole bits (fused)
  map.resize(static_cast<std::size_t>(in_rows * PS));
  bool every_row = true;  // no row of the constant border
  for (std::int64_t r = 0; r < in_rows; ++r) every_row = every_row && a.rows[r] != nullptr;
  // Fused with every row there: the map's columns the edge windows read (3 reach: a window at
  // column reach - 1 reads up to 2 reach - 1, its own sample included).
  const std::int64_t edge = fused && every_row ? std::min(W, 3 * reach) : W;
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
        // In T, branch-free, so that it vectorizes: NaN, and the value where T holds it.
        // Locals: the byte stores may alias the captured ones, which would be read again.
        std::uint8_t* mo = m + reach * C;
        const T nd = value;
        const bool hv = has_value;
        const auto run = [&](std::int64_t i0, std::int64_t i1) {
          for (std::int64_t i = i0; i < i1; ++i) {
            const T v = src[i];
            bool h = hv & (v == nd);
            if constexpr (std::is_floating_point_v<T>) h = h | (v != v);
            mo[i] = h;
          }
        };
        const std::int64_t count = W * C, head = edge * C;
        run(0, head);
        run(std::max(head, count - head), count);
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
  // The window's samples (the footprint's), row by row.
  struct Tap {
    std::int64_t i, j;
  };
  std::vector<Tap> taps;
  for (std::int64_t i = 0; i < a.h; ++i)
    for (std::int64_t j = 0; j < a.w; ++j)
      if (!a.mask || a.mask[i * a.w + j]) taps.push_back({i, j});
  // The 3 x 3 and 5 x 5 medians of floats, one channel, go through median_f32's lanes.
  const std::int64_t lanes =
      std::is_same_v<T, float> && C == 1 && !a.mask && a.h == a.w && (a.h == 3 || a.h == 5) &&
              a.top == a.h / 2 && a.left == a.w / 2 && a.count == a.h * a.w && a.rank == a.count / 2
          ? median_lanes()
          : 0;
  // Which windows hold a hole: for one channel and windows of up to 8 x 8, ORs of the map's
  // bytes row by row (a few vector ops a row); else counts slid down and summed across.
  const bool ored = C == 1 && a.h <= 8 && a.w <= 8;
  constexpr std::int64_t kBlock = 32;
  tbb::parallel_for(std::int64_t{0}, (a.out_rows + kBlock - 1) / kBlock, [&](std::int64_t blk) {
    thread_local std::vector<std::int32_t> down, across;
    thread_local std::vector<std::uint8_t> anyrow, wany;
    if (ored) {
      anyrow.resize(static_cast<std::size_t>(PS));
      wany.resize(static_cast<std::size_t>(W));
    }
    // Float holds every value of the small types exactly.
    using V = std::conditional_t<(sizeof(T) <= 2 || std::is_same_v<T, float>), float, double>;
    thread_local std::vector<V> win;
    down.assign(static_cast<std::size_t>(PS), 0);
    across.resize(static_cast<std::size_t>(PS + C));
    win.resize(static_cast<std::size_t>(a.h * a.w + 8));
    thread_local std::vector<const float*> lane_src;
    thread_local std::vector<const std::uint8_t*> lane_map;
    lane_src.resize(static_cast<std::size_t>(std::max<std::int64_t>(a.h, 16)));
    lane_map.resize(static_cast<std::size_t>(a.h));
    thread_local std::vector<const T*> src_at;
    thread_local std::vector<const std::uint8_t*> map_at;
    src_at.resize(static_cast<std::size_t>(a.h));
    map_at.resize(static_cast<std::size_t>(a.h));
    const std::int64_t y0 = blk * kBlock, y1 = std::min(a.out_rows, y0 + kBlock);
    // Fused: the hole bits of this block's input rows, each made just before the first output
    // row that reads it, while the row is in the cache the network then reads it from.
    thread_local std::vector<std::uint8_t> bits;
    const std::int64_t r0 = y0 + a.halo - a.top;  // the block's first input row
    const auto bits_of = [&](std::int64_t r) { return bits.data() + (r - r0) * BS; };
    const auto make_bits = [&](std::int64_t r) {
      if (a.rows[r])
        hole_bits_f32(reinterpret_cast<const float*>(a.rows[r]), W, !has_value,
                      static_cast<float>(value), bits.data() + (r - r0) * BS);
    };
    if (fused) {
      bits.resize(static_cast<std::size_t>((kBlock + a.h) * BS));
      for (std::int64_t r = r0; r < r0 + a.h - 1; ++r) make_bits(r);
    }
    for (std::int64_t y = y0; y < y1; ++y) {
      const std::int64_t top = y + a.halo - a.top;  // the window's first row
      if (fused) {
        // No hole map to slide: every output is computed below.
        make_bits(top + a.h - 1);
      } else if (ored) {
        // One channel, a small window: the window's rows of the map ORed, then its columns. On
        // locals: the byte stores may alias anything, which would be read again each time.
        std::uint8_t* const any = anyrow.data();
        std::uint8_t* const wa = wany.data();
        const std::int64_t ps = PS, width = W, h = a.h, w = a.w;
        const std::uint8_t* const m0 = map.data() + top * ps;
        std::copy(m0, m0 + ps, any);
        for (std::int64_t i = 1; i < h; ++i) {
          const std::uint8_t* const m = m0 + i * ps;
          for (std::int64_t p = 0; p < ps; ++p) any[p] = static_cast<std::uint8_t>(any[p] | m[p]);
        }
        const std::uint8_t* const first = any + (reach - a.left);
        std::copy(first, first + width, wa);
        for (std::int64_t j = 1; j < w; ++j) {
          const std::uint8_t* const f = first + j;
          for (std::int64_t x = 0; x < width; ++x) wa[x] = static_cast<std::uint8_t>(wa[x] | f[x]);
        }
      } else {
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
        if (C == 1) {  // the running sum in a register: no store-to-load chain
          std::int32_t run = 0;
          for (std::int64_t i = 0; i < PS; ++i) across[i + 1] = run += down[i];
        } else {
          for (std::int64_t i = 0; i < PS; ++i) across[i + C] = across[i] + down[i];
        }
      }
      const std::uint8_t* own = map.data() + (y + a.halo) * PS + reach * C;
      // The window's rows, for the samples inside the row (none from the constant border).
      bool inner = true;
      for (std::int64_t i = 0; i < a.h; ++i) {
        src_at[i] = reinterpret_cast<const T*>(a.rows[top + i]);
        map_at[i] = map.data() + (top + i) * PS;
        inner = inner && src_at[i] != nullptr;
      }
      T* o = reinterpret_cast<T*>(a.out + static_cast<std::size_t>(y) * a.out_stride);
      // Output (x, c), whose window holds a hole, again over its valid samples; the last
      // column it did (more than x where the lanes did several).
      const auto redo = [&](std::int64_t x, int c) -> std::int64_t {
        const std::int64_t p0 = x - a.left + reach;
        if (own[x * C + c]) {
          o[x * C + c] = fill_value;
          return x;
        }
        if (lanes > 0 && inner && x >= a.left && x + lanes - a.left + a.w <= W) {
          // The median of `lanes` windows at once (holes -inf and +inf in turn).
          for (std::int64_t i = 0; i < a.h; ++i) {
            lane_src[i] = reinterpret_cast<const float*>(src_at[i]) + (x - a.left);
            lane_map[i] = map_at[i] + p0;
          }
          float med[16];
          median_f32(static_cast<int>(a.h), lane_src.data(), lane_map.data(), med);
          for (std::int64_t l = 0; l < lanes; ++l)
            o[x + l] = own[x + l] ? fill_value : static_cast<T>(med[l]);
          return x + lanes - 1;
        }
        std::int64_t n = 0;
        if (inner && x >= a.left && x - a.left + a.w <= W) {
          // Inside the row: no border rule; every sample written, counted where valid.
          const std::int64_t q0 = (x - a.left) * C + c, m0 = p0 * C + c;
          for (const Tap& t : taps) {
            win[n] = static_cast<V>(src_at[t.i][q0 + t.j * C]);
            n += !map_at[t.i][m0 + t.j * C];
          }
        } else {
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
        }
        if (n == 0) {
          o[x * C + c] = fill_value;
          return x;
        }
        const std::int64_t k = a.count > 1 ? a.rank * (n - 1) / (a.count - 1) : 0;
        o[x * C + c] = store<T>(kth_smallest(win.data(), n, k));
        return x;
      };
      if (fused) {
        // The windows the vectors do not take (the row's ends, rows of the constant border):
        // those without a hole through the network too, a few at a time, so that every window
        // without one is the unmasked filter's sample; the others over their valid samples.
        thread_local std::vector<float> batch;
        std::int64_t batch_x[16], batched = 0;
        const std::int64_t wn = a.h * a.w;
        batch.resize(static_cast<std::size_t>(lanes * wn));
        const auto flush = [&] {
          float med[16];
          if (batched > 0) median_windows_f32(static_cast<int>(a.h), batch.data(), batched, med);
          for (std::int64_t l = 0; l < batched; ++l) o[batch_x[l]] = static_cast<T>(med[l]);
          batched = 0;
        };
        const auto end_window = [&](std::int64_t x) {
          const std::int64_t p0 = x - a.left + reach;
          float* wv = batch.data() + batched * wn;
          bool any = false;
          for (std::int64_t i = 0; i < a.h; ++i) {
            const std::uint8_t* m = map.data() + (top + i) * PS;
            const T* src = reinterpret_cast<const T*>(a.rows[top + i]);
            for (std::int64_t j = 0; j < a.w; ++j) {
              const std::int64_t p = p0 + j, q = cols[static_cast<std::size_t>(p)];
              any = any || m[p] != 0;
              wv[i * a.w + j] =
                  !src || q == W ? static_cast<float>(a.cval) : static_cast<float>(src[q]);
            }
          }
          if (any) {
            redo(x, 0);
            return;
          }
          batch_x[batched++] = x;
          if (batched == lanes) flush();
        };
        const std::int64_t x1 = W - (a.w - 1 - a.left);
        std::int64_t x = 0;
        if (inner) {
          const float* fr[5];
          const std::uint8_t* fb[5];
          for (std::int64_t i = 0; i < a.h; ++i) {
            fr[i] = reinterpret_cast<const float*>(src_at[i]);
            fb[i] = bits_of(top + i);
          }
          median_row_f32(static_cast<int>(a.h), fr, fb, a.left, x1,
                         std::is_same_v<T, float> && !has_value, static_cast<float>(value),
                         static_cast<float>(fill_value), reinterpret_cast<float*>(o));
          for (; x < a.left; ++x) end_window(x);
          x = x1;
        }
        for (; x < W; ++x) end_window(x);
        flush();
      } else if (ored) {
        const std::uint8_t* wa = wany.data();
        for (std::int64_t x = 0; x < W; ++x)
          if (wa[x]) x = redo(x, 0);
      } else if (C == 1) {  // a tight scan for the windows with holes
        const std::int32_t* h0 = across.data() + (reach - a.left);
        const std::int32_t* h1 = h0 + a.w;
        for (std::int64_t x = 0; x < W; ++x)
          if (h1[x] != h0[x]) x = redo(x, 0);
      } else {
        for (std::int64_t x = 0; x < W; ++x)
          for (int c = 0; c < C; ++c) {
            const std::int64_t p0 = x - a.left + reach;
            if (across[(p0 + a.w) * C + c] != across[p0 * C + c]) redo(x, c);
          }
      }
    }
  });
}

inline void rank_band(const RankArgs& a, std::vector<std::uint8_t>& map) {
  dispatch_type(a.type, [&](auto t) { rank_band_of<decltype(t)>(a, map); });
}

}  // namespace ooc::kernels::masked
