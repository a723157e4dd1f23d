// RAII owners of CUDA resources (pinned host memory, device memory, streams, events) and device
// queries. Each owner remembers its device, so slots spread over several GPUs free correctly.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ooc::cuda {

// Number of usable CUDA devices; 0 when there is no driver or no device (never throws).
int device_count() noexcept;
std::string device_name(int device);
// Free and total memory of a device, in bytes.
void device_memory(int device, std::size_t& free_bytes, std::size_t& total_bytes);

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept { swap(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  std::byte* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }

 private:
  void swap(PinnedBuffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }
  std::byte* p_ = nullptr;
  std::size_t n_ = 0;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  std::byte* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(dev_, o.dev_);
  }
  std::byte* p_ = nullptr;
  std::size_t n_ = 0;
  int dev_ = 0;
};

// The same bytes (taps, a table) on each of several devices, uploaded once; a kernel object reads
// the copy on its band's device.
class Replicated {
 public:
  Replicated(const std::vector<int>& devices, const void* host, std::size_t bytes);
  const std::byte* on(int device) const noexcept {
    return by_device_[static_cast<std::size_t>(device)].data();
  }

 private:
  std::vector<DeviceBuffer> by_device_;  // indexed by device number
};

// A stretch of a file mapped read-only and registered for DMA where it lies: a copy to the device
// reads the page cache's own pages, with no copy through pinned memory first. Each band maps its
// own stretch, so bands that share halo rows never register the same addresses twice.
class MappedPages {
 public:
  MappedPages() = default;
  // Maps `bytes` at `offset` of `fd` and registers them. Empty when a page is not in the page
  // cache (pinning would read it from the disk on one thread: reading it in parallel is faster) or
  // the driver refuses; then *refused says whether the driver did (no use trying again).
  static MappedPages map(int fd, std::uint64_t offset, std::size_t bytes, bool* refused);
  ~MappedPages() { reset(); }
  MappedPages(MappedPages&& o) noexcept { swap(o); }
  MappedPages& operator=(MappedPages&& o) noexcept {
    swap(o);
    return *this;
  }
  explicit operator bool() const noexcept { return base_ != nullptr; }
  const std::byte* data() const noexcept { return base_ + lead_; }  // the byte at `offset`
  void reset() noexcept;  // unregisters and unmaps; no copy from it may still be in flight

 private:
  void swap(MappedPages& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(len_, o.len_);
    std::swap(lead_, o.lead_);
    std::swap(registered_, o.registered_);
  }
  std::byte* base_ = nullptr;
  std::size_t len_ = 0, lead_ = 0;
  bool registered_ = false;
};

// A non-blocking stream and a timing-free event on one device.
class StreamEvent {
 public:
  explicit StreamEvent(int device);
  ~StreamEvent();
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  cudaStream_t stream() const noexcept { return stream_; }
  void record();
  void synchronize();  // waits for the last record(); throws on a device error
  int device() const noexcept { return dev_; }

 private:
  int dev_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t event_ = nullptr;
};

}  // namespace ooc::cuda
