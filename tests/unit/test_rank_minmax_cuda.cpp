// The CUDA minimum/maximum filters' van Herk (kernels/cuda/minmax_van_herk.hpp), run on the CPU:
// the kernels' own unit function over every unit of every row (x pass) and column (y pass) of
// bands staged as the engine stages them, against the CPU filter (kernels/cpu/minmax.hpp through
// make_morphology) with the same band height. Exact to the bit, signed zeros and NaNs included:
// the emulation combines in the CPU's order. Footprints likewise, through the kernel's per-output
// function. The GPU itself is checked by test_gpu (GpuMinMax.*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cuda/morphology/minmax_van_herk.hpp"
#include "ooc/engine.hpp"
#include "ooc/ops/rank.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

namespace vh = cuda::van_herk;

using vh::constant_of;  // the kernels' own

// The window h x w from row -(h / 2), column -(w / 2) (scipy's origin 0), as minmax.cu runs it
// band by band: each pass by units, or by window() per output, as vh::by_units chooses, or the
// other way round (`flip`), so that both are checked at every size.
template <bool Max, class T>
std::vector<std::byte> emulate(const ImageSpec& s, const std::vector<std::byte>& d, std::int64_t h,
                               std::int64_t w, BorderMode border, double cval_d,
                               std::int64_t band_rows, bool flip) {
  const std::int64_t ly = h / 2, lx = w / 2, W = s.width, C = s.channels;
  const std::int64_t S = W * C, H = s.height;
  const T cval = constant_of<T>(cval_d);
  std::vector<std::byte> out(s.total_bytes(), std::byte{0x5A});
  for (std::int64_t y0 = 0; y0 < H; y0 += band_rows) {
    const std::int64_t n = std::min(band_rows, H - y0), m = n + h - 1;
    std::vector<T> mid(static_cast<std::size_t>(m * S), T(77));
    bool units = vh::by_units(w) != flip;
    for (std::int64_t k = 0; k < m; ++k) {
      const std::int64_t r = map_border(y0 - ly + k, H, border);
      T* o = mid.data() + k * S;
      if (r < 0) {
        for (std::int64_t i = 0; i < S; ++i) o[i] = cval;
        continue;
      }
      const T* in = reinterpret_cast<const T*>(d.data() + r * s.row_bytes());
      for (std::int64_t c = 0; c < C; ++c) {
        auto load = [&](std::int64_t j) {
          const std::int64_t q = map_border(j - lx, W, border);
          return q < 0 ? cval : in[q * C + c];
        };
        if (!units)
          for (std::int64_t q = 0; q < W; ++q) o[q * C + c] = vh::window<Max, T>(q, w, load);
        else
          for (std::int64_t t = 0; t * w < W; ++t)
            vh::unit<Max, T>(
                t, w, W, load, [&](std::int64_t q, T v) { o[q * C + c] = v; },
                [&](std::int64_t q) { return o[q * C + c]; });
      }
    }
    T* ob = reinterpret_cast<T*>(out.data() + y0 * s.row_bytes());
    units = vh::by_units(h) != flip;
    for (std::int64_t i = 0; i < S; ++i) {
      auto load = [&](std::int64_t k) { return mid[static_cast<std::size_t>(k * S + i)]; };
      if (!units)
        for (std::int64_t y = 0; y < n; ++y) ob[y * S + i] = vh::window<Max, T>(y, h, load);
      else
        for (std::int64_t t = 0; t * h < n; ++t)
          vh::unit<Max, T>(
              t, h, n, load, [&](std::int64_t y, T v) { ob[y * S + i] = v; },
              [&](std::int64_t y) { return ob[y * S + i]; });
    }
  }
  return out;
}

std::vector<std::byte> cpu_minmax(const ImageSpec& s, const std::vector<std::byte>& d, bool max,
                                  std::int64_t h, std::int64_t w, BorderMode border, double cval,
                                  std::int64_t band_rows) {
  MorphParams p;
  p.kind = max ? MorphKind::maximum : MorphKind::minimum;
  p.height = h;
  p.width = w;
  p.border = border;
  p.border_value = cval;
  auto op = make_morphology(s, p);
  EngineOptions o;
  o.band_rows = band_rows;
  return test::run_in_memory(*op, s, d, o).data;
}

// Random samples, with (floats) zeros of both signs and a few NaNs, and (all) long runs of one
// value, so that ties decide which sample comes out.
std::vector<std::byte> image(const ImageSpec& s, std::uint64_t seed) {
  auto d = test::random_image(s, seed);
  std::mt19937 rng(static_cast<unsigned>(seed));
  const std::size_t n = d.size() / sample_bytes(s.type), b = sample_bytes(s.type);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned r = rng() % 16;
    std::byte* p = d.data() + i * b;
    if (r < 5) std::memcpy(p, d.data(), b);  // ties with sample 0
    if (s.type == SampleType::f32) {
      float v = r == 5 ? 0.0f : r == 6 ? -0.0f : 0;
      if (r == 7 && rng() % 20 == 0) v = std::numeric_limits<float>::quiet_NaN();
      if (r >= 5 && r <= 7) std::memcpy(p, &v, sizeof v);
    }
  }
  return d;
}

template <class T>
void sweep(SampleType type, bool ties) {
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  struct Case {
    std::int64_t h, w, height, width;
  };
  const Case cases[] = {{1, 1, 9, 11},     {1, 7, 20, 31},   {7, 1, 31, 20},   {2, 2, 17, 13},
                        {3, 3, 25, 27},    {6, 6, 40, 41},   {8, 5, 33, 29},   {5, 12, 30, 61},
                        {15, 15, 50, 47},  {16, 31, 60, 45}, {51, 51, 23, 17}, {101, 101, 40, 37},
                        {2, 101, 19, 130}, {101, 3, 130, 9}, {33, 64, 70, 63}};
  std::mt19937 rng(171);
  int seed = 0;
  for (const Case& cs : cases)
    for (const int channels : {1, 2, 3, 4}) {
      const BorderMode border = borders[rng() % 5];
      const ImageSpec s{cs.height, cs.width, channels, type};
      auto d = image(s, static_cast<std::uint64_t>(900 + seed++));
      if (!ties) d = test::random_image(s, static_cast<std::uint64_t>(seed));
      const std::int64_t band = 3 + static_cast<std::int64_t>(rng() % 40);
      for (const bool max : {false, true}) {
        const auto want = cpu_minmax(s, d, max, cs.h, cs.w, border, 3.5, band);
        for (const bool flip : {false, true}) {
          const auto got = max ? emulate<true, T>(s, d, cs.h, cs.w, border, 3.5, band, flip)
                               : emulate<false, T>(s, d, cs.h, cs.w, border, 3.5, band, flip);
          ASSERT_TRUE(got == want)
              << (flip ? "flipped " : "") << name(type) << (max ? " maximum " : " minimum ") << cs.h
              << "x" << cs.w << " " << name(border) << " c" << channels << " " << cs.height << "x"
              << cs.width << " band " << band;
        }
      }
    }
}

// A footprint through the CUDA kernel's per-output function (vh::footprint_output over the
// kernel's run order), band by band with the constant border's rows unset (poisoned), against the
// CPU's footprint kernel.
template <bool Max, class T>
std::vector<std::byte> emulate_footprint(const ImageSpec& s, const std::vector<std::byte>& d,
                                         const Footprint& f, BorderMode border, double cval_d,
                                         std::int64_t band_rows) {
  const int h = static_cast<int>(f.height), w = static_cast<int>(f.width);
  const std::int64_t ly = h / 2, lx = w / 2, W = s.width, C = s.channels, H = s.height;
  const T cval = constant_of<T>(cval_d);
  const auto runs = vh::row_runs(f.mask.data(), h, w);
  std::vector<std::byte> out(s.total_bytes(), std::byte{0x5A});
  for (std::int64_t y0 = 0; y0 < H; y0 += band_rows) {
    const std::int64_t n = std::min(band_rows, H - y0), m = n + h - 1;
    std::vector<std::byte> in(static_cast<std::size_t>(m) * s.row_bytes(), std::byte{0xA5});
    for (std::int64_t k = 0; k < m; ++k) {
      const std::int64_t r = map_border(y0 - ly + k, H, border);
      if (r >= 0)
        std::memcpy(in.data() + k * s.row_bytes(), d.data() + r * s.row_bytes(), s.row_bytes());
    }
    for (std::int64_t y = 0; y < n; ++y) {
      T* o = reinterpret_cast<T*>(out.data() + (y0 + y) * s.row_bytes());
      for (std::int64_t q = 0; q < W; ++q)
        for (std::int64_t c = 0; c < C; ++c)
          o[q * C + c] = vh::footprint_output<Max, T>(
              q, runs.data(), static_cast<int>(runs.size()), [&](int k, std::int64_t j) {
                const std::int64_t image_row = y0 - ly + y + k;
                if (border == BorderMode::constant && (image_row < 0 || image_row >= H))
                  return cval;
                const T* row = reinterpret_cast<const T*>(in.data() + (y + k) * s.row_bytes());
                const std::int64_t x = map_border(j - lx, W, border);
                return x < 0 ? cval : row[x * C + c];
              });
    }
  }
  return out;
}

template <class T>
void footprint_sweep(SampleType type) {
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  struct Case {
    int h, w;
    std::int64_t height, width;
  };
  const Case cases[] = {
      {3, 3, 20, 17},  {5, 9, 31, 40},   {11, 11, 33, 29}, {1, 15, 12, 40},
      {15, 1, 40, 12}, {21, 31, 45, 38}, {41, 41, 23, 19}};  // larger than the image
  std::mt19937 rng(313);
  int seed = 0;
  for (const Case& cs : cases)
    for (const int channels : {1, 3}) {
      Footprint f;
      f.height = cs.h;
      f.width = cs.w;
      f.name = "random";
      for (int i = 0; i < cs.h * cs.w; ++i) f.mask.push_back(rng() % 3 == 0 ? 1 : 0);
      f.mask[static_cast<std::size_t>((cs.h / 2) * cs.w + cs.w / 2)] = 1;
      const BorderMode border = borders[rng() % 5];
      const ImageSpec s{cs.height, cs.width, channels, type};
      const auto d = image(s, static_cast<std::uint64_t>(500 + seed++));
      const std::int64_t band = 3 + static_cast<std::int64_t>(rng() % 30);
      for (const bool max : {false, true}) {
        MorphParams p;
        p.kind = max ? MorphKind::maximum : MorphKind::minimum;
        p.height = cs.h;
        p.width = cs.w;
        p.border = border;
        p.border_value = 3.5;
        p.footprint = f;
        auto op = make_morphology(s, p);
        EngineOptions o;
        o.band_rows = band;
        const auto want = test::run_in_memory(*op, s, d, o).data;
        const auto got = max ? emulate_footprint<true, T>(s, d, f, border, 3.5, band)
                             : emulate_footprint<false, T>(s, d, f, border, 3.5, band);
        ASSERT_TRUE(got == want) << name(type) << (max ? " maximum " : " minimum ") << cs.h << "x"
                                 << cs.w << " " << name(border) << " c" << channels << " band "
                                 << band;
      }
    }
}

TEST(RankMinMaxCuda, EmulatedFootprintsEqualTheCpuU8) {
  footprint_sweep<std::uint8_t>(SampleType::u8);
}
TEST(RankMinMaxCuda, EmulatedFootprintsEqualTheCpuI16) {
  footprint_sweep<std::int16_t>(SampleType::i16);
}
TEST(RankMinMaxCuda, EmulatedFootprintsEqualTheCpuF32SignedZerosNans) {
  footprint_sweep<float>(SampleType::f32);
}
TEST(RankMinMaxCuda, EmulatedFootprintsEqualTheCpuF64) {
  footprint_sweep<double>(SampleType::f64);
}

TEST(RankMinMaxCuda, EmulatedVanHerkEqualsTheCpuU8) {
  sweep<std::uint8_t>(SampleType::u8, true);
}
TEST(RankMinMaxCuda, EmulatedVanHerkEqualsTheCpuI16) {
  sweep<std::int16_t>(SampleType::i16, true);
}
TEST(RankMinMaxCuda, EmulatedVanHerkEqualsTheCpuF32SignedZerosNans) {
  sweep<float>(SampleType::f32, true);
}
TEST(RankMinMaxCuda, EmulatedVanHerkEqualsTheCpuF64) {
  sweep<double>(SampleType::f64, false);
}

}  // namespace
}  // namespace ooc
