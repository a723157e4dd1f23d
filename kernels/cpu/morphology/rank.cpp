// The CPU's rank filters of large windows and footprints (rank.hpp): sliding histograms, ranked
// histograms and selections, instantiated for the sample types each serves.
#include "kernels/cpu/morphology/rank.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/cpu/morphology/rank_keys.hpp"

namespace ooc::kernels {

// kernel += in - gone over the 272 counts of a column (gone may be null); AVX2 where the CPU has
// it (16 counts a vector instead of 8).
__attribute__((target_clones("avx2", "default"))) void add_counts(
    std::uint16_t* __restrict kernel, const std::uint16_t* __restrict in,
    const std::uint16_t* __restrict gone) {
  constexpr int n = 256 + 16;
  if (gone) {
    for (int b = 0; b < n; ++b) kernel[b] = std::uint16_t(kernel[b] + in[b] - gone[b]);
  } else {
    for (int b = 0; b < n; ++b) kernel[b] = std::uint16_t(kernel[b] + in[b]);
  }
}

namespace {

// 16 bits, tall windows: Perreault-Hebert on two levels of 256 bins, in two passes over a job.
// The first finds every output's high byte (coarse bin) as the 8-bit path does, from column
// counts of high bytes, and keeps it with the rank left within that bin. The second finds the
// low byte, for a group of up to kGroup of the coarse bins the outputs fell in at a time: its
// columns count only the samples in those bins (so they stay small, and a sample outside them
// costs one look-up), and the window's counts of a bin are brought up to date when an output
// falls in it, from the columns that entered and left since its last use or rebuilt from the
// window's Nx columns, whichever reads fewer. Every block of 256 counts carries 16 sums of 16
// for the search (at most 32 steps a level), each sum before its 16 counts so that a sample's
// two increments share a cache line.
constexpr std::int64_t lane(std::int64_t v) {
  return 17 * (v >> 4) + 1 + (v & 15);
}
constexpr std::int64_t sum_lane(std::int64_t v) {
  return 17 * (v >> 4);
}
// The bin in a block's 256 whose counts reach past `left` (reduced by those below it).
std::int64_t find_in_block(const std::uint16_t* k, std::int64_t& left) {
  std::int64_t j = 0;
  while (left >= k[17 * j]) left -= k[17 * j++];
  const std::uint16_t* f = k + 17 * j + 1;
  std::int64_t t = 0;
  while (left >= f[t]) left -= f[t++];
  return 16 * j + t;
}

}  // namespace

// Floats and 32-bit integers, windows too large for the selection networks (and footprints of
// more than kRankedFootprint samples): the job's input samples are ranked (their distinct values
// sorted once, a job being a strip of output columns by a chunk of rows), then Huang's sliding
// histogram runs along each output row over those ranks, in two levels (kRankBin ranks a coarse
// bin, the answer's coarse bin tracked from step to step): two updates per run of the window's
// rows per step, whatever the window's area, against a selection among all its samples per
// output before (nth_element: 9.7 us an output at 51 x 51 f32 here). Equal values share a rank,
// so the answer is exact; -0 and +0 are one value, given as +0 (as the GPU's radix select gives
// it). A window holding a NaN gives NaN: NaN ranks last and is counted.
template <class T>
void ranked_rows(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                 std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                 std::int64_t Ny, std::int64_t C, const std::vector<FootprintRun>& runs,
                 std::int64_t rank, const BandView& out) {
  // The samples' keys, unsigned in the values' order (NaN last, -0 as +0), as the GPU's.
  using Keys = RankKey<T>;
  using K = typename Keys::type;
  const std::int64_t rows = i1 - i0 + Ny - 1, cols = x1 - x0 + Nx - 1;
  const auto n = static_cast<std::size_t>(rows * cols);
  auto key = [](T v) { return Keys::of(v); };
  // (key, position) sorted: 32-bit keys in one 64-bit word, 64-bit ones in pairs.
  std::vector<std::uint32_t> ranks(n);
  std::vector<T> value;  // of each rank
  auto sample = [&](std::size_t at) {
    return p.row(c, i0 + static_cast<std::int64_t>(at) / cols, m)[x0 + at % cols];
  };
  auto assign = [&](std::size_t at, K k, K& last) {
    if (value.empty() || k != last) {
      value.push_back(Keys::value(k));  // zeros as +0, as the GPU gives them
      last = k;
    }
    ranks[at] = static_cast<std::uint32_t>(value.size() - 1);
  };
  K last = 0;
  if constexpr (sizeof(K) == 4) {
    std::vector<std::uint64_t> order(n);
    for (std::size_t at = 0; at < n; ++at) order[at] = (std::uint64_t{key(sample(at))} << 32) | at;
    std::sort(order.begin(), order.end());
    for (const std::uint64_t o : order)
      assign(static_cast<std::size_t>(o & 0xFFFFFFFFu), static_cast<K>(o >> 32), last);
  } else {
    std::vector<std::pair<K, std::uint32_t>> order(n);
    for (std::size_t at = 0; at < n; ++at)
      order[at] = {key(sample(at)), static_cast<std::uint32_t>(at)};
    std::sort(order.begin(), order.end());
    for (const auto& [k, at] : order) assign(at, k, last);
  }
  const std::size_t distinct = value.size();
  const bool nan = std::is_floating_point_v<T> && last == Keys::nan;
  const std::uint32_t nan_rank = static_cast<std::uint32_t>(distinct - 1);
  std::vector<std::uint32_t> fine(distinct, 0), coarse(distinct / kRankBin + 2, 0);
  for (std::int64_t i = i0; i < i1; ++i) {
    T* o = reinterpret_cast<T*>(out.row(i));
    const std::uint32_t* base = ranks.data() + (i - i0) * cols;
    std::int64_t cb = 0, below = 0;  // the answer's coarse bin, the samples in bins before it
    auto update = [&](std::uint32_t r, int d) {
      fine[r] += static_cast<std::uint32_t>(d);
      coarse[r / kRankBin] += static_cast<std::uint32_t>(d);
      if (std::int64_t(r / kRankBin) < cb) below += d;
    };
    auto window = [&](std::int64_t q0, int d) {
      for (const FootprintRun& u : runs)
        for (std::int64_t q = 0; q < u.len; ++q) update(base[u.k * cols + q0 + u.a + q], d);
    };
    window(0, 1);
    for (std::int64_t x = x0; x < x1; ++x) {
      const std::int64_t q = x - x0;
      if (q > 0)
        for (const FootprintRun& u : runs) {
          const std::uint32_t* r = base + u.k * cols + q + u.a;
          update(r[-1], -1);
          update(r[u.len - 1], 1);
        }
      if (nan && fine[nan_rank] > 0) {
        o[x * C + c] = std::numeric_limits<T>::quiet_NaN();
        continue;
      }
      while (below > rank) below -= coarse[static_cast<std::size_t>(--cb)];
      while (below + coarse[static_cast<std::size_t>(cb)] <= rank)
        below += coarse[static_cast<std::size_t>(cb++)];
      std::int64_t left = rank - below;
      std::size_t f = static_cast<std::size_t>(cb) * kRankBin;
      while (left >= fine[f]) left -= fine[f++];
      o[x * C + c] = value[f];
    }
    window(x1 - 1 - x0, -1);  // the counts back to zero for the next row
  }
}

template <class T>
void median3x3_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                   std::int64_t W, std::int64_t C, T* out) {
  const std::int64_t Wp = p.width;
  const T* r0 = p.row(c, i, m);
  const T* r1 = p.row(c, i + 1, m);
  const T* r2 = p.row(c, i + 2, m);
  std::vector<T> lo(static_cast<std::size_t>(Wp)), md(lo.size()), hi(lo.size());
  for (std::int64_t q = 0; q < Wp; ++q) {
    const T a = std::min(r0[q], r1[q]), b = std::max(r0[q], r1[q]);
    lo[q] = std::min(a, r2[q]);
    hi[q] = std::max(b, r2[q]);
    md[q] = std::max(a, std::min(b, r2[q]));
  }
  auto med3 = [](T a, T b, T c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); };
  for (std::int64_t x = 0; x < W; ++x) {
    const T l = std::max(std::max(lo[x], lo[x + 1]), lo[x + 2]);
    const T h = std::min(std::min(hi[x], hi[x + 1]), hi[x + 2]);
    out[x * C + c] = med3(l, med3(md[x], md[x + 1], md[x + 2]), h);
  }
}
// Perreault-Hebert: a 256-bin histogram per padded column over the window's rows, moved down a
// row at a time; the window's histogram moves along x by adding the entering column's and
// subtracting the leaving one's; the answer is tracked as in Huang's.
template <class T>
void column_histogram_rows(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                           std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                           std::int64_t Ny, std::int64_t C, std::int64_t rank,
                           const BandView& outv) {
  constexpr std::int64_t offset = std::is_signed_v<T> ? 128 : 0;
  // The padded columns of outputs [x0, x1): x0 .. x1 + Nx - 2, counted from x0.
  const std::int64_t Wp = x1 - x0 + Nx - 1;
  // Per padded column: 256 fine counts, then 16 coarse ones (sums of 16 fine bins each).
  constexpr std::int64_t kStride = 256 + 16;
  std::vector<std::uint16_t> cols(static_cast<std::size_t>(Wp * kStride), 0);
  auto col = [&](std::int64_t q) { return cols.data() + q * kStride; };
  auto count = [&](std::int64_t q, std::int64_t v, int d) {
    std::uint16_t* h = col(q);
    h[v] = std::uint16_t(h[v] + d);
    h[256 + (v >> 4)] = std::uint16_t(h[256 + (v >> 4)] + d);
  };
  for (std::int64_t k = 0; k < Ny; ++k) {
    const T* r = p.row(c, i0 + k, m) + x0;
    for (std::int64_t q = 0; q < Wp; ++q) count(q, r[q] + offset, 1);
  }
  alignas(32) std::uint16_t kernel[kStride];
  for (std::int64_t i = i0; i < i1; ++i) {
    if (i > i0) {
      const T* gone = p.row(c, i - 1, m) + x0;
      const T* come = p.row(c, i + Ny - 1, m) + x0;
      for (std::int64_t q = 0; q < Wp; ++q) {
        count(q, gone[q] + offset, -1);
        count(q, come[q] + offset, 1);
      }
    }
    std::fill(kernel, kernel + kStride, std::uint16_t{0});
    for (std::int64_t q = 0; q < Nx; ++q) add_counts(kernel, col(q), nullptr);
    T* out = reinterpret_cast<T*>(outv.row(i));
    for (std::int64_t x = 0; x < x1 - x0; ++x) {
      // The window moves by a column: the entering column's counts in, the leaving one's out
      // (one pass of 272 lanes, vectorized); then the rank's coarse bin, and its fine bin in
      // it (at most 32 steps, where tracking the answer cost a scan up to it per output).
      if (x > 0) add_counts(kernel, col(x + Nx - 1), col(x - 1));
      std::int64_t left = rank, hi = 0;
      while (left >= kernel[256 + hi]) left -= kernel[256 + hi++];
      std::int64_t v = hi << 4;
      while (left >= kernel[v]) left -= kernel[v++];
      out[(x0 + x) * C + c] = static_cast<T>(v - offset);
    }
  }
}

template <class T>
void column_histogram_rows16(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                             std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                             std::int64_t Ny, std::int64_t C, std::int64_t rank, std::byte* counts,
                             const BandView& outv) {
  constexpr std::int64_t offset = std::is_signed_v<T> ? 32768 : 0;
  const std::int64_t S = x1 - x0, Wp = S + Nx - 1, maxWp = kStripCols16 + Nx - 1;
  // Fixed offsets whatever the strip's width: the fine column counts, at the end, are zero
  // when the buffer goes back to the pool (every sample counted is taken out again), so a job
  // does not clear them.
  std::uint16_t* kfine = reinterpret_cast<std::uint16_t*>(counts);  // kGroup blocks
  std::uint16_t* kcoarse = kfine + kGroup * kBlock;
  std::uint16_t* ccoarse = kcoarse + kBlock;               // maxWp blocks
  std::uint16_t* cfine = ccoarse + maxWp * kBlock;         // [group slot][column]: kGroup x maxWp
  std::uint16_t* lefts = cfine + kGroup * maxWp * kBlock;  // per output of the job
  std::uint8_t* his = reinterpret_cast<std::uint8_t*>(lefts + kChunkRows16 * kStripCols16);
  auto value = [&](const T* r, std::int64_t q) { return static_cast<std::int64_t>(r[q]) + offset; };
  auto bump = [](std::uint16_t* h, std::int64_t v, int d) {
    h[lane(v)] = std::uint16_t(h[lane(v)] + d);
    h[sum_lane(v)] = std::uint16_t(h[sum_lane(v)] + d);
  };

  // Pass 1: the coarse bins.
  std::fill(ccoarse, ccoarse + Wp * kBlock, std::uint16_t{0});
  for (std::int64_t k = 0; k < Ny; ++k) {
    const T* r = p.row(c, i0 + k, m) + x0;
    for (std::int64_t q = 0; q < Wp; ++q) bump(ccoarse + q * kBlock, value(r, q) >> 8, 1);
  }
  bool used[256] = {};
  for (std::int64_t i = i0; i < i1; ++i) {
    if (i > i0) {
      const T* gone = p.row(c, i - 1, m) + x0;
      const T* come = p.row(c, i + Ny - 1, m) + x0;
      for (std::int64_t q = 0; q < Wp; ++q) {
        bump(ccoarse + q * kBlock, value(gone, q) >> 8, -1);
        bump(ccoarse + q * kBlock, value(come, q) >> 8, 1);
      }
    }
    std::fill(kcoarse, kcoarse + kBlock, std::uint16_t{0});
    for (std::int64_t q = 0; q < Nx; ++q) add_counts(kcoarse, ccoarse + q * kBlock, nullptr);
    std::uint16_t* l = lefts + (i - i0) * S;
    std::uint8_t* h = his + (i - i0) * S;
    for (std::int64_t x = 0; x < S; ++x) {
      if (x > 0) add_counts(kcoarse, ccoarse + (x + Nx - 1) * kBlock, ccoarse + (x - 1) * kBlock);
      std::int64_t left = rank;
      const std::int64_t hi = find_in_block(kcoarse, left);
      used[hi] = true;
      h[x] = static_cast<std::uint8_t>(hi);
      l[x] = static_cast<std::uint16_t>(left);
    }
  }

  // Pass 2: the fine bins, a group of coarse bins at a time.
  std::int8_t slot[256];
  for (std::int64_t b0 = 0; b0 < 256;) {
    std::fill(slot, slot + 256, std::int8_t{-1});
    std::int64_t n = 0;
    for (; b0 < 256 && n < kGroup; ++b0)
      if (used[b0]) slot[b0] = static_cast<std::int8_t>(n++);
    if (n == 0) break;
    auto fine_col = [&](std::int64_t g, std::int64_t q) { return cfine + (g * Wp + q) * kBlock; };
    auto count = [&](const T* r, std::int64_t q, int d) {
      const std::int64_t v = value(r, q), g = slot[v >> 8];
      if (g >= 0) bump(fine_col(g, q), v & 255, d);
    };
    auto count_rows = [&](std::int64_t first, int d) {
      for (std::int64_t k = 0; k < Ny; ++k) {
        const T* r = p.row(c, first + k, m) + x0;
        for (std::int64_t q = 0; q < Wp; ++q) count(r, q, d);
      }
    };
    count_rows(i0, 1);
    // last[g]: the output column whose window the fine counts of slot g hold; none: stale.
    constexpr std::int64_t none = -(std::int64_t{1} << 40);
    std::int64_t last[kGroup];
    for (std::int64_t i = i0; i < i1; ++i) {
      if (i > i0) {
        const T* gone = p.row(c, i - 1, m) + x0;
        const T* come = p.row(c, i + Ny - 1, m) + x0;
        for (std::int64_t q = 0; q < Wp; ++q) {
          count(gone, q, -1);
          count(come, q, 1);
        }
      }
      std::fill(last, last + kGroup, none);
      const std::uint16_t* l = lefts + (i - i0) * S;
      const std::uint8_t* h = his + (i - i0) * S;
      T* out = reinterpret_cast<T*>(outv.row(i));
      for (std::int64_t x = 0; x < S; ++x) {
        const std::int64_t g = slot[h[x]];
        if (g < 0) continue;
        std::uint16_t* kf = kfine + g * kBlock;
        if (2 * (x - last[g]) >= Nx) {  // rebuilding reads Nx columns, catching up 2 a step
          std::fill(kf, kf + kBlock, std::uint16_t{0});
          for (std::int64_t q = x; q < x + Nx; ++q) add_counts(kf, fine_col(g, q), nullptr);
        } else {
          for (std::int64_t s = last[g] + 1; s <= x; ++s)
            add_counts(kf, fine_col(g, s + Nx - 1), fine_col(g, s - 1));
        }
        last[g] = x;
        std::int64_t left = l[x];
        const std::int64_t lo = find_in_block(kf, left);
        out[(x0 + x) * C + c] = static_cast<T>((std::int64_t{h[x]} << 8 | lo) - offset);
      }
    }
    count_rows(i1 - 1, -1);
  }
}

// Huang's sliding histogram along the row: a column of Ny samples leaves and one enters per
// step; the rank is found from the counts (two levels of 256 bins for 16-bit samples).
template <class T>
void histogram_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                   std::int64_t Nx, std::int64_t Ny, std::int64_t W, std::int64_t C,
                   std::int64_t rank, T* out) {
  constexpr bool wide = sizeof(T) == 2;
  constexpr std::int64_t offset = std::is_signed_v<T> ? (wide ? 32768 : 128) : 0;
  std::vector<std::uint32_t> fine(wide ? 65536 : 256, 0), coarse(256, 0);
  auto bin = [&](T v) { return static_cast<std::int64_t>(v) + offset; };
  auto add = [&](std::int64_t q, int d) {
    for (std::int64_t k = 0; k < Ny; ++k) {
      const std::int64_t v = bin(p.row(c, i + k, m)[q]);
      fine[static_cast<std::size_t>(v)] += d;
      if (wide) coarse[static_cast<std::size_t>(v >> 8)] += d;
    }
  };
  if constexpr (!wide) {
    // 8 bits: Huang's tracking of the answer v and of `below`, the samples under it; a step
    // moves v by a few bins, where a scan would cost up to 256.
    std::int64_t v = 0, below = 0;
    auto step = [&](std::int64_t q, int d) {
      for (std::int64_t k = 0; k < Ny; ++k) {
        const std::int64_t s = bin(p.row(c, i + k, m)[q]);
        fine[static_cast<std::size_t>(s)] += d;
        if (s < v) below += d;
      }
    };
    for (std::int64_t q = 0; q < Nx; ++q) step(q, 1);
    for (std::int64_t x = 0; x < W; ++x) {
      if (x > 0) {
        step(x - 1, -1);
        step(x + Nx - 1, 1);
      }
      while (below > rank) below -= fine[static_cast<std::size_t>(--v)];
      while (below + static_cast<std::int64_t>(fine[static_cast<std::size_t>(v)]) <= rank)
        below += fine[static_cast<std::size_t>(v++)];
      out[x * C + c] = static_cast<T>(v - offset);
    }
    return;
  }
  for (std::int64_t q = 0; q < Nx; ++q) add(q, 1);
  for (std::int64_t x = 0; x < W; ++x) {
    if (x > 0) {
      add(x - 1, -1);
      add(x + Nx - 1, 1);
    }
    std::int64_t left = rank, v = 0;
    std::int64_t hi = 0;
    while (left >= static_cast<std::int64_t>(coarse[static_cast<std::size_t>(hi)]))
      left -= coarse[static_cast<std::size_t>(hi++)];
    v = hi << 8;
    while (left >= static_cast<std::int64_t>(fine[static_cast<std::size_t>(v)]))
      left -= fine[static_cast<std::size_t>(v++)];
    out[x * C + c] = static_cast<T>(v - offset);
  }
}

// A footprint, 8 and 16 bits: the histogram of its samples moves along the row by the ends of
// its row runs (one sample leaves and one enters per run and step). 8 bits track the answer
// as Huang's; 16 bits track the coarse bin (256 values) and scan within it.
template <class T>
void footprint_histogram_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                             std::int64_t W, std::int64_t C, const std::vector<FootprintRun>& runs,
                             std::int64_t rank, T* out) {
  constexpr bool wide = sizeof(T) == 2;
  constexpr std::int64_t offset = std::is_signed_v<T> ? (wide ? 32768 : 128) : 0;
  constexpr int shift = wide ? 8 : 0;
  std::vector<std::uint32_t> fine(wide ? 65536 : 256, 0), coarse(256, 0);
  std::vector<const T*> row(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) row[r] = p.row(c, i + runs[r].k, m);
  // v: the tracked (coarse) bin; below: the samples under it.
  std::int64_t v = 0, below = 0;
  auto add = [&](T x, int d) {
    const std::int64_t s = static_cast<std::int64_t>(x) + offset;
    fine[static_cast<std::size_t>(s)] += d;
    if constexpr (wide) coarse[static_cast<std::size_t>(s >> shift)] += d;
    if ((s >> shift) < v) below += d;
  };
  const std::vector<std::uint32_t>& level = wide ? coarse : fine;
  for (std::size_t r = 0; r < runs.size(); ++r)
    for (std::int64_t q = 0; q < runs[r].len; ++q) add(row[r][runs[r].a + q], 1);
  for (std::int64_t x = 0; x < W; ++x) {
    if (x > 0)
      for (std::size_t r = 0; r < runs.size(); ++r) {
        add(row[r][x - 1 + runs[r].a], -1);
        add(row[r][x - 1 + runs[r].a + runs[r].len], 1);
      }
    while (below > rank) below -= level[static_cast<std::size_t>(--v)];
    while (below + static_cast<std::int64_t>(level[static_cast<std::size_t>(v)]) <= rank)
      below += level[static_cast<std::size_t>(v++)];
    std::int64_t value = v;
    if constexpr (wide) {
      std::int64_t left = rank - below;
      value = v << shift;
      while (left >= static_cast<std::int64_t>(fine[static_cast<std::size_t>(value)]))
        left -= fine[static_cast<std::size_t>(value++)];
    }
    out[x * C + c] = static_cast<T>(value - offset);
  }
}

// A footprint, other types: its samples, partially sorted to the rank (NaN gives NaN).
template <class T>
void footprint_select_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                          std::int64_t W, std::int64_t C, const std::vector<FootprintRun>& runs,
                          std::int64_t rank, T* out) {
  std::vector<const T*> at;  // every sample's address for x = 0
  for (const FootprintRun& r : runs)
    for (std::int64_t q = 0; q < r.len; ++q) at.push_back(p.row(c, i + r.k, m) + r.a + q);
  std::vector<T> win(at.size());
  for (std::int64_t x = 0; x < W; ++x) {
    bool nan = false;
    for (std::size_t n = 0; n < at.size(); ++n) {
      const T v = at[n][x];
      nan = nan || v != v;
      win[n] = v;
    }
    if (nan) {
      out[x * C + c] = std::numeric_limits<T>::quiet_NaN();
      continue;
    }
    std::nth_element(win.begin(), win.begin() + rank, win.end());
    out[x * C + c] = win[static_cast<std::size_t>(rank)];
  }
}

// Other types: the window's samples, partially sorted to the rank (NaN anywhere gives NaN).
template <class T>
void select_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i, std::int64_t Nx,
                std::int64_t Ny, std::int64_t W, std::int64_t C, std::int64_t rank, T* out) {
  std::vector<T> win(static_cast<std::size_t>(Nx * Ny));
  for (std::int64_t x = 0; x < W; ++x) {
    bool nan = false;
    std::size_t n = 0;
    for (std::int64_t k = 0; k < Ny; ++k) {
      const T* r = p.row(c, i + k, m) + x;
      for (std::int64_t q = 0; q < Nx; ++q) {
        nan = nan || r[q] != r[q];
        win[n++] = r[q];
      }
    }
    if (nan) {
      out[x * C + c] = std::numeric_limits<T>::quiet_NaN();
      continue;
    }
    std::nth_element(win.begin(), win.begin() + rank, win.end());
    out[x * C + c] = win[static_cast<std::size_t>(rank)];
  }
}

#define OOC_RANK_ALL(T)                                                                      \
  template void median3x3_row<T>(const Planes<T>&, std::int64_t, std::int64_t, std::int64_t, \
                                 std::int64_t, std::int64_t, T*);
#define OOC_RANK_COUNTED(T)                                                                  \
  template void histogram_row<T>(const Planes<T>&, std::int64_t, std::int64_t, std::int64_t, \
                                 std::int64_t, std::int64_t, std::int64_t, std::int64_t,     \
                                 std::int64_t, T*);                                          \
  template void footprint_histogram_row<T>(const Planes<T>&, std::int64_t, std::int64_t,     \
                                           std::int64_t, std::int64_t, std::int64_t,         \
                                           const std::vector<FootprintRun>&, std::int64_t, T*);
#define OOC_RANK_SELECTED(T)                                                                 \
  template void ranked_rows<T>(const Planes<T>&, std::int64_t, std::int64_t, std::int64_t,   \
                               std::int64_t, std::int64_t, std::int64_t, std::int64_t,       \
                               std::int64_t, std::int64_t, const std::vector<FootprintRun>&, \
                               std::int64_t, const BandView&);                               \
  template void footprint_select_row<T>(const Planes<T>&, std::int64_t, std::int64_t,        \
                                        std::int64_t, std::int64_t, std::int64_t,            \
                                        const std::vector<FootprintRun>&, std::int64_t, T*); \
  template void select_row<T>(const Planes<T>&, std::int64_t, std::int64_t, std::int64_t,    \
                              std::int64_t, std::int64_t, std::int64_t, std::int64_t,        \
                              std::int64_t, T*);
#define OOC_RANK_COLUMNS16(T)                                                                      \
  template void column_histogram_rows16<T>(const Planes<T>&, std::int64_t, std::int64_t,           \
                                           std::int64_t, std::int64_t, std::int64_t, std::int64_t, \
                                           std::int64_t, std::int64_t, std::int64_t, std::int64_t, \
                                           std::byte*, const BandView&);

OOC_RANK_ALL(std::uint8_t)
OOC_RANK_ALL(std::uint16_t)
OOC_RANK_ALL(std::int16_t)
OOC_RANK_ALL(std::uint32_t)
OOC_RANK_ALL(std::int32_t)
OOC_RANK_COUNTED(std::uint8_t)
OOC_RANK_COUNTED(std::uint16_t)
OOC_RANK_COUNTED(std::int16_t)
OOC_RANK_SELECTED(std::uint32_t)
OOC_RANK_SELECTED(std::int32_t)
OOC_RANK_SELECTED(float)
OOC_RANK_SELECTED(double)
OOC_RANK_COLUMNS16(std::uint16_t)
OOC_RANK_COLUMNS16(std::int16_t)
template void column_histogram_rows<std::uint8_t>(const Planes<std::uint8_t>&, std::int64_t,
                                                  std::int64_t, std::int64_t, std::int64_t,
                                                  std::int64_t, std::int64_t, std::int64_t,
                                                  std::int64_t, std::int64_t, std::int64_t,
                                                  const BandView&);

}  // namespace ooc::kernels
