// The 2-D convolution operation on the engine against a float64 direct convolution
// (reference.hpp): every type, channel count, border and band plan; rank-one kernels run
// separable; FFT bands on the tile grid, alone and as a pipeline's last stage; bad kernels.
#include <gtest/gtest.h>

#include <random>

#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/pipeline.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

using test::MemorySink;
using test::MemorySource;

TEST(Conv2d, MatchesADirectFloat64ConvolutionOverTypesChannelsBordersAndBands) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto [kr, kc] : {std::pair{3, 3}, std::pair{5, 7}, std::pair{9, 1}, std::pair{15, 15}}) {
    Kernel2d k{kr, kc, {}, "random"};
    for (int i = 0; i < kr * kc; ++i) k.taps.push_back(u(rng));
    for (SampleType t : {SampleType::u8, SampleType::i16, SampleType::f32, SampleType::f64})
      for (int channels : {1, 3})
        for (BorderMode b : {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                             BorderMode::wrap, BorderMode::constant}) {
          const ImageSpec s{23, 13, channels, t};
          const auto d = test::random_image(s, 17);
          Conv2dParams p;
          p.kernel = k;
          p.border = b;
          p.border_value = 2.5;
          p.out_type = SampleType::f64;
          EngineOptions o;
          o.band_rows = 4;
          auto op = make_conv2d(s, p, o);
          // A single row or column is rank 1 and runs separable: the same semantics.
          if (kr > 1 && kc > 1) {
            ASSERT_EQ(op->describe().find("rank 1"), std::string::npos);
          }
          const MemorySink out = test::run_in_memory(*op, s, d, o);
          double scale = 0;
          for (double v : k.taps) scale += std::abs(v);
          for (std::int64_t y = 0; y < s.height; ++y)
            for (std::int64_t x = 0; x < s.width; ++x)
              for (int c = 0; c < channels; ++c) {
                const double want = test::convolve_at(s, d, k, b, 2.5, y, x, c);
                const double got = test::get(out.data, SampleType::f64,
                                             std::size_t((y * s.width + x) * channels + c));
                ASSERT_NEAR(got, want, 1e-12 * scale * 70000)
                    << kr << "x" << kc << " " << name(t) << " c" << channels << " border "
                    << name(b) << " at " << y << "," << x;
              }
        }
  }
}

TEST(Conv2d, RankOneKernelsRunSeparableAndSaySo) {
  Kernel2d k{3, 5, {}, "outer"};
  const double col[3] = {1, 2, -1}, row[5] = {0.5, 1, 3, 1, 0.25};
  for (double a : col)
    for (double b : row) k.taps.push_back(a * b);
  const ImageSpec s{40, 20, 1, SampleType::f64};
  const auto d = test::random_image(s, 2);
  for (BorderMode b : {BorderMode::reflect, BorderMode::constant}) {
    Conv2dParams p;
    p.kernel = k;
    p.border = b;
    p.border_value = 3;
    auto op = make_conv2d(s, p);
    EXPECT_NE(op->describe().find("rank 1"), std::string::npos) << op->describe();
    const MemorySink out = test::run_in_memory(*op, s, d, EngineOptions{});
    for (std::int64_t y = 0; y < s.height; ++y)
      for (std::int64_t x = 0; x < s.width; ++x)
        ASSERT_NEAR(test::get(out.data, s.type, std::size_t(y * s.width + x)),
                    test::convolve_at(s, d, k, b, 3, y, x, 0), 1e-9)
            << name(b) << " at " << y << "," << x;
  }
  EXPECT_FALSE(separable_factors(parse_kernel("laplace", 1 << 30)));
  EXPECT_TRUE(separable_factors(parse_kernel("sobel-y", 1 << 30)));
}

// The FFT's tile rows are fixed in image coordinates: bands on that grid carry only the kernel's
// (K - 1) / 2 rows of halo, a range that starts or ends inside a tile row the whole halo(), and
// every split of the rows (parts, a resumed run's rest, any band height) gives one run's bytes.
TEST(Conv2d, FftBandsOnTheTileGridCarryTheKernelsHaloAndEverySplitGivesOneRunsBytes) {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-1, 1);
  Kernel2d k{31, 25, {}, "random"};
  for (int i = 0; i < 31 * 25; ++i) k.taps.push_back(u(rng));
  k.taps[15 * 25 + 12] += 2;  // not a pure high-pass
  const ImageSpec s{400, 1400, 2, SampleType::f32};
  const auto d = test::random_image(s, 21);
  for (BorderMode b : {BorderMode::reflect, BorderMode::constant}) {
    Conv2dParams p;
    p.kernel = k;
    p.border = b;
    p.border_value = 1.5;
    p.method = ConvMethod::fft;
    auto op = make_conv2d(s, p);
    const std::int64_t h = op->row_grid(), H = s.height;
    ASSERT_GT(h, 1);
    ASSERT_LT(3 * h, H) << "the image should hold several tile rows";
    EXPECT_EQ(op->grid_halo(), 15);
    EXPECT_EQ(op->halo(), 15 + h - 1);
    const MemorySink whole = test::run_in_memory(*op, s, d, EngineOptions{});
    // {row_begin, row_end, band_rows}: on the grid (any asked height becomes whole tile rows),
    // then ranges that start or end inside a tile row.
    const std::int64_t cases[][3] = {
        {0, H, 0},     {0, H, 1},     {0, H, h + 1},      {0, 2 * h, 0},     {2 * h, H, 7},
        {h, 3 * h, 0}, {h + 7, H, 0}, {5, 2 * h + 3, 13}, {h, 2 * h + 1, 0}, {H - 3, H, 0}};
    for (const auto& c : cases) {
      EngineOptions o;
      o.row_begin = c[0];
      o.row_end = c[1];
      o.band_rows = c[2];
      const BandPlan plan = plan_bands(s, {op.get()}, Backend{}, o);
      const bool on_grid = c[0] % h == 0 && (c[1] % h == 0 || c[1] == H);
      const std::string what = std::string(name(b)) + " rows " + std::to_string(c[0]) + ":" +
                               std::to_string(c[1]) + " bands " + std::to_string(c[2]);
      EXPECT_EQ(plan.halo, on_grid ? 15 : op->halo()) << what;
      EXPECT_EQ(plan.grid, on_grid ? h : 1) << what;
      if (on_grid) {
        EXPECT_TRUE(plan.band_rows % h == 0 || plan.band_rows == c[1] - c[0]) << what;
      }
      MemorySource src(s, d);
      MemorySink part(*op->output());
      Engine(src, Backend{}, plan).run(*op, &part);
      const std::size_t row = s.row_bytes();
      ASSERT_TRUE(std::equal(part.data.begin() + c[0] * row, part.data.begin() + c[1] * row,
                             whole.data.begin() + c[0] * row))
          << what << ": bytes differ from one run's";
    }
  }
}

// A pipeline whose last stage is the FFT's takes the same grid: its bands carry that stage's
// (K - 1) / 2 rows and the halos of the stages before it, with one run's bytes for every range.
TEST(Conv2d, FftAsAPipelinesLastStageTakesTheTileGrid) {
  const ImageSpec s{300, 1400, 1, SampleType::f32};
  const auto d = test::random_image(s, 22);
  PipelinePlan pipeline(
      s,
      {StageCall{"gaussian", {{"sigma", 2.0}}},
       StageCall{"convolve", {{"kernel", std::string("box:31")}, {"method", std::string("fft")}}}},
      {}, EngineOptions{});
  Operation& chain = pipeline.pass(0);
  const std::int64_t h = chain.row_grid(), H = s.height;
  ASSERT_GT(h, 1);
  ASSERT_LT(2 * h, H);
  EXPECT_EQ(chain.halo() - chain.grid_halo(), h - 1);
  const MemorySink whole = test::run_in_memory(chain, s, d, EngineOptions{});
  const std::int64_t cases[][3] = {{0, H, 1}, {h, H, 0}, {h + 3, 2 * h, 0}, {7, H - 5, 100}};
  for (const auto& c : cases) {
    EngineOptions o;
    o.row_begin = c[0];
    o.row_end = c[1];
    o.band_rows = c[2];
    const BandPlan plan = plan_bands(s, {&chain}, Backend{}, o);
    const bool on_grid = c[0] % h == 0 && (c[1] % h == 0 || c[1] == H);
    EXPECT_EQ(plan.halo, on_grid ? chain.grid_halo() : chain.halo()) << c[0] << ":" << c[1];
    MemorySource src(s, d);
    MemorySink part(*chain.output());
    Engine(src, Backend{}, plan).run(chain, &part);
    const std::size_t row = s.row_bytes();
    ASSERT_TRUE(std::equal(part.data.begin() + c[0] * row, part.data.begin() + c[1] * row,
                           whole.data.begin() + c[0] * row))
        << "rows " << c[0] << ":" << c[1] << ": bytes differ from one run's";
  }
}

TEST(Conv2d, BadKernelsAreUsageErrors) {
  for (const char* k : {"box:4", "box:0", "gaussian2d:-1", "gaussian2d:nan", "nope", "box:x"})
    EXPECT_THROW(parse_kernel(k, 1 << 30), Error) << k;
}

}  // namespace
}  // namespace ooc
