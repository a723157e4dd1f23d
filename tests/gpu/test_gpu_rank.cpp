// The CUDA rank filters (median, percentile, rank over windows of up to 49 samples, rectangles
// and footprints) against the CPU backend: selections, so the bytes must be identical, over every
// type, 1 and 3 channels, the five borders and band heights that do not divide the height.
// Skips, with the reason, where no CUDA device is usable (CI has none).
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "gpu_support.hpp"
#include "ooc/ops/rank.hpp"
#include "ooc/pipeline.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

std::vector<std::byte> run_on(const ImageSpec& s, const std::vector<std::byte>& d, Operation& op,
                              bool cuda, std::int64_t band_rows) {
  test::MemorySource src(s, d);
  PipelineOptions o;
  o.band_rows = band_rows;
  o.cpu_start_bands = cuda ? 0 : -2;
  const Backend be = cuda ? select_backend("cuda", "all", {&op}) : Backend{};
  Engine e(src, be, plan_bands(s, {&op}, be, o));
  test::MemorySink sink(s);
  e.run(op, &sink);
  return sink.data;
}

Footprint disk(int r) {
  Footprint f;
  f.height = f.width = 2 * r + 1;
  f.name = "disk";
  for (int y = -r; y <= r; ++y)
    for (int x = -r; x <= r; ++x) f.mask.push_back(x * x + y * y <= r * r + r ? 1 : 0);
  return f;
}

TEST(GpuRank, EqualsTheCpuExactly) {
  OOC_REQUIRE_GPU();
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  const SampleType types[] = {SampleType::u8,  SampleType::u16, SampleType::i16, SampleType::u32,
                              SampleType::i32, SampleType::f32, SampleType::f64};
  struct Window {
    std::int64_t h, w;
    bool footprint;
  };
  const Window windows[] = {{3, 3, false}, {5, 5, false}, {7, 7, false}, {2, 4, false},
                            {1, 9, false}, {5, 5, true},  {7, 7, true}};
  std::mt19937 rng(33);
  int n = 0;
  for (SampleType t : types)
    for (const Window& w : windows) {
      const BorderMode border = borders[rng() % 5];
      const int channels = rng() % 2 ? 3 : 1;
      const ImageSpec s{static_cast<std::int64_t>(37 + rng() % 200),
                        static_cast<std::int64_t>(29 + rng() % 300), channels, t};
      const auto d = test::random_image(s, 100 + n++);
      RankParams p;
      p.height = w.h;
      p.width = w.w;
      if (w.footprint) p.footprint = disk(static_cast<int>(w.h / 2));
      const std::int64_t count = w.footprint ? p.footprint.count() : w.h * w.w;
      p.border = border;
      p.border_value = 7;
      for (std::int64_t rank : {count / 2, std::int64_t{1}, count - 2}) {
        p.rank = rank;
        auto op = make_rank(s, p);
        ASSERT_TRUE(op->has_cuda());
        const auto cpu = run_on(s, d, *op, false, 64);
        const auto gpu = run_on(s, d, *op, true, 19);
        EXPECT_TRUE(cpu == gpu) << name(t) << " " << w.h << "x" << w.w
                                << (w.footprint ? " disk" : "") << " rank " << rank << " border "
                                << name(border) << " c" << channels;
      }
    }
}

TEST(GpuRank, NanInTheWindowGivesNanAsOnTheCpu) {
  OOC_REQUIRE_GPU();
  const ImageSpec s{41, 67, 1, SampleType::f32};
  auto d = test::random_image(s, 5);
  float* v = reinterpret_cast<float*>(d.data());
  v[3 * 67 + 5] = v[20 * 67 + 66] = v[40 * 67] = std::numeric_limits<float>::quiet_NaN();
  RankParams p;
  p.height = p.width = 5;
  p.rank = 12;
  auto op = make_rank(s, p);
  EXPECT_TRUE(run_on(s, d, *op, false, 64) == run_on(s, d, *op, true, 7));
}

TEST(GpuRank, LargeWindowsStayOnTheCpu) {
  const ImageSpec s{64, 64, 1, SampleType::u16};
  RankParams p;
  p.height = p.width = 9;
  p.rank = 40;
  EXPECT_FALSE(make_rank(s, p)->has_cuda());
}

}  // namespace
}  // namespace ooc
