// The right-hand sides X that oocatax generates (--x ones, --x random) and ooccheck --atax
// regenerates: one definition, so that both make the same X bit for bit, whatever the order or
// the threads that evaluate it.
#pragma once

#include <cstdint>

namespace ooc {

namespace atax_x_detail {

// splitmix64's finalizer, as in the synthetic images: neighbouring inputs give unrelated outputs.
constexpr std::uint64_t mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 53 random bits: exact in a double.
constexpr double unit(std::uint64_t h) noexcept {
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace atax_x_detail

// --x ones: X[i, j] = 1.
constexpr double atax_ones_x(std::int64_t /*i*/, std::int64_t /*j*/) noexcept {
  return 1.0;
}

// --x random: X[i, j] (row i < n, column j < k of an n x k X) uniform in [-1, 1),
//   X[i, j] = 2 unit(mix(seed * 0x9E3779B97F4A7C15 + (i * k + j) + 1)) - 1
// in unsigned 64-bit arithmetic (wrapping), as a double (exact: 53 bits; rounded when stored as
// f32). It depends on k: the same seed gives another X for another k.
constexpr double atax_random_x(std::uint64_t seed, std::int64_t i, std::int64_t j,
                               std::int64_t k) noexcept {
  const std::uint64_t index =
      static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(k) + static_cast<std::uint64_t>(j);
  return 2.0 * atax_x_detail::unit(atax_x_detail::mix(seed * 0x9E3779B97F4A7C15ULL + index + 1)) -
         1.0;
}

}  // namespace ooc
