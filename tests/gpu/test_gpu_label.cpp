// The label stage on the GPU against the CPU: the band kernel (kernels/cuda/labels) called on
// device buffers against the CPU's numbering of the same band (runs.hpp), and whole jobs on
// --device cuda against --device cpu, byte for byte, on random masks (2-D 4 and 8, 3-D 6, 18 and
// 26), odd sizes, bands of one row and more, shapes that merge late. The CPU's labels are checked
// against scipy.ndimage.label by tests/cli/test_label.py. Skips where no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(OOC_HAVE_CUDA)
#include <cuda_runtime.h>

#include "kernels/cpu/labels/mask_bits.hpp"
#include "kernels/cpu/labels/runs.hpp"
#include "kernels/cuda/labels/label.cuh"
#endif

#include "gpu_support.hpp"
#include "ooc/memory.hpp"
#include "ooc/pipeline.hpp"
#include "ooc/run.hpp"

namespace ooc {
namespace {

// Masks with the shapes a labelling gets wrong: random at a density, all foreground, all
// background, a checkerboard (one component per sample, 4-connected), combs whose teeth join only
// at the last row, a spiral (one component that reaches every tile edge).
std::vector<std::uint8_t> mask(std::int64_t h, std::int64_t w, int kind, std::mt19937& rng) {
  std::vector<std::uint8_t> m(static_cast<std::size_t>(h * w));
  std::uniform_int_distribution<int> pct(0, 99);
  const int density = std::array<int, 4>{30, 50, 60, 75}[rng() % 4];
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) {
      bool v = false;
      switch (kind) {
        case 0:
          v = pct(rng) < density;
          break;
        case 1:
          v = true;
          break;
        case 2:
          v = false;
          break;
        case 3:
          v = (x + y) % 2 == 0;
          break;
        case 4:
          v = x % 2 == 0 || y == h - 1;
          break;   // comb joined at the bottom
        case 5: {  // square spiral of walls 1 apart
          const std::int64_t d = std::min(std::min(x, y), std::min(w - 1 - x, h - 1 - y));
          v = d % 2 == 0 && !(x == d && y == d + 1);
          if (d % 2 == 1 && x == d && y == d) v = true;
          break;
        }
      }
      m[static_cast<std::size_t>(y * w + x)] = v ? static_cast<std::uint8_t>(1 + pct(rng)) : 0;
    }
  return m;
}

#if defined(OOC_HAVE_CUDA)
// The CPU's numbering of a band: runs, label_runs, spread back to samples.
template <class T>
std::vector<std::uint32_t> cpu_labels(const std::vector<T>& in, std::int64_t h, std::int64_t w,
                                      bool diagonal, std::uint32_t& count) {
  kernels::BandRuns r;
  for (std::int64_t y = 0; y < h; ++y) kernels::append_row_runs(in.data() + y * w, w, r);
  kernels::label_runs(r, diagonal);
  std::vector<std::uint32_t> out(in.size(), 0);
  for (std::int64_t y = 0; y < h; ++y)
    for (auto i = r.row_start[static_cast<std::size_t>(y)];
         i < r.row_start[static_cast<std::size_t>(y) + 1]; ++i)
      for (std::uint32_t x = r.x0[i]; x < r.x1[i]; ++x)
        out[static_cast<std::size_t>(y * w + x)] = r.label[i];
  count = r.count;
  return out;
}

// Runs the band kernel on `in` (rows padded to `stride` bytes, as the engine stages them), or on
// its bits as the engine packs them (mask_bits_rows) where `bits`, and returns the labels and the
// count.
template <class T>
std::vector<std::uint32_t> gpu_labels(const std::vector<T>& in, std::int64_t h, std::int64_t w,
                                      bool diagonal, SampleType type, std::uint64_t& count,
                                      bool bits = false) {
  const std::size_t stride =
      bits ? kernels::mask_bits_row_bytes(w) + 8 : static_cast<std::size_t>(w + 3) * sizeof(T);
  std::vector<std::byte> host(stride * static_cast<std::size_t>(h), std::byte{0x5a});
  if (bits)
    kernels::mask_bits_rows(reinterpret_cast<const std::byte*>(in.data()), h,
                            static_cast<std::size_t>(w) * sizeof(T), w, type, host.data(), stride);
  else
    for (std::int64_t y = 0; y < h; ++y)
      std::memcpy(host.data() + static_cast<std::size_t>(y) * stride, in.data() + y * w,
                  static_cast<std::size_t>(w) * sizeof(T));
  const std::size_t scratch_bytes = cuda::label_band_scratch(h, w);
  std::byte *d_in = nullptr, *d_scratch = nullptr;
  std::uint64_t* d_count = nullptr;
  EXPECT_EQ(cudaMalloc(&d_in, host.size()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&d_scratch, scratch_bytes), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&d_count, sizeof(std::uint64_t)), cudaSuccess);
  EXPECT_EQ(cudaMemset(d_scratch, 0x5a, scratch_bytes), cudaSuccess);  // poison
  EXPECT_EQ(cudaMemcpy(d_in, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  const std::uint32_t* d_labels = cuda::label_band_async(
      d_in, stride, h, w, type, bits, diagonal, d_scratch, scratch_bytes, d_count, nullptr);
  std::vector<std::uint32_t> out(static_cast<std::size_t>(h * w));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.data(), d_labels, out.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&count, d_count, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d_in);
  cudaFree(d_scratch);
  cudaFree(d_count);
  return out;
}
#endif

TEST(GpuLabel, BandKernelNumbersAsTheCpu) {
  OOC_REQUIRE_GPU();
#if defined(OOC_HAVE_CUDA)
  std::mt19937 rng(47);
  // Sizes at and around the strips' 32 columns and segments' 64 rows, one row, one column, and
  // larger odd ones.
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {
      {1, 1},   {1, 67},   {67, 1},   {16, 32},   {17, 33},    {15, 31},
      {33, 65}, {48, 96},  {5, 300},  {301, 7},   {64, 64},    {63, 31},
      {65, 95}, {129, 33}, {130, 70}, {257, 513}, {1031, 1999}};
  int cases = 0;
  for (const auto& [h, w] : sizes)
    for (int kind = 0; kind < 6; ++kind)
      for (bool diagonal : {false, true}) {
        const std::vector<std::uint8_t> m = mask(h, w, kind, rng);
        std::uint32_t want_n = 0;
        const auto want = cpu_labels(m, h, w, diagonal, want_n);
        for (bool bits : {false, true}) {  // the samples, and the engine's bits of them
          std::uint64_t got_n = 0;
          const auto got = gpu_labels(m, h, w, diagonal, SampleType::u8, got_n, bits);
          const auto what = std::to_string(h) + "x" + std::to_string(w) + " kind " +
                            std::to_string(kind) + " diagonal " + std::to_string(diagonal) +
                            " bits " + std::to_string(bits);
          ASSERT_EQ(got_n, want_n) << what;
          ASSERT_TRUE(got == want) << what;
          ++cases;
        }
      }
  EXPECT_EQ(cases, 408);
#endif
}

TEST(GpuLabel, BandKernelForegroundOfFloatsAsTheCpu) {
  OOC_REQUIRE_GPU();
#if defined(OOC_HAVE_CUDA)
  // -0 is background, NaN foreground (NumPy's a != 0), in f32, f64 and i16.
  std::mt19937 rng(3);
  const std::int64_t h = 97, w = 131;
  std::uniform_int_distribution<int> u(0, 5);
  std::vector<float> f(static_cast<std::size_t>(h * w));
  for (auto& v : f) {
    const int k = u(rng);
    v = k == 0   ? 0.0f
        : k == 1 ? -0.0f
        : k == 2 ? std::numeric_limits<float>::quiet_NaN()
                 : static_cast<float>(k) - 4.5f;
  }
  std::vector<double> d(f.begin(), f.end());
  std::vector<std::int16_t> s(f.size());
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::int16_t>(u(rng) - 2);
  for (bool diagonal : {false, true})
    for (bool bits : {false, true}) {  // the samples, and the engine's bits of them
      std::uint32_t wn = 0;
      std::uint64_t gn = 0;
      EXPECT_TRUE(gpu_labels(f, h, w, diagonal, SampleType::f32, gn, bits) ==
                  cpu_labels(f, h, w, diagonal, wn));
      EXPECT_EQ(gn, wn);
      EXPECT_TRUE(gpu_labels(d, h, w, diagonal, SampleType::f64, gn, bits) ==
                  cpu_labels(d, h, w, diagonal, wn));
      EXPECT_EQ(gn, wn);
      EXPECT_TRUE(gpu_labels(s, h, w, diagonal, SampleType::i16, gn, bits) ==
                  cpu_labels(s, h, w, diagonal, wn));
      EXPECT_EQ(gn, wn);
    }
#endif
}

// A whole job: the label stage over an in-memory u8 image or volume, on `device`, bands of
// `band_rows`; returns the labels (u32, or u64 with label-type=u64 in `extra`) and the count.
template <class L = std::uint32_t>
std::vector<L> run_label(std::vector<std::uint8_t>& m, std::int64_t d, std::int64_t h,
                         std::int64_t w, int connectivity, const std::string& device,
                         std::int64_t band_rows, std::uint64_t& count,
                         const std::string& extra = "", std::int64_t cpu_start = 0,
                         std::int64_t* cpu_bands = nullptr) {
  ImageSpec in{w, h, 1, SampleType::u8};
  if (d > 0) in.depth = d;  // a volume, labelled in 3-D
  ImageSpec out = in;
  out.type = sizeof(L) == 8 ? SampleType::u64 : SampleType::u32;
  std::vector<L> labels(static_cast<std::size_t>(std::max<std::int64_t>(d, 1) * h * w),
                        static_cast<L>(0xa5a5a5a5a5a5a5a5ull));
  JobSpec spec;
  spec.options.input = spec.options.output = "<memory>";
  spec.options.device = device;
  spec.options.pipeline.band_rows = band_rows;
  spec.options.pipeline.cpu_start_bands = cpu_start;  // 0: every band on the GPU
  spec.source = std::make_unique<MemorySource>(
      MemoryImage::dense(in, reinterpret_cast<std::byte*>(m.data())));
  spec.sink = std::make_unique<MemorySink>(
      MemoryImage::dense(out, reinterpret_cast<std::byte*>(labels.data())));
  spec.stages = parse_pipeline({"label connectivity=" + std::to_string(connectivity) + extra});
  const JobResult r = run_job(std::move(spec));
  EXPECT_TRUE(r.report.components.has_value());
  count = r.report.components.value_or(0);
  EXPECT_EQ(r.report.cuda, device == "cuda");
  if (cpu_bands) {  // every pass's, as the report's total counts them
    *cpu_bands = 0;
    for (const RunStats& p : r.passes) *cpu_bands += p.cpu_bands;
    EXPECT_EQ(r.total.cpu_bands, *cpu_bands);
  }
  return labels;
}

TEST(GpuLabel, ImageJobsEqualTheCpu) {
  OOC_REQUIRE_GPU();
  std::mt19937 rng(11);
  for (const auto& [h, w] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 77}, {37, 1}, {203, 317}, {64, 1000}})
    for (int kind : {0, 3, 4, 5})
      for (int conn : {4, 8})
        for (std::int64_t band_rows : {1, 7, 64}) {
          std::vector<std::uint8_t> m = mask(h, w, kind, rng);
          std::uint64_t nc = 0, ng = 0;
          const auto c = run_label(m, 0, h, w, conn, "cpu", band_rows, nc);
          const auto g = run_label(m, 0, h, w, conn, "cuda", band_rows, ng);
          ASSERT_EQ(ng, nc) << h << "x" << w << " kind " << kind << " c" << conn << " b"
                            << band_rows;
          ASSERT_TRUE(g == c) << h << "x" << w << " kind " << kind << " c" << conn << " b"
                              << band_rows;
        }
}

TEST(GpuLabel, VolumeJobsEqualTheCpu) {
  OOC_REQUIRE_GPU();
  std::mt19937 rng(13);
  const std::int64_t d = 9, h = 37, w = 71;
  for (int kind : {0, 4})
    for (int conn : {6, 18, 26})
      for (std::int64_t band_rows : {1, 5, 37}) {
        std::vector<std::uint8_t> m;
        for (std::int64_t z = 0; z < d; ++z) {
          const auto p = mask(h, w, kind, rng);
          m.insert(m.end(), p.begin(), p.end());
        }
        std::uint64_t nc = 0, ng = 0;
        const auto c = run_label(m, d, h, w, conn, "cpu", band_rows, nc);
        const auto g = run_label(m, d, h, w, conn, "cuda", band_rows, ng);
        ASSERT_EQ(ng, nc) << "kind " << kind << " c" << conn << " b" << band_rows;
        ASSERT_TRUE(g == c) << "kind " << kind << " c" << conn << " b" << band_rows;
      }
}

TEST(GpuLabel, BandsOnBothBackendsEqualTheCpu) {
  OOC_REQUIRE_GPU();
  // The first bands on the CPU while CUDA starts, the rest on the GPU: one merge of both kinds.
  std::mt19937 rng(19);
  for (int conn : {4, 8}) {
    std::vector<std::uint8_t> m = mask(203, 317, 0, rng);
    std::uint64_t nc = 0, ng = 0;
    const auto c = run_label(m, 0, 203, 317, conn, "cpu", 9, nc);
    const auto g = run_label(m, 0, 203, 317, conn, "cuda", 9, ng, "", 3);
    ASSERT_EQ(ng, nc) << "c" << conn;
    ASSERT_TRUE(g == c) << "c" << conn;
  }
}

TEST(GpuLabel, TheCpusShareAllAlongEqualsTheCpu) {
  OOC_REQUIRE_GPU();
  // A share of pass 1's bands on the CPU (BandPlan::cpu_share, from OOC_LABEL_CPU_SHARE) and of
  // pass 2's (cpu_share_out, OOC_LABEL_CPU_SHARE_OUT), the rest on the GPU: the merge mixes the
  // two kinds all along, and so do pass 2's writes. The default (2/3 and 1/2, with the CPU
  // start), one pass shared alone, and the other, most bands on the CPU, all of them, against
  // the CPU.
  std::mt19937 rng(29);
  const std::vector<std::pair<const char*, const char*>> shares = {
      {nullptr, nullptr}, {"1/3", "0"}, {"0", "1/3"}, {"3/4", "2/3"}, {"1/1", "1/1"}};
  for (const auto& [share, share_out] : shares)
    for (int conn : {4, 8, 26}) {
      const std::int64_t d = conn == 26 ? 7 : 0, h = conn == 26 ? 41 : 211, w = 317;
      std::vector<std::uint8_t> m;
      for (std::int64_t z = 0; z < std::max<std::int64_t>(d, 1); ++z) {
        const auto p = mask(h, w, static_cast<int>(z % 2) * 4, rng);
        m.insert(m.end(), p.begin(), p.end());
      }
      std::uint64_t nc = 0, ng = 0;
      std::int64_t on_cpu = 0;
      const auto c = run_label(m, d, h, w, conn, "cpu", 5, nc);
      if (share) ::setenv("OOC_LABEL_CPU_SHARE", share, 1);
      if (share_out) ::setenv("OOC_LABEL_CPU_SHARE_OUT", share_out, 1);
      const auto g = run_label(m, d, h, w, conn, "cuda", 5, ng, "", -1, &on_cpu);
      ::unsetenv("OOC_LABEL_CPU_SHARE");
      ::unsetenv("OOC_LABEL_CPU_SHARE_OUT");
      const std::string a = share ? share : "2/3", b = share_out ? share_out : "1/2";
      const std::string what = "share " + a + ", pass 2 " + b + ", c" + std::to_string(conn);
      // The CPU's bands of both passes: at least each share's of a pass's bands.
      auto fraction = [](const std::string& s) {
        const auto slash = s.find('/');
        return slash == std::string::npos
                   ? 0.0
                   : std::stod(s.substr(0, slash)) / std::stod(s.substr(slash + 1));
      };
      const std::int64_t bands = std::max<std::int64_t>(d, 1) * ((h + 4) / 5);  // a pass's
      EXPECT_GE(on_cpu, std::int64_t((fraction(a) + fraction(b)) * double(bands)) - 2) << what;
      ASSERT_EQ(ng, nc) << what;
      ASSERT_TRUE(g == c) << what;
    }
}

TEST(GpuLabel, MinSizeJobsEqualTheCpu) {
  OOC_REQUIRE_GPU();
  // Measurements: the merge measures a GPU band's runs; small components dropped alike.
  std::mt19937 rng(17);
  std::vector<std::uint8_t> m = mask(301, 411, 0, rng);
  for (int conn : {4, 8}) {
    std::uint64_t nc = 0, ng = 0;
    const auto c = run_label(m, 0, 301, 411, conn, "cpu", 13, nc, " min-size=5");
    const auto g = run_label(m, 0, 301, 411, conn, "cuda", 13, ng, " min-size=5");
    ASSERT_EQ(ng, nc) << "c" << conn;
    ASSERT_TRUE(g == c) << "c" << conn;
  }
}

TEST(GpuLabel, U64JobsEqualTheCpu) {
  OOC_REQUIRE_GPU();
  // u64 labels: pass 2 uploads the table slice as u64 and writes u64; the values are the u32
  // run's, widened.
  std::mt19937 rng(23);
  for (int conn : {4, 8, 26}) {
    const std::int64_t d = conn == 26 ? 5 : 0, h = 83, w = 211;
    std::vector<std::uint8_t> m;
    for (std::int64_t z = 0; z < std::max<std::int64_t>(d, 1); ++z) {
      const auto p = mask(h, w, 0, rng);
      m.insert(m.end(), p.begin(), p.end());
    }
    for (std::int64_t band_rows : {1, 9}) {
      std::uint64_t n32 = 0, nc = 0, ng = 0;
      const auto narrow = run_label(m, d, h, w, conn, "cpu", band_rows, n32);
      const auto c =
          run_label<std::uint64_t>(m, d, h, w, conn, "cpu", band_rows, nc, " label-type=u64");
      const auto g =
          run_label<std::uint64_t>(m, d, h, w, conn, "cuda", band_rows, ng, " label-type=u64");
      ASSERT_EQ(nc, n32) << "c" << conn << " b" << band_rows;
      ASSERT_EQ(ng, nc) << "c" << conn << " b" << band_rows;
      ASSERT_TRUE(std::equal(c.begin(), c.end(), narrow.begin())) << "c" << conn;
      ASSERT_TRUE(g == c) << "c" << conn << " b" << band_rows;
    }
  }
}

}  // namespace
}  // namespace ooc
