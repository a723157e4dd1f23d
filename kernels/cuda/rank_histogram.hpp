// The rank filters of 8- and 16-bit integer rectangles of any size by sliding histograms, written
// once for the CUDA kernel (rank_histogram.cu) and for its emulation on the CPU (the unit test
// runs this very code against the CPU rank filter, since the build machine has no GPU).
//
// A thread owns one output sample column (a column and a channel) of a chunk of output rows: it
// counts its K_h x K_w window into 256 coarse bins (the value for 8 bits, its high byte for 16),
// moves down a row by removing the leaving row's K_w samples and adding the entering row's
// (Huang's update along the column: the cost grows with K_w only), and tracks the coarse bin of
// the rank and the samples below it as the CPU's histogram kernels do. 16-bit samples also count
// every value (a thread's 65536 fine counts, in global memory) and find the rank inside the coarse
// bin by a scan of its 256 counts. Counting selects, so the result is the CPU's exactly.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ooc/border.hpp"

#if defined(__CUDACC__)
#define OOC_RANK_HD __host__ __device__
#else
#define OOC_RANK_HD
#endif
#if defined(__CUDA_ARCH__)
#define OOC_RANK_UNROLL _Pragma("unroll")
#else
#define OOC_RANK_UNROLL
#endif

namespace ooc::cuda::rank_hist {

constexpr int kThreads = 64;               // output sample columns of a block
constexpr int kCoarseBins = 256;           // a thread's coarse counts (shared memory on the GPU)
constexpr int kFineWords = 32768;          // a thread's 65536 16-bit fine counts, two to a word
constexpr std::int64_t kMaxCount = 65535;  // the counts are 16-bit: windows of up to 65535 samples
// Blocks of threads with fine counts (16-bit types): their global memory is the kernel's scratch
// (kFineBlocks * kThreads * kFineWords * 4 bytes, 2 GiB), and the blocks take the tasks in turn.
constexpr int kFineBlocks = 256;
// Blocks the 8-bit kernel aims at (several per SM), when the band has rows enough.
constexpr std::int64_t kTargetBlocks = 2048;

// Where a launch reads and writes; as RankLaunch (rank.cuh) for the rectangle.
struct Params {
  const std::byte* in = nullptr;  // input row 0 = the window's first row for output row 0
  std::size_t in_stride = 0;
  std::int64_t first_row = 0;  // image row of input row 0 (constant-border rows are unset)
  std::int64_t image_height = 0;
  std::int64_t width = 0;
  int channels = 1;
  int rows = 1, cols = 1;  // the window
  int left = 0;            // column 0 of the window is x - left
  int rank = 0;            // 0 .. rows * cols - 1
  BorderMode border = BorderMode::reflect;
  unsigned cval_key = 0;  // the constant border's key (see Key)
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  std::int64_t out_rows = 0;
};

// The key of a sample: its value made unsigned (the bins' order is the values').
template <class T>
struct Key {
  static constexpr bool wide = sizeof(T) == 2;
  static constexpr unsigned offset = std::is_signed_v<T> ? (wide ? 32768u : 128u) : 0u;
  static constexpr int shift = wide ? 8 : 0;  // key >> shift: the coarse bin
  OOC_RANK_HD static unsigned of(T v) { return static_cast<unsigned>(int(v) + int(offset)); }
  OOC_RANK_HD static T value(unsigned key) { return static_cast<T>(int(key) - int(offset)); }
};

// The key of the constant border: scipy's double cval in the type, truncated and saturated (as
// rank.cpp's constant_of).
template <class T>
inline unsigned constant_key(double v) {
  constexpr double lo = std::is_signed_v<T> ? -double(Key<T>::offset) : 0.0;
  constexpr double hi = double(Key<T>::wide ? 65535u : 255u) - double(Key<T>::offset);
  if (!(v == v)) v = 0;
  v = std::trunc(v);
  v = v < lo ? lo : (v > hi ? hi : v);
  return Key<T>::of(static_cast<T>(v));
}

// The work's division: tasks of (a strip of kThreads output sample columns, a chunk of rows).
struct Tasks {
  std::int64_t strips = 0, chunk_rows = 0, chunks = 0;
  OOC_RANK_HD std::int64_t count() const { return strips * chunks; }
};
// Chunks of at least two windows' rows (starting a chunk costs a window's rows), as many as give
// `blocks` tasks.
inline Tasks plan_tasks(std::int64_t width, int channels, std::int64_t out_rows, int rows,
                        std::int64_t blocks) {
  Tasks t;
  t.strips = (width * channels + kThreads - 1) / kThreads;
  const std::int64_t wanted = (blocks + t.strips - 1) / t.strips;
  std::int64_t r = (out_rows + wanted - 1) / wanted;
  if (r < 2 * std::int64_t{rows}) r = 2 * std::int64_t{rows};
  if (r > out_rows) r = out_rows;
  if (r < 1) r = 1;
  t.chunk_rows = r;
  t.chunks = (out_rows + r - 1) / r;
  return t;
}

template <class T>
OOC_RANK_HD inline T load_sample(const T* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

// One thread's task. `Counts` holds its coarse counts and (16 bits) fine counts:
//   unsigned coarse(int bin); void coarse_add(int bin, int d);
//   void fine_add(unsigned key, int d); void fine_words(int word, unsigned (&w)[4]) (4 words).
// Every count it adds it removes before returning, so the counts start at zero for the next task.
template <class T, class Counts>
OOC_RANK_HD void run_task(const Params& p, const Tasks& tasks, std::int64_t task, int lane,
                          Counts& h) {
  using K = Key<T>;
  const std::int64_t strip = task % tasks.strips, chunk = task / tasks.strips;
  const std::int64_t xs = strip * kThreads + lane;
  if (xs >= p.width * p.channels) return;
  const std::int64_t x = xs / p.channels, c = xs % p.channels;
  const std::int64_t y0 = chunk * tasks.chunk_rows;
  std::int64_t y1 = y0 + tasks.chunk_rows;
  if (y1 > p.out_rows) y1 = p.out_rows;
  if (y0 >= y1) return;
  const std::int64_t q0 = x - p.left;  // the window's first column
  const bool inside = q0 >= 0 && q0 + p.cols <= p.width;
  // Input row k of the band: null for a row of the constant border (unset, never read).
  auto row_of = [&](std::int64_t k) -> const T* {
    const std::int64_t image_row = p.first_row + k;
    if (p.border == BorderMode::constant && (image_row < 0 || image_row >= p.image_height))
      return nullptr;
    return reinterpret_cast<const T*>(p.in + static_cast<std::size_t>(k) * p.in_stride);
  };
  auto key_at = [&](const T* r, int j) -> unsigned {
    if (r == nullptr) return p.cval_key;
    const std::int64_t s = inside ? q0 + j : map_border(q0 + j, p.width, p.border);
    return s < 0 ? p.cval_key : K::of(load_sample(r + s * p.channels + c));
  };
  // cb: the coarse bin tracked; below: the samples of the window in lower bins.
  int cb = 0;
  std::int64_t below = 0;
  auto update = [&](unsigned key, int d) {
    const int bin = static_cast<int>(key >> K::shift);
    h.coarse_add(bin, d);
    if (bin < cb) below += d;
    if constexpr (K::wide) h.fine_add(key, d);
  };
  auto add_row = [&](std::int64_t k, int d) {
    const T* r = row_of(k);
    for (int j = 0; j < p.cols; ++j) update(key_at(r, j), d);
  };
  for (std::int64_t k = y0; k < y0 + p.rows; ++k) add_row(k, 1);
  for (std::int64_t y = y0; y < y1; ++y) {
    if (y > y0) {
      const T* gone = row_of(y - 1);
      const T* come = row_of(y + p.rows - 1);
      for (int j = 0; j < p.cols; ++j) {
        const unsigned a = key_at(gone, j), b = key_at(come, j);
        if (a != b) {
          update(a, -1);
          update(b, 1);
        }
      }
    }
    while (below > p.rank) below -= h.coarse(--cb);
    while (below + h.coarse(cb) <= p.rank) below += h.coarse(cb++);
    unsigned key = static_cast<unsigned>(cb);
    if constexpr (K::wide) {
      // The rank inside bin cb: a scan of its 256 counts, 8 at a time, from the nearer end.
      const std::int64_t n = h.coarse(cb);
      std::int64_t left = p.rank - below;  // 0 .. n - 1 from the bottom
      const bool up = 2 * left < n;
      if (!up) left = n - 1 - left;  // from the top
      for (int g = 0; g < 32; ++g) {
        const int gi = up ? g : 31 - g;
        unsigned w[4];
        h.fine_words(cb * 128 + gi * 4, w);
        const std::int64_t sum = (w[0] & 0xFFFFu) + (w[0] >> 16) + (w[1] & 0xFFFFu) + (w[1] >> 16) +
                                 (w[2] & 0xFFFFu) + (w[2] >> 16) + (w[3] & 0xFFFFu) + (w[3] >> 16);
        if (left >= sum) {
          left -= sum;
          continue;
        }
        // The group's counts in scan order, indexed by constants only (registers, no stack).
        unsigned r[4];
        OOC_RANK_UNROLL
        for (int k = 0; k < 4; ++k) r[k] = up ? w[k] : (w[3 - k] >> 16) | (w[3 - k] << 16);
        int found = 7;
        OOC_RANK_UNROLL
        for (int i = 0; i < 8; ++i) {
          const std::int64_t count = (r[i >> 1] >> (16 * (i & 1))) & 0xFFFFu;
          if (found == 7 && i < 7) {
            if (left < count)
              found = i;
            else
              left -= count;
          }
        }
        key = static_cast<unsigned>(cb * 256 + gi * 8 + (up ? found : 7 - found));
        break;
      }
    }
    T* o = reinterpret_cast<T*>(p.out + static_cast<std::size_t>(y) * p.out_stride);
    o[x * p.channels + c] = K::value(key);
  }
  // The last window out again: the counts are zero for the next task.
  for (std::int64_t k = y1 - 1; k < y1 - 1 + p.rows; ++k) add_row(k, -1);
}

}  // namespace ooc::cuda::rank_hist
