// OOC_KERNEL_TRY: the kernels' CUDA runtime calls (launch errors, attributes) go through it; a
// failure throws ooc::Error (device kind) naming the call, the file and the line. The kernel layer
// has its own check so that it includes nothing above it: the engine's OOC_CUDA_TRY
// (src/cuda/check.hpp) adds advice in the tools' terms (--mem-limit, --slots) for its allocations,
// which no kernel call makes.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "ooc/error.hpp"

namespace ooc::cuda {

[[noreturn]] inline void throw_kernel_error(cudaError_t err, const char* call, const char* file,
                                            int line) {
  throw Error(ErrorKind::device, std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                                     cudaGetErrorString(err) + ") in " + call + " at " + file +
                                     ":" + std::to_string(line));
}

}  // namespace ooc::cuda

#define OOC_KERNEL_TRY(expr)                                                       \
  do {                                                                             \
    const cudaError_t ooc_kernel_err_ = (expr);                                    \
    if (ooc_kernel_err_ != cudaSuccess)                                            \
      ::ooc::cuda::throw_kernel_error(ooc_kernel_err_, #expr, __FILE__, __LINE__); \
  } while (0)
