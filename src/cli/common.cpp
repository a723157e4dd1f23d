// Shared command-line plumbing (see common.hpp).
#include "common.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#include "../pipeline/staging.hpp"
#include "../pipeline/trace.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/pipeline.hpp"
#include "stats.hpp"
#include "world.hpp"

namespace ooc::cli {

namespace {

char g_prog[64] = "ooc";  // read by the signal handler: a plain buffer, no allocation there
volatile sig_atomic_t g_graceful = 0, g_stopping = 0;
std::atomic_flag g_fatal = ATOMIC_FLAG_INIT;  // a thread is reporting a fatal signal
volatile time_t g_first_stop = 0;  // when the first SIGTERM came (seconds, CLOCK_MONOTONIC)

void write_str(const char* s) {
  (void)!::write(STDERR_FILENO, s, std::strlen(s));
}

// Every signal that would end the process: its temporaries go first. SIGBUS is an input file cut
// short under its mapping: said so, exit 4. Signals that dump core dump it after the cleanup.
extern "C" void on_fatal_signal(int sig) {
  // A resumable run stops at a band boundary and records where (Slurm's SIGTERM before the time
  // limit, Ctrl-C); a second signal ends it at once, keeping the journal's last record.
  struct timespec now {};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  // Slurm signals every process of a step, and a batch script may pass its own SIGTERM on: a
  // repeated SIGTERM within 2 s is the same request. A second Ctrl-C means "now".
  if (sig == SIGTERM && g_graceful && g_stopping && now.tv_sec - g_first_stop < 2) return;
  if ((sig == SIGINT || sig == SIGTERM) && g_graceful && !g_stopping) {
    g_stopping = 1;
    g_first_stop = now.tv_sec;
    ooc::request_stop();
    write_str(g_prog);
    write_str(sig == SIGINT ? ": SIGINT" : ": SIGTERM");
    write_str(": finishing the bands in flight, then stopping (again to stop at once)\n");
    return;
  }
  const bool error = sig == SIGBUS || sig == SIGSEGV || sig == SIGABRT || sig == SIGILL ||
                     sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
  // Several threads copying from a file cut short all fault at once: one reports and exits, the
  // others wait for its exit instead of printing over its message.
  if (error && g_fatal.test_and_set())
    for (;;) ::pause();
  ooc::remove_temporary_outputs(!error);
  if (sig == SIGBUS) {
    write_str(g_prog);
    write_str(
        ": error: an input file became shorter while it was being read (cut short or "
        "replaced by another program?): '");
    ooc::write_mapped_inputs(STDERR_FILENO);
    write_str("'; nothing was written\n");
    ::_exit(static_cast<int>(ErrorKind::io));
  }
  if (sig == SIGSEGV || sig == SIGABRT || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
      sig == SIGSYS) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  ::_exit(128 + sig);
}

// A tool started with stdin, stdout or stderr closed would hand that number to the first file it
// opens, and then write messages or a progress bar into an image: park /dev/null there instead.
void reserve_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int got = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got >= 0 && got != fd) {
      ::dup2(got, fd);
      ::close(got);
    }
  }
}

void install_signal_handlers(const char* prog) {
  std::strncpy(g_prog, prog, sizeof g_prog - 1);
  // Writes to a closed pipe or past ulimit -f then fail with EPIPE and EFBIG, which become
  // messages, instead of killing the process with its output half written.
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGXFSZ, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig :
       {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGVTALRM, SIGPROF,
        SIGIO, SIGPWR, SIGBUS, SIGSEGV, SIGABRT, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) {
    struct sigaction old {};
    // A signal ignored by whoever started us (nohup, a batch system) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

void write_report(const std::string& text, const std::string& done) {
  errno = 0;
  const bool ok =
      std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0;
  if (!ok) {
    const int err = errno != 0 ? errno : EIO;
    std::clearerr(stdout);
    throw Error(ErrorKind::io, std::string("the --stats report could not be written to stdout: ") +
                                   std::strerror(err) + " (" + done + ")");
  }
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* prog) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n(see %s --help)\n", prog, e.what(), prog);
    return static_cast<int>(ErrorKind::usage);
  }
  return std::nullopt;
}

namespace {
// One rank's failure ends every rank (they could wait for it forever), with the rank named.
int failed(const char* prog, const char* what, int code) {
  if (World::started() && World::get().mpi()) {
    std::fprintf(stderr, "%s: rank %d of %d: error: %s\n", prog, World::get().rank(),
                 World::get().size(), what);
    std::fflush(stderr);
    World::get().abort(code);
  }
  std::fprintf(stderr, "%s: error: %s\n", prog, what);
  return code;
}
}  // namespace

int guarded_main(const char* prog, const std::function<int()>& body) {
  detail::trace_mark("main");
  if (detail::trace_path()) std::atexit([] { detail::trace_mark("atexit"); });
  reserve_standard_fds();
  install_signal_handlers(prog);
  // The process leaves with _exit (below), so a thread still starting CUDA when the work is done
  // need not be waited for: a 1 GiB image can be done on the CPU before the GPU is ready. Under
  // MPI (World turns this off) MPI_Finalize must run; with OOC_TRACE the trace marks the exit.
  const bool quick_exit = !detail::trace_path();
  detail::set_background_may_outlive(quick_exit);
  int rc = 0;
  try {
    rc = body();
  } catch (const Error& e) {
    rc = failed(prog, e.what(), e.exit_code());
  } catch (const std::bad_alloc&) {
    rc = failed(prog, "out of memory: lower --mem-limit or --slots",
                static_cast<int>(ErrorKind::io));
  } catch (const std::exception& e) {
    rc = failed(prog, e.what(), 1);
  }
  // Done, the output in place or removed: leave without the static destructors and atexit
  // handlers. On the H200 the CUDA runtime's teardown of its context took 50-70 ms of a 1.6 s
  // run (tools/bench/results/gpu-h200/logs/streaming-ceiling.md).
  if (quick_exit && detail::background_may_outlive()) {
    std::fflush(nullptr);
    ::_exit(rc);
  }
  return rc;
}

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

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

Progress::Progress(const ProgressCli& p, std::size_t total_bytes, const char* prog)
    : mode_(p.none                 ? Mode::none
            : p.log_seconds > 0    ? Mode::log
            : p.bar                ? Mode::bar
            : p.quiet              ? Mode::none
            : stderr_is_terminal() ? Mode::bar
                                   : Mode::log),
      log_seconds_(p.log_seconds > 0 ? p.log_seconds : kLogSeconds),
      total_bytes_(total_bytes),
      prog_(prog),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::update(std::int64_t done, std::int64_t total) {
  if (mode_ == Mode::none || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  const auto every = mode_ == Mode::bar ? std::chrono::milliseconds(200)
                                        : std::chrono::milliseconds(1000 * log_seconds_);
  if ((done < total || mode_ == Mode::log) && now - last_ < every) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = static_cast<double>(done) / static_cast<double>(total);
  const double mbps = elapsed > 0 ? frac * static_cast<double>(total_bytes_) / elapsed / 1e6 : 0;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
  if (mode_ == Mode::log) {
    const long e = std::lround(eta);
    std::fprintf(stderr, "%s: %5.1f%% %lld/%lld rows, %.2f GB/s, ETA %ldm%02lds\n", prog_,
                 100 * frac, static_cast<long long>(done), static_cast<long long>(total),
                 mbps / 1e3, e / 60, e % 60);
    std::fflush(stderr);
    return;
  }
  constexpr int kWidth = 30;
  char bar[kWidth + 1];
  const int filled = static_cast<int>(frac * kWidth);
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\r[%s] %5.1f%%  %8.1f MB/s  ETA %6.0f s ", bar, 100 * frac, mbps, eta);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

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
                   "memory for the band ring, e.g. 512M, 4G (default: min(1G, RAM/4))");
  group.add_option("--threads", p.options.threads, "worker threads (default: all cores)")
      ->check(CLI::Range(1, ooc::kMaxThreads));
  group.add_option("--band-rows", p.options.band_rows, band_rows_help)->check(positive());
  group.add_option("--slots", p.options.slots, "bands in flight (default: planned)")
      ->check(CLI::Range(1, 1 << 16));
  group.add_option("--device", p.device, "auto (CUDA when a GPU is usable), cpu or cuda")
      ->default_str("auto");
  group.add_option("--devices", p.devices, "GPUs to use: all, or a list like 0,1")
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
}

void apply_run_options(const RunCli& r, ooc::JobOptions& jo) {
  jo.resume = r.resume;
  World& world = World::get();
  if (world.mpi()) {
    if (!r.part.empty() || !r.rows.empty())
      throw Error(ErrorKind::usage,
                  "under mpirun/srun the ranks are the parts: drop --part and "
                  "--rows");
    jo.part_index = world.rank();
    jo.part_count = world.size();
    // mpirun binds each rank to one core by default when there are few ranks: the engine's
    // threads would then share that core.
    cpu_set_t mask;
    CPU_ZERO(&mask);
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (world.rank() == 0 && ::sched_getaffinity(0, sizeof mask, &mask) == 0 &&
        CPU_COUNT(&mask) < 4 && cores >= 4 * world.size())
      std::fprintf(stderr,
                   "oocconv: warning: rank 0 may use %d of the %ld cores (the launcher bound it): "
                   "use mpirun --bind-to none, or srun --cpus-per-task=N\n",
                   CPU_COUNT(&mask), cores);
    // One GPU per rank, by its rank on the node, unless --devices names them.
    if (jo.devices == "all") {
      const int gpus = ooc::cuda_device_count();
      if (gpus > 0) jo.devices = std::to_string(world.local_rank() % gpus);
    }
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

void stop_gracefully_on_signals() {
  g_graceful = 1;
}

int stopped(const char* prog, const Job& job, const RunStats& st) {
  const std::int64_t at = job.resumed_from() + st.rows_done;
  if (job.journal_path().empty()) {
    std::fprintf(stderr,
                 "%s: stopped at row %lld of rows %lld:%lld; nothing is kept: run it "
                 "again\n",
                 prog, static_cast<long long>(at), static_cast<long long>(job.row_begin()),
                 static_cast<long long>(job.row_end()));
  } else {
    std::fprintf(stderr,
                 "%s: stopped at row %lld of rows %lld:%lld; kept '%s' and its journal: run the "
                 "same command with --resume to go on\n",
                 prog, static_cast<long long>(at), static_cast<long long>(job.row_begin()),
                 static_cast<long long>(job.row_end()),
                 ooc::partial_path(job.options().output).c_str());
  }
  if (World::started() && World::get().mpi()) World::get().all_ok(false);
  return ooc::kExitResumable;
}

bool finish_parts(const char* prog, Job& job, const RunStats& st, bool quiet,
                  nlohmann::json& summary) {
  World& world = World::get();
  const bool writes = job.sink() != nullptr && job.options().output != "null:";
  if (!world.mpi()) {
    if (job.is_part() && writes && !quiet)
      std::fprintf(stderr,
                   "%s: rows %lld:%lld of '%s' done; when every part is, run: oocconv "
                   "--finish %s\n",
                   prog, static_cast<long long>(job.row_begin()),
                   static_cast<long long>(job.row_end()), job.options().output.c_str(),
                   job.options().output.c_str());
    return true;
  }
  if (!world.all_ok(true)) return false;
  bool ok = true;
  std::string finished;
  if (world.rank() == 0 && writes) {
    try {
      finished = ooc::finish_output(job.options().output);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s: rank 0: error: %s\n", prog, e.what());
      // Exit 75 asks a batch system to run the job again: only where that can finish it (parts
      // stopped or missing); mixed or damaged journals end every rank with the error's code.
      if (!e.resumable()) {
        std::fflush(stderr);
        world.abort(e.exit_code());
      }
      ok = false;
    }
  }
  if (!world.all_ok(ok)) return false;
  const std::vector<double> mine{double(world.rank()),    st.seconds,
                                 double(st.bytes_read),   double(st.bytes_written),
                                 double(job.row_begin()), double(job.row_end())};
  const std::vector<double> all = world.gather(mine);
  if (world.rank() == 0) {
    double slowest = 0, read = 0, written = 0;
    nlohmann::json ranks = nlohmann::json::array();
    for (std::size_t i = 0; i + 5 < all.size(); i += 6) {
      slowest = std::max(slowest, all[i + 1]);
      read += all[i + 2];
      written += all[i + 3];
      ranks.push_back({{"rank", int(all[i])},
                       {"seconds", all[i + 1]},
                       {"bytes_read", all[i + 2]},
                       {"rows", {std::int64_t(all[i + 4]), std::int64_t(all[i + 5])}}});
    }
    summary["mpi"] = {{"ranks", world.size()},
                      {"seconds", slowest},
                      {"bytes_read", read},
                      {"bytes_written", written},
                      {"input_gb_per_s", read / std::max(slowest, 1e-9) / 1e9},
                      {"per_rank", ranks}};
    if (!quiet)
      std::fprintf(stderr, "%s: %d ranks: %.2f GB in %.2f s (slowest rank), %.2f GB/s%s%s\n", prog,
                   world.size(), read / 1e9, slowest, read / std::max(slowest, 1e-9) / 1e9,
                   finished.empty() ? "" : "; ", finished.c_str());
  }
  return true;
}
void add_input_options(CLI::App& g, InputCli& in, ooc::RawHints& hints, std::uint64_t& seed,
                       const std::string& default_type, const std::string& types_help) {
  in.type = default_type;
  g.add_option("--width", hints.width, "samples per row (raw input: required)")->check(positive());
  g.add_option("--height", hints.height, "rows (raw: checked against the file size)")
      ->check(positive());
  in.type_opt =
      g.add_option("--type", in.type, "sample type: " + types_help)->default_str(default_type);
  in.channels_opt =
      g.add_option("--channels", hints.channels, "interleaved channels, 1 to 4")->default_str("1");
  g.add_option("--seed", seed, "seed of a synth: input")->default_str("1");
  g.add_option("--in-format", hints.format,
               "auto (magic bytes, or a Zarr directory), raw, npy, tiff or zarr")
      ->default_str("auto");
  g.add_option("--page", hints.page, "TIFF: the page (image) to read, from 0")
      ->default_str("0")
      ->check(CLI::NonNegativeNumber);
  g.add_option("--input-level", hints.zarr_level,
               "OME-Zarr input: the resolution level (dataset) to read, from 0 (default 0)")
      ->check(CLI::NonNegativeNumber);
  g.add_option("--io", hints.io,
               "raw and .npy input and output: auto (direct for a file mostly not in the page "
               "cache and larger than half the memory), mmap (the page cache) or direct "
               "(O_DIRECT)")
      ->default_str("auto")
      ->check(CLI::IsMember({"auto", "mmap", "direct"}));
}

void apply_input_options(const InputCli& in, ooc::RawHints& hints) {
  hints.type = ooc::parse_sample_type(in.type);
  hints.type_given = in.type_opt->count() > 0;
  hints.channels_given = in.channels_opt->count() > 0;
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
  group.add_option("--level", o.level,
                   "compression level: deflate/zlib 1-9, zstd 1-22, blosc 0-9");
  group.add_option("--chunk", o.chunk, "Zarr: square chunks of N pixels")->default_str("512");
  group.add_option("--zarr-version", o.zarr_version,
                   "Zarr: 2 (OME-Zarr 0.4) or 3 (OME-Zarr 0.5, chunks inside shards)")
      ->default_str("2");
  group.add_option("--shard", o.shard, "Zarr 3: square shards of N pixels, a multiple of --chunk")
      ->default_str("4 chunks");
  group.add_flag_callback(
      "--pyramid", [&o] { if (o.pyramid_levels == 0) o.pyramid_levels = -1; },
      "Zarr and TIFF: reduced-resolution levels (2 x 2 means) written in the same pass, until "
      "the smaller side is under 256 (TIFF: tiled, levels as SubIFDs of the first page; "
      "OME-XML when the name ends .ome.tif)");
  group.add_option("--levels", o.pyramid_levels,
                   "Zarr and TIFF: this many levels below full resolution")
      ->check(CLI::Range(0, 30));
  group.add_flag("--cog", o.cog,
                 "TIFF: a Cloud-Optimized GeoTIFF, overviews (--pyramid's levels unless --levels "
                 "says) as reduced-resolution pages, directories first, geo tags on every level");
  group.add_option("--bigtiff", o.bigtiff, "TIFF: auto (if it could pass 4 GiB), yes or no")
      ->default_str("auto");
  group.add_flag("--no-locks", o.no_locks,
                 "go on where the file system cannot lock (two writers of one output then go "
                 "unnoticed)");
}

void report(const char* prog, const std::string& stats, bool quiet, Job& job,
            const std::string& operation, const RunStats& st, const nlohmann::json& extra) {
  const BandPlan& plan = job.plan();
  const double secs = st.seconds > 0 ? st.seconds : 1e-9;
  const double mpix = static_cast<double>(st.pixels) / secs / 1e6;
  const double mbps = static_cast<double>(st.bytes_read) / secs / 1e6;
  const std::size_t rss = ooc::cli::peak_rss_bytes();
  std::string report;
  if (stats == "json") {
    nlohmann::json j = stats_json(run_report(job, operation, st));
    if (!extra.is_null()) j.update(extra);
    report = j.dump(2) + "\n";
  } else if (stats == "text") {
    std::ostringstream t;
    t << "input        " << job.source().describe() << "\n"
      << "output       " << (job.sink() ? job.sink()->describe() : std::string("none")) << "\n"
      << "operation    " << operation << "\n"
      << "io           input "
      << (job.options().input.rfind("synth:", 0) == 0 ? "generated" : job.source().io_method())
      << ", output " << (job.sink() ? job.sink()->io_method() : std::string("none")) << "\n"
      << "backend      " << job.backend().describe() << "\n";
    if (const std::string err = job.backend().start_error(); !err.empty())
      t << "cuda start   failed, ran on the CPU: " << err << "\n";
    else if (job.backend().cuda)
      t << "cpu start    " << st.cpu_bands << " bands on the CPU while CUDA started\n";
    t << "plan         " << plan.bands << " bands of " << plan.band_rows << " rows, " << plan.slots
      << " slots, " << plan.threads << " threads, ring "
      << ooc::format_bytes(double(plan.ring_bytes)) << " of "
      << ooc::format_bytes(double(plan.mem_limit)) << "\n"
      << "seconds      " << st.seconds << " (setup " << st.setup_seconds << ", read "
      << st.read_seconds << ", compute " << st.compute_seconds << ", write " << st.write_seconds
      << ")\n"
      << "throughput   " << mpix << " Mpixel/s, " << mbps << " MB/s\n"
      << "peak RSS     " << ooc::format_bytes(double(rss)) << "\n";
    report = t.str();
  }
  // The output is in place by now: a report that cannot be written is still an error (exit 4),
  // since a batch script reads it, but the message says the output itself is fine.
  if (!report.empty())
    ooc::cli::write_report(report, job.options().output == "null:" || job.options().output.empty()
                                       ? std::string("the run itself succeeded")
                                       : "output '" + job.options().output + "' is complete");
  if (!quiet && stats.empty()) {
    // Which bands the CPU did on the CUDA backend, and why: a GPU benchmark must not mistake them.
    std::string backend = job.backend().describe();
    if (const std::string err = job.backend().start_error(); !err.empty())
      backend += " (CUDA failed to start: " + err + ")";
    else if (st.cpu_bands > 0)
      backend += " (" + std::to_string(st.cpu_bands) + " of " +
                 std::to_string(plan.last_band - plan.first_band) +
                 " bands on the CPU while CUDA started; --cpu-start off for none)";
    std::fprintf(stderr, "%s: %s -> %s: %.2f s, %.1f Mpixel/s, %.1f MB/s, %s, peak RSS %s\n", prog,
                 job.source().describe().c_str(),
                 job.options().output.empty() ? "(no output)" : job.options().output.c_str(),
                 st.seconds, mpix, mbps, backend.c_str(), ooc::format_bytes(double(rss)).c_str());
  }
}

}  // namespace ooc::cli
