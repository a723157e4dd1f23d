// CUDA resource owners and device queries (see resources.hpp).
#include "resources.hpp"

#include "check.hpp"

namespace ooc::cuda {

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  OOC_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

void device_memory(int device, std::size_t& free_bytes, std::size_t& total_bytes) {
  OOC_CUDA_TRY(cudaSetDevice(device));
  OOC_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) : n_(bytes) {
  void* p = nullptr;
  // Portable: usable from every device's stream when slots span several GPUs.
  OOC_CUDA_TRY(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  p_ = static_cast<std::byte*>(p);
}

PinnedBuffer::~PinnedBuffer() {
  if (p_) cudaFreeHost(p_);
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : n_(bytes), dev_(device) {
  OOC_CUDA_TRY(cudaSetDevice(device));
  void* p = nullptr;
  OOC_CUDA_TRY(cudaMalloc(&p, bytes));
  p_ = static_cast<std::byte*>(p);
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) {
    cudaSetDevice(dev_);
    cudaFree(p_);
  }
}

StreamEvent::StreamEvent(int device) : dev_(device) {
  OOC_CUDA_TRY(cudaSetDevice(device));
  OOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  OOC_CUDA_TRY(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

StreamEvent::~StreamEvent() {
  cudaSetDevice(dev_);
  if (event_) cudaEventDestroy(event_);
  if (stream_) cudaStreamDestroy(stream_);
}

void StreamEvent::record() {
  OOC_CUDA_TRY(cudaEventRecord(event_, stream_));
}

void StreamEvent::synchronize() {
  OOC_CUDA_TRY(cudaEventSynchronize(event_));
}

}  // namespace ooc::cuda
