// The right-hand sides X that oocatax generates (--x ones, --x random) and ooccheck --atax
// regenerates: one definition, so that both make the same X bit for bit, whatever the order or
// the threads that evaluate it.
#pragma once

#include <cstdint>

#include "ooc/detail/hash.hpp"

namespace ooc {

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
  return 2.0 * unit(mix(seed * 0x9E3779B97F4A7C15ULL + index + 1)) - 1.0;
}

}  // namespace ooc
