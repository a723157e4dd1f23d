// Filter factories, size parsing and the band plan under a memory limit.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/limits.hpp"
#include "ooc/ops/separable.hpp"

namespace ooc {
namespace {

TEST(Filter, GaussianIsNormalizedSymmetricWithSigmaRadiusOverThree) {
  for (std::int64_t r : {1, 3, 16, 64}) {
    const auto t = gaussian_taps(r, 0);
    ASSERT_EQ(t.size(), static_cast<std::size_t>(2 * r + 1));
    EXPECT_NEAR(std::accumulate(t.begin(), t.end(), 0.0), 1.0, 1e-12);
    const double sigma = r / 3.0;
    // Ratio of neighbouring taps pins sigma: t[r+1]/t[r] = exp(-1 / (2 sigma^2)).
    EXPECT_NEAR(t[r + 1] / t[r], std::exp(-0.5 / (sigma * sigma)), 1e-12);
    for (std::int64_t i = 0; i < r; ++i) EXPECT_DOUBLE_EQ(t[i], t[2 * r - i]);
  }
  EXPECT_EQ(gaussian_taps(0, 0), std::vector<double>{1.0});
}

TEST(Filter, BoxAndParsing) {
  const auto b = box_taps(2);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_DOUBLE_EQ(b[0], 0.2);
  EXPECT_EQ(parse_taps("1, 2,3\n", "t"), (std::vector<double>{1, 2, 3}));
  EXPECT_THROW(parse_taps("1,2", "t"), Error);
  EXPECT_THROW(parse_taps("1,x,3", "t"), Error);
  EXPECT_THROW(parse_taps("", "t"), Error);
  EXPECT_EQ(correlation_taps({1, 2, 3}), (std::vector<double>{3, 2, 1}));
}

TEST(Sizes, ParsesSuffixes) {
  EXPECT_EQ(parse_size("512M"), std::size_t{512} << 20);
  EXPECT_EQ(parse_size("4G"), std::size_t{4} << 30);
  EXPECT_EQ(parse_size("1.5GiB"), std::size_t{3} << 29);
  EXPECT_EQ(parse_size("100000"), 100000u);
  EXPECT_THROW(parse_size("lots"), Error);
  EXPECT_THROW(parse_size("-1G"), Error);
  EXPECT_THROW(parse_size("3Q"), Error);
}

TEST(Image, OverflowAndBadDimensionsAreRefused) {
  EXPECT_THROW(validate(ImageSpec{0, 10, 1, SampleType::u8}), Error);
  EXPECT_THROW(validate(ImageSpec{10, 10, 5, SampleType::u8}), Error);
  EXPECT_THROW(
      validate(ImageSpec{std::int64_t{1} << 40, std::int64_t{1} << 30, 1, SampleType::f64}), Error);
  EXPECT_NO_THROW(
      validate(ImageSpec{std::int64_t{1} << 20, std::int64_t{1} << 20, 4, SampleType::f64}));
  EXPECT_EQ(parse_sample_type("uint16"), SampleType::u16);
  EXPECT_THROW(parse_sample_type("f16"), Error);
}

TEST(Plan, RingStaysUnderTheLimitWhateverTheImageHeight) {
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(16, 0);
  for (std::int64_t height : {std::int64_t{100}, std::int64_t{1} << 20, std::int64_t{1} << 30}) {
    const ImageSpec in{65536, height, 1, SampleType::f32};
    EngineOptions o;
    o.mem_limit = std::size_t{256} << 20;
    o.threads = 2;
    auto op = make_separable(in, p, o);
    const BandPlan plan = plan_bands(in, {op.get()}, Backend{}, o);
    EXPECT_LE(plan.ring_bytes, o.mem_limit);
    EXPECT_GE(plan.band_rows, 1);
    EXPECT_EQ(plan.bands, (height + plan.band_rows - 1) / plan.band_rows);
  }
}

TEST(Plan, TooSmallLimitSaysWhatIsNeeded) {
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(16, 0);
  const ImageSpec in{1 << 20, 1000, 1, SampleType::f32};
  EngineOptions o;
  o.mem_limit = std::size_t{1} << 20;
  auto op = make_separable(in, p, o);
  try {
    plan_bands(in, {op.get()}, Backend{}, o);
    FAIL() << "a 1 MiB limit cannot hold 4 MiB rows";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("raise --mem-limit"), std::string::npos) << e.what();
  }
}

// An operation with a tall halo and large per-thread scratch, as the FFT convolution has.
class ScratchHeavy : public Operation {
 public:
  explicit ScratchHeavy(ImageSpec in) : in_(in) {}
  std::string describe() const override { return "scratch-heavy"; }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return 100; }
  std::size_t cpu_scratch_bytes(std::int64_t, std::int64_t) const override {
    return std::size_t{50} << 20;
  }
  std::unique_ptr<CpuKernel> make_cpu() const override { return nullptr; }

 private:
  ImageSpec in_;
};

TEST(Plan, DefaultThreadsShrinkToFitTheScratchAndGivenThreadsAreKept) {
  if (default_threads() < 2) GTEST_SKIP() << "one core: there are no threads to drop";
  const ImageSpec in{65536, 4096, 1, SampleType::f32};  // 256 KiB rows
  const ScratchHeavy op(in);
  EngineOptions o;
  // A 50-row band with its halo and output (75 MiB) and one thread's scratch fit; two don't.
  o.mem_limit = std::size_t{140} << 20;
  const BandPlan plan = plan_bands(in, {&op}, Backend{}, o);
  EXPECT_EQ(plan.threads, 1);
  EXPECT_LE(plan.ring_bytes, o.mem_limit);
  EXPECT_GE(plan.band_rows, 50);
  o.threads = 2;  // asked for: kept, and the bands shrink instead
  try {
    const BandPlan two = plan_bands(in, {&op}, Backend{}, o);
    EXPECT_EQ(two.threads, 2);
    EXPECT_LE(two.ring_bytes, o.mem_limit);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lower --threads"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ooc
