// Run-time choice between the builds of normalized_impl.cpp and volume_impl.cpp for different
// instruction sets, as kernels/cpu/convolution/separable.cpp chooses for the unmasked kernels.
#include "normalized.hpp"
#include "volume.hpp"

#include "kernels/cpu/cpu_features.hpp"

namespace ooc::kernels {

namespace baseline {
void normalized_band(const masked::NormalizedArgs& args);
std::size_t normalized_scratch_bytes(const masked::NormalizedArgs& args);
void volume_normalized_band(const masked::VolumeNormalizedArgs& args, std::vector<std::byte>& s);
std::size_t volume_normalized_band_bytes(const masked::VolumeNormalizedArgs& args);
std::size_t volume_normalized_thread_bytes(const masked::VolumeNormalizedArgs& args);
}  // namespace baseline
#if defined(__x86_64__)
namespace avx2 {
void normalized_band(const masked::NormalizedArgs& args);
void volume_normalized_band(const masked::VolumeNormalizedArgs& args, std::vector<std::byte>& s);
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

void volume_normalized_band(const VolumeNormalizedArgs& args, std::vector<std::byte>& s) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::volume_normalized_band(args, s);
#endif
  baseline::volume_normalized_band(args, s);
}

std::size_t volume_normalized_band_bytes(const VolumeNormalizedArgs& args) {
  return baseline::volume_normalized_band_bytes(args);
}

std::size_t volume_normalized_thread_bytes(const VolumeNormalizedArgs& args) {
  return baseline::volume_normalized_thread_bytes(args);
}

}  // namespace masked
}  // namespace ooc::kernels
