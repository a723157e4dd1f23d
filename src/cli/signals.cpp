// The process around a tool's work: standard descriptors parked, signal handlers (the temporaries
// of unfinished outputs removed, a graceful stop on the first SIGINT/SIGTERM), the command line
// parsed, errors mapped to exit codes (guarded_main).
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#include "engine/staging.hpp"
#include "engine/trace.hpp"
#include "io/output_file.hpp"
#include "main.hpp"
#include "main_state.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "options.hpp"
#include "report.hpp"
#include "world.hpp"

namespace ooc::cli {

namespace {

char g_prog[64] = "ooc";  // read by the signal handler: a plain buffer, no allocation there
volatile sig_atomic_t g_stopping = 0;
std::atomic_flag g_fatal = ATOMIC_FLAG_INIT;  // a thread is reporting a fatal signal
volatile time_t g_first_stop = 0;  // when the first SIGTERM came (seconds, CLOCK_MONOTONIC)
bool g_stdout_closed = false;      // at start, before reserve_standard_fds parked /dev/null there

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
  if (sig == SIGTERM && ooc::stops_on_signals() && g_stopping && now.tv_sec - g_first_stop < 2)
    return;
  if ((sig == SIGINT || sig == SIGTERM) && ooc::stops_on_signals() && !g_stopping) {
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
    if (fd == 1) g_stdout_closed = true;
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

const char* program_name() {
  return g_prog;
}

bool stdout_was_closed() {
  return g_stdout_closed;
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
#if defined(__GLIBC__)
  // Band buffers freed at the top of the heap go back to the system: glibc raises its trim
  // threshold as freed buffers grow, and kept a sixth more than --mem-limit resident through a
  // volume's 3-D run (291 MiB under 256M; 204 MiB with these, at the same speed).
  // Setting these fixes the mmap threshold at its 128 KiB start, and a band's buffers of a few
  // hundred KiB were then mapped and faulted in afresh for every band (twice the system time of
  // a test suite of small bands); so were blosc's scratch buffers of a Zarr chunk's size, once
  // per chunk (a third of a Zarr write): buffers below 4 MiB come from the heap, reused.
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
  mallopt(M_TOP_PAD, 0);
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
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
  // handlers: the CUDA runtime's teardown of its context is a measurable share of a short GPU run
  // (docs/design.md, "Starting CUDA").
  if (quick_exit && detail::background_may_outlive()) {
    std::fflush(nullptr);
    ::_exit(rc);
  }
  return rc;
}

void stop_gracefully_on_signals() {
  ooc::set_stop_on_signals(true);
}

}  // namespace ooc::cli
