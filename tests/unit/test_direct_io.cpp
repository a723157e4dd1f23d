// Direct I/O (--io direct) against the page-cache path, byte for byte: the O_DIRECT reader over
// every alignment of offset, length and destination (the last partial block included, several
// threads at once), raw and .npy sources read in bands of odd heights, --io auto's choice, and the
// O_DIRECT sink (raw, .npy, a stride, parts sharing boundary blocks, a resumed temporary).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io/direct.hpp"
#include "io/npy.hpp"
#include "ooc/io.hpp"
#include "scratch.hpp"

namespace {

using ooc::test::random_bytes;
using ooc::test::TempDir;

namespace fs = std::filesystem;

void write_file(const std::string& path, const void* p, std::size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> v((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(v.size());
  std::memcpy(out.data(), v.data(), v.size());
  return out;
}

// Takes the file's pages out of the page cache (written back first), so that it reads cold.
void drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

bool direct_supported(const std::string& dir) {
  const std::string probe = dir + "/probe";
  write_file(probe, "x", 1);
  const int fd = ooc::direct::open_direct(probe, O_RDONLY);
  if (fd >= 0) ::close(fd);
  fs::remove(probe);
  return fd >= 0;
}

#define SKIP_WITHOUT_DIRECT(tmp) \
  if (!direct_supported(tmp.dir.string())) GTEST_SKIP() << "/var/tmp refuses O_DIRECT"

TEST(DirectIo, ReaderEveryAlignmentAndThreads) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  // Not a multiple of the block: the last block is partial. Larger than two requests.
  const std::size_t n = 2 * ooc::direct::kRequest + 3 * 4096 + 777;
  const auto data = random_bytes(n, 7);
  write_file(tmp / "f", data.data(), n);
  drop_cache(tmp / "f");
  ooc::direct::Reader reader(ooc::direct::open_direct(tmp / "f", O_RDONLY), tmp / "f", 3);
  std::vector<std::byte> buf(n + 3 * 4096);
  // Destinations lined up with the file's blocks and not; ranges inside one block, across many,
  // at either end of the file.
  const std::size_t offsets[] = {0,    1,      511,          512,     4095, 4096,
                                 4097, 100000, n - 4096 - 5, n - 777, n - 1};
  const std::size_t lengths[] = {1, 3, 512, 4096, 4097, 8191, 1 << 20, ooc::direct::kRequest + 5,
                                 n};
  auto* base = reinterpret_cast<std::byte*>(
      ooc::direct::align_up(reinterpret_cast<std::uintptr_t>(buf.data())));
  for (std::size_t off : offsets)
    for (std::size_t len : lengths)
      for (std::size_t shift : {std::size_t{0}, off % 4096, std::size_t{13}}) {
        len = std::min(len, n - off);
        std::byte* dst = base + shift;
        std::memset(dst, 0xAB, len);
        reader.read(off, len, dst);
        ASSERT_EQ(std::memcmp(dst, data.data() + off, len), 0)
            << "offset " << off << " length " << len << " shift " << shift;
      }
  // Several threads at once (the GPU staging path), random ranges.
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<std::byte> mine(n);
      for (int i = 0; i < 40; ++i) {
        const std::size_t off = rng() % n,
                          len = 1 + rng() % std::min<std::size_t>(n - off, 3 << 20);
        const std::size_t shift = rng() % 64;
        reader.read(off, len, mine.data() + shift);
        if (std::memcmp(mine.data() + shift, data.data() + off, len) != 0) ++bad;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// Ranges read ahead are handed out only when asked for with the same offset and length; their
// known head comes from the caller whether it knows more or less than the read ahead assumed; a
// range asked for out of turn drops what was read ahead; a plain read drops it too.
TEST(DirectIo, ReadAheadGivesTheBytesOfTheFileWhateverIsAskedNext) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  const std::size_t n = 3 * ooc::direct::kRequest + 5 * 4096 + 321;
  const auto data = random_bytes(n, 11);
  write_file(tmp / "f", data.data(), n);
  drop_cache(tmp / "f");
  ooc::direct::Reader reader(ooc::direct::open_direct(tmp / "f", O_RDONLY), tmp / "f", 2);
  std::mt19937_64 rng(5);
  int checked = 0;
  for (int round = 0; round < 60; ++round) {
    const std::size_t off = rng() % (n - 1),
                      len = 1 + rng() % std::min<std::size_t>(n - off, 5 << 20);
    const std::size_t assumed = rng() % (len + 1);  // known bytes the read ahead leaves out
    std::size_t known = rng() % (len + 1);          // known bytes when asked for
    const int what = static_cast<int>(rng() % 4);
    reader.read_ahead(off, len, assumed);
    if (what == 1) {  // asked for something else first
      const std::size_t o2 = rng() % (n - 1), l2 = 1 + rng() % (n - o2);
      const std::byte* p = nullptr;
      auto held = reader.read_pooled(o2, l2, &p);
      ASSERT_EQ(std::memcmp(p, data.data() + o2, l2), 0) << "round " << round;
    } else if (what == 2) {  // a plain read
      std::vector<std::byte> v(4096 + 7);
      reader.read(off, std::min<std::size_t>(v.size(), len), v.data());
    } else if (what == 3) {
      known = assumed;  // the usual case: the halo the read ahead assumed
    }
    // The known head, poisoned where the caller would not know it.
    std::vector<std::byte> head(len, std::byte{0x5A});
    std::memcpy(head.data(), data.data() + off, known);
    const std::byte* p = nullptr;
    auto held = reader.read_pooled(off, len, &p, head.data(), known);
    ASSERT_EQ(std::memcmp(p, data.data() + off, len), 0)
        << "round " << round << " offset " << off << " length " << len << " assumed " << assumed
        << " known " << known << " case " << what;
    ++checked;
  }
  EXPECT_EQ(checked, 60);
}

TEST(DirectIo, ReaderRefusesAShorterFile) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  const auto data = random_bytes(10000, 3);
  write_file(tmp / "f", data.data(), data.size());
  ooc::direct::Reader reader(ooc::direct::open_direct(tmp / "f", O_RDONLY), tmp / "f");
  ASSERT_EQ(::truncate((tmp / "f").c_str(), 5000), 0);
  std::vector<std::byte> dst(10000);
  try {
    reader.read(0, 10000, dst.data());
    FAIL() << "no error";
  } catch (const ooc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("became shorter"), std::string::npos) << e.what();
    EXPECT_EQ(e.kind(), ooc::ErrorKind::io);
  }
}

// Every row of `src` read in bands of `band` rows (overlapping by `halo`), by rows() and by
// read_rows() from several threads, equals the file's rows.
void expect_rows(ooc::Source& src, const std::vector<std::byte>& image, std::int64_t band,
                 std::int64_t halo) {
  const ooc::ImageSpec& s = src.spec();
  const std::size_t row = s.row_bytes();
  ooc::RowArena arena;
  for (std::int64_t y = 0; y < s.height; y += band) {
    const std::int64_t y0 = std::max<std::int64_t>(0, y - halo);
    const std::int64_t y1 = std::min(s.height, y + band + halo);
    const std::byte* p = src.rows(y0, y1 - y0, arena);
    ASSERT_EQ(std::memcmp(p, image.data() + y0 * row, (y1 - y0) * row), 0) << "rows at " << y0;
    arena.release();
  }
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::byte> dst(static_cast<std::size_t>(band + 1) * row + 7);
      for (std::int64_t y = t; y < s.height; y += band * 3) {
        const std::int64_t n = std::min<std::int64_t>(band + 1, s.height - y);
        src.read_rows(y, n, dst.data() + 7 * (t == 1));
        if (std::memcmp(dst.data() + 7 * (t == 1), image.data() + y * row, n * row) != 0) ++bad;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(DirectIo, RawAndNpySourcesEqualTheMappedOnes) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  struct Case {
    std::int64_t width, height;
    int channels;
    ooc::SampleType type;
  };
  // Rows that are not multiples of 512 bytes; one image a multiple of the block, others not.
  for (const Case c :
       {Case{1001, 3001, 1, ooc::SampleType::u16}, Case{513, 700, 3, ooc::SampleType::f32},
        Case{4096, 300, 1, ooc::SampleType::u8}, Case{77, 5000, 2, ooc::SampleType::f64}}) {
    const ooc::ImageSpec spec{c.width, c.height, c.channels, c.type};
    const auto image = random_bytes(spec.total_bytes(), static_cast<unsigned>(c.width));
    for (const bool npy : {false, true}) {
      SCOPED_TRACE(spec.describe() + (npy ? " npy" : " raw"));
      const std::string path = tmp / (npy ? "in.npy" : "in.raw");
      {
        std::ofstream f(path, std::ios::binary);
        if (npy) f << ooc::npy_header(spec);
        f.write(reinterpret_cast<const char*>(image.data()),
                static_cast<std::streamsize>(image.size()));
      }
      drop_cache(path);
      ooc::RawHints h;
      h.width = c.width;
      h.channels = c.channels;
      h.type = c.type;
      h.io = "direct";
      auto direct = ooc::open_source(path, h);
      EXPECT_EQ(direct->io_method(), "direct");
      h.io = "mmap";
      auto mapped = ooc::open_source(path, h);
      EXPECT_EQ(mapped->io_method(), "mmap");
      for (std::int64_t band : {1, 37, 256}) {
        expect_rows(*direct, image, band, band == 37 ? 5 : 0);
        expect_rows(*mapped, image, band, 0);
      }
    }
  }
}

TEST(DirectIo, BigEndianNpyIsSwapped) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  const ooc::ImageSpec spec{333, 401, 1, ooc::SampleType::u16};
  const auto le = random_bytes(spec.total_bytes(), 5);
  auto be = le;
  for (std::size_t i = 0; i + 1 < be.size(); i += 2) std::swap(be[i], be[i + 1]);
  std::string header = ooc::npy_header(spec);
  header.replace(header.find("<u2"), 3, ">u2");
  std::ofstream(tmp / "be.npy", std::ios::binary)
      .write(header.data(), static_cast<std::streamsize>(header.size()))
      .write(reinterpret_cast<const char*>(be.data()), static_cast<std::streamsize>(be.size()));
  ooc::RawHints h;
  h.io = "direct";
  auto src = ooc::open_source(tmp / "be.npy", h);
  EXPECT_EQ(src->io_method(), "direct");
  expect_rows(*src, le, 50, 3);
}

TEST(DirectIo, AutoGoesDirectOnlyForColdLargeFiles) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  const auto image = random_bytes(4 << 20, 9);
  write_file(tmp / "in.raw", image.data(), image.size());
  ooc::RawHints h;
  h.width = 1024;
  h.type = ooc::SampleType::u8;
  h.io = "auto";
  h.io_auto_bytes = 1 << 20;
  drop_cache(tmp / "in.raw");
  EXPECT_EQ(ooc::open_source(tmp / "in.raw", h)->io_method(), "direct");
  (void)read_file(tmp / "in.raw");  // now cached
  EXPECT_EQ(ooc::open_source(tmp / "in.raw", h)->io_method(), "mmap");
  drop_cache(tmp / "in.raw");
  h.io_auto_bytes = 8 << 20;  // cold but small
  EXPECT_EQ(ooc::open_source(tmp / "in.raw", h)->io_method(), "mmap");
  h.io = "sideways";
  EXPECT_THROW(ooc::open_source(tmp / "in.raw", h), ooc::Error);
}

// Writes `image` through a sink in bands of `band` rows, from row `from` to `to`, with a row
// stride wider than the row every other band.
void write_bands(ooc::Sink& sink, const std::vector<std::byte>& image, std::int64_t from,
                 std::int64_t to, std::int64_t band) {
  const std::size_t row = sink.spec().row_bytes();
  std::vector<std::byte> strided;
  int k = 0;
  for (std::int64_t y = from; y < to; y += band, ++k) {
    const std::int64_t n = std::min(band, to - y);
    if (k % 2 == 0) {
      sink.write_rows(y, n, image.data() + y * row, row);
    } else {
      const std::size_t stride = row + 24;
      strided.assign(n * stride, std::byte{0x5A});
      for (std::int64_t i = 0; i < n; ++i)
        std::memcpy(strided.data() + i * stride, image.data() + (y + i) * row, row);
      sink.write_rows(y, n, strided.data(), stride);
    }
  }
}

TEST(DirectIo, SinkWritesTheSameBytes) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  for (const ooc::ImageSpec spec : {ooc::ImageSpec{1001, 2999, 1, ooc::SampleType::u16},
                                    ooc::ImageSpec{4096, 1025, 1, ooc::SampleType::u8},
                                    ooc::ImageSpec{17, 3, 3, ooc::SampleType::f32}}) {
    const auto image = random_bytes(spec.total_bytes(), 11);
    for (const char* ext : {".raw", ".npy"}) {
      SCOPED_TRACE(spec.describe() + ext);
      ooc::SinkOptions o;
      o.io = "direct";
      const std::string out = tmp / (std::string("out") + ext);
      fs::remove(out);
      {
        auto sink = ooc::create_sink(out, spec, "", o);
        EXPECT_EQ(sink->io_method(), "direct");
        write_bands(*sink, image, 0, spec.height, 333);
        EXPECT_FALSE(fs::exists(out));  // only complete outputs appear
        sink->commit();
      }
      const auto got = read_file(out);
      const std::string header = std::string(ext) == ".npy" ? ooc::npy_header(spec) : "";
      ASSERT_EQ(got.size(), header.size() + image.size());
      EXPECT_EQ(std::memcmp(got.data(), header.data(), header.size()), 0);
      EXPECT_EQ(std::memcmp(got.data() + header.size(), image.data(), image.size()), 0);
      EXPECT_FALSE(fs::exists(out + ".partial"));
    }
  }
  // A sink destroyed without commit leaves nothing.
  const ooc::ImageSpec spec{1000, 100, 1, ooc::SampleType::f32};
  ooc::SinkOptions o;
  o.io = "direct";
  {
    auto sink = ooc::create_sink(tmp / "gone.raw", spec, "", o);
    write_bands(*sink, random_bytes(spec.total_bytes(), 1), 0, 50, 7);
  }
  EXPECT_FALSE(fs::exists(tmp / "gone.raw"));
  EXPECT_FALSE(fs::exists(tmp / "gone.raw.partial"));
}

TEST(DirectIo, PartsShareBoundaryBlocksAndResumeContinues) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  // Rows of 2002 bytes: every part boundary falls inside a block that two parts share.
  const ooc::ImageSpec spec{1001, 3001, 1, ooc::SampleType::u16};
  const auto image = random_bytes(spec.total_bytes(), 13);
  const std::string out = tmp / "p.npy";
  const std::int64_t cuts[] = {0, 777, 1500, 2222, 3001};
  std::vector<std::thread> parts;
  for (int i = 0; i < 4; ++i)
    parts.emplace_back([&, i] {
      ooc::SinkOptions o;
      o.io = "direct";
      o.mode = ooc::OutputMode::shared;
      o.row_begin = cuts[i];
      o.row_end = cuts[i + 1];
      auto sink = ooc::create_sink(out, spec, "", o);
      write_bands(*sink, image, cuts[i], cuts[i + 1], 101);
      sink->commit();  // a part keeps the shared temporary
    });
  for (auto& t : parts) t.join();
  auto got = read_file(out + ".partial");
  const std::string header = ooc::npy_header(spec);
  ASSERT_EQ(got.size(), header.size() + image.size());
  EXPECT_EQ(std::memcmp(got.data() + header.size(), image.data(), image.size()), 0);
  fs::remove(out + ".partial");

  // A run stopped at row 1234 (kept), then resumed from there.
  const std::string raw = tmp / "r.raw";
  ooc::SinkOptions o;
  o.io = "direct";
  {
    auto sink = ooc::create_sink(raw, spec, "", o);
    write_bands(*sink, image, 0, 1234, 200);
    EXPECT_LE(sink->durable_end(0, 1234), 1234);
    sink->keep();
    EXPECT_EQ(sink->durable_end(0, 1234), 1234);
  }
  o.mode = ooc::OutputMode::resume;
  {
    auto sink = ooc::create_sink(raw, spec, "", o);
    write_bands(*sink, image, 1234, spec.height, 200);
    sink->commit();
  }
  got = read_file(raw);
  ASSERT_EQ(got.size(), image.size());
  EXPECT_EQ(std::memcmp(got.data(), image.data(), image.size()), 0);
}

TEST(DirectIo, AutoWritesDirectOnlyForLargeOutputs) {
  TempDir tmp("direct");
  SKIP_WITHOUT_DIRECT(tmp);
  const ooc::ImageSpec spec{1024, 1024, 1, ooc::SampleType::u8};
  ooc::SinkOptions o;
  o.io_auto_bytes = 1 << 19;
  EXPECT_EQ(ooc::create_sink(tmp / "a.raw", spec, "", o)->io_method(), "direct");
  o.io_auto_bytes = 2 << 20;
  EXPECT_EQ(ooc::create_sink(tmp / "b.raw", spec, "", o)->io_method(), "buffered");
  o.io = "mmap";
  o.io_auto_bytes = 1;
  EXPECT_EQ(ooc::create_sink(tmp / "c.raw", spec, "", o)->io_method(), "buffered");
}

}  // namespace
