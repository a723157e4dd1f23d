// Shared command-line plumbing (see common.hpp).
#include "common.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"

namespace ooc::cli {

namespace {

char g_prog[64] = "ooc";  // read by the signal handler: a plain buffer, no allocation there

void write_str(const char* s) {
  (void)!::write(STDERR_FILENO, s, std::strlen(s));
}

// Every signal that would end the process: its temporaries go first. SIGBUS is an input file cut
// short under its mapping: said so, exit 4. Signals that dump core dump it after the cleanup.
extern "C" void on_fatal_signal(int sig) {
  ooc::remove_temporary_outputs();
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

int guarded_main(const char* prog, const std::function<int()>& body) {
  reserve_standard_fds();
  install_signal_handlers(prog);
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog, e.what());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory: lower --mem-limit or --slots\n", prog);
    return static_cast<int>(ErrorKind::io);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog, e.what());
    return 1;
  }
}

std::size_t peak_rss_bytes() {
  // VmHWM belongs to this program's address space; ru_maxrss carries over the high-water mark of
  // whatever ran in the process before exec (a Python launcher, say).
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned long long kb = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
      found = std::sscanf(line, "VmHWM: %llu kB", &kb) == 1;
    std::fclose(f);
    if (found) return static_cast<std::size_t>(kb) * 1024;
  }
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::size_t>(ru.ru_maxrss) * 1024;
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

Progress::Progress(bool enabled, std::size_t total_bytes)
    : enabled_(enabled),
      total_bytes_(total_bytes),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::update(std::int64_t done, std::int64_t total) {
  if (!enabled_ || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = static_cast<double>(done) / static_cast<double>(total);
  const double mbps = elapsed > 0 ? frac * static_cast<double>(total_bytes_) / elapsed / 1e6 : 0;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
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

void add_output_options(CLI::App& group, ooc::SinkOptions& o) {
  group
      .add_option("--format", o.format, "output format: auto (from the extension), raw, npy, tiff")
      ->default_str("auto");
  group.add_option("--tile", o.tile,
                   "TIFF: square tiles of N pixels (multiple of 16); default strips");
  group.add_option("--compress", o.compress, "TIFF: none, lzw, deflate, zstd or packbits")
      ->default_str("none");
  group.add_option("--level", o.level, "TIFF: compression level, deflate 1-9, zstd 1-22");
  group.add_option("--bigtiff", o.bigtiff, "TIFF: auto (if it could pass 4 GiB), yes or no")
      ->default_str("auto");
}

void report(const char* prog, const std::string& stats, bool quiet, Job& job,
            const std::string& operation, const RunStats& st, const nlohmann::json& extra) {
  const BandPlan& plan = job.plan();
  const std::string out_type =
      job.sink() ? std::string(ooc::name(job.sink()->spec().type)) : std::string("none");
  const double secs = st.seconds > 0 ? st.seconds : 1e-9;
  const double mpix = static_cast<double>(st.pixels) / secs / 1e6;
  const double mbps = static_cast<double>(st.bytes_read) / secs / 1e6;
  const std::size_t rss = ooc::cli::peak_rss_bytes();
  std::string report;
  if (stats == "json") {
    nlohmann::json j;
    j["input"] = {{"path", job.options().input},
                  {"description", job.source().describe()},
                  {"width", job.source().spec().width},
                  {"height", job.source().spec().height},
                  {"channels", job.source().spec().channels},
                  {"type", std::string(ooc::name(job.source().spec().type))},
                  {"bytes", st.bytes_read}};
    j["output"] = {{"path", job.options().output}, {"type", out_type}, {"bytes", st.bytes_written}};
    j["operation"] = operation;
    j["backend"] = job.backend().describe();
    j["plan"] = {{"band_rows", plan.band_rows},
                 {"bands", plan.bands},
                 {"slots", plan.slots},
                 {"threads", plan.threads},
                 {"mem_limit_bytes", plan.mem_limit},
                 {"ring_bytes", plan.ring_bytes}};
    j["seconds"] = {{"total", st.seconds},
                    {"setup", st.setup_seconds},
                    {"read_stage", st.read_seconds},
                    {"compute_stage", st.compute_seconds},
                    {"write_stage", st.write_seconds}};
    // Streaming: bands only, without the one-off setup (pinned and GPU buffers).
    const double stream_s = std::max(st.seconds - st.setup_seconds, 1e-9);
    j["throughput"] = {{"mpixel_per_s", mpix},
                       {"input_mb_per_s", mbps},
                       {"streaming_input_mb_per_s", double(st.bytes_read) / stream_s / 1e6}};
    j["pixels"] = st.pixels;
    if (!extra.is_null()) j.update(extra);
    j["peak_rss_bytes"] = rss;
    report = j.dump(2) + "\n";
  } else if (stats == "text") {
    std::ostringstream t;
    t << "input        " << job.source().describe() << "\n"
      << "output       " << (job.sink() ? job.sink()->describe() : std::string("none")) << "\n"
      << "operation    " << operation << "\n"
      << "backend      " << job.backend().describe() << "\n"
      << "plan         " << plan.bands << " bands of " << plan.band_rows << " rows, " << plan.slots
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
    std::fprintf(stderr, "%s: %s -> %s: %.2f s, %.1f Mpixel/s, %.1f MB/s, %s, peak RSS %s\n", prog,
                 job.source().describe().c_str(),
                 job.options().output.empty() ? "(no output)" : job.options().output.c_str(),
                 st.seconds, mpix, mbps, job.backend().describe().c_str(),
                 ooc::format_bytes(double(rss)).c_str());
  }
}

}  // namespace ooc::cli
