// The TIFF reader and writer through the library API, in the patterns the pipeline uses them:
// rows handed to the writer in bands of any height (bands ending inside strips and tiles), and
// rows read back by many threads at once over overlapping ranges, as the GPU staging reads
// (read_rows) and as the serial read stage reads (rows). Every layout must give back the exact
// samples written; a reader that deadlocks fails by the test's timeout.
#include <gtest/gtest.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ooc/io.hpp"

namespace fs = std::filesystem;

namespace {

struct Layout {
  const char* name;
  ooc::SinkOptions options;
};

std::vector<Layout> layouts() {
  auto make = [](const char* name, std::int64_t tile, const char* compress) {
    ooc::SinkOptions o;
    o.format = "tiff";
    o.tile = tile;
    o.compress = compress;
    return Layout{name, o};
  };
  return {make("strips", 0, "none"),
          make("tiles16", 16, "none"),
          make("strips_lzw", 0, "lzw"),
          make("tiles32_zstd", 32, "zstd"),
          make("strips_deflate", 0, "deflate"),
          make("tiles48_packbits", 48, "packbits")};
}

class TiffRoundTrip : public ::testing::TestWithParam<std::tuple<ooc::SampleType, int, int>> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ooc_tiff_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_P(TiffRoundTrip, BandsOfAnyHeightInAndConcurrentReadsOutGiveTheSamplesBack) {
  const auto [type, channels, layout_index] = GetParam();
  const Layout layout = layouts()[static_cast<std::size_t>(layout_index)];
  // Wide enough for strips of a few rows (about 1 MiB each), tall enough for many bands.
  const ooc::ImageSpec spec{40000 / static_cast<std::int64_t>(ooc::sample_bytes(type)) + 3, 157,
                            channels, type};
  std::vector<std::byte> image(spec.total_bytes());
  std::mt19937_64 rng(static_cast<unsigned>(layout_index * 131 + channels * 7 + int(type)));
  for (auto& b : image) b = static_cast<std::byte>(rng() | 1);  // random, never all zero
  const std::size_t row = spec.row_bytes();

  const fs::path path = dir_ / "t.tif";
  {
    auto sink = ooc::create_sink(path.string(), spec, "", layout.options);
    // Bands of 1..23 rows: most end inside a strip or a tile.
    for (std::int64_t y = 0, k = 0; y < spec.height; ++k) {
      const std::int64_t n = std::min<std::int64_t>(1 + (k * 7) % 23, spec.height - y);
      sink->write_rows(y, n, image.data() + y * row, row);
      y += n;
    }
    sink->commit();
  }

  auto source = ooc::open_source(path.string(), ooc::RawHints{});
  ASSERT_EQ(source->spec().width, spec.width);
  ASSERT_EQ(source->spec().height, spec.height);
  ASSERT_EQ(source->spec().channels, spec.channels);
  ASSERT_EQ(source->spec().type, spec.type);

  // Serial bands through rows(), as the read stage reads them.
  ooc::RowArena arena;
  for (std::int64_t y = 0; y < spec.height; y += 19) {
    const std::int64_t n = std::min<std::int64_t>(19, spec.height - y);
    const std::byte* p = source->rows(y, n, arena);
    ASSERT_EQ(std::memcmp(p, image.data() + y * row, n * row), 0)
        << layout.name << ": rows " << y << ".." << y + n;
    arena.release();
  }
  // Overlapping ranges from many threads at once, into poisoned buffers.
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  for (int i = 0; i < 64; ++i) {
    const auto y0 = static_cast<std::int64_t>(rng() % spec.height);
    const auto n =
        1 + static_cast<std::int64_t>(rng() % std::min<std::int64_t>(40, spec.height - y0));
    ranges.emplace_back(y0, n);
  }
  std::vector<int> bad(ranges.size(), 0);
  tbb::parallel_for(std::size_t{0}, ranges.size(), [&](std::size_t i) {
    const auto [y0, n] = ranges[i];
    std::vector<std::byte> got(static_cast<std::size_t>(n) * row, std::byte{0xA5});
    source->read_rows(y0, n, got.data());
    bad[i] = std::memcmp(got.data(), image.data() + y0 * row, got.size()) != 0;
  });
  for (std::size_t i = 0; i < ranges.size(); ++i)
    EXPECT_EQ(bad[i], 0) << layout.name << ": concurrent read of rows " << ranges[i].first << " + "
                         << ranges[i].second;
}

std::string name(const ::testing::TestParamInfo<TiffRoundTrip::ParamType>& info) {
  const auto [type, channels, layout] = info.param;
  return std::string(ooc::name(type)) + "_c" + std::to_string(channels) + "_" +
         layouts()[static_cast<std::size_t>(layout)].name;
}

INSTANTIATE_TEST_SUITE_P(
    TypesChannelsLayouts, TiffRoundTrip,
    ::testing::Combine(::testing::Values(ooc::SampleType::u8, ooc::SampleType::u16,
                                         ooc::SampleType::i32, ooc::SampleType::f32,
                                         ooc::SampleType::f64),
                       ::testing::Values(1, 3), ::testing::Range(0, 6)),
    name);

}  // namespace
