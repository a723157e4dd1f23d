// The hashing behind every deterministic random value (synthetic images, oocatax's --x random,
// ooccheck's --sample picks): a value from a counter, the same in every build and thread order.
#pragma once

#include <cstdint>

namespace ooc {

// splitmix64's finalizer: neighbouring inputs give unrelated outputs.
constexpr std::uint64_t mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 53 random bits: exact in a double.
constexpr double unit(std::uint64_t h) noexcept {
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace ooc
