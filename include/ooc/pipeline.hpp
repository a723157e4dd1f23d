// The out-of-core engine: a band plan under a memory limit, and the TBB pipeline that walks an
// image band by band (read in order -> compute in parallel -> write in order) through a ring of
// slots. It knows nothing of the math: an Operation supplies halo, output type and per-slot work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ooc/border.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc {

// Tuning numbers live here and nowhere else; zeros mean "derive from the machine and the image".
struct PipelineOptions {
  std::size_t mem_limit = 0;   // bytes for the whole ring; 0: min(1 GiB, RAM / 4)
  int threads = 0;             // 0: all cores
  std::int64_t band_rows = 0;  // 0: planned
  int slots = 0;               // 0: the operation's preference (CPU: threads + 2)
  // Largest slot the planner picks on its own. Small slots keep the working set in cache and the
  // resident memory low; the halo (2 x radius rows recomputed per band) argues for tall bands.
  std::size_t target_slot_bytes = std::size_t{12} << 20;
  std::int64_t min_rows_per_halo = 4;  // aim for band_rows >= 4 x halo rows when memory allows
  std::int64_t strip_samples = 512;    // CPU kernels: column strip width, in samples (L2-sized)
};

// Default for --mem-limit: the smaller of 1 GiB and a quarter of physical memory.
std::size_t default_mem_limit();
// "512M", "4G", "1.5GiB", "100000" -> bytes; throws a usage Error.
std::size_t parse_size(const std::string& text, const std::string& option = "size");
std::string format_bytes(double bytes);  // "1.5 GiB"

struct Band {
  std::int64_t index = 0;
  std::int64_t y0 = 0;    // first output row
  std::int64_t rows = 0;  // output rows
};

// One band's input: rows y0 - halo .. y0 + rows + halo, as pointers into the source's memory.
// A null pointer is a row of the constant border. Columns outside the image are the kernel's
// business (border rule by index mapping).
struct BandInput {
  const std::byte* const* rows = nullptr;     // null when the operation reads rows itself
  const std::int64_t* source_rows = nullptr;  // image row of each band row; -1: constant border
  Source* source = nullptr;
  std::int64_t halo = 0;
  ImageSpec spec;  // of the source image
};

// The per-slot half of an operation: owns its buffers (and on a GPU its stream), made once.
class SlotKernel {
 public:
  virtual ~SlotKernel() = default;
  // Starts computing `band` from `in`; may return before the result is ready (GPU streams).
  virtual void compute_async(const BandInput& in, const Band& band) = 0;
  // Waits for the result of the last compute_async and returns its output rows.
  virtual BandView wait() = 0;
};

class Operation {
 public:
  virtual ~Operation() = default;
  virtual std::string describe() const = 0;
  virtual std::string backend() const = 0;  // "cpu", "cuda:0", ...
  virtual std::int64_t halo_rows() const = 0;
  virtual BorderMode border() const = 0;
  virtual ImageSpec output_spec() const = 0;
  // Private memory of one slot for bands of `band_rows`, and memory shared by all slots.
  virtual std::size_t slot_bytes(std::int64_t band_rows) const = 0;
  virtual std::size_t shared_bytes(std::int64_t band_rows, int threads) const = 0;
  // The slot size this backend works best with; the planner stays under it when it can.
  virtual std::size_t target_slot_bytes() const = 0;
  // Slots when --slots is not given: enough bands in flight to keep every stage busy.
  virtual int preferred_slots(int threads) const { return threads + 2; }
  // Tallest band the backend's own memory (a GPU's) holds with `slots` slots; 0: no such limit.
  // Throws an Error saying what to change when not even a one-row band fits.
  virtual std::int64_t max_band_rows(int /*slots*/) const { return 0; }
  // True when the slot kernel copies its rows from the source itself (Source::read_rows, in
  // parallel, straight into its own buffers): the read stage then maps nothing.
  virtual bool reads_rows_itself() const { return false; }
  virtual std::unique_ptr<SlotKernel> make_slot(std::int64_t band_rows, int slot_index) = 0;
};

struct BandPlan {
  std::int64_t band_rows = 0;
  std::int64_t bands = 0;
  int slots = 0;
  int threads = 0;
  std::size_t mem_limit = 0;
  std::size_t ring_bytes = 0;  // what the plan expects to use, <= mem_limit
};

// Throws a usage Error naming the smallest --mem-limit that works when even one-row bands don't
// fit. The buffers of `source` and `sink` (decoded or compressed TIFF blocks), when given, count
// against the limit too.
BandPlan plan_bands(const ImageSpec& input, const Operation& op, const PipelineOptions& options,
                    const Source* source = nullptr, const Sink* sink = nullptr);

// Most worker threads --threads may ask for (more than the machine has is allowed: they run).
inline constexpr int kMaxThreads = 1024;

struct RunStats {
  std::size_t bytes_read = 0;     // bytes of the input image
  std::size_t bytes_written = 0;  // bytes of the output image
  std::int64_t pixels = 0;
  double seconds = 0;          // wall clock, setup included
  double setup_seconds = 0;    // making the slots (pinned and device buffers, streams)
  double read_seconds = 0;     // summed over the stage's calls
  double compute_seconds = 0;  // summed over threads
  double write_seconds = 0;
};

using ProgressFn = std::function<void(std::int64_t rows_done, std::int64_t rows_total)>;

// Runs `op` over every band of `source` into `sink` (which the caller commits).
RunStats run_pipeline(Source& source, Sink& sink, Operation& op, const BandPlan& plan,
                      const ProgressFn& progress = {});

}  // namespace ooc
