// The planner's tiles across the row: on a modeled 32-core host under the default 1 GiB, a wide
// fused pipeline keeps (nearly) every core busy by cutting its bands into tiles, within the
// budget; operations that need whole rows are never cut.
#include <gtest/gtest.h>

#include <cstdio>

#include "ooc/engine.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {
namespace {

std::vector<StageCall> stages(const std::string& text) {
  return parse_pipeline({text});
}

const char* const kSixStages =
    "gaussian sigma=2 ! unsharp sigma=1 amount=0.7 ! subtract-background sigma=20 ! abs ! "
    "clamp min=0 max=100 ! scale mul=2";

TEST(TilePlan, ThirtyTwoCoresUnderOneGibKeepTheirThreads) {
  const ImageSpec in{65536, 16384, 1, SampleType::f32};
  PipelinePlan pipeline(in, stages(kSixStages), PipelineSettings{});
  EngineOptions o;
  o.cores = 32;
  o.mem_limit = std::size_t{1} << 30;
  const BandPlan plan = plan_bands(in, pipeline.operations(), Backend{}, o);
  EXPECT_GE(plan.threads, 28);
  EXPECT_GT(plan.tile_cols, 0);
  EXPECT_LT(plan.tile_cols, in.width);
  EXPECT_GE(plan.column_halo, 69);  // 6 + 3 + 60 columns of the three filters
  EXPECT_LE(plan.ring_bytes, o.mem_limit);
  EXPECT_GT(plan.estimate_seconds, 0);
  // Whole rows under the same budget: the estimate the planner rejected is slower.
  o.tile_cols = in.width;
  const BandPlan rows = plan_bands(in, pipeline.operations(), Backend{}, o);
  EXPECT_EQ(rows.tile_cols, 0);
  EXPECT_GT(rows.estimate_seconds, plan.estimate_seconds);
  std::printf(
      "tiles: %lld bands of %lld rows, %d slots, %d threads, %lld columns, %.3f s\n"
      "rows:  %lld bands of %lld rows, %d slots, %d threads, %.3f s\n",
      (long long)plan.bands, (long long)plan.band_rows, plan.slots, plan.threads,
      (long long)plan.tile_cols, plan.estimate_seconds, (long long)rows.bands,
      (long long)rows.band_rows, rows.slots, rows.threads, rows.estimate_seconds);
}

TEST(TilePlan, SmallBudgetsStillFitWithEveryThread) {
  const ImageSpec in{65536, 2048, 1, SampleType::f32};
  PipelinePlan pipeline(in, stages(kSixStages), PipelineSettings{});
  for (const std::size_t mib : {96, 256, 1024, 8192}) {
    EngineOptions o;
    o.cores = 2;
    o.mem_limit = mib << 20;
    const BandPlan plan = plan_bands(in, pipeline.operations(), Backend{}, o);
    EXPECT_EQ(plan.threads, 2) << mib;
    EXPECT_LE(plan.ring_bytes, o.mem_limit) << mib;
  }
}

TEST(TilePlan, WholeRowOperationsAreNotCut) {
  const ImageSpec in{65536, 4096, 1, SampleType::u8};
  for (const char* text : {"equalize", "gaussian sigma=4 method=fft", "gaussian sigma=1"}) {
    PipelinePlan pipeline(in, stages(text), PipelineSettings{});
    EngineOptions o;
    o.cores = 8;
    o.tile_cols = 100;
    const BandPlan plan = plan_bands(in, pipeline.operations(), Backend{}, o);
    if (std::string(text) == "gaussian sigma=1")
      EXPECT_EQ(plan.tile_cols, 100) << text;
    else
      EXPECT_EQ(plan.tile_cols, 0) << text;
  }
}

}  // namespace
}  // namespace ooc
