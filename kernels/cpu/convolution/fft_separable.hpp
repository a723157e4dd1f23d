// CPU kernel of the separable convolution by 1-D FFTs (overlap-save along each axis): the row pass
// cuts each row into blocks of m samples that give w outputs (w = m - L + 1), the column pass
// cuts each column into blocks of n samples that give h outputs (h = n - K + 1). The row pass runs
// on lanes of adjacent rows (transposed in and out, as fft_conv_impl.cpp's row pass), the column
// pass on lanes of adjacent columns; two planes (x-blocks or channels, paired by the grid) share a
// complex transform as its real and imaginary parts.
//
// Both grids are fixed in image coordinates (x-blocks at multiples of w from column 0, y-blocks at
// multiples of h from row 0) and which planes share a transform is fixed by the x grid, so every
// output comes from the same inputs through the same arithmetic whatever the band, thread count
// or part: results are bit-identical across them. A band needs the rows of every y-block touching
// it, as fft_conv.hpp's tiles do (fft_halo(K, {n, m, h, w})); the row-pass result of a row of the
// constant border is the constant, as in the direct kernel (scipy's filter applied axis by axis).
// Column blocks' rows from image row H + ry on, which no output inside the image reads, are zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fft_conv.hpp"

namespace ooc::kernels {

// Transform lengths of both passes: x (m, w) and y (n, h), in FftTiling's fields.
using FftSeparablePlan = FftTiling;

// Tuning of the 1-D block lengths, in one place (the units of FftTilingPolicy).
struct FftLinePolicy {
  std::int64_t max_points = std::int64_t{1} << 16;  // longest block
  // Each doubling of a block beyond cache_points costs cache_passes (cache misses: a block's
  // lines of lanes, and the band's row-pass scratch the column pass reads, which grows with the
  // blocks' band heights). Fitted to `oocconv --method fft` at radius 64 to 128 (8192^2 f32,
  // AVX2; docs/performance.md): blocks of 2048 and 4096 cost 1.5-1.7x the time a sample of
  // blocks of 1024 for 3-7% more passes, so larger blocks are priced out of the plan.
  std::int64_t cache_points = std::int64_t{1} << 10;
  double cache_passes = 5.0;
  double radix3_passes = 2.5, radix5_passes = 3.6;
  double overhead_passes = 4.0;  // loading, transposing, the spectrum product, storing
};

// The block length for a kernel of K taps along a line of N samples with the least work per output
// sample (factors 2, 3 and 5 only, multiples of kFftSizeStep); 0 when none fits the policy.
std::int64_t plan_fft_line(std::int64_t K, std::int64_t N, const FftLinePolicy& policy = {});
// The work per output sample of blocks of n points for K taps on lines of N samples, in radix-2
// passes over a point (what plan_fft_line minimizes).
double fft_line_work(std::int64_t n, std::int64_t K, std::int64_t N,
                     const FftLinePolicy& policy = {});
// Both passes' blocks for K x L taps (column taps K, row taps L) on an H x W image.
FftSeparablePlan plan_fft_separable(std::int64_t K, std::int64_t L, std::int64_t H, std::int64_t W,
                                    const FftLinePolicy& policy = {});
// Work per output sample of both passes.
double fft_separable_work(const FftSeparablePlan& p, std::int64_t K, std::int64_t L, std::int64_t H,
                          std::int64_t W, const FftLinePolicy& policy = {});

// The taps' spectra for one plan and the transforms, made once per operation run and shared by
// every thread.
class FftSeparable {
 public:
  // row: L taps along x, col: K taps along y, both in convolution order (scipy's convolve1d
  // weights); f64: double transforms and accumulation.
  FftSeparable(const std::vector<double>& row, const std::vector<double>& col,
               const FftSeparablePlan& plan, bool f64);
  ~FftSeparable();
  FftSeparable(const FftSeparable&) = delete;
  FftSeparable& operator=(const FftSeparable&) = delete;
  // One band (rows from image row y0 - halo on), in parallel over TBB threads; several bands may
  // run at once.
  void band(const FftConvArgs& args) const;
  // Memory per worker thread for bands of band_rows outputs and `halo` rows above and below (the
  // row pass's result of one plane pair and the lines), and shared (the spectra and twiddles).
  static std::size_t thread_bytes(const FftSeparablePlan& p, std::int64_t band_rows,
                                  std::int64_t halo, bool f64);
  static std::size_t shared_bytes(const FftSeparablePlan& p, bool f64);
  // Elements of T in a thread's scratch (lanes: 32 / sizeof(T)): the row pass's result of two
  // planes (rows rounded up to lanes, columns to twice the lanes), the loaded rows and two lines.
  static std::int64_t thread_elements(const FftSeparablePlan& p, std::int64_t in_rows, int lanes);

  struct Impl {  // the engine of one precision and instruction set (fft_separable_impl.cpp)
    virtual ~Impl() = default;
    virtual void band(const FftConvArgs& a) const = 0;
  };

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ooc::kernels
