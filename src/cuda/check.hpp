// OOC_CUDA_TRY: every CUDA runtime call goes through it; a failure throws ooc::Error (device kind)
// naming the call, the file and the line. Never exits: main() decides the exit code.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "ooc/error.hpp"

namespace ooc::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  std::string msg = std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ") in " + call + " at " + file + ":" +
                    std::to_string(line);
  if (err == cudaErrorMemoryAllocation)
    msg += ": the GPU is out of memory; lower --mem-limit or --slots";
  throw Error(ErrorKind::device, msg);
}

}  // namespace ooc::cuda

#define OOC_CUDA_TRY(expr)                                                     \
  do {                                                                         \
    const cudaError_t ooc_cuda_err_ = (expr);                                  \
    if (ooc_cuda_err_ != cudaSuccess)                                          \
      ::ooc::cuda::throw_cuda_error(ooc_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)
