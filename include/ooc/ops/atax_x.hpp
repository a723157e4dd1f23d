// The X that `oocatax --x random` generates and `ooccheck --atax --x random` rebuilds: one
// definition, so the check is of the product and not of two generators.
#pragma once

#include <cstdint>

namespace ooc {

// X[i, j] of an X with k columns, uniform in [-1, 1), from the seed (splitmix64's finalizer).
inline double atax_random_x(std::uint64_t seed, std::int64_t i, std::int64_t j, std::int64_t k) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(i * k + j) + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return 2.0 * (static_cast<double>(z >> 11) * 0x1.0p-53) - 1.0;
}

}  // namespace ooc
