// The CUDA sliding-histogram rank filter's algorithm (kernels/cuda/rank_histogram.hpp), run on the
// CPU: the kernel's own run_task over every task and thread, with counts kept as the kernel keeps
// them (16-bit coarse counts, fine counts two to a 32-bit word), on bands staged as the engine
// stages them (rows of the constant border left unset, here poisoned), against the CPU rank
// filter. Selections, so the bytes must be identical. The GPU itself is checked by test_gpu.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/rank_histogram.hpp"
#include "ooc/ops/rank.hpp"
#include "ooc/pipeline.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

namespace rh = cuda::rank_hist;

// One emulated thread's counts, as the kernel's SharedCounts keeps them.
struct HostCounts {
  std::vector<std::uint16_t> coarse_ = std::vector<std::uint16_t>(rh::kCoarseBins, 0);
  std::vector<std::uint32_t> fine = std::vector<std::uint32_t>(rh::kFineWords, 0);
  unsigned coarse(int bin) const { return coarse_.at(static_cast<std::size_t>(bin)); }
  void coarse_add(int bin, int d) {
    std::uint16_t& v = coarse_.at(static_cast<std::size_t>(bin));
    v = static_cast<std::uint16_t>(v + d);
  }
  void fine_add(unsigned key, int d) {
    fine.at(key >> 1) += static_cast<unsigned>(d) << (16 * (key & 1));
  }
  void fine_words(int word, unsigned (&w)[4]) const {
    for (int i = 0; i < 4; ++i) w[i] = fine.at(static_cast<std::size_t>(word + i));
  }
  bool zero() const {
    for (auto v : coarse_)
      if (v) return false;
    for (auto v : fine)
      if (v) return false;
    return true;
  }
};

// The rank filter of the rows x cols rectangle through the emulated kernel, band by band.
template <class T>
std::vector<std::byte> emulate(const ImageSpec& s, const std::vector<std::byte>& d, int rows,
                               int cols, int rank, BorderMode border, double cval,
                               std::int64_t band_rows, std::int64_t blocks) {
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
    p.border = border;
    p.cval_key = rh::constant_key<T>(cval);
    p.out = out.data() + y0 * row_bytes;
    p.out_stride = row_bytes;
    p.out_rows = n;
    const rh::Tasks t = rh::plan_tasks(s.width, s.channels, n, rows, blocks);
    HostCounts h;
    for (std::int64_t task = 0; task < t.count(); ++task)
      for (int lane = 0; lane < rh::kThreads; ++lane) rh::run_task<T>(p, t, task, lane, h);
    // Every task takes out what it counted (the kernel's next task starts from zero).
    EXPECT_TRUE(h.zero()) << "a task left counts behind";
  }
  return out;
}

std::vector<std::byte> cpu_rank(const ImageSpec& s, const std::vector<std::byte>& d, int rows,
                                int cols, int rank, BorderMode border, double cval) {
  RankParams p;
  p.height = rows;
  p.width = cols;
  p.rank = rank;
  p.border = border;
  p.border_value = cval;
  auto op = make_rank(s, p);
  PipelineOptions o;
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
                        {101, 101, 60, 45}, {1, 27, 9, 100}};
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
