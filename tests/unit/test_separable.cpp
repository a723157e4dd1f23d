// The CPU separable convolution through the whole pipeline, against the float64 reference, over
// types, channels, radii (up to larger than the image), borders and band heights.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <tuple>

#include "io/npy.hpp"
#include "ooc/engine.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/separable.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

using test::MemorySink;
using test::MemorySource;

using test::expect_matches;

MemorySink run(const ImageSpec& spec, const std::vector<std::byte>& data,
               const SeparableParams& params, const EngineOptions& o) {
  return test::run_in_memory(*make_separable(spec, params, o), spec, data, o);
}

class SeparableSweep : public ::testing::TestWithParam<test::SweepParam> {};

TEST_P(SeparableSweep, MatchesFloat64Reference) {
  const auto [type, channels, border] = GetParam();
  const ImageSpec spec{37, 23, channels, type};  // odd width; 5-row bands do not divide 23
  const auto data = test::random_image(spec, 1234 + static_cast<int>(type) * 10 + channels);
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> u(-1, 1);

  struct FilterCase {
    std::string name;
    std::vector<double> row, col;
  };
  std::vector<FilterCase> filters;
  for (std::int64_t r : {0, 1, 3, 16, 40}) {  // 40: larger than both dimensions
    const auto g = gaussian_taps(r, 0);
    filters.push_back({"gaussian r" + std::to_string(r), g, g});
  }
  // Asymmetric taps of different lengths: catches flipped axes and flipped tap order.
  std::vector<double> row(7), col(3);
  for (double& t : row) t = u(rng);
  for (double& t : col) t = u(rng);
  filters.push_back({"asymmetric 7x3", row, col});

  for (const auto& f : filters) {
    SeparableParams p;
    p.filter.row = f.row;
    p.filter.col = f.col;
    p.border = border;
    p.border_value = 7.25;
    const auto ref = test::reference(spec, data, f.row, f.col, border, p.border_value);
    for (std::int64_t band_rows : {1, 5, 23}) {
      EngineOptions o;
      o.band_rows = band_rows;
      o.threads = 2;
      o.slots = 3;
      o.mem_limit = std::size_t{64} << 20;
      const auto out = run(spec, data, p, o);
      expect_matches(out, ref, accumulates_in_f64(type, type, p.precision),
                     f.name + " band_rows " + std::to_string(band_rows));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TypesChannelsBorders, SeparableSweep, test::sweep_values(),
                         test::sweep_name);

TEST(Separable, OutputTypesRoundAndSaturate) {
  const ImageSpec spec{29, 17, 2, SampleType::f32};
  const auto data = test::random_image(spec, 5);  // +-1000: saturates u8, fits i16
  for (SampleType out : kAllSampleTypes)
    for (Precision prec : {Precision::f32, Precision::f64}) {
      SeparableParams p;
      p.filter.row = p.filter.col = gaussian_taps(2, 0);
      p.out_type = out;
      p.precision = prec;
      EngineOptions o;
      o.band_rows = 4;
      o.threads = 2;
      const auto sink = run(spec, data, p, o);
      ASSERT_EQ(sink.spec().type, out);
      const auto ref = test::reference(spec, data, p.filter.row, p.filter.col, p.border, 0);
      expect_matches(sink, ref, accumulates_in_f64(spec.type, out, prec),
                     std::string("out ") + std::string(name(out)));
    }
}

TEST(Separable, BitIdenticalAcrossBandsSlotsThreadsAndStrips) {
  for (auto [type, channels] : {std::pair{SampleType::f32, 3}, std::pair{SampleType::u8, 1},
                                std::pair{SampleType::f64, 2}}) {
    const ImageSpec spec{301, 157, channels, type};
    const auto data = test::random_image(spec, 77);
    SeparableParams p;
    p.filter.row = p.filter.col = gaussian_taps(16, 0);
    std::vector<std::byte> first;
    for (std::int64_t band_rows : {1, 3, 16, 157})
      for (int slots : {1, 2, 5})
        for (int threads : {1, 2, 4})
          for (std::int64_t strip : {64, 512}) {
            EngineOptions o;
            o.band_rows = band_rows;
            o.slots = slots;
            o.threads = threads;
            o.strip_samples = strip;
            const auto out = run(spec, data, p, o);
            if (first.empty()) {
              first = out.data;
              continue;
            }
            ASSERT_TRUE(out.data == first) << name(type) << " band_rows " << band_rows << " slots "
                                           << slots << " threads " << threads << " strip " << strip;
          }
  }
}

TEST(Separable, RawFileRoundTripEqualsInMemoryRun) {
  const ImageSpec spec{123, 45, 3, SampleType::u16};
  const auto data = test::random_image(spec, 3);
  const auto dir =
      std::filesystem::temp_directory_path() / ("ooc_unit_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = dir / "in.raw", out = dir / "out.raw";
  std::ofstream(in, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));

  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(4, 0);
  p.border = BorderMode::wrap;
  EngineOptions o;
  o.band_rows = 7;
  o.threads = 2;
  RawHints hints{123, 0, 3, SampleType::u16};
  auto source = open_source(in, hints);
  ASSERT_EQ(source->spec().height, 45);
  {  // pread path (GPU staging) and mapped path give the same rows
    RowArena arena;
    std::vector<std::byte> rows(10 * spec.row_bytes());
    source->read_rows(17, 10, rows.data());
    EXPECT_EQ(0, std::memcmp(rows.data(), source->rows(17, 10, arena), rows.size()));
    EXPECT_EQ(0, std::memcmp(rows.data(), data.data() + 17 * spec.row_bytes(), rows.size()));
  }
  auto op = make_separable(source->spec(), p, o);
  {
    auto sink = create_sink(out, *op->output(), in);
    Engine engine(*source, Backend{}, plan_bands(source->spec(), {op.get()}, Backend{}, o));
    engine.run(*op, sink.get());
    EXPECT_FALSE(std::filesystem::exists(out)) << "output visible before commit";
    sink->commit();
  }
  std::ifstream f(out, std::ios::binary);
  std::vector<std::byte> got(data.size());
  f.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size()));
  EXPECT_EQ(f.gcount(), static_cast<std::streamsize>(got.size()));
  EXPECT_TRUE(got == run(spec, data, p, o).data);
  std::filesystem::remove_all(dir);
}

TEST(Separable, NpySourceReadsRowsAfterTheHeaderBothWays) {
  // Both ways a backend reads rows (mapped window: CPU; pread: GPU staging) skip the header.
  const ImageSpec spec{29, 13, 2, SampleType::i16};
  const auto data = test::random_image(spec, 9);
  const auto path =
      std::filesystem::temp_directory_path() / ("ooc_unit_" + std::to_string(::getpid()) + ".npy");
  {
    std::ofstream f(path, std::ios::binary);
    const std::string header = npy_header(spec);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  auto source = open_source(path, RawHints{});
  ASSERT_EQ(source->spec().width, 29);
  ASSERT_EQ(source->spec().height, 13);
  ASSERT_EQ(source->spec().channels, 2);
  ASSERT_EQ(source->spec().type, SampleType::i16);
  RowArena arena;
  std::vector<std::byte> rows(5 * spec.row_bytes());
  source->read_rows(6, 5, rows.data());
  EXPECT_EQ(0, std::memcmp(rows.data(), data.data() + 6 * spec.row_bytes(), rows.size()));
  EXPECT_EQ(
      0, std::memcmp(source->rows(6, 5, arena), data.data() + 6 * spec.row_bytes(), rows.size()));
  std::filesystem::remove(path);
}

TEST(Separable, SyntheticSourceIsDeterministicAndFilteredCorrectly) {
  RawHints hints{41, 19, 2, SampleType::i16};
  auto a = open_source("synth:gradient", hints, 7);
  auto b = open_source("synth:gradient", hints, 7);
  RowArena ra, rb;
  const ImageSpec spec = a->spec();
  // Rows asked for in different chunks are the same rows.
  const std::byte* whole = a->rows(0, spec.height, ra);
  std::vector<std::byte> data(whole, whole + spec.total_bytes());
  for (std::int64_t y = 0; y < spec.height; ++y)
    ASSERT_EQ(0,
              std::memcmp(b->rows(y, 1, rb), data.data() + y * spec.row_bytes(), spec.row_bytes()));
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < data.size() / 2; ++i) nonzero += test::get(data, spec.type, i) != 0;
  EXPECT_GT(nonzero, data.size() / 2 * 9 / 10);

  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(3, 0);
  EngineOptions o;
  o.band_rows = 4;
  auto op = make_separable(spec, p, o);
  MemorySink sink(*op->output());
  Engine engine(*a, Backend{}, plan_bands(spec, {op.get()}, Backend{}, o));
  engine.run(*op, &sink);
  expect_matches(sink, test::reference(spec, data, p.filter.row, p.filter.col, p.border, 0), false,
                 "synthetic");
}

}  // namespace
}  // namespace ooc
