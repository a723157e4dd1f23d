// CUDA labelling of a band: a block-based union-find (Playne and Hawick's, as in Allegretti et
// al.'s block-based GPU labelling). Each sample's label is the index (y x width + x) of a sample of
// its component, and every label points to a smaller index, so the root of a component is its
// first sample in raster order:
//   1. each block labels a tile of kTileRows x kTileCols samples in shared memory (unions by
//      atomicMin on the larger root), then writes each sample's root as a band index;
//   2. the samples on the tiles' top rows and left columns join their neighbours across the tile
//      edges, by the same unions in global memory;
//   3. each sample takes its root; roots are flagged, and a prefix sum of the flags (CUB) numbers
//      them in raster order; each sample takes its root's number (the band's first and last rows
//      only, where only those go back: pass 1's merge), or, in pass 2, goes from its root through
//      the root's rank to the table's final label at once (relabel_roots_async).
// The numbers are those of the CPU's labelling of the same band (runs.hpp), by construction.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_scan.cuh>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/labels/label.cuh"
#include "ooc/error.hpp"

namespace ooc::cuda {
namespace {

using P = LabelPolicy;
constexpr std::uint32_t kNone = 0xffffffffu;  // background

// Volatile: other threads' unions change the parents while a find walks them.
__device__ __forceinline__ std::uint32_t find_root(const std::uint32_t* lp, std::uint32_t x) {
  const volatile std::uint32_t* l = lp;
  std::uint32_t p = l[x];
  while (p != x) {
    x = p;
    p = l[x];
  }
  return x;
}

// Joins the trees of a and b: the larger root points to the smaller. A root another thread
// changed meanwhile is retried from its new parent. Works on shared and global memory alike.
__device__ __forceinline__ void unite(std::uint32_t* l, std::uint32_t a, std::uint32_t b) {
  for (;;) {
    a = find_root(l, a);
    b = find_root(l, b);
    if (a == b) return;
    const std::uint32_t hi = a > b ? a : b, lo = a > b ? b : a;
    const std::uint32_t old = atomicMin(l + hi, lo);
    if (old == hi) return;
    a = old;
    b = lo;
  }
}

// Foreground as the CPU's: != 0, so -0.0 is background and NaN foreground.
template <class T>
__device__ __forceinline__ bool foreground(const std::byte* in, std::size_t stride, std::int64_t y,
                                           std::int64_t x) {
  return __ldg(reinterpret_cast<const T*>(in + static_cast<std::size_t>(y) * stride) + x) != T(0);
}

// Step 1. Blocks of kTileCols x kTileRows threads, a sample each; tile rows beyond the grid's y
// extent in a loop.
template <class T>
__global__ void local_tiles(const std::byte* in, std::size_t stride, std::int64_t rows,
                            std::int64_t width, bool diagonal, std::uint32_t* labels) {
  __shared__ std::uint32_t s[P::kTileRows * P::kTileCols];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int li = ty * P::kTileCols + tx;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * P::kTileCols + tx;
  const std::int64_t tiles_y = (rows + P::kTileRows - 1) / P::kTileRows;
  for (std::int64_t by = blockIdx.y; by < tiles_y; by += gridDim.y) {
    const std::int64_t y = by * P::kTileRows + ty;
    const bool inside = x < width && y < rows;
    const bool fg = inside && foreground<T>(in, stride, y, x);
    s[li] = fg ? static_cast<std::uint32_t>(li) : kNone;
    __syncthreads();
    if (fg) {
      const auto u = static_cast<std::uint32_t>(li);
      if (tx > 0 && s[li - 1] != kNone) unite(s, u, u - 1);
      if (ty > 0) {
        const std::uint32_t up = u - P::kTileCols;
        if (s[up] != kNone) unite(s, u, up);
        if (diagonal && tx > 0 && s[up - 1] != kNone) unite(s, u, up - 1);
        if (diagonal && tx + 1 < P::kTileCols && s[up + 1] != kNone) unite(s, u, up + 1);
      }
    }
    __syncthreads();
    std::uint32_t root = kNone;
    if (fg) root = find_root(s, static_cast<std::uint32_t>(li));
    __syncthreads();  // every find done before the next tile overwrites s
    if (inside) {
      std::uint32_t v = kNone;
      if (fg) {
        const std::int64_t ry = by * P::kTileRows + root / P::kTileCols;
        const std::int64_t rx =
            static_cast<std::int64_t>(blockIdx.x) * P::kTileCols + root % P::kTileCols;
        v = static_cast<std::uint32_t>(ry * width + rx);
      }
      labels[y * width + x] = v;
    }
  }
}

// Step 2, across the tiles' top edges: each sample of a tile's first row (below the band's first)
// with its neighbours in the row above.
__global__ void join_rows(std::int64_t rows, std::int64_t width, bool diagonal,
                          std::uint32_t* labels) {
  const std::int64_t edges = (rows - 1) / P::kTileRows;  // tile rows 1 .. edges
  const std::int64_t n = edges * width;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t y = (k / width + 1) * P::kTileRows, x = k % width;
    const auto p = static_cast<std::uint32_t>(y * width + x);
    if (labels[p] == kNone) continue;
    const auto up = static_cast<std::uint32_t>(p - width);
    if (labels[up] != kNone) unite(labels, p, up);
    if (diagonal && x > 0 && labels[up - 1] != kNone) unite(labels, p, up - 1);
    if (diagonal && x + 1 < width && labels[up + 1] != kNone) unite(labels, p, up + 1);
  }
}

// Step 2, across the tiles' left edges: each sample of a tile's first column (right of the
// band's first) with its neighbours in the column to the left.
__global__ void join_cols(std::int64_t rows, std::int64_t width, bool diagonal,
                          std::uint32_t* labels) {
  const std::int64_t edges = (width - 1) / P::kTileCols;
  const std::int64_t n = edges * rows;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t y = k / edges, x = (k % edges + 1) * P::kTileCols;
    const auto p = static_cast<std::uint32_t>(y * width + x);
    if (labels[p] == kNone) continue;
    const auto left = p - 1;
    if (labels[left] != kNone) unite(labels, p, left);
    if (diagonal && y > 0 && labels[left - width] != kNone)
      unite(labels, p, static_cast<std::uint32_t>(left - width));
    if (diagonal && y + 1 < rows && labels[left + width] != kNone)
      unite(labels, p, static_cast<std::uint32_t>(left + width));
  }
}

// Step 3: every sample points at its root (a root at itself).
__global__ void flatten(std::int64_t n, std::uint32_t* labels) {
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const auto p = static_cast<std::uint32_t>(k);
    // An ancestor: other threads' finds through p stay right.
    if (labels[p] != kNone && labels[p] != p) labels[p] = find_root(labels, p);
  }
}

// The prefix sum's input: 1 where sample p is a root, read from the labels as the scan goes (no
// array of flags written and read back).
struct IsRoot {
  const std::uint32_t* labels;
  __host__ __device__ std::uint32_t operator()(std::uint32_t p) const {
    return labels[p] == p ? 1u : 0u;
  }
};

// Step 3, after the prefix sum (ranks[p]: the roots before p): each sample of [begin, end) takes
// its root's number; the band's last sample's thread writes the count.
__global__ void number(std::int64_t begin, std::int64_t end, std::int64_t n, std::uint32_t* labels,
                       const std::uint32_t* ranks, unsigned long long* count) {
  for (std::int64_t k = begin + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       k < end; k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const auto p = static_cast<std::uint32_t>(k);
    const std::uint32_t r = labels[p];
    if (k == n - 1) *count = ranks[p] + (r == p ? 1u : 0u);
    labels[p] = r == kNone ? 0u : ranks[r] + 1u;
  }
}

// Pass 2 without step 3's numbers: each sample's root, through its rank, to its final label.
template <class L>
__global__ void relabel_roots(const std::uint32_t* roots, const std::uint32_t* ranks,
                              std::int64_t rows, std::int64_t width, const L* table, std::byte* out,
                              std::size_t out_stride) {
  const std::int64_t n = rows * width;
  // Rows side by side (the engine's slots): the sample's index is its place, no division by the
  // width (a 64-bit one, emulated, for every sample).
  const bool dense = out_stride == static_cast<std::size_t>(width) * sizeof(L);
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t r = roots[k];
    const L v = r == kNone ? L{0} : __ldg(table + __ldg(ranks + r));
    if (dense) {
      reinterpret_cast<L*>(out)[k] = v;
    } else {
      const std::int64_t y = k / width, x = k - y * width;
      reinterpret_cast<L*>(out + static_cast<std::size_t>(y) * out_stride)[x] = v;
    }
  }
}

unsigned flat_blocks(std::int64_t n) {
  const std::int64_t b = (n + P::kThreads - 1) / P::kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65536 ? 65536 : b));
}

std::size_t aligned(std::size_t n) {
  return (n + 255) & ~std::size_t{255};
}

// The prefix sum's scratch at most: CUB keeps a few words per tile of at least 128 samples.
std::size_t scan_scratch_bound(std::int64_t n) {
  return aligned((static_cast<std::size_t>(n) / 128 + 64) * 32 + (std::size_t{1} << 16));
}

}  // namespace

std::size_t label_band_scratch(std::int64_t samples) {
  const std::size_t n = static_cast<std::size_t>(samples < 1 ? 1 : samples);
  return 2 * aligned(n * sizeof(std::uint32_t)) + scan_scratch_bound(samples);
}

const std::uint32_t* label_band_async(const std::byte* in, std::size_t stride, std::int64_t rows,
                                      std::int64_t width, SampleType type, bool diagonal,
                                      std::byte* scratch, std::size_t scratch_bytes,
                                      std::uint64_t* count, cudaStream_t s, LabelNumbers numbers,
                                      const std::uint32_t** ranks_out) {
  const std::int64_t n = rows * width;
  if (rows < 1 || width < 1 || n >= (std::int64_t{1} << 31) ||
      scratch_bytes < label_band_scratch(n))
    throw Error(ErrorKind::device, "label_band_async: a band of " + std::to_string(rows) + " x " +
                                       std::to_string(width) + " samples and " +
                                       std::to_string(scratch_bytes) + " bytes of scratch");
  auto* labels = reinterpret_cast<std::uint32_t*>(scratch);
  const std::size_t at = aligned(static_cast<std::size_t>(n) * sizeof(std::uint32_t));
  auto* ranks = reinterpret_cast<std::uint32_t*>(scratch + at);
  const auto roots =
      thrust::make_transform_iterator(thrust::counting_iterator<std::uint32_t>(0), IsRoot{labels});
  std::byte* temp = scratch + 2 * at;
  std::size_t temp_bytes = 0;
  OOC_KERNEL_TRY(
      cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, roots, ranks, static_cast<int>(n), s));
  if (temp_bytes > scratch_bytes - 2 * at)
    throw Error(ErrorKind::device, "label_band_async: CUB's scan needs " +
                                       std::to_string(temp_bytes) + " bytes of scratch, " +
                                       std::to_string(scratch_bytes - 2 * at) + " are left");

  const dim3 tile(P::kTileCols, P::kTileRows);
  const std::int64_t tiles_y = (rows + P::kTileRows - 1) / P::kTileRows;
  const dim3 grid(static_cast<unsigned>((width + P::kTileCols - 1) / P::kTileCols),
                  static_cast<unsigned>(tiles_y < 65535 ? tiles_y : 65535));
  switch (type) {
#define OOC_LABEL_TILES(t, T)                                                        \
  case SampleType::t:                                                                \
    local_tiles<T><<<grid, tile, 0, s>>>(in, stride, rows, width, diagonal, labels); \
    break;
    OOC_LABEL_TILES(u8, std::uint8_t)
    OOC_LABEL_TILES(u16, std::uint16_t)
    OOC_LABEL_TILES(i16, std::int16_t)
    OOC_LABEL_TILES(u32, std::uint32_t)
    OOC_LABEL_TILES(i32, std::int32_t)
    OOC_LABEL_TILES(f32, float)
    OOC_LABEL_TILES(f64, double)
    OOC_LABEL_TILES(u64, std::uint64_t)
#undef OOC_LABEL_TILES
  }
  OOC_KERNEL_TRY(cudaGetLastError());
  const std::int64_t row_edges = (rows - 1) / P::kTileRows * width;
  if (row_edges > 0)
    join_rows<<<flat_blocks(row_edges), P::kThreads, 0, s>>>(rows, width, diagonal, labels);
  const std::int64_t col_edges = (width - 1) / P::kTileCols * rows;
  if (col_edges > 0)
    join_cols<<<flat_blocks(col_edges), P::kThreads, 0, s>>>(rows, width, diagonal, labels);
  flatten<<<flat_blocks(n), P::kThreads, 0, s>>>(n, labels);
  OOC_KERNEL_TRY(cudaGetLastError());
  OOC_KERNEL_TRY(
      cub::DeviceScan::ExclusiveSum(temp, temp_bytes, roots, ranks, static_cast<int>(n), s));
  auto* c = reinterpret_cast<unsigned long long*>(count);
  if (numbers == LabelNumbers::all || (numbers == LabelNumbers::edge_rows && rows <= 2)) {
    number<<<flat_blocks(n), P::kThreads, 0, s>>>(0, n, n, labels, ranks, c);
  } else if (numbers == LabelNumbers::edge_rows) {
    number<<<flat_blocks(width), P::kThreads, 0, s>>>(0, width, n, labels, ranks, c);
    number<<<flat_blocks(width), P::kThreads, 0, s>>>(n - width, n, n, labels, ranks, c);
  }
  OOC_KERNEL_TRY(cudaGetLastError());
  if (ranks_out) *ranks_out = ranks;
  return labels;
}

void relabel_roots_async(const std::uint32_t* roots, const std::uint32_t* ranks, std::int64_t rows,
                         std::int64_t width, const void* table, bool wide, std::byte* out,
                         std::size_t out_stride, cudaStream_t s) {
  if (wide)
    relabel_roots<<<flat_blocks(rows * width), P::kThreads, 0, s>>>(
        roots, ranks, rows, width, static_cast<const unsigned long long*>(table), out, out_stride);
  else
    relabel_roots<<<flat_blocks(rows * width), P::kThreads, 0, s>>>(
        roots, ranks, rows, width, static_cast<const std::uint32_t*>(table), out, out_stride);
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
