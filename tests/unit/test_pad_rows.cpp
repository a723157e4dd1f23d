// The 3-D rank filters' row padding (ops/morphology/pad_rows.hpp) against the border rule applied
// sample by sample: every mode, margins wider than the row, interleaved channels, rows of the
// constant, and the band's rows at their stride.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/morphology/pad_rows.hpp"

namespace ooc::detail::morphology {
namespace {

constexpr BorderMode kModes[] = {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                                 BorderMode::wrap, BorderMode::constant};

template <typename T>
std::vector<T> by_sample(const T* from, std::int64_t W, std::int64_t C, std::int64_t left,
                         std::int64_t right, BorderMode m, T c0) {
  std::vector<T> out;
  for (std::int64_t q = 0; q < W + left + right; ++q) {
    const std::int64_t x = from ? map_border(q - left, W, m) : -1;
    for (std::int64_t c = 0; c < C; ++c) out.push_back(x < 0 ? c0 : from[x * C + c]);
  }
  return out;
}

template <typename T>
void check_rows(T c0) {
  for (BorderMode m : kModes)
    for (std::int64_t W : {1, 2, 3, 5, 16})
      for (std::int64_t C : {1, 3})
        for (std::int64_t left : {0, 1, 2, 4, 9, 40})
          for (std::int64_t right : {0, 1, 3, 17}) {
            std::vector<T> row(static_cast<std::size_t>(W * C));
            for (std::size_t i = 0; i < row.size(); ++i) row[i] = static_cast<T>(3 * i + 1);
            for (const T* from :
                 {static_cast<const T*>(row.data()), static_cast<const T*>(nullptr)}) {
              const auto want = by_sample(from, W, C, left, right, m, c0);
              std::vector<T> got(want.size() + 2, T(99));
              pad_row(from, W, C, left, right, m, c0, got.data());
              ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(T)), 0)
                  << name(m) << " W " << W << " C " << C << " left " << left << " right " << right
                  << (from ? "" : " (constant row)");
              ASSERT_EQ(got[want.size()], T(99));  // nothing written past the row
            }
          }
}

TEST(PadRows, EveryModeAndMarginMatchesTheRuleBySample) {
  check_rows<std::uint16_t>(7);
  check_rows<float>(-2.5f);
  check_rows<double>(std::numeric_limits<double>::quiet_NaN());
}

TEST(PadRows, BandRowsLandAtTheirStride) {
  const std::int64_t W = 6, C = 2, left = 2, right = 3, halo = 1, plane_halo = 1, rows = 2;
  const std::int64_t count = (2 * plane_halo + 1) * (rows + 2 * halo);
  std::vector<std::vector<float>> data(static_cast<std::size_t>(count));
  std::vector<const std::byte*> ptrs;
  for (std::int64_t r = 0; r < count; ++r) {
    auto& d = data[static_cast<std::size_t>(r)];
    for (std::int64_t i = 0; i < W * C; ++i) d.push_back(static_cast<float>(100 * r + i));
    // One plane's row of the constant border.
    ptrs.push_back(r == 5 ? nullptr : reinterpret_cast<const std::byte*>(d.data()));
  }
  CpuBand b;
  b.rows = ptrs.data();
  b.halo = halo;
  b.plane_halo = plane_halo;
  b.band.rows = rows;
  b.in.width = W;
  b.in.channels = C;
  b.in.type = SampleType::f32;
  const std::size_t padded_row = static_cast<std::size_t>(W + left + right + 1) * C * sizeof(float);
  std::vector<std::byte> to(static_cast<std::size_t>(count) * padded_row, std::byte{0x5a});
  pad_band_rows(b, left, right, BorderMode::mirror, 7.0, to.data(), padded_row);
  for (std::int64_t r = 0; r < count; ++r) {
    const auto want = by_sample(reinterpret_cast<const float*>(ptrs[static_cast<std::size_t>(r)]),
                                W, C, left, right, BorderMode::mirror, 7.0f);
    const std::byte* got = to.data() + static_cast<std::size_t>(r) * padded_row;
    ASSERT_EQ(std::memcmp(got, want.data(), want.size() * sizeof(float)), 0) << "row " << r;
    for (std::size_t i = want.size() * sizeof(float); i < padded_row; ++i)
      ASSERT_EQ(got[i], std::byte{0x5a}) << "row " << r;  // the stride's slack left alone
  }
}

}  // namespace
}  // namespace ooc::detail::morphology
