// The GPU label input's bits (kernels/cpu/labels/mask_bits.hpp) against a bit-by-bit reference:
// every sample type, -0.0 and NaN, widths around the 32- and 64-sample words, poisoned output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/cpu/labels/mask_bits.hpp"

namespace ooc {
namespace {

template <class T>
void check(SampleType type, std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 5);
  for (const std::int64_t w : {1, 2, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 1000}) {
    const std::int64_t h = 3;
    const std::size_t row = static_cast<std::size_t>(w + 5) * sizeof(T);  // padded rows in
    std::vector<std::byte> in(row * h);
    std::vector<bool> want(static_cast<std::size_t>(w * h));
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t x = 0; x < w; ++x) {
        const int k = pick(rng);
        T v = static_cast<T>(k);  // 0 background, others foreground
        if constexpr (std::is_floating_point_v<T>) {
          if (k == 1) v = -T(0);
          if (k == 2) v = std::numeric_limits<T>::quiet_NaN();
        }
        std::memcpy(in.data() + y * row + x * sizeof(T), &v, sizeof(T));
        want[static_cast<std::size_t>(y * w + x)] = v != T(0);
      }
    const std::size_t out_row = kernels::mask_bits_row_bytes(w) + 8;
    ASSERT_EQ(kernels::mask_bits_row_bytes(w) % 4, 0u);
    ASSERT_GE(kernels::mask_bits_row_bytes(w) * 8, static_cast<std::size_t>(w));
    std::vector<std::byte> out(out_row * h, std::byte{0xa5});  // poison
    kernels::mask_bits_rows(in.data(), h, row, w, type, out.data(), out_row);
    for (std::int64_t y = 0; y < h; ++y) {
      std::vector<std::uint32_t> words(kernels::mask_bits_row_bytes(w) / 4);
      std::memcpy(words.data(), out.data() + y * out_row, words.size() * 4);
      for (std::int64_t x = 0; x < static_cast<std::int64_t>(words.size()) * 32; ++x) {
        const bool got = (words[static_cast<std::size_t>(x / 32)] >> (x % 32)) & 1u;
        const bool expect = x < w && want[static_cast<std::size_t>(y * w + x)];
        ASSERT_EQ(got, expect) << name(type) << " width " << w << " row " << y << " sample " << x;
      }
      // Past the row's words: untouched.
      for (std::size_t b = words.size() * 4; b < out_row; ++b)
        ASSERT_EQ(out[y * out_row + b], std::byte{0xa5}) << name(type) << " width " << w;
    }
  }
}

TEST(MaskBits, EverySampleTypeAsItsNonZeroSamples) {
  std::mt19937 rng(11);
  check<std::uint8_t>(SampleType::u8, rng);
  check<std::uint16_t>(SampleType::u16, rng);
  check<std::int16_t>(SampleType::i16, rng);
  check<std::uint32_t>(SampleType::u32, rng);
  check<std::int32_t>(SampleType::i32, rng);
  check<float>(SampleType::f32, rng);
  check<double>(SampleType::f64, rng);
  check<std::uint64_t>(SampleType::u64, rng);
}

}  // namespace
}  // namespace ooc
