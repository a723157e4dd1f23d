// Run-time choice between the builds of normalized_impl.cpp for different instruction sets, as
// kernels/cpu/convolution/separable.cpp chooses for the unmasked kernels.
#include "normalized.hpp"

#include "kernels/cpu/cpu_features.hpp"

namespace ooc::kernels {

namespace baseline {
void normalized_band(const masked::NormalizedArgs& args);
std::size_t normalized_scratch_bytes(const masked::NormalizedArgs& args);
}  // namespace baseline
#if defined(__x86_64__)
namespace avx2 {
void normalized_band(const masked::NormalizedArgs& args);
}  // namespace avx2
#endif

namespace masked {

void normalized_band(const NormalizedArgs& args) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::normalized_band(args);
#endif
  baseline::normalized_band(args);
}

std::size_t normalized_scratch_bytes(const NormalizedArgs& args) {
  return baseline::normalized_scratch_bytes(args);
}

}  // namespace masked
}  // namespace ooc::kernels
