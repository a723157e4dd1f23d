// Run-time choice between the kernel builds for different instruction sets (separable_impl.cpp:
// the separable, the 2-D convolution and a volume's z pass).
#include "separable.hpp"

#include <string_view>

#include "conv2d.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "zpass.hpp"

namespace ooc::kernels {

namespace baseline {
void separable_band(const SeparableArgs& args);
std::size_t separable_scratch_bytes(const SeparableArgs& args);
void conv2d_band(const Conv2dArgs& args);
std::size_t conv2d_scratch_bytes(const Conv2dArgs& args);
void zpass_row(const ZPassArgs& args);
}  // namespace baseline
#if defined(__x86_64__)
namespace avx2 {
void separable_band(const SeparableArgs& args);
void conv2d_band(const Conv2dArgs& args);
void zpass_row(const ZPassArgs& args);
}  // namespace avx2
#endif

void separable_band(const SeparableArgs& args) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::separable_band(args);
#endif
  baseline::separable_band(args);
}

void conv2d_band(const Conv2dArgs& args) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::conv2d_band(args);
#endif
  baseline::conv2d_band(args);
}

void zpass_row(const ZPassArgs& args) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::zpass_row(args);
#endif
  baseline::zpass_row(args);
}

std::size_t conv2d_scratch_bytes(const Conv2dArgs& args) {
  return baseline::conv2d_scratch_bytes(args);
}

std::size_t separable_scratch_bytes(const SeparableArgs& args) {
  return baseline::separable_scratch_bytes(args);
}

const char* separable_isa() {
  return has_avx2() ? "avx2+fma" : "baseline";
}

bool sums_fma() {
  return std::string_view(separable_isa()) != "baseline";
}

}  // namespace ooc::kernels
