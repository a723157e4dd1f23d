// The CPU's rank filters of large windows and footprints (the rank operation, src/ops/morphology/
// rank.cpp, picks among them, the selection networks of rank_network.hpp and median_network.hpp):
// Huang's and Perreault-Hebert's sliding histograms of 8- and 16-bit samples, ranked histograms
// of floats and 32-bit integers (their keys shared with the GPU's radix select, rank_keys.hpp),
// and selections among the window's samples. Each computes one output row (or a job's rows and
// columns) of one channel from planes padded by the border rule. Exact: they only pick samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ooc/image.hpp"

namespace ooc::kernels {

// A footprint row's run of ones: row k of the window, columns [a, a + len).
struct FootprintRun {
  std::int64_t k, a, len;
};

// The window's samples of one channel for an output row, from planes padded by the border rule:
// plane row k, column q is image row (first + k), column (q - lx) mapped.
template <class T>
struct Planes {
  std::vector<T> data;
  std::int64_t width = 0;  // padded: W + Nx - 1
  const T* row(std::int64_t c, std::int64_t k, std::int64_t m) const {
    return data.data() + (c * m + k) * width;
  }
};

// Ranked histograms (ranked_rows): ranks a coarse bin; a job's rows and columns.
inline constexpr std::uint32_t kRankBin = 16;
inline constexpr std::int64_t kRankedRows = 128;
inline constexpr std::int64_t kRankedCols = 512;
// Footprints of floats and 32-bit integers with more samples than this take ranked histograms
// (the smaller ones select among their samples).
inline constexpr std::int64_t kRankedFootprint = 48;
// The most lanes of the direct 3 x 3 / 5 x 5 median's vectors (8-bit samples, 32-byte vectors).
inline constexpr std::int64_t kMaxDirectLanes = 32;
// Windows taller than this use column histograms (8 bits): Huang's per-step cost grows with
// the height, Perreault-Hebert's (two 256-bin vector updates) does not.
inline constexpr std::int64_t kHuangRows = 48;
inline constexpr std::int64_t kChunkRows = 128;   // output rows sharing one set of column counts
inline constexpr std::int64_t kStripCols = 1024;  // output columns a job: ~0.6 MiB of counts
// 16 bits: a job's second pass keeps a column's fine counts of kGroup coarse bins (9 blocks of
// 544 bytes with the coarse one), about 5 MiB for a strip of 512 and a window of 101 columns.
inline constexpr std::int64_t kChunkRows16 = 256;
inline constexpr std::int64_t kStripCols16 = 512;
inline constexpr std::int64_t kGroup = 8;
// A block of 256 counts and their 16 sums of 16 (column_histogram_rows16).
inline constexpr std::int64_t kBlock = 272;

inline bool wide_column_histograms(std::int64_t Nx, std::int64_t Ny) {
  return Ny > kHuangRows && Nx * Ny < 65536;
}
// Ranked histograms: a job's ranks, sort keys, values and counts, at most (32 bytes a sample
// of its input).
inline std::size_t ranked_job_bytes(std::int64_t rows, std::int64_t cols) {
  return static_cast<std::size_t>((kRankedRows + rows - 1) * (kRankedCols + cols - 1)) * 32;
}
// The bytes of a job's counts for windows of `cols` columns: the window's blocks (kGroup fine,
// one coarse), the columns' (one coarse, kGroup fine each), then each output's coarse bin and
// rank left in it.
inline std::size_t wide_job_bytes(std::int64_t cols) {
  const std::int64_t columns = kStripCols16 + cols - 1;
  return static_cast<std::size_t>((kGroup + 1 + columns * (kGroup + 1)) * kBlock * 2 +
                                  kChunkRows16 * kStripCols16 * 3);
}

// The arguments every function below shares: planes p of m rows per channel, channel c of C,
// the rank wanted. Rows i0 .. i1 and columns x0 .. x1 are a job's outputs; i one output row of W
// samples, written to out[x * C + c].

// Floats and 32-bit integers (u32, i32, f32, f64), windows beyond the selection networks: the
// window's rows as `runs` (a rectangle's Ny runs of Nx).
template <class T>
void ranked_rows(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                 std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                 std::int64_t Ny, std::int64_t C, const std::vector<FootprintRun>& runs,
                 std::int64_t rank, const BandView& out);
// The 3 x 3 median of integers (u8, u16, i16, u32, i32).
template <class T>
void median3x3_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                   std::int64_t W, std::int64_t C, T* out);
// 8 bits (u8), tall windows (wide_column_histograms).
template <class T>
void column_histogram_rows(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                           std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                           std::int64_t Ny, std::int64_t C, std::int64_t rank, const BandView& out);
// 16 bits (u16, i16), tall windows: `counts`, wide_job_bytes(Nx) bytes, whose fine column counts
// are zero on entry (as they are again on return: a job's buffer serves the next without clearing).
template <class T>
void column_histogram_rows16(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i0,
                             std::int64_t i1, std::int64_t x0, std::int64_t x1, std::int64_t Nx,
                             std::int64_t Ny, std::int64_t C, std::int64_t rank, std::byte* counts,
                             const BandView& out);
// 8 and 16 bits (u8, u16, i16), rectangles: Huang's.
template <class T>
void histogram_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                   std::int64_t Nx, std::int64_t Ny, std::int64_t W, std::int64_t C,
                   std::int64_t rank, T* out);
// 8 and 16 bits (u8, u16, i16), footprints given as `runs`.
template <class T>
void footprint_histogram_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                             std::int64_t W, std::int64_t C, const std::vector<FootprintRun>& runs,
                             std::int64_t rank, T* out);
// The other types (u32, i32, f32, f64), footprints given as `runs`.
template <class T>
void footprint_select_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i,
                          std::int64_t W, std::int64_t C, const std::vector<FootprintRun>& runs,
                          std::int64_t rank, T* out);
// The other types (u32, i32, f32, f64), rectangles.
template <class T>
void select_row(const Planes<T>& p, std::int64_t m, std::int64_t c, std::int64_t i, std::int64_t Nx,
                std::int64_t Ny, std::int64_t W, std::int64_t C, std::int64_t rank, T* out);

}  // namespace ooc::kernels
