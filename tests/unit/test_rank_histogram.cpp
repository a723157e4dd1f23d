// The CUDA sliding-histogram rank filter's algorithm (kernels/cuda/rank_histogram.hpp), run on the
// CPU: the kernel's own run_task over every task and thread, with counts kept as the kernel keeps
// them (rh::Counts over regions of one block's poisoned memory), on bands staged as the engine
// stages them (rows of the constant border left unset, here poisoned), against the CPU rank
// filter, rectangles and footprints. Selections, so the bytes must be identical. The GPU itself is
// checked by test_gpu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/morphology/rank_histogram.hpp"
#include "ooc/engine.hpp"
#include "ooc/ops/rank.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

namespace rh = cuda::rank_hist;

// One emulated block's counts, laid out as the kernel's shared memory and poisoned at the start:
// every task must zero what it counts in.
struct HostBlock {
  std::vector<unsigned> words;
  int region = 0;
  HostBlock(int region_words) : words(std::size_t(region_words) * rh::kThreads, 0xA5A5A5A5u) {
    region = region_words;
  }
  template <class C>
  rh::Counts<C> lane(int l) {
    return rh::Counts<C>{words.data() + std::size_t(l) * std::size_t(region)};
  }
};

// The rank filter of the rows x cols rectangle (or of the ones of `mask` over it) through the
// emulated kernel, band by band.
template <class T>
std::vector<std::byte> emulate(const ImageSpec& s, const std::vector<std::byte>& d, int rows,
                               int cols, int rank, BorderMode border, double cval,
                               std::int64_t band_rows, std::int64_t blocks,
                               const std::vector<std::uint8_t>* mask = nullptr) {
  rh::FootprintTable table;
  std::int64_t count = std::int64_t{rows} * cols;
  if (mask) {
    table = rh::footprint_table(mask->data(), rows, cols);
    count = std::count(mask->begin(), mask->end(), std::uint8_t{1});
  }
  const std::int64_t top = rows / 2, left = cols / 2, H = s.height;
  const std::size_t row_bytes = s.row_bytes();
  std::vector<std::byte> out(s.total_bytes(), std::byte{0x5A});
  for (std::int64_t y0 = 0; y0 < H; y0 += band_rows) {
    const std::int64_t n = std::min(band_rows, H - y0);
    // Input rows from image row y0 - top: the border rule applied to rows, except the constant
    // border's rows, which the engine does not stage (poisoned here: never read).
    const std::int64_t m = n + rows - 1;
    std::vector<std::byte> in(static_cast<std::size_t>(m) * row_bytes, std::byte{0xA5});
    for (std::int64_t k = 0; k < m; ++k) {
      const std::int64_t r = map_border(y0 - top + k, H, border);
      if (r >= 0) std::memcpy(in.data() + k * row_bytes, d.data() + r * row_bytes, row_bytes);
    }
    rh::Params p;
    p.in = in.data();
    p.in_stride = row_bytes;
    p.first_row = y0 - top;
    p.image_height = H;
    p.width = s.width;
    p.channels = s.channels;
    p.rows = rows;
    p.cols = cols;
    p.left = static_cast<int>(left);
    p.rank = rank;
    if (mask) {
      p.runs = rh::table_runs(table.bytes.data());
      p.run_count = table.runs;
      p.spans = rh::table_spans(table.bytes.data(), table.runs);
      p.span_count = table.spans;
    }
    p.border = border;
    p.cval_key = rh::constant_key<T>(cval);
    p.out = out.data() + y0 * row_bytes;
    p.out_stride = row_bytes;
    p.out_rows = n;
    const rh::Tasks t = rh::plan_tasks(s.width, s.channels, n, rows, blocks);
    // One block takes every task in turn, as the kernel's blocks do beyond its grid.
    constexpr bool wide = rh::Key<T>::wide;
    if (rh::byte_counts(count)) {
      HostBlock h(rh::region_words<std::uint8_t>(wide));
      for (std::int64_t task = 0; task < t.count(); ++task)
        for (int lane = 0; lane < rh::kThreads; ++lane)
          rh::run_task<T>(p, t, task, lane, h.lane<std::uint8_t>(lane));
    } else {
      HostBlock h(rh::region_words<std::uint16_t>(wide));
      for (std::int64_t task = 0; task < t.count(); ++task)
        for (int lane = 0; lane < rh::kThreads; ++lane)
          rh::run_task<T>(p, t, task, lane, h.lane<std::uint16_t>(lane));
    }
  }
  return out;
}

std::vector<std::byte> cpu_rank(const ImageSpec& s, const std::vector<std::byte>& d, int rows,
                                int cols, int rank, BorderMode border, double cval,
                                const std::vector<std::uint8_t>* mask = nullptr) {
  RankParams p;
  p.height = rows;
  p.width = cols;
  if (mask) {
    p.footprint.height = rows;
    p.footprint.width = cols;
    p.footprint.mask = *mask;
    p.footprint.name = "test";
  }
  p.rank = rank;
  p.border = border;
  p.border_value = cval;
  auto op = make_rank(s, p);
  EngineOptions o;
  o.band_rows = 23;
  return test::run_in_memory(*op, s, d, o).data;
}

// Samples of a narrow range (many ties, straddling coarse bins) or of the whole type.
std::vector<std::byte> image(const ImageSpec& s, std::uint64_t seed, bool narrow) {
  auto d = test::random_image(s, seed);
  if (!narrow) return d;
  std::mt19937 rng(static_cast<unsigned>(seed));
  const std::size_t n = d.size() / sample_bytes(s.type);
  for (std::size_t i = 0; i < n; ++i) {
    const int v = static_cast<int>(rng() % 700);
    switch (s.type) {
      case SampleType::u8:
        reinterpret_cast<std::uint8_t*>(d.data())[i] = static_cast<std::uint8_t>(100 + v % 9);
        break;
      case SampleType::u16:
        reinterpret_cast<std::uint16_t*>(d.data())[i] = static_cast<std::uint16_t>(64835 + v);
        break;
      default:
        reinterpret_cast<std::int16_t*>(d.data())[i] = static_cast<std::int16_t>(v - 350);
        break;
    }
  }
  return d;
}

template <class T>
void sweep(SampleType type) {
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  struct Case {
    int rows, cols;
    std::int64_t height, width;
  };
  const Case cases[] = {{3, 17, 41, 37},    {17, 3, 45, 29},  {16, 16, 40, 33}, {7, 7, 30, 70},
                        {2, 30, 19, 44},    {31, 31, 50, 47}, {51, 51, 23, 17},  // smaller than it
                        {101, 101, 60, 45}, {1, 27, 9, 100},  {15, 17, 33, 41},  // 255: bytes
                        {1, 101, 20, 130},  {101, 1, 130, 7}};
  std::mt19937 rng(71);
  int seed = 0;
  for (const Case& w : cases)
    for (const int channels : {1, 3}) {
      const BorderMode border = borders[rng() % 5];
      const ImageSpec s{w.height, w.width, channels, type};
      const int n = w.rows * w.cols;
      for (const bool narrow : {false, true}) {
        const auto d = image(s, static_cast<std::uint64_t>(300 + seed++), narrow);
        for (const int rank : {0, 1, n / 2, n - 2, n - 1}) {
          const double cval = type == SampleType::i16 ? -77.9 : 77.9;
          const auto want = cpu_rank(s, d, w.rows, w.cols, rank, border, cval);
          const std::int64_t band = 5 + static_cast<std::int64_t>(rng() % 40);
          const std::int64_t blocks = 1 + static_cast<std::int64_t>(rng() % 64);
          const auto got = emulate<T>(s, d, w.rows, w.cols, rank, border, cval, band, blocks);
          ASSERT_TRUE(got == want)
              << name(type) << " " << w.rows << "x" << w.cols << " rank " << rank << " border "
              << name(border) << " c" << channels << (narrow ? " narrow" : "") << " band " << band
              << " blocks " << blocks;
        }
      }
    }
}

TEST(RankHistogram, EmulatedKernelEqualsTheCpuU8) {
  sweep<std::uint8_t>(SampleType::u8);
}
TEST(RankHistogram, EmulatedKernelEqualsTheCpuU16) {
  sweep<std::uint16_t>(SampleType::u16);
}
TEST(RankHistogram, EmulatedKernelEqualsTheCpuI16) {
  sweep<std::int16_t>(SampleType::i16);
}

// Smooth images (a gradient with a little noise, over many coarse bins, and a ramp across one
// bin boundary): the fine counts of one bin are kept from row to row and rebuilt only when the
// rank's coarse bin changes, both of which noise alone rarely exercises. Channels 1 to 4.
TEST(RankHistogram, SmoothImagesKeepAndRebuildFineCounts) {
  std::mt19937 rng(5);
  for (const int channels : {1, 2, 3, 4})
    for (const int k : {7, 16, 25}) {
      const ImageSpec s{70, 53, channels, SampleType::u16};
      std::vector<std::byte> d(s.total_bytes());
      auto* v = reinterpret_cast<std::uint16_t*>(d.data());
      for (std::int64_t y = 0; y < s.height; ++y)
        for (std::int64_t x = 0; x < s.width; ++x)
          for (int c = 0; c < channels; ++c) {
            const int base = c % 2 ? 250 + int(y / 3) : 1000 + int(40 * y + 7 * x);
            v[(y * s.width + x) * channels + c] = static_cast<std::uint16_t>(base + rng() % 9);
          }
      for (const BorderMode b : {BorderMode::reflect, BorderMode::constant, BorderMode::wrap})
        for (const int rank : {1, k * (k + 1) / 3, k * k - 2}) {
          const auto want = cpu_rank(s, d, k, k + 1, rank, b, 255);
          EXPECT_TRUE(emulate<std::uint16_t>(s, d, k, k + 1, rank, b, 255, 29, 7) == want)
              << k << "x" << k + 1 << " c" << channels << " " << name(b) << " rank " << rank;
        }
    }
}

// Every border on every side, each mode once, with the constant outside the data's range.
TEST(RankHistogram, EveryBorderSmallImage) {
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  const ImageSpec s{6, 5, 1, SampleType::u16};
  const auto d = image(s, 9, true);
  for (const BorderMode b : borders)
    for (const int rank : {0, 40, 60, 120}) {
      const auto want = cpu_rank(s, d, 11, 11, rank, b, 70000);
      EXPECT_TRUE(emulate<std::uint16_t>(s, d, 11, 11, rank, b, 70000, 4, 3) == want)
          << name(b) << " rank " << rank;
    }
}

// Footprints of odd sides (disk, ring, cross, random with every column empty now and then, a
// single tall column, a wide one): the slide over column runs, the fill and the 16-bit rebuild
// over the ones, against the CPU's footprint kernel.
std::vector<std::uint8_t> footprint(const std::string& kind, int rows, int cols,
                                    std::mt19937& rng) {
  std::vector<std::uint8_t> m(static_cast<std::size_t>(rows * cols), 0);
  const int cy = rows / 2, cx = cols / 2;
  for (int k = 0; k < rows; ++k)
    for (int q = 0; q < cols; ++q) {
      const double dy = double(k - cy) / (cy + 0.5), dx = double(q - cx) / (cx + 0.5);
      const double r2 = dy * dy + dx * dx;
      bool one = false;
      if (kind == "disk") one = r2 <= 1.0;
      if (kind == "ring") one = r2 <= 1.0 && r2 >= 0.4;
      if (kind == "cross") one = k == cy || q == cx;
      if (kind == "random") one = rng() % 3 == 0;
      m[static_cast<std::size_t>(k * cols + q)] = one ? 1 : 0;
    }
  m[static_cast<std::size_t>(cy * cols + cx)] = 1;  // never empty
  return m;
}

template <class T>
void footprint_sweep(SampleType type) {
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  struct Case {
    const char* kind;
    int rows, cols;
    std::int64_t height, width;
  };
  const Case cases[] = {{"disk", 9, 9, 40, 37},    {"ring", 15, 11, 33, 50},
                        {"cross", 21, 21, 45, 29}, {"random", 17, 23, 38, 41},
                        {"random", 7, 31, 30, 60}, {"disk", 41, 41, 23, 19},  // larger than it
                        {"ring", 33, 33, 70, 45},  {"random", 1, 25, 9, 70},
                        {"random", 25, 1, 60, 9}};
  std::mt19937 rng(97);
  int seed = 0;
  for (const Case& w : cases)
    for (const int channels : {1, 2}) {
      const auto mask = footprint(w.kind, w.rows, w.cols, rng);
      const int n = static_cast<int>(std::count(mask.begin(), mask.end(), std::uint8_t{1}));
      const BorderMode border = borders[rng() % 5];
      const ImageSpec s{w.height, w.width, channels, type};
      for (const bool narrow : {false, true}) {
        const auto d = image(s, static_cast<std::uint64_t>(900 + seed++), narrow);
        for (const int rank : {0, n / 2, n - 1}) {
          const double cval = type == SampleType::i16 ? -77.9 : 77.9;
          const auto want = cpu_rank(s, d, w.rows, w.cols, rank, border, cval, &mask);
          const std::int64_t band = 5 + static_cast<std::int64_t>(rng() % 40);
          const std::int64_t blocks = 1 + static_cast<std::int64_t>(rng() % 64);
          const auto got =
              emulate<T>(s, d, w.rows, w.cols, rank, border, cval, band, blocks, &mask);
          ASSERT_TRUE(got == want)
              << name(type) << " " << w.kind << " " << w.rows << "x" << w.cols << " (" << n
              << " ones) rank " << rank << " border " << name(border) << " c" << channels
              << (narrow ? " narrow" : "") << " band " << band;
        }
      }
    }
}

TEST(RankHistogram, FootprintsEqualTheCpuU8) {
  footprint_sweep<std::uint8_t>(SampleType::u8);
}
TEST(RankHistogram, FootprintsEqualTheCpuU16) {
  footprint_sweep<std::uint16_t>(SampleType::u16);
}
TEST(RankHistogram, FootprintsEqualTheCpuI16) {
  footprint_sweep<std::int16_t>(SampleType::i16);
}

TEST(RankHistogram, ColumnRuns) {
  // 1 0 1
  // 1 1 0
  // 0 1 1
  const std::uint8_t m[] = {1, 0, 1, 1, 1, 0, 0, 1, 1};
  const auto r = cuda::column_runs(m, 3, 3);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].col, 0);
  EXPECT_EQ(r[0].first, 0);
  EXPECT_EQ(r[0].last, 1);
  EXPECT_EQ(r[1].col, 1);
  EXPECT_EQ(r[1].first, 1);
  EXPECT_EQ(r[1].last, 2);
  EXPECT_EQ(r[2].col, 2);
  EXPECT_EQ(r[2].last, 0);
  EXPECT_EQ(r[3].first, 2);
  EXPECT_EQ(r[3].last, 2);
}

TEST(RankHistogram, ConstantKeys) {
  EXPECT_EQ(rh::constant_key<std::uint8_t>(300.0), 255u);
  EXPECT_EQ(rh::constant_key<std::uint8_t>(-5.0), 0u);
  EXPECT_EQ(rh::constant_key<std::uint16_t>(77.9), 77u);
  EXPECT_EQ(rh::constant_key<std::int16_t>(-77.9), 32768u - 77u);
  EXPECT_EQ(rh::constant_key<std::int16_t>(-1e9), 0u);
  EXPECT_EQ(rh::constant_key<std::int16_t>(1e9), 65535u);
}

}  // namespace
}  // namespace ooc
