// The GPU half of the engine's staging, behind an interface that builds without CUDA: a slot's
// pinned and device buffers, stream and event, and how tall a band fits in device memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ooc/image.hpp"
#include "ooc/io.hpp"
#include "ooc/pipeline.hpp"

namespace ooc::detail {

// Tallest band whose device memory, bytes(rows) per slot, fits `slots` slots spread round robin
// over `devices` (at most `height`). Throws a device Error when not even one row fits.
std::int64_t cuda_max_band_rows(const std::vector<int>& devices, int slots, std::int64_t height,
                                const std::function<std::size_t(std::int64_t)>& bytes);

struct SlotSizes {
  std::int64_t band_rows = 0, halo = 0;
  std::size_t in_row = 0, out_row = 0, partial = 0, scratch = 0;
};

// Where a GPU band's time went: packing its rows into pinned memory (the file read, host wall time)
// and the device's time for the copy in, the operation's kernels and the copies out. at: when each
// step began and the last one ended, in steady_clock seconds (device events mapped to the host's
// clock through one event per slot recorded at its start): pack, H2D, kernels, D2H, done.
struct SlotTimes {
  double pack = 0, h2d = 0, kernels = 0, d2h = 0;
  double at[5] = {};
};

// One ring slot on a GPU, made once per job.
class CudaSlot {
 public:
  static std::unique_ptr<CudaSlot> make(int device, const SlotSizes& sizes);
  virtual ~CudaSlot() = default;
  // Reads the band's rows (source_rows: image row of each input row, -1 for the constant border)
  // straight into pinned memory from several threads, then enqueues the copy in, the kernels, and
  // the copies out of the output rows (when out_row > 0) and of the partial (partial bytes).
  // reuse_rows > 0: this band's first reuse_rows input rows are the last ones of the band started
  // just before on prev (the halo two bands share): when prev is on the same device they are
  // copied there, device to device, instead of read and sent again.
  virtual void start(Source& source, const std::int64_t* source_rows, const Band& band,
                     std::int64_t halo, const ImageSpec& in, CudaKernel& kernel,
                     std::size_t out_row, std::size_t partial, CudaSlot* prev,
                     std::int64_t reuse_rows) = 0;
  // Waits for the band; host copies of its output rows and partial, and the band's times.
  virtual void wait(const std::byte*& out, const std::byte*& partial, SlotTimes& times) = 0;
};

}  // namespace ooc::detail
