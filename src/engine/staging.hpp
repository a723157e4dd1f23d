// The GPU half of the engine's staging, behind an interface that builds without CUDA: a slot's
// pinned and device buffers, stream and event, and how tall a band fits in device memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "ooc/engine.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc::detail {

// Starting CUDA (the driver, then a context on each device: a few tenths of a second, more than
// the CPU needs for a 1 GiB image) on a thread of its own, begun as soon as the backend is
// chosen, so that the plan, the output file and the first bands (on the CPU) need not wait for it.
class CudaStart {
 public:
  // Checks that CUDA sees every one of `devices` and makes a context on each.
  static std::shared_ptr<CudaStart> begin(const std::vector<int>& devices);
  virtual ~CudaStart() = default;
  virtual bool ready() const = 0;   // done, or failed
  virtual bool failed() const = 0;  // ready, with an error
  virtual void wait() const = 0;    // blocks until ready; rethrows the error
  // Free bytes of devices[i] when the context was made (after wait()).
  virtual std::size_t free_bytes(std::size_t i) const = 0;
};

// Whether threads still starting CUDA when their engine (or CudaStart) goes away may be left
// running instead of joined. Only a process that leaves with _exit (the command-line tools) may
// allow it: exit()'s static destructors would tear the CUDA runtime down under them. Default: no.
void set_background_may_outlive(bool allowed) noexcept;
bool background_may_outlive() noexcept;
// Joins such a thread, or leaves it running where that is allowed.
void end_background(std::thread& t);

// Which of `devices` GPUs holds ring slot i of `slots`: runs of consecutive slots per device, not
// round robin. Band b uses slot b % slots, so a device takes runs of consecutive bands, and each
// band after the first of a run takes the halo it shares with the band before from that band's
// device memory instead of packing and sending those rows again (round robin put no two
// consecutive bands on one GPU).
inline std::size_t slot_device_index(std::size_t i, std::size_t slots, std::size_t devices) {
  return slots == 0 ? 0 : i * devices / slots;
}

// Tallest band whose device memory, bytes(rows) per slot, fits `slots` slots spread over `devices`
// (slot_device_index) (at most `height`). Throws a device Error when not even one row fits.
// `start`: the free memory it found (after waiting for it); without one, asks the devices.
std::int64_t cuda_max_band_rows(const std::vector<int>& devices, int slots, std::int64_t height,
                                const std::function<std::size_t(std::int64_t)>& bytes,
                                const CudaStart* start = nullptr);

struct SlotSizes {
  std::int64_t band_rows = 0, halo = 0;
  std::int64_t planes = 1;  // planes of input rows a band holds (2 x plane halo + 1)
  std::size_t in_row = 0, out_row = 0, partial = 0, scratch = 0;
  // Planes of input rows the pinned buffer holds (0: `planes`). A volume's band takes the others
  // from the band before on the device; one that cannot copies its window through it in pieces.
  std::int64_t host_planes = 0;
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
  // `index`: the slot's place in the ring, which its bands carry (CudaBand::slot).
  static std::unique_ptr<CudaSlot> make(int index, int device, const SlotSizes& sizes);
  virtual ~CudaSlot() = default;
  // The kernel's state for this slot (CudaKernel::start, stop), on the slot's device.
  virtual void start_kernel(CudaKernel& kernel) = 0;
  virtual void stop_kernel(CudaKernel& kernel) = 0;
  // Reads the band's rows (source_rows: image row of each input row, -1 for the constant border)
  // straight into pinned memory from several threads, then enqueues the copy in, the kernels, and
  // the copies out of the output rows (when out_row > 0) and of the partial (partial bytes).
  // reuse_rows > 0: this band's first reuse_rows input rows are the last ones of the band started
  // just before on prev (the halo two bands share): when prev is on the same device they are
  // copied there, device to device, instead of read and sent again.
  // `source_rows`: (band.rows + 2 x halo) x `planes` rows: 2 x plane_halo + 1 planes
  // (CudaBand::plane_halo), or every plane of the volume for a projection. `bits`: the rows go
  // in as one bit a sample (Operation::cuda_input_bits, CudaBand::in_bits).
  virtual void start(Source& source, const std::int64_t* source_rows, const Band& band,
                     std::int64_t halo, std::int64_t plane_halo, std::int64_t planes,
                     const ImageSpec& in, CudaKernel& kernel, std::size_t out_row,
                     std::size_t partial, CudaSlot* prev, std::int64_t reuse_rows, bool bits) = 0;
  // Waits for the band; host copies of its output rows and partial, and the band's times.
  virtual void wait(const std::byte*& out, const std::byte*& partial, SlotTimes& times) = 0;
};

}  // namespace ooc::detail
