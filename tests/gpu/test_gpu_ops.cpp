// The CUDA kernels of the 2-D convolution and of equalization through the engine's GPU staging,
// against a direct float64 convolution and against the CPU backend (equalization: identical).
// Skips, with the reason, where no CUDA device is usable (CI has none).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gpu_support.hpp"
#include "ooc/engine.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/equalize.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

Backend gpu(const Operation& op) {
  return select_backend("cuda", "all", {&op});
}

TEST(GpuConv2d, MatchesADirectFloat64ConvolutionTiledAndDirect) {
  OOC_REQUIRE_GPU();
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(-1, 1);
  // 3x3 .. 31x31 use the shared-memory tile; 101x101 reads global memory.
  for (auto [kr, kc] : {std::pair{3, 3}, std::pair{5, 7}, std::pair{31, 31}, std::pair{101, 101}}) {
    Kernel2d k{kr, kc, {}, "random"};
    for (int i = 0; i < kr * kc; ++i) k.taps.push_back(u(rng));
    double scale = 0;
    for (double v : k.taps) scale += std::abs(v);
    for (SampleType t : {SampleType::u8, SampleType::f32, SampleType::f64})
      for (int channels : {1, 3})
        for (BorderMode b : {BorderMode::reflect, BorderMode::wrap, BorderMode::constant}) {
          const ImageSpec s{70, 45, channels, t};
          const auto d = test::random_image(s, 9);
          Conv2dParams p;
          p.kernel = k;
          p.border = b;
          p.border_value = 1.5;
          p.out_type = SampleType::f64;
          p.method = ConvMethod::direct;  // the direct kernels (test_gpu_fft.cpp: the FFT)
          EngineOptions o;
          o.band_rows = 11;
          auto op = make_conv2d(s, p, o);
          const auto out = test::run_in_memory(*op, s, d, o, gpu(*op));
          for (std::int64_t y = 0; y < s.height; ++y)
            for (std::int64_t x = 0; x < s.width; ++x)
              for (int c = 0; c < channels; ++c) {
                const double want = test::convolve_at(s, d, k, b, 1.5, y, x, c);
                const double got = test::get(out.data, SampleType::f64,
                                             std::size_t((y * s.width + x) * channels + c));
                const double peak = t == SampleType::u8 ? 255 : 1e4;
                // f64 output: f64 accumulation, rounding a few units of 2^-52 of sum |k||x|.
                ASSERT_NEAR(got, want, 1e-12 * scale * peak)
                    << kr << "x" << kc << " " << name(t) << " c" << channels << " " << name(b)
                    << " at " << y << "," << x;
              }
        }
  }
}

TEST(GpuConv2d, F32AccumulationAgreesWithTheCpu) {
  OOC_REQUIRE_GPU();
  const ImageSpec s{4099, 301, 1, SampleType::f32};
  const auto d = test::random_image(s, 10);
  Conv2dParams p;
  p.kernel = parse_kernel("laplace", 1 << 30);
  auto op = make_conv2d(s, p);
  const auto g = test::run_in_memory(*op, s, d, EngineOptions{}, gpu(*op));
  const auto c = test::run_in_memory(*op, s, d, EngineOptions{});
  for (std::size_t i = 0; i < std::size_t(s.width * s.height); ++i) {
    const double a = test::get(g.data, s.type, i), b = test::get(c.data, s.type, i);
    ASSERT_LE(std::abs(a - b), 1e-5 * (std::abs(b) + 8 * 1e4)) << "sample " << i;
  }
}

TEST(GpuEqualize, HistogramAndTableEqualTheCpuExactly) {
  OOC_REQUIRE_GPU();
  for (SampleType t : {SampleType::u8, SampleType::u16})
    for (int channels : {1, 3}) {
      const ImageSpec s{1031, 257, channels, t};
      const auto d = test::random_image(s, 12);
      std::vector<std::vector<std::byte>> outs;
      std::vector<std::vector<std::uint64_t>> counts;
      // The CPU; the GPU; the GPU with its first 2 bands on the CPU (as while CUDA starts).
      for (int cpu_start : {-2, 0, 2}) {
        const bool cuda = cpu_start >= 0;
        test::MemorySource src(s, d);
        auto h = make_histogram(s);
        auto l = make_lut(s);
        EngineOptions o;
        o.band_rows = 50;
        o.cpu_start_bands = cpu_start;
        const Backend be = cuda ? gpu(*h) : Backend{};
        Engine e(src, be, plan_bands(s, {h.get(), l.get()}, be, o));
        e.run(*h, nullptr);
        l->set_lut(equalization_lut(h->counts(), h->bins(), channels));
        test::MemorySink sink(s);
        e.run(*l, &sink);
        outs.push_back(sink.data);
        counts.push_back(h->counts());
      }
      for (std::size_t i = 1; i < outs.size(); ++i) {
        EXPECT_EQ(counts[0], counts[i]) << name(t) << " c" << channels << " run " << i;
        EXPECT_TRUE(outs[0] == outs[i]) << name(t) << " c" << channels << " run " << i;
      }
    }
}

}  // namespace
}  // namespace ooc
