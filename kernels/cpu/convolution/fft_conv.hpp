// CPU kernel of the 2-D convolution by FFT (overlap-save): the band is cut into tiles of n x m
// input samples that give h x w outputs each (h = n - K + 1, w = m - L + 1); each tile is
// transformed, multiplied by the kernel's spectrum and transformed back, and its valid part kept.
// The tiles' input comes from the band's rows (already through the border rule along y) and the
// border rule along x, so the FFT's periodicity never reaches an output.
//
// The tile grid is fixed in image coordinates (tile rows start at multiples of h from image row
// 0; tile columns at multiples of w from column 0), so every output is computed from the same
// tile inputs in the same order whatever the band: results are bit-identical across band heights,
// threads and parts. A band must hold every input row of the tiles that touch it: a band that
// starts at a multiple of h and ends at one (or at the image's end) needs ry rows of halo, any
// other band up to ry + h - 1 (fft_halo()); the planner aligns bands to the grid where it can
// (Operation::row_grid). Tile rows from image row H + ry on, which no output inside the image
// reads, are zeros: the last tile row needs no rows past the last band's halo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "band_args.hpp"

namespace ooc::kernels {

// Transform sizes are multiples of this: the transforms run on lanes of 8 lines
// (fft_conv_impl.cpp).
constexpr std::int64_t kFftSizeStep = 8;

struct FftTiling {
  std::int64_t n = 0, m = 0;  // transform rows and columns
  std::int64_t h = 0, w = 0;  // outputs per tile: n - K + 1 rows, m - L + 1 columns
  bool valid() const noexcept { return h > 0 && w > 0; }
};

// Tuning of the tile choice, in one place.
struct FftTilingPolicy {
  // Largest transform, in complex points: two such buffers per thread (16 bytes a point in
  // float, 32 in double). Larger tiles save little work and cost cache misses and halo rows.
  std::int64_t max_points = std::int64_t{1} << 20;
  std::int64_t max_points_large_kernel = std::int64_t{1} << 24;
  // Costs in units of one radix-2 pass over a tile's points (a radix-4 stage is two), fitted to
  // `tools/bench/run fft` (8192^2 f32, K 31 to 255, AVX2): KissFFT's radix-3 and -5 butterflies
  // cost more a point than its radix-4 one; the work of a tile besides the transforms (loading,
  // the transposes, the spectrum product, storing); and, per doubling of a tile beyond
  // cache_points (two such tiles of floats fill 1 MiB, a core's L2), the passes' cache misses.
  double radix3_passes = 2.5, radix5_passes = 3.6;
  double overhead_passes = 4.0;
  std::int64_t cache_points = std::int64_t{1} << 16;
  double cache_passes = 4.0;
};

// The work measure cuFFT's cost constant is fitted to: log2 of a tile's points plus 4 passes.
inline constexpr FftTilingPolicy kCufftWorkPolicy{std::int64_t{1} << 20,
                                                  std::int64_t{1} << 24,
                                                  1.5849625007211562,
                                                  2.321928094887362,
                                                  4.0,
                                                  std::int64_t{1} << 16,
                                                  0.0};

// The tile for a K x L kernel on an H x W image with the least work per output sample (transform
// sizes with factors 2, 3 and 5 only, multiples of kFftSizeStep). Invalid (h or w 0) when no tile
// fits the policy.
FftTiling plan_fft_tiling(std::int64_t K, std::int64_t L, std::int64_t H, std::int64_t W,
                          const FftTilingPolicy& policy = {});
// The tiling's work per output sample, in radix-2 passes over a point (what plan_fft_tiling
// minimizes): n m (passes(n) + passes(m) + overhead + cache(n m)) / (min(h, H) min(w, W)).
double fft_work_per_sample(const FftTiling& t, std::int64_t H, std::int64_t W,
                           const FftTilingPolicy& policy = {});
// Rows of context above and below any band that its tiles need (one on the grid: (K - 1) / 2).
inline std::int64_t fft_halo(std::int64_t K, const FftTiling& t) {
  return (K - 1) / 2 + t.h - 1;
}

// Complex points of a thread's scratch: two tiles, a batch of lines and a row of each plane.
inline std::int64_t fft_scratch_points(const FftTiling& t) {
  return 2 * t.n * t.m + kFftSizeStep * (t.n > t.m ? t.n : t.m) + t.m;
}

// Normalized convolution (src/ops/convolution/masked_fft.cpp): each tile of one plane goes
// through one complex transform with x m as its real part and m as its imaginary part (holes:
// NaN, and `nodata` where the input type holds it; the constant border: cv with weight cm), so
// the product with the real kernel's spectrum gives both convolutions at once; `finish` turns
// each output row's n samples of them (image row y, channel c, from column x) into the output.
struct FftNormalized {
  double nodata = 0, cv = 0, cm = 1;
  const void* context = nullptr;
  void (*finish)(const void* context, std::int64_t y, int c, std::int64_t x, std::int64_t n,
                 const void* num, const void* den, std::byte* out_row) = nullptr;
};

// rows: out_rows + 2 * halo input rows from image row y0 - halo on.
struct FftConvArgs : BandArgs {
  std::int64_t halo = 0;
  std::int64_t y0 = 0;  // image row of output row 0
  std::int64_t height = 0;
  const FftNormalized* normalized = nullptr;  // null: the convolution of the samples
};

// The kernel's spectrum for one tiling and the transforms, made once per operation run and shared
// by every thread.
class FftConv2d {
 public:
  // taps: K x L, row major, in convolution order (scipy.ndimage.convolve's weights); f64: double
  // transforms and accumulation.
  FftConv2d(const std::vector<double>& taps, std::int64_t K, std::int64_t L,
            const FftTiling& tiling, bool f64);
  ~FftConv2d();
  FftConv2d(const FftConv2d&) = delete;
  FftConv2d& operator=(const FftConv2d&) = delete;
  // One band, in parallel over its tiles (TBB); several bands may run at once.
  void band(const FftConvArgs& args) const;
  // Memory per worker thread (two tiles of complex points and a few lines), and shared (the
  // spectrum and the transforms' tables).
  static std::size_t thread_bytes(const FftTiling& t, bool f64);
  static std::size_t shared_bytes(const FftTiling& t, bool f64);

  struct Impl {  // the engine of one precision and instruction set (fft_conv_impl.cpp)
    virtual ~Impl() = default;
    virtual void band(const FftConvArgs& a) const = 0;
  };

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ooc::kernels
