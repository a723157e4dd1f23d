// The rank filters of 8- and 16-bit integer rectangles of any size by sliding histograms, written
// once for the CUDA kernel (rank_histogram.cu) and for its emulation on the CPU (the unit test
// runs this very code against the CPU rank filter, since the build machine has no GPU).
//
// A thread owns one output sample column (a column and a channel) of a chunk of output rows: it
// counts its K_h x K_w window into 256 coarse bins (the value for 8 bits, its high byte for 16),
// moves down a row by removing the leaving row's K_w samples and adding the entering row's
// (Huang's update along the column: the cost grows with K_w only), and tracks the coarse bin of
// the rank and the samples below it as the CPU's histogram kernels do. For 16 bits the thread
// also keeps the 256 fine counts (low bytes) of ONE coarse bin, with 16 sums of 16 of them: the
// slide updates them for the samples of that bin only, and when the rank's coarse bin is another
// one they are rebuilt from the window (K_h x K_w samples, mostly compares). All of a thread's
// counts (528, as bytes where the window has fewer than 256 samples, else 16 bits) live in shared
// memory, so that no count goes to global memory (65536 fine counts per thread in global memory,
// updated by atomics in L2, ran several times slower).
// Counting selects, so the result is the CPU's exactly.
//
// A footprint (0/1 mask over the rectangle) is counted along its column runs: moving down a row
// takes each run's top sample out and adds the sample below its bottom, so the slide costs two
// updates a run (a disk: two a column, as a rectangle); the first fill and the 16-bit rebuild read
// the footprint's ones along its row spans (a row's pointer once, then adjacent samples).
//
// What a 16-bit output costs (instructions per thread, an estimate): the slide 2 K_w
// samples x ~17 (border mapping, load through L1, key, a shared read-modify-write, the tracked
// bin) plus a few coarse steps; a rebuild ~7 per window sample plus 68-136 stores to clear; the
// search inside the bin up to 16 + 16 shared loads. On noise the rank's coarse bin moves by about
// (32768 / K) sqrt(2 / K) values a row, so a rebuild happens on nearly every row at K = 15 (225
// samples: ~2,200 instructions an output), about half the rows at 51 (~11,000) and a fifth at 101
// (~16,000); smooth images rarely rebuild (~35 K_w). A GPU of 132 SMs at 1.98 GHz issues about
// 33 x 10^12 thread instructions a second (4 schedulers x 32 lanes an SM): u16 median 15 at most
// ~15 G samples/s, expected 5-7 (bank conflicts of random bins, divergence between rebuilding and
// sliding lanes, 6-13 warps an SM as shared memory allows); 51 and 101 ~1-1.5 and ~0.7 G
// samples/s (docs/performance.md, rank filters on the GPU, has what it reaches). u8 counts its
// coarse bins only, as bytes for windows under 256 samples (twice the warps).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "footprint_runs.hpp"
#include "kernels/cpu/morphology/border_constant.hpp"
#include "ooc/border.hpp"

#if defined(__CUDACC__)
#define OOC_RANK_HD __host__ __device__
#else
#define OOC_RANK_HD
#endif

namespace ooc::cuda::rank_hist {

constexpr int kThreads = 32;               // output sample columns of a block (one warp)
constexpr int kCoarseBins = 256;           // the value (8 bits) or the high byte (16 bits)
constexpr int kGroups = 16;                // 16-bit: sums of 16 fine counts
constexpr int kFineBins = 256;             // 16-bit: low bytes of one coarse bin
constexpr std::int64_t kMaxCount = 65535;  // the counts are 16-bit: windows of up to 65535 samples
constexpr std::int64_t kMaxByteCount = 255;  // windows of up to 255 samples count in bytes
// Blocks a launch aims at (many per SM: a block is one warp), when the band has rows enough.
constexpr std::int64_t kTargetBlocks = 8192;

using cuda::ColumnRun;
using RowSpan = cuda::RowRun;

// A footprint as the kernel reads it, in one block of memory: its column runs, then its row spans.
struct FootprintTable {
  std::vector<std::byte> bytes;
  int runs = 0, spans = 0;
};
inline FootprintTable footprint_table(const std::uint8_t* mask, int rows, int cols) {
  const std::vector<ColumnRun> c = cuda::column_runs(mask, rows, cols);
  const std::vector<RowSpan> r = cuda::row_runs(mask, rows, cols);
  FootprintTable t;
  t.runs = static_cast<int>(c.size());
  t.spans = static_cast<int>(r.size());
  t.bytes.resize(c.size() * sizeof(ColumnRun) + r.size() * sizeof(RowSpan));
  std::memcpy(t.bytes.data(), c.data(), c.size() * sizeof(ColumnRun));
  std::memcpy(t.bytes.data() + c.size() * sizeof(ColumnRun), r.data(), r.size() * sizeof(RowSpan));
  return t;
}
// Where a table's runs and spans start (table: FootprintTable::bytes, here or on a device).
OOC_RANK_HD inline const ColumnRun* table_runs(const void* table) {
  return static_cast<const ColumnRun*>(table);
}
OOC_RANK_HD inline const RowSpan* table_spans(const void* table, int runs) {
  return reinterpret_cast<const RowSpan*>(static_cast<const std::byte*>(table) +
                                          std::size_t(runs) * sizeof(ColumnRun));
}

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
  int rank = 0;            // 0 .. the window's samples - 1
  // A footprint's column runs and row spans (device memory on the GPU), or none: the whole
  // rectangle.
  const ColumnRun* runs = nullptr;
  int run_count = 0;
  const RowSpan* spans = nullptr;
  int span_count = 0;
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

// The key of the constant border: scipy's double cval in the type, as the CPU's.
template <class T>
inline unsigned constant_key(double v) {
  return Key<T>::of(kernels::constant_of<T>(v));
}

// Whether a window's counts fit in bytes (every count is at most the window's samples).
inline bool byte_counts(std::int64_t samples) {
  return samples <= kMaxByteCount;
}

// A thread's counts in shared memory: [coarse 256][16-bit types: groups 16][fine 256], as C
// (std::uint8_t or std::uint16_t), one region per thread, the block's regions one after another.
// A region is an odd number of 32-bit words, so that the 32 lanes' regions start in 32 distinct
// banks: lanes on the same bin (smooth images) never conflict, lanes on random bins as randomly.
template <class C>
OOC_RANK_HD constexpr int region_words(bool wide) {
  const int counts = wide ? kCoarseBins + kGroups + kFineBins : kCoarseBins;
  return ((counts * int(sizeof(C)) + 3) / 4) | 1;
}
template <class C>
struct Counts {
  unsigned* w;  // this thread's region_words<C>(wide) words
  OOC_RANK_HD C* c() const { return reinterpret_cast<C*>(w); }
  OOC_RANK_HD unsigned coarse(int b) const { return c()[b]; }
  // Counts wrap in C on the way (a removal before the add), never at rest: the window's
  // samples fit.
  OOC_RANK_HD void coarse_add(int b, int d) { c()[b] = static_cast<C>(c()[b] + d); }
  OOC_RANK_HD unsigned group(int g) const { return c()[kCoarseBins + g]; }
  OOC_RANK_HD unsigned fine(int f) const { return c()[kCoarseBins + kGroups + f]; }
  OOC_RANK_HD void fine_add(int f, int d) {
    C* g = c() + kCoarseBins + (f >> 4);
    *g = static_cast<C>(*g + d);
    C* v = c() + kCoarseBins + kGroups + f;
    *v = static_cast<C>(*v + d);
  }
  // Zero the words [from, to) of the region (whole words: the parts start at word boundaries).
  OOC_RANK_HD void clear(int from, int to) {
    for (int i = from; i < to; ++i) w[i] = 0u;
  }
  OOC_RANK_HD void clear_all(bool wide) { clear(0, region_words<C>(wide)); }
  OOC_RANK_HD void clear_fine() { clear(kCoarseBins * int(sizeof(C)) / 4, region_words<C>(true)); }
};

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

// One thread's task, with its counts h (whatever they held: they are zeroed first).
template <class T, class C>
OOC_RANK_HD void run_task(const Params& p, const Tasks& tasks, std::int64_t task, int lane,
                          Counts<C> h) {
  using K = Key<T>;
  const std::int64_t strip = task % tasks.strips, chunk = task / tasks.strips;
  const std::int64_t xs = strip * kThreads + lane;
  if (xs >= p.width * p.channels) return;
  const std::int64_t x = xs / p.channels, c = xs % p.channels;
  const std::int64_t y0 = chunk * tasks.chunk_rows;
  std::int64_t y1 = y0 + tasks.chunk_rows;
  if (y1 > p.out_rows) y1 = p.out_rows;
  if (y0 >= y1) return;
  h.clear_all(K::wide);
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
  // cb: the coarse bin tracked; below: the samples of the window in lower bins; fb: the coarse
  // bin whose fine counts are kept (none yet).
  int cb = 0, fb = -1, below = 0;
  auto update = [&](unsigned key, int d) {
    const int bin = static_cast<int>(key >> K::shift);
    h.coarse_add(bin, d);
    if (bin < cb) below += d;
    if constexpr (K::wide) {
      if (bin == fb) h.fine_add(static_cast<int>(key & 255u), d);
    }
  };
  if (p.runs != nullptr) {
    for (int i = 0; i < p.span_count; ++i) {
      const RowSpan u = p.spans[i];
      const T* r = row_of(y0 + u.row);
      for (int j = 0; j < u.len; ++j) update(key_at(r, u.col + j), 1);
    }
  } else {
    for (std::int64_t k = y0; k < y0 + p.rows; ++k) {
      const T* r = row_of(k);
      for (int j = 0; j < p.cols; ++j) update(key_at(r, j), 1);
    }
  }
  for (std::int64_t y = y0; y < y1; ++y) {
    if (y > y0 && p.runs != nullptr) {
      for (int i = 0; i < p.run_count; ++i) {
        const ColumnRun u = p.runs[i];
        const unsigned a = key_at(row_of(y - 1 + u.first), u.col);
        const unsigned b = key_at(row_of(y + u.last), u.col);
        if (a != b) {
          update(a, -1);
          update(b, 1);
        }
      }
    } else if (y > y0) {
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
    while (below > p.rank) below -= static_cast<int>(h.coarse(--cb));
    while (below + static_cast<int>(h.coarse(cb)) <= p.rank)
      below += static_cast<int>(h.coarse(cb++));
    unsigned key = static_cast<unsigned>(cb);
    if constexpr (K::wide) {
      if (cb != fb) {
        // Rebuild the fine counts of bin cb from the window: compares mostly (few samples fall
        // in one bin), no count to take out of the old bin's.
        h.clear_fine();
        fb = cb;
        for (int i = 0; p.runs != nullptr && i < p.span_count; ++i) {
          const RowSpan u = p.spans[i];
          const T* r = row_of(y + u.row);
          if (r == nullptr) {
            if (static_cast<int>(p.cval_key >> 8) == cb)
              h.fine_add(static_cast<int>(p.cval_key & 255u), u.len);
          } else if (inside) {
            const T* s = r + (q0 + u.col) * p.channels + c;
            for (int j = 0; j < u.len; ++j) {
              const unsigned v = K::of(load_sample(s + std::int64_t{j} * p.channels));
              if (static_cast<int>(v >> 8) == cb) h.fine_add(static_cast<int>(v & 255u), 1);
            }
          } else {
            for (int j = 0; j < u.len; ++j) {
              const unsigned v = key_at(r, u.col + j);
              if (static_cast<int>(v >> 8) == cb) h.fine_add(static_cast<int>(v & 255u), 1);
            }
          }
        }
        for (std::int64_t k = y; p.runs == nullptr && k < y + p.rows; ++k) {
          const T* r = row_of(k);
          if (r == nullptr) {
            if (static_cast<int>(p.cval_key >> 8) == cb)
              h.fine_add(static_cast<int>(p.cval_key & 255u), p.cols);
            continue;
          }
          if (inside) {
            const T* s = r + q0 * p.channels + c;
            for (int j = 0; j < p.cols; ++j) {
              const unsigned v = K::of(load_sample(s + std::int64_t{j} * p.channels));
              if (static_cast<int>(v >> 8) == cb) h.fine_add(static_cast<int>(v & 255u), 1);
            }
          } else {
            for (int j = 0; j < p.cols; ++j) {
              const unsigned v = key_at(r, j);
              if (static_cast<int>(v >> 8) == cb) h.fine_add(static_cast<int>(v & 255u), 1);
            }
          }
        }
      }
      // The rank inside bin cb: from the nearer end, by groups of 16 counts, then counts.
      const int n = static_cast<int>(h.coarse(cb));
      int left = p.rank - below;  // 0 .. n - 1 from the bottom
      const bool up = 2 * left < n;
      if (!up) left = n - 1 - left;  // from the top
      const int step = up ? 1 : -1;
      int g = up ? 0 : kGroups - 1;
      while (left >= static_cast<int>(h.group(g))) {
        left -= static_cast<int>(h.group(g));
        g += step;
      }
      int f = up ? g * 16 : g * 16 + 15;
      while (left >= static_cast<int>(h.fine(f))) {
        left -= static_cast<int>(h.fine(f));
        f += step;
      }
      key = static_cast<unsigned>(cb * 256 + f);
    }
    T* o = reinterpret_cast<T*>(p.out + static_cast<std::size_t>(y) * p.out_stride);
    o[x * p.channels + c] = K::value(key);
  }
}

}  // namespace ooc::cuda::rank_hist
