// CUDA rank filters over windows of up to RankPolicy::kMaxSamples samples (see rank.cuh): a block
// loads its outputs' input tile (border rule applied) into shared memory, each thread copies its
// window's samples into registers (padded with the type's largest value, which never changes a
// rank below the window's count) and selects by counting: the sample with fewer than rank+1
// smaller ones and more than rank smaller-or-equal ones is the answer.
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/cpu/morphology/border_constant.hpp"
#include "kernels/cpu/morphology/rank_keys.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "ooc/detail/sample_type.hpp"
#include "rank.cuh"
#include "rank_histogram.hpp"

namespace ooc::cuda {
namespace {

using kernels::constant_of;  // the constant border in the image's type, as the CPU's

template <class T>
__device__ __forceinline__ T largest() {
  if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}

// The rank-th smallest of v[0..N), N a compile-time size (v stays in registers).
template <class T, int N>
__device__ __forceinline__ T select(const T (&v)[N], int rank) {
  T r = v[0];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    int lt = 0, le = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      lt += v[j] < v[i];
      le += v[j] <= v[i];
    }
    if (lt <= rank && rank < le) r = v[i];
  }
  return r;
}

// The block's tile of the input rows from y0 and columns from x0 - left of channel c (tw x th,
// the border rule applied; rows past the band's and constant-border places `cval`), each sample
// through to(): the block's threads in turn, between barriers (the previous tile used up before,
// this one filled after).
template <class T, class V, class To>
__device__ __forceinline__ void fill_tile(const RankLaunch& l, V* tile, int tw, int th,
                                          std::int64_t x0, std::int64_t y0, int c, V cval,
                                          const To& to) {
  __syncthreads();
  const int threads = blockDim.x * blockDim.y;
  for (int t = threadIdx.y * blockDim.x + threadIdx.x; t < tw * th; t += threads) {
    const int ty = t / tw, tx = t % tw;
    const std::int64_t k = y0 + ty;  // input row
    V v = cval;
    if (k < l.out_rows + l.rows - 1) {
      const std::int64_t image_row = l.first_row + k;
      const bool constant_row =
          l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height);
      const std::int64_t s = map_index(x0 + tx - l.left, l.width, l.border);
      if (!constant_row && s >= 0)
        v = to(reinterpret_cast<const T*>(l.in + k * l.in_stride)[s * l.channels + c]);
    }
    tile[t] = v;
  }
  __syncthreads();
}

template <class T, int N>
__global__ void rank_kernel(RankLaunch l, T cval) {
  extern __shared__ __align__(16) unsigned char shared_raw[];
  T* tile = reinterpret_cast<T*>(shared_raw);
  constexpr int TX = RankPolicy::kTileX, TY = RankPolicy::kTileY;
  const int tw = TX + l.cols - 1, th = TY + l.rows - 1;
  const int c = blockIdx.z;
  const std::int64_t x0 = std::int64_t(blockIdx.x) * TX;
  for (std::int64_t y0 = std::int64_t(blockIdx.y) * TY; y0 < l.out_rows;
       y0 += std::int64_t(gridDim.y) * TY) {
    fill_tile<T>(l, tile, tw, th, x0, y0, c, cval, [](T v) { return v; });
    const std::int64_t x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x >= l.width || y >= l.out_rows) continue;
    T v[N];
    bool nan = false;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      v[j] = largest<T>();
      if (j < l.count) {
        v[j] = tile[(threadIdx.y + l.dy[j]) * tw + threadIdx.x + l.dx[j]];
        nan = nan || v[j] != v[j];
      }
    }
    T r = select<T, N>(v, l.rank);
    if constexpr (std::is_floating_point_v<T>)
      if (nan) r = std::numeric_limits<T>::quiet_NaN();
    reinterpret_cast<T*>(l.out + y * l.out_stride)[x * l.channels + c] = r;
  }
}

template <class T, int N>
void launch(const RankLaunch& l, cudaStream_t stream) {
  constexpr int TX = RankPolicy::kTileX, TY = RankPolicy::kTileY;
  const std::size_t shared =
      static_cast<std::size_t>(TX + l.cols - 1) * (TY + l.rows - 1) * sizeof(T);
  const dim3 grid(static_cast<unsigned>((l.width + TX - 1) / TX),
                  grid_rows((l.out_rows + TY - 1) / TY), static_cast<unsigned>(l.channels));
  rank_kernel<T, N><<<grid, dim3(TX, TY), shared, stream>>>(l, constant_of<T>(l.border_value));
}

// Larger windows of floats and 32-bit integers: the tile as keys, each output's key by the radix
// select over its window's row runs (kernels/cpu/morphology/rank_keys.hpp); a NaN in the window
// gives NaN.
template <class T>
__global__ void radix_kernel(RankLaunch l, const RowRun* runs, int run_count) {
  using R = kernels::RankKey<T>;
  using K = typename R::type;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  K* tile = reinterpret_cast<K*>(shared_raw);
  constexpr int TX = kernels::kRadixTileX, TY = kernels::kRadixTileY;
  const int tw = TX + l.cols - 1, th = TY + l.rows - 1;
  const int c = blockIdx.z;
  const std::int64_t x0 = std::int64_t(blockIdx.x) * TX;
  const K cval = R::of(constant_of<T>(l.border_value));
  for (std::int64_t y0 = std::int64_t(blockIdx.y) * TY; y0 < l.out_rows;
       y0 += std::int64_t(gridDim.y) * TY) {
    fill_tile<T>(l, tile, tw, th, x0, y0, c, cval, [](T v) { return R::of(v); });
    const std::int64_t x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x >= l.width || y >= l.out_rows) continue;
    const K* at = tile + threadIdx.y * tw + threadIdx.x;
    auto each = [&](auto&& f) {
      for (int i = 0; i < run_count; ++i) {
        const RowRun r = runs[i];
        const K* p = at + r.row * tw + r.col;
        for (int j = 0; j < r.len; ++j) f(p[j]);
      }
    };
    bool nan = false;
    if constexpr (std::is_floating_point_v<T>) each([&](K k) { nan = nan || k == R::nan; });
    const T v = nan ? std::numeric_limits<T>::quiet_NaN()
                    : R::value(kernels::radix_select<K>(l.rank, each));
    reinterpret_cast<T*>(l.out + y * l.out_stride)[x * l.channels + c] = v;
  }
}

template <class T>
void launch_radix(const RankLaunch& l, cudaStream_t stream) {
  constexpr int TX = kernels::kRadixTileX, TY = kernels::kRadixTileY;
  const std::size_t shared = kernels::radix_tile_bytes(l.rows, l.cols, sizeof(T));
  if (shared > 48 * 1024)  // beyond the default: per device, so before each launch (cheap)
    OOC_KERNEL_TRY(cudaFuncSetAttribute(radix_kernel<T>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kernels::kMaxRadixTileBytes)));
  const dim3 grid(static_cast<unsigned>((l.width + TX - 1) / TX),
                  grid_rows((l.out_rows + TY - 1) / TY), static_cast<unsigned>(l.channels));
  const auto* runs = rank_hist::table_spans(l.footprint, l.footprint_runs);
  radix_kernel<T><<<grid, dim3(TX, TY), shared, stream>>>(l, runs, l.footprint_spans);
}

}  // namespace

void rank_radix_band_async(const RankLaunch& l, cudaStream_t stream) {
  if (l.out_rows <= 0 || l.width <= 0) return;
  switch (l.type) {
    case SampleType::u32:
      launch_radix<std::uint32_t>(l, stream);
      break;
    case SampleType::i32:
      launch_radix<std::int32_t>(l, stream);
      break;
    case SampleType::f32:
      launch_radix<float>(l, stream);
      break;
    case SampleType::f64:
      launch_radix<double>(l, stream);
      break;
    default:
      return;
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

void rank_band_async(const RankLaunch& l, cudaStream_t stream) {
  if (l.out_rows <= 0 || l.width <= 0) return;
  dispatch_type(l.type, [&](auto t) {
    using T = decltype(t);
    // Registers grow with N: the smallest of 9, 25, 49 that holds the window.
    if (l.count <= 9)
      launch<T, 9>(l, stream);
    else if (l.count <= 25)
      launch<T, 25>(l, stream);
    else
      launch<T, 49>(l, stream);
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
