// The instruction sets the CPU kernels pick between at run time (each *_impl.cpp is compiled once
// per set, CMakeLists.txt's OOC_ISA): asked once per process, by every dispatcher the same way.
#pragma once

namespace ooc::kernels {

// AVX2 with FMA: the avx2 builds of the kernels use both.
inline bool has_avx2() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

}  // namespace ooc::kernels
