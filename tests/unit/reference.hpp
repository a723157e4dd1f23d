// Test helpers: random images, the library's in-memory Source and Sink over buffers of their own
// (the sink poisoned), and the float64 references of the separable and 2-D convolutions: ooccheck's
// (tools/ooccheck/reference.hpp, written from scipy's definitions, not from the kernels) over
// those buffers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/engine.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"
#include "ooc/memory.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooccheck/reference.hpp"

namespace ooc::test {

// Reads sample i of a buffer of type t as double.
inline double get(const std::vector<std::byte>& buf, SampleType t, std::size_t i) {
  double v = 0;
  check::to_double(t, buf.data() + i * sample_bytes(t), 1, &v);
  return v;
}

inline void put(std::vector<std::byte>& buf, SampleType t, std::size_t i, double v) {
  std::byte* p = buf.data() + i * sample_bytes(t);
  auto wr = [p]<class T>(T x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case SampleType::u8:
      return wr(static_cast<std::uint8_t>(v));
    case SampleType::u16:
      return wr(static_cast<std::uint16_t>(v));
    case SampleType::i16:
      return wr(static_cast<std::int16_t>(v));
    case SampleType::u32:
      return wr(static_cast<std::uint32_t>(v));
    case SampleType::i32:
      return wr(static_cast<std::int32_t>(v));
    case SampleType::f32:
      return wr(static_cast<float>(v));
    case SampleType::f64:
      return wr(v);
    case SampleType::u64:
      return wr(static_cast<std::uint64_t>(v));
  }
}

// Random non-zero samples over most of the type's range (floats in +-1000).
inline std::vector<std::byte> random_image(const ImageSpec& s, std::uint64_t seed) {
  std::vector<std::byte> buf(s.total_bytes());
  std::mt19937_64 rng(seed);
  const double lo = is_integer(s.type) ? lowest_value(s.type) : -1000.0;
  const double hi = is_integer(s.type) ? highest_value(s.type) : 1000.0;
  std::uniform_real_distribution<double> u(lo, hi);
  const std::size_t n = s.total_bytes() / sample_bytes(s.type);
  for (std::size_t i = 0; i < n; ++i) {
    double v = u(rng);
    if (is_integer(s.type)) v = std::floor(v);
    if (v == 0) v = 1;
    put(buf, s.type, i, v);
  }
  return buf;
}

// The library's MemorySource over a buffer of its own.
struct SourceBytes {
  std::vector<std::byte> bytes;
};
class MemorySource final : private SourceBytes, public ooc::MemorySource {
 public:
  MemorySource(ImageSpec spec, std::vector<std::byte> data)
      : SourceBytes{std::move(data)}, ooc::MemorySource(MemoryImage::dense(spec, bytes.data())) {}
  MemorySource(const MemorySource&) = delete;
  MemorySource& operator=(const MemorySource&) = delete;
};

// The library's MemorySink over a buffer of its own, which starts poisoned (0xA5 bytes: NaN-like
// floats, odd integers); counts writes per row. Copies write into their own buffer.
struct SinkBytes {
  std::vector<std::byte> data;
  std::vector<int> writes;
};
class MemorySink final : public SinkBytes, public ooc::MemorySink {
 public:
  explicit MemorySink(const ImageSpec& spec)
      : SinkBytes{std::vector<std::byte>(spec.total_bytes(), std::byte{0xA5}),
                  std::vector<int>(static_cast<std::size_t>(spec.height), 0)},
        ooc::MemorySink(MemoryImage::dense(spec, data.data())) {}
  MemorySink(const MemorySink& o)
      : SinkBytes(o), ooc::MemorySink(MemoryImage::dense(o.spec(), data.data())) {}
  MemorySink(MemorySink&& o) noexcept
      : SinkBytes(std::move(o)), ooc::MemorySink(MemoryImage::dense(o.spec(), data.data())) {}
  MemorySink& operator=(const MemorySink&) = delete;
  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* p,
                  std::size_t stride) override {
    ooc::MemorySink::write_rows(y0, n, p, stride);
    for (std::int64_t y = 0; y < n; ++y) ++writes[static_cast<std::size_t>(y0 + y)];
  }
};

// Runs `op` over an in-memory image through the real pipeline and plan; returns the poisoned sink.
inline MemorySink run_in_memory(Operation& op, const ImageSpec& spec,
                                const std::vector<std::byte>& data, const EngineOptions& o,
                                const Backend& backend = {}) {
  MemorySource src(spec, data);
  MemorySink sink(*op.output());
  // A GPU run here tests the GPU: no bands on the CPU while CUDA starts, unless asked for.
  EngineOptions po = o;
  if (backend.cuda && po.cpu_start_bands < 0) po.cpu_start_bands = 0;
  Engine engine(src, backend, plan_bands(spec, {&op}, backend, po));
  engine.run(op, &sink);
  return sink;
}

struct Reference {
  std::vector<double> value;  // H x W x C
  std::vector<double> scale;  // sum of |term|: the size of the rounding error f32 can make
};

// out = convolve1d(convolve1d(in, row, axis=x), col, axis=y) in float64, as scipy.ndimage defines
// it: out[i] = sum_j w[j] * in[i + r - j]; ooccheck's reference (tools/ooccheck/reference.hpp),
// over the whole image as one band. With the constant border, rows outside the image are
// constant in the intermediate image (the column pass extends it with cval).
inline Reference reference(const ImageSpec& s, const std::vector<std::byte>& in,
                           const std::vector<double>& row, const std::vector<double>& col,
                           BorderMode border, double cval) {
  // The source only reads the bytes.
  ooc::MemorySource src(MemoryImage::dense(s, const_cast<std::byte*>(in.data())));
  check::SeparableReference ref(src, row, col, border, cval, 0.0);
  const std::int64_t n = s.row_samples();
  Reference out;
  out.value.assign(static_cast<std::size_t>(n * s.height), 0.0);
  out.scale.assign(out.value.size(), 0.0);
  ref.compute_band(0, s.height);
  for (std::int64_t y = 0; y < s.height; ++y)
    ref.column_pass(y, out.value.data() + y * n, out.scale.data() + y * n);
  return out;
}

// Every sample within tolerance of the reference, every row written exactly once.
inline void expect_matches(const MemorySink& out, const test::Reference& ref, bool f64_accumulate,
                           const std::string& what) {
  for (std::size_t y = 0; y < out.writes.size(); ++y)
    ASSERT_EQ(out.writes[y], 1) << what << ": row " << y << " written " << out.writes[y]
                                << " times";
  const SampleType t = out.spec().type;
  const double rel = f64_accumulate ? 1e-12 : 1e-5;
  for (std::size_t i = 0; i < ref.value.size(); ++i) {
    const double got = test::get(out.data, t, i);
    if (is_integer(t)) {
      const double want =
          std::nearbyint(std::clamp(ref.value[i], lowest_value(t), highest_value(t)));
      ASSERT_LE(std::abs(got - want), 1.0) << what << ": sample " << i << " ref " << ref.value[i];
    } else {
      // Accumulation error, plus the rounding of the result to an f32 output.
      const double out_eps = t == SampleType::f32 ? 0x1p-23 * std::abs(ref.value[i]) : 0.0;
      const double tol = rel * ref.scale[i] + out_eps + 1e-30;
      ASSERT_LE(std::abs(got - ref.value[i]), tol)
          << what << ": sample " << i << " got " << got << " ref " << ref.value[i];
    }
  }
}

// The sweep both backends run: every type x 1-4 channels x every border, named "f32_c3_wrap".
using SweepParam = std::tuple<SampleType, int, BorderMode>;
inline auto sweep_values() {
  return ::testing::Combine(
      ::testing::ValuesIn(kAllSampleTypes), ::testing::Values(1, 2, 3, 4),
      ::testing::Values(BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                        BorderMode::wrap, BorderMode::constant));
}
inline std::string sweep_name(const ::testing::TestParamInfo<SweepParam>& info) {
  return std::string(name(std::get<0>(info.param))) + "_c" +
         std::to_string(std::get<1>(info.param)) + "_" + std::string(name(std::get<2>(info.param)));
}

// One sample of the 2-D convolution, in float64, as scipy.ndimage.convolve defines it (the
// kernel flipped; the border rule along both axes): ooccheck's reference
// (tools/ooccheck/reference.hpp). It computes the sample's whole output row and keeps it for the
// next calls of the same row, image and kernel, so that a test walking an image row by row pays
// one row's sums per row; a changed row y of the input, kernel or border computes it anew.
inline double convolve_at(const ImageSpec& s, const std::vector<std::byte>& d, const Kernel2d& k,
                          BorderMode b, double cval, std::int64_t y, std::int64_t x, int c) {
  // What the row computed depends on (a NaN cval never compares equal: computed anew).
  struct Key {
    const std::byte* data = nullptr;
    std::int64_t width = 0, height = 0, y = -1;
    int channels = 0;
    SampleType type = SampleType::u8;
    std::int64_t rows = 0, cols = 0;
    std::vector<double> taps;
    BorderMode border = BorderMode::reflect;
    double cval = 0;
    bool operator==(const Key&) const = default;
  };
  struct Row {
    Key key;
    std::vector<std::byte> input_row;  // row y of the input, as it was
    std::vector<double> out;
  };
  thread_local Row kept;
  const std::size_t row_bytes = s.row_bytes();
  const std::byte* input_row = d.data() + static_cast<std::size_t>(y) * row_bytes;
  Key key{d.data(), s.width, s.height, y, s.channels, s.type, k.rows, k.cols, k.taps, b, cval};
  if (!(kept.key == key) || std::memcmp(kept.input_row.data(), input_row, row_bytes) != 0) {
    ooc::MemorySource src(MemoryImage::dense(s, const_cast<std::byte*>(d.data())));
    const check::KernelTaps taps{k.rows, k.cols, k.taps};
    check::Reference2d ref(src, taps, b, cval, 0.0);
    const auto n = static_cast<std::size_t>(s.row_samples());
    std::vector<double> mag(n), sum_abs(n);
    kept.out.resize(n);
    ref.load_band(y, 1);
    ref.output_row(0, kept.out.data(), mag.data(), sum_abs.data());
    kept.key = std::move(key);
    kept.input_row.assign(input_row, input_row + row_bytes);
  }
  return kept.out[static_cast<std::size_t>(x * s.channels + c)];
}

}  // namespace ooc::test
