// The band plan: how tall a band is and how many slots the ring has, under --mem-limit.
#include <tbb/info.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>

#include "ooc/cost.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "staging.hpp"

namespace ooc {

std::size_t parse_size(const std::string& text, const std::string& option) {
  auto bad = [&] {
    return Error(ErrorKind::usage, option + ": cannot read size '" + text +
                                       "': use a number of bytes with an optional suffix K, M, "
                                       "G or T (powers of 1024), e.g. 512M or 4G");
  };
  std::size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (...) {
    throw bad();
  }
  std::string unit;
  for (; pos < text.size(); ++pos)
    if (!std::isspace(static_cast<unsigned char>(text[pos])))
      unit += static_cast<char>(std::toupper(static_cast<unsigned char>(text[pos])));
  double scale = 1;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KB" || unit == "KIB") {
    scale = 0x1p10;
  } else if (unit == "M" || unit == "MB" || unit == "MIB") {
    scale = 0x1p20;
  } else if (unit == "G" || unit == "GB" || unit == "GIB") {
    scale = 0x1p30;
  } else if (unit == "T" || unit == "TB" || unit == "TIB") {
    scale = 0x1p40;
  } else {
    throw bad();
  }
  if (!(value > 0) || !std::isfinite(value * scale) || value * scale > 0x1p62) throw bad();
  return static_cast<std::size_t>(value * scale);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

namespace {
// A need, rounded up (format_bytes rounds to nearest): a limit of the figure said is enough.
std::string format_need(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f %s", std::ceil(bytes), units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", std::ceil(bytes * 10 - 1e-9) / 10, units[u]);
  return buf;
}
}  // namespace

// The cost model's time for one pass of `ops` on the CPU under `plan` (cost_model.cpp's ns per
// sample on one thread): the rows of context each band recomputes (about half of them on
// average over a pass's stages: the first computes both halos, the last none), the columns
// each tile recomputes (every stage filters the whole tile), the threads, a ring of one slot
// that cannot overlap reading and writing with computing, and a thread's working set beyond
// the caches (a 6-stage chain on 65536-wide bands of 552 rows ran 1.9x slower than on bands
// of fewer rows, the same threads).
static double plan_seconds(const BandPlan& plan, const std::vector<const Operation*>& ops,
                           const ImageSpec& input, std::int64_t span, std::size_t scratch) {
  if (plan.band_rows <= 0 || plan.threads <= 0) return 0;
  double ns = 0;
  for (const Operation* op : ops) ns += cpu_ns_per_sample(op->cost());
  const double samples = double(span) * double(input.width) * input.channels;
  const double rows = double(plan.band_rows + plan.halo) / double(plan.band_rows);
  const double cols =
      plan.tile_cols > 0
          ? double(std::min(input.width, plan.tile_cols + 2 * plan.column_halo)) / plan.tile_cols
          : 1.0;
  const double busy = plan.threads * (plan.slots >= 2 ? 1.0 : 0.85);
  const double cache_bytes = 24.0 * (1 << 20);
  const double cache = scratch > cache_bytes
                           ? std::min(2.0, 1.0 + 0.25 * std::log2(double(scratch) / cache_bytes))
                           : 1.0;
  return samples * ns * rows * cols * cache / busy * 1e-9;
}

// Device memory every GPU this runs on has free with room to spare (data-centre GPUs have tens
// of GB): a plan needing no more per device need not wait for CUDA's start to know.
constexpr std::size_t kDeviceBytesSure = std::size_t{2} << 30;

namespace {

// A CPU share `a/b` (or `0`) from the environment variable `name`, where it is set.
void cpu_share_from_env(const char* name, BandPlan::CpuShare& share) {
  const char* text = std::getenv(name);
  if (!text) return;
  long long a = 0, b = 1;
  int used = 0;
  const bool ok = (std::sscanf(text, "%lld/%lld%n", &a, &b, &used) == 2 ||
                   (std::sscanf(text, "%lld%n", &a, &used) == 1 && a == 0)) &&
                  text[used] == '\0' && a >= 0 && b >= 1 && a <= b && b <= 1000;
  if (!ok)
    throw Error(ErrorKind::usage, std::string(name) + "=" + text +
                                      ": not a share of the bands: use a/b with 0 <= a <= b <= "
                                      "1000 (1/2: every 2nd band on the CPU), or 0 for none");
  share = {a, b};
}

}  // namespace

BandPlan plan_bands(const ImageSpec& input, const std::vector<const Operation*>& ops,
                    const Backend& backend, const EngineOptions& o, const Source* source,
                    const Sink* sink) {
  if (ops.empty()) throw Error(ErrorKind::usage, "a job needs at least one operation");
  BandPlan plan;
  if (o.threads > kMaxThreads)
    throw Error(ErrorKind::usage, "--threads " + std::to_string(o.threads) + " is more than " +
                                      std::to_string(kMaxThreads) + ": use fewer threads");
  plan.threads = o.threads > 0 ? o.threads : o.cores > 0 ? o.cores : default_threads();
  const int gpus =
      backend.cuda ? static_cast<int>(std::max<std::size_t>(backend.devices.size(), 1)) : 0;
  // CPU: enough bands in flight to keep every stage busy; GPU: read, copy in, compute, copy out
  // and write of different bands at once, on every device. Labels on a GPU six times as many, of
  // shorter bands (below): 2 of 3 bands of pass 1 and every 2nd of pass 2 go to the CPU
  // (cpu_share), whose bands take several times a GPU band's time and retire in order, so the
  // ring must hold many to keep the cores and the link busy at once (docs/performance.md, labels
  // on the GPU).
  const bool labels = std::any_of(ops.begin(), ops.end(),
                                  [](const Operation* op) { return op->output_is_labels(); });
  plan.slots = o.slots > 0     ? o.slots
               : !backend.cuda ? plan.threads + 2
               : labels        ? 24 * gpus
                               : 4 * gpus;
  plan.mem_limit = o.mem_limit > 0 ? o.mem_limit : default_mem_limit();
  // Rows of every plane (H) and of one (P): bands cut the job's rows within each plane.
  // A projection's job covers its output plane's rows, each band reading every plane.
  const bool projects =
      std::any_of(ops.begin(), ops.end(), [](const Operation* op) { return op->projects(); });
  const std::int64_t H = projects ? input.height : input.stacked_rows(), P = input.height;
  plan.plane_rows = P;
  plan.row_begin = o.row_begin;
  plan.row_end = o.row_end > 0 ? o.row_end : H;
  if (plan.row_begin < 0 || plan.row_end > H || plan.row_begin >= plan.row_end)
    throw Error(ErrorKind::usage, "rows " + std::to_string(plan.row_begin) + ":" +
                                      std::to_string(plan.row_end) + " are not a range of the " +
                                      std::to_string(H) + " rows of the image");
  // Bands cover the range only: a part of a run plans its own bands. `tall`: the tallest band.
  const std::int64_t span = plan.row_end - plan.row_begin;
  const std::int64_t tall = std::min(span, P);
  for (const Operation* op : ops) plan.plane_halo = std::max(plan.plane_halo, op->plane_halo());
  // Planes a band reads: on the CPU the distinct ones (a halo beyond the volume repeats planes
  // through the border rule), on a GPU every one of the window.
  const std::int64_t planes_gpu = projects ? input.depth : 2 * plan.plane_halo + 1,
                     planes_cpu = std::min(planes_gpu, input.depth);
  // Bands on the operations' row grid (the FFT's tile rows) where the rows start on it and end on
  // it or at the image's end: those operations then need only their grid_halo(). Elsewhere (a part
  // or a resumed run that starts inside a tile row) every band carries the whole halo().
  for (const Operation* op : ops) {
    const std::int64_t g = std::max<std::int64_t>(1, op->row_grid());
    plan.grid = plan.grid / std::gcd(plan.grid, g) * g;
    if (plan.grid > (std::int64_t{1} << 40)) break;
  }
  if (plan.grid > (std::int64_t{1} << 40) || plan.row_begin % P % plan.grid != 0 ||
      (plan.row_end % P % plan.grid != 0 && plan.row_end % P != 0 && plan.row_end != H))
    plan.grid = 1;
  for (const Operation* op : ops) {
    plan.halo = std::max(plan.halo, band_halo(*op, plan));
    if (const auto out = op->output())
      plan.out_row_bytes = std::max(plan.out_row_bytes, out->row_bytes());
    plan.partial_bytes = std::max(plan.partial_bytes, op->partial_bytes());
  }
  // Tiles across the row (CPU bands only): every operation must say how far its outputs reach
  // across columns.
  std::optional<std::int64_t> column_halo = 0;
  for (const Operation* op : ops) {
    const auto c = op->column_halo();
    column_halo = c && column_halo ? std::optional(std::max(*column_halo, *c)) : std::nullopt;
    if (op->partial_bytes() > 0) column_halo = std::nullopt;
  }
  plan.column_halo = column_halo.value_or(0);
  const bool border_wraps = std::any_of(
      ops.begin(), ops.end(), [](const Operation* op) { return op->border() == BorderMode::wrap; });

  // A volume's GPU bands may walk in slabs (below) where the sink takes rows in any order and the
  // job covers whole planes.
  const bool gpu_slabs = backend.cuda && plan.plane_halo > 0 && !projects &&
                         plan.partial_bytes == 0 && sink && sink->any_order() &&
                         plan.row_begin % P == 0 && plan.row_end % P == 0;
  // A volume on one GPU walked so that each band takes the 2R other planes of its window from the
  // band before, on the device (whole-plane bands, or slabs), pins one plane's rows a slot, not
  // the window's: the window's ring took the whole limit for 2R + 1 times the rows a band
  // copies, and pinning it held up the start. The rare band that takes none (a slab's first)
  // copies its window in pieces (CudaSlot::start).
  const bool host_one_plane = gpu_slabs && gpus == 1 && span / P > 1;
  const std::int64_t planes_host = host_one_plane ? 1 : planes_gpu;
  plan.host_planes = host_one_plane ? 1 : 0;

  // The plan for tiles of `tc` output columns (the image's width: none).
  auto attempt = [&](BandPlan plan, std::int64_t tc) -> BandPlan {
    const std::int64_t halo = plan.halo;
    // The columns a CPU kernel sees: the image's, or a tile's with its column halo on both sides.
    const std::int64_t W = input.width;
    const bool tiled = tc < W;
    const std::int64_t seen = tiled ? std::min(W, tc + 2 * plan.column_halo) : W;
    auto cpu_scratch = [&](std::int64_t rows) {
      std::size_t m = 0;
      for (const Operation* op : ops) m = std::max(m, op->cpu_scratch_bytes(rows, seen));
      // A tile's output before its kept columns are copied out, and under wrap its input columns
      // gathered around the image's edge.
      if (tiled)
        m += static_cast<std::size_t>(rows) * static_cast<std::size_t>(seen) *
                 (plan.out_row_bytes / static_cast<std::size_t>(W)) +
             (border_wraps ? static_cast<std::size_t>(rows + 2 * halo) *
                                 static_cast<std::size_t>(seen) * input.pixel_bytes()
                           : 0);
      return m;
    };
    auto device_scratch = [&](std::int64_t rows) {
      std::size_t m = 0;
      for (const Operation* op : ops) m = std::max(m, op->cuda_scratch_bytes(rows));
      return m;
    };

    // Host memory of one slot. CPU: the band's input rows (mapped; never more than the image has,
    // since a halo beyond the image repeats rows through the border rule), the output rows, the
    // partial and the row table. GPU: pinned input rows with the halo, output rows and partial.
    // `on_gpu`: for the slots of the backend's own bands, or (false) for bands the CPU filters.
    auto slot_bytes = [&](std::int64_t rows, bool on_gpu) {
      const std::int64_t in_rows =
          on_gpu ? (rows + 2 * halo) * planes_host : std::min(rows + 2 * halo, P) * planes_cpu;
      return static_cast<std::size_t>(in_rows) * input.row_bytes() +
             static_cast<std::size_t>(rows) * plan.out_row_bytes + plan.partial_bytes +
             static_cast<std::size_t>((rows + 2 * halo) * planes_gpu) *
                 (sizeof(void*) + sizeof(std::int64_t));
    };
    auto slot_total = [&](std::int64_t rows) { return slot_bytes(rows, backend.cuda); };
    // Blocks the source decodes ahead and the sink gathers for compression.
    auto buffers = [&](std::int64_t rows, int slots) {
      const int readers = backend.cuda ? slots : 1;
      return (source ? source->buffer_bytes(rows, readers) : 0) + (sink ? sink->buffer_bytes() : 0);
    };
    // The threads' scratch, and the buffers of the bands being computed: at most one a slot in
    // whole rows, one a thread in tiles (a thread filters one tile at a time).
    auto band_bytes = [&](std::int64_t rows) {
      std::size_t m = 0;
      for (const Operation* op : ops) m = std::max(m, op->cpu_band_bytes(rows, seen));
      return m;
    };
    auto threads_scratch = [&](std::int64_t rows, int slots) {
      const int computing = tiled ? plan.threads : std::min(slots, plan.threads);
      return static_cast<std::size_t>(plan.threads) * cpu_scratch(rows) +
             static_cast<std::size_t>(std::max(computing, 1)) * band_bytes(rows);
    };
    auto shared = [&](std::int64_t rows, int slots) {
      return backend.cuda ? std::size_t{0} : threads_scratch(rows, slots);
    };
    auto ring_total = [&](std::int64_t rows, int slots) {
      return static_cast<std::size_t>(slots) * slot_total(rows) + shared(rows, slots) +
             buffers(rows, slots);
    };

    // Bands on a grid are whole grid rows (or the whole span).
    const std::int64_t least = std::min(tall, plan.grid);
    auto on_grid = [&](std::int64_t rows) {
      if (plan.grid <= 1 || rows >= tall) return rows;
      return std::min(tall, std::max(plan.grid, rows / plan.grid * plan.grid));
    };
    const std::int64_t smallest = std::min<std::int64_t>(tall, std::max(least, 2 * halo));
    if (o.threads <= 0 && !backend.cuda) {
      // Kernels with large per-thread scratch (FFT tiles: tens of MiB a thread) would not fit on
      // every core of a large node under the default limit: fewer threads beat failing, and beat
      // bands much shorter than the halo (an FFT band shorter than its tiles transforms each tile
      // once per band it touches: 4x slower at 16-row bands than at 128 with one thread less). Only
      // when --threads was not given; the slots follow the threads as by default.
      const int min_slots = o.slots > 0 ? o.slots : 1;
      const std::int64_t probe = std::min<std::int64_t>(tall, std::max(least, halo / 2));
      while (plan.threads > 1 && ring_total(probe, min_slots) > plan.mem_limit) {
        plan.threads = std::max(1, plan.threads * 3 / 4);
        if (o.slots <= 0) plan.slots = plan.threads + 2;
      }
    }
    // A CPU volume walked in slabs straight into a sink that takes rows in any order (below)
    // keeps the runs of a band's window (and of the bands in flight) beside the ring. They are
    // reserved before the band height is chosen: a ring that took the whole limit left no room
    // for them, and every band then read its 2R + 1 planes afresh, hundreds of times slower on
    // wide planes. Bands shrink instead: slabs read each row about once whatever their height.
    const std::int64_t planes_total = span / P;
    const bool slab_walk = !backend.cuda && !projects && plan.plane_halo >= 3 && planes_total > 1 &&
                           plan.partial_bytes == 0 && plan.out_row_bytes > 0 &&
                           plan.row_begin % P == 0 && plan.row_end % P == 0 && sink &&
                           sink->any_order();
    auto runs_bytes_of = [&](std::int64_t rows, int slots) {
      return static_cast<std::size_t>(planes_cpu + slots) *
             static_cast<std::size_t>(std::min(rows + 2 * halo, P)) * input.row_bytes();
    };
    const bool reserve_runs =
        slab_walk && o.band_rows <= 0 &&
        ring_total(smallest, 2) + runs_bytes_of(smallest, 2) <= plan.mem_limit;
    auto need = [&](std::int64_t rows, int slots) {
      return ring_total(rows, slots) + (reserve_runs ? runs_bytes_of(rows, slots) : 0);
    };
    if (o.slots <= 0) {
      // Under a tight limit, fewer bands in flight beat failing: down to 2 (reading overlaps
      // computing), then 1.
      plan.slots = std::max(1, plan.slots);
      while (plan.slots > 1 && need(smallest, plan.slots) > plan.mem_limit) --plan.slots;
    }
    // Bands on a GPU: tall enough that each band's fixed costs (a parallel pack, copies, launches)
    // stay small, but at most 64 MiB a slot: bands of 17-50 MB streamed faster than 67 MB ones
    // (docs/design.md, "GPU slots"; docs/performance.md, streaming); the halo rows a
    // band shares with the one before stay on the device. A small image still gets several bands
    // per slot: the first band's read and the last one's write do not overlap anything, and the
    // pinned ring, allocated before any work, costs time in proportion to its size.
    std::size_t target = o.target_slot_bytes;
    if (backend.cuda) {
      // Label's second pass finds its bands by their first rows: a resumed run (fewer rows left)
      // must plan the bands the first pass had, so its slots follow the image's rows.
      const std::size_t span_bytes =
          static_cast<std::size_t>(labels ? input.stacked_rows() : span) * input.row_bytes();
      // Labels: 24 MiB a slot (64 rows of a 65536-wide u8 mask with its u32 labels), so that the
      // CPU's share of bands is short and the ring holds many.
      target = labels && o.slots <= 0
                   ? std::size_t{24} << 20
                   : std::clamp(span_bytes / (4 * static_cast<std::size_t>(plan.slots)),
                                std::size_t{32} << 20, std::size_t{64} << 20);
    }
    std::int64_t rows = 0;
    if (o.band_rows > 0) {
      rows = std::min(o.band_rows, tall);
    } else {
      // Largest band the limit allows (binary search: memory grows with the band height)...
      auto fit_rows = [&](int slots) {
        std::int64_t lo = 0, hi = tall;
        while (lo < hi) {
          const std::int64_t mid = lo + (hi - lo + 1) / 2;
          if (need(mid, slots) <= plan.mem_limit)
            lo = mid;
          else
            hi = mid - 1;
        }
        return lo;
      };
      std::int64_t lo = fit_rows(plan.slots);
      // A slabbed volume under a tight limit trades bands in flight for taller bands: bands
      // hardly taller than their halo read and filter each row about twice, where fewer slots
      // only leave some threads a band less to choose from.
      if (reserve_runs && o.slots <= 0) {
        const std::int64_t enough = std::min(tall, o.min_rows_per_halo * 2 * halo);
        while (plan.slots > 2 && lo < enough) lo = fit_rows(--plan.slots);
      }
      // ...and the backend's preferred size, but tall enough that the halo stays a small overhead.
      // A volume's band on a GPU copies in one plane's rows: the 2R others are the band before's,
      // copied on the device, where bands are whole planes. So the target counts one plane.
      const bool planes_reused = backend.cuda && plan.plane_halo > 0 && !projects;
      auto per_band = [&](std::int64_t r) {
        return planes_reused ? static_cast<std::size_t>(r + 2 * halo) * input.row_bytes()
                             : slot_total(r);
      };
      std::int64_t want = 1;
      while (want < tall && per_band(want * 2) <= target) want *= 2;
      if (planes_reused && per_band(tall) <= target) want = tall;
      want = std::max(want, o.min_rows_per_halo * 2 * halo);
      rows = std::max<std::int64_t>(1, std::min({lo, want, tall}));
      // The CPU filters bands while CUDA starts only where its buffers fit beside the pinned ring
      // (below). Several GPUs have as many slots more, and both no longer fit under the default
      // limit: bands down to half as tall keep that start (otherwise the job waits for every
      // device's context) for a few percent more per-band cost; labels' down to a quarter, for
      // the CPU's share (cpu_share) needs the same buffers.
      const bool cpu_start = std::all_of(
          ops.begin(), ops.end(), [](const Operation* op) { return op->cpu_gives_cuda_bits(); });
      // Labels count the threads' scratch for as many threads as slots: their bands must not
      // depend on --threads, which a resumed run may change (the ring is checked with the real
      // threads below).
      auto with_cpu_start = [&](std::int64_t r) {
        const std::size_t scratch =
            labels ? static_cast<std::size_t>(plan.slots) * (cpu_scratch(r) + band_bytes(r))
                   : threads_scratch(r, plan.slots);
        return ring_total(r, plan.slots) +
               static_cast<std::size_t>(plan.slots) * slot_bytes(r, false) + scratch;
      };
      if (backend.cuda && (o.cpu_start_bands > 0 || (o.cpu_start_bands < 0 && cpu_start)) &&
          with_cpu_start(rows) > plan.mem_limit) {
        std::int64_t a = std::max<std::int64_t>(1, rows / (labels ? 4 : 2)), b = rows;
        if (with_cpu_start(a) <= plan.mem_limit) {
          while (a < b) {
            const std::int64_t mid = a + (b - a + 1) / 2;
            if (with_cpu_start(mid) <= plan.mem_limit)
              a = mid;
            else
              b = mid - 1;
          }
          rows = a;
        }
      }
    }
    if (backend.cuda) {
      // Device memory of a slot: input with halo, output, partial and the kernels' scratch.
      auto device_bytes = [&](std::int64_t r) {
        return static_cast<std::size_t>((r + 2 * halo) * planes_gpu) * input.row_bytes() +
               static_cast<std::size_t>(r) * plan.out_row_bytes + plan.partial_bytes +
               device_scratch(r);
      };
      // CUDA may still be starting: a ring that needs less device memory than any GPU this runs on
      // has free is planned without waiting for the figures (the slots' allocation would fail
      // with CUDA's own error if it did not fit). A start that failed: the run goes on the CPU
      // (--device auto), or fails here with the start's error.
      const detail::CudaStart* start = backend.start.get();
      const std::size_t per_device = static_cast<std::size_t>((plan.slots + gpus - 1) / gpus);
      bool check = true;
      if (start && start->failed()) {
        if (!backend.cpu_if_cuda_fails) start->wait();
        check = false;
      } else if (start && !start->ready() && per_device * device_bytes(rows) <= kDeviceBytesSure) {
        check = false;
      }
      std::int64_t device_rows =
          check ? detail::cuda_max_band_rows(backend.devices, plan.slots, tall, device_bytes, start)
                : rows;
      if (o.band_rows > 0 && rows > device_rows)
        throw Error(ErrorKind::usage, "--band-rows " + std::to_string(rows) +
                                          " does not fit in GPU memory with " +
                                          std::to_string(plan.slots) + " slots: use at most " +
                                          std::to_string(device_rows));
      rows = std::min(rows, device_rows);
      for (const Operation* op : ops) rows = op->fit_band_rows(rows, tall);
      rows = on_grid(rows);
      // Unchecked while CUDA starts: a band the grid made taller is checked now, and needs the
      // devices' figures only when it is no longer surely small.
      if (!check && rows > device_rows)
        device_rows = per_device * device_bytes(rows) <= kDeviceBytesSure
                          ? rows
                          : detail::cuda_max_band_rows(backend.devices, plan.slots, tall,
                                                       device_bytes, start);
      if (rows > device_rows)
        throw Error(ErrorKind::device, "bands of " + std::to_string(rows) +
                                           " rows (the operation's smallest) do not fit in GPU "
                                           "memory with " +
                                           std::to_string(plan.slots) +
                                           " slots: use --slots 1 or a GPU with more free memory");
    } else {
      for (const Operation* op : ops) rows = op->fit_band_rows(rows, tall);
      rows = on_grid(rows);
    }
    plan.bands = band_count(plan.row_begin, plan.row_end, P, rows);
    plan.first_band = 0;
    plan.last_band = plan.bands;
    plan.slots = static_cast<int>(std::min<std::int64_t>(plan.slots, plan.bands));
    plan.band_rows = rows;
    plan.tile_cols = tiled ? tc : 0;
    plan.device_scratch_bytes = backend.cuda ? device_scratch(rows) : 0;
    plan.ring_bytes = ring_total(rows, plan.slots);
    // A volume's bands on the CPU: each plane's runs of rows kept for the 2R bands after it that
    // read them (Engine's RunCache), where 2R + 1 planes' worth fits beside the ring. Fewer would
    // be evicted before their next use (the cache keeps the last ones used).
    plan.run_cache = 0;
    plan.slab_planes = 0;
    if (!backend.cuda && plan.plane_halo > 0) {
      const std::int64_t per_plane = (P + rows - 1) / rows;
      const std::size_t entry =
          static_cast<std::size_t>(std::min(rows + 2 * halo, P)) * input.row_bytes();
      // Slabs where the window has 7 planes or more (a Gaussian's: its z pass reads each row 2R + 1
      // times, and from memory when the bands between two reads are a plane's; a 3 or 5 plane
      // median is bound by its sorting, and slabs only read 2R planes more at each end): the runs
      // of one band's window (and those the bands in flight hold), and two buffers of the slab's
      // output planes, as many planes as fit beside them up to two windows. Enough bands a slab
      // that those in flight never reach two slabs on.
      const std::int64_t planes = span / P, slab_runs = planes_cpu + plan.slots;
      const std::size_t runs_bytes = static_cast<std::size_t>(slab_runs) * entry;
      const std::size_t plane_out = static_cast<std::size_t>(P) * plan.out_row_bytes;
      // A sink that takes rows in any order gets each band as it is done: no slab buffers, and
      // slabs of up to 8 windows read 1 + 2R / (8 (2R + 1)) of the rows a window at a time; longer
      // ones would only space further apart the points a stopped run resumes from.
      const bool direct = sink && sink->any_order();
      const std::int64_t window = 2 * plan.plane_halo + 1;
      if (!projects && plan.plane_halo >= 3 && per_plane > 1 && planes > 1 &&
          plan.partial_bytes == 0 && plane_out > 0 && plan.row_begin % P == 0 &&
          plan.row_end % P == 0 && plan.ring_bytes + runs_bytes <= plan.mem_limit) {
        const auto fit =
            direct ? planes
                   : static_cast<std::int64_t>((plan.mem_limit - plan.ring_bytes - runs_bytes) /
                                               (2 * plane_out));
        const std::int64_t slab = std::min({fit, planes, (direct ? 8 : 2) * window});
        if (slab > 1 && slab * per_plane >= plan.slots) {
          plan.slab_planes = slab;
          plan.run_cache = slab_runs;
          plan.ring_bytes +=
              runs_bytes + (direct ? 0 : 2 * static_cast<std::size_t>(slab) * plane_out);
        }
      }
      const std::int64_t want = planes_cpu * (per_plane + 1);
      if (plan.slab_planes == 0 &&
          plan.ring_bytes + static_cast<std::size_t>(want) * entry <= plan.mem_limit) {
        plan.run_cache = want;
        plan.ring_bytes += static_cast<std::size_t>(want) * entry;
      }
    }
    // On a GPU, the band before a slab's band is its rows a plane back: the band copies in one
    // plane's rows and takes the 2R others from it on the device, however tall the bands. Only
    // where the sink takes rows in any order: the GPU's slots hold no slab to gather. A slab's
    // first bands copy their whole window: slabs of up to 32 windows copy 1 + 1/16 of the rows.
    if (gpu_slabs) {
      const std::int64_t per_plane = (P + rows - 1) / rows, planes = span / P;
      const std::int64_t slab = std::min(planes, 32 * (2 * plan.plane_halo + 1));
      if (per_plane > 1 && slab > 1 && (host_one_plane || slab * per_plane >= plan.slots))
        plan.slab_planes = slab;
    }
    if (backend.cuda && o.cpu_start_bands != 0 && plan.ring_bytes <= plan.mem_limit) {
      // Buffers for the bands the CPU filters while CUDA starts, beside the pinned ring: each
      // slot's rows as on the CPU backend, and the threads' scratch.
      const std::size_t head = static_cast<std::size_t>(plan.slots) * slot_bytes(rows, false) +
                               threads_scratch(rows, plan.slots);
      if (plan.ring_bytes + head <= plan.mem_limit) {
        plan.cpu_start_bands = o.cpu_start_bands;
        plan.ring_bytes += head;
        // Labels: 2 of every 3 bands of pass 1 on the CPU, every 2nd of pass 2. Both passes are
        // bound by the host's cores and memory on either backend, and a band costs the host
        // less labelled by its cores than staged for the GPU; pass 2's GPU bands are bound by
        // the link besides (4 bytes back a sample). Those shares measured best
        // (docs/performance.md). OOC_LABEL_CPU_SHARE=a/b (pass 1) and OOC_LABEL_CPU_SHARE_OUT=a/b
        // (pass 2) for measurements and tests (0: none).
        if (labels) {
          plan.cpu_share = {2, 3};
          plan.cpu_share_out = {1, 2};
          cpu_share_from_env("OOC_LABEL_CPU_SHARE", plan.cpu_share);
          cpu_share_from_env("OOC_LABEL_CPU_SHARE_OUT", plan.cpu_share_out);
        }
      } else if (o.cpu_start_bands > 0) {
        throw Error(ErrorKind::usage, "--cpu-start " + std::to_string(o.cpu_start_bands) +
                                          ": the CPU's buffers (" + format_bytes(double(head)) +
                                          ") do not fit beside the GPU's ring under --mem-limit " +
                                          format_bytes(double(plan.mem_limit)) +
                                          ": raise --mem-limit or use --cpu-start off");
      }
    }
    if (plan.ring_bytes > plan.mem_limit) {
      const std::int64_t r = o.band_rows > 0 ? rows : least;
      const std::size_t need = ring_total(r, plan.slots);
      const std::size_t scratch = shared(r, plan.slots);
      const std::size_t blocks = buffers(r, plan.slots);
      std::string parts =
          std::to_string(plan.slots) + " slot(s) of " + std::to_string(r) + "-row bands (width " +
          std::to_string(input.width) + ", halo " + std::to_string(halo) +
          " rows): " + format_bytes(double(static_cast<std::size_t>(plan.slots) * slot_total(r)));
      if (scratch > 0) {
        parts += ", scratch of " + std::to_string(plan.threads) + " thread(s)";
        if (tiled) parts += " on tiles of " + std::to_string(seen) + " columns";
        parts += ": " + format_bytes(double(scratch));
      }
      if (blocks > 0)
        parts += ", the input's and output's buffers (direct I/O, TIFF, Zarr): " +
                 format_bytes(double(blocks));
      throw Error(ErrorKind::usage,
                  "--mem-limit " + format_bytes(double(plan.mem_limit)) +
                      " is too small: this job needs at least " + format_need(double(need)) + " (" +
                      parts + "); raise --mem-limit" +
                      (o.band_rows > 0 ? ", lower --band-rows" : "") +
                      (o.slots > 0 ? ", lower --slots" : "") +
                      (scratch > 0 && o.threads > 0 ? ", lower --threads" : "") +
                      (blocks > 0 ? ", or use smaller TIFF strips or tiles" : ""));
    }
    if (!backend.cuda)
      plan.estimate_seconds =
          plan_seconds(plan, ops, input, span, cpu_scratch(rows) + band_bytes(rows));
    return plan;
  };

  const std::int64_t W = input.width;
  if (backend.cuda || !column_halo || W <= 1) return attempt(plan, W);
  if (o.tile_cols > 0) return attempt(plan, std::min(o.tile_cols, W));
  // The fastest plan the cost model sees among whole rows and tiles of a few widths: tiles cost
  // the columns of context recomputed at each cut, and save threads that whole rows' scratch
  // would not fit, halo rows recomputed in short bands, and a working set beyond the caches.
  std::optional<BandPlan> best;
  std::optional<Error> last_error;
  for (std::int64_t tc = W;; tc = tc > 8192 ? 8192 : tc / 2) {
    if (tc < W && (tc < 4 * plan.column_halo || tc < 64)) break;
    try {
      BandPlan p = attempt(plan, tc);
      if (!best || p.estimate_seconds < best->estimate_seconds * 0.97) best = p;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::usage) throw;
      if (!best) last_error = e;
    }
    if (tc <= 64) break;
  }
  if (!best) throw *last_error;
  return *best;
}

std::int64_t band_count(std::int64_t b, std::int64_t e, std::int64_t P, std::int64_t B) {
  if (b >= e || P <= 0 || B <= 0) return 0;
  const std::int64_t plane_end = (b / P + 1) * P;
  const std::int64_t first = (std::min(e, plane_end) - b + B - 1) / B;  // in b's plane
  if (e <= plane_end) return first;
  const std::int64_t rest = e - plane_end, per_plane = (P + B - 1) / B;
  return first + rest / P * per_plane + (rest % P + B - 1) / B;
}

Band band_at(const BandPlan& plan, std::int64_t i) {
  const std::int64_t P = plan.plane_rows > 0 ? plan.plane_rows : plan.row_end;
  const std::int64_t B = plan.band_rows, b = plan.row_begin, e = plan.row_end;
  const std::int64_t plane_end = (b / P + 1) * P;
  const std::int64_t first = (std::min(e, plane_end) - b + B - 1) / B;
  std::int64_t start = 0;
  if (i < first) {
    start = b + i * B;
  } else {
    const std::int64_t j = i - first, per_plane = (P + B - 1) / B;
    start = plane_end + j / per_plane * P + j % per_plane * B;
  }
  Band band;
  band.index = i;
  band.z = start / P;
  band.y0 = start % P;
  band.stacked_y0 = start;
  band.rows = std::min({B, P - band.y0, e - start});
  return band;
}

std::int64_t band_halo(const Operation& op, const BandPlan& plan) {
  const std::int64_t g = op.row_grid();
  return g > 1 && plan.grid % g == 0 ? op.grid_halo() : op.halo();
}

}  // namespace ooc
