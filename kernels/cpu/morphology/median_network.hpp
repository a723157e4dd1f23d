// The 3 x 3 and 5 x 5 medians by their selection networks (rank_network.hpp) on vectors of
// adjacent output columns, compiled once per instruction set (rank_network_impl.cpp) and picked
// at run time (rank_network.cpp): with AVX2, 32-byte vectors, so 32 lanes of 8-bit samples
// (vpminub/vpmaxub), 16 of 16-bit ones (vpminuw/vpminsw), 8 of floats; else SSE2's 16 bytes.
// Exact: the networks only move samples.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ooc::kernels {

// The fewest output columns median_network_row takes for samples of `bytes` bytes.
std::int64_t median_network_min_width(std::size_t bytes);
// The lanes of the vectors median_network_row_direct works on (this CPU's widest set).
std::int64_t median_network_lanes(std::size_t bytes);

#define OOC_MEDIAN_NETWORK_DECLARE(T)                                               \
  void median_network_row(int n, const T* const* rows, std::int64_t W, T* out,      \
                          std::int64_t stride);                                     \
  void median_network_row_direct(int n, const T* const* rows, const T* const* left, \
                                 const T* const* right, std::int64_t W, T* out);
// median_network_row: one output row of the n x n median (n = 3 or 5), out[x * stride] for x < W,
// from rows[0..n-1], padded by the border rule to W + n - 1 samples (padded column q is image
// column q - n / 2). Needs W >= median_network_min_width(sizeof(T)).
//
// median_network_row_direct: the same for one channel, without padded rows: rows[r] are the
// image rows themselves (W samples), left[r] the padded samples of image columns [-h, L + h) and
// right[r] those of [W - L - h, W + h) (h = n / 2, L = median_network_lanes(sizeof(T))): the
// vectors away from the edges read the image rows, the two at the edges the padded pieces.
// Needs W >= 2 L + n.
OOC_MEDIAN_NETWORK_DECLARE(std::uint8_t)
OOC_MEDIAN_NETWORK_DECLARE(std::uint16_t)
OOC_MEDIAN_NETWORK_DECLARE(std::int16_t)
OOC_MEDIAN_NETWORK_DECLARE(std::uint32_t)
OOC_MEDIAN_NETWORK_DECLARE(std::int32_t)
OOC_MEDIAN_NETWORK_DECLARE(float)
OOC_MEDIAN_NETWORK_DECLARE(double)

}  // namespace ooc::kernels
