// The out-of-core engine: a band plan under a memory limit, and the TBB pipeline that walks an
// image band by band (read in order -> compute in parallel -> write in order) through a ring of
// slots. The engine owns the staging (mapped rows on the CPU; pinned and device buffers, streams
// and copies on a GPU); an Operation brings only its math: the halo it needs, its output (an
// image, or none), its kernels on a band, and optionally a reduction merged in band order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/cost.hpp"
#include "ooc/detail/cuda_start.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"
#include "ooc/limits.hpp"  // default_mem_limit, default_threads: EngineOptions' zeros

namespace ooc {

// Tuning numbers live here and nowhere else; zeros mean "derive from the machine and the image".
struct EngineOptions {
  std::size_t mem_limit = 0;   // bytes for the whole ring; 0: default_mem_limit()
  int threads = 0;             // 0: planned, up to `cores`
  int cores = 0;               // cores a plan may use when threads is 0; 0: default_threads()
  std::int64_t band_rows = 0;  // 0: planned
  int slots = 0;               // 0: the operation's preference (CPU: threads + 2)
  // Largest slot the planner picks on its own. Small slots keep the working set in cache and the
  // resident memory low; the halo (2 x radius rows recomputed per band) argues for tall bands.
  std::size_t target_slot_bytes = std::size_t{12} << 20;
  std::int64_t min_rows_per_halo = 4;  // aim for band_rows >= 4 x halo rows when memory allows
  // CPU kernels: column strip width, in samples. A strip's row pass stays in L2, and it reads each
  // band row as a run long enough for the prefetchers (at 512 a 32768-wide f32 Gaussian ran 1.5x
  // slower: 60 runs of 2 KiB a strip).
  std::int64_t strip_samples = 1024;
  // CPU: output columns of a tile (a band cut across the row, each tile with its column halo, one
  // thread each); 0: planned (tiles where they are estimated faster or needed to fit the limit).
  std::int64_t tile_cols = 0;
  // The rows a job covers, [row_begin, row_end); row_end 0: to the bottom. A part of a
  // multi-process run, or what is left of a resumed one.
  std::int64_t row_begin = 0, row_end = 0;
  // CUDA backend: bands the CPU filters while CUDA starts. -1: every band until the GPU is ready
  // (when the memory limit leaves room for CPU buffers too); 0: none, wait for the GPU; N: the
  // first N bands, then wait.
  std::int64_t cpu_start_bands = -1;
};
// The engine options' former name, kept for programs built against it.
using PipelineOptions = EngineOptions;

// Asks every running Engine to stop taking new bands: the bands in flight are finished and
// written, then run() returns with RunStats::stopped set. Async-signal-safe (a lock-free atomic),
// for SIGTERM/SIGINT handlers.
void request_stop() noexcept;
bool stop_requested() noexcept;
// Whether SIGINT and SIGTERM should request_stop() rather than end the process: set by the job
// runner for a front end that asks for it (JobSpec::stop_on_signals), read by its handler.
void set_stop_on_signals(bool on) noexcept;
bool stops_on_signals() noexcept;

// A region of the image: output rows [y0, y0 + rows) of plane z. A band never crosses planes:
// kernels see y0 and the border rule within the plane, and a volume's bands walk plane by plane.
struct Band {
  std::int64_t index = 0;
  std::int64_t y0 = 0;          // first output row, in its plane
  std::int64_t rows = 0;        // output rows
  std::int64_t z = 0;           // plane
  std::int64_t stacked_y0 = 0;  // z x height + y0: the row sources and sinks address
};

// One band as an operation's CPU kernel sees it: the whole width of the image, or a tile of it
// (in.width columns from some column on; the kernel treats the tile as its image, and the engine
// keeps only the columns far enough from a cut edge: Operation::column_halo).
struct CpuBand {
  Band band;
  // band.rows + 2 * halo input rows, from image row band.y0 - halo on, through the border rule;
  // a null row is a row of the constant border. Columns outside the image are the kernel's
  // business (the border rule by index mapping). An operation with a plane_halo() gets those rows
  // of 2 x plane_halo + 1 planes, from plane band.z - plane_halo on (planes outside the volume
  // through the border rule; a plane of the constant border is null rows), one plane after the
  // other: row i of plane k is rows[k x (band.rows + 2 x halo) + i].
  const std::byte* const* rows = nullptr;
  std::int64_t halo = 0;
  std::int64_t plane_halo = 0;
  ImageSpec in;
  BandView out;                  // band.rows rows of the output; data is null without an output
  std::byte* partial = nullptr;  // Operation::partial_bytes() for this band, or null
  int slot = 0;                  // the ring slot holding the band (see CpuKernel::start)
};

// One band on a GPU, in device memory, for an operation's CUDA kernels.
struct CudaBand {
  Band band;
  const std::byte* in = nullptr;  // band.rows + 2 * halo rows, as in CpuBand, except that rows of
  std::size_t in_stride = 0;      // the constant border are left unset: the kernels know them
  std::int64_t halo = 0;          // from first_row (image row of input row 0) and the height
  std::int64_t first_row = 0;
  std::int64_t plane_halo = 0;  // planes of rows one after the other, as in CpuBand
  // Where a caller lays the planes out itself (a fused chain): a host array of the device address
  // of the band's first row (band.y0, past the halo) in each of the 2 plane_halo + 1 planes, rows
  // in_stride apart; null for a plane of the constant border. Null: plane k starts
  // (band.rows + 2 halo) * k rows after `in`, and a plane outside the volume under the constant
  // border is left unset (detail::cuda_plane says which).
  const std::byte* const* plane_in = nullptr;
  ImageSpec in_spec;
  // The rows hold one bit a sample, set where the sample is non-zero (Operation::cuda_input_bits):
  // whole 32-bit words, bit x % 32 of word x / 32 for sample x, in_stride bytes a row.
  bool in_bits = false;
  std::byte* out = nullptr;  // band.rows rows, or null without an output
  std::size_t out_stride = 0;
  std::byte* partial = nullptr;  // zeroed before the kernels; copied back after them
  std::byte* scratch = nullptr;  // Operation::cuda_scratch_bytes(band rows)
  int device = 0;
  void* stream = nullptr;  // the slot's cudaStream_t: every launch goes there
  int slot = 0;            // the ring slot holding the band (see CudaKernel::start)
};

// A GPU slot as its kernel's start and stop see it.
struct CudaSlotInfo {
  int slot = 0;
  int device = 0;          // current while start and stop run
  void* stream = nullptr;  // the slot's cudaStream_t, the same for every band of the slot
};

// Per-slot state: a slot holds one band at a time, so what a kernel keeps per slot (buffers,
// library handles, plans) is used by one band at a time and needs no lock. The engine calls
// start(slot) once before any band of that slot in a run, and stop(slot) for every started slot
// when the run ends (also when it fails), never at the same time as run() or another start/stop.
// Kernels that hold other kernels pass both on.
class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  virtual void start(int /*slot*/) {}
  // Called from several threads at once, for different bands; may use TBB inside.
  virtual void run(const CpuBand& band) = 0;
  virtual void stop(int /*slot*/) {}
};

// As CpuKernel, start and stop once per slot, on the slot's device; start, run_async and stop are
// called from one thread at a time.
class CudaKernel {
 public:
  virtual ~CudaKernel() = default;
  virtual void start(const CudaSlotInfo& /*slot*/) {}
  // Enqueues the band's work on band.stream and returns at once.
  virtual void run_async(const CudaBand& band) = 0;
  virtual void stop(const CudaSlotInfo& /*slot*/) {}
};

// An operation: what it needs and makes, and its math. Adding one is this class, its kernels and
// its command line; the engine does the rest.
class Operation {
 public:
  virtual ~Operation() = default;
  virtual std::string describe() const = 0;
  // What makes the output's bytes, exactly (describe() rounds and leaves values out): a resumed
  // run or a part with another fingerprint would mix two results in one file.
  virtual std::string fingerprint() const { return describe(); }
  virtual std::optional<ImageSpec> output() const = 0;  // none: a reduction only
  virtual std::int64_t halo() const { return 0; }       // rows of context above and below
  // Planes of context before and after (a volume's filters in z): the band's rows of each.
  virtual std::int64_t plane_halo() const { return 0; }
  // A projection along z: one output plane, each band of it given its rows in every plane of the
  // input (CpuBand: in.depth planes, plane_halo 0). The job covers the output's rows.
  virtual bool projects() const { return false; }
  // Whether the output's samples name things (component labels) rather than measure them: a
  // reduced-resolution level's 2 x 2 means of such samples would name nothing, so a job refuses
  // levels for it.
  virtual bool output_is_labels() const { return false; }
  // Columns of context left and right: an output sample depends on input columns at most this far
  // away, so a band may be cut into tiles across the row (BandPlan::tile_cols), each filtered as
  // an image of its own with this many extra columns on each cut side. None: the kernels need
  // whole rows (an FFT grid fixed in image columns, a reduction), and bands are never cut.
  virtual std::optional<std::int64_t> column_halo() const { return std::nullopt; }
  virtual BorderMode border() const { return BorderMode::reflect; }
  // A reduction: each band fills partial_bytes() bytes; merge() takes them serially, in band
  // order, so the result does not depend on band height, slots, threads or devices.
  virtual std::size_t partial_bytes() const { return 0; }
  virtual void merge(const std::byte* /*partial*/, const Band& /*band*/) {}
  // Memory the kernels need besides the band: per CPU thread, for bands of `band_rows` rows whose
  // input is `cols` columns wide (the image's width, or a tile's with its column halo); and per
  // GPU slot on the device.
  virtual std::size_t cpu_scratch_bytes(std::int64_t /*band_rows*/, std::int64_t /*cols*/) const {
    return 0;
  }
  // Memory each band (or tile) being computed holds besides the thread's scratch: buffers a
  // kernel takes per band from a pool (a fused chain's intermediates), counted once a band in
  // flight rather than once a thread.
  virtual std::size_t cpu_band_bytes(std::int64_t /*band_rows*/, std::int64_t /*cols*/) const {
    return 0;
  }
  virtual std::size_t cuda_scratch_bytes(std::int64_t /*band_rows*/) const { return 0; }
  // The band height the operation takes instead of `rows` (the planned or asked one) when the job
  // covers `span` rows: a reduction whose sums must not depend on the band height rounds it to
  // whole subtrees of its summation tree. The planner checks that the result fits.
  virtual std::int64_t fit_band_rows(std::int64_t rows, std::int64_t /*span*/) const {
    return rows;
  }
  // An operation that computes its outputs in blocks of rows fixed in image coordinates (the FFT's
  // tile rows) needs halo() rows for any band, but only grid_halo() for a band that starts at a
  // multiple of row_grid() and ends at one or at the image's end. The planner aligns the bands so
  // where the job's rows allow (BandPlan::grid, band_halo).
  virtual std::int64_t row_grid() const { return 1; }
  virtual std::int64_t grid_halo() const { return halo(); }
  virtual std::unique_ptr<CpuKernel> make_cpu() const = 0;
  // Whether make_cuda() works: the operation has CUDA kernels and this build has CUDA.
  virtual bool has_cuda() const { return false; }
  // Whether the CPU kernel gives the CUDA kernels' bytes (outputs and partials): then the CUDA
  // backend lets the CPU take bands while CUDA starts (--cpu-start auto) without the result
  // depending on how long the start took.
  virtual bool cpu_gives_cuda_bits() const { return false; }
  // Whether the CUDA kernels read only which input samples are non-zero: the engine then sends
  // the rows in as one bit a sample (CudaBand::in_bits), an eighth of a u8 mask's bytes.
  virtual bool cuda_input_bits() const { return false; }
  // Uploads what the kernels need (taps, tables) to each device.
  virtual std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& /*devices*/) const {
    return nullptr;
  }
  // The work the kernels do per sample, for --device auto (select_backend): the cost model
  // (cost_model.cpp) holds the times.
  virtual Cost cost() const { return {}; }
};

// Where the bands are computed.
struct Backend {
  bool cuda = false;
  std::vector<int> devices;      // CUDA devices the slots are spread over
  std::string describe() const;  // "cpu (avx2+fma)", "cuda:0,1 (NVIDIA H200)"
  std::string why;               // how it was chosen ("--device cpu", or auto's estimate)
  // CUDA starting in the background (set by select_backend, for the Engine; opaque here), and
  // whether the run goes on with the CPU if it fails (--device auto) instead of failing.
  detail::CudaStartHandle start;
  bool cpu_if_cuda_fails = false;
  // The CUDA backend whose start failed, the run done on the CPU: its error.
  std::string start_error() const;
};
// The size of a run, for --device auto's estimate.
struct Workload {
  std::uint64_t samples = 0;  // input samples each pass reads
  std::uint64_t bytes = 0;    // input bytes each pass reads
  int threads = 0;            // CPU threads (0: the default)
};
// `rows` rows of an image of `spec`, on `threads` threads (0: the default).
Workload workload(const ImageSpec& spec, std::int64_t rows, int threads);
// `device`: auto, cpu or cuda; `devices`: all, or a list like 0,1. auto picks CUDA when a GPU is
// usable, every operation has a CUDA version and, given `work`, the estimated time on the GPUs
// (start-up, then the slower of the copies and the kernels) is below the CPU's (see
// estimate_seconds in cost_model.cpp). Throws a usage or device Error naming the problem.
Backend select_backend(const std::string& device, const std::string& devices,
                       const std::vector<const Operation*>& ops, const Workload* work = nullptr);
int cuda_device_count() noexcept;  // 0 in a build without CUDA, or without a driver or device
std::string cuda_device_name(int device);
// The instruction set the CPU kernels run on here: "avx2+fma" or "baseline".
const char* cpu_kernels_isa() noexcept;

struct BandPlan {
  std::int64_t band_rows = 0;
  std::int64_t bands = 0;
  // The stacked rows the job covers (ImageSpec::stacked_rows). Bands of band_rows rows start at
  // row_begin and at the first row of each plane after it (band_at).
  std::int64_t row_begin = 0, row_end = 0;
  std::int64_t plane_rows = 0;  // rows of a plane (the image's height)
  std::int64_t plane_halo = 0;  // the largest of the operations' plane_halo()
  // CPU bands with planes of context: the runs of rows (one plane's of a band) kept for the
  // bands after it that read them again, at most this many (0: none).
  std::int64_t run_cache = 0;
  // CPU bands with planes of context, walked in slabs of this many whole planes (0: plane after
  // plane): within a slab, a band's rows in each plane in turn before the next band's rows, so the
  // 2R + 1 planes of those rows a band reads are still in the CPU's cache from the band of the
  // plane before. The slab's output is gathered (two buffers of slab_planes planes: one filled
  // while the other is written) and written in order once the slab is done, or, for a sink that
  // takes rows in any order (raw, .npy, null:), handed over band by band.
  std::int64_t slab_planes = 0;
  // GPU bands with planes of context: planes of rows a slot's pinned input holds (0: the whole
  // window). One where the walk hands each band's 2R other planes over on the device.
  std::int64_t host_planes = 0;
  std::int64_t first_band = 0, last_band = 0;  // a run covers [first_band, last_band)
  int slots = 0;
  int threads = 0;
  std::size_t mem_limit = 0;
  std::size_t ring_bytes = 0;  // what the plan expects to use, <= mem_limit
  // Bands start at multiples of `grid` image rows and end at one or at the image's end: the
  // operations' row_grid() where the job's rows start (and end) on it, else 1.
  std::int64_t grid = 1;
  // What each slot holds, the largest over the job's operations (halo: band_halo's).
  std::int64_t halo = 0;
  std::size_t out_row_bytes = 0, partial_bytes = 0, device_scratch_bytes = 0;
  // CPU bands cut across the row: output columns per tile (0: whole rows), and the
  // columns of context each tile carries on a cut side (the operations' largest column_halo).
  std::int64_t tile_cols = 0, column_halo = 0;
  // The cost model's estimate of one pass of the job's operations under this plan (seconds, CPU
  // backend; 0 where not estimated), and the threads it keeps busy.
  double estimate_seconds = 0;
  // CUDA: bands the CPU may filter while CUDA starts (EngineOptions::cpu_start_bands, 0 when
  // the memory limit leaves no room for their buffers beside the pinned ring).
  std::int64_t cpu_start_bands = 0;
  // CUDA, with the CPU start's buffers planned: the bands that go to the CPU's kernels all along,
  // in a pass that writes no output (cpu_share) and in one that writes (cpu_share_out), for
  // operations whose CPU kernels give the GPU's bytes (labels: the planner gives them the many
  // slots that bands retiring in order need, docs/performance.md).
  struct CpuShare {
    std::int64_t cpu = 0, of = 1;  // `cpu` of every `of` bands, spread evenly (0: none)
    // Whether the k-th band of a pass (from its first) is one of them.
    bool takes(std::int64_t k) const { return cpu > 0 && (k + 1) * cpu / of > k * cpu / of; }
  };
  CpuShare cpu_share, cpu_share_out;
};

// The plan for a job of one or several passes (`ops`, each over the same bands) on `backend`:
// band height and slots under options.mem_limit, counting the staging, the kernels' scratch and
// the buffers of `source` and `sink` (TIFF blocks). Throws a usage Error naming the memory needed
// when not even one-row bands fit.
BandPlan plan_bands(const ImageSpec& input, const std::vector<const Operation*>& ops,
                    const Backend& backend, const EngineOptions& options,
                    const Source* source = nullptr, const Sink* sink = nullptr);

// Band i of `plan` (its index, plane, rows), and how many bands a range of stacked rows holds when
// cut into bands of `band_rows` within each plane of `plane_rows` rows.
Band band_at(const BandPlan& plan, std::int64_t i);
std::int64_t band_count(std::int64_t row_begin, std::int64_t row_end, std::int64_t plane_rows,
                        std::int64_t band_rows);

// The rows of context `op`'s bands carry under `plan`: op.grid_halo() where the plan's bands fall
// on op's row grid, op.halo() otherwise.
std::int64_t band_halo(const Operation& op, const BandPlan& plan);

// Most worker threads --threads may ask for (more than the machine has is allowed: they run).
inline constexpr int kMaxThreads = 1024;

struct RunStats {
  std::size_t bytes_read = 0;     // bytes of the input image read by the run
  std::size_t bytes_written = 0;  // bytes of output written
  std::int64_t pixels = 0;
  double seconds = 0;          // wall clock, setup included
  double setup_seconds = 0;    // before the first band (CPU: the slots' buffers), and on a GPU
                               // the waits for CUDA's start and for slots being made
  double read_seconds = 0;     // summed over the stage's calls
  double compute_seconds = 0;  // summed over threads
  double write_seconds = 0;
  // GPU: reading the bands' rows into pinned memory (wall time, summed over slots), and the
  // device's time for the copies in, the kernels and the copies out (summed over slots).
  double pack_seconds = 0, h2d_seconds = 0, kernel_seconds = 0, d2h_seconds = 0;
  std::int64_t rows_done = 0;  // output rows written, from the range's first row on, in order
  std::int64_t cpu_bands = 0;  // CUDA backend: bands the CPU filtered while CUDA started
  bool stopped = false;        // request_stop() ended the run before its last band
};

using ProgressFn = std::function<void(std::int64_t rows_done, std::int64_t rows_total)>;

// A job's ring of slots over one source, made once (at the first run) and reused by every pass.
class Engine {
 public:
  Engine(Source& source, Backend backend, BandPlan plan);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One pass of `op` over bands [plan.first_band, plan.last_band): its output rows go to `sink`
  // (required when op.output() has a value; the caller commits), its partials to op.merge().
  // `op` must be one of the operations the plan was made for.
  RunStats run(Operation& op, Sink* sink, const ProgressFn& progress = {});
  const BandPlan& plan() const noexcept;
  const Backend& backend() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The ranges of the count options (threads, band rows, slots) and the one message that refuses a
// value outside them, for every front end (the tools' flags, the Python keywords).
struct CountRange {
  long long lo, hi;
};
inline constexpr CountRange kThreadsRange{1, ooc::kMaxThreads};
inline constexpr CountRange kBandRowsRange{1, std::numeric_limits<std::int64_t>::max()};
inline constexpr CountRange kSlotsRange{1, 1 << 16};

// "must be a whole number from 1 to 1024, got '0'" (`given` as the user wrote it).
inline std::string count_problem(const CountRange& r, const std::string& given) {
  return "must be a whole number from " + std::to_string(r.lo) + " to " + std::to_string(r.hi) +
         ", got '" + given + "'";
}

}  // namespace ooc
