// The TBB pipeline over bands: serial in-order read (the band's rows and halo, through the border
// rule), parallel compute (the operation's kernel on the CPU, or the engine's GPU staging around
// its CUDA kernel), serial in-order write (output rows to the sink, partials to the reduction).
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/pipeline.hpp"
#include "staging.hpp"

namespace ooc {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Set from signal handlers: it must be a lock-free atomic to be touched there.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

// One ring slot. Slots are reused round robin: band i uses slot i % slots, which is safe because
// the last stage retires bands in order and tokens == slots.
struct Slot {
  Band band;
  std::vector<std::int64_t> source_rows;  // image row of each input row; -1: constant border
  // CPU: the rows mapped for the band, the table of them, the output rows and the partial.
  RowArena arena;
  std::vector<const std::byte*> table;
  std::vector<std::byte> out, partial;
  // GPU: everything lives in the staging slot.
  std::unique_ptr<detail::CudaSlot> gpu;
};

// Fills slot.table with the rows the band needs: source rows in as few contiguous runs as
// possible (one, away from the edges), halo rows outside the image mapped through the border rule.
void map_rows(Source& source, Slot& slot) {
  std::vector<std::int64_t> wanted;
  wanted.reserve(slot.source_rows.size());
  for (const std::int64_t src : slot.source_rows)
    if (src >= 0) wanted.push_back(src);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());

  struct Run {
    std::int64_t y0, n;
    const std::byte* data;
  };
  std::vector<Run> runs;
  for (std::size_t i = 0; i < wanted.size();) {
    std::size_t j = i + 1;
    while (j < wanted.size() && wanted[j] == wanted[j - 1] + 1) ++j;
    runs.push_back({wanted[i], static_cast<std::int64_t>(j - i), nullptr});
    i = j;
  }
  for (Run& r : runs) r.data = source.rows(r.y0, r.n, slot.arena);

  const std::size_t row_bytes = source.spec().row_bytes();
  slot.table.resize(slot.source_rows.size());
  for (std::size_t i = 0; i < slot.source_rows.size(); ++i) {
    const std::int64_t src = slot.source_rows[i];
    if (src < 0) {
      slot.table[i] = nullptr;
      continue;
    }
    const auto it = std::upper_bound(runs.begin(), runs.end(), src,
                                     [](std::int64_t y, const Run& r) { return y < r.y0; });
    const Run& r = *(it - 1);
    slot.table[i] = r.data + static_cast<std::size_t>(src - r.y0) * row_bytes;
  }
}

}  // namespace

void request_stop() noexcept {
  g_stop.store(true, std::memory_order_relaxed);
}
bool stop_requested() noexcept {
  return g_stop.load(std::memory_order_relaxed);
}

struct Engine::Impl {
  Source& source;
  Backend backend;
  BandPlan plan;
  std::vector<Slot> slots;

  // Made at the first run, for the largest of the job's operations (the plan says how large).
  void make_slots() {
    if (!slots.empty()) return;
    slots.resize(static_cast<std::size_t>(plan.slots));
    if (backend.cuda) return;  // see gpu_slot()
    for (Slot& s : slots) {
      s.out.resize(static_cast<std::size_t>(plan.band_rows) * plan.out_row_bytes);
      s.partial.resize(plan.partial_bytes);
    }
  }

  // A GPU slot's pinned and device buffers are made when its first band arrives, in the parallel
  // stage: pinning a slot costs about as much as filling it, so the first band starts after one
  // slot's allocation instead of the whole ring's, and the others are made while it runs.
  detail::CudaSlot& gpu_slot(Slot& s) {
    if (!s.gpu) {
      const std::size_t i = static_cast<std::size_t>(&s - slots.data());
      const ImageSpec& in = source.spec();
      s.gpu = detail::CudaSlot::make(
          backend.devices[i % backend.devices.size()],
          detail::SlotSizes{plan.band_rows, plan.halo, in.row_bytes(), plan.out_row_bytes,
                            plan.partial_bytes, plan.device_scratch_bytes});
    }
    return *s.gpu;
  }
};

Engine::Engine(Source& source, Backend backend, BandPlan plan)
    : impl_(std::make_unique<Impl>(Impl{source, std::move(backend), plan, {}})) {
  if (impl_->backend.cuda && impl_->backend.devices.empty())
    throw Error(ErrorKind::device, "the CUDA backend needs at least one device");
}

Engine::~Engine() = default;

const BandPlan& Engine::plan() const noexcept {
  return impl_->plan;
}
const Backend& Engine::backend() const noexcept {
  return impl_->backend;
}

RunStats Engine::run(Operation& op, Sink* sink, const ProgressFn& progress) {
  Impl& e = *impl_;
  const BandPlan& plan = e.plan;
  const ImageSpec in = e.source.spec();
  const std::optional<ImageSpec> out_spec = op.output();
  const std::int64_t halo = op.halo();
  const std::size_t partial_bytes = op.partial_bytes();
  const std::size_t out_row = out_spec ? out_spec->row_bytes() : 0;
  if (halo > plan.halo || out_row > plan.out_row_bytes || partial_bytes > plan.partial_bytes)
    throw Error(ErrorKind::usage, "operation '" + op.describe() +
                                      "' needs more than the job was planned for: plan the job "
                                      "with every operation it runs");
  if (out_spec && sink == nullptr)
    throw Error(ErrorKind::usage, "operation '" + op.describe() + "' writes an image: give a sink");
  if (plan.first_band < 0 || plan.last_band > plan.bands || plan.first_band > plan.last_band)
    throw Error(ErrorKind::usage, "band range [" + std::to_string(plan.first_band) + ", " +
                                      std::to_string(plan.last_band) + ") is outside the plan's " +
                                      std::to_string(plan.bands) + " bands");
  const BorderMode border = op.border();
  RunStats stats;
  const auto t0 = Clock::now();
  e.make_slots();
  std::unique_ptr<CpuKernel> cpu;
  std::unique_ptr<CudaKernel> gpu;
  if (e.backend.cuda) {
    if (op.has_cuda()) gpu = op.make_cuda(e.backend.devices);
    if (!gpu)
      throw Error(ErrorKind::device, "operation '" + op.describe() +
                                         "' has no CUDA version in this build: use --device cpu");
  } else {
    cpu = op.make_cpu();
  }
  stats.setup_seconds = seconds_since(t0);

  std::int64_t next = plan.first_band;
  std::int64_t rows_done = 0;
  const std::int64_t rows_total =
      std::min(plan.row_begin + plan.last_band * plan.band_rows, plan.row_end) -
      (plan.row_begin + plan.first_band * plan.band_rows);
  double read_s = 0, write_s = 0;
  std::atomic<std::int64_t> compute_ns{0};

  // Serial, in order: which rows the band needs, mapped on the CPU (the GPU slot reads its own,
  // in parallel, straight into pinned memory).
  auto read_stage = [&](tbb::flow_control& fc) -> Slot* {
    if (next >= plan.last_band || stop_requested()) {
      fc.stop();
      return nullptr;
    }
    const auto t = Clock::now();
    Slot& slot = e.slots[static_cast<std::size_t>(next % plan.slots)];
    slot.band.index = next;
    slot.band.y0 = plan.row_begin + next * plan.band_rows;
    slot.band.rows = std::min(plan.band_rows, plan.row_end - slot.band.y0);
    const std::int64_t first = slot.band.y0 - halo, count = slot.band.rows + 2 * halo;
    slot.source_rows.resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
      slot.source_rows[i] = map_border(first + i, in.height, border);
    if (!e.backend.cuda) map_rows(e.source, slot);
    ++next;
    read_s += seconds_since(t);
    return &slot;
  };
  // Parallel: the operation's work on the band (on a GPU: enqueued, not finished).
  auto compute_stage = [&](Slot* slot) {
    const auto t = Clock::now();
    if (gpu) {
      e.gpu_slot(*slot).start(e.source, slot->source_rows.data(), slot->band, halo, in, *gpu,
                              out_row, partial_bytes);
    } else {
      CpuBand b;
      b.band = slot->band;
      b.rows = slot->table.data();
      b.halo = halo;
      b.in = in;
      if (out_spec)
        b.out = BandView{slot->out.data(),   out_row,       slot->band.rows, out_spec->width,
                         out_spec->channels, out_spec->type};
      b.partial = partial_bytes > 0 ? slot->partial.data() : nullptr;
      if (b.partial) std::fill_n(b.partial, partial_bytes, std::byte{0});
      cpu->run(b);
    }
    compute_ns += std::chrono::nanoseconds(Clock::now() - t).count();
    return slot;
  };
  // Serial, in order: wait for the result, release the input rows, write the band, merge its
  // partial.
  auto write_stage = [&](Slot* slot) {
    const auto t = Clock::now();
    const std::byte* out = slot->out.data();
    const std::byte* partial = slot->partial.data();
    if (slot->gpu) {
      detail::SlotTimes t;
      slot->gpu->wait(out, partial, t);
      stats.pack_seconds += t.pack;
      stats.h2d_seconds += t.h2d;
      stats.kernel_seconds += t.kernels;
      stats.d2h_seconds += t.d2h;
    }
    slot->arena.release();
    if (out_spec) sink->write_rows(slot->band.y0, slot->band.rows, out, out_row);
    if (partial_bytes > 0) op.merge(partial, slot->band);
    rows_done += slot->band.rows;
    write_s += seconds_since(t);
    if (progress) progress(rows_done, rows_total);
  };

  // TBB runs at most as many threads as the machine has unless told otherwise: --threads beyond
  // that is what the user asked for (and what the plan reports), so it must really run.
  std::optional<tbb::global_control> more_threads;
  if (plan.threads > tbb::info::default_concurrency())
    more_threads.emplace(tbb::global_control::max_allowed_parallelism,
                         static_cast<std::size_t>(plan.threads));
  tbb::task_arena arena(plan.threads);
  arena.execute([&] {
    tbb::parallel_pipeline(
        static_cast<std::size_t>(plan.slots),
        tbb::make_filter<void, Slot*>(tbb::filter_mode::serial_in_order, read_stage) &
            tbb::make_filter<Slot*, Slot*>(tbb::filter_mode::parallel, compute_stage) &
            tbb::make_filter<Slot*, void>(tbb::filter_mode::serial_in_order, write_stage));
  });

  stats.seconds = seconds_since(t0);
  stats.read_seconds = read_s;
  stats.compute_seconds = static_cast<double>(compute_ns.load()) * 1e-9;
  stats.write_seconds = write_s;
  stats.rows_done = rows_done;
  stats.stopped = rows_done < rows_total;
  stats.bytes_read = static_cast<std::size_t>(rows_done) * in.row_bytes();
  stats.bytes_written = out_spec ? static_cast<std::size_t>(rows_done) * out_row : 0;
  stats.pixels = rows_done * in.width;
  return stats;
}

}  // namespace ooc
