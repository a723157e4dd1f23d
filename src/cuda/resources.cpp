// CUDA resource owners and device queries (see resources.hpp).
#include "resources.hpp"

#include <sys/mman.h>

#include <cctype>
#include <cstdint>

#include "check.hpp"
#include "engine/numa.hpp"
#include "engine/text_file.hpp"
#include "ooc/device.hpp"
#include "ooc/engine.hpp"

namespace ooc {

int cuda_device_count() noexcept {
  return cuda::device_count();
}

std::string cuda_device_name(int device) {
  return cuda::device_name(device);
}

}  // namespace ooc

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

// Pinned host memory, made as anonymous memory on transparent huge pages, filled in by the
// kernel, then registered with the driver: a fraction of cudaHostAlloc's time per slot, and
// cudaHostAlloc holds the driver's lock all the while, stalling the first band's kernel launch
// behind the next slot's allocation (docs/design.md, "GPU slots"). cudaHostAlloc remains the
// fallback.
namespace {

// Anonymous memory of n bytes (a multiple of 4 KiB), its start on a 2 MiB boundary when n is at
// least that (so that transparent huge pages can back it), or nullptr. Only the n bytes stay
// mapped: a small buffer costs its pages, not a huge page (--slots can be large).
void* map_anonymous(std::size_t n) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  const std::size_t extra = n >= kHuge ? kHuge : 0;
  void* m = ::mmap(nullptr, n + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  if (extra == 0) return m;
  const auto at = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t aligned = (at + kHuge - 1) / kHuge * kHuge;
  if (aligned > at) ::munmap(m, aligned - at);
  if (const std::size_t tail = at + n + extra - (aligned + n); tail > 0)
    ::munmap(reinterpret_cast<void*>(aligned + n), tail);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace

PinnedBuffer::PinnedBuffer(std::size_t bytes, int numa_node) : n_(bytes) {
  if (bytes == 0) return;
  const std::size_t n = (bytes + 4095) / 4096 * 4096;
  if (void* m = map_anonymous(n)) {
    (void)::madvise(m, n, MADV_HUGEPAGE);  // a hint: where THP is off, 4 KiB pages do
    // Before the pages exist: populating places them by the policy.
    if (numa_node >= 0) (void)detail::prefer_node(m, n, numa_node);
    // A fork (Python's subprocess) must not make the pages copy-on-write under a running DMA.
    (void)::madvise(m, n, MADV_DONTFORK);
#ifdef MADV_POPULATE_WRITE
    const bool populated = ::madvise(m, n, MADV_POPULATE_WRITE) == 0;
#else
    const bool populated = false;
#endif
    if (!populated)  // kernels before 5.14: touch every page
      for (std::size_t i = 0; i < n; i += 4096) static_cast<volatile char*>(m)[i] = 0;
    // Portable: usable from every device's stream when slots span several GPUs.
    if (cudaHostRegister(m, n, cudaHostRegisterPortable) == cudaSuccess) {
      p_ = static_cast<std::byte*>(m);
      mapped_ = n;
      return;
    }
    (void)cudaGetLastError();  // not sticky; fall back below
    ::munmap(m, n);
  }
  void* p = nullptr;
  OOC_CUDA_TRY(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  p_ = static_cast<std::byte*>(p);
}

PinnedBuffer::~PinnedBuffer() {
  if (!p_) return;
  if (mapped_ > 0) {
    cudaHostUnregister(p_);
    ::munmap(p_, mapped_);
  } else {
    cudaFreeHost(p_);
  }
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : n_(bytes), dev_(device) {
  if (bytes == 0) return;
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

Replicated::Replicated(const std::vector<int>& devices, const void* host, std::size_t bytes) {
  for (int d : devices) {
    if (d >= static_cast<int>(by_device_.size()))
      by_device_.resize(static_cast<std::size_t>(d) + 1);
    DeviceBuffer& b = by_device_[static_cast<std::size_t>(d)];
    b = DeviceBuffer(d, bytes);
    if (bytes > 0) OOC_CUDA_TRY(cudaMemcpy(b.data(), host, bytes, cudaMemcpyHostToDevice));
  }
}

StreamEvent::StreamEvent(int device) : dev_(device) {
  OOC_CUDA_TRY(cudaSetDevice(device));
  OOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // Blocking sync: a TBB worker waiting for a band sleeps instead of spinning on a core that
  // could read and pack the next bands.
  OOC_CUDA_TRY(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming | cudaEventBlockingSync));
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

namespace ooc {

std::vector<DeviceInfo> cuda_devices() noexcept {
  std::vector<DeviceInfo> out;
  try {
    const int n = cuda::device_count();
    for (int d = 0; d < n; ++d) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
      DeviceInfo info;
      info.index = d;
      info.name = p.name;
      info.cc_major = p.major;
      info.cc_minor = p.minor;
      info.sms = p.multiProcessorCount;
      info.copy_engines = p.asyncEngineCount;
      cuda::device_memory(d, info.memory_free, info.memory_total);
      char bus[32] = {};
      if (cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess) {
        info.pci_bus_id = bus;
        for (char& c : info.pci_bus_id) c = static_cast<char>(std::tolower(c));
        const std::string sys = "/sys/bus/pci/devices/" + info.pci_bus_id + "/";
        const std::string speed = detail::first_line(sys + "current_link_speed");
        const std::string width = detail::first_line(sys + "current_link_width");
        if (!speed.empty()) info.pcie_link = speed + " x" + width;
      }
      out.push_back(std::move(info));
    }
  } catch (...) {
    (void)cudaGetLastError();
  }
  return out;
}

}  // namespace ooc
