// The CUDA backend through the whole pipeline, against the float64 reference and the CPU backend.
// Skips, with the reason, where no CUDA device is usable (CI has none).
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "gpu_support.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/pipeline.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

using test::MemorySink;
using test::MemorySource;

MemorySink run(bool gpu, const ImageSpec& spec, const std::vector<std::byte>& data,
               const SeparableParams& params, const PipelineOptions& o,
               const std::vector<int>& devices = {}) {
  auto op = make_separable(spec, params, o);
  Backend backend;
  if (gpu) {
    std::string list;
    for (int d : devices) {
      if (!list.empty()) list += ',';
      list += std::to_string(d);
    }
    backend = select_backend("cuda", list.empty() ? "all" : list, {op.get()});
  }
  return test::run_in_memory(*op, spec, data, o, backend);
}

class GpuSweep : public ::testing::TestWithParam<test::SweepParam> {};

TEST_P(GpuSweep, MatchesFloat64ReferenceAndCpu) {
  OOC_REQUIRE_GPU();
  const auto [type, channels, border] = GetParam();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  struct Case {
    std::string name;
    ImageSpec spec;
    std::vector<double> row, col;
  };
  std::vector<Case> cases;
  for (std::int64_t r : {0, 1, 3, 16, 40, 70}) {  // 70: the direct row kernel, past the image
    const auto g = gaussian_taps(r, 0);
    cases.push_back({"gaussian r" + std::to_string(r), ImageSpec{37, 23, channels, type}, g, g});
  }
  // Several row tiles, a radius at the tile kernel's limit and one past it.
  for (std::int64_t r : {64, 65}) {
    const auto g = gaussian_taps(r, 0);
    cases.push_back(
        {"wide r" + std::to_string(r), ImageSpec{2999, 9, channels, type}, g, gaussian_taps(3, 0)});
  }
  std::vector<double> row(7), col(3);
  for (double& t : row) t = u(rng);
  for (double& t : col) t = u(rng);
  cases.push_back({"asymmetric 7x3", ImageSpec{37, 23, channels, type}, row, col});

  for (const auto& c : cases) {
    const auto data = test::random_image(c.spec, 4321 + static_cast<int>(type) + channels);
    SeparableParams p;
    p.filter.row = c.row;
    p.filter.col = c.col;
    p.border = border;
    p.border_value = 7.25;
    const auto ref = test::reference(c.spec, data, c.row, c.col, border, p.border_value);
    PipelineOptions o;
    o.threads = 2;
    const auto cpu = run(false, c.spec, data, p, o);
    for (std::int64_t band_rows : {std::int64_t{1}, std::int64_t{5}, c.spec.height}) {
      o.band_rows = band_rows;
      o.slots = 3;
      const auto gpu = run(true, c.spec, data, p, o);
      const std::string what = c.name + " band_rows " + std::to_string(band_rows);
      test::expect_matches(gpu, ref, accumulates_in_f64(type, type, p.precision), what);
      // And against the CPU backend: the same tolerance around the CPU's result.
      for (std::size_t i = 0; i < ref.value.size(); ++i) {
        const double g = test::get(gpu.data, type, i), h = test::get(cpu.data, type, i);
        const double tol =
            is_integer(type) ? 1.0 : 2e-5 * ref.scale[i] + 0x1p-22 * std::abs(h) + 1e-30;
        ASSERT_LE(std::abs(g - h), tol) << what << " sample " << i << " gpu " << g << " cpu " << h;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TypesChannelsBorders, GpuSweep, test::sweep_values(), test::sweep_name);

TEST(Gpu, BitIdenticalAcrossBandsSlotsAndDevices) {
  OOC_REQUIRE_GPU();
  const int devices = cuda_device_count();
  for (SampleType type : {SampleType::f32, SampleType::u8}) {
    const ImageSpec spec{4099, 301, 3, type};
    const auto data = test::random_image(spec, 11);
    SeparableParams p;
    p.filter.row = p.filter.col = gaussian_taps(16, 0);
    std::vector<std::byte> first;
    for (std::int64_t band_rows : {1, 7, 64, 301})
      for (int slots : {1, 2, 5})
        for (int ndev = 1; ndev <= std::min(devices, 2); ++ndev) {
          PipelineOptions o;
          o.band_rows = band_rows;
          o.slots = slots;
          std::vector<int> list;
          for (int d = 0; d < ndev; ++d) list.push_back(d);
          const auto out = run(true, spec, data, p, o, list);
          if (first.empty()) {
            first = out.data;
            continue;
          }
          ASSERT_TRUE(out.data == first) << name(type) << " band_rows " << band_rows << " slots "
                                         << slots << " devices " << ndev;
        }
  }
}

TEST(Gpu, LargeBandMatchesCpu) {
  OOC_REQUIRE_GPU();
  // A band of 65536-wide rows: 64-bit offsets, many tiles, the planner's own band height.
  const ImageSpec spec{65536, 200, 1, SampleType::f32};
  const auto data = test::random_image(spec, 12);
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(16, 0);
  PipelineOptions o;
  const auto gpu = run(true, spec, data, p, o);
  const auto cpu = run(false, spec, data, p, o);
  for (std::size_t i = 0; i < gpu.data.size() / 4; ++i) {
    const double g = test::get(gpu.data, spec.type, i), h = test::get(cpu.data, spec.type, i);
    ASSERT_LE(std::abs(g - h), 1e-5 * (std::abs(h) + 1000.0)) << "sample " << i;
  }
}

TEST(Gpu, BadDeviceIndexIsADeviceError) {
  OOC_REQUIRE_GPU();
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(1, 0);
  try {
    auto op = make_separable(ImageSpec{8, 8, 1, SampleType::f32}, p);
    select_backend("cuda", "99", {op.get()});
    FAIL() << "device 99 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device);
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(Gpu, NoDeviceGivesAClearMessage) {
  if (cuda_device_count() > 0)
    GTEST_SKIP() << "a CUDA device is present: this is the CPU-only case";
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(1, 0);
  try {
    auto op = make_separable(ImageSpec{8, 8, 1, SampleType::f32}, p);
    select_backend("cuda", "all", {op.get()});
    FAIL() << "--device cuda accepted without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device);
    EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ooc
