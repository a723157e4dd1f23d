// The separable convolution's CUDA kernels specialized on the radius (float accumulation,
// u8/u16/f32 samples, up to kMaxChannels channels): the same bits as the generic kernels
// (separable_generic.cuh, whose comment says how), faster. Tile kernels take a TilePolicy, the
// column kernel a ColumnPolicy (separable_policy.cuh).
//
// The taps travel by value in the kernel's parameters (the launch's constant bank: no global
// loads, safe for concurrent streams with different filters) and every loop over taps is unrolled,
// so each tap is an FFMA operand. Register blocking: a thread computes several outputs from a
// sliding window of inputs in registers, so there is less than one shared (or global) load per
// FMA.
//  - fused<T, U, R, CC> (rx == ry <= kFusedMaxRadius, input type == output type): one block
//    loads an input tile with its halo into shared memory, runs the row pass into a shared
//    intermediate, then the column pass, and stores the output; the intermediate never goes to
//    DRAM. One-channel f32 takes fused_quad<R>: the same passes over rows laid out for 16-byte
//    cp.async loads and 16-byte shared accesses.
//  - row<T, R, CC> + column<U, R> (the other radii of FastRadii, or rx != ry): two passes through
//    the intermediate in global memory, as the generic kernels; each pass is specialized on its own
//    radius, and a pass whose radius or type has no specialization runs its generic kernel.
// Tile loads: where the rows start 16-byte aligned, each thread owns a 16-byte column of the tile
// and walks down its rows with all its loads in flight; elsewhere (row ends, constant-border
// rows, unaligned strides) sample by sample, through the border rule. The fused and row kernels
// are also instantiated for one channel (CC = 1: immediate shared-memory offsets).
// Row pass in shared memory: each thread owns one row of the tile (lanes of a warp are consecutive
// rows, the row stride is odd, so a warp's loads hit 32 different banks) and slides along it.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "ooc/border.hpp"

namespace ooc::cuda::separable {

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
  template <class P>
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
// and walks down the rows, P::load_batch(sizeof(T)) loads in flight, storing the samples the tile
// holds: no division or border test per sample, where the per-sample path below spends about 30
// instructions on them (once most of the fused kernel's instructions at small radii). False,
// having loaded nothing, elsewhere.
template <class P, class T>
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
  constexpr int B = P::load_batch(sizeof(T));
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
// f0.., P::load_batch(sizeof(T)) loads in flight per thread (f32 interiors: the whole tile by
// cp.async). Rows of cval (constant border) are not read. kVectors false leaves out
// load_tile_vectors (and its registers) where the caller knows it would decline.
template <class P, class T, bool kVectors = true>
__device__ __forceinline__ void load_tile(const TileArgs& a, const TileShape& t, float* sh,
                                          std::int64_t y0, int rows_valid, std::int64_t f0) {
  if constexpr (kVectors)
    if (load_tile_vectors<P, T>(a, t, sh, y0, rows_valid, f0)) return;
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
  constexpr int B = P::load_batch(sizeof(T));
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
template <class P, int R, int CC>
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
template <class P, class U, int R, int M, class ChunkOf>
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
template <class P, class T, class U, int R, int CC>
__global__ void __launch_bounds__(P::kThreads, P::min_blocks(sizeof(T)))
    fused_kernel(const TileArgs a, const Taps<R> row_w, const Taps<R> col_w) {
  constexpr int M = P::fused_run(sizeof(T));
  constexpr int TH = P::kFusedRows;
  extern __shared__ float smem_f[];
  const int C = channels_of<CC>(a);
  const TileShape t = TileShape::make<P>(C, R, TH + 2 * R);
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
    load_tile<P, T>(a, t, sh_in, y0, rows_valid, f0);
    __syncthreads();
    row_phase<P, R, CC>(a, t, sh_in, sh_mid, y0, rows_valid, row_w);
    __syncthreads();
    column_phase<P, U, R, M>(
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

// The smallest multiple of 4 samples at or above n whose count of 16-byte quads is odd.
constexpr int odd_quads(int n) {
  return (((n + 3) / 4) | 1) * 4;
}

// A quad tile's geometry for radius R (host and device).
template <class P>
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

// The tile's rows_valid input rows from band row y0, quads from flat sample fa (quad-aligned): each
// thread owns one quad column and walks down the rows.
template <class P, int R>
__device__ __forceinline__ void load_quads(const TileArgs& a, float* sh_in, std::int64_t y0,
                                           int rows_valid, std::int64_t fa) {
  constexpr QuadGeom<P> g(R);
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
template <class P, int R>
__device__ __forceinline__ void row_phase_quads(const TileArgs& a, const float* sh_in,
                                                float* sh_mid, std::int64_t y0, int rows_valid,
                                                const Taps<R>& w) {
  constexpr QuadGeom<P> g(R);
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
template <class P, int R>
__global__ void __launch_bounds__(P::kThreads, P::quad_min_blocks(R))
    fused_quad_kernel(const TileArgs a, const Taps<R> row_w, const Taps<R> col_w) {
  constexpr QuadGeom<P> g(R);
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
      load_quads<P, R>(a, sh_in, y0, rows_valid, fa);
    else  // never a vector tile (those are quad tiles): leave that path out of the registers
      load_tile<P, float, false>(a, g.shape(), sh_in + g.shift, y0, rows_valid, f0);
    __syncthreads();
    row_phase_quads<P, R>(a, sh_in, sh_mid, y0, rows_valid, row_w);
    __syncthreads();
    column_phase<P, float, R, P::fused_run(sizeof(float))>(
        a, sh_mid, g.mid_pitch, g.kW, [](int it) { return it / QuadGeom<P>::kW; }, i0, y0, col_w);
  }
}

// The row kernel of the two-pass path: block (tile of tile_w samples, kRowRows rows); the tile's
// intermediate goes through shared memory so that the stores to global memory are coalesced.
template <class P, class T, int R, int CC>
__global__ void __launch_bounds__(P::kThreads, P::min_blocks(sizeof(T)))
    row_kernel(const TileArgs a, const Taps<R> w) {
  extern __shared__ float smem_r[];
  const int C = channels_of<CC>(a);
  const TileShape t = TileShape::make<P>(C, R, P::kRowRows);
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
    load_tile<P, T>(a, t, sh_in, y0, rows_valid, f0);
    __syncthreads();
    row_phase<P, R, CC>(a, t, sh_in, sh_mid, y0, rows_valid, w);
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
template <class P, class U, int R>
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

}  // namespace ooc::cuda::separable
