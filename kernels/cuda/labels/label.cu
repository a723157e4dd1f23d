// CUDA labelling of a band, by strips: a warp labels a strip 32 samples wide and up to kSegRows
// rows tall, row by row, in shared memory, then joins between strips and segments and a prefix
// sum number the components. Each sample's label is an index y x padded + x (padded: the width
// rounded up to 32) of a sample of its component, and every label points to a smaller index, so
// a component's root is its first sample in raster order:
//   1. a row's foreground is one ballot word: each sample points at the first sample of its run
//      (bit arithmetic), and the runs join those of the row above once per contact (one union
//      where a run meets a run, not one per sample), by atomicMin on the larger root; each sample
//      then writes its root, and the strip's roots are flagged in a bit mask, a word per row;
//   2. the same contact rule joins the strips' edge columns and the segments' edge rows, by
//      unions in global memory;
//   3. every root of step 1 that step 2 joined takes its component's root (path halving) and
//      leaves the mask, so that any sample is two reads from its root; a prefix sum of the mask's
//      words' bit counts (CUB) gives each root its rank: the roots before it in raster order.
// Pass 1 numbers the samples that go back (rank + 1); pass 2 goes from each sample's root through
// its rank to the merged table's label at once. The numbers are those of the CPU's labelling of
// the same band (kernels/cpu/labels/runs.hpp), by construction.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_scan.cuh>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/labels/label.cuh"
#include "ooc/error.hpp"

namespace ooc::cuda {
namespace {

constexpr std::uint32_t kNone = 0xffffffffu;  // background
constexpr int kSegRows = 64;                  // a strip's rows per warp (its shared memory)
constexpr int kWarps = 4;                     // strips per block
constexpr int kAhead = 8;                     // rows a warp loads before it labels them
constexpr int kThreads = 256;                 // the flat kernels' blocks

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

// The contact rule of step 2 (step 1 applies it as bit masks). Along a line of samples t (a row,
// or a column), sample t of the line `c` meets t-1, t and t+1 of the line `u` beside it. Which of
// them (bits 0, 1, 2) t joins so that every run of c is joined once to every run of u it touches:
// a neighbour is left out where step 1 already linked it to one joined before (same_prev: t-1
// and t are in one strip segment; same_next: t and t+1).
__device__ __forceinline__ unsigned contacts(bool diagonal, bool c_prev, bool c, bool u_prev,
                                             bool u, bool u_next, bool same_prev, bool same_next) {
  if (!c) return 0;
  if (!diagonal) return u && !(c_prev && u_prev && same_prev) ? 2u : 0u;
  const bool start = !(c_prev && same_prev);  // the first sample of its run
  unsigned j = 0;
  if (start && u_prev) j |= 1u;
  if (start && u && !(u_prev && same_prev)) j |= 2u;
  if (u_next && !(u && same_next)) j |= 4u;
  return j;
}

// Foreground as the CPU's: != 0, so -0.0 is background and NaN foreground.
template <class T>
__device__ __forceinline__ bool foreground(const std::byte* in, std::size_t stride, std::int64_t y,
                                           std::int64_t x) {
  return __ldg(reinterpret_cast<const T*>(in + static_cast<std::size_t>(y) * stride) + x) != T(0);
}

// One bit a sample (CudaBand::in_bits): every lane of a warp reads its strip's word of the row.
struct Bits {};
template <>
__device__ __forceinline__ bool foreground<Bits>(const std::byte* in, std::size_t stride,
                                                 std::int64_t y, std::int64_t x) {
  const auto* words =
      reinterpret_cast<const std::uint32_t*>(in + static_cast<std::size_t>(y) * stride);
  return (__ldg(words + (x >> 5)) >> (x & 31)) & 1u;
}

// Step 1. Blocks of kWarps warps, a strip each; the grid's y walks the segments of kSegRows rows.
template <class T>
__global__ void __launch_bounds__(32 * kWarps)
    strips(const std::byte* in, std::size_t stride, int rows, int width, int padded, bool diagonal,
           std::uint32_t* labels, std::uint32_t* roots) {
  __shared__ std::uint32_t shared[kWarps][kSegRows * 32];
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int n_strips = padded / 32;
  const int strip = static_cast<int>(blockIdx.x) * kWarps + warp;
  if (strip >= n_strips) return;  // a whole warp: no block-wide barrier below
  std::uint32_t* s = shared[warp];
  const int x = strip * 32 + lane;
  const bool inside = x < width;
  const std::uint32_t upto = 0xffffffffu >> (31 - lane);  // lanes 0 .. lane
  const std::uint32_t me = 1u << lane;
  const int segs = (rows + kSegRows - 1) / kSegRows;
  for (int seg = static_cast<int>(blockIdx.y); seg < segs; seg += static_cast<int>(gridDim.y)) {
    const int y0 = seg * kSegRows, h = min(kSegRows, rows - y0);
    std::uint32_t above = 0;  // the row above's foreground
    for (int r0 = 0; r0 < h; r0 += kAhead) {
      bool f[kAhead];
#pragma unroll
      for (int j = 0; j < kAhead; ++j)
        f[j] = inside && r0 + j < h && foreground<T>(in, stride, y0 + r0 + j, x);
#pragma unroll
      for (int j = 0; j < kAhead; ++j) {
        const int r = r0 + j;
        if (r >= h) break;  // the same for the whole warp
        const std::uint32_t m = __ballot_sync(0xffffffffu, f[j]);
        const std::uint32_t starts = m & ~(m << 1);
        const auto i = static_cast<std::uint32_t>(r * 32 + lane);
        s[i] = f[j] ? static_cast<std::uint32_t>(r * 32 + 31 - __clz(starts & upto)) : kNone;
        __syncwarp();
        if (r > 0 && f[j]) {
          const std::uint32_t up = i - 32;
          if (diagonal) {
            if (starts & (above << 1) & me) unite(s, i, up - 1);
            if (starts & above & ~(above << 1) & me) unite(s, i, up);
            if (m & (above >> 1) & ~above & me) unite(s, i, up + 1);
          } else {
            const std::uint32_t c = m & above;
            if (c & ~(c << 1) & me) unite(s, i, up);
          }
        }
        __syncwarp();
        above = m;
      }
    }
    for (int r = 0; r < h; ++r) {
      const auto i = static_cast<std::uint32_t>(r * 32 + lane);
      std::uint32_t v = kNone;
      bool root = false;
      if (s[i] != kNone) {
        const std::uint32_t q = find_root(s, i);
        root = q == i;
        v = static_cast<std::uint32_t>((y0 + static_cast<int>(q >> 5)) * padded + strip * 32 +
                                       static_cast<int>(q & 31));
      }
      const std::size_t row = static_cast<std::size_t>(y0 + r);
      labels[row * static_cast<std::size_t>(padded) + static_cast<std::size_t>(x)] = v;
      const std::uint32_t flags = __ballot_sync(0xffffffffu, root);
      if (lane == 0) roots[row * static_cast<std::size_t>(n_strips) + strip] = flags;
    }
    __syncwarp();  // every find done before the next segment overwrites s
  }
}

__device__ __forceinline__ bool is_fg(const std::uint32_t* labels, std::int64_t p) {
  return labels[p] != kNone;
}

// Step 2 across the segments' edges: each sample of a segment's first row (below the band's first)
// with the row above.
__global__ void join_segments(int rows, int padded, bool diagonal, std::uint32_t* labels) {
  const std::int64_t edges = (rows - 1) / kSegRows, n = edges * padded;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t y = (k / padded + 1) * kSegRows, x = k % padded;
    const std::int64_t p = y * padded + x, q = p - padded;
    const bool has_prev = x > 0, has_next = x + 1 < padded;
    const unsigned j =
        contacts(diagonal, has_prev && is_fg(labels, p - 1), is_fg(labels, p),
                 has_prev && is_fg(labels, q - 1), is_fg(labels, q),
                 has_next && is_fg(labels, q + 1), (x & 31) != 0, ((x + 1) & 31) != 0);
    const auto a = static_cast<std::uint32_t>(p), b = static_cast<std::uint32_t>(q);
    if (j & 1u) unite(labels, a, b - 1);
    if (j & 2u) unite(labels, a, b);
    if (j & 4u) unite(labels, a, b + 1);
  }
}

// Step 2 across the strips' edges: each sample of a strip's first column (right of the band's
// first) with the column to its left.
__global__ void join_strips(int rows, int padded, bool diagonal, std::uint32_t* labels) {
  const std::int64_t edges = padded / 32 - 1, n = edges * rows;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t y = k / edges, x = (k % edges + 1) * 32;
    const std::int64_t p = y * padded + x, q = p - 1;
    const bool has_prev = y > 0, has_next = y + 1 < rows;
    const unsigned j =
        contacts(diagonal, has_prev && is_fg(labels, p - padded), is_fg(labels, p),
                 has_prev && is_fg(labels, q - padded), is_fg(labels, q),
                 has_next && is_fg(labels, q + padded), y % kSegRows != 0, (y + 1) % kSegRows != 0);
    const auto a = static_cast<std::uint32_t>(p), b = static_cast<std::uint32_t>(q);
    const auto row = static_cast<std::uint32_t>(padded);
    if (j & 1u) unite(labels, a, b - row);
    if (j & 2u) unite(labels, a, b);
    if (j & 4u) unite(labels, a, b + row);
  }
}

// The root of x, each sample on the way pointed at its grandparent (no unions run meanwhile, so
// every write points at an ancestor, whatever other threads do).
__device__ __forceinline__ std::uint32_t find_halving(std::uint32_t* lp, std::uint32_t x) {
  volatile std::uint32_t* l = lp;
  for (;;) {
    const std::uint32_t p = l[x];
    if (p == x) return x;
    const std::uint32_t g = l[p];
    if (g == p) return p;
    l[x] = g;
    x = g;
  }
}

// Step 3: a thread per mask word; its roots that step 2 joined point at their component's root
// and leave the mask.
__global__ void compress(std::int64_t words, std::uint32_t* labels, std::uint32_t* roots) {
  for (std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < words;
       w += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint32_t bits = roots[w], left = bits;
    while (bits) {
      const int b = __ffs(static_cast<int>(bits)) - 1;
      bits &= bits - 1;
      const auto p = static_cast<std::uint32_t>(w * 32 + b);
      const std::uint32_t r = find_halving(labels, p);
      if (r != p) {
        labels[p] = r;
        left &= ~(1u << b);
      }
    }
    roots[w] = left;
  }
}

// The prefix sum's input: the roots in mask word w.
struct RootsIn {
  const std::uint32_t* roots;
  __host__ __device__ std::uint32_t operator()(std::uint32_t w) const {
#if defined(__CUDA_ARCH__)
    return static_cast<std::uint32_t>(__popc(roots[w]));
#else
    static_cast<void>(w);  // the scan runs on the device only
    return 0;
#endif
  }
};

// What step 3 leaves for the numbering: after it, a sample's label is a root, or a root of step 1
// whose label is the root.
struct Roots {
  const std::uint32_t* labels;
  const std::uint32_t* mask;
  const std::uint32_t* before;  // roots before each mask word
  std::int64_t padded;
};

// The rank of sample p's root (the roots before it), or kNone for the background.
__device__ __forceinline__ std::uint32_t rank_of(const Roots& r, std::int64_t p) {
  std::uint32_t q = __ldg(r.labels + p);
  if (q == kNone) return kNone;
  for (std::uint32_t up = __ldg(r.labels + q); up != q; up = __ldg(r.labels + q)) q = up;
  const std::uint32_t w = q >> 5;
  return __ldg(r.before + w) +
         static_cast<std::uint32_t>(__popc(__ldg(r.mask + w) & ((1u << (q & 31)) - 1u)));
}

// Pass 1's numbers of rows y0, y0 + step, ... (grid y) into `out` (dense rows of width); the
// first thread writes the count.
__global__ void number(Roots r, std::int64_t y0, std::int64_t step, std::int64_t n_rows,
                       std::int64_t width, std::int64_t words, std::uint32_t* out,
                       unsigned long long* count) {
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
    *count = static_cast<unsigned long long>(r.before[words - 1]) +
             static_cast<unsigned long long>(__popc(r.mask[words - 1]));
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= width) return;
  for (std::int64_t k = blockIdx.y; k < n_rows; k += gridDim.y) {
    const std::int64_t y = y0 + k * step;
    const std::uint32_t q = rank_of(r, y * r.padded + x);
    out[y * width + x] = q == kNone ? 0u : q + 1u;
  }
}

// Pass 2: each sample's root, through its rank, to its final label.
template <class L>
__global__ void relabel(Roots r, std::int64_t rows, std::int64_t width, const L* table,
                        std::byte* out, std::size_t out_stride) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= width) return;
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    const std::uint32_t q = rank_of(r, y * r.padded + x);
    reinterpret_cast<L*>(out + static_cast<std::size_t>(y) * out_stride)[x] =
        q == kNone ? L{0} : __ldg(table + q);
  }
}

unsigned flat_blocks(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65536 ? 65536 : b));
}

std::size_t aligned(std::size_t n) {
  return (n + 255) & ~std::size_t{255};
}

std::int64_t padded_width(std::int64_t width) {
  return (width + 31) / 32 * 32;
}

// The prefix sum's scratch at most: CUB keeps a few words per tile of at least 128 items.
std::size_t scan_scratch_bound(std::int64_t n) {
  return aligned((static_cast<std::size_t>(n) / 128 + 64) * 32 + (std::size_t{1} << 16));
}

// The scratch's parts: the labels (rows x padded), the root mask and the roots before each of its
// words (rows x padded / 32 each), the numbers (rows x width) and the prefix sum's own.
struct Parts {
  std::int64_t padded, words;
  std::size_t mask, before, numbers, temp, end;
};

Parts parts(std::int64_t rows, std::int64_t width) {
  Parts p{};
  p.padded = padded_width(width);
  p.words = rows * (p.padded / 32);
  p.mask = aligned(static_cast<std::size_t>(rows * p.padded) * sizeof(std::uint32_t));
  p.before = p.mask + aligned(static_cast<std::size_t>(p.words) * sizeof(std::uint32_t));
  p.numbers = p.before + aligned(static_cast<std::size_t>(p.words) * sizeof(std::uint32_t));
  p.temp = p.numbers + aligned(static_cast<std::size_t>(rows * width) * sizeof(std::uint32_t));
  p.end = p.temp + scan_scratch_bound(p.words);
  return p;
}

// Steps 1 to 3 on `stream`, in `scratch` laid out as `p`; returns what the numbering reads.
Roots label_roots(const std::byte* in, std::size_t stride, std::int64_t rows, std::int64_t width,
                  SampleType type, bool bits, bool diagonal, std::byte* scratch,
                  std::size_t scratch_bytes, const Parts& p, cudaStream_t s) {
  if (rows < 1 || width < 1 || rows * p.padded >= (std::int64_t{1} << 31) || scratch_bytes < p.end)
    throw Error(ErrorKind::device, "label_band: a band of " + std::to_string(rows) + " x " +
                                       std::to_string(width) + " samples and " +
                                       std::to_string(scratch_bytes) + " bytes of scratch");
  auto* labels = reinterpret_cast<std::uint32_t*>(scratch);
  auto* mask = reinterpret_cast<std::uint32_t*>(scratch + p.mask);
  auto* before = reinterpret_cast<std::uint32_t*>(scratch + p.before);
  const auto counts =
      thrust::make_transform_iterator(thrust::counting_iterator<std::uint32_t>(0), RootsIn{mask});
  std::size_t temp_bytes = 0;
  OOC_KERNEL_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts, before,
                                               static_cast<int>(p.words), s));
  if (temp_bytes > scratch_bytes - p.temp)
    throw Error(ErrorKind::device, "label_band: CUB's scan needs " + std::to_string(temp_bytes) +
                                       " bytes of scratch, " +
                                       std::to_string(scratch_bytes - p.temp) + " are left");
  const int r = static_cast<int>(rows), w = static_cast<int>(width),
            pw = static_cast<int>(p.padded);
  const std::int64_t segs = (rows + kSegRows - 1) / kSegRows;
  const dim3 grid(static_cast<unsigned>((p.padded / 32 + kWarps - 1) / kWarps),
                  static_cast<unsigned>(segs < 65535 ? segs : 65535));
  if (bits)
    strips<Bits><<<grid, 32 * kWarps, 0, s>>>(in, stride, r, w, pw, diagonal, labels, mask);
  else
    switch (type) {
#define OOC_LABEL_STRIPS(t, T)                                                            \
  case SampleType::t:                                                                     \
    strips<T><<<grid, 32 * kWarps, 0, s>>>(in, stride, r, w, pw, diagonal, labels, mask); \
    break;
      OOC_LABEL_STRIPS(u8, std::uint8_t)
      OOC_LABEL_STRIPS(u16, std::uint16_t)
      OOC_LABEL_STRIPS(i16, std::int16_t)
      OOC_LABEL_STRIPS(u32, std::uint32_t)
      OOC_LABEL_STRIPS(i32, std::int32_t)
      OOC_LABEL_STRIPS(f32, float)
      OOC_LABEL_STRIPS(f64, double)
      OOC_LABEL_STRIPS(u64, std::uint64_t)
#undef OOC_LABEL_STRIPS
    }
  OOC_KERNEL_TRY(cudaGetLastError());
  const std::int64_t row_edges = (rows - 1) / kSegRows * p.padded;
  if (row_edges > 0)
    join_segments<<<flat_blocks(row_edges), kThreads, 0, s>>>(r, pw, diagonal, labels);
  const std::int64_t col_edges = (p.padded / 32 - 1) * rows;
  if (col_edges > 0)
    join_strips<<<flat_blocks(col_edges), kThreads, 0, s>>>(r, pw, diagonal, labels);
  compress<<<flat_blocks(p.words), kThreads, 0, s>>>(p.words, labels, mask);
  OOC_KERNEL_TRY(cudaGetLastError());
  OOC_KERNEL_TRY(cub::DeviceScan::ExclusiveSum(scratch + p.temp, temp_bytes, counts, before,
                                               static_cast<int>(p.words), s));
  return Roots{labels, mask, before, p.padded};
}

// Blocks of kThreads samples of a row, the grid's y over rows.
dim3 row_grid(std::int64_t width, std::int64_t rows) {
  return dim3(static_cast<unsigned>((width + kThreads - 1) / kThreads),
              static_cast<unsigned>(rows < 65535 ? rows : 65535));
}

}  // namespace

std::size_t label_band_scratch(std::int64_t rows, std::int64_t width) {
  return parts(rows < 1 ? 1 : rows, width < 1 ? 1 : width).end;
}

const std::uint32_t* label_band_async(const std::byte* in, std::size_t stride, std::int64_t rows,
                                      std::int64_t width, SampleType type, bool bits, bool diagonal,
                                      std::byte* scratch, std::size_t scratch_bytes,
                                      std::uint64_t* count, cudaStream_t s, bool edge_rows) {
  const Parts p = parts(rows, width);
  const Roots r =
      label_roots(in, stride, rows, width, type, bits, diagonal, scratch, scratch_bytes, p, s);
  auto* out = reinterpret_cast<std::uint32_t*>(scratch + p.numbers);
  auto* c = reinterpret_cast<unsigned long long*>(count);
  if (edge_rows && rows > 2)  // the first row and the last
    number<<<row_grid(width, 2), kThreads, 0, s>>>(r, 0, rows - 1, 2, width, p.words, out, c);
  else
    number<<<row_grid(width, rows), kThreads, 0, s>>>(r, 0, 1, rows, width, p.words, out, c);
  OOC_KERNEL_TRY(cudaGetLastError());
  return out;
}

void label_band_through_async(const std::byte* in, std::size_t stride, std::int64_t rows,
                              std::int64_t width, SampleType type, bool bits, bool diagonal,
                              std::byte* scratch, std::size_t scratch_bytes, const void* table,
                              bool wide, std::byte* out, std::size_t out_stride, cudaStream_t s) {
  const Roots r = label_roots(in, stride, rows, width, type, bits, diagonal, scratch, scratch_bytes,
                              parts(rows, width), s);
  if (wide)
    relabel<<<row_grid(width, rows), kThreads, 0, s>>>(
        r, rows, width, static_cast<const unsigned long long*>(table), out, out_stride);
  else
    relabel<<<row_grid(width, rows), kThreads, 0, s>>>(
        r, rows, width, static_cast<const std::uint32_t*>(table), out, out_stride);
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
