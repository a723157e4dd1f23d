// The TBB pipeline over bands: serial in-order read (the band's rows and halo, through the border
// rule; on a GPU also the pack into pinned memory with every thread and the enqueued copies and
// kernels), parallel compute (the operation's kernel on the CPU), serial in-order write (waits for
// a GPU band; output rows to the sink, partials to the reduction). On the CUDA backend the bands
// read while CUDA is still starting go through the CPU's kernels instead (see Engine::run).
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "run_cache.hpp"
#include "staging.hpp"
#include "tiles.hpp"
#include "trace.hpp"

namespace ooc {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Set from signal handlers: it must be a lock-free atomic to be touched there.
std::atomic<bool> g_stop{false};
// Read by a signal handler: lock-free, as g_stop.
std::atomic<bool> g_stop_on_signals{false};
static_assert(std::atomic<bool>::is_always_lock_free);

// A step of the engine's walk over the bands (Engine::run): which band, and in slabs, which slab.
struct WalkStep {
  std::int64_t band = 0;
  std::int64_t slab = 0;         // the slab's index, from the run's first
  std::int64_t slab_band = 0;    // its first band's index
  std::int64_t slab_planes = 0;  // planes in this slab (the last may have fewer)
  bool slab_last = false;        // the slab's last band in the walk
};

// One ring slot. Slots are reused round robin: the band at walk position w uses slot w % slots,
// which is safe because the last stage retires bands in walk order and tokens == slots.
struct Slot {
  WalkStep step;
  Band band;
  std::vector<std::int64_t> source_rows;  // image row of each input row; -1: constant border
  // A band on the CPU: the rows mapped for it, the table of them, the output rows (allocated
  // without being filled: the kernels' threads touch the pages first) and the partial.
  RowArena arena;
  std::vector<std::shared_ptr<const detail::CachedRun>> cached;  // runs of RunCache in use
  std::vector<const std::byte*> table;
  std::unique_ptr<std::byte[]> out;
  std::byte* out_in_place = nullptr;  // the sink's own rows, where the kernels wrote this band
  std::vector<std::byte> partial;
  // A band on a GPU: everything lives in the staging slot.
  std::unique_ptr<detail::CudaSlot> gpu;
  bool on_gpu = false;  // the band now in the slot
};

// The GPU slots a background thread makes, shared with it: the thread may outlive the engine
// (detail::background_may_outlive).
struct SlotMaker {
  std::vector<std::promise<std::unique_ptr<detail::CudaSlot>>> promises;
  std::atomic<bool> cancel{false};
};

std::atomic<bool> g_may_outlive{false};

// Fills slot.table with the rows the band needs: source rows in as few contiguous runs as
// possible (one, away from the edges), halo rows outside the image mapped through the border rule.
// With a cache (a volume's planes of context), runs within a plane only, through the cache.
void map_rows(Source& source, Slot& slot, detail::RunCache* cache, std::int64_t plane_rows) {
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
    while (j < wanted.size() && wanted[j] == wanted[j - 1] + 1 &&
           (!cache || wanted[j] % plane_rows != 0))
      ++j;
    runs.push_back({wanted[i], static_cast<std::int64_t>(j - i), nullptr});
    i = j;
  }
  slot.cached.clear();
  for (Run& r : runs) {
    if (!cache) {
      r.data = source.rows(r.y0, r.n, slot.arena);
      continue;
    }
    slot.cached.push_back(cache->get(source, r.y0, r.n));
    r.data = slot.cached.back()->data;
  }

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
void set_stop_on_signals(bool on) noexcept {
  g_stop_on_signals.store(on, std::memory_order_relaxed);
}
bool stops_on_signals() noexcept {
  return g_stop_on_signals.load(std::memory_order_relaxed);
}

namespace detail {
void set_background_may_outlive(bool allowed) noexcept {
  g_may_outlive.store(allowed);
}
bool background_may_outlive() noexcept {
  return g_may_outlive.load();
}
void end_background(std::thread& t) {
  if (!t.joinable()) return;
  if (background_may_outlive())
    t.detach();
  else
    t.join();
}
}  // namespace detail

struct Engine::Impl {
  Source& source;
  Backend backend;
  BandPlan plan;
  std::vector<Slot> slots;
  // GPU slots, made in slot order by one thread of their own (see make_slots).
  std::vector<std::future<std::unique_ptr<detail::CudaSlot>>> gpu_made;
  std::shared_ptr<SlotMaker> maker;
  std::thread gpu_maker;

  Impl(Source& s, Backend b, BandPlan p) : source(s), backend(std::move(b)), plan(p) {}
  ~Impl() {
    if (maker) maker->cancel = true;
    detail::end_background(gpu_maker);
  }

  // Made at the first run, for the largest of the job's operations (the plan says how large).
  // Pinning a GPU slot costs about as much as filling it, so its buffers are made in the
  // background, slot 0 first: the first band starts after one slot's allocation instead of the
  // whole ring's, and the others are made while it runs.
  void make_slots(std::int64_t planes) {
    if (!slots.empty()) return;
    slots.resize(static_cast<std::size_t>(plan.slots));
    if (backend.cuda) {
      maker = std::make_shared<SlotMaker>();
      maker->promises.resize(slots.size());
      for (auto& p : maker->promises) gpu_made.push_back(p.get_future());
      // The slots the plan's bands use, in the order they first do (band b uses slot b % slots):
      // a run of fewer bands than slots makes only those. A slot never made is never asked for
      // (its future would say broken_promise, not hang).
      std::vector<std::size_t> order;
      const std::int64_t bands = std::max<std::int64_t>(plan.last_band - plan.first_band, 1);
      for (std::int64_t k = 0; k < std::min<std::int64_t>(bands, plan.slots); ++k)
        order.push_back(static_cast<std::size_t>((plan.first_band + k) % plan.slots));
      const ImageSpec& in = source.spec();
      const detail::SlotSizes sizes{plan.band_rows,
                                    plan.halo,
                                    planes,
                                    in.row_bytes(),
                                    plan.out_row_bytes,
                                    plan.partial_bytes,
                                    plan.device_scratch_bytes,
                                    plan.host_planes};
      gpu_maker = std::thread([m = maker, start = backend.start, devices = backend.devices, sizes,
                               order] {
        for (std::size_t k = 0; k < order.size(); ++k) {
          try {
            if (start && k == 0) start->wait();
            if (m->cancel) throw Error(ErrorKind::usage, "the engine stopped");
            const std::size_t i = order[k];
            m->promises[i].set_value(detail::CudaSlot::make(
                static_cast<int>(i),
                devices[detail::slot_device_index(i, m->promises.size(), devices.size())], sizes));
          } catch (...) {
            // This slot and every later one fail with the same error.
            for (std::size_t j = k; j < order.size(); ++j)
              m->promises[order[j]].set_exception(std::current_exception());
            return;
          }
        }
      });
      return;
    }
    for (Slot& s : slots) cpu_buffers(s);
  }

  void cpu_buffers(Slot& s) const {
    if (!s.out)
      s.out.reset(new std::byte[static_cast<std::size_t>(plan.band_rows) * plan.out_row_bytes]);
    s.partial.resize(plan.partial_bytes);
  }

  // Whether the GPU could take the band in `s` now, without waiting.
  bool gpu_ready(Slot& s) {
    if (backend.start && !backend.start->ready()) return false;
    auto& made = gpu_made[static_cast<std::size_t>(&s - slots.data())];
    return s.gpu || made.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  detail::CudaSlot& gpu_slot(Slot& s) {
    if (!s.gpu) s.gpu = gpu_made[static_cast<std::size_t>(&s - slots.data())].get();
    return *s.gpu;
  }
};

Engine::Engine(Source& source, Backend backend, BandPlan plan)
    : impl_(std::make_unique<Impl>(source, std::move(backend), plan)) {
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
  const std::int64_t halo = band_halo(op, plan), plane_halo = op.plane_halo();
  const std::size_t partial_bytes = op.partial_bytes();
  const std::size_t out_row = out_spec ? out_spec->row_bytes() : 0;
  if (halo > plan.halo || plane_halo > plan.plane_halo || out_row > plan.out_row_bytes ||
      partial_bytes > plan.partial_bytes)
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
  detail::trace_mark("engine run");
  const auto t0 = Clock::now();
  // A GPU band holds its window of planes; a projection's, every plane.
  e.make_slots(op.projects() ? e.source.spec().depth : 2 * e.plan.plane_halo + 1);
  const detail::CudaStart* start = e.backend.start.get();
  auto no_cuda_version = [&] {
    return Error(ErrorKind::device, "operation '" + op.describe() +
                                        "' has no CUDA version in this build: use --device cpu");
  };
  // Where the bands go. CUDA backend: while CUDA starts (a few tenths of a second, more than a
  // 1 GiB image takes on the CPU), bands go through the CPU's kernels, which give the same
  // results; the first band read once the GPU is ready, and every one after it, goes to the GPU.
  // A start that failed under --device auto leaves every band on the CPU.
  enum class Mode { cpu, starting, gpu };
  Mode mode = Mode::cpu;
  if (e.backend.cuda) {
    if (!op.has_cuda()) throw no_cuda_version();
    // auto only where the CPU gives the GPU's bytes: the output must not depend on the timing.
    const bool start_on_cpu =
        plan.cpu_start_bands > 0 || (plan.cpu_start_bands < 0 && op.cpu_gives_cuda_bits());
    mode = start_on_cpu ? Mode::starting : Mode::gpu;
  }
  std::unique_ptr<CpuKernel> cpu;
  std::unique_ptr<CudaKernel> gpu;
  // The kernels' per-slot state (CpuKernel::start). The CPU's, for every slot as soon as its
  // kernel is made: no CPU band runs yet, and later starts would race with them. A GPU slot's
  // before its first band, in the read stage, where the slot's device and stream are known.
  // Every started slot is stopped when the run ends, failed runs included, before the kernels go.
  // CPU bands cut into tiles run a tile on each thread: a kernel slot per thread after the ring's.
  std::optional<detail::TileRunner> tiles;
  if (const auto column_halo = op.column_halo();
      column_halo && plan.tile_cols > 0 && plan.tile_cols < in.width && partial_bytes == 0)
    tiles.emplace(in, out_spec ? out_spec->pixel_bytes() : 0, plan.tile_cols, *column_halo,
                  op.border(), plan.slots);
  const int cpu_slots = plan.slots + (tiles ? plan.threads : 0);
  int cpu_started = 0;
  std::vector<char> gpu_started(e.slots.size(), 0);
  auto make_cpu = [&] {
    cpu = op.make_cpu();
    for (; cpu_started < cpu_slots; ++cpu_started) cpu->start(cpu_started);
  };
  auto stop_kernels = [&] {
    std::exception_ptr error;
    auto keep = [&](auto&& f) {
      try {
        f();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    };
    for (; cpu_started > 0; --cpu_started) keep([&] { cpu->stop(cpu_started - 1); });
    for (std::size_t i = 0; i < gpu_started.size(); ++i)
      if (gpu_started[i]) {
        gpu_started[i] = 0;
        keep([&] { e.slots[i].gpu->stop_kernel(*gpu); });
      }
    if (error) std::rethrow_exception(error);
  };
  struct StopAtExit {
    std::function<void()> stop;
    ~StopAtExit() {
      try {
        stop();
      } catch (...) {  // the run's own error is already on its way
      }
    }
  } stop_at_exit{stop_kernels};
  if (mode != Mode::gpu) make_cpu();
  // To the GPU from this band on: its kernel object (it needs the context), or, when the start
  // failed under --device auto, the CPU for good.
  auto go_gpu = [&] {
    if (start && e.backend.cpu_if_cuda_fails) {
      try {
        start->wait();
      } catch (const Error&) {
        mode = Mode::cpu;
        if (!cpu) make_cpu();
        return;
      }
    }
    mode = Mode::gpu;
    gpu = op.make_cuda(e.backend.devices);
    if (!gpu) throw no_cuda_version();
  };
  stats.setup_seconds = seconds_since(t0);
  double gpu_wait_s = 0;

  // The walk: bands in index order, or in slabs (BandPlan::slab_planes) of whole planes, a band's
  // rows in each plane of the slab in turn. Walk position w is band walk(w).band; the slots, the
  // pipeline's order and the writes follow w. A slab's bands write into one of two buffers (or the
  // sink's memory), written out in order after its last band: the next slab's bands fill the
  // other meanwhile, and the bands in flight (at most the slots) never reach the slab after it.
  // A sink that takes rows in any order gets each band as it is done instead.
  const std::int64_t plane_bands =
      (in.height + plan.band_rows - 1) / std::max<std::int64_t>(1, plan.band_rows);
  const std::int64_t slab = plan.slab_planes;
  const bool slabs = slab > 1 && (!e.backend.cuda || (sink && sink->any_order())) &&
                     plane_halo > 0 && !op.projects() && partial_bytes == 0 && out_spec &&
                     plan.row_begin % in.height == 0 && plan.first_band % plane_bands == 0 &&
                     plan.last_band % plane_bands == 0 && slab * plane_bands >= plan.slots;
  auto walk = [&](std::int64_t w) {
    WalkStep st;
    if (!slabs) {
      st.band = w;
      return st;
    }
    const std::int64_t k = w - plan.first_band, per_slab = slab * plane_bands;
    const std::int64_t planes = (plan.last_band - plan.first_band) / plane_bands;
    st.slab = k / per_slab;
    st.slab_planes = std::min(slab, planes - st.slab * slab);
    const std::int64_t j = k - st.slab * per_slab;
    st.slab_band = plan.first_band + st.slab * per_slab;
    st.band = st.slab_band + (j % st.slab_planes) * plane_bands + j / st.slab_planes;
    st.slab_last = j == st.slab_planes * plane_bands - 1;
    return st;
  };
  // The kernels write into the sink's memory where its rows are laid out as the output's.
  const auto sink_fits = [&] {
    const ImageSpec& to = sink->spec();
    return to.width == out_spec->width && to.channels == out_spec->channels &&
           to.type == out_spec->type;
  };
  // Made by the read stage (serial) before a slab's first band; none where the sink's memory
  // takes the rows (MemorySink).
  std::unique_ptr<detail::HugeBuffer> slab_buffers[2];
  const std::size_t plane_out = static_cast<std::size_t>(in.height) * out_row;
  const bool slab_in_place =
      slabs && sink_fits() &&
      sink->rows_in_place(band_at(plan, plan.first_band).stacked_y0, 1) != nullptr;
  // A sink that takes rows in any order (Sink::any_order) gets each band of a slab as it is done.
  const bool slab_direct = slabs && !slab_in_place && sink->any_order();
  auto slab_out = [&](const WalkStep& st, const Band& band) {
    const std::int64_t z0 = band_at(plan, st.slab_band).z;
    return slab_buffers[st.slab % 2]->data() + static_cast<std::size_t>(band.z - z0) * plane_out +
           static_cast<std::size_t>(band.y0) * out_row;
  };

  std::int64_t next = plan.first_band;
  std::int64_t rows_done = 0;
  // Bands follow each other in the stacked rows.
  std::int64_t rows_total = 0;
  if (plan.last_band > plan.first_band) {
    const Band a = band_at(plan, plan.first_band), b = band_at(plan, plan.last_band - 1);
    rows_total = b.stacked_y0 + b.rows - a.stacked_y0;
  }
  double read_s = 0, write_s = 0;
  std::atomic<std::int64_t> compute_ns{0};
  // OOC_TRACE=FILE: when each GPU band's steps began, in seconds from the run's start, one CSV line
  // per band, each run's lines after a header: for finding where the pipeline waits.
  const char* trace_path = detail::trace_path();
  std::optional<std::vector<std::array<double, 7>>> trace;
  if (trace_path && e.backend.cuda) trace.emplace();
  const double t0_s = std::chrono::duration<double>(t0.time_since_epoch()).count();

  // Serial, in order: which rows the band needs, mapped on the CPU. On a GPU the slot reads them
  // here too, straight into pinned memory with every thread, and enqueues the band's copies and
  // kernels: one band packed at a time, in order, so each band's copy in starts as early as it
  // can (bands packed side by side finish together and then queue for the one copy engine).
  Slot* last = nullptr;  // the slot of the band read just before (GPU halo reuse)
  std::optional<detail::RunCache> run_cache;
  if (plane_halo > 0 && !op.projects() && plan.run_cache > 0)
    run_cache.emplace(static_cast<std::size_t>(plan.run_cache));
  auto read_stage = [&](tbb::flow_control& fc) -> Slot* {
    if (next >= plan.last_band || stop_requested()) {
      fc.stop();
      return nullptr;
    }
    const auto t = Clock::now();
    Slot& slot = e.slots[static_cast<std::size_t>(next % plan.slots)];
    slot.step = walk(next);
    slot.band = band_at(plan, slot.step.band);
    if (slabs && !slab_in_place && !slab_direct && !slab_buffers[slot.step.slab % 2])
      slab_buffers[slot.step.slab % 2] =
          std::make_unique<detail::HugeBuffer>(static_cast<std::size_t>(slab) * plane_out);
    // The band's rows with their halo, in each plane of the window (border rule in y and z).
    const std::int64_t first = slot.band.y0 - halo, count = slot.band.rows + 2 * halo;
    const std::int64_t window = op.projects() ? in.depth : 2 * plane_halo + 1;
    slot.source_rows.resize(static_cast<std::size_t>(count * window));
    for (std::int64_t k = 0; k < window; ++k) {
      const std::int64_t z =
          op.projects() ? k : map_border(slot.band.z - plane_halo + k, in.depth, border);
      for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t y = z < 0 ? -1 : map_border(first + i, in.height, border);
        slot.source_rows[k * count + i] = y < 0 ? -1 : z * in.height + y;
      }
    }
    const auto waited_from = Clock::now();  // waits for CUDA's start and for slots count as setup
    if (mode == Mode::starting) {
      const std::int64_t k = next - plan.first_band;
      if (plan.cpu_start_bands > 0 ? k >= plan.cpu_start_bands : e.gpu_ready(slot)) go_gpu();
    } else if (mode == Mode::gpu && !gpu) {
      go_gpu();
    }
    slot.on_gpu = mode == Mode::gpu;
    // The CPU's share of the bands (BandPlan::cpu_share, cpu_share_out), and the bands whose slot
    // the GPU has not made yet (the ring is made in the background: no band waits for it).
    const BandPlan::CpuShare& share = out_spec ? plan.cpu_share_out : plan.cpu_share;
    if (slot.on_gpu && share.cpu > 0 && op.cpu_gives_cuda_bits() &&
        (share.takes(next - plan.first_band) || !e.gpu_ready(slot))) {
      if (!cpu) make_cpu();
      slot.on_gpu = false;
    }
    if (slot.on_gpu) {
      detail::CudaSlot& gpu_slot = e.gpu_slot(slot);
      gpu_wait_s += seconds_since(waited_from);
      const std::size_t i = static_cast<std::size_t>(&slot - e.slots.data());
      if (!gpu_started[i]) {
        gpu_started[i] = 1;  // stopped even if its start fails half way
        gpu_slot.start_kernel(*gpu);
      }
      // The halo this band shares with the one before in the walk (the same image rows, border
      // included): a volume's, the 2R planes of its window the band of the plane before also
      // read (bands of whole planes, or a slab's: its rows a plane back).
      std::int64_t reuse = 0;
      if (!op.projects() && last && last != &slot) {
        reuse = plane_halo > 0 ? 2 * plane_halo * count : std::min<std::int64_t>(2 * halo, count);
        const auto& before = last->source_rows;
        if (static_cast<std::int64_t>(before.size()) < reuse ||
            !std::equal(before.end() - reuse, before.end(), slot.source_rows.begin()))
          reuse = 0;
      }
      gpu_slot.start(e.source, slot.source_rows.data(), slot.band, halo, plane_halo, window, in,
                     *gpu, out_row, partial_bytes, last ? last->gpu.get() : nullptr, reuse,
                     op.cuda_input_bits());
      last = &slot;
    } else {
      e.cpu_buffers(slot);
      map_rows(e.source, slot, run_cache ? &*run_cache : nullptr, in.height);
      last = nullptr;
      if (e.backend.cuda) ++stats.cpu_bands;
    }
    ++next;
    read_s += seconds_since(t);
    return &slot;
  };
  // Parallel: the operation's work on the band on the CPU (a GPU band was enqueued by the read
  // stage).
  auto compute_stage = [&](Slot* slot) {
    const auto t = Clock::now();
    slot->out_in_place = nullptr;
    if (!slot->on_gpu) {
      CpuBand b;
      b.band = slot->band;
      b.rows = slot->table.data();
      b.halo = halo;
      b.plane_halo = plane_halo;
      b.in = in;
      if (out_spec) {
        if (sink_fits())
          slot->out_in_place = sink->rows_in_place(slot->band.stacked_y0, slot->band.rows);
        std::byte* out = slot->out_in_place      ? slot->out_in_place
                         : slabs && !slab_direct ? slab_out(slot->step, slot->band)
                                                 : slot->out.get();
        b.out = BandView{
            out, out_row, slot->band.rows, out_spec->width, out_spec->channels, out_spec->type};
      }
      b.partial = partial_bytes > 0 ? slot->partial.data() : nullptr;
      b.slot = static_cast<int>(slot - e.slots.data());
      for (const auto& run : slot->cached) run->wait();  // copied ahead (RunCache)
      if (b.partial) std::fill_n(b.partial, partial_bytes, std::byte{0});
      if (tiles)
        tiles->run(*cpu, b);
      else
        cpu->run(b);
    }
    compute_ns += std::chrono::nanoseconds(Clock::now() - t).count();
    return slot;
  };
  // Serial, in order: wait for the result, release the input rows, write the band, merge its
  // partial.
  auto write_stage = [&](Slot* slot) {
    const auto t = Clock::now();
    const std::byte* out = slot->out_in_place ? slot->out_in_place : slot->out.get();
    const std::byte* partial = slot->partial.data();
    if (slot->on_gpu) {
      detail::SlotTimes t;
      slot->gpu->wait(out, partial, t);
      if (trace) {
        std::array<double, 7> line{double(slot->band.index)};
        for (int i = 0; i < 5; ++i) line[i + 1] = t.at[i] - t0_s;
        line[6] = seconds_since(t0);
        trace->push_back(line);
      }
      stats.pack_seconds += t.pack;
      stats.h2d_seconds += t.h2d;
      stats.kernel_seconds += t.kernels;
      stats.d2h_seconds += t.d2h;
    }
    slot->arena.release();
    slot->cached.clear();
    if (slabs) {
      // The slab's rows, in order, once its last band is done (or each band's as it is done);
      // only then are they done for the journal.
      if (slab_direct) sink->write_rows(slot->band.stacked_y0, slot->band.rows, out, out_row);
      if (slot->step.slab_last) {
        const std::int64_t y0 = band_at(plan, slot->step.slab_band).stacked_y0,
                           n = slot->step.slab_planes * in.height;
        if (!slab_direct)
          sink->write_rows(y0, n,
                           slab_in_place ? sink->rows_in_place(y0, n)
                                         : slab_buffers[slot->step.slab % 2]->data(),
                           out_row);
        rows_done += n;
      }
    } else {
      if (out_spec) sink->write_rows(slot->band.stacked_y0, slot->band.rows, out, out_row);
      if (partial_bytes > 0) op.merge(partial, slot->band);
      rows_done += slot->band.rows;
    }
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
    struct Drain {  // the run cache's copying tasks, in this arena, however the pipeline ends
      std::optional<detail::RunCache>& cache;
      ~Drain() {
        if (cache) cache->drain();
      }
    } drain{run_cache};
    tbb::parallel_pipeline(
        static_cast<std::size_t>(plan.slots),
        tbb::make_filter<void, Slot*>(tbb::filter_mode::serial_in_order, read_stage) &
            tbb::make_filter<Slot*, Slot*>(tbb::filter_mode::parallel, compute_stage) &
            tbb::make_filter<Slot*, void>(tbb::filter_mode::serial_in_order, write_stage));
  });
  stop_kernels();

  // --device cuda whose bands all went to the CPU: a CUDA that failed to start meanwhile is still
  // the run's error (one still starting is not waited for).
  if (e.backend.cuda && !e.backend.cpu_if_cuda_fails && start && start->failed()) start->wait();
  stats.seconds = seconds_since(t0);
  if (e.backend.cuda && mode == Mode::gpu)
    for (Slot& s : e.slots) {  // the CPU's buffers of the start, beside the pinned ring
      s.out.reset();
      std::vector<std::byte>().swap(s.partial);
    }
  if (trace) {
    // A job's runs (a reduction's passes) one after another, each from its header line.
    static std::atomic<bool> traced{false};
    if (std::FILE* f = std::fopen(trace_path, traced.exchange(true) ? "a" : "w")) {
      std::fputs("band,pack,h2d,kernels,d2h,done,written\n", f);
      for (const auto& l : *trace)
        std::fprintf(f, "%.0f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n", l[0], l[1], l[2], l[3], l[4], l[5],
                     l[6]);
      std::fclose(f);
    } else {
      std::fprintf(stderr, "ooc: OOC_TRACE: cannot write '%s'\n", trace_path);
    }
  }
  stats.setup_seconds += gpu_wait_s;
  stats.read_seconds = read_s - gpu_wait_s;
  stats.compute_seconds = static_cast<double>(compute_ns.load()) * 1e-9;
  stats.write_seconds = write_s;
  stats.rows_done = rows_done;
  stats.stopped = rows_done < rows_total;
  // A projection's output row reads that row of every plane.
  stats.bytes_read = static_cast<std::size_t>(rows_done) * in.row_bytes() *
                     static_cast<std::size_t>(op.projects() ? in.depth : 1);
  stats.bytes_written = out_spec ? static_cast<std::size_t>(rows_done) * out_row : 0;
  stats.pixels = rows_done * in.width;
  return stats;
}

}  // namespace ooc
