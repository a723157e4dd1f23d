// NPP helpers of the bench tools: a stream context filled from the device, and a check that
// turns an NPP error status into an ooc::Error naming the call.
#pragma once
#include <cuda_runtime.h>
#include <nppdefs.h>

#include <string>

#include "cuda/check.hpp"
#include "ooc/error.hpp"

#define OOC_NPP_TRY(expr)                                                                         \
  do {                                                                                            \
    const NppStatus ooc_npp_st_ = (expr);                                                         \
    if (ooc_npp_st_ < 0)                                                                          \
      throw ::ooc::Error(::ooc::ErrorKind::device,                                                \
                         std::string("NPP error ") + std::to_string(ooc_npp_st_) + " in " #expr); \
  } while (0)

namespace ooc::bench {

// NPP's _Ctx functions take the stream and the device's limits in one struct.
inline NppStreamContext npp_context(cudaStream_t s) {
  NppStreamContext c{};
  c.hStream = s;
  OOC_CUDA_TRY(cudaGetDevice(&c.nCudaDeviceId));
  const int d = c.nCudaDeviceId;
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&c.nMultiProcessorCount, cudaDevAttrMultiProcessorCount, d));
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&c.nMaxThreadsPerMultiProcessor,
                                      cudaDevAttrMaxThreadsPerMultiProcessor, d));
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&c.nMaxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, d));
  int smem = 0;
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, d));
  c.nSharedMemPerBlock = static_cast<std::size_t>(smem);
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&c.nCudaDevAttrComputeCapabilityMajor,
                                      cudaDevAttrComputeCapabilityMajor, d));
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&c.nCudaDevAttrComputeCapabilityMinor,
                                      cudaDevAttrComputeCapabilityMinor, d));
  OOC_CUDA_TRY(cudaStreamGetFlags(s, &c.nStreamFlags));
  return c;
}

}  // namespace ooc::bench
