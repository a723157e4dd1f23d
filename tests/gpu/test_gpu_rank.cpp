// The CUDA rank filters (median, percentile, rank: windows of up to 49 samples in registers,
// rectangles and footprints; u8/u16/i16 rectangles and footprints of any size by sliding
// histograms) and the minimum/maximum filters (van Herk; footprints by runs) against the CPU
// backend: selections, so the bytes must be
// identical, over types, 1 and 3 channels, the five borders and band heights that do not divide the
// height. Skips, with the reason, where no CUDA device is usable (CI has none).
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "gpu_support.hpp"
#include "ooc/engine.hpp"
#include "ooc/ops/rank.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

std::vector<std::byte> run_on(const ImageSpec& s, const std::vector<std::byte>& d, Operation& op,
                              bool cuda, std::int64_t band_rows) {
  test::MemorySource src(s, d);
  EngineOptions o;
  o.band_rows = band_rows;
  o.cpu_start_bands = cuda ? 0 : -2;
  const Backend be = cuda ? select_backend("cuda", "all", {&op}) : Backend{};
  Engine e(src, be, plan_bands(s, {&op}, be, o));
  test::MemorySink sink(s);
  e.run(op, &sink);
  return sink.data;
}

Footprint disk(int r) {
  Footprint f;
  f.height = f.width = 2 * r + 1;
  f.name = "disk";
  for (int y = -r; y <= r; ++y)
    for (int x = -r; x <= r; ++x) f.mask.push_back(x * x + y * y <= r * r + r ? 1 : 0);
  return f;
}

TEST(GpuRank, EqualsTheCpuExactly) {
  OOC_REQUIRE_GPU();
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  const SampleType types[] = {SampleType::u8,  SampleType::u16, SampleType::i16, SampleType::u32,
                              SampleType::i32, SampleType::f32, SampleType::f64};
  struct Window {
    std::int64_t h, w;
    bool footprint;
  };
  const Window windows[] = {{3, 3, false}, {5, 5, false}, {7, 7, false}, {2, 4, false},
                            {1, 9, false}, {5, 5, true},  {7, 7, true}};
  std::mt19937 rng(33);
  int n = 0;
  for (SampleType t : types)
    for (const Window& w : windows) {
      const BorderMode border = borders[rng() % 5];
      const int channels = rng() % 2 ? 3 : 1;
      const ImageSpec s{static_cast<std::int64_t>(37 + rng() % 200),
                        static_cast<std::int64_t>(29 + rng() % 300), channels, t};
      const auto d = test::random_image(s, 100 + n++);
      RankParams p;
      p.height = w.h;
      p.width = w.w;
      if (w.footprint) p.footprint = disk(static_cast<int>(w.h / 2));
      const std::int64_t count = w.footprint ? p.footprint.count() : w.h * w.w;
      p.border = border;
      p.border_value = 7;
      for (std::int64_t rank : {count / 2, std::int64_t{1}, count - 2}) {
        p.rank = rank;
        auto op = make_rank(s, p);
        ASSERT_TRUE(op->has_cuda());
        const auto cpu = run_on(s, d, *op, false, 64);
        const auto gpu = run_on(s, d, *op, true, 19);
        EXPECT_TRUE(cpu == gpu) << name(t) << " " << w.h << "x" << w.w
                                << (w.footprint ? " disk" : "") << " rank " << rank << " border "
                                << name(border) << " c" << channels;
      }
    }
}

TEST(GpuRank, NanInTheWindowGivesNanAsOnTheCpu) {
  OOC_REQUIRE_GPU();
  const ImageSpec s{41, 67, 1, SampleType::f32};
  auto d = test::random_image(s, 5);
  float* v = reinterpret_cast<float*>(d.data());
  v[3 * 67 + 5] = v[20 * 67 + 66] = v[40 * 67] = std::numeric_limits<float>::quiet_NaN();
  RankParams p;
  p.height = p.width = 5;
  p.rank = 12;
  auto op = make_rank(s, p);
  EXPECT_TRUE(run_on(s, d, *op, false, 64) == run_on(s, d, *op, true, 7));
}

// Sliding histograms (kernels/cuda/rank_histogram.hpp): u8, u16 and i16 rectangles of any size,
// ranks from the first to the last (the extremes run as minimum/maximum, so 1 and count - 2 too),
// every border with a constant inside the data's range, random data over the whole type and over a
// narrow range (ties, coarse bins straddled), images smaller than the window.
TEST(GpuRank, HistogramsEqualTheCpuExactly) {
  OOC_REQUIRE_GPU();
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  struct Window {
    std::int64_t h, w;
  };
  const Window windows[] = {{1, 1},   {3, 17},  {17, 3},    {16, 16}, {7, 7},
                            {31, 31}, {51, 51}, {101, 101}, {2, 40}};
  std::mt19937 rng(3333);
  int n = 0;
  for (SampleType t : {SampleType::u8, SampleType::u16, SampleType::i16})
    for (const Window& w : windows)
      for (const int channels : {1, 3})
        for (const bool small : {false, true}) {
          const BorderMode border = borders[(n + channels) % 5];
          // Smaller than the window, or a few windows across; heights no band height divides.
          const ImageSpec s =
              small ? ImageSpec{std::max<std::int64_t>(1, w.h / 2 + 1),
                                std::max<std::int64_t>(1, w.w / 3 + 2), channels, t}
                    : ImageSpec{static_cast<std::int64_t>(97 + rng() % 300),
                                static_cast<std::int64_t>(71 + rng() % 400), channels, t};
          auto d = test::random_image(s, 700 + n++);
          if (rng() % 2) {  // a narrow range: many ties, coarse bins straddled
            const std::size_t m = d.size() / sample_bytes(t);
            for (std::size_t i = 0; i < m; ++i) {
              const int v = static_cast<int>(rng() % 600);
              if (t == SampleType::u8)
                reinterpret_cast<std::uint8_t*>(d.data())[i] = static_cast<std::uint8_t>(1 + v % 7);
              else if (t == SampleType::u16)
                reinterpret_cast<std::uint16_t*>(d.data())[i] = static_cast<std::uint16_t>(900 + v);
              else
                reinterpret_cast<std::int16_t*>(d.data())[i] = static_cast<std::int16_t>(v - 300);
            }
          }
          RankParams p;
          p.height = w.h;
          p.width = w.w;
          p.border = border;
          p.border_value = t == SampleType::i16 ? -1000 : 1000;
          const std::int64_t count = w.h * w.w;
          for (std::int64_t rank :
               {std::int64_t{0}, std::int64_t{1}, count / 2, count - 2, count - 1}) {
            if (rank < 0 || rank >= count) continue;
            p.rank = rank;
            auto op = make_rank(s, p);
            ASSERT_TRUE(op->has_cuda()) << w.h << "x" << w.w;
            const auto cpu = run_on(s, d, *op, false, 64);
            const std::int64_t band = 13 + static_cast<std::int64_t>(rng() % 50);
            const auto gpu = run_on(s, d, *op, true, band);
            EXPECT_TRUE(cpu == gpu) << name(t) << " " << w.h << "x" << w.w << " rank " << rank
                                    << " border " << name(border) << " c" << channels << " "
                                    << s.height << "x" << s.width << " band " << band;
          }
        }
}

// A large image in one band per call: tasks of many row chunks and 32-column strips.
TEST(GpuRank, HistogramsOnALargeImage) {
  OOC_REQUIRE_GPU();
  for (SampleType t : {SampleType::u8, SampleType::u16}) {
    const ImageSpec s{1500, 2300, 1, t};
    const auto d = test::random_image(s, 41);
    RankParams p;
    p.height = p.width = 51;
    p.rank = 51 * 51 / 2;
    p.border = BorderMode::reflect;
    auto op = make_rank(s, p);
    ASSERT_TRUE(op->has_cuda());
    EXPECT_TRUE(run_on(s, d, *op, false, 256) == run_on(s, d, *op, true, 1500)) << name(t);
  }
}

// The 16-bit (and 8-bit) sliding histograms over window sizes 1 to 101, square, even and
// rectangular, channels 1 to 4, odd widths, the borders in turn, the median and two other ranks:
// windows of more than 25 samples count histograms (byte counts up to 255 samples, 16-bit above),
// smaller ones select in registers. Noise over the whole type (the rank's coarse bin moves: fine
// counts rebuilt) and smooth ramps (fine counts kept from row to row).
TEST(GpuRank, HistogramSizesOneTo101) {
  OOC_REQUIRE_GPU();
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  struct Window {
    std::int64_t h, w;
  };
  const Window windows[] = {{1, 1},   {2, 2},   {3, 3},     {4, 6},     {5, 5},
                            {6, 5},   {9, 9},   {15, 15},   {15, 17},   {16, 16},
                            {20, 13}, {27, 1},  {1, 101},   {101, 1},   {38, 64},
                            {51, 51}, {64, 64}, {100, 100}, {101, 101}, {7, 99}};
  std::mt19937 rng(1010);
  int n = 0;
  for (SampleType t : {SampleType::u16, SampleType::i16, SampleType::u8})
    for (const Window& w : windows) {
      const int channels = 1 + n % 4;
      const BorderMode border = borders[n % 5];
      const ImageSpec s{static_cast<std::int64_t>(61 + rng() % 150),
                        static_cast<std::int64_t>(2 * (rng() % 150) + 33), channels, t};
      auto d = test::random_image(s, 1900 + n);
      if (n % 3 == 2 && t != SampleType::u8) {  // a smooth ramp with a little noise
        auto* v = reinterpret_cast<std::uint16_t*>(d.data());
        for (std::int64_t i = 0; i < s.height * s.width * channels; ++i)
          v[i] = static_cast<std::uint16_t>(200 + 37 * (i / (s.width * channels)) +
                                            (i % (s.width * channels)) / 3 + rng() % 5);
      }
      ++n;
      RankParams p;
      p.height = w.h;
      p.width = w.w;
      p.border = border;
      p.border_value = 300;
      const std::int64_t count = w.h * w.w;
      for (std::int64_t rank : {count / 2, count / 5, count - 1 - count / 7}) {
        p.rank = rank;
        auto op = make_rank(s, p);
        if (!op->has_cuda()) continue;  // windows of up to 25 samples: registers, or the CPU
        const auto cpu = run_on(s, d, *op, false, 64);
        const std::int64_t band = 11 + static_cast<std::int64_t>(rng() % 90);
        const auto gpu = run_on(s, d, *op, true, band);
        EXPECT_TRUE(cpu == gpu) << name(t) << " " << w.h << "x" << w.w << " rank " << rank
                                << " border " << name(border) << " c" << channels << " " << s.height
                                << "x" << s.width << " band " << band;
      }
    }
}

// Minimum and maximum (van Herk along an axis whose window is longer than 5 samples, a scan
// otherwise, both in the CPU's order), every type, sizes 1 to 101 square, even and rectangular,
// channels 1 to 4, odd widths, the borders in turn, and the same band height on both backends
// (van Herk's blocks along y start at a band's first row, on the CPU as here: with the same bands
// even the sign of a zero among equal extremes is the CPU's; f32 images hold both zeros and NaNs).
// f32 samples: an eighth made +0 or -0 (ties whose sign tells which sample came out), one in 64 a
// NaN.
void zeros_and_nans(std::vector<std::byte>& d, std::mt19937& rng) {
  float* v = reinterpret_cast<float*>(d.data());
  for (std::size_t i = 0; i < d.size() / 4; ++i) {
    const unsigned r = rng() % 64;
    if (r < 8) v[i] = r % 2 ? 0.0f : -0.0f;
    if (r == 8) v[i] = std::numeric_limits<float>::quiet_NaN();
  }
}

TEST(GpuMinMax, EqualsTheCpuExactly) {
  OOC_REQUIRE_GPU();
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  const SampleType types[] = {SampleType::u8,  SampleType::u16, SampleType::i16, SampleType::u32,
                              SampleType::i32, SampleType::f32, SampleType::f64};
  struct Window {
    std::int64_t h, w;
  };
  const Window windows[] = {{1, 1},   {1, 2},   {2, 2},     {3, 3},  {5, 5},   {5, 6},
                            {6, 5},   {7, 7},   {1, 31},    {31, 1}, {16, 16}, {15, 40},
                            {51, 51}, {64, 17}, {101, 101}, {100, 3}};
  std::mt19937 rng(4242);
  int n = 0;
  for (SampleType t : types)
    for (const Window& w : windows) {
      const int channels = 1 + n % 4;
      const BorderMode border = borders[(n / 4) % 5];
      const bool small = n % 7 == 3;  // smaller than the window
      const ImageSpec s =
          small ? ImageSpec{std::max<std::int64_t>(1, w.h / 2),
                            std::max<std::int64_t>(1, w.w / 2 + 1), channels, t}
                : ImageSpec{static_cast<std::int64_t>(40 + rng() % 200),
                            static_cast<std::int64_t>(2 * (rng() % 200) + 21), channels, t};
      auto d = test::random_image(s, 5100 + n);
      if (t == SampleType::f32) zeros_and_nans(d, rng);
      ++n;
      const std::int64_t band = 9 + static_cast<std::int64_t>(rng() % 60);
      for (const MorphKind kind : {MorphKind::minimum, MorphKind::maximum}) {
        MorphParams p;
        p.kind = kind;
        p.height = w.h;
        p.width = w.w;
        p.border = border;
        p.border_value = 2.5;
        auto op = make_morphology(s, p);
        ASSERT_TRUE(op->has_cuda());
        const auto cpu = run_on(s, d, *op, false, band);
        const auto gpu = run_on(s, d, *op, true, band);
        EXPECT_TRUE(cpu == gpu) << name(t)
                                << (kind == MorphKind::maximum ? " maximum " : " minimum ") << w.h
                                << "x" << w.w << " border " << name(border) << " c" << channels
                                << " " << s.height << "x" << s.width << " band " << band;
      }
    }
}

// Footprints of many ones: u8/u16/i16 rank filters by sliding histograms over the column runs,
// and the minimum/maximum of every type by windowed runs, against the CPU; a top-hat with a
// footprint chains two of them.
Footprint random_footprint(int h, int w, std::mt19937& rng) {
  Footprint f;
  f.height = h;
  f.width = w;
  f.name = "random";
  for (int i = 0; i < h * w; ++i) f.mask.push_back(rng() % 3 == 0 ? 1 : 0);
  f.mask[static_cast<std::size_t>((h / 2) * w + w / 2)] = 1;
  return f;
}

TEST(GpuRank, FootprintHistogramsEqualTheCpuExactly) {
  OOC_REQUIRE_GPU();
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  std::mt19937 rng(3303);
  int n = 0;
  for (SampleType t : {SampleType::u8, SampleType::u16, SampleType::i16})
    for (const int side : {9, 17, 31, 51, 101}) {
      const Footprint f = n % 2 ? disk(side / 2) : random_footprint(side, side - 2 * (n % 3), rng);
      const int channels = 1 + n % 3;
      const BorderMode border = borders[n % 5];
      const ImageSpec s{static_cast<std::int64_t>(60 + rng() % 300),
                        static_cast<std::int64_t>(50 + rng() % 400), channels, t};
      const auto d = test::random_image(s, 7100 + n++);
      RankParams p;
      p.height = f.height;
      p.width = f.width;
      p.footprint = f;
      p.border = border;
      p.border_value = 9;
      for (const std::int64_t rank : {std::int64_t{0}, f.count() / 2, f.count() - 1}) {
        p.rank = rank;
        auto op = make_rank(s, p);
        ASSERT_TRUE(op->has_cuda());
        EXPECT_TRUE(run_on(s, d, *op, false, 64) == run_on(s, d, *op, true, 37))
            << name(t) << " " << f.height << "x" << f.width << " (" << f.count() << " ones) rank "
            << rank << " " << name(border) << " c" << channels;
      }
    }
}

TEST(GpuMinMax, FootprintsEqualTheCpuExactly) {
  OOC_REQUIRE_GPU();
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  const SampleType types[] = {SampleType::u8,  SampleType::u16, SampleType::i16, SampleType::u32,
                              SampleType::i32, SampleType::f32, SampleType::f64};
  std::mt19937 rng(5505);
  int n = 0;
  for (SampleType t : types)
    for (const int side : {3, 7, 25, 61}) {
      const Footprint f = n % 2 ? disk(side / 2) : random_footprint(side, side, rng);
      const int channels = 1 + n % 4;
      const ImageSpec s{static_cast<std::int64_t>(40 + rng() % 200),
                        static_cast<std::int64_t>(30 + rng() % 300), channels, t};
      auto d = test::random_image(s, 8100 + n);
      if (t == SampleType::f32) zeros_and_nans(d, rng);
      const BorderMode border = borders[n++ % 5];
      for (const MorphKind kind :
           {MorphKind::minimum, MorphKind::maximum, MorphKind::white_tophat}) {
        MorphParams p;
        p.kind = kind;
        p.height = f.height;
        p.width = f.width;
        p.footprint = f;
        p.border = border;
        p.border_value = 2.5;
        auto op = make_morphology(s, p);
        ASSERT_TRUE(op->has_cuda());
        EXPECT_TRUE(run_on(s, d, *op, false, 29) == run_on(s, d, *op, true, 41))
            << name(t) << " kind " << int(kind) << " " << side << " " << name(border) << " c"
            << channels;
      }
    }
}

// Floats and 32-bit integers beyond the CPU's networks: the radix select over a tile of keys
// (beyond 48 KiB of shared memory from 101 x 101 f32 on), rectangles and footprints, with signed
// zeros, NaNs and infinities for the floats, against the CPU's ranked histograms.
TEST(GpuRank, RadixEqualsTheCpuExactly) {
  OOC_REQUIRE_GPU();
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  std::mt19937 rng(9191);
  int n = 0;
  for (SampleType t : {SampleType::f32, SampleType::f64, SampleType::i32, SampleType::u32})
    for (const int side : {13, 51, 101, 0}) {
      RankParams p;
      p.height = p.width = side;
      if (side == 0) {
        p.footprint = n % 2 ? disk(20) : random_footprint(25, 31, rng);
        p.height = p.footprint.height;
        p.width = p.footprint.width;
      }
      const std::int64_t count = side ? std::int64_t{side} * side : p.footprint.count();
      const int channels = 1 + n % 3;
      const ImageSpec s{static_cast<std::int64_t>(40 + rng() % 200),
                        static_cast<std::int64_t>(30 + rng() % 300), channels, t};
      auto d = test::random_image(s, 9100 + n);
      if (t == SampleType::f32) zeros_and_nans(d, rng);
      p.border = borders[n++ % 5];
      p.border_value = 3;
      for (const std::int64_t rank : {std::int64_t{0}, count / 2, count - 1}) {
        p.rank = rank;
        auto op = make_rank(s, p);
        ASSERT_TRUE(op->has_cuda());
        EXPECT_TRUE(run_on(s, d, *op, false, 48) == run_on(s, d, *op, true, 33))
            << name(t) << " " << p.height << "x" << p.width << " rank " << rank << " "
            << name(p.border) << " c" << channels;
      }
    }
}

// A large band: many van Herk units and units per thread's grid stride, and the top-hat, which
// chains the two passes, against the CPU.
TEST(GpuMinMax, LargeBandAndTophat) {
  OOC_REQUIRE_GPU();
  const ImageSpec s{1200, 3001, 2, SampleType::u16};
  const auto d = test::random_image(s, 77);
  for (const MorphKind kind : {MorphKind::maximum, MorphKind::white_tophat}) {
    MorphParams p;
    p.kind = kind;
    p.height = 61;
    p.width = 45;
    auto op = make_morphology(s, p);
    ASSERT_TRUE(op->has_cuda());
    EXPECT_TRUE(run_on(s, d, *op, false, 600) == run_on(s, d, *op, true, 600));
  }
}

TEST(GpuRank, WhichWindowsRunOnCuda) {
#if !defined(OOC_HAVE_CUDA)
  GTEST_SKIP() << "a build without CUDA";
#endif
  const ImageSpec s16{64, 64, 1, SampleType::u16}, sf{64, 64, 1, SampleType::f32};
  RankParams p;
  p.height = p.width = 101;
  p.rank = 40;
  EXPECT_TRUE(make_rank(s16, p)->has_cuda());  // histograms
  EXPECT_TRUE(make_rank(sf, p)->has_cuda());   // floats: a radix select
  p.height = p.width = 201;
  EXPECT_TRUE(make_rank(sf, p)->has_cuda());  // a tile of 193 KiB
  EXPECT_FALSE(make_rank(ImageSpec{64, 64, 1, SampleType::f64}, p)->has_cuda());  // 386 KiB
  p.height = p.width = 9;  // 81 samples: the CPU's networks, whose zeros the GPU would not match
  EXPECT_FALSE(make_rank(sf, p)->has_cuda());
  p.height = p.width = 255;
  EXPECT_TRUE(make_rank(s16, p)->has_cuda());  // 65025 samples: 16-bit counts
  p.height = 258;                              // 65790 samples
  EXPECT_FALSE(make_rank(s16, p)->has_cuda());
  p.height = p.width = 9;
  p.footprint = disk(4);
  p.rank = 10;
  EXPECT_TRUE(make_rank(s16, p)->has_cuda());  // footprints of 16 bits: histograms
  EXPECT_TRUE(make_rank(sf, p)->has_cuda());   // of floats, 69 samples: a radix select
  p.height = p.width = 7;
  p.footprint = disk(3);
  EXPECT_TRUE(make_rank(sf, p)->has_cuda());
  p.height = 1;
  p.width = 21;
  p.footprint = Footprint{};
  p.rank = 3;
  EXPECT_TRUE(make_rank(s16, p)->has_cuda());  // 21 samples, but 21 columns: histograms
  EXPECT_FALSE(make_rank(sf, p)->has_cuda());
}

}  // namespace
}  // namespace ooc
