// The median networks' rows (median_network.hpp), compiled once per instruction set
// (CMakeLists.txt: OOC_ISA names the namespace; rank_network.cpp picks one at run time).
#include <cstdint>
#include <utility>

#include "median_network.hpp"
#include "rank_network.hpp"

#ifndef OOC_ISA
#error "OOC_ISA must name the instruction-set namespace"
#endif

namespace ooc::kernels::OOC_ISA {

namespace {

template <class T, int N>
void row_direct(const T* const* rows, const T* const* left, const T* const* right, std::int64_t W,
                T* out) {
  constexpr std::int64_t L = kernels::kLanes25<T>, h = N / 2;
  kernels::median_lanes<T, N>(left, 0, out, 1);
  // Image column x0 - h + j of every lane's window lies in [0, W) for x0 in [h, W - L - h].
  const T* r[N];
  for (int k = 0; k < N; ++k) r[k] = rows[k] - h + L;  // in the image: L >= h
  std::int64_t x = L;
  for (; x + L <= W - L; x += L) kernels::median_lanes<T, N>(r, x - L, out + L, 1);
  if (x < W - L) kernels::median_lanes<T, N>(r, W - 3 * L, out + L, 1);
  kernels::median_lanes<T, N>(right, 0, out + (W - L), 1);
}

}  // namespace

template <class T>
void median_network_row(int n, const T* const* rows, std::int64_t W, T* out, std::int64_t stride) {
  if (n == 5)
    kernels::median25_row<T, 5>(rows, W, out, stride);
  else
    kernels::median25_row<T, 3>(rows, W, out, stride);
}

template <class T>
void median_network_row_direct(int n, const T* const* rows, const T* const* left,
                               const T* const* right, std::int64_t W, T* out) {
  if (n == 5)
    row_direct<T, 5>(rows, left, right, W, out);
  else
    row_direct<T, 3>(rows, left, right, W, out);
}

std::int64_t median_network_lanes(std::size_t bytes) {
  return static_cast<std::int64_t>(kernels::kVecBytes / bytes);
}

#define OOC_MEDIAN_NETWORK_INSTANTIATE(T)                                                    \
  template void median_network_row<T>(int, const T* const*, std::int64_t, T*, std::int64_t); \
  template void median_network_row_direct<T>(int, const T* const*, const T* const*,          \
                                             const T* const*, std::int64_t, T*);
OOC_MEDIAN_NETWORK_INSTANTIATE(std::uint8_t)
OOC_MEDIAN_NETWORK_INSTANTIATE(std::uint16_t)
OOC_MEDIAN_NETWORK_INSTANTIATE(std::int16_t)
OOC_MEDIAN_NETWORK_INSTANTIATE(std::uint32_t)
OOC_MEDIAN_NETWORK_INSTANTIATE(std::int32_t)
OOC_MEDIAN_NETWORK_INSTANTIATE(float)
OOC_MEDIAN_NETWORK_INSTANTIATE(double)

}  // namespace ooc::kernels::OOC_ISA
