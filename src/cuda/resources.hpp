// RAII owners of CUDA resources (pinned host memory, device memory, streams, events) and device
// queries. Each owner remembers its device, so slots spread over several GPUs free correctly.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
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
  // numa_node >= 0: its pages are placed on that node (detail::staging_node), before they are
  // touched.
  explicit PinnedBuffer(std::size_t bytes, int numa_node = -1);
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
    std::swap(mapped_, o.mapped_);
  }
  std::byte* p_ = nullptr;
  std::size_t n_ = 0;
  std::size_t mapped_ = 0;  // > 0: mmap'd and registered (that many bytes), not cudaHostAlloc'd
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
