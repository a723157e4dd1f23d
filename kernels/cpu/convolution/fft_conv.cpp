// Overlap-save FFT convolution of a band on the CPU (see fft_conv.hpp): the tile plan, and the
// run-time choice between the engine's builds for different instruction sets (fft_conv_impl.cpp).
#include "fft_conv.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "fft_backend.hpp"
#include "fft_separable.hpp"
#include "kernels/cpu/cpu_features.hpp"

namespace ooc::kernels {

namespace baseline {
std::unique_ptr<FftConv2d::Impl> make_fft_engine(const std::vector<double>& taps, std::int64_t K,
                                                 std::int64_t L, const FftTiling& tiling, bool f64);
std::unique_ptr<FftSeparable::Impl> make_fft_separable(const std::vector<double>& row,
                                                       const std::vector<double>& col,
                                                       const FftSeparablePlan& plan, bool f64);
}  // namespace baseline
#if defined(__x86_64__)
namespace avx2 {
std::unique_ptr<FftConv2d::Impl> make_fft_engine(const std::vector<double>& taps, std::int64_t K,
                                                 std::int64_t L, const FftTiling& tiling, bool f64);
std::unique_ptr<FftSeparable::Impl> make_fft_separable(const std::vector<double>& row,
                                                       const std::vector<double>& col,
                                                       const FftSeparablePlan& plan, bool f64);
}  // namespace avx2
#endif

namespace {

// Sizes with factors 2, 3 and 5 that are multiples of kFftSizeStep, from lo to hi (at least the
// first such size).
std::int64_t next_tile_size(std::int64_t n) {
  n = std::max(n, kFftSizeStep);
  n = (n + kFftSizeStep - 1) / kFftSizeStep * kFftSizeStep;
  while (!fft_fast_size(static_cast<std::size_t>(n))) n += kFftSizeStep;
  return n;
}
std::vector<std::int64_t> fast_sizes(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t n = next_tile_size(lo); n <= std::max(hi, next_tile_size(lo));
       n = next_tile_size(n + 1))
    v.push_back(n);
  return v;
}

// KissFFT's stages for n (4s first, then 2, 3, 5), each weighted by its cost per point.
double passes(std::int64_t n, double radix3, double radix5) {
  double sum = 0;
  for (const auto& [p, cost] :
       {std::pair<std::int64_t, double>{4, 2.0}, {2, 1.0}, {3, radix3}, {5, radix5}})
    for (; n % p == 0; n /= p) sum += cost;
  return sum;
}
double passes(std::int64_t n, const FftTilingPolicy& policy) {
  return passes(n, policy.radix3_passes, policy.radix5_passes);
}

}  // namespace

FftTiling plan_fft_tiling(std::int64_t K, std::int64_t L, std::int64_t H, std::int64_t W,
                          const FftTilingPolicy& policy) {
  FftTiling best;
  double best_work = std::numeric_limits<double>::infinity();
  if (K < 1 || L < 1 || H < 1 || W < 1) return best;
  // No taller (wider) tile than one covering the whole image: more would be zeros.
  // Kernels beyond the policy's tile get tiles of about 4 K x L points: half their outputs valid.
  const std::int64_t most =
      std::max(policy.max_points, std::min(4 * K * L, policy.max_points_large_kernel));
  const std::int64_t n_hi = std::min(most, next_tile_size(H + K - 1));
  const std::int64_t m_hi = std::min(most, next_tile_size(W + L - 1));
  const std::vector<std::int64_t> ns = fast_sizes(K, n_hi), ms = fast_sizes(L, m_hi);
  for (std::int64_t n : ns)
    for (std::int64_t m : ms) {
      if (n * m > most) break;
      const FftTiling t{n, m, n - K + 1, m - L + 1};
      const double work = fft_work_per_sample(t, H, W, policy);
      if (work < best_work * (1 - 1e-12)) best_work = work, best = t;
    }
  return best;
}

double fft_work_per_sample(const FftTiling& t, std::int64_t H, std::int64_t W,
                           const FftTilingPolicy& policy) {
  if (!t.valid()) return std::numeric_limits<double>::infinity();
  const double points = double(t.n) * double(t.m);
  const double outputs = double(std::min(t.h, H)) * double(std::min(t.w, W));
  const double cache =
      policy.cache_passes * std::max(0.0, std::log2(points / double(policy.cache_points)));
  return points * (passes(t.n, policy) + passes(t.m, policy) + policy.overhead_passes + cache) /
         outputs;
}

FftConv2d::FftConv2d(const std::vector<double>& taps, std::int64_t K, std::int64_t L,
                     const FftTiling& tiling, bool f64) {
#if defined(__x86_64__)
  if (has_avx2()) {
    impl_ = avx2::make_fft_engine(taps, K, L, tiling, f64);
    return;
  }
#endif
  impl_ = baseline::make_fft_engine(taps, K, L, tiling, f64);
}

FftConv2d::~FftConv2d() = default;

void FftConv2d::band(const FftConvArgs& args) const {
  impl_->band(args);
}

std::size_t FftConv2d::thread_bytes(const FftTiling& t, bool f64) {
  return static_cast<std::size_t>(fft_scratch_points(t)) * (f64 ? 16 : 8);
}

std::size_t FftConv2d::shared_bytes(const FftTiling& t, bool f64) {
  const std::size_t point = f64 ? 16 : 8;
  // The spectrum, and while it is made two double tiles; the transforms' twiddles.
  return static_cast<std::size_t>(t.n * t.m) * (point + 32) +
         static_cast<std::size_t>(2 * (t.n + t.m)) * point;
}

std::int64_t plan_fft_line(std::int64_t K, std::int64_t N, const FftLinePolicy& policy) {
  if (K < 1 || N < 1) return 0;
  // No block longer than one covering the whole line: more would be zeros. Kernels beyond the
  // policy's block get blocks of about 2 K points: half their outputs valid.
  const std::int64_t most = std::max(policy.max_points, 2 * K);
  const std::int64_t hi = std::min(most, next_tile_size(N + K - 1));
  std::int64_t best = 0;
  double best_work = std::numeric_limits<double>::infinity();
  for (std::int64_t n : fast_sizes(K, hi)) {
    if (n > most) break;
    const double work = fft_line_work(n, K, N, policy);
    if (work < best_work * (1 - 1e-12)) best_work = work, best = n;
  }
  return best;
}

double fft_line_work(std::int64_t n, std::int64_t K, std::int64_t N, const FftLinePolicy& policy) {
  const std::int64_t h = n - K + 1;
  if (h < 1) return std::numeric_limits<double>::infinity();
  const double cache =
      policy.cache_passes * std::max(0.0, std::log2(double(n) / double(policy.cache_points)));
  return double(n) *
         (passes(n, policy.radix3_passes, policy.radix5_passes) + policy.overhead_passes + cache) /
         double(std::min(h, N));
}

FftSeparablePlan plan_fft_separable(std::int64_t K, std::int64_t L, std::int64_t H, std::int64_t W,
                                    const FftLinePolicy& policy) {
  FftSeparablePlan p;
  p.n = plan_fft_line(K, H, policy);
  p.m = plan_fft_line(L, W, policy);
  if (p.n == 0 || p.m == 0) return {};
  p.h = p.n - K + 1;
  p.w = p.m - L + 1;
  return p;
}

double fft_separable_work(const FftSeparablePlan& p, std::int64_t K, std::int64_t L, std::int64_t H,
                          std::int64_t W, const FftLinePolicy& policy) {
  if (!p.valid()) return std::numeric_limits<double>::infinity();
  // Two planes share a transform: half a transform per line of outputs.
  return 0.5 * (fft_line_work(p.m, L, W, policy) + fft_line_work(p.n, K, H, policy));
}

FftSeparable::FftSeparable(const std::vector<double>& row, const std::vector<double>& col,
                           const FftSeparablePlan& plan, bool f64) {
#if defined(__x86_64__)
  if (has_avx2()) {
    impl_ = avx2::make_fft_separable(row, col, plan, f64);
    return;
  }
#endif
  impl_ = baseline::make_fft_separable(row, col, plan, f64);
}

FftSeparable::~FftSeparable() = default;

void FftSeparable::band(const FftConvArgs& args) const {
  impl_->band(args);
}

std::int64_t FftSeparable::thread_elements(const FftSeparablePlan& p, std::int64_t in_rows,
                                           int lanes) {
  const std::int64_t rows = (in_rows + lanes - 1) / lanes * lanes;
  const std::int64_t cols = (p.w + 2 * lanes - 1) / (2 * lanes) * (2 * lanes);
  const std::int64_t line = std::max(p.m, p.n) + lanes;
  return 2 * rows * cols + 2 * lanes * p.m + 2 * 2 * lanes * line;
}

std::size_t FftSeparable::thread_bytes(const FftSeparablePlan& p, std::int64_t band_rows,
                                       std::int64_t halo, bool f64) {
  const std::size_t t = f64 ? 8 : 4;
  return static_cast<std::size_t>(thread_elements(p, band_rows + 2 * halo, int(32 / t))) * t;
}

std::size_t FftSeparable::shared_bytes(const FftSeparablePlan& p, bool f64) {
  // Both spectra, broadcast over the lanes (64 bytes a point), and the twiddles.
  return static_cast<std::size_t>(p.m + p.n) * (64 + 2 * (f64 ? 16 : 8)) * 2;
}

}  // namespace ooc::kernels
