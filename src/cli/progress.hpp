// Progress on stderr for the tools that run a job: the options (--progress, --progress-log,
// --no-progress) and the bar or log lines.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace CLI {
class App;
}

namespace ooc::cli {

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

// True when stderr is a terminal (the default for --progress).
bool stderr_is_terminal();

}  // namespace ooc::cli
