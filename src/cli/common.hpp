// What the command-line tools share: exit-code mapping, signal handling (a partial output is
// removed when the job is interrupted: Ctrl-C, or Slurm's SIGTERM at the time limit), the
// progress bar, peak RSS, reports on stdout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace CLI {
class App;
}
#include <nlohmann/json.hpp>

#include "ooc/engine.hpp"

namespace ooc {
struct SinkOptions;
struct RunStats;
struct JobOptions;
struct JobResult;
struct RunReport;
class Job;
}  // namespace ooc

namespace ooc {
// The exit code of a run stopped by SIGTERM/SIGINT that --resume can continue (EX_TEMPFAIL): the
// tools' convention, not the library's (a library call returns RunStats::stopped).
inline constexpr int kExitResumable = 75;
}  // namespace ooc

namespace ooc::cli {

// Parses the command line. On --help, or on a usage error (printed with a pointer to --help),
// returns the exit code to end with; otherwise nothing.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* prog);

// Runs body; maps ooc::Error to its exit code and other failures to 1, printing "prog: message".
// First parks /dev/null on a closed stdin/stdout/stderr, ignores SIGPIPE and SIGXFSZ (the writes
// fail with a message instead), and makes every terminating signal remove the temporaries of
// unfinished outputs and exit with 128 + signal (SIGBUS, an input cut short under its mapping:
// a message and exit 4). A signal ignored at start stays ignored.
int guarded_main(const char* prog, const std::function<int()>& body);

// Writes a report (--stats) to stdout and flushes it; throws an io Error naming the cause when
// stdout is gone (closed pipe, full disk). `done` says what was achieved regardless.
void write_report(const std::string& text, const std::string& done);

// --progress (a bar), --progress-log (a line every few seconds, for batch logs), --no-progress.
// Default: the bar on a terminal, log lines otherwise.
inline constexpr int kLogSeconds = 10;
// -q turns the default off (no bar, no log lines); an explicit --progress or --progress-log
// still wins, since it names the one thing wanted.
struct ProgressCli {
  bool bar = false, none = false;
  int log_seconds = 0;  // --progress-log[=S]: a line every S seconds (0: not asked for)
  bool quiet = false;   // -q: set from ReportCli::quiet by check_report_options()
};
void add_progress_options(CLI::App& app, ProgressCli& p);

// Progress on stderr: a one-line bar (percent, MB/s, ETA; a few updates a second), or in log
// mode a line every kLogSeconds (or --progress-log=S):
//   "prog:  37.2% 4096/11000 rows, 2.31 GB/s, ETA 3m05s".
class Progress {
 public:
  Progress(const ProgressCli& mode, std::size_t total_bytes, const char* prog = "ooc");
  void update(std::int64_t done, std::int64_t total);
  void finish();

 private:
  enum class Mode { none, bar, log } mode_;
  int log_seconds_;
  std::size_t total_bytes_;
  const char* prog_;
  std::chrono::steady_clock::time_point start_, last_;
  bool drawn_ = false;
};

// The group "Reporting" of the tools that run a job: the progress options, --stats json|text and
// -q. check_report_options() throws a usage Error for a --stats other than json or text, and
// hands -q on to the progress options.
struct ReportCli {
  ProgressCli progress;
  bool quiet = false;
  std::string stats;
};
void add_report_options(CLI::App& app, ReportCli& r);
void check_report_options(ReportCli& r);

// The group "Input" of the tools that read an image: --width, --height, --type, --channels,
// --seed, --in-format, --page. apply_input_options() parses --type and says which hints were
// given (a file's header decides the others).
struct InputCli {
  std::string type;
  CLI::Option* type_opt = nullptr;
  CLI::Option* channels_opt = nullptr;
};
void add_input_options(CLI::App& group, InputCli& in, ooc::RawHints& hints, std::uint64_t& seed,
                       const std::string& default_type, const std::string& types_help);
void apply_input_options(const InputCli& in, ooc::RawHints& hints);

// The group "Pipeline" of the tools that run a job: --mem-limit, --threads, --band-rows, --slots,
// --device, --devices. apply_pipeline_options() parses --mem-limit and fills `jo`.
struct PipelineCli {
  std::optional<std::string> mem_limit;
  ooc::EngineOptions options;
  std::string device = "auto", devices = "all", cpu_start = "auto";
};
void add_pipeline_options(CLI::App& group, PipelineCli& p, const std::string& band_rows_help);
void apply_pipeline_options(const PipelineCli& p, ooc::JobOptions& jo);

// Parts and resume: --part I/N | auto, --rows A:B, --resume. apply_run_options() fills `jo`;
// under an MPI launcher the ranks are the parts (and --part/--rows are refused).
struct RunCli {
  std::string part, rows;
  bool resume = false;
  std::string finish;  // --finish OUT
};
void add_run_options(CLI::App& app, RunCli& r);
// --finish OUT, of every tool that writes parts (add_run_options adds it).
void add_finish_option(CLI::App& app, std::string& out);
// After a --finish OUT (non-empty `out`): refuses other operands (`operands`: the tool got
// INPUT or OUTPUT), checks every part of OUT and renames it into place, says so unless quiet, and
// returns true: the tool exits 0. False where --finish was not given.
bool finish_if_asked(const char* prog, const std::string& out, bool operands, bool quiet);
void apply_run_options(const RunCli& r, ooc::JobOptions& jo);

// From here on the first SIGINT or SIGTERM asks the engine to stop after the bands in flight
// (ooc::request_stop), instead of ending the process; a second one ends it at once. The job
// runner sets this itself (JobSpec::stop_on_signals); oocatax, which runs its own job, calls it.
void stop_gracefully_on_signals();
// The line of a --resume run once the job started: the row it goes on from (or that there was
// nothing to resume).
void say_resumed(const char* prog, const Job& job);

// The end of a job run by ooc::run_job, rendered: a stop (what is kept, how to resume: returns
// kExitResumable), another rank's failure (likewise), a part's "run --finish" line, an MPI run's
// summary, then on rank 0 the --stats report or the summary line. `extra_json`: an object merged
// into the --stats json. Returns the exit code.
int end_of_run(const char* prog, const ReportCli& report, const ooc::JobResult& r,
               const std::string& extra_json = "");

// The output-file options of oocconv, ooceq and oocgen: --format, --tile, --compress, --level,
// --bigtiff, --no-locks.
void add_output_options(CLI::App& group, ooc::SinkOptions& options);

// The option groups of the tools that run one job of filters over an image (oocconv, oocrun), in
// their order: "Output file", "Pipeline", "Parts and resume", "Reporting". The apply and check
// functions of each group stay the tool's to call, where its own checks fit between them.
struct JobCli {
  PipelineCli pipeline;
  RunCli run;
  ReportCli report;
};
void add_job_options(CLI::App& app, JobCli& c, ooc::SinkOptions& sink);

// A CLI11 check that a count option (--width, --height, --band-rows) is at least 1.
CLI::Validator positive();

// The end of a run: --stats json|text on stdout (with `extra_json` merged into the JSON), else a
// summary line on stderr unless quiet. Throws an io Error when stdout is gone (the output is in
// place by then: the message says so).
void report(const char* prog, const std::string& stats, bool quiet, const ooc::RunReport& r,
            const std::string& extra_json = "");

// True when stderr is a terminal (the default for --progress).
bool stderr_is_terminal();

}  // namespace ooc::cli
