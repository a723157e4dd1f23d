// The GPU radix select of floats and 32-bit integers (kernels/cpu/rank_keys.hpp's RankKey and
// radix_select, as rank.cu's radix_kernel runs them per output over its window's row runs), run
// on the CPU against the CPU rank filter (ranked histograms for these windows): selections, so the
// bytes must be identical, NaN windows giving NaN and ties of -0 and +0 giving +0 on both. The
// GPU itself is checked by test_gpu (GpuRank.RadixEqualsTheCpuExactly).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/morphology/rank_keys.hpp"
#include "ooc/border.hpp"
#include "ooc/engine.hpp"
#include "ooc/ops/rank.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

// The kernel's output for every sample: the window (rows x cols from row -rows/2, column
// -cols/2, the samples where mask is 1) through the border rule, as its tile holds it.
template <class T>
std::vector<std::byte> emulate(const ImageSpec& s, const std::vector<std::byte>& d, int rows,
                               int cols, const std::vector<std::uint8_t>& mask, int rank,
                               BorderMode border, double cval) {
  using R = kernels::RankKey<T>;
  using K = typename R::type;
  const T cv = std::is_floating_point_v<T> ? static_cast<T>(cval)
                                           : static_cast<T>(std::trunc(cval));  // in range here
  const std::int64_t H = s.height, W = s.width, C = s.channels, top = rows / 2, left = cols / 2;
  const T* in = reinterpret_cast<const T*>(d.data());
  std::vector<std::byte> out(d.size(), std::byte{0x5A});
  T* o = reinterpret_cast<T*>(out.data());
  for (std::int64_t y = 0; y < H; ++y)
    for (std::int64_t x = 0; x < W; ++x)
      for (std::int64_t c = 0; c < C; ++c) {
        auto each = [&](auto&& f) {
          for (int k = 0; k < rows; ++k)
            for (int q = 0; q < cols; ++q) {
              if (!mask[static_cast<std::size_t>(k * cols + q)]) continue;
              const std::int64_t r = map_border(y - top + k, H, border);
              const std::int64_t p = map_border(x - left + q, W, border);
              f(r < 0 || p < 0 ? R::of(cv) : R::of(in[(r * W + p) * C + c]));
            }
        };
        bool nan = false;
        if constexpr (std::is_floating_point_v<T>) each([&](K k) { nan = nan || k == R::nan; });
        o[(y * W + x) * C + c] = nan ? std::numeric_limits<T>::quiet_NaN()
                                     : R::value(kernels::radix_select<K>(rank, each));
      }
  return out;
}

template <class T>
void sweep(SampleType type) {
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  struct Case {
    int rows, cols;
    bool footprint;
  };
  const Case cases[] = {
      {13, 13, false}, {3, 51, false}, {51, 3, false}, {15, 15, true}, {21, 9, true}};
  std::mt19937 rng(808);
  int seed = 0;
  for (const Case& w : cases)
    for (const int channels : {1, 2}) {
      std::vector<std::uint8_t> mask(static_cast<std::size_t>(w.rows * w.cols), 1);
      if (w.footprint) {
        for (auto& m : mask) m = rng() % 2;
        mask[static_cast<std::size_t>((w.rows / 2) * w.cols + w.cols / 2)] = 1;
      }
      int n = 0;
      for (const auto m : mask) n += m;
      const ImageSpec s{static_cast<std::int64_t>(9 + rng() % 30),
                        static_cast<std::int64_t>(7 + rng() % 40), channels, type};
      auto d = test::random_image(s, static_cast<std::uint64_t>(1200 + seed++));
      if constexpr (std::is_floating_point_v<T>) {
        T* v = reinterpret_cast<T*>(d.data());
        for (std::size_t i = 0; i < d.size() / sizeof(T); ++i) {
          const unsigned r = rng() % 200;
          if (r < 30) v[i] = r % 2 ? T(0) : -T(0);  // ties of both zeros at the ranks
          if (r == 30) v[i] = std::numeric_limits<T>::quiet_NaN();
          if (r == 31) v[i] = -std::numeric_limits<T>::infinity();
        }
      }
      const BorderMode border = borders[rng() % 5];
      for (const int rank : {0, n / 2, n - 1}) {
        RankParams p;
        p.height = w.rows;
        p.width = w.cols;
        p.rank = rank;
        p.border = border;
        p.border_value = 7;
        if (w.footprint) {
          p.footprint.height = w.rows;
          p.footprint.width = w.cols;
          p.footprint.mask = mask;
          p.footprint.name = "test";
        }
        auto op = make_rank(s, p);
        EngineOptions o;
        o.band_rows = 5 + static_cast<std::int64_t>(rng() % 20);
        const auto want = test::run_in_memory(*op, s, d, o).data;
        const auto got = emulate<T>(s, d, w.rows, w.cols, mask, rank, border, 7);
        ASSERT_TRUE(got == want) << name(type) << " " << w.rows << "x" << w.cols
                                 << (w.footprint ? " footprint" : "") << " rank " << rank << " "
                                 << name(border) << " c" << channels;
      }
    }
}

TEST(RankRadix, EmulatedSelectEqualsTheCpuF32) {
  sweep<float>(SampleType::f32);
}
TEST(RankRadix, EmulatedSelectEqualsTheCpuF64) {
  sweep<double>(SampleType::f64);
}
TEST(RankRadix, EmulatedSelectEqualsTheCpuI32) {
  sweep<std::int32_t>(SampleType::i32);
}
TEST(RankRadix, EmulatedSelectEqualsTheCpuU32) {
  sweep<std::uint32_t>(SampleType::u32);
}

// Keys order the values as the values do, and give them back (zeros as +0, NaN as NaN).
TEST(RankRadix, KeysKeepTheOrder) {
  using R = kernels::RankKey<float>;
  const float v[] = {-std::numeric_limits<float>::infinity(), -3.5f, -1e-30f, 0.0f, 1e-30f, 2.0f,
                     std::numeric_limits<float>::infinity()};
  for (std::size_t i = 0; i + 1 < sizeof v / sizeof v[0]; ++i)
    EXPECT_LT(R::of(v[i]), R::of(v[i + 1]));
  EXPECT_EQ(R::of(-0.0f), R::of(0.0f));
  EXPECT_FALSE(std::signbit(R::value(R::of(-0.0f))));
  EXPECT_EQ(R::value(R::of(-3.5f)), -3.5f);
  EXPECT_TRUE(std::isnan(R::value(R::of(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_LT(R::of(std::numeric_limits<float>::infinity()), R::nan);
  using I = kernels::RankKey<std::int32_t>;
  EXPECT_LT(I::of(-5), I::of(3));
  EXPECT_EQ(I::value(I::of(std::numeric_limits<std::int32_t>::min())),
            std::numeric_limits<std::int32_t>::min());
}

}  // namespace
}  // namespace ooc
