// The masked rank filters' CUDA kernels (rank.cuh): one thread an output sample, rows in a loop;
// windows of up to kMaskedRankMaxSamples copied and counted, larger ones selected a bit at a time.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cpu/masked/convert.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/masked/holes.cuh"
#include "kernels/cuda/masked/rank.cuh"
#include "ooc/detail/sample_type.hpp"

namespace ooc::cuda {
namespace {

constexpr int kThreads = 128;

// The values the CPU selects among (masked.hpp's V): float holds every value of the small types.
template <class T>
using Select = std::conditional_t<(sizeof(T) <= 2 || std::is_same_v<T, float>), float, double>;

// f(v) for each valid sample v (as V) of the window of output row y, sample (x, c): the border
// rule by index, the constant where it is no hole.
template <class T, class F>
__device__ __forceinline__ void each_valid(const MaskedRankLaunch& l, const Holes<T>& hole,
                                           Select<T> cv, bool cval_ok, std::int64_t y,
                                           std::int64_t x, std::int64_t c, F&& f) {
  using V = Select<T>;
  const int C = l.channels;
  for (std::int64_t k = 0; k < l.d; ++k) {
    const std::byte* plane = l.planes[k];
    for (std::int64_t i = 0; i < l.h; ++i) {
      const std::int64_t r = y - l.top + i, image_row = l.y0 + r;
      const bool constant_row = !plane || (l.border == BorderMode::constant &&
                                           (image_row < 0 || image_row >= l.image_height));
      const T* src = constant_row
                         ? nullptr
                         : reinterpret_cast<const T*>(plane + r * std::int64_t(l.in_stride));
      const std::uint8_t* mask = l.mask ? l.mask + (k * l.h + i) * l.w : nullptr;
      for (std::int64_t j = 0; j < l.w; ++j) {
        if (mask && !mask[j]) continue;
        const std::int64_t q = constant_row ? -1 : map_index(x - l.left + j, l.width, l.border);
        if (q < 0) {
          if (cval_ok) f(cv);
        } else {
          const T t = src[q * C + c];
          if (!hole(t)) f(static_cast<V>(t));
        }
      }
    }
  }
}

template <class T>
__global__ void masked_rank(MaskedRankLaunch l, Holes<T> hole, Select<T> cv, bool cval_ok, T fill) {
  using V = Select<T>;
  const int C = l.channels;
  const std::int64_t n_samples = l.width * C;
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= n_samples) return;
  const std::int64_t x = s / C, c = s - x * C;
  V v[kMaskedRankMaxSamples];
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    T* out = reinterpret_cast<T*>(l.out + static_cast<std::size_t>(y) * l.out_stride);
    const T* own = reinterpret_cast<const T*>(l.own + static_cast<std::size_t>(y) * l.in_stride);
    if (hole(own[s])) {
      out[s] = fill;
      continue;
    }
    int n = 0;
    each_valid<T>(l, hole, cv, cval_ok, y, x, c, [&](V value) { v[n++] = value; });
    if (n == 0) {
      out[s] = fill;
      continue;
    }
    const std::int64_t k = l.count > 1 ? l.rank * (n - 1) / (l.count - 1) : 0;
    V pick = v[0];
    for (int i = 0; i < n; ++i) {
      int less = 0, same = 0;
      for (int j = 0; j < n; ++j) {
        less += v[j] < v[i];
        same += v[j] == v[i];
      }
      if (less <= k && k < less + same) {
        pick = v[i];
        break;
      }
    }
    out[s] = store_as<T, V>(pick);
  }
}

// Keys that order as the values (-0 before +0): floats by the sign-flip rule.
__device__ __forceinline__ std::uint32_t key_of(float v) {
  const std::uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ std::uint64_t key_of(double v) {
  const auto u = static_cast<std::uint64_t>(__double_as_longlong(v));
  return (u >> 63) ? ~u : (u | (std::uint64_t{1} << 63));
}
__device__ __forceinline__ float value_of(std::uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
__device__ __forceinline__ double value_of(std::uint64_t k) {
  const std::uint64_t top = std::uint64_t{1} << 63;
  return __longlong_as_double(static_cast<long long>((k & top) ? (k & ~top) : ~k));
}

// Windows beyond kMaskedRankMaxSamples: no copy of the window, which is read again per pass from
// the cache. A pass counts the valid samples; then the key of rank k is found a bit at a time
// (a pass per bit: how many keys with the bits found so far have a 0 next), or for the least or
// the greatest (minimum, maximum) in one pass.
template <class T>
__global__ void masked_rank_bits(MaskedRankLaunch l, Holes<T> hole, Select<T> cv, bool cval_ok,
                                 T fill) {
  using V = Select<T>;
  using K = std::conditional_t<std::is_same_v<V, float>, std::uint32_t, std::uint64_t>;
  const int C = l.channels;
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= l.width * C) return;
  const std::int64_t x = s / C, c = s - x * C;
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    T* out = reinterpret_cast<T*>(l.out + static_cast<std::size_t>(y) * l.out_stride);
    const T* own = reinterpret_cast<const T*>(l.own + static_cast<std::size_t>(y) * l.in_stride);
    if (hole(own[s])) {
      out[s] = fill;
      continue;
    }
    const auto each = [&](auto&& f) {
      each_valid<T>(l, hole, cv, cval_ok, y, x, c, [&](V value) { f(key_of(value)); });
    };
    std::int64_t n = 0;
    each([&](K) { ++n; });
    if (n == 0) {
      out[s] = fill;
      continue;
    }
    std::int64_t k = l.count > 1 ? l.rank * (n - 1) / (l.count - 1) : 0;
    K found = 0;
    if (k == 0) {
      found = ~K(0);
      each([&](K key) { found = key < found ? key : found; });
    } else if (k == n - 1) {
      each([&](K key) { found = key > found ? key : found; });
    } else {
      for (int bit = 8 * static_cast<int>(sizeof(K)) - 1; bit >= 0; --bit) {
        const K high = found >> bit;  // the bits found so far, then a 0
        std::int64_t below = 0;
        each([&](K key) { below += (key >> bit) == high; });
        if (k >= below) {
          k -= below;
          found |= K(1) << bit;
        }
      }
    }
    out[s] = store_as<T, V>(value_of(found));
  }
}

}  // namespace

void masked_rank_async(const MaskedRankLaunch& l, cudaStream_t stream) {
  dispatch_type(l.type, [&](auto t) {
    using T = decltype(t);
    using V = Select<T>;
    const bool cval_ok = !(std::isnan(l.cval) || l.cval == l.nodata);
    const T fill = kernels::masked::nodata_of<T>(l.nodata);
    const std::int64_t n = l.width * l.channels;
    const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads), grid_rows(l.out_rows));
    if (l.count <= kMaskedRankMaxSamples)
      masked_rank<T><<<grid, kThreads, 0, stream>>>(l, holes_of<T>(l.nodata),
                                                    static_cast<V>(l.cval), cval_ok, fill);
    else
      masked_rank_bits<T><<<grid, kThreads, 0, stream>>>(l, holes_of<T>(l.nodata),
                                                         static_cast<V>(l.cval), cval_ok, fill);
    OOC_KERNEL_TRY(cudaGetLastError());
  });
}

}  // namespace ooc::cuda
