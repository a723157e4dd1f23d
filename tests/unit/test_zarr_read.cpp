// The Zarr reader from several threads at once: random row ranges read concurrently (sharing and
// evicting cached rows of chunks) and overlapping bands read in order must all equal the image
// the store was written from, missing chunks included.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io/formats.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/io.hpp"

namespace {

namespace fs = std::filesystem;

struct Store {
  fs::path dir;
  std::vector<std::uint16_t> image;  // H x W x C
  ~Store() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// H x W x C u16 in chunks (ch, cw, cc), blosc lz4; every fifth chunk left out (fill 5). first:
// stored (C, H, W) in chunks (cc, ch, cw), NGFF's order.
void make_store(Store& s, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t ch,
                std::int64_t cw, std::int64_t cc, bool first = false) {
  char name[] = "/tmp/ooc-test-zarr-XXXXXX";
  ASSERT_NE(::mkdtemp(name), nullptr);
  s.dir = name;
  ooc::zarr::ArrayMeta m;
  m.shape = {h, w, c};
  m.chunks = {ch, cw, cc};
  if (first) {
    m.shape = {c, h, w};
    m.chunks = {cc, ch, cw};
    m.c_axis = 0;
    m.y_axis = 1;
  }
  m.type = ooc::SampleType::u16;
  m.codec = ooc::zarr::codec_from_option("blosc", -1);
  m.fill = 5;
  m.fill_json = std::to_string(5);  // a literal trips GCC 12's -Wrestrict false positive
  std::ofstream(s.dir / ".zarray") << ooc::zarr::array_json(m);
  std::mt19937 rng(7);
  s.image.resize(static_cast<std::size_t>(h * w * c));
  for (auto& v : s.image) v = static_cast<std::uint16_t>(1 + rng() % 60000);
  int k = 0;
  for (std::int64_t r = 0; r * ch < h; ++r)
    for (std::int64_t q = 0; q * cw < w; ++q)
      for (std::int64_t p = 0; p * cc < c; ++p) {
        std::vector<std::uint16_t> chunk(static_cast<std::size_t>(ch * cw * cc), 0);
        const bool missing = k++ % 5 == 3;
        for (std::int64_t y = 0; y < ch; ++y)
          for (std::int64_t x = 0; x < cw; ++x)
            for (std::int64_t z = 0; z < cc; ++z) {
              const std::int64_t iy = r * ch + y, ix = q * cw + x, iz = p * cc + z;
              if (iy >= h || ix >= w || iz >= c) continue;
              auto& v = s.image[static_cast<std::size_t>((iy * w + ix) * c + iz)];
              if (missing) v = 5;
              chunk[static_cast<std::size_t>(first ? (z * ch + y) * cw + x
                                                   : (y * cw + x) * cc + z)] = v;
            }
        if (missing) continue;
        const auto bytes = ooc::zarr::compress(m.codec, reinterpret_cast<std::byte*>(chunk.data()),
                                               chunk.size() * 2, 2);
        std::ofstream(s.dir / ooc::zarr::chunk_key(m, r, q, p), std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
      }
}

void concurrent_readers_and_overlapping_bands(bool channels_first) {
  Store s;
  const std::int64_t h = 203, w = 77, c = 3;
  make_store(s, h, w, c, 9, 20, 2, channels_first);
  auto source = ooc::open_source(s.dir.string(), ooc::RawHints{});
  ASSERT_EQ(source->spec().width, w);
  ASSERT_EQ(source->spec().height, h);
  ASSERT_EQ(source->spec().channels, c);
  EXPECT_GT(source->buffer_bytes(16, 2), 0u);
  const std::size_t row = source->spec().row_bytes();
  const auto expect_rows = [&](std::int64_t y0, std::int64_t n, const std::byte* got) {
    return std::memcmp(got, s.image.data() + y0 * w * c, static_cast<std::size_t>(n) * row) == 0;
  };

  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<std::byte> buf(static_cast<std::size_t>(h) * row);
      for (int i = 0; i < 150; ++i) {
        const std::int64_t y0 = rng() % h, n = 1 + rng() % std::min<std::int64_t>(40, h - y0);
        source->read_rows(y0, n, buf.data());
        if (!expect_rows(y0, n, buf.data())) ++bad[static_cast<std::size_t>(t)];
      }
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[static_cast<std::size_t>(t)], 0) << "thread " << t;

  // Bands of 10 rows with a halo of 6, as the pipeline asks for them.
  ooc::RowArena arena;
  for (std::int64_t y = 0; y < h; y += 10) {
    const std::int64_t a = std::max<std::int64_t>(0, y - 6), b = std::min(h, y + 16);
    EXPECT_TRUE(expect_rows(a, b - a, source->rows(a, b - a, arena))) << "band at " << y;
    arena.release();
  }
}

TEST(ZarrRead, ConcurrentReadersAndOverlappingBands) {
  concurrent_readers_and_overlapping_bands(false);
}

TEST(ZarrRead, ChannelsFirstConcurrentReadersAndOverlappingBands) {
  concurrent_readers_and_overlapping_bands(true);
}

TEST(ZarrRead, DetectsStoresAndNamesThem) {
  Store s;
  make_store(s, 12, 10, 1, 5, 4, 1);
  EXPECT_EQ(ooc::detect_format(s.dir.string()), "zarr");
  auto source = ooc::open_source(s.dir.string(), ooc::RawHints{});
  EXPECT_NE(source->layout().find("zarr v2, chunks 5 x 4"), std::string::npos) << source->layout();
  ooc::RawHints wrong;
  wrong.type = ooc::SampleType::f32;
  wrong.type_given = true;
  EXPECT_THROW(ooc::open_source(s.dir.string(), wrong), ooc::Error);
}

TEST(ZarrRead, IdentityFollowsChunkFiles) {
  Store s;
  make_store(s, 12, 10, 1, 5, 4, 1);
  const std::string a = ooc::zarr_input_identity(s.dir.string(), -1);
  EXPECT_EQ(a, ooc::zarr_input_identity(s.dir.string(), -1));
  // A chunk replaced by a rename, as zarr-python writes them: the directory's own times may
  // not change within their resolution, the file's inode does.
  const fs::path chunk = s.dir / "1.1.0";
  fs::copy_file(chunk, s.dir / "tmp");
  fs::rename(s.dir / "tmp", chunk);
  EXPECT_NE(a, ooc::zarr_input_identity(s.dir.string(), -1));
}

}  // namespace
