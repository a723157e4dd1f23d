// Filter factories: Gaussian and box taps, and parsing of explicit tap lists.
#include "ooc/filter.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "ooc/error.hpp"

namespace ooc {

namespace {
// 2 * radius + 1 taps must be countable and allocatable at all; callers bound it further by memory.
void check_radius(std::int64_t radius) {
  if (radius < 0)
    throw Error(ErrorKind::usage, "radius must be >= 0, got " + std::to_string(radius));
  if (radius > (std::int64_t{1} << 40))
    throw Error(ErrorKind::usage, "radius " + std::to_string(radius) + " is too large");
}
}  // namespace

std::int64_t gaussian_radius(double sigma) {
  // 1e-9: a sigma of k/3 typed in decimal (3 x 0.3333333333333334 is just over 1) is radius k.
  return static_cast<std::int64_t>(std::ceil(3.0 * sigma - 1e-9));
}

std::vector<double> gaussian_taps(std::int64_t radius, double sigma) {
  check_radius(radius);
  if (sigma <= 0) sigma = static_cast<double>(radius) / 3.0;
  std::vector<double> taps(2 * radius + 1, 0.0);
  if (radius == 0 || sigma <= 0) {
    taps[radius] = 1.0;
    return taps;
  }
  double sum = 0;
  for (std::int64_t i = -radius; i <= radius; ++i) {
    const double v = std::exp(-0.5 * (i / sigma) * (i / sigma));
    taps[i + radius] = v;
    sum += v;
  }
  for (double& t : taps) t /= sum;
  return taps;
}

std::vector<double> box_taps(std::int64_t radius) {
  check_radius(radius);
  return std::vector<double>(2 * radius + 1, 1.0 / static_cast<double>(2 * radius + 1));
}

std::vector<double> parse_taps(const std::string& text, const std::string& origin) {
  std::vector<double> taps;
  std::string token;
  std::istringstream in(text);
  auto flush = [&] {
    if (token.empty()) return;
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (end == token.c_str() || *end != '\0' || !std::isfinite(v))
      throw Error(ErrorKind::usage, origin + ": '" + token + "' is not a number");
    taps.push_back(v);
    token.clear();
  };
  for (char c; in.get(c);) {
    if (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      flush();
    } else {
      token += c;
    }
  }
  flush();
  if (taps.empty()) throw Error(ErrorKind::usage, origin + ": no taps given");
  if (taps.size() % 2 == 0)
    throw Error(ErrorKind::usage, origin + ": " + std::to_string(taps.size()) +
                                      " taps given; the count must be odd (2 x radius + 1)");
  return taps;
}

std::vector<double> correlation_taps(const std::vector<double>& taps) {
  return {taps.rbegin(), taps.rend()};
}

std::string SeparableFilter::describe() const {
  std::ostringstream s;
  s << "separable " << row.size() << "x" << col.size() << " taps (radius " << radius_x() << ", "
    << radius_y() << ")";
  return s.str();
}

}  // namespace ooc
