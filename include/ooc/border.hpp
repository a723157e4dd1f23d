// Border rules: where a coordinate outside the image takes its value from (scipy.ndimage modes).
#pragma once

#include <cstdint>
#include <string_view>

namespace ooc {

// scipy.ndimage names, for an image "a b c d":
//   reflect   d c b a | a b c d | d c b a   (half-sample symmetric; the default)
//   mirror    d c b   | a b c d | c b a     (whole-sample symmetric)
//   nearest   a a a a | a b c d | d d d d
//   wrap      a b c d | a b c d | a b c d
//   constant  k k k k | a b c d | k k k k   (k = --border-value)
enum class BorderMode { reflect, mirror, nearest, wrap, constant };

std::string_view name(BorderMode m) noexcept;
BorderMode parse_border_mode(std::string_view text);  // throws a usage Error

// Index in [0, n) that coordinate i reads, or -1 for the constant border. Right for any i, also
// when |i| exceeds n many times over (a radius larger than the image), and for n == 1.
constexpr std::int64_t map_border(std::int64_t i, std::int64_t n, BorderMode m) noexcept {
  if (i >= 0 && i < n) return i;
  switch (m) {
    case BorderMode::constant:
      return -1;
    case BorderMode::nearest:
      return i < 0 ? 0 : n - 1;
    case BorderMode::wrap: {
      const std::int64_t r = i % n;
      return r < 0 ? r + n : r;
    }
    case BorderMode::reflect: {
      const std::int64_t period = 2 * n;
      std::int64_t r = i % period;
      if (r < 0) r += period;
      return r < n ? r : period - 1 - r;
    }
    case BorderMode::mirror: {
      if (n == 1) return 0;
      const std::int64_t period = 2 * n - 2;
      std::int64_t r = i % period;
      if (r < 0) r += period;
      return r < n ? r : period - r;
    }
  }
  return -1;
}

}  // namespace ooc
