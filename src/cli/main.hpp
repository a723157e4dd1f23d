// What every tool's main does: parse the command line, run the body with errors mapped to exit
// codes and signals handled (a partial output is removed when the job is interrupted: Ctrl-C,
// or Slurm's SIGTERM at the time limit), and the exit code of a stop --resume continues.
#pragma once

#include <functional>
#include <optional>

namespace CLI {
class App;
}

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

// From here on the first SIGINT or SIGTERM asks the engine to stop after the bands in flight
// (ooc::request_stop), instead of ending the process; a second one ends it at once. The job
// runner sets this itself (JobSpec::stop_on_signals); oocatax, which runs its own job, calls it.
void stop_gracefully_on_signals();
}  // namespace ooc::cli
