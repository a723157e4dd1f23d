// The TBB pipeline over bands: serial in-order read (rows of the band and its halo, through the
// border rule), parallel compute (the operation's slot kernel), serial in-order write.
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

namespace ooc {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One ring slot: the band's input rows (pointer table + the memory behind it) and the kernel
// state (output buffer, GPU stream...). Slots are reused round robin: band i uses slot i % slots,
// which is safe because the last stage retires bands in order and tokens == slots.
struct Slot {
  RowArena arena;
  std::vector<const std::byte*> table;
  std::vector<std::int64_t> source_rows;
  std::unique_ptr<SlotKernel> kernel;
  Band band;
};

// Fills slot.table with the rows band needs: source rows in as few contiguous runs as possible
// (one, away from the edges), halo rows outside the image mapped through the border rule.
void stage_rows(Source& source, BorderMode border, std::int64_t halo, bool map, Slot& slot) {
  const std::int64_t H = source.spec().height;
  const std::int64_t first = slot.band.y0 - halo;
  const std::int64_t count = slot.band.rows + 2 * halo;
  slot.source_rows.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) slot.source_rows[i] = map_border(first + i, H, border);
  if (!map) return;
  std::vector<std::int64_t> wanted;
  wanted.reserve(static_cast<std::size_t>(count));
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
  slot.table.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
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

RunStats run_pipeline(Source& source, Sink& sink, Operation& op, const BandPlan& plan,
                      const ProgressFn& progress) {
  const ImageSpec in = source.spec();
  const std::int64_t halo = op.halo_rows();
  const BorderMode border = op.border();
  RunStats stats;
  const auto t0 = Clock::now();

  std::vector<Slot> slots(static_cast<std::size_t>(plan.slots));
  for (int i = 0; i < plan.slots; ++i) slots[i].kernel = op.make_slot(plan.band_rows, i);
  stats.setup_seconds = seconds_since(t0);

  std::int64_t next = 0;
  std::int64_t rows_done = 0;
  double read_s = 0, write_s = 0;
  std::atomic<std::int64_t> compute_ns{0};

  const bool map_rows = !op.reads_rows_itself();

  // Serial, in order: which rows the band needs, mapped (or left to the kernel to read).
  auto read_stage = [&](tbb::flow_control& fc) -> Slot* {
    if (next >= plan.bands) {
      fc.stop();
      return nullptr;
    }
    const auto t = Clock::now();
    Slot& slot = slots[static_cast<std::size_t>(next % plan.slots)];
    slot.band.index = next;
    slot.band.y0 = next * plan.band_rows;
    slot.band.rows = std::min(plan.band_rows, in.height - slot.band.y0);
    stage_rows(source, border, halo, map_rows, slot);
    ++next;
    read_s += seconds_since(t);
    return &slot;
  };
  // Parallel: the operation's work on the band (on a GPU: enqueued, not finished).
  auto compute_stage = [&](Slot* slot) {
    const auto t = Clock::now();
    const BandInput input{map_rows ? slot->table.data() : nullptr, slot->source_rows.data(),
                          &source, halo, in};
    slot->kernel->compute_async(input, slot->band);
    compute_ns += std::chrono::nanoseconds(Clock::now() - t).count();
    return slot;
  };
  // Serial, in order: wait for the result, release the input rows, write the band.
  auto write_stage = [&](Slot* slot) {
    const auto t = Clock::now();
    const BandView out = slot->kernel->wait();
    slot->arena.release();
    sink.write_rows(slot->band.y0, slot->band.rows, out.data, out.row_stride);
    rows_done += slot->band.rows;
    write_s += seconds_since(t);
    if (progress) progress(rows_done, in.height);
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
  stats.bytes_read = in.total_bytes();
  stats.bytes_written = op.output_spec().total_bytes();
  stats.pixels = in.pixels();
  return stats;
}

}  // namespace ooc
