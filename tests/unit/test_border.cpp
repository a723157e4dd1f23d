// Border rules against an independent definition: fold the coordinate back step by step, the way
// the modes are drawn in scipy's documentation, for coordinates many image sizes away.
#include <gtest/gtest.h>

#include "ooc/border.hpp"
#include "ooc/error.hpp"

namespace ooc {
namespace {

std::int64_t folded(std::int64_t i, std::int64_t n, BorderMode m) {
  if (m == BorderMode::constant) return (i >= 0 && i < n) ? i : -1;
  if (m == BorderMode::nearest) return i < 0 ? 0 : (i >= n ? n - 1 : i);
  if (m == BorderMode::wrap) {
    while (i < 0) i += n;
    while (i >= n) i -= n;
    return i;
  }
  if (m == BorderMode::mirror && n == 1) return 0;
  while (i < 0 || i >= n) {
    if (m == BorderMode::reflect) {
      i = i < 0 ? -i - 1 : 2 * n - 1 - i;  // d c b a | a b c d
    } else {
      i = i < 0 ? -i : 2 * n - 2 - i;  // d c b | a b c d
    }
  }
  return i;
}

TEST(Border, MatchesFoldingForAllModesSizesAndFarCoordinates) {
  for (BorderMode m : {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                       BorderMode::wrap, BorderMode::constant})
    for (std::int64_t n : {1, 2, 3, 4, 7, 16})
      for (std::int64_t i = -5 * n - 3; i < 6 * n + 3; ++i)
        ASSERT_EQ(map_border(i, n, m), folded(i, n, m))
            << "mode " << name(m) << " n " << n << " i " << i;
}

TEST(Border, ScipyDocumentedExamples) {
  // "a b c d" extended by 4 on each side, as drawn in scipy.ndimage's documentation.
  auto row = [](BorderMode m) {
    std::string s;
    for (std::int64_t i = -4; i < 8; ++i) {
      const std::int64_t k = map_border(i, 4, m);
      s += k < 0 ? 'k' : static_cast<char>('a' + k);
    }
    return s;
  };
  EXPECT_EQ(row(BorderMode::reflect), "dcbaabcddcba");
  EXPECT_EQ(row(BorderMode::mirror), "cdcbabcdcbab");
  EXPECT_EQ(row(BorderMode::nearest), "aaaaabcddddd");
  EXPECT_EQ(row(BorderMode::wrap), "abcdabcdabcd");
  EXPECT_EQ(row(BorderMode::constant), "kkkkabcdkkkk");
}

TEST(Border, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_border_mode("wrap"), BorderMode::wrap);
  EXPECT_THROW(parse_border_mode("periodic"), Error);
}

}  // namespace
}  // namespace ooc
