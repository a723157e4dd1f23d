// The selections of the masked rank filters (masked.hpp) in float: the k-th smallest of a
// window's valid samples, compiled for AVX2 and for the baseline and picked when the program
// loads (GCC's target_clones), since the rank kernel around it is compiled once, for the
// baseline; and the run-time choice between the builds of median_lanes_impl.cpp.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/cpu/cpu_features.hpp"
#include "masked.hpp"

namespace ooc::kernels {

// The entry points each build of median_lanes_impl.cpp defines, in its namespace.
#define OOC_MASKED_MEDIAN_ENTRIES                                                              \
  std::int64_t masked_median_lanes();                                                          \
  void masked_median_f32(int n, const float* const* rows, const std::uint8_t* const* holes,    \
                         float* out);                                                          \
  void masked_median_row_f32(int n, const float* const* rows, const std::uint8_t* const* bits, \
                             std::int64_t x0, std::int64_t x1, bool nan_only, float nd,        \
                             float fill, float* out);                                          \
  void masked_hole_bits_f32(const float* row, std::int64_t w, bool nan_only, float nd,         \
                            std::uint8_t* bits);                                               \
  void masked_median_windows_f32(int n, const float* w, std::int64_t count, float* out);
namespace baseline {
OOC_MASKED_MEDIAN_ENTRIES
}  // namespace baseline
#if defined(__x86_64__)
namespace avx2 {
OOC_MASKED_MEDIAN_ENTRIES
}  // namespace avx2
#endif
#undef OOC_MASKED_MEDIAN_ENTRIES

namespace masked {

std::int64_t median_lanes() {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::masked_median_lanes();
#endif
  return baseline::masked_median_lanes();
}

void median_f32(int n, const float* const* rows, const std::uint8_t* const* holes, float* out) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::masked_median_f32(n, rows, holes, out);
#endif
  baseline::masked_median_f32(n, rows, holes, out);
}

void median_row_f32(int n, const float* const* rows, const std::uint8_t* const* bits,
                    std::int64_t x0, std::int64_t x1, bool nan_only, float nd, float fill,
                    float* out) {
#if defined(__x86_64__)
  if (has_avx2())
    return avx2::masked_median_row_f32(n, rows, bits, x0, x1, nan_only, nd, fill, out);
#endif
  baseline::masked_median_row_f32(n, rows, bits, x0, x1, nan_only, nd, fill, out);
}

void median_windows_f32(int n, const float* w, std::int64_t count, float* out) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::masked_median_windows_f32(n, w, count, out);
#endif
  baseline::masked_median_windows_f32(n, w, count, out);
}

void hole_bits_f32(const float* row, std::int64_t w, bool nan_only, float nd, std::uint8_t* bits) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::masked_hole_bits_f32(row, w, nan_only, nd, bits);
#endif
  baseline::masked_hole_bits_f32(row, w, nan_only, nd, bits);
}

// By counting, for each sample in turn, those below it and those equal, 8 at a time over the
// window padded with +inf; the first sample whose counts hold k is the k-th. A window of tens of
// samples: several times faster than std::nth_element's partitions, and it stops early.
__attribute__((target_clones("avx2", "default"))) float kth_smallest_f32(float* v, std::int64_t n,
                                                                         std::int64_t k) {
  typedef float F8 __attribute__((vector_size(32)));
  typedef int I8 __attribute__((vector_size(32)));
  typedef float F8u __attribute__((vector_size(32), aligned(4), may_alias));
  const std::int64_t m = (n + 7) / 8 * 8;
  std::fill(v + n, v + m, std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < n; ++i) {
    const F8 x = F8{} + v[i];
    I8 lt{}, eq{};
    for (std::int64_t j = 0; j < m; j += 8) {
      const F8 y = *reinterpret_cast<const F8u*>(v + j);
      lt += y < x;
      eq += y == x;
    }
    std::int64_t less = 0, same = 0;
    for (int l = 0; l < 8; ++l) {
      less -= lt[l];
      same -= eq[l];
    }
    if (less <= k && k < less + same) return v[i];
  }
  std::nth_element(v, v + k, v + n);  // not reached without NaN
  return v[k];
}

}  // namespace masked
}  // namespace ooc::kernels
