// Run-time choice between the builds of the matrix-product leaf kernels (atax_impl.cpp) for
// different instruction sets, the same choice separable.cpp makes for the filters.
#include "atax.hpp"

namespace ooc::cpu {

namespace baseline {
void atax_leaf_t(const LeafArgs& args);
void atax_leaf_y(const LeafArgs& args);
void atax_leaf_fused(const LeafArgs& args);
}  // namespace baseline
#if defined(__x86_64__)
namespace avx2 {
void atax_leaf_t(const LeafArgs& args);
void atax_leaf_y(const LeafArgs& args);
void atax_leaf_fused(const LeafArgs& args);
}  // namespace avx2
#endif

namespace {
bool has_avx2() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}
}  // namespace

int atax_padded_k(int k, bool f32) {
  if (k == 1) return 1;
  const int w = f32 ? 8 : 4;  // values in a 32-byte vector
  return (k + w - 1) / w * w;
}

void atax_leaf_t(const LeafArgs& args) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::atax_leaf_t(args);
#endif
  baseline::atax_leaf_t(args);
}

void atax_leaf_y(const LeafArgs& args) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::atax_leaf_y(args);
#endif
  baseline::atax_leaf_y(args);
}

}  // namespace ooc::cpu

namespace ooc::cpu {
void atax_leaf_fused(const LeafArgs& args) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::atax_leaf_fused(args);
#endif
  baseline::atax_leaf_fused(args);
}
}  // namespace ooc::cpu
