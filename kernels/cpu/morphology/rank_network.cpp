// Run-time choice between the builds of the median networks (rank_network_impl.cpp) for each
// instruction set.
#include "median_network.hpp"

#include "kernels/cpu/cpu_features.hpp"

namespace ooc::kernels {

#define OOC_MEDIAN_NETWORK_ISA(ns)                                                  \
  namespace ns {                                                                    \
  template <class T>                                                                \
  void median_network_row(int n, const T* const* rows, std::int64_t W, T* out,      \
                          std::int64_t stride);                                     \
  template <class T>                                                                \
  void median_network_row_direct(int n, const T* const* rows, const T* const* left, \
                                 const T* const* right, std::int64_t W, T* out);    \
  std::int64_t median_network_lanes(std::size_t bytes);                             \
  }
OOC_MEDIAN_NETWORK_ISA(baseline)
#if defined(__x86_64__)
OOC_MEDIAN_NETWORK_ISA(avx2)
#endif

std::int64_t median_network_min_width(std::size_t bytes) {
  return baseline::median_network_lanes(bytes);
}

std::int64_t median_network_lanes(std::size_t bytes) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::median_network_lanes(bytes);
#endif
  return baseline::median_network_lanes(bytes);
}

#if defined(__x86_64__)
#define OOC_MEDIAN_NETWORK_WIDE(T, call)                          \
  if (has_avx2() && W >= avx2::median_network_lanes(sizeof(T))) { \
    avx2::call;                                                   \
    return;                                                       \
  }
#else
#define OOC_MEDIAN_NETWORK_WIDE(T, call)
#endif

#define OOC_MEDIAN_NETWORK_DEFINE(T)                                                       \
  void median_network_row(int n, const T* const* rows, std::int64_t W, T* out,             \
                          std::int64_t stride) {                                           \
    OOC_MEDIAN_NETWORK_WIDE(T, median_network_row<T>(n, rows, W, out, stride))             \
    baseline::median_network_row<T>(n, rows, W, out, stride);                              \
  }                                                                                        \
  void median_network_row_direct(int n, const T* const* rows, const T* const* left,        \
                                 const T* const* right, std::int64_t W, T* out) {          \
    OOC_MEDIAN_NETWORK_WIDE(T, median_network_row_direct<T>(n, rows, left, right, W, out)) \
    baseline::median_network_row_direct<T>(n, rows, left, right, W, out);                  \
  }
OOC_MEDIAN_NETWORK_DEFINE(std::uint8_t)
OOC_MEDIAN_NETWORK_DEFINE(std::uint16_t)
OOC_MEDIAN_NETWORK_DEFINE(std::int16_t)
OOC_MEDIAN_NETWORK_DEFINE(std::uint32_t)
OOC_MEDIAN_NETWORK_DEFINE(std::int32_t)
OOC_MEDIAN_NETWORK_DEFINE(float)
OOC_MEDIAN_NETWORK_DEFINE(double)

}  // namespace ooc::kernels
