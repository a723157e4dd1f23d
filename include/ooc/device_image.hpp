// An image already in CUDA device memory (a CuPy array, handed over by __cuda_array_interface__),
// filtered where it lies: one pass of an operation's CUDA kernels over it, each plane one band,
// with no pinned ring and no copy to or from the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ooc/engine.hpp"
#include "ooc/image.hpp"

namespace ooc {

// Rows of interleaved samples in device memory: each row's samples one after the other, rows
// row_stride bytes apart, a volume's planes plane_stride bytes apart.
struct DeviceImage {
  ImageSpec spec;
  std::byte* data = nullptr;  // the first sample of row 0 of plane 0
  std::size_t row_stride = 0;
  std::size_t plane_stride = 0;
};

struct DeviceRunStats {
  double seconds = 0;            // wall clock, the wait for the stream included
  std::int64_t bands = 0;        // kernel launches of the operation (bands of rows)
  std::size_t device_bytes = 0;  // device memory the run took besides the images
};

// The CUDA device whose memory holds `p`; -1 for host memory, or where this build or this machine
// has no CUDA.
int cuda_device_of(const void* p) noexcept;

// One pass of `op` (an operation with an output and CUDA kernels: no reduction, no projection) over
// `in` into `out`, both in memory of `device`, enqueued on `stream` (a cudaStream_t; null: the
// default stream) after what is already there, then waited for. The rows a band reads past the
// image's edges come from a padded copy of the image made on the device (the border rule in y),
// its planes past a volume's ends by the border rule in z. `out` must not overlap `in`.
// Throws a usage Error for an operation it cannot run, a device Error where CUDA fails.
DeviceRunStats run_on_device(const Operation& op, const DeviceImage& in, const DeviceImage& out,
                             int device, void* stream);

}  // namespace ooc
