// The option groups the tools share (Input, Output, Pipeline, parts and resume, Reporting) and
// what their values become in the job's options.
#include <CLI/CLI.hpp>
#include <exception>
#include <optional>
#include <string>

#include "main.hpp"
#include "main_state.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "options.hpp"
#include "report.hpp"
#include "world.hpp"

namespace ooc::cli {

CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          std::size_t pos = 0;
          const long long v = std::stoll(text, &pos);
          if (pos == text.size() && v >= 1) return {};
        } catch (const std::exception&) {
        }
        return "must be a whole number of at least 1, got '" + text + "'";
      },
      "POSITIVE");
}

namespace {
// A count option's check, in ooc/engine.hpp's words (the Python keywords say the same).
CLI::Validator count_in(const CountRange& range) {
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        try {
          std::size_t pos = 0;
          const long long v = std::stoll(text, &pos);
          if (pos == text.size() && v >= range.lo && v <= range.hi) return {};
        } catch (const std::exception&) {
        }
        return count_problem(range, text);
      },
      "INT");
}
}  // namespace

void add_progress_options(CLI::App& app, ProgressCli& p) {
  auto* bar = app.add_flag("--progress", p.bar, "progress bar on stderr (default on a terminal)");
  auto* log = app.add_flag("--progress-log{" + std::to_string(kLogSeconds) + "}", p.log_seconds,
                           "a progress line every " + std::to_string(kLogSeconds) +
                               " s (--progress-log=S: every S s), for batch logs (default when "
                               "stderr is not a terminal)")
                  ->check(CLI::Range(1, 86400));
  app.add_flag("--no-progress", p.none, "no progress report")->excludes(bar)->excludes(log);
  bar->excludes(log);
}

void add_report_options(CLI::App& app, ReportCli& r) {
  add_progress_options(app, r.progress);
  app.add_option("--stats", r.stats, "print a summary on stdout: json or text");
  app.add_flag("-q,--quiet", r.quiet,
               "no summary line and no progress on stderr (an explicit --progress or "
               "--progress-log still reports)");
}

void check_report_options(ReportCli& r) {
  if (!r.stats.empty() && r.stats != "json" && r.stats != "text")
    throw Error(ErrorKind::usage, "--stats takes json or text, got '" + r.stats + "'");
  r.progress.quiet = r.quiet;
}

void add_pipeline_options(CLI::App& group, PipelineCli& p, const std::string& band_rows_help) {
  group.add_option("--mem-limit", p.mem_limit,
                   "memory for the band ring, e.g. 512M, 4G (default: half the job's allocation, "
                   "else min(1G, RAM/4); oocinfo says which)");
  group.add_option("--threads", p.options.threads, "worker threads (default: all cores)")
      ->check(count_in(kThreadsRange));
  group.add_option("--band-rows", p.options.band_rows, band_rows_help)
      ->check(count_in(kBandRowsRange));
  group.add_option("--slots", p.options.slots, "bands in flight (default: planned)")
      ->check(count_in(kSlotsRange));
  group
      .add_option("--tile-cols", p.options.tile_cols,
                  "CPU: cut bands into tiles of N columns, a thread each (default: planned)")
      ->check(count_in(kBandRowsRange));
  group
      .add_option("--device", p.device,
                  "auto (CUDA where it is estimated faster: --stats says why), cpu or cuda")
      ->default_str("auto");
  group
      .add_option("--devices", p.devices,
                  "GPUs to use: all (as many as pay: the copies share the host's bandwidth), or "
                  "a list like 0,1")
      ->default_str("all");
  group
      .add_option("--cpu-start", p.cpu_start,
                  "bands the CPU filters while CUDA starts: auto (until the GPU is ready), off, "
                  "or the first N")
      ->default_str("auto")
      ->envname("OOC_CPU_START");
}

void apply_pipeline_options(const PipelineCli& p, ooc::JobOptions& jo) {
  jo.pipeline = p.options;
  if (p.mem_limit) jo.pipeline.mem_limit = ooc::parse_size(*p.mem_limit, "--mem-limit");
  jo.device = p.device;
  jo.devices = p.devices;
  if (p.cpu_start == "auto") {
    jo.pipeline.cpu_start_bands = -1;
  } else if (p.cpu_start == "off") {
    jo.pipeline.cpu_start_bands = 0;
  } else {
    std::size_t pos = 0;
    long long n = -1;
    try {
      n = std::stoll(p.cpu_start, &pos);
    } catch (const std::exception&) {
      pos = std::string::npos;
    }
    if (pos != p.cpu_start.size() || n < 1)
      throw ooc::Error(
          ooc::ErrorKind::usage,
          "--cpu-start (or OOC_CPU_START) takes auto, off or a number of bands, got '" +
              p.cpu_start + "'");
    jo.pipeline.cpu_start_bands = n;
  }
}

void add_run_options(CLI::App& app, RunCli& r) {
  auto* part = app.add_option("--part", r.part,
                              "I/N: run part I (0 to N-1) of N; auto: from Slurm "
                              "(SLURM_ARRAY_TASK_ID, SLURM_PROCID) or MPI rank variables");
  app.add_option("--rows", r.rows, "A:B: run output rows A to B-1 only")->excludes(part);
  app.add_flag("--resume", r.resume,
               "continue an interrupted run (or part) from its journal; starts afresh if none");
  add_finish_option(app, r.finish);
}

void add_finish_option(CLI::App& app, std::string& out) {
  app.add_option("--finish", out,
                 "OUT: check that every part of OUT is done, then rename it into place (no "
                 "INPUT or OUTPUT)");
}

void apply_run_options(const RunCli& r, ooc::JobOptions& jo) {
  jo.resume = r.resume;
  if (World::get().mpi()) {
    apply_mpi_ranks(r, jo);
    return;
  }
  auto number = [](const std::string& text, const std::string& what) {
    std::size_t pos = 0;
    long long v = -1;
    try {
      v = std::stoll(text, &pos);
    } catch (const std::exception&) {
      pos = std::string::npos;
    }
    if (pos != text.size() || v < 0) throw Error(ErrorKind::usage, what);
    return v;
  };
  if (r.part == "auto") {
    std::string from;
    if (!part_from_environment(jo.part_index, jo.part_count, from))
      throw Error(ErrorKind::usage,
                  "--part auto found no Slurm array, srun or MPI variables: give --part I/N");
  } else if (!r.part.empty()) {
    const std::string bad = "--part takes I/N (part I, from 0, of N) or auto, got '" + r.part + "'";
    const auto slash = r.part.find('/');
    if (slash == std::string::npos) throw Error(ErrorKind::usage, bad);
    const long long i = number(r.part.substr(0, slash), bad);
    const long long n = number(r.part.substr(slash + 1), bad);
    if (n < 1 || n > (1 << 20) || i >= n) throw Error(ErrorKind::usage, bad);
    jo.part_index = static_cast<int>(i);
    jo.part_count = static_cast<int>(n);
  }
  if (!r.rows.empty()) {
    const std::string bad = "--rows takes A:B (rows A to B-1), got '" + r.rows + "'";
    const auto colon = r.rows.find(':');
    if (colon == std::string::npos) throw Error(ErrorKind::usage, bad);
    jo.rows_begin = number(r.rows.substr(0, colon), bad);
    jo.rows_end = number(r.rows.substr(colon + 1), bad);
    if (jo.rows_end <= jo.rows_begin) throw Error(ErrorKind::usage, bad);
  }
}

void add_input_options(CLI::App& g, InputCli& in, ooc::RawHints& hints, std::uint64_t& seed,
                       const std::string& default_type, const std::string& types_help) {
  in.type = default_type;
  g.add_option("--width", hints.width, "samples per row (raw input: required)")->check(positive());
  g.add_option("--height", hints.height,
               "rows of a plane (raw: checked against the file size; a file of k whole planes "
               "is a volume of depth k)")
      ->check(positive());
  g.add_option("--depth", hints.depth,
               "planes of a volume (raw: with --width alone the height follows from the size; "
               ".npy and TIFF: checked against the header)")
      ->check(positive());
  g.add_flag("--volume", hints.volume,
             ".npy: a 3-D array is (planes, height, width) even where its last axis has 1 to 4 "
             "entries (else it is (height, width, channels))");
  in.type_opt =
      g.add_option("--type", in.type, "sample type: " + types_help)->default_str(default_type);
  in.channels_opt =
      g.add_option("--channels", hints.channels, "interleaved channels, 1 to 4")->default_str("1");
  g.add_option("--seed", seed, "seed of a synth: input")->default_str("1");
  g.add_option("--in-format", hints.format,
               "auto (magic bytes, or a Zarr directory), raw, npy, tiff or zarr")
      ->default_str("auto");
  g.add_option("--page", hints.page,
               "TIFF: the page (image) to read as a 2-D image, from 0 (default: the pages, "
               "alike, as the planes of a volume)")
      ->default_str("0")
      ->check(CLI::NonNegativeNumber)
      ->each([&hints](const std::string&) { hints.page_given = true; });
  g.add_option("--pages", hints.pages,
               "TIFF: the planes A:B of a z-stack (planes A to B-1, as a Python slice; either "
               "end optional, negative from the end)");
  g.add_option("--input-level", hints.zarr_level,
               "OME-Zarr or pyramidal TIFF input: the resolution level to read, from 0 (a "
               "Zarr dataset, a TIFF page's SubIFD)")
      ->check(CLI::NonNegativeNumber);
  g.add_option("--io", hints.io,
               "raw and .npy input and output: auto (direct for a file mostly not in the page "
               "cache and larger than half the memory), mmap (the page cache) or direct "
               "(O_DIRECT)")
      ->default_str("auto")
      ->check(CLI::IsMember({"auto", "mmap", "direct"}));
  g.add_option("--voxel-size", in.voxel_size,
               "z,y,x (or y,x) micrometres a voxel measures, for gaussian sigma-um and the "
               "OME-Zarr and OME-TIFF outputs (default: the input's OME or ImageJ metadata)");
}

ooc::VoxelSize voxel_option(const InputCli& in) {
  if (in.voxel_size.empty()) return {};
  return ooc::parse_voxel_size(in.voxel_size, "--voxel-size");
}

void apply_input_options(const InputCli& in, ooc::RawHints& hints) {
  // in.type holds the default where --type was not given.
  set_sample_hints(hints, in.type_opt->count() > 0 ? std::optional(in.type) : std::nullopt, in.type,
                   in.channels_opt->count() > 0 ? std::optional(hints.channels) : std::nullopt);
}

void add_output_options(CLI::App& group, ooc::SinkOptions& o) {
  // --io (an input option, added before) chooses for the output too.
  if (CLI::App* app = group.get_parent())
    if (CLI::Option* io = app->get_option_no_throw("--io"))
      io->each([&o](const std::string& v) { o.io = v; });
  group
      .add_option("--format", o.format,
                  "output format: auto (from the extension), raw, npy, tiff, zarr")
      ->default_str("auto");
  group.add_option("--tile", o.tile,
                   "TIFF: square tiles of N pixels (multiple of 16); default strips, or 512 with "
                   "--pyramid, --levels or --cog");
  group.add_option("--compress", o.compress,
                   "TIFF: none, lzw, deflate, zstd or packbits (default none); Zarr: blosc (lz4, "
                   "shuffle), blosc-zstd, zstd, zlib, gzip or none (default blosc)");
  group.add_option("--level", o.level, "compression level: deflate/zlib 1-9, zstd 1-22, blosc 0-9");
  group
      .add_option("--predictor", o.predictor,
                  "TIFF with lzw, deflate or zstd: auto (horizontal), none, horizontal or float "
                  "(f32/f64 only; tifffile without imagecodecs cannot decode it)")
      ->default_str("auto")
      ->check(CLI::IsMember({"auto", "none", "horizontal", "float"}));
  group.add_option("--chunk", o.chunk, "Zarr: square chunks of N pixels")->default_str("512");
  group
      .add_option("--zarr-version", o.zarr_version,
                  "Zarr: 2 (OME-Zarr 0.4) or 3 (OME-Zarr 0.5, chunks inside shards)")
      ->default_str("2");
  group.add_option("--shard", o.shard, "Zarr 3: square shards of N pixels, a multiple of --chunk")
      ->default_str("4 chunks");
  group
      .add_option("--chunk-z", o.chunk_z,
                  "Zarr volumes: chunks (Zarr 3: shards) of N planes, held in memory while they "
                  "fill")
      ->default_str("1");
  group.add_flag_callback(
      "--pyramid",
      [&o] {
        if (o.pyramid_levels == 0) o.pyramid_levels = -1;
      },
      "Zarr and TIFF: reduced-resolution levels (2 x 2 means) written in the same pass, until "
      "the smaller side is under 256 (TIFF: tiled, levels as SubIFDs of the first page, of "
      "each page for a volume; "
      "OME-XML when the name ends .ome.tif)");
  CLI::Option* levels =
      group
          .add_option("--levels", o.pyramid_levels,
                      "Zarr and TIFF: this many levels below full resolution (0: none)")
          ->check(CLI::Range(0, 30));
  // Defined after --levels (as --cog): without --levels, it asks for --pyramid's levels.
  group.add_flag_callback(
      "--pyramid-z",
      [&o, levels] {
        o.pyramid_z = true;
        if (levels->count() == 0 && o.pyramid_levels == 0) o.pyramid_levels = -1;
      },
      "Zarr volumes: --pyramid's levels halving z too (2 x 2 x 2 means; --pyramid keeps every "
      "plane)");
  // Defined after --levels, so that its callback runs after --levels has set its value: only an
  // absent --levels gives a COG its automatic overviews (--levels 0 means none).
  group.add_flag_callback(
      "--cog",
      [&o, levels] {
        o.cog = true;
        if (levels->count() == 0 && o.pyramid_levels == 0) o.pyramid_levels = -1;
      },
      "TIFF: a Cloud-Optimized GeoTIFF, overviews (--pyramid's levels unless --levels says; "
      "--levels 0: none) as reduced-resolution pages, directories first, geo tags on every level");
  group.add_option("--bigtiff", o.bigtiff, "TIFF: auto (if it could pass 4 GiB), yes or no")
      ->default_str("auto");
  group.add_flag("--no-locks", o.no_locks,
                 "go on where the file system cannot lock (two writers of one output then go "
                 "unnoticed)");
}

void add_job_options(CLI::App& app, JobCli& c, ooc::SinkOptions& sink) {
  add_output_options(*app.add_option_group("Output file"), sink);
  add_pipeline_options(*app.add_option_group("Pipeline"), c.pipeline,
                       "output rows per band (default: planned)");
  add_run_options(*app.add_option_group("Parts and resume"), c.run);
  add_report_options(*app.add_option_group("Reporting"), c.report);
}

}  // namespace ooc::cli
