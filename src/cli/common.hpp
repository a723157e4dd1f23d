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

namespace ooc {
struct SinkOptions;
struct RunStats;
class Job;
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

std::size_t peak_rss_bytes();

// A one-line progress bar on stderr: percent, MB/s, ETA; at most a few updates a second.
class Progress {
 public:
  Progress(bool enabled, std::size_t total_bytes);
  void update(std::int64_t done, std::int64_t total);
  void finish();

 private:
  bool enabled_;
  std::size_t total_bytes_;
  std::chrono::steady_clock::time_point start_, last_;
  bool drawn_ = false;
};

// The output-file options of oocconv and oocgen: --format, --tile, --compress, --level, --bigtiff.
void add_output_options(CLI::App& group, ooc::SinkOptions& options);

// A CLI11 check that a count option (--width, --height, --band-rows) is at least 1.
CLI::Validator positive();

// The end of a run: --stats json|text on stdout (with `extra` merged into the JSON), else a
// summary line on stderr unless quiet. Throws an io Error when stdout is gone (the output is in
// place by then: the message says so).
void report(const char* prog, const std::string& stats, bool quiet, Job& job,
            const std::string& operation, const RunStats& st,
            const nlohmann::json& extra = nlohmann::json());

// True when stderr is a terminal (the default for --progress).
bool stderr_is_terminal();

}  // namespace ooc::cli
