// CUDA kernels of the separable convolution, in two families that give the same bits.
//
// Generic kernels (any radius, float or double accumulation). Row pass: a shared-memory tile of a
// row with its horizontal halo (border rule by index mapping), one output sample per thread per
// step. Column pass: each thread walks down one column, keeping kRun outputs in registers, so each
// row-pass value is read once from memory instead of 2 ry + 1 times.
//
// Kernels specialized on the radius (float accumulation, radii in kFastRadii, u8/u16/f32 samples,
// up to kMaxChannels channels). The taps travel by value in the kernel's parameters (the launch's
// constant bank: no global loads, safe for concurrent streams with different filters) and every
// loop over taps is unrolled, so each tap is an FFMA operand. Register blocking: a thread computes
// several outputs from a sliding window of inputs in registers, so there is less than one shared
// (or global) load per FMA.
//  - fused<T, U, R, CC> (rx == ry <= kFusedMaxRadius, input type == output type): one block
//    loads an input tile with its halo into shared memory, runs the row pass into a shared
//    intermediate, then the column pass, and stores the output; the intermediate never goes to
//    DRAM. One-channel f32 takes fused_quad<R>: the same passes over rows laid out for 16-byte
//    cp.async loads and 16-byte shared accesses.
//  - row<T, R, CC> + column<U, R> (the other radii of kFastRadii, or rx != ry): two passes through
//    the intermediate in global memory, as the generic kernels; each pass is specialized on its own
//    radius, and a pass whose radius or type has no specialization runs its generic kernel.
// Tile loads: where the rows start 16-byte aligned, each thread owns a 16-byte column of the tile
// and walks down its rows with all its loads in flight; elsewhere (row ends, constant-border
// rows, unaligned strides) sample by sample, through the border rule. The fused and row kernels
// are also instantiated for one channel (CC = 1: immediate shared-memory offsets).
// Row pass in shared memory: each thread owns one row of the tile (lanes of a warp are consecutive
// rows, the row stride is odd, so a warp's loads hit 32 different banks) and slides along it.
//
// Bit-identical by construction: every output sample sees the same sequence of roundings as in
// the generic kernels. Row pass: acc = w[0] * v[0]; acc = fma(w[k], v[k], acc) for k = 1..2 rx,
// values loaded with load_as and out-of-row samples mapped by the border rule; rows outside the
// image in constant mode are rows of cval. Column pass: the same over the intermediate, then
// store_as. All in explicit fma() calls and one plain product, which nvcc neither contracts nor
// reorders. Any width, band heights from 1 row, 64-bit indexing.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "check.cuh"
#include "common.cuh"
#include "ooc/detail/sample_type.hpp"
#include "separable.cuh"

namespace ooc::cuda {
namespace {

// Launch constants of the separable family (CUB's style: one policy, no literals in kernels).
// OOC_TUNE_* override the specialized kernels' shape for a tuning sweep
// (tools/bench/tune_kernels.sh builds one benchmark per setting); the defaults are its choice.
#ifndef OOC_TUNE_THREADS
#define OOC_TUNE_THREADS 256
#endif
#ifndef OOC_TUNE_TILE_SAMPLES
#define OOC_TUNE_TILE_SAMPLES 128
#endif
#ifndef OOC_TUNE_FUSED_ROWS
#define OOC_TUNE_FUSED_ROWS 32
#endif
#ifndef OOC_TUNE_FUSED_RUN
#define OOC_TUNE_FUSED_RUN 8
#endif
#ifndef OOC_TUNE_FUSED_RUN_U8
#define OOC_TUNE_FUSED_RUN_U8 16
#endif
#ifndef OOC_TUNE_MIN_BLOCKS
#define OOC_TUNE_MIN_BLOCKS 4
#endif
#ifndef OOC_TUNE_LOAD_BATCH
#define OOC_TUNE_LOAD_BATCH 6
#endif
#ifndef OOC_TUNE_MIN_BLOCKS_U8
#define OOC_TUNE_MIN_BLOCKS_U8 5
#endif
#ifndef OOC_TUNE_LOAD_BATCH_U8
#define OOC_TUNE_LOAD_BATCH_U8 3
#endif

struct SeparablePolicy {
  // Generic kernels.
  static constexpr int kRowThreads = 256;
  static constexpr int kRowTile = 2048;  // output samples per block (whole pixels of it)
  static constexpr int kColThreads = 128;
  static constexpr int kRun = 16;  // output rows per thread in the column pass
  // Specialized kernels.
  static constexpr int kThreads = OOC_TUNE_THREADS;  // fused and row kernels
  // A tile's output width in samples (rounded down to a multiple of channels x kRowJob).
  static constexpr int kTileSamples = OOC_TUNE_TILE_SAMPLES;
  static constexpr int kRowJob = 8;  // row outputs of one thread from one window
  static constexpr int kFusedRows = OOC_TUNE_FUSED_ROWS;  // output rows of a fused tile
  // Column outputs of one thread in the fused kernel: 8 for f32 and u16 (two column jobs per
  // thread; 2-4% faster than 16 at radius 1-3), 16 for u8 (3% faster there), measured side by
  // side with tools/bench/tune_kernels.sh (docs/design.md, "Separable kernels on the GPU").
  template <class T>
  static constexpr int fused_run() {
    return sizeof(T) == 1 ? OOC_TUNE_FUSED_RUN_U8 : OOC_TUNE_FUSED_RUN;
  }
  static constexpr int kRowRows = 32;  // rows of a row-kernel tile (a warp's lanes)
  static constexpr int kColumnThreads = 128;
  static constexpr int kColumnRun = 16;       // column outputs of one thread in the column kernel
  static constexpr int kColumnMinBlocks = 4;  // resident blocks per SM: at most 128 registers
  static constexpr int kColumnMinBlocksLarge = 3;  // radius >= 32: at most 168 registers
  // Fused and row kernels: 4 resident blocks of 256 threads allow at most 64 registers, 5 at
  // most 51. Global loads in flight per thread when filling a tile: with f32 and u16 samples
  // all of a thread's tile rows at radius <= 8, one round trip to DRAM. u8 tiles hold few
  // 16-byte vectors, so a fifth resident block gains more there (tools/bench/tune_kernels.sh;
  // docs/design.md).
  template <class T>
  static constexpr int min_blocks() {
    return sizeof(T) == 1 ? OOC_TUNE_MIN_BLOCKS_U8 : OOC_TUNE_MIN_BLOCKS;
  }
  template <class T>
  static constexpr int load_batch() {
    return sizeof(T) == 1 ? OOC_TUNE_LOAD_BATCH_U8 : OOC_TUNE_LOAD_BATCH;
  }
  static constexpr int kFusedMaxRadius = 8;
  static constexpr int kMaxChannels = kTileSamples / kRowJob;
};
using P = SeparablePolicy;
static_assert(P::kFusedRows % P::fused_run<float>() == 0 &&
              P::kFusedRows % P::fused_run<std::uint8_t>() == 0);
static_assert(P::kRowRows == 32, "the row kernel gives each lane of a warp one row");

// Radii with specialized kernels. Only the exact radius: padding taps with zeros would change
// results with Inf or NaN samples (0 * Inf = NaN).
template <int... R>
using RadiusList = std::integer_sequence<int, R...>;
#ifdef OOC_TUNE_FEW_RADII  // a tuning sweep's build: only the radii it measures
using FastRadii = RadiusList<1, 3, 16>;
#else
using FastRadii = RadiusList<1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64>;
#endif

// ------------------------------------------------------------------------------------------------
// Generic kernels.

// Row pass, fast path: block (tile, row). Shared memory holds the tile plus rx pixels each side.
template <class T, class Acc>
__global__ void row_pass_tiled(const std::byte* __restrict__ in, std::size_t in_stride,
                               std::byte* __restrict__ mid, std::size_t mid_stride,
                               std::int64_t width, int C, int rx, const Acc* __restrict__ w,
                               BorderMode border, Acc cval, std::int64_t rows,
                               std::int64_t first_row, std::int64_t height) {
  extern __shared__ unsigned char smem_raw[];
  Acc* sh = reinterpret_cast<Acc*>(smem_raw);
  const std::int64_t n = width * C;
  const int tile = (P::kRowTile / C) * C;  // whole pixels: a tap offset of k * C keeps the channel
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.x) * tile;
  const int halo = rx * C;
  const int span = tile + 2 * halo;
  const bool constant_rows = border == BorderMode::constant;
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    Acc* dst = reinterpret_cast<Acc*>(mid + y * mid_stride);
    const std::int64_t image_row = first_row + y;
    if (constant_rows && (image_row < 0 || image_row >= height)) {
      for (int j = threadIdx.x; j < tile && i0 + j < n; j += blockDim.x) dst[i0 + j] = cval;
      continue;
    }
    const T* src = reinterpret_cast<const T*>(in + y * in_stride);
    __syncthreads();  // the previous row's tile is no longer read
    for (int j = threadIdx.x; j < span; j += blockDim.x) {
      const std::int64_t f = i0 - halo + j;  // flat sample index, may be outside the row
      const std::int64_t x = f >= 0 ? f / C : -((-f + C - 1) / C);
      const int c = static_cast<int>(f - x * C);
      Acc v;
      if (x >= 0 && x < width) {
        v = load_as<T, Acc>(src + f);
      } else {
        const std::int64_t xm = map_index(x, width, border);
        v = xm < 0 ? cval : load_as<T, Acc>(src + xm * C + c);
      }
      sh[j] = v;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < tile && i0 + j < n; j += blockDim.x) {
      Acc acc = w[0] * sh[j];
      for (int k = 1; k <= 2 * rx; ++k) acc = fma(w[k], sh[j + k * C], acc);
      dst[i0 + j] = acc;
    }
  }
}

// Row pass for radii too large for a shared tile: each thread reads its taps from global memory.
template <class T, class Acc>
__global__ void row_pass_direct(const std::byte* __restrict__ in, std::size_t in_stride,
                                std::byte* __restrict__ mid, std::size_t mid_stride,
                                std::int64_t width, int C, std::int64_t rx,
                                const Acc* __restrict__ w, BorderMode border, Acc cval,
                                std::int64_t rows, std::int64_t first_row, std::int64_t height) {
  const std::int64_t n = width * C;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const std::int64_t x = j / C;
  const int c = static_cast<int>(j - x * C);
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    Acc* dst = reinterpret_cast<Acc*>(mid + y * mid_stride);
    const std::int64_t image_row = first_row + y;
    if (border == BorderMode::constant && (image_row < 0 || image_row >= height)) {
      dst[j] = cval;
      continue;
    }
    const T* src = reinterpret_cast<const T*>(in + y * in_stride);
    Acc acc = 0;
    for (std::int64_t k = 0; k <= 2 * rx; ++k) {
      const std::int64_t xm = map_index(x + k - rx, width, border);
      const Acc v = xm < 0 ? cval : load_as<T, Acc>(src + xm * C + c);
      acc = k == 0 ? w[0] * v : fma(w[k], v, acc);
    }
    dst[j] = acc;
  }
}

// Column pass: thread (column j, run of kRun output rows). Input row y0 + t feeds output rows
// y0 + o for taps k = t - o, so taps are added in ascending order for every output, as on the CPU.
template <class U, class Acc>
__global__ void column_pass(const std::byte* __restrict__ mid, std::size_t mid_stride,
                            std::byte* __restrict__ out, std::size_t out_stride, std::int64_t n,
                            std::int64_t out_rows, int ry, const Acc* __restrict__ w) {
  constexpr int kRun = P::kRun;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int taps = 2 * ry + 1;
  for (std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * kRun; y0 < out_rows;
       y0 += static_cast<std::int64_t>(gridDim.y) * kRun) {
    const int run = static_cast<int>(out_rows - y0 < kRun ? out_rows - y0 : kRun);
    Acc acc[kRun];
#pragma unroll
    for (int o = 0; o < kRun; ++o) acc[o] = 0;
    for (int t = 0; t < run + taps - 1; ++t) {
      const Acc v = __ldg(reinterpret_cast<const Acc*>(mid + (y0 + t) * mid_stride) + j);
#pragma unroll
      for (int o = 0; o < kRun; ++o) {
        const int k = t - o;
        if (k >= 0 && k < taps) acc[o] = k == 0 ? w[0] * v : fma(w[k], v, acc[o]);
      }
    }
#pragma unroll
    for (int o = 0; o < kRun; ++o)
      if (o < run) reinterpret_cast<U*>(out + (y0 + o) * out_stride)[j] = store_as<U, Acc>(acc[o]);
  }
}

template <class T, class Acc>
void launch_row(const SeparableLaunch& a, cudaStream_t s) {
  const std::int64_t n = a.width * a.channels;
  const std::int64_t rows = a.out_rows + 2 * a.ry;
  const Acc cval = static_cast<Acc>(a.border_value);
  const auto* w = static_cast<const Acc*>(a.row_taps);
  if (a.rx <= kRowTileMaxRadius) {
    const int tile = (P::kRowTile / a.channels) * a.channels;
    const dim3 grid(static_cast<unsigned>((n + tile - 1) / tile), grid_rows(rows));
    const std::size_t smem = (tile + 2 * a.rx * a.channels) * sizeof(Acc);
    row_pass_tiled<T, Acc><<<grid, P::kRowThreads, smem, s>>>(
        static_cast<const std::byte*>(a.in), a.in_stride, static_cast<std::byte*>(a.mid),
        a.mid_stride, a.width, a.channels, static_cast<int>(a.rx), w, a.border, cval, rows,
        a.first_row, a.image_height);
  } else {
    const dim3 grid(static_cast<unsigned>((n + P::kRowThreads - 1) / P::kRowThreads),
                    grid_rows(rows));
    row_pass_direct<T, Acc><<<grid, P::kRowThreads, 0, s>>>(
        static_cast<const std::byte*>(a.in), a.in_stride, static_cast<std::byte*>(a.mid),
        a.mid_stride, a.width, a.channels, a.rx, w, a.border, cval, rows, a.first_row,
        a.image_height);
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

template <class U, class Acc>
void launch_column(const SeparableLaunch& a, cudaStream_t s) {
  const std::int64_t n = a.width * a.channels;
  const dim3 grid(static_cast<unsigned>((n + P::kColThreads - 1) / P::kColThreads),
                  grid_rows((a.out_rows + P::kRun - 1) / P::kRun));
  column_pass<U, Acc><<<grid, P::kColThreads, 0, s>>>(
      static_cast<const std::byte*>(a.mid), a.mid_stride, static_cast<std::byte*>(a.out),
      a.out_stride, n, a.out_rows, static_cast<int>(a.ry), static_cast<const Acc*>(a.col_taps));
  OOC_KERNEL_TRY(cudaGetLastError());
}

// ------------------------------------------------------------------------------------------------
// Kernels specialized on the radius (float accumulation).

// 2 R + 1 taps, by value: a kernel parameter, so in the launch's constant bank.
template <int R>
struct Taps {
  float w[2 * R + 1];
};

// What the fused and row kernels share, by value.
struct TileArgs {
  const std::byte* in;
  std::size_t in_stride;
  std::byte* out;  // the output (fused) or the intermediate (row kernel)
  std::size_t out_stride;
  std::int64_t width;
  std::int64_t n;  // samples of a row: width * C
  int C;
  BorderMode border;
  float cval;
  std::int64_t rows;       // fused: output rows; row kernel: input (= intermediate) rows
  std::int64_t first_row;  // image row of input row 0
  std::int64_t height;     // image height
  int tile_w;              // output samples of a tile: a multiple of C * kRowJob
  bool vec_rows;           // every input row starts 16-byte aligned (in and in_stride)
};

// Shared-memory geometry of a tile of `rows` rows of radius R (host and device).
struct TileShape {
  int tile_w, span, s_in, s_mid, rows;
  __host__ __device__ static TileShape make(int C, int R, int rows) {
    TileShape t{};
    t.tile_w = (P::kTileSamples / (C * P::kRowJob)) * C * P::kRowJob;
    t.span = t.tile_w + 2 * R * C;  // input samples of a tile row, halo included
    t.s_in = t.span | 1;            // odd strides: a warp's lanes on 32 rows hit 32 banks
    t.s_mid = t.tile_w | 1;
    t.rows = rows;
    return t;
  }
  __host__ __device__ std::size_t smem_bytes() const {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(s_in + s_mid) * sizeof(float);
  }
};

// e / d for 0 <= e, 2 <= d and e * d < 2^32, by a multiply-high. Exact: m = ceil(2^32 / d), so
// m d = 2^32 + eps with 0 <= eps < d and e m / 2^32 = e / d + e eps / (d 2^32), where the second
// term is below e / 2^32 < 1 / d and so never carries e / d past the next integer. The tiles keep
// e d far below 2^32 (e < rows x span <= 48 x 2176, d <= 2176).
struct FastDiv {
  unsigned d, m;
  __host__ __device__ explicit FastDiv(unsigned divisor)
      : d(divisor), m(0xFFFFFFFFu / divisor + 1u) {}
  __device__ __forceinline__ int div(int e) const {
    return static_cast<int>(__umulhi(static_cast<unsigned>(e), m));
  }
};

__device__ __forceinline__ bool constant_row(const TileArgs& a, std::int64_t band_row) {
  const std::int64_t image_row = a.first_row + band_row;
  return a.border == BorderMode::constant && (image_row < 0 || image_row >= a.height);
}

// Whether any of band rows y0 .. y0 + rows - 1 is a row of cval (constant_row).
__device__ __forceinline__ bool constant_rows_in(const TileArgs& a, std::int64_t y0, int rows) {
  return a.border == BorderMode::constant &&
         (a.first_row + y0 < 0 || a.first_row + y0 + rows > a.height);
}

// One input sample as the generic row pass loads it: flat index f of band row y (f may be
// outside the row: the border rule maps it).
template <class T>
__device__ __forceinline__ float tile_sample(const TileArgs& a, std::int64_t y, std::int64_t f,
                                             bool interior) {
  const T* src = reinterpret_cast<const T*>(a.in + y * a.in_stride);
  if (interior || (f >= 0 && f < a.n)) return load_as<T, float>(src + f);
  // Pixel x = floor(f / C) and channel c; f is within a tile's span of the row's ends, so the
  // distance d fits an int (and 32-bit division is no subroutine call).
  std::int64_t x;
  int c;
  if (f < 0) {
    const int d = static_cast<int>(-f);
    const int back = (d + a.C - 1) / a.C;  // pixels before the row
    x = -back;
    c = back * a.C - d;
  } else {
    const int d = static_cast<int>(f - a.n);
    x = a.width + d / a.C;
    c = d % a.C;
  }
  const std::int64_t xm = map_index(x, a.width, a.border);
  return xm < 0 ? a.cval : load_as<T, float>(src + xm * a.C + c);
}

// load_tile's common case: a tile inside the row and the image, rows 16-byte aligned. Each
// thread owns one 16-byte column of the tile (the vectors from the aligned start at or before f0)
// and walks down the rows, load_batch<T>() loads in flight, storing the samples the tile holds: no
// division or border test per sample, where the per-sample path below spends about 30
// instructions on them (once most of the fused kernel's instructions at small radii). False,
// having loaded nothing, elsewhere.
template <class T>
__device__ __forceinline__ bool load_tile_vectors(const TileArgs& a, const TileShape& t, float* sh,
                                                  std::int64_t y0, int rows_valid,
                                                  std::int64_t f0) {
  constexpr int K = 16 / sizeof(T);  // samples per vector
  if (!a.vec_rows || f0 < 0 || constant_rows_in(a, y0, rows_valid)) return false;
  const int shift = static_cast<int>(f0 % K);          // samples before f0 in its vector
  const int nv = (shift + t.span + K - 1) / K;         // vectors per tile row
  const int step = static_cast<int>(blockDim.x) / nv;  // rows loaded at once by the block
  const std::int64_t fa = f0 - shift;
  if (step == 0 || fa + static_cast<std::int64_t>(nv) * K > a.n) return false;
  const int c = static_cast<int>(threadIdx.x) % nv;
  int r = static_cast<int>(threadIdx.x) / nv;
  if (r >= step) return true;       // the threads past step x nv load nothing
  const int first = c * K - shift;  // the tile column of the vector's first sample
  const bool whole = first >= 0 && first + K <= t.span;
  const std::byte* src =
      a.in + (y0 + r) * a.in_stride + (fa + static_cast<std::int64_t>(c) * K) * sizeof(T);
  float* dst = sh + r * t.s_in + first;
  const std::size_t src_step = static_cast<std::size_t>(step) * a.in_stride;
  const int dst_step = step * t.s_in;
  constexpr int B = P::load_batch<T>();
  for (; r < rows_valid; r += B * step) {
    uint4 v[B];
#pragma unroll
    for (int u = 0; u < B; ++u)
      if (r + u * step < rows_valid)
        v[u] = __ldg(reinterpret_cast<const uint4*>(src + u * src_step));
#pragma unroll
    for (int u = 0; u < B; ++u) {
      if (r + u * step < rows_valid) {
        T e[K];
        std::memcpy(e, &v[u], sizeof e);
        float* d = dst + u * dst_step;
#pragma unroll
        for (int j = 0; j < K; ++j)
          if (whole || (first + j >= 0 && first + j < t.span)) d[j] = static_cast<float>(e[j]);
      }
    }
    src += B * src_step;
    dst += B * dst_step;
  }
  return true;
}

// Fills sh (rows_valid rows of span samples, stride s_in) with band rows y0.. and flat samples
// f0.., load_batch<T>() loads in flight per thread (f32 interiors: the whole tile by cp.async).
// Rows of cval (constant border) are not read. kVectors false leaves out load_tile_vectors (and
// its registers) where the caller knows it would decline.
template <class T, bool kVectors = true>
__device__ __forceinline__ void load_tile(const TileArgs& a, const TileShape& t, float* sh,
                                          std::int64_t y0, int rows_valid, std::int64_t f0) {
  if constexpr (kVectors)
    if (load_tile_vectors<T>(a, t, sh, y0, rows_valid, f0)) return;
  const int total = rows_valid * t.span;
  const FastDiv by_span(static_cast<unsigned>(t.span));
  const bool interior = f0 >= 0 && f0 + t.span <= a.n;
  if constexpr (std::is_same_v<T, float>) {
    // f32 away from the row ends on unaligned rows: the samples go to shared memory as they
    // are, by asynchronous copies that hold no registers, so the whole tile is in flight at
    // once instead of a batch of loads per thread.
    if (interior) {
      for (int e = threadIdx.x; e < total; e += blockDim.x) {
        const int r = by_span.div(e);
        const int c = e - r * t.span;
        float* dst = sh + r * t.s_in + c;
        if (constant_row(a, y0 + r)) {
          *dst = 0;
        } else {
          const float* src = reinterpret_cast<const float*>(a.in + (y0 + r) * a.in_stride);
          __pipeline_memcpy_async(dst, src + f0 + c, sizeof(float));
        }
      }
      __pipeline_commit();
      __pipeline_wait_prior(0);
      return;
    }
  }
  constexpr int B = P::load_batch<T>();
  for (int base = threadIdx.x; base < total; base += blockDim.x * B) {
    float v[B];
#pragma unroll
    for (int u = 0; u < B; ++u) {
      const int e = base + u * static_cast<int>(blockDim.x);
      v[u] = 0;
      if (e < total) {
        const int r = by_span.div(e);
        const int c = e - r * t.span;
        if (!constant_row(a, y0 + r)) v[u] = tile_sample<T>(a, y0 + r, f0 + c, interior);
      }
    }
#pragma unroll
    for (int u = 0; u < B; ++u) {
      const int e = base + u * static_cast<int>(blockDim.x);
      if (e < total) {
        const int r = by_span.div(e);
        sh[r * t.s_in + (e - r * t.span)] = v[u];
      }
    }
  }
}

// acc[m] = sum over k of w[k] * v(m + k), k ascending, the first term a plain product: for each
// window value i (ascending) every output m with 0 <= i - m <= 2R takes its tap i - m.
template <int R, int M, class Load>
__device__ __forceinline__ void slide(float (&acc)[M], const float (&w)[2 * R + 1], Load load) {
#pragma unroll
  for (int i = 0; i < M + 2 * R; ++i) {
    const float v = load(i);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int k = i - m;
      if (k == 0) {
        acc[m] = w[0] * v;
      } else if (k > 0 && k <= 2 * R) {
        acc[m] = fmaf(w[k], v, acc[m]);
      }
    }
  }
}

// The channel count of a kernel specialized on it (CC > 0), else the launch's. One channel is
// the common case; there the taps' shared-memory offsets are immediates and no index is divided
// by C.
template <int CC>
__device__ __forceinline__ int channels_of(const TileArgs& a) {
  return CC > 0 ? CC : a.C;
}

// Row pass of a tile in shared memory: rows_valid rows of tile_w outputs into sh_mid. A job is
// kRowJob outputs C samples apart (one channel) of one row; consecutive threads take consecutive
// rows. Rows outside the image in constant mode become rows of cval.
template <int R, int CC>
__device__ __forceinline__ void row_phase(const TileArgs& a, const TileShape& t, const float* sh_in,
                                          float* sh_mid, std::int64_t y0, int rows_valid,
                                          const Taps<R>& w) {
  constexpr int N = P::kRowJob;
  const int C = channels_of<CC>(a);
  const int jobs = (t.tile_w / N) * t.rows;
  for (int it = threadIdx.x; it < jobs; it += blockDim.x) {
    const int r = it % t.rows;
    const int j = it / t.rows;
    if (r >= rows_valid) continue;
    const int q0 = (j / C) * (C * N) + (j % C);
    float* dst = sh_mid + r * t.s_mid + q0;
    if (constant_row(a, y0 + r)) {
#pragma unroll
      for (int m = 0; m < N; ++m) dst[m * C] = a.cval;
      continue;
    }
    const float* src = sh_in + r * t.s_in + q0;
    float acc[N];
    slide<R, N>(acc, w.w, [&](int i) { return src[i * C]; });
#pragma unroll
    for (int m = 0; m < N; ++m) dst[m * C] = acc[m];
  }
}

// Column pass of a fused tile: thread (column q, run of M output rows) over sh_mid (rows of
// pitch s_mid), outputs stored from band row y0 and flat sample i0. chunk_of(it) = it / tile_w.
template <class U, int R, int M, class ChunkOf>
__device__ __forceinline__ void column_phase(const TileArgs& a, const float* sh_mid, int s_mid,
                                             int tile_w, ChunkOf chunk_of, std::int64_t i0,
                                             std::int64_t y0, const Taps<R>& w) {
  const int items = tile_w * (P::kFusedRows / M);
  for (int it = threadIdx.x; it < items; it += blockDim.x) {
    const int chunk = chunk_of(it);
    const int q = it - chunk * tile_w;
    const std::int64_t col = i0 + q;
    const std::int64_t yo = y0 + chunk * M;
    if (col >= a.n || yo >= a.rows) continue;
    const float* src = sh_mid + chunk * M * s_mid + q;
    float acc[M];
    slide<R, M>(acc, w.w, [&](int i) { return src[i * s_mid]; });
    const int run = static_cast<int>(a.rows - yo < M ? a.rows - yo : M);
    U* dst = reinterpret_cast<U*>(a.out + yo * a.out_stride) + col;
    auto next = [&] {
      dst = reinterpret_cast<U*>(reinterpret_cast<std::byte*>(dst) + a.out_stride);
    };
    if (run == M) {  // all but the band's last rows: no test per store
#pragma unroll
      for (int o = 0; o < M; ++o, next()) *dst = store_as<U, float>(acc[o]);
    } else {
#pragma unroll
      for (int o = 0; o < M; ++o)
        if (o < run) {
          *dst = store_as<U, float>(acc[o]);
          next();
        }
    }
  }
}

// The fused kernel: block (tile of tile_w samples, tile of kFusedRows output rows); CC: the
// channel count, or 0 for any.
template <class T, class U, int R, int CC>
__global__ void __launch_bounds__(P::kThreads, P::min_blocks<T>())
    fused_kernel(const TileArgs a, const Taps<R> row_w, const Taps<R> col_w) {
  constexpr int M = P::fused_run<T>();
  constexpr int TH = P::kFusedRows;
  extern __shared__ float smem_f[];
  const int C = channels_of<CC>(a);
  const TileShape t = TileShape::make(C, R, TH + 2 * R);
  float* sh_in = smem_f;
  float* sh_mid = smem_f + t.rows * t.s_in;
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.x) * t.tile_w;
  const std::int64_t f0 = i0 - static_cast<std::int64_t>(R) * C;
  const FastDiv by_width(static_cast<unsigned>(t.tile_w));
  const std::int64_t tiles_y = (a.rows + TH - 1) / TH;
  for (std::int64_t ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
    const std::int64_t y0 = ty * TH;  // first output row = first input row of the tile
    const std::int64_t in_rows = a.rows + 2 * R;
    const int rows_valid = static_cast<int>(in_rows - y0 < t.rows ? in_rows - y0 : t.rows);
    __syncthreads();  // the previous tile's shared data is no longer read
    load_tile<T>(a, t, sh_in, y0, rows_valid, f0);
    __syncthreads();
    row_phase<R, CC>(a, t, sh_in, sh_mid, y0, rows_valid, row_w);
    __syncthreads();
    column_phase<U, R, M>(
        a, sh_mid, t.s_mid, t.tile_w, [&](int it) { return by_width.div(it); }, i0, y0, col_w);
  }
}

// ------------------------------------------------------------------------------------------------
// The fused kernel of one-channel f32 bands ("quad" tiles). Same tile and passes as fused_kernel,
// in a layout made for 16-byte accesses: shared rows begin at the 16-byte quad holding the tile's
// first input sample, and their pitch is an odd number of quads, so the 8 rows a quarter-warp
// touches fall on 8 different bank groups. Where the rows start 16-byte aligned, the tile comes in
// by 16-byte cp.async (every quad of it in flight at once, no registers held, no shared store
// instruction); the row pass reads its windows and writes its 8 outputs in 16-byte shared
// accesses: a quarter fewer instructions than the tiled layout, and faster at radius 3
// (docs/performance.md, GPU kernels against NPP). Tiles at the row ends, on rows that are not
// 16-byte aligned, or holding constant-border rows load through load_tile into the same layout.

#ifndef OOC_TUNE_QUAD_MIN_BLOCKS
#define OOC_TUNE_QUAD_MIN_BLOCKS 5
#endif

// The smallest multiple of 4 samples at or above n whose count of 16-byte quads is odd.
constexpr int odd_quads(int n) {
  return (((n + 3) / 4) | 1) * 4;
}

// A quad tile's geometry for radius R (host and device).
struct QuadGeom {
  int shift;      // f0 = i0 - R lies `shift` samples into its quad
  int span;       // input samples of a tile row
  int quads;      // quads of an input row
  int pitch;      // input row pitch in samples
  int mid_pitch;  // intermediate row pitch
  int rows;       // input (and intermediate) rows
  static constexpr int kW = (P::kTileSamples / P::kRowJob) * P::kRowJob;  // output samples
  constexpr explicit QuadGeom(int R)
      : shift((4 - R % 4) % 4),
        span(kW + 2 * R),
        quads((shift + span + 3) / 4),
        pitch(odd_quads(shift + span)),
        mid_pitch(odd_quads(kW)),
        rows(P::kFusedRows + 2 * R) {}
  constexpr std::size_t smem_bytes() const {
    return sizeof(float) * static_cast<std::size_t>(rows) *
           static_cast<std::size_t>(pitch + mid_pitch);
  }
  // The layout as load_tile fills it (from sample f0, at `shift` into the shared row).
  __device__ TileShape shape() const {
    TileShape t{};
    t.tile_w = kW;
    t.span = span;
    t.s_in = pitch;
    t.s_mid = mid_pitch;
    t.rows = rows;
    return t;
  }
};

// Resident blocks of the quad kernel: 5 (at most 48 registers) where the shared memory allows 5,
// that is up to radius 4, else 4.
constexpr int quad_min_blocks(int R) {
  return R <= 4 ? OOC_TUNE_QUAD_MIN_BLOCKS : 4;
}

// The tile's rows_valid input rows from band row y0, quads from flat sample fa (quad-aligned): each
// thread owns one quad column and walks down the rows.
template <int R>
__device__ __forceinline__ void load_quads(const TileArgs& a, float* sh_in, std::int64_t y0,
                                           int rows_valid, std::int64_t fa) {
  constexpr QuadGeom g(R);
  constexpr int step = P::kThreads / g.quads;  // rows loaded at once by the block
  static_assert(step >= 1, "a block's threads cover a tile row");
  const int c = static_cast<int>(threadIdx.x) % g.quads;
  int r = static_cast<int>(threadIdx.x) / g.quads;
  if (r >= step) return;  // the threads past step x quads load nothing
  const std::byte* src = a.in + (y0 + r) * a.in_stride + (fa + 4 * c) * sizeof(float);
  float* dst = sh_in + r * g.pitch + 4 * c;
  const std::size_t src_step = static_cast<std::size_t>(step) * a.in_stride;
  for (; r < rows_valid; r += step) {
    __pipeline_memcpy_async(dst, src, 16);
    src += src_step;
    dst += step * g.pitch;
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

// Row pass of a quad tile: job (row r, 8 outputs from output sample 8 j), consecutive threads on
// consecutive rows; sh_in holds input sample f0 + k at column shift + k.
template <int R>
__device__ __forceinline__ void row_phase_quads(const TileArgs& a, const float* sh_in,
                                                float* sh_mid, std::int64_t y0, int rows_valid,
                                                const Taps<R>& w) {
  constexpr QuadGeom g(R);
  constexpr int N = P::kRowJob;
  static_assert(N == 8, "a job's outputs are two quads");
  constexpr int V = (g.shift + N + 2 * R + 3) / 4;  // quads of a job's window
  constexpr int jobs = (g.kW / N) * g.rows;
  for (int it = threadIdx.x; it < jobs; it += blockDim.x) {
    const int r = it % g.rows;
    const int j = it / g.rows;
    if (r >= rows_valid) continue;
    float4* dst = reinterpret_cast<float4*>(sh_mid + r * g.mid_pitch + j * N);
    if (constant_row(a, y0 + r)) {
      dst[0] = dst[1] = make_float4(a.cval, a.cval, a.cval, a.cval);
      continue;
    }
    const float4* src = reinterpret_cast<const float4*>(sh_in + r * g.pitch + j * N);
    float v[4 * V];
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const float4 q = src[u];
      v[4 * u] = q.x;
      v[4 * u + 1] = q.y;
      v[4 * u + 2] = q.z;
      v[4 * u + 3] = q.w;
    }
    float acc[N];
    slide<R, N>(acc, w.w, [&](int i) { return v[g.shift + i]; });
    dst[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    dst[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  }
}

// Block (tile of kW samples, tile of kFusedRows output rows), as fused_kernel<float, float, R, 1>.
template <int R>
__global__ void __launch_bounds__(P::kThreads, quad_min_blocks(R))
    fused_quad_kernel(const TileArgs a, const Taps<R> row_w, const Taps<R> col_w) {
  constexpr QuadGeom g(R);
  constexpr int TH = P::kFusedRows;
  extern __shared__ __align__(16) float smem_q[];
  float* sh_in = smem_q;
  float* sh_mid = smem_q + g.rows * g.pitch;
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.x) * g.kW;
  const std::int64_t f0 = i0 - R;
  const std::int64_t fa = f0 - g.shift;  // quad-aligned when the rows are
  const bool quads_x = a.vec_rows && fa >= 0 && fa + g.quads * 4 <= a.n;
  const std::int64_t tiles_y = (a.rows + TH - 1) / TH;
  const std::int64_t in_rows = a.rows + 2 * R;
  for (std::int64_t ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
    const std::int64_t y0 = ty * TH;
    const int rows_valid = static_cast<int>(in_rows - y0 < g.rows ? in_rows - y0 : g.rows);
    __syncthreads();  // the previous tile's shared data is no longer read
    if (quads_x && !constant_rows_in(a, y0, rows_valid))
      load_quads<R>(a, sh_in, y0, rows_valid, fa);
    else  // never a vector tile (those are quad tiles): leave that path out of the registers
      load_tile<float, false>(a, g.shape(), sh_in + g.shift, y0, rows_valid, f0);
    __syncthreads();
    row_phase_quads<R>(a, sh_in, sh_mid, y0, rows_valid, row_w);
    __syncthreads();
    column_phase<float, R, P::fused_run<float>()>(
        a, sh_mid, g.mid_pitch, g.kW, [](int it) { return it / QuadGeom::kW; }, i0, y0, col_w);
  }
}

// The row kernel of the two-pass path: block (tile of tile_w samples, kRowRows rows); the tile's
// intermediate goes through shared memory so that the stores to global memory are coalesced.
template <class T, int R, int CC>
__global__ void __launch_bounds__(P::kThreads, P::min_blocks<T>())
    row_kernel(const TileArgs a, const Taps<R> w) {
  extern __shared__ float smem_r[];
  const int C = channels_of<CC>(a);
  const TileShape t = TileShape::make(C, R, P::kRowRows);
  float* sh_in = smem_r;
  float* sh_mid = smem_r + t.rows * t.s_in;
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.x) * t.tile_w;
  const std::int64_t f0 = i0 - static_cast<std::int64_t>(R) * C;
  const FastDiv by_width(static_cast<unsigned>(t.tile_w));
  const std::int64_t tiles_y = (a.rows + t.rows - 1) / t.rows;
  const int cols_valid = static_cast<int>(a.n - i0 < t.tile_w ? a.n - i0 : t.tile_w);
  for (std::int64_t ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
    const std::int64_t y0 = ty * t.rows;
    const int rows_valid = static_cast<int>(a.rows - y0 < t.rows ? a.rows - y0 : t.rows);
    __syncthreads();
    load_tile<T>(a, t, sh_in, y0, rows_valid, f0);
    __syncthreads();
    row_phase<R, CC>(a, t, sh_in, sh_mid, y0, rows_valid, w);
    __syncthreads();
    const int total = rows_valid * t.tile_w;
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
      const int r = by_width.div(e);
      const int q = e - r * t.tile_w;
      if (q < cols_valid)
        reinterpret_cast<float*>(a.out + (y0 + r) * a.out_stride)[i0 + q] = sh_mid[r * t.s_mid + q];
    }
  }
}

// The column kernel of the two-pass path: thread (column j, run of kColumnRun output rows), the
// intermediate read straight from global memory (each value once per run).
template <class U, int R>
__global__ void __launch_bounds__(P::kColumnThreads,
                                  R >= 32 ? P::kColumnMinBlocksLarge : P::kColumnMinBlocks)
    column_kernel(const std::byte* __restrict__ mid, std::size_t mid_stride,
                  std::byte* __restrict__ out, std::size_t out_stride, std::int64_t n,
                  std::int64_t out_rows, const Taps<R> w) {
  constexpr int M = P::kColumnRun;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  for (std::int64_t y0 = static_cast<std::int64_t>(blockIdx.y) * M; y0 < out_rows;
       y0 += static_cast<std::int64_t>(gridDim.y) * M) {
    const int run = static_cast<int>(out_rows - y0 < M ? out_rows - y0 : M);
    const int loads = run + 2 * R;  // rows of the intermediate this run reads
    const float* src = reinterpret_cast<const float*>(mid + y0 * mid_stride) + j;
    float acc[M];
    slide<R, M>(acc, w.w, [&](int i) {
      return i < loads ? __ldg(reinterpret_cast<const float*>(
                             reinterpret_cast<const std::byte*>(src) + i * mid_stride))
                       : 0.0f;
    });
    U* dst = reinterpret_cast<U*>(out + y0 * out_stride) + j;
#pragma unroll
    for (int o = 0; o < M; ++o) {
      if (o < run) {
        *dst = store_as<U, float>(acc[o]);
        dst = reinterpret_cast<U*>(reinterpret_cast<std::byte*>(dst) + out_stride);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Host side of the specialized kernels.

// f(std::integral_constant<int, R>{}) for r in FastRadii; false when r has no specialization.
template <class F, int... R>
bool with_radius_impl(std::int64_t r, F&& f, std::integer_sequence<int, R...>) {
  bool done = false;
  ((r == R ? (f(std::integral_constant<int, R>{}), done = true) : false), ...);
  return done;
}
template <class F>
bool with_radius(std::int64_t r, F&& f) {
  return with_radius_impl(r, std::forward<F>(f), FastRadii{});
}
bool is_fast_radius(std::int64_t r) {
  return with_radius(r, [](auto) {});
}

// f(T{}) for the sample types with specialized kernels.
template <class F>
bool with_fast_type(SampleType t, F&& f) {
  switch (t) {
    case SampleType::u8:
      f(std::uint8_t{});
      return true;
    case SampleType::u16:
      f(std::uint16_t{});
      return true;
    case SampleType::f32:
      f(float{});
      return true;
    default:
      return false;
  }
}
bool is_fast_type(SampleType t) {
  return with_fast_type(t, [](auto) {});
}

template <int R>
Taps<R> taps_of(const void* host) {
  Taps<R> t{};
  std::memcpy(t.w, host, sizeof t.w);
  return t;
}

std::size_t max_dynamic_smem() {
  int dev = 0, bytes = 0;
  OOC_KERNEL_TRY(cudaGetDevice(&dev));
  OOC_KERNEL_TRY(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return static_cast<std::size_t>(bytes);
}

// One-channel f32 takes the quad kernel.
bool quad_fused(const SeparableLaunch& a) {
  return a.in_type == SampleType::f32 && a.channels == 1;
}

// Shared memory of the fused kernel (or the row kernel) for these arguments.
std::size_t fused_smem(const SeparableLaunch& a) {
  const int R = static_cast<int>(a.rx);
  if (quad_fused(a)) return QuadGeom(R).smem_bytes();
  return TileShape::make(a.channels, R, P::kFusedRows + 2 * R).smem_bytes();
}
std::size_t row_smem(const SeparableLaunch& a) {
  return TileShape::make(a.channels, static_cast<int>(a.rx), P::kRowRows).smem_bytes();
}

bool specialized_ok(const SeparableLaunch& a) {
  return !a.generic && !a.f64 && a.row_taps_host != nullptr && a.col_taps_host != nullptr &&
         a.channels >= 1 && a.channels <= P::kMaxChannels;
}
bool fast_row_ok(const SeparableLaunch& a, std::size_t smem_limit) {
  return specialized_ok(a) && is_fast_radius(a.rx) && is_fast_type(a.in_type) &&
         row_smem(a) <= smem_limit;
}
bool fast_column_ok(const SeparableLaunch& a) {
  return specialized_ok(a) && is_fast_radius(a.ry) && is_fast_type(a.out_type);
}
bool fused_ok(const SeparableLaunch& a, std::size_t smem_limit) {
  return specialized_ok(a) && a.rx == a.ry && a.rx <= P::kFusedMaxRadius && is_fast_radius(a.rx) &&
         a.in_type == a.out_type && is_fast_type(a.in_type) && fused_smem(a) <= smem_limit;
}

TileArgs tile_args(const SeparableLaunch& a, void* out, std::size_t out_stride, std::int64_t rows) {
  TileArgs t{};
  t.in = static_cast<const std::byte*>(a.in);
  t.in_stride = a.in_stride;
  t.out = static_cast<std::byte*>(out);
  t.out_stride = out_stride;
  t.width = a.width;
  t.n = a.width * a.channels;
  t.C = a.channels;
  t.border = a.border;
  t.cval = static_cast<float>(a.border_value);
  t.rows = rows;
  t.first_row = a.first_row;
  t.height = a.image_height;
  t.tile_w = TileShape::make(a.channels, 0, 1).tile_w;
  t.vec_rows = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 && a.in_stride % 16 == 0;
  return t;
}

template <class Kernel>
void allow_smem(Kernel k, std::size_t smem) {
  if (smem > 48 * 1024)
    OOC_KERNEL_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
}

void launch_fused(const SeparableLaunch& a, cudaStream_t s) {
  const TileArgs t = tile_args(a, a.out, a.out_stride, a.out_rows);
  const std::size_t smem = fused_smem(a);
  const dim3 grid(static_cast<unsigned>((t.n + t.tile_w - 1) / t.tile_w),
                  grid_rows((a.out_rows + P::kFusedRows - 1) / P::kFusedRows));
  with_fast_type(a.in_type, [&](auto tv) {
    using T = decltype(tv);
    with_radius(a.rx, [&](auto rc) {
      constexpr int R = decltype(rc)::value;
      if constexpr (R <= P::kFusedMaxRadius) {
        auto* k = &fused_kernel<T, T, R, 0>;
        if constexpr (std::is_same_v<T, float>) {
          if (quad_fused(a)) k = &fused_quad_kernel<R>;
        } else {
          if (a.channels == 1) k = &fused_kernel<T, T, R, 1>;
        }
        allow_smem(k, smem);
        k<<<grid, P::kThreads, smem, s>>>(t, taps_of<R>(a.row_taps_host),
                                          taps_of<R>(a.col_taps_host));
      }
    });
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

void launch_fast_row(const SeparableLaunch& a, cudaStream_t s) {
  const std::int64_t rows = a.out_rows + 2 * a.ry;
  const TileArgs t = tile_args(a, a.mid, a.mid_stride, rows);
  const std::size_t smem = row_smem(a);
  const dim3 grid(static_cast<unsigned>((t.n + t.tile_w - 1) / t.tile_w),
                  grid_rows((rows + P::kRowRows - 1) / P::kRowRows));
  with_fast_type(a.in_type, [&](auto tv) {
    using T = decltype(tv);
    with_radius(a.rx, [&](auto rc) {
      constexpr int R = decltype(rc)::value;
      auto* k = a.channels == 1 ? &row_kernel<T, R, 1> : &row_kernel<T, R, 0>;
      allow_smem(k, smem);
      k<<<grid, P::kThreads, smem, s>>>(t, taps_of<R>(a.row_taps_host));
    });
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

void launch_fast_column(const SeparableLaunch& a, cudaStream_t s) {
  const std::int64_t n = a.width * a.channels;
  const dim3 grid(static_cast<unsigned>((n + P::kColumnThreads - 1) / P::kColumnThreads),
                  grid_rows((a.out_rows + P::kColumnRun - 1) / P::kColumnRun));
  with_fast_type(a.out_type, [&](auto uv) {
    using U = decltype(uv);
    with_radius(a.ry, [&](auto rc) {
      constexpr int R = decltype(rc)::value;
      column_kernel<U, R><<<grid, P::kColumnThreads, 0, s>>>(
          static_cast<const std::byte*>(a.mid), a.mid_stride, static_cast<std::byte*>(a.out),
          a.out_stride, n, a.out_rows, taps_of<R>(a.col_taps_host));
    });
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

template <class Acc>
void launch_generic(const SeparableLaunch& a, cudaStream_t s) {
  dispatch_type(a.in_type, [&](auto t) { launch_row<decltype(t), Acc>(a, s); });
  dispatch_type(a.out_type, [&](auto u) { launch_column<decltype(u), Acc>(a, s); });
}

}  // namespace

SeparablePath separable_path(const SeparableLaunch& a) {
  if (!specialized_ok(a)) return SeparablePath::generic;
  const std::size_t limit = max_dynamic_smem();
  if (fused_ok(a, limit)) return SeparablePath::fused;
  if (fast_row_ok(a, limit) || fast_column_ok(a)) return SeparablePath::two_pass;
  return SeparablePath::generic;
}

void separable_band_async(const SeparableLaunch& a, cudaStream_t stream) {
  if (a.f64) {
    launch_generic<double>(a, stream);
    return;
  }
  if (!specialized_ok(a)) {
    launch_generic<float>(a, stream);
    return;
  }
  const std::size_t limit = max_dynamic_smem();
  if (fused_ok(a, limit)) {
    launch_fused(a, stream);
    return;
  }
  if (fast_row_ok(a, limit)) {
    launch_fast_row(a, stream);
  } else {
    dispatch_type(a.in_type, [&](auto t) { launch_row<decltype(t), float>(a, stream); });
  }
  if (fast_column_ok(a)) {
    launch_fast_column(a, stream);
  } else {
    dispatch_type(a.out_type, [&](auto u) { launch_column<decltype(u), float>(a, stream); });
  }
}

}  // namespace ooc::cuda
