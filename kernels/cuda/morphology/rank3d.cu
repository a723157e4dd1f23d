// CUDA 3-D rank filters (rank3d.cuh): one thread per output sample, its window gathered through
// the caches (neighbouring threads read mostly the same samples) into registers padded with the
// type's largest value, which never changes a rank below the window's count; then the sample with
// at most `rank` smaller ones and more than `rank` smaller-or-equal ones, in the order that puts
// -0 below +0, as the CPU's network sorts. The 3 x 3 x 3 median takes a selection network made at
// compile time instead. Larger windows and footprints: rank3d_select_kernel (a radix select).
#include <cuda_runtime.h>

#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/cpu/morphology/border_constant.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "ooc/detail/sample_type.hpp"
#include "rank3d.cuh"

namespace ooc::cuda {
namespace {

template <class T>
__device__ __forceinline__ T largest() {
  if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}

// a before b: the samples' order, -0 before +0 (NaN is handled apart).
template <class T>
__device__ __forceinline__ bool before(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return a < b || (a == b && signbit(a) && !signbit(b));
  else
    return a < b;
}

// A selection network for the rank-th of `count` samples (padded to 32 wires with the largest
// value), made at compile time: Batcher's odd-even merge sort of 32 wires, less its comparators
// that only move padding, less those the output wire does not depend on. For the 3 x 3 x 3 median
// it is a few times fewer operations than counting.
struct Network {
  int n = 0;
  int a[256] = {}, b[256] = {};
};
__host__ __device__ constexpr Network selection_network(int count, int rank) {
  Network all;
  for (int p = 1; p < 32; p *= 2)
    for (int k = p; k >= 1; k /= 2)
      for (int j = k % p; j <= 31 - k; j += 2 * k)
        for (int i = 0; i <= (k - 1 < 31 - j - k ? k - 1 : 31 - j - k); ++i)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) {
            all.a[all.n] = i + j;
            all.b[all.n] = i + j + k;
            ++all.n;
          }
  // Backwards from the output wire: a comparator matters if it writes a wire read later.
  bool live[32] = {};
  bool keep[256] = {};
  live[rank] = true;
  for (int t = all.n - 1; t >= 0; --t) {
    if (all.b[t] >= count) continue;  // its larger wire is padding: min and max leave both
    if (live[all.a[t]] || live[all.b[t]]) {
      keep[t] = true;
      live[all.a[t]] = live[all.b[t]] = true;
    }
  }
  Network net;
  for (int t = 0; t < all.n; ++t)
    if (keep[t]) {
      net.a[net.n] = all.a[t];
      net.b[net.n] = all.b[t];
      ++net.n;
    }
  return net;
}

template <int Count, int Rank>
struct Selection {
  static constexpr Network net = selection_network(Count, Rank);
};

template <class T, int A, int B>
__device__ __forceinline__ void exchange(T* v) {
  const bool swap = before(v[B], v[A]);
  const T lo = swap ? v[B] : v[A], hi = swap ? v[A] : v[B];
  v[A] = lo;
  v[B] = hi;
}

template <class T, int Count, int Rank, int... I>
__device__ __forceinline__ T run_network(T* v, std::integer_sequence<int, I...>) {
  using S = Selection<Count, Rank>;
  (exchange<T, S::net.a[I], S::net.b[I]>(v), ...);
  return v[Rank];
}

// The rank-th of the window's Count samples through the network (the window has exactly Count).
template <class T, int Count, int Rank>
__global__ void rank3d_network_kernel(const Rank3dLaunch l, T cval) {
  const std::int64_t x = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int c = blockIdx.z;
  if (x >= l.width) return;
  for (std::int64_t y = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; y < l.out_rows;
       y += std::int64_t(gridDim.y) * blockDim.y) {
    T v[Count];
    bool nan = false;
    T nan_value = cval;
    int j = 0;
#pragma unroll 1
    for (int dz = 0; dz < l.planes; ++dz) {
      const std::byte* plane = l.in[dz];
#pragma unroll 1
      for (int dy = 0; dy < l.rows; ++dy) {
        const std::int64_t row = y - l.top + dy;
        const std::int64_t image_row = l.first_row + row;
        const bool constant_row =
            plane == nullptr ||
            (l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height));
        const T* r =
            constant_row
                ? nullptr
                : reinterpret_cast<const T*>(plane + static_cast<std::ptrdiff_t>(row) *
                                                         static_cast<std::ptrdiff_t>(l.in_stride));
#pragma unroll 1
        for (int dx = 0; dx < l.cols; ++dx, ++j) {
          const std::int64_t s = map_index(x - l.left + dx, l.width, l.border);
          const T t = (r == nullptr || s < 0) ? cval : __ldg(r + s * l.channels + c);
          if (t != t) {
            nan = true;
            nan_value = t;
          }
#pragma unroll
          for (int i = 0; i < Count; ++i)
            if (i == j) v[i] = t;
        }
      }
    }
    constexpr int n = Selection<Count, Rank>::net.n;
    T out = run_network<T, Count, Rank>(v, std::make_integer_sequence<int, n>{});
    if (nan) out = nan_value;
    reinterpret_cast<T*>(l.out + static_cast<std::size_t>(y) * l.out_stride)[x * l.channels + c] =
        out;
  }
}

template <class T, int N>
__global__ void rank3d_kernel(const Rank3dLaunch l, T cval) {
  const std::int64_t x = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int c = blockIdx.z;
  if (x >= l.width) return;
  const int count = l.planes * l.rows * l.cols;
  for (std::int64_t y = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; y < l.out_rows;
       y += std::int64_t(gridDim.y) * blockDim.y) {
    T v[N];
    bool nan = false;
    T nan_value = cval;
    int j = 0;
#pragma unroll 1
    for (int dz = 0; dz < l.planes; ++dz) {
      const std::byte* plane = l.in[dz];
#pragma unroll 1
      for (int dy = 0; dy < l.rows; ++dy) {
        const std::int64_t row = y - l.top + dy;  // from the band's first row
        const std::int64_t image_row = l.first_row + row;
        const bool constant_row =
            plane == nullptr ||
            (l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height));
        const T* r =
            constant_row
                ? nullptr
                : reinterpret_cast<const T*>(plane + static_cast<std::ptrdiff_t>(row) *
                                                         static_cast<std::ptrdiff_t>(l.in_stride));
#pragma unroll 1
        for (int dx = 0; dx < l.cols; ++dx, ++j) {
          const std::int64_t s = map_index(x - l.left + dx, l.width, l.border);
          const T t = (r == nullptr || s < 0) ? cval : __ldg(r + s * l.channels + c);
          if (t != t) {
            nan = true;
            nan_value = t;
          }
#pragma unroll
          for (int i = 0; i < N; ++i)
            if (i == j) v[i] = t;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < N; ++i)
      if (i >= count) v[i] = largest<T>();
    T out = v[0];
#pragma unroll
    for (int i = 0; i < N; ++i) {
      int lt = 0, le = 0;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const bool b = before(v[k], v[i]);
        lt += b;
        le += b || !before(v[i], v[k]);
      }
      if (lt <= l.rank && l.rank < le) out = v[i];
    }
    if (nan) out = nan_value;
    reinterpret_cast<T*>(l.out + static_cast<std::size_t>(y) * l.out_stride)[x * l.channels + c] =
        out;
  }
}

// The order of samples as unsigned keys of the sample's width (bits: the passes of the radix
// select): integers offset, floats with the sign flipped (negative ones inverted whole), so that
// -0 (0x7fff...) sorts just below +0 (0x8000...) as `before` orders them. Unlike the 2-D rank
// filters' keys (rank_keys.hpp, -0 as +0) every sample keeps its bits: the key's value is the
// sample. NaN has no place: the kernel gives NaN before it selects.
template <class T>
struct Key3 {
  using type = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  using bits_of = std::conditional_t<
      sizeof(T) == 8, std::uint64_t,
      std::conditional_t<sizeof(T) == 4, std::uint32_t,
                         std::conditional_t<sizeof(T) == 2, std::uint16_t, std::uint8_t>>>;
  static constexpr int bits = static_cast<int>(sizeof(T) * 8);
  __device__ __forceinline__ static type top() { return type{1} << (bits - 1); }
  __device__ __forceinline__ static type of(T v) {
    bits_of b;
    memcpy(&b, &v, sizeof b);
    const type k = b;
    if constexpr (std::is_floating_point_v<T>)  // a 4- or 8-byte key: ~ stays inside
      return (k & top()) ? static_cast<type>(~k) : (k | top());
    else if constexpr (std::is_signed_v<T>)
      return k ^ top();
    else
      return k;
  }
  __device__ __forceinline__ static T value(type k) {
    if constexpr (std::is_floating_point_v<T>)
      k = (k & top()) ? (k & ~top()) : static_cast<type>(~k);
    else if constexpr (std::is_signed_v<T>)
      k ^= top();
    const bits_of b = static_cast<bits_of>(k);
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
  }
};

// f(sample) for each sample of the window of output (x, y) of channel c, in the CPU's order of
// planes, rows and columns (a footprint: its runs, plane by plane, row by row): the box's rows
// or the footprint's runs, the border rule across the row (rows past the image and planes outside
// the volume were filled by the engine, or are the constant's).
template <class T, bool Runs, class F>
__device__ __forceinline__ void each_sample(const Rank3dLaunch& l, std::int64_t x, std::int64_t y,
                                            int c, T cval, const F& f) {
  const int lines = Runs ? l.run_count : l.planes * l.rows;
#pragma unroll 1
  for (int i = 0; i < lines; ++i) {
    int plane, dy, col, len;
    if constexpr (Runs) {
      const Rank3dRun r = l.runs[i];
      plane = r.plane;
      dy = r.row;
      col = r.col;
      len = r.len;
    } else {
      plane = i / l.rows;
      dy = i - plane * l.rows;
      col = 0;
      len = l.cols;
    }
    const std::byte* p = l.in[plane];
    const std::int64_t row = y - l.top + dy;  // from the band's first row
    const std::int64_t image_row = l.first_row + row;
    const bool constant_row = p == nullptr || (l.border == BorderMode::constant &&
                                               (image_row < 0 || image_row >= l.image_height));
    if (constant_row) {
#pragma unroll 1
      for (int j = 0; j < len; ++j) f(cval);
      continue;
    }
    const T* r = reinterpret_cast<const T*>(p + static_cast<std::ptrdiff_t>(row) *
                                                    static_cast<std::ptrdiff_t>(l.in_stride));
    const std::int64_t x0 = x - l.left + col;
    if (x0 >= 0 && x0 + len <= l.width) {  // inside the row: no border rule
#pragma unroll 4
      for (int j = 0; j < len; ++j) f(__ldg(r + (x0 + j) * l.channels + c));
    } else {
#pragma unroll 1
      for (int j = 0; j < len; ++j) {
        const std::int64_t s = map_index(x0 + j, l.width, l.border);
        f(s < 0 ? cval : __ldg(r + s * l.channels + c));
      }
    }
  }
}

// The key of rank `rank` among those each(f) passes to f, decided bit by bit from the top, as
// kernels::radix_select (rank_keys.hpp) but over the sample's own Bits (8 passes for u8, not 32),
// and without a pass for a bit every key has alike (all_and, all_or: the keys' AND and OR): the
// rank's key has it too and the rank among the keys sharing the prefix is unchanged (a camera's
// 12 bits in u16, floats of one sign and close exponents skip several).
template <class K, int Bits, class Each>
__device__ __forceinline__ K radix_select(int rank, K all_and, K all_or, const Each& each) {
  const K alike = ~(all_and ^ all_or);
  K prefix = 0, decided = 0;
#pragma unroll 1
  for (int b = Bits - 1; b >= 0; --b) {
    const K bit = K{1} << b;
    if (alike & bit) {
      prefix |= all_and & bit;
      decided |= bit;
      continue;
    }
    const K mask = decided | bit;
    int zeros = 0;  // samples sharing the decided bits, with bit b 0
    each([&](K k) { zeros += (k & mask) == prefix; });
    if (rank >= zeros) {
      rank -= zeros;
      prefix |= bit;
    }
    decided = mask;
  }
  return prefix;
}

// Any window (a box beyond kMaxSamples, or a footprint's runs): a first pass finds a NaN (the
// window's result: the last one met, as the gather's kernels give it), or the smallest or largest
// sample when the rank asks for it, and the bits all keys share; otherwise the rank's key by the
// radix select (a pass a key bit the keys differ in), whose value is that sample's bits.
template <class T, bool Runs>
__global__ void rank3d_select_kernel(const Rank3dLaunch l, T cval) {
  using Key = Key3<T>;
  using K = typename Key::type;
  const std::int64_t x = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int c = blockIdx.z;
  if (x >= l.width) return;
  const bool lowest = l.rank == 0, highest = l.rank == l.count - 1;
  for (std::int64_t y = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; y < l.out_rows;
       y += std::int64_t(gridDim.y) * blockDim.y) {
    bool nan = false, first = true;
    T nan_value = cval, lo = cval, hi = cval;
    K all_and = ~K{0}, all_or = 0;
    each_sample<T, Runs>(l, x, y, c, cval, [&](T t) {
      if (t != t) {
        nan = true;
        nan_value = t;
        return;
      }
      if (first || before(t, lo)) lo = t;
      if (first || before(hi, t)) hi = t;
      first = false;
      const K k = Key::of(t);
      all_and &= k;
      all_or |= k;
    });
    T out;
    if (nan)
      out = nan_value;
    else if (lowest)
      out = lo;
    else if (highest)
      out = hi;
    else
      out = Key::value(radix_select<K, Key::bits>(l.rank, all_and, all_or, [&](auto&& count) {
        each_sample<T, Runs>(l, x, y, c, cval, [&](T t) { count(Key::of(t)); });
      }));
    reinterpret_cast<T*>(l.out + static_cast<std::size_t>(y) * l.out_stride)[x * l.channels + c] =
        out;
  }
}

template <class T, int N>
void launch(const Rank3dLaunch& l, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((l.width + block.x - 1) / block.x),
                  grid_rows((l.out_rows + block.y - 1) / block.y),
                  static_cast<unsigned>(l.channels));
  const T cval = kernels::constant_of<T>(l.border_value);
  if (N == 27 && l.planes * l.rows * l.cols == 27 && l.rank == 13)  // the 3 x 3 x 3 median
    rank3d_network_kernel<T, 27, 13><<<grid, block, 0, stream>>>(l, cval);
  else
    rank3d_kernel<T, N><<<grid, block, 0, stream>>>(l, cval);
}

// Windows beyond the registers' and footprints: one thread an output, no shared memory.
template <class T>
void launch_select(const Rank3dLaunch& l, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((l.width + block.x - 1) / block.x),
                  grid_rows((l.out_rows + block.y - 1) / block.y),
                  static_cast<unsigned>(l.channels));
  const T cval = kernels::constant_of<T>(l.border_value);
  if (l.runs != nullptr)
    rank3d_select_kernel<T, true><<<grid, block, 0, stream>>>(l, cval);
  else
    rank3d_select_kernel<T, false><<<grid, block, 0, stream>>>(l, cval);
}

}  // namespace

void rank3d_band_async(const Rank3dLaunch& l, cudaStream_t stream) {
  if (l.out_rows <= 0 || l.width <= 0) return;
  const int count = l.planes * l.rows * l.cols;
  dispatch_type(l.type, [&](auto t) {
    using T = decltype(t);
    if (l.runs != nullptr || count > Rank3dLaunch::kMaxSamples)
      launch_select<T>(l, stream);
    else if (count <= 8)
      launch<T, 8>(l, stream);
    else if (count <= 27)
      launch<T, 27>(l, stream);
    else
      launch<T, 64>(l, stream);
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
