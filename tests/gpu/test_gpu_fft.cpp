// The 2-D convolution by FFT on CUDA (cuFFT, overlap-save on the image's tile grid) through the
// engine's GPU staging: against a direct float64 convolution over kernel sizes, types, channels
// and borders with bands that cut the tiles, bit-identical across band heights and slots, and
// close to the CPU's FFT. Skips, with the reason, where no CUDA device is usable (CI has none).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gpu_support.hpp"
#include "ooc/engine.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/separable.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

Backend gpu(const Operation& op) {
  return select_backend("cuda", "all", {&op});
}

Kernel2d random_kernel(int rows, int cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Kernel2d k{rows, cols, {}, "random"};
  for (int i = 0; i < rows * cols; ++i) k.taps.push_back(u(rng));
  k.taps[std::size_t(rows / 2 * cols + cols / 2)] += 2;  // not a pure high-pass
  return k;
}

double abs_sum(const Kernel2d& k) {
  double s = 0;
  for (double v : k.taps) s += std::abs(v);
  return s;
}

TEST(GpuFftConv2d, MatchesADirectFloat64Convolution) {
  OOC_REQUIRE_GPU();
  for (auto [kr, kc] : {std::pair{5, 7}, std::pair{31, 31}, std::pair{65, 33}, std::pair{129, 3},
                        std::pair{3, 129}}) {
    const Kernel2d k = random_kernel(kr, kc, std::uint64_t(kr * 1000 + kc));
    const double scale = abs_sum(k);
    for (SampleType t : {SampleType::u8, SampleType::i16, SampleType::f32, SampleType::f64})
      for (int channels : {1, 3})
        for (BorderMode b : {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                             BorderMode::wrap, BorderMode::constant})
          for (SampleType out_type : {SampleType::f32, SampleType::f64}) {
            const ImageSpec s{83, 47, channels, t};
            const auto d = test::random_image(s, 11);
            Conv2dParams p;
            p.kernel = k;
            p.border = b;
            p.border_value = 1.5;
            p.out_type = out_type;
            p.method = ConvMethod::fft;
            EngineOptions o;
            o.band_rows = 11;  // asked for: the planner makes it whole tile rows
            auto op = make_conv2d(s, p, o);
            const auto out = test::run_in_memory(*op, s, d, o, gpu(*op));
            const bool f64 = out_type == SampleType::f64 || t == SampleType::f64;
            const double peak = t == SampleType::u8 ? 255 : t == SampleType::i16 ? 32768 : 1e4;
            // f64 transforms into an f32 output: that output's rounding.
            const double rel = f64 ? (out_type == SampleType::f32 ? 1e-7 : 1e-12) : 1e-5;
            const double tol = rel * scale * peak;
            for (std::int64_t y = 0; y < s.height; ++y)
              for (std::int64_t x = 0; x < s.width; ++x)
                for (int c = 0; c < channels; ++c) {
                  const double want = test::convolve_at(s, d, k, b, 1.5, y, x, c);
                  const double got =
                      test::get(out.data, out_type, std::size_t((y * s.width + x) * channels + c));
                  ASSERT_NEAR(got, want, tol)
                      << kr << "x" << kc << " " << name(t) << "->" << name(out_type) << " c"
                      << channels << " " << name(b) << " at " << y << "," << x;
                }
          }
  }
}

TEST(GpuFftConv2d, IntegerOutputsRoundAndSaturateAsTheDirectKernels) {
  OOC_REQUIRE_GPU();
  const Kernel2d k = random_kernel(21, 21, 5);
  const ImageSpec s{120, 64, 2, SampleType::u8};
  const auto d = test::random_image(s, 12);
  Conv2dParams p;
  p.kernel = k;
  p.method = ConvMethod::fft;
  auto op = make_conv2d(s, p);
  const auto out = test::run_in_memory(*op, s, d, EngineOptions{}, gpu(*op));
  for (std::int64_t y = 0; y < s.height; ++y)
    for (std::int64_t x = 0; x < s.width; ++x)
      for (int c = 0; c < 2; ++c) {
        const double want =
            std::clamp(test::convolve_at(s, d, k, BorderMode::reflect, 0, y, x, c), 0.0, 255.0);
        const double got = test::get(out.data, s.type, std::size_t((y * s.width + x) * 2 + c));
        ASSERT_LE(std::abs(got - want), 0.5 + 1e-5 * abs_sum(k) * 255) << y << "," << x;
      }
}

TEST(GpuFftConv2d, BitIdenticalAcrossBandHeightsAndSlots) {
  OOC_REQUIRE_GPU();
  const ImageSpec s{700, 333, 1, SampleType::f32};
  const auto d = test::random_image(s, 13);
  Conv2dParams p;
  p.kernel = random_kernel(45, 37, 6);
  p.border = BorderMode::mirror;
  p.method = ConvMethod::fft;
  auto op = make_conv2d(s, p);
  const auto first = test::run_in_memory(*op, s, d, EngineOptions{}, gpu(*op));
  for (auto [rows, slots] :
       {std::pair{1, 0}, std::pair{7, 0}, std::pair{64, 1}, std::pair{200, 3}, std::pair{333, 0}}) {
    EngineOptions o;
    o.band_rows = rows;
    o.slots = slots;
    const auto again = test::run_in_memory(*op, s, d, o, gpu(*op));
    ASSERT_EQ(first.data, again.data) << "band rows " << rows << ", slots " << slots;
  }
}

// Bands on the tile grid carry only the kernel's (K - 1) / 2 rows of halo (fewer rows copied in);
// ranges that start or end inside a tile row (parts, resumed runs) the whole halo. Every split, on
// one slot or several, gives one run's bytes.
TEST(GpuFftConv2d, RangesOnAndOffTheTileGridGiveOneRunsBytes) {
  OOC_REQUIRE_GPU();
  const ImageSpec s{400, 1400, 2, SampleType::f32};
  const auto d = test::random_image(s, 15);
  Conv2dParams p;
  p.kernel = random_kernel(31, 25, 10);
  p.border = BorderMode::wrap;
  p.method = ConvMethod::fft;
  auto op = make_conv2d(s, p);
  const Backend backend = gpu(*op);
  const std::int64_t h = op->row_grid(), H = s.height;
  ASSERT_LT(3 * h, H) << "the image should hold several tile rows";
  const auto whole = test::run_in_memory(*op, s, d, EngineOptions{}, backend);
  const std::int64_t cases[][4] = {{0, H, 0, 0},         {0, H, 1, 1},     {0, H, h + 1, 3},
                                   {2 * h, H, 7, 0},     {h + 7, H, 0, 2}, {5, 2 * h + 3, 13, 0},
                                   {h, 2 * h + 1, 0, 1}, {H - 3, H, 0, 0}};
  for (const auto& c : cases) {
    EngineOptions o;
    o.row_begin = c[0];
    o.row_end = c[1];
    o.band_rows = c[2];
    o.slots = static_cast<int>(c[3]);
    o.cpu_start_bands = 0;
    const BandPlan plan = plan_bands(s, {op.get()}, backend, o);
    const bool on_grid = c[0] % h == 0 && (c[1] % h == 0 || c[1] == H);
    const std::string what = "rows " + std::to_string(c[0]) + ":" + std::to_string(c[1]) +
                             " bands " + std::to_string(c[2]) + " slots " + std::to_string(c[3]);
    EXPECT_EQ(plan.halo, on_grid ? 15 : op->halo()) << what;
    test::MemorySource src(s, d);
    test::MemorySink part(*op->output());
    Engine(src, backend, plan).run(*op, &part);
    const std::size_t row = s.row_bytes();
    ASSERT_TRUE(std::equal(part.data.begin() + c[0] * row, part.data.begin() + c[1] * row,
                           whole.data.begin() + c[0] * row))
        << what << ": bytes differ from one run's";
  }
}

TEST(GpuFftConv2d, AgreesWithTheCpuFft) {
  OOC_REQUIRE_GPU();
  const ImageSpec s{4099, 301, 1, SampleType::f32};
  const auto d = test::random_image(s, 14);
  Conv2dParams p;
  p.kernel = random_kernel(63, 63, 7);
  p.method = ConvMethod::fft;
  auto op = make_conv2d(s, p);
  const auto g = test::run_in_memory(*op, s, d, EngineOptions{}, gpu(*op));
  const auto c = test::run_in_memory(*op, s, d, EngineOptions{});
  const double tol = 2e-5 * abs_sum(p.kernel) * 1e4;
  for (std::size_t i = 0; i < std::size_t(s.width * s.height); ++i)
    ASSERT_NEAR(test::get(g.data, s.type, i), test::get(c.data, s.type, i), tol) << "sample " << i;
}

TEST(GpuFftConv2d, AutoTakesTheFftOnCudaForLargeKernelsOnly) {
  // The cost model alone: no device needed.
  const ImageSpec s{8192, 8192, 1, SampleType::f32};
  Conv2dParams p;
  p.kernel = random_kernel(3, 3, 8);
  EXPECT_FALSE(conv2d_costs(s, p).cuda_uses_fft);
  EXPECT_FALSE(conv2d_costs(s, p).cpu_uses_fft);
  p.kernel = random_kernel(129, 129, 9);
  EXPECT_TRUE(conv2d_costs(s, p).cuda_uses_fft);
  EXPECT_TRUE(conv2d_costs(s, p).cpu_uses_fft);
  p.method = ConvMethod::direct;
  EXPECT_FALSE(conv2d_costs(s, p).cuda_uses_fft);
}

}  // namespace
}  // namespace ooc

namespace ooc {
namespace {

// Separable filters beyond the radii CUDA's kernels are specialized on take the FFT on CUDA: the
// 2-D transform of the taps' outer product on tiles of the CPU's block lengths. Against a direct
// float64 convolution with that outer product, over types, channels, borders, asymmetric radii
// and band heights that cut the blocks; and close to the CPU's own (1-D) FFT. (Auto's pick of the
// FFT at such radii on large images: separable_costs, and the device's 16 GiB runs.)
TEST(GpuFftSeparable, LargeRadiiTakeCuFftAndMatchADirectFloat64Convolution) {
  OOC_REQUIRE_GPU();
  std::mt19937_64 rng(70);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  for (auto [rx, ry] : {std::pair{70, 70}, std::pair{90, 2}, std::pair{3, 80}}) {
    SeparableFilter f;
    for (int i = 0; i < 2 * rx + 1; ++i) f.row.push_back(u(rng));
    for (int i = 0; i < 2 * ry + 1; ++i) f.col.push_back(u(rng));
    Kernel2d k{2 * ry + 1, 2 * rx + 1, {}, "outer"};
    double scale = 0;
    for (double c : f.col)
      for (double r : f.row) {
        k.taps.push_back(c * r);
        scale += std::abs(c * r);
      }
    for (SampleType t : {SampleType::u8, SampleType::f32})
      for (int channels : {1, 3})
        for (BorderMode b : {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                             BorderMode::wrap, BorderMode::constant}) {
          const ImageSpec s{211, 97, channels, t};
          const auto d = test::random_image(s, std::uint64_t(rx * 100 + ry));
          SeparableParams p;
          p.filter = f;
          p.border = b;
          p.border_value = 1.5;
          p.out_type = SampleType::f32;
          p.method = ConvMethod::fft;  // auto weighs the FFT's tiles against images this small
          EngineOptions o;
          o.band_rows = 13;  // asked for: the planner makes it whole block rows
          auto op = make_separable(s, p, o);
          // A constant border stays direct on CUDA (separable_costs): scipy's axis-by-axis
          // semantics are not one 2-D convolution there.
          const bool constant = b == BorderMode::constant;
          ASSERT_NE(op->describe().find(constant ? "direct on CUDA" : "FFT on CUDA"),
                    std::string::npos)
              << op->describe();
          const auto out =
              test::run_in_memory(*op, s, d, o, select_backend("cuda", "0", {op.get()}));
          const auto cpu = test::run_in_memory(*op, s, d, o);
          const double peak = t == SampleType::u8 ? 255 : 1e4;
          const double tol = 1e-5 * scale * peak;
          for (std::int64_t y = 0; y < s.height; ++y)
            for (std::int64_t x = 0; x < s.width; ++x)
              for (int c = 0; c < channels; ++c) {
                const std::size_t i = std::size_t((y * s.width + x) * channels + c);
                const double got = test::get(out.data, SampleType::f32, i);
                if (!constant) {
                  const double want = test::convolve_at(s, d, k, b, 1.5, y, x, c);
                  ASSERT_NEAR(got, want, tol)
                      << rx << "x" << ry << " " << name(t) << " c" << channels << " " << name(b)
                      << " at " << y << "," << x;
                }
                // The CPU's FFT (checked against scipy by fft_separable_check.py).
                ASSERT_NEAR(test::get(cpu.data, SampleType::f32, i), got, 2 * tol)
                    << rx << "x" << ry << " " << name(t) << " c" << channels << " " << name(b)
                    << " at " << y << "," << x;
              }
        }
  }
}

}  // namespace
}  // namespace ooc
