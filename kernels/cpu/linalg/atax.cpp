// Run-time choice between the builds of the matrix products' leaves (atax_impl.cpp) for each
// instruction set.
#include "atax.hpp"

#include "kernels/cpu/cpu_features.hpp"

namespace ooc::kernels {

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

void atax_leaf_fused(const LeafArgs& args) {
#if defined(__x86_64__)
  if (has_avx2()) return avx2::atax_leaf_fused(args);
#endif
  baseline::atax_leaf_fused(args);
}

}  // namespace ooc::kernels
