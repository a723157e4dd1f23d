// The masked rank filters of a volume in 3-D (volume.hpp): the window's planes and rows decoded
// once a band, padded across the row by the border rule, holes as NaN (in float for types it
// holds exactly, else double); then each output whose window holds a hole (every output, where
// no unmasked filter ran first) selects its rank among the valid samples (masked.hpp's rule).
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "masked.hpp"
#include "volume.hpp"

namespace ooc::kernels::masked {
namespace {

template <class T>
using Decoded = std::conditional_t<(sizeof(T) <= 2 || std::is_same_v<T, float>), float, double>;

struct RankGeometry {
  std::int64_t pw, R, per_plane, first_row, first_plane;
  explicit RankGeometry(const VolumeRankArgs& a)
      : pw((a.width + a.w - 1) * a.channels),
        R(a.out_rows + a.h - 1),
        per_plane(a.out_rows + 2 * a.halo),
        first_row(a.halo - a.top),
        first_plane(a.plane_halo - a.front) {}
  std::size_t elems(const VolumeRankArgs& a) const {
    return static_cast<std::size_t>(a.d * R * pw);
  }
};

template <class T>
void run(const VolumeRankArgs& a, std::vector<std::byte>& scratch) {
  using V = Decoded<T>;
  const RankGeometry g(a);
  const int C = a.channels;
  const std::int64_t W = a.width, n = W * C, pw = g.pw, R = g.R;
  scratch.resize(g.elems(a) * sizeof(V));
  V* const rows = reinterpret_cast<V*>(scratch.data());
  const V nan = std::numeric_limits<V>::quiet_NaN();
  const V cv = hole(a.cval, a.nodata) ? nan : static_cast<V>(a.cval);
  const bool has_value = !std::isnan(a.nodata) && holds<T>(a.nodata);
  const T value = has_value ? static_cast<T>(a.nodata) : T{};
  // Plane k, row r of the window's rows: padded, holes NaN.
  tbb::parallel_for(std::int64_t{0}, a.d * R, [&](std::int64_t i) {
    const std::int64_t k = i / R, r = i % R;
    const T* src =
        reinterpret_cast<const T*>(a.rows[(g.first_plane + k) * g.per_plane + g.first_row + r]);
    V* to = rows + i * pw;
    if (!src) {
      std::fill(to, to + pw, cv);
      return;
    }
    const auto put = [&](std::int64_t at, std::int64_t from, std::int64_t count) {
      for (std::int64_t j = 0; j < count; ++j) {  // branch-free: it vectorizes
        const T v = src[from + j];
        bool h = has_value & (v == value);
        if constexpr (std::is_floating_point_v<T>) h = h | (v != v);
        to[at + j] = h ? nan : static_cast<V>(v);
      }
    };
    for (std::int64_t p = 0; p < W + a.w - 1; ++p) {
      if (p == a.left) {  // the row's own columns in one run
        put(p * C, 0, W * C);
        p += W - 1;
        continue;
      }
      const std::int64_t x = map_border(p - a.left, W, a.border);
      if (x < 0)
        std::fill(to + p * C, to + (p + 1) * C, cv);
      else
        put(p * C, x * C, C);
    }
  });
  std::vector<std::int64_t> taps;  // the window's samples' offsets from its first
  for (std::int64_t k = 0; k < a.d; ++k)
    for (std::int64_t i = 0; i < a.h; ++i)
      for (std::int64_t j = 0; j < a.w; ++j)
        if (!a.mask || a.mask[(k * a.h + i) * a.w + j]) taps.push_back((k * R + i) * pw + j * C);
  const T fill_value = nodata_of<T>(a.nodata);
  tbb::parallel_for(std::int64_t{0}, a.out_rows, [&](std::int64_t y) {
    thread_local std::vector<V> win;
    thread_local std::vector<std::uint8_t> any, wa;
    win.resize(taps.size() + 8);
    const T* own = reinterpret_cast<const T*>(a.rows[a.plane_halo * g.per_plane + a.halo + y]);
    T* o = reinterpret_cast<T*>(a.out + static_cast<std::size_t>(y) * a.out_stride);
    if (a.unmasked_done) {  // which windows hold a hole: the box's rows ORed, then its columns
      any.assign(static_cast<std::size_t>(pw), 0);
      for (std::int64_t k = 0; k < a.d; ++k)
        for (std::int64_t i = 0; i < a.h; ++i) {
          const V* r = rows + (k * R + y + i) * pw;
          for (std::int64_t s = 0; s < pw; ++s) any[s] |= static_cast<std::uint8_t>(r[s] != r[s]);
        }
      wa.assign(any.begin(), any.begin() + n);
      for (std::int64_t j = 1; j < a.w; ++j)
        for (std::int64_t s = 0; s < n; ++s) wa[s] |= any[s + j * C];
    }
    const V* base = rows + y * pw;
    for (std::int64_t s = 0; s < n; ++s) {
      if (a.unmasked_done && !wa[s]) continue;
      if (hole(static_cast<double>(own[s]), a.nodata)) {
        o[s] = fill_value;
        continue;
      }
      std::int64_t m = 0;
      for (const std::int64_t t : taps) {
        const V v = base[s + t];
        win[m] = v;
        m += v == v;
      }
      if (m == 0) {
        o[s] = fill_value;
        continue;
      }
      const std::int64_t k = a.count > 1 ? a.rank * (m - 1) / (a.count - 1) : 0;
      o[s] = store<T>(static_cast<double>(kth_smallest(win.data(), m, k)));
    }
  });
}

}  // namespace

void volume_rank_band(const VolumeRankArgs& a, std::vector<std::byte>& scratch) {
  dispatch_type(a.type, [&](auto t) { run<decltype(t)>(a, scratch); });
}

std::size_t volume_rank_band_bytes(const VolumeRankArgs& a) {
  return dispatch_type(
      a.type, [&](auto t) { return RankGeometry(a).elems(a) * sizeof(Decoded<decltype(t)>); });
}

}  // namespace ooc::kernels::masked
