// The CUDA backend through the whole pipeline, against the float64 reference and the CPU backend.
// Skips, with the reason, where no CUDA device is usable (CI has none).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

#if defined(OOC_HAVE_CUDA)
#include <cuda_runtime.h>

#include "cuda/resources.hpp"
#include "kernels/cuda/convolution/separable.cuh"
#endif

#include "gpu_support.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/separable.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

using test::MemorySink;
using test::MemorySource;

MemorySink run(bool gpu, const ImageSpec& spec, const std::vector<std::byte>& data,
               const SeparableParams& params, const EngineOptions& o,
               const std::vector<int>& devices = {}) {
  auto op = make_separable(spec, params, o);
  Backend backend;
  if (gpu) {
    std::string list;
    for (int d : devices) {
      if (!list.empty()) list += ',';
      list += std::to_string(d);
    }
    backend = select_backend("cuda", list.empty() ? "all" : list, {op.get()});
  }
  return test::run_in_memory(*op, spec, data, o, backend);
}

class GpuSweep : public ::testing::TestWithParam<test::SweepParam> {};

TEST_P(GpuSweep, MatchesFloat64ReferenceAndCpu) {
  OOC_REQUIRE_GPU();
  const auto [type, channels, border] = GetParam();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  struct Case {
    std::string name;
    ImageSpec spec;
    std::vector<double> row, col;
  };
  std::vector<Case> cases;
  for (std::int64_t r : {0, 1, 3, 16, 40, 70}) {  // 70: the direct row kernel, past the image
    const auto g = gaussian_taps(r, 0);
    cases.push_back({"gaussian r" + std::to_string(r), ImageSpec{37, 23, channels, type}, g, g});
  }
  // Several row tiles, a radius at the tile kernel's limit and one past it.
  for (std::int64_t r : {64, 65}) {
    const auto g = gaussian_taps(r, 0);
    cases.push_back(
        {"wide r" + std::to_string(r), ImageSpec{2999, 9, channels, type}, g, gaussian_taps(3, 0)});
  }
  std::vector<double> row(7), col(3);
  for (double& t : row) t = u(rng);
  for (double& t : col) t = u(rng);
  cases.push_back({"asymmetric 7x3", ImageSpec{37, 23, channels, type}, row, col});

  for (const auto& c : cases) {
    const auto data = test::random_image(c.spec, 4321 + static_cast<int>(type) + channels);
    SeparableParams p;
    p.filter.row = c.row;
    p.filter.col = c.col;
    p.border = border;
    p.border_value = 7.25;
    const auto ref = test::reference(c.spec, data, c.row, c.col, border, p.border_value);
    EngineOptions o;
    o.threads = 2;
    const auto cpu = run(false, c.spec, data, p, o);
    for (std::int64_t band_rows : {std::int64_t{1}, std::int64_t{5}, c.spec.height}) {
      o.band_rows = band_rows;
      o.slots = 3;
      const auto gpu = run(true, c.spec, data, p, o);
      const std::string what = c.name + " band_rows " + std::to_string(band_rows);
      test::expect_matches(gpu, ref, accumulates_in_f64(type, type, p.precision), what);
      // And against the CPU backend: the same tolerance around the CPU's result.
      for (std::size_t i = 0; i < ref.value.size(); ++i) {
        const double g = test::get(gpu.data, type, i), h = test::get(cpu.data, type, i);
        const double tol =
            is_integer(type) ? 1.0 : 2e-5 * ref.scale[i] + 0x1p-22 * std::abs(h) + 1e-30;
        ASSERT_LE(std::abs(g - h), tol) << what << " sample " << i << " gpu " << g << " cpu " << h;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TypesChannelsBorders, GpuSweep, test::sweep_values(), test::sweep_name);

TEST(Gpu, BitIdenticalAcrossBandsSlotsAndDevices) {
  OOC_REQUIRE_GPU();
  const int devices = cuda_device_count();
  for (SampleType type : {SampleType::f32, SampleType::u8}) {
    const ImageSpec spec{4099, 301, 3, type};
    const auto data = test::random_image(spec, 11);
    SeparableParams p;
    p.filter.row = p.filter.col = gaussian_taps(16, 0);
    std::vector<std::byte> first;
    for (std::int64_t band_rows : {1, 7, 64, 301})
      for (int slots : {1, 2, 5})
        for (int ndev = 1; ndev <= std::min(devices, 2); ++ndev) {
          EngineOptions o;
          o.band_rows = band_rows;
          o.slots = slots;
          std::vector<int> list;
          for (int d = 0; d < ndev; ++d) list.push_back(d);
          const auto out = run(true, spec, data, p, o, list);
          if (first.empty()) {
            first = out.data;
            continue;
          }
          ASSERT_TRUE(out.data == first) << name(type) << " band_rows " << band_rows << " slots "
                                         << slots << " devices " << ndev;
        }
  }
}

// The CUDA backend's first bands on the CPU (as while CUDA starts), the rest on the GPU: with float
// sums the same bytes as the GPU alone, since both kernels round every sample the same way (FMA
// in tap order, float intermediate, round-to-nearest-even store). Also --cpu-start auto, whatever
// it picks. Double sums are not claimed (f64 r3 differed in the last bit): auto leaves them on the
// GPU.
TEST(Gpu, CpuStartBandsGiveTheGpuBits) {
  OOC_REQUIRE_GPU();
  struct Types {
    SampleType in;
    std::optional<SampleType> out;
    Precision precision;
  };
  const Types types[] = {{SampleType::f32, {}, Precision::automatic},
                         {SampleType::u8, {}, Precision::automatic},
                         {SampleType::u16, {}, Precision::automatic},
                         {SampleType::i16, {}, Precision::automatic},
                         {SampleType::u8, SampleType::f32, Precision::automatic},
                         {SampleType::f64, {}, Precision::automatic},  // double sums
                         {SampleType::i16, SampleType::i32, Precision::automatic},
                         {SampleType::u8, SampleType::f32, Precision::f64}};
  for (const Types& t : types)
    for (std::int64_t r : {1, 3, 16})
      for (BorderMode border : {BorderMode::reflect, BorderMode::constant, BorderMode::wrap}) {
        const ImageSpec spec{1031, 97, 2, t.in};
        const auto data = test::random_image(spec, 21 + static_cast<int>(r));
        SeparableParams p;
        p.filter.row = p.filter.col = gaussian_taps(r, 0);
        p.border = border;
        p.border_value = 3.5;
        p.out_type = t.out;
        p.precision = t.precision;
        auto op = make_separable(spec, p, EngineOptions{});
        const bool f64 = accumulates_in_f64(t.in, t.out.value_or(t.in), t.precision);
        ASSERT_EQ(op->cpu_gives_cuda_bits(), !f64) << "(a CPU without FMA: never claimed)";
        const ImageSpec out_spec = *op->output();
        const std::string what = std::string(name(t.in)) + " -> " +
                                 std::string(name(out_spec.type)) + " r" + std::to_string(r) + " " +
                                 std::string(name(border));
        std::vector<std::byte> gpu_only;
        // 13 bands of 8 rows: 13 is all on the CPU. Double sums: auto only (none on the CPU).
        const auto counts =
            f64 ? std::vector<std::int64_t>{0, -1} : std::vector<std::int64_t>{0, 1, 4, 13, -1};
        for (std::int64_t n : counts) {
          EngineOptions o;
          o.band_rows = 8;
          o.slots = 3;
          o.cpu_start_bands = n;
          const Backend backend = select_backend("cuda", "all", {op.get()});
          test::MemorySource src(spec, data);
          test::MemorySink sink(out_spec);  // poisoned
          Engine engine(src, backend, plan_bands(spec, {op.get()}, backend, o));
          const RunStats st = engine.run(*op, &sink);
          if (n >= 0 || f64) {
            EXPECT_EQ(st.cpu_bands, f64 ? 0 : std::min<std::int64_t>(n, 13)) << what;
          }
          if (n == 0) {
            gpu_only = sink.data;
            continue;
          }
          ASSERT_TRUE(sink.data == gpu_only)
              << what << " cpu_start_bands " << n << " (" << st.cpu_bands << " on the CPU)";
        }
      }
}

TEST(Gpu, LargeBandMatchesCpu) {
  OOC_REQUIRE_GPU();
  // A band of 65536-wide rows: 64-bit offsets, many tiles, the planner's own band height.
  const ImageSpec spec{65536, 200, 1, SampleType::f32};
  const auto data = test::random_image(spec, 12);
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(16, 0);
  EngineOptions o;
  const auto gpu = run(true, spec, data, p, o);
  const auto cpu = run(false, spec, data, p, o);
  for (std::size_t i = 0; i < gpu.data.size() / 4; ++i) {
    const double g = test::get(gpu.data, spec.type, i), h = test::get(cpu.data, spec.type, i);
    ASSERT_LE(std::abs(g - h), 1e-5 * (std::abs(h) + 1000.0)) << "sample " << i;
  }
}

#if defined(OOC_HAVE_CUDA)
// The kernels specialized on the radius against the generic kernels, called directly on one band
// in device memory: byte-identical outputs, every sample written (each fast run starts from two
// different poisons), over radii with and without a specialization, rx != ry, widths, band
// heights, channels, sample types and every border rule, with bands touching the image's top and
// bottom (constant rows) and a few infinities in the float inputs.
struct BandCase {
  SampleType in = SampleType::f32, out = SampleType::f32;
  int channels = 1;
  std::int64_t width = 1, out_rows = 1, rx = 1, ry = 1;
  BorderMode border = BorderMode::reflect;
  int place = 0;  // 0: the band is the whole image, 1: at its top, 2: at its bottom

  std::string describe() const {
    return std::string(name(in)) + "->" + std::string(name(out)) + " c" + std::to_string(channels) +
           " w" + std::to_string(width) + " rows" + std::to_string(out_rows) + " rx" +
           std::to_string(rx) + " ry" + std::to_string(ry) + " " + std::string(name(border)) +
           " place" + std::to_string(place);
  }
};

void cuda_check(cudaError_t e, const char* what) {
  ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
}

class BandRunner {
 public:
  explicit BandRunner(const BandCase& c) : c_(c) {
    const std::int64_t n = c.width * c.channels;
    in_rows_ = c.out_rows + 2 * c.ry;
    in_row_bytes_ = static_cast<std::size_t>(n) * sample_bytes(c.in);
    out_row_bytes_ = static_cast<std::size_t>(n) * sample_bytes(c.out);
    // Row strides with padding, as a pitched allocation would have.
    in_stride_ = in_row_bytes_ + 64;
    out_stride_ = out_row_bytes_ + 32;
    mid_stride_ = static_cast<std::size_t>(n) * 4 + 16;
    in_ = cuda::DeviceBuffer(0, in_stride_ * static_cast<std::size_t>(in_rows_));
    mid_ = cuda::DeviceBuffer(0, mid_stride_ * static_cast<std::size_t>(in_rows_));
    out_ = cuda::DeviceBuffer(0, out_stride_ * static_cast<std::size_t>(c.out_rows));

    // Input: random non-zero samples; two infinities in float inputs.
    const ImageSpec spec{c.width, in_rows_, c.channels, c.in};
    auto data = test::random_image(spec, 1000 + static_cast<std::uint64_t>(n + 7 * c.rx + c.ry));
    if (c.in == SampleType::f32) {
      const std::size_t total = static_cast<std::size_t>(n * in_rows_);
      test::put(data, c.in, total / 3, std::numeric_limits<double>::infinity());
      test::put(data, c.in, 2 * total / 3, -std::numeric_limits<double>::infinity());
    }
    cuda_check(cudaMemcpy2D(in_.data(), in_stride_, data.data(), in_row_bytes_, in_row_bytes_,
                            static_cast<std::size_t>(in_rows_), cudaMemcpyHostToDevice),
               "upload");
    // Taps: random, non-zero, not symmetric (the order of the sums shows).
    std::mt19937_64 rng(static_cast<std::uint64_t>(c.rx * 131 + c.ry));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    row_.resize(static_cast<std::size_t>(2 * c.rx + 1));
    col_.resize(static_cast<std::size_t>(2 * c.ry + 1));
    for (float& t : row_) t = u(rng) + (u(rng) > 0 ? 1e-3f : -1e-3f);
    for (float& t : col_) t = u(rng) + (u(rng) > 0 ? 1e-3f : -1e-3f);
    taps_ = cuda::DeviceBuffer(0, (row_.size() + col_.size()) * 4);
    cuda_check(cudaMemcpy(taps_.data(), row_.data(), row_.size() * 4, cudaMemcpyHostToDevice),
               "taps");
    cuda_check(cudaMemcpy(taps_.data() + row_.size() * 4, col_.data(), col_.size() * 4,
                          cudaMemcpyHostToDevice),
               "taps");

    a_.in = in_.data();
    a_.in_stride = in_stride_;
    a_.mid = mid_.data();
    a_.mid_stride = mid_stride_;
    a_.out = out_.data();
    a_.out_stride = out_stride_;
    a_.width = c.width;
    a_.channels = c.channels;
    a_.in_type = c.in;
    a_.out_type = c.out;
    a_.out_rows = c.out_rows;
    a_.rx = c.rx;
    a_.ry = c.ry;
    a_.row_taps = taps_.data();
    a_.col_taps = taps_.data() + row_.size() * 4;
    a_.row_taps_host = row_.data();
    a_.col_taps_host = col_.data();
    a_.border = c.border;
    a_.border_value = -37.625;  // non-zero, inside every type's range after rounding
    a_.f64 = false;
    // Output rows [y0, y0 + out_rows) of an image; input row 0 is image row y0 - ry.
    const std::int64_t extra = 7;
    a_.image_height = c.place == 0 ? c.out_rows : c.out_rows + extra;
    const std::int64_t y0 = c.place == 2 ? extra : 0;
    a_.first_row = y0 - c.ry;
  }

  cuda::SeparablePath path(bool generic) {
    cuda::SeparableLaunch a = a_;
    a.generic = generic;
    return cuda::separable_path(a);
  }

  // The output band's bytes (row padding left out), starting from `poison` bytes.
  std::vector<std::byte> run(bool generic, int poison) {
    cuda::SeparableLaunch a = a_;
    a.generic = generic;
    std::vector<std::byte> host(out_row_bytes_ * static_cast<std::size_t>(c_.out_rows));
    if (cudaMemset(out_.data(), poison, out_.size()) != cudaSuccess) return {};
    if (cudaMemset(mid_.data(), poison, mid_.size()) != cudaSuccess) return {};
    cuda::separable_band_async(a, nullptr);
    if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) return {};
    if (cudaMemcpy2D(host.data(), out_row_bytes_, out_.data(), out_stride_, out_row_bytes_,
                     static_cast<std::size_t>(c_.out_rows), cudaMemcpyDeviceToHost) != cudaSuccess)
      return {};
    return host;
  }

 private:
  BandCase c_;
  std::int64_t in_rows_ = 0;
  std::size_t in_row_bytes_ = 0, out_row_bytes_ = 0, in_stride_ = 0, out_stride_ = 0,
              mid_stride_ = 0;
  cuda::DeviceBuffer in_, mid_, out_, taps_;
  std::vector<float> row_, col_;
  cuda::SeparableLaunch a_;
};

bool fast_type(SampleType t) {
  return t == SampleType::u8 || t == SampleType::u16 || t == SampleType::f32;
}
bool fast_radius(std::int64_t r) {
  for (std::int64_t f : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64})
    if (r == f) return true;
  return false;
}

// The path the dispatch must take for this case (as documented in separable.cu).
cuda::SeparablePath expected_path(const BandCase& c) {
  if (c.channels > 16) return cuda::SeparablePath::generic;
  if (c.rx == c.ry && c.rx >= 1 && c.rx <= 8 && c.in == c.out && fast_type(c.in))
    return cuda::SeparablePath::fused;
  if ((fast_radius(c.rx) && fast_type(c.in)) || (fast_radius(c.ry) && fast_type(c.out)))
    return cuda::SeparablePath::two_pass;
  return cuda::SeparablePath::generic;
}

// Returns the path taken; a failure is reported through gtest.
cuda::SeparablePath check_band(const BandCase& c) {
  BandRunner b(c);
  const std::string what = c.describe();
  EXPECT_EQ(b.path(true), cuda::SeparablePath::generic) << what;
  const cuda::SeparablePath path = b.path(false);
  EXPECT_EQ(static_cast<int>(path), static_cast<int>(expected_path(c))) << what;
  const auto want = b.run(true, 0xA5);
  EXPECT_FALSE(want.empty()) << what << ": CUDA failure in the generic kernels";
  for (int poison : {0xA5, 0x5A}) {
    const auto got = b.run(false, poison);
    EXPECT_FALSE(got.empty()) << what << ": CUDA failure in the fast kernels";
    if (got.size() != want.size()) continue;
    const std::size_t s = sample_bytes(c.out);
    for (std::size_t i = 0; i < got.size(); i += s)
      if (std::memcmp(got.data() + i, want.data() + i, s) != 0) {
        ADD_FAILURE() << what << " poison " << poison << ": first differing sample " << i / s
                      << " (row " << i / s / static_cast<std::size_t>(c.width * c.channels)
                      << "): fast " << test::get(got, c.out, i / s) << " generic "
                      << test::get(want, c.out, i / s);
        break;
      }
  }
  return path;
}

TEST(Gpu, SpecializedKernelsBitIdenticalToGeneric) {
  OOC_REQUIRE_GPU();
  const std::pair<SampleType, SampleType> types[] = {
      {SampleType::f32, SampleType::f32}, {SampleType::u8, SampleType::u8},
      {SampleType::u16, SampleType::u16}, {SampleType::u8, SampleType::f32},
      {SampleType::f32, SampleType::u16}, {SampleType::i16, SampleType::i16}};
  const BorderMode borders[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                BorderMode::wrap, BorderMode::constant};
  int counts[3] = {0, 0, 0};
  auto check = [&](const BandCase& c) {
    const auto path = check_band(c);
    ++counts[static_cast<int>(path)];
    return !::testing::Test::HasFailure();
  };
  int k = 0;
  // 1. Every specialized radius and its unspecialized neighbours, square and rx != ry, every
  // border, 1/3/4 channels; the types, widths, heights and places cycle along.
  std::vector<std::pair<std::int64_t, std::int64_t>> radii;
  for (std::int64_t r :
       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 24, 25, 32, 33, 47, 48, 63, 64, 65})
    radii.emplace_back(r, r);
  for (auto p : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {3, 5}, {5, 3}, {1, 16}, {64, 2}, {8, 9}, {9, 8}, {5, 0}, {0, 5}, {12, 10}, {10, 12}})
    radii.push_back(p);
  const std::int64_t widths[] = {37, 2999, 2, 1, 37};
  const std::int64_t heights[] = {5, 300, 1, 5};
  for (const auto& [rx, ry] : radii)
    for (BorderMode border : borders)
      for (int channels : {1, 3, 4}) {
        BandCase c;
        std::tie(c.in, c.out) = types[static_cast<std::size_t>(k) % std::size(types)];
        c.channels = channels;
        c.width = widths[static_cast<std::size_t>(k) % std::size(widths)];
        c.out_rows = heights[static_cast<std::size_t>(k / 3) % std::size(heights)];
        c.rx = rx;
        c.ry = ry;
        c.border = border;
        c.place = k % 3;
        ++k;
        if (!check(c)) return;
      }
  // 2. Geometry: every width (one wider than 65536 samples; 4096 and 70000 give 16-byte aligned
  // rows, which the tile loads read in vectors), band height, channel count, type pair and
  // border, at radii of each kernel (fused, two-pass, both at their limits).
  for (std::int64_t r : {1, 3, 8, 16, 64})
    for (std::int64_t width : {1, 2, 37, 2999, 4096, 70000})
      for (std::int64_t rows : {1, 5, 300}) {
        if (width == 70000 && rows == 300 && r != 16) continue;  // one tall wide band is enough
        for (int channels : {1, 3, 4})
          for (BorderMode border : borders) {
            BandCase c;
            std::tie(c.in, c.out) = types[static_cast<std::size_t>(k) % std::size(types)];
            c.channels = channels;
            c.width = width;
            c.out_rows = rows;
            c.rx = c.ry = r;
            c.border = border;
            c.place = k % 3;
            ++k;
            if (width == 70000 && border != BorderMode::reflect && border != BorderMode::constant)
              continue;
            if (width == 70000 && rows == 300 && (channels != 1 || border != BorderMode::reflect))
              continue;
            if (!check(c)) return;
          }
      }
  // 3. Many channels: the specialized kernels' limit (16) and past it (generic).
  for (int channels : {5, 16, 17})
    for (std::int64_t r : {2, 24}) {
      BandCase c;
      c.channels = channels;
      c.width = 301;
      c.out_rows = 40;
      c.rx = c.ry = r;
      c.border = BorderMode::constant;
      c.place = 0;
      if (!check(c)) return;
    }
  // 4. The fused kernel on one-channel, 16-byte aligned rows (tiles load in vectors): every fused
  // radius and type, band heights around its 32-row tiles and its column runs, narrow and wide
  // bands, rows at both image ends in constant mode.
  for (std::int64_t r : {1, 2, 3, 4, 5, 6, 7, 8})
    for (std::int64_t width : {4096, 4112, 65536})
      for (std::int64_t rows : {1, 15, 16, 17, 33, 95, 1000}) {
        if (width == 65536 && rows > 33 && r != 3 && r != 8) continue;
        BandCase c;
        const SampleType t[] = {SampleType::f32, SampleType::u8, SampleType::u16};
        c.in = c.out = t[static_cast<std::size_t>(k) % 3];
        c.channels = 1;
        c.width = width;
        c.out_rows = rows;
        c.rx = c.ry = r;
        c.border = k % 2 == 0 ? BorderMode::constant : borders[static_cast<std::size_t>(k / 2) % 4];
        c.place = (k / 3) % 3;
        ++k;
        if (!check(c)) return;
      }
  EXPECT_GT(counts[static_cast<int>(cuda::SeparablePath::fused)], 0);
  EXPECT_GT(counts[static_cast<int>(cuda::SeparablePath::two_pass)], 0);
  EXPECT_GT(counts[static_cast<int>(cuda::SeparablePath::generic)], 0);
}
#endif  // OOC_HAVE_CUDA

TEST(Gpu, BadDeviceIndexIsADeviceError) {
  OOC_REQUIRE_GPU();
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(1, 0);
  try {
    auto op = make_separable(ImageSpec{8, 8, 1, SampleType::f32}, p);
    select_backend("cuda", "99", {op.get()});
    FAIL() << "device 99 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device);
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(Gpu, NoDeviceGivesAClearMessage) {
  if (cuda_device_count() > 0)
    GTEST_SKIP() << "a CUDA device is present: this is the CPU-only case";
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(1, 0);
  try {
    auto op = make_separable(ImageSpec{8, 8, 1, SampleType::f32}, p);
    select_backend("cuda", "all", {op.get()});
    FAIL() << "--device cuda accepted without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device);
    EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ooc
