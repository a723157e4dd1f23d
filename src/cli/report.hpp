// The end of a run, rendered for a user: the --stats report or the summary line, a resumed
// run's first line, a stop (what is kept, how to resume), a part's and an MPI run's closing lines.
#pragma once

#include <string>

#include "options.hpp"

namespace ooc {
struct JobResult;
struct RunReport;
class Job;
}  // namespace ooc

namespace ooc::cli {

// Writes a report (--stats) to stdout and flushes it; throws an io Error naming the cause when
// stdout is gone (closed pipe, full disk). `done` says what was achieved regardless.
void write_report(const std::string& text, const std::string& done);

// The line of a --resume run once the job started: the row it goes on from (or that there was
// nothing to resume).
void say_resumed(const char* prog, const Job& job);

// The end of a job run by ooc::run_job, rendered: a stop (what is kept, how to resume: returns
// kExitResumable), another rank's failure (likewise), a part's "run --finish" line, an MPI run's
// summary, then on rank 0 the --stats report or the summary line. `extra_json`: an object merged
// into the --stats json. Returns the exit code.
int end_of_run(const char* prog, const ReportCli& report, const ooc::JobResult& r,
               const std::string& extra_json = "");

// The end of a run: --stats json|text on stdout (with `extra_json` merged into the JSON), else a
// summary line on stderr unless quiet. Throws an io Error when stdout is gone (the output is in
// place by then: the message says so).
void report(const char* prog, const std::string& stats, bool quiet, const ooc::RunReport& r,
            const std::string& extra_json = "");

}  // namespace ooc::cli
