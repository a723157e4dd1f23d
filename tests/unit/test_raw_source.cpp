// The raw reader (open_source on headerless files) and synthetic inputs, through the public API:
// the hints against the file size (height inferred, sizes that are not whole rows refused),
// rows() / read_rows() giving exactly the file's bytes at every band position
// (the last partial band included), read_rows from several threads at once, a file cut short
// after opening, and synth: inputs deterministic for a seed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io/synthetic.hpp"
#include "ooc/error.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"
#include "scratch.hpp"

namespace {

using ooc::test::contains;
using ooc::test::random_bytes;
using ooc::test::TempDir;

namespace fs = std::filesystem;

void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

ooc::RawHints hints(std::int64_t width, int channels, ooc::SampleType type) {
  ooc::RawHints h;
  h.width = width;
  h.channels = channels;
  h.type = type;
  h.io = "mmap";  // the page-cache path; test_direct_io covers O_DIRECT
  return h;
}

// The Error open_source throws, or a failure when it throws none.
ooc::Error open_error(const std::string& path, const ooc::RawHints& h) {
  try {
    ooc::open_source(path, h);
  } catch (const ooc::Error& e) {
    return e;
  }
  ADD_FAILURE() << "open_source('" << path << "') did not throw";
  return ooc::Error(ooc::ErrorKind::usage, "");
}

constexpr std::byte kPoison{0xA5};
constexpr std::size_t kGuard = 64;  // poisoned bytes after a destination: must stay poisoned

TEST(RawSource, HeightIsInferredFromTheFileSize) {
  TempDir tmp("raw");
  struct Case {
    std::int64_t width, height;
    int channels;
    ooc::SampleType type;
  };
  for (const Case c : {Case{17, 5, 1, ooc::SampleType::u8}, Case{31, 9, 3, ooc::SampleType::u16},
                       Case{8, 1, 2, ooc::SampleType::f64}, Case{5, 12, 4, ooc::SampleType::i32}}) {
    // The size computed here from the dimensions, not from ImageSpec.
    const std::size_t bytes = static_cast<std::size_t>(c.width * c.height * c.channels) *
                              (c.type == ooc::SampleType::u8    ? 1
                               : c.type == ooc::SampleType::u16 ? 2
                               : c.type == ooc::SampleType::f64 ? 8
                                                                : 4);
    write_file(tmp / "in.raw", random_bytes(bytes, 1));
    auto src = ooc::open_source(tmp / "in.raw", hints(c.width, c.channels, c.type));
    EXPECT_EQ(src->spec().height, c.height);
    EXPECT_EQ(src->spec().width, c.width);
    EXPECT_EQ(src->spec().channels, c.channels);
    EXPECT_EQ(src->spec().type, c.type);
    // A height that agrees is taken; one that does not is an input error naming both.
    auto h = hints(c.width, c.channels, c.type);
    h.height = c.height;
    EXPECT_EQ(ooc::open_source(tmp / "in.raw", h)->spec().height, c.height);
    h.height = c.height + 1;
    const ooc::Error e = open_error(tmp / "in.raw", h);
    EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
    EXPECT_TRUE(contains(e.what(), "holds " + std::to_string(c.height) + " rows")) << e.what();
    EXPECT_TRUE(contains(e.what(), "--height says " + std::to_string(c.height + 1))) << e.what();
  }
}

TEST(RawSource, SizeThatIsNotWholeRowsIsRefused) {
  TempDir tmp("raw");
  // 84 bytes of u8 at width 13: 84 = 6 x 13 + 6. The divisors of 84 nearest 13 are 12 and 14
  // (1 away), 7 (6), 6 (7), 21 (8) and 4 (9): the message lists them in order.
  write_file(tmp / "in.raw", random_bytes(84, 2));
  ooc::Error e = open_error(tmp / "in.raw", hints(13, 1, ooc::SampleType::u8));
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(contains(e.what(), "is 84 bytes, not a multiple of the row size 13 bytes"))
      << e.what();
  EXPECT_TRUE(contains(e.what(), "widths that fit: 4, 6, 7, 12, 14, 21")) << e.what();

  // 2 channels of u16: rows of 4 x 2 x 2 = 16 bytes; 100 bytes is 6 rows and 4 bytes.
  write_file(tmp / "in.raw", random_bytes(100, 3));
  e = open_error(tmp / "in.raw", hints(4, 2, ooc::SampleType::u16));
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(contains(e.what(), "is 100 bytes, not a multiple of the row size 16 bytes"))
      << e.what();

  // One byte short of whole rows.
  write_file(tmp / "in.raw", random_bytes(10 * 24 - 1, 4));
  e = open_error(tmp / "in.raw", hints(6, 1, ooc::SampleType::f32));
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(contains(e.what(), "not a multiple of the row size 24 bytes")) << e.what();

  // Empty, and no width at all.
  write_file(tmp / "empty.raw", {});
  e = open_error(tmp / "empty.raw", hints(6, 1, ooc::SampleType::f32));
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(contains(e.what(), "is empty")) << e.what();
  e = open_error(tmp / "in.raw", hints(0, 1, ooc::SampleType::f32));
  EXPECT_EQ(e.kind(), ooc::ErrorKind::usage);
  EXPECT_TRUE(contains(e.what(), "needs --width")) << e.what();

  e = open_error(tmp / "missing.raw", hints(6, 1, ooc::SampleType::f32));
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(contains(e.what(), "does not exist")) << e.what();
}

// Every band of `band` rows (the last one shorter where band does not divide the height), read
// the three ways, against the bytes the test wrote.
void expect_bands(ooc::Source& src, const std::vector<std::byte>& file, std::int64_t band) {
  const ooc::ImageSpec& s = src.spec();
  const std::size_t row = s.row_bytes();
  for (std::int64_t y0 = 0; y0 < s.height; y0 += band) {
    const std::int64_t n = std::min(band, s.height - y0);
    SCOPED_TRACE("band " + std::to_string(band) + " at row " + std::to_string(y0));
    const std::byte* want = file.data() + static_cast<std::size_t>(y0) * row;
    const std::size_t bytes = static_cast<std::size_t>(n) * row;

    ooc::RowArena arena;
    const std::byte* got = src.rows(y0, n, arena);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(0, std::memcmp(got, want, bytes));

    std::vector<std::byte> dst(bytes + kGuard, kPoison);
    src.read_rows(y0, n, dst.data());
    EXPECT_EQ(0, std::memcmp(dst.data(), want, bytes));
    EXPECT_TRUE(std::all_of(dst.begin() + static_cast<std::ptrdiff_t>(bytes), dst.end(),
                            [](std::byte b) { return b == kPoison; }))
        << "read_rows wrote past the rows asked for";

    arena.release();
  }
}

TEST(RawSource, EveryBandReadsTheFilesBytes) {
  TempDir tmp("raw");
  struct Case {
    std::int64_t width, height;
    int channels;
    ooc::SampleType type;
  };
  // Row sizes that are not multiples of a page (mapped windows start inside pages), one that is.
  for (const Case c :
       {Case{1001, 37, 1, ooc::SampleType::u8}, Case{333, 29, 3, ooc::SampleType::u16},
        Case{77, 41, 2, ooc::SampleType::f64}, Case{1024, 9, 1, ooc::SampleType::f32}}) {
    const ooc::ImageSpec spec{c.width, c.height, c.channels, c.type};
    SCOPED_TRACE(spec.describe());
    const auto file = random_bytes(spec.total_bytes(), static_cast<unsigned>(c.width));
    write_file(tmp / "in.raw", file);
    auto src = ooc::open_source(tmp / "in.raw", hints(c.width, c.channels, c.type));
    ASSERT_EQ(src->spec().height, c.height);
    // 1 row, bands that leave a short last band, one band of the whole image, one too tall.
    for (const std::int64_t band :
         {std::int64_t{1}, std::int64_t{4}, std::int64_t{7}, c.height, c.height + 5})
      expect_bands(*src, file, band);
  }
}

TEST(RawSource, ReadRowsFromSeveralThreadsAtOnce) {
  TempDir tmp("raw");
  const ooc::ImageSpec spec{523, 211, 2, ooc::SampleType::u16};
  const auto file = random_bytes(spec.total_bytes(), 11);
  write_file(tmp / "in.raw", file);
  auto src = ooc::open_source(tmp / "in.raw", hints(spec.width, spec.channels, spec.type));
  const std::size_t row = spec.row_bytes();
  std::atomic<int> wrong{0}, reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) + 100);
      std::uniform_int_distribution<std::int64_t> first(0, spec.height - 1);
      std::vector<std::byte> dst;
      for (int i = 0; i < 200; ++i) {
        const std::int64_t y0 = first(rng);
        const std::int64_t n =
            std::uniform_int_distribution<std::int64_t>(1, spec.height - y0)(rng);
        const std::size_t bytes = static_cast<std::size_t>(n) * row;
        dst.assign(bytes, kPoison);
        src->read_rows(y0, n, dst.data());
        if (std::memcmp(dst.data(), file.data() + static_cast<std::size_t>(y0) * row, bytes) != 0)
          ++wrong;
        ++reads;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(reads.load(), 8 * 200);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(RawSource, FileCutShortAfterOpeningIsAnErrorNotACrash) {
  TempDir tmp("raw");
  const ooc::ImageSpec spec{256, 64, 1, ooc::SampleType::f32};
  const auto file = random_bytes(spec.total_bytes(), 12);
  for (const std::string io : {"mmap", "direct"}) {
    SCOPED_TRACE(io);
    write_file(tmp / "in.raw", file);
    auto h = hints(spec.width, spec.channels, spec.type);
    h.io = io;
    auto src = ooc::open_source(tmp / "in.raw", h);
    if (io == "direct" && src->io_method().rfind("direct", 0) != 0) continue;  // refused here
    fs::resize_file(tmp / "in.raw", spec.row_bytes() * 20 + 100);  // 20 rows and a bit left
    // Rows still in the file read as before.
    std::vector<std::byte> dst(spec.row_bytes() * 20, kPoison);
    src->read_rows(0, 20, dst.data());
    EXPECT_EQ(0, std::memcmp(dst.data(), file.data(), dst.size()));
    // Rows past the new end: an io Error saying so.
    dst.assign(spec.row_bytes() * 10, kPoison);
    try {
      src->read_rows(40, 10, dst.data());
      ADD_FAILURE() << "read_rows past the end of a truncated file did not throw";
    } catch (const ooc::Error& e) {
      EXPECT_EQ(e.kind(), ooc::ErrorKind::io);
      EXPECT_TRUE(contains(e.what(), "became shorter while reading")) << e.what();
      EXPECT_TRUE(contains(e.what(), tmp / "in.raw")) << e.what();
    }
    // A row half in the file is as short as one wholly past it.
    EXPECT_THROW(src->read_rows(20, 1, dst.data()), ooc::Error);
  }
}

TEST(SyntheticSource, SameSeedSameBytesWhateverTheSplit) {
  ooc::RawHints h;
  h.width = 97;
  h.height = 53;
  h.channels = 3;
  for (const ooc::SampleType type :
       {ooc::SampleType::u8, ooc::SampleType::i16, ooc::SampleType::f32, ooc::SampleType::f64}) {
    for (const std::string pattern : {"noise", "gradient", "checker", "gaussian-spots"}) {
      SCOPED_TRACE(pattern + " " + std::string(ooc::name(type)));
      h.type = type;
      auto a = ooc::open_source("synth:" + pattern, h, 42);
      auto b = ooc::open_source("synth:" + pattern, h, 42);
      const ooc::ImageSpec& s = a->spec();
      ASSERT_EQ(s.height, 53);
      const std::size_t row = s.row_bytes();
      std::vector<std::byte> whole(s.total_bytes(), kPoison);
      a->read_rows(0, s.height, whole.data());
      // Row by row from another source of the same seed, from the row generator, and in bands
      // read by several threads at once: the same bytes.
      std::vector<std::byte> one(row);
      for (std::int64_t y = 0; y < s.height; ++y) {
        ooc::RowArena arena;
        ASSERT_EQ(0, std::memcmp(b->rows(y, 1, arena), whole.data() + y * row, row)) << y;
        ooc::fill_synthetic_row(ooc::parse_pattern(pattern), 42, y, s.width, s.channels, s.type,
                                one.data());
        ASSERT_EQ(0, std::memcmp(one.data(), whole.data() + y * row, row)) << y;
      }
      std::vector<std::byte> banded(s.total_bytes(), kPoison);
      std::vector<std::thread> threads;
      for (std::int64_t y0 = 0; y0 < s.height; y0 += 10)
        threads.emplace_back([&, y0] {
          b->read_rows(y0, std::min<std::int64_t>(10, s.height - y0), banded.data() + y0 * row);
        });
      for (auto& t : threads) t.join();
      EXPECT_TRUE(banded == whole);
      // Another seed, another image (gradient and checker too: their noise part differs).
      auto c = ooc::open_source("synth:" + pattern, h, 43);
      std::vector<std::byte> other(s.total_bytes());
      c->read_rows(0, s.height, other.data());
      EXPECT_FALSE(other == whole);
    }
  }
}

TEST(SyntheticSource, CheckerHasItsCells) {
  // checker: 0.8 x base + 0.2 x noise, base 0.75 in cells where (x/64 + y/64 + c) is odd and
  // 0.05 elsewhere; f32 values are then in [0.6, 0.8) and [0.04, 0.24).
  ooc::RawHints h;
  h.width = 150;
  h.height = 130;
  h.channels = 2;
  h.type = ooc::SampleType::f32;
  auto src = ooc::open_source("synth:checker", h, 5);
  std::vector<float> v(static_cast<std::size_t>(h.width * h.height * h.channels));
  src->read_rows(0, h.height, reinterpret_cast<std::byte*>(v.data()));
  int bad = 0;
  for (std::int64_t y = 0; y < h.height; ++y)
    for (std::int64_t x = 0; x < h.width; ++x)
      for (int c = 0; c < h.channels; ++c) {
        const float f = v[static_cast<std::size_t>((y * h.width + x) * h.channels + c)];
        const bool bright = ((x / 64 + y / 64 + c) & 1) != 0;
        const bool ok = bright ? f >= 0.6f && f < 0.8f : f >= 0.04f && f < 0.24f;
        if (!ok && ++bad < 5) ADD_FAILURE() << "(" << y << ", " << x << ", " << c << ") = " << f;
      }
  EXPECT_EQ(bad, 0);
}

TEST(SyntheticSource, NeedsBothSizesAndAKnownPattern) {
  ooc::RawHints h;
  h.width = 10;
  EXPECT_THROW(ooc::open_source("synth:noise", h), ooc::Error);  // no height
  h.height = 10;
  try {
    ooc::open_source("synth:plaid", h);
    ADD_FAILURE() << "an unknown pattern was taken";
  } catch (const ooc::Error& e) {
    EXPECT_EQ(e.kind(), ooc::ErrorKind::usage);
    EXPECT_TRUE(contains(e.what(), "plaid")) << e.what();
  }
  h.type = ooc::SampleType::u16;
  EXPECT_THROW(ooc::open_source("synth:low-rank", h), ooc::Error);  // real matrices only
}

}  // namespace
