// The end of a run, rendered: the summary line or --stats report, a stop by signal (what is kept,
// how to resume), a part's or an MPI run's closing lines.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "main.hpp"
#include "main_state.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/run.hpp"
#include "options.hpp"
#include "report.hpp"
#include "world.hpp"

namespace ooc::cli {

void write_report(const std::string& text, const std::string& done) {
  errno = 0;
  // A closed stdout reads as one that cannot be written (EBADF): /dev/null, parked there, would
  // take the report without a word.
  const bool ok = !stdout_was_closed() &&
                  std::fwrite(text.data(), 1, text.size(), stdout) == text.size() &&
                  std::fflush(stdout) == 0;
  if (!ok) {
    const int err = stdout_was_closed() ? EBADF : errno != 0 ? errno : EIO;
    std::clearerr(stdout);
    throw Error(ErrorKind::io, std::string("the --stats report could not be written to stdout: ") +
                                   std::strerror(err) + " (" + done + ")");
  }
}

bool finish_if_asked(const char* prog, const std::string& out, bool operands, bool quiet) {
  if (out.empty()) return false;
  if (operands)
    throw Error(ErrorKind::usage,
                "--finish OUT takes no INPUT or OUTPUT: the parts' journals say what they are");
  const std::string done = ooc::finish_output(out);
  if (!quiet) std::fprintf(stderr, "%s: %s\n", prog, done.c_str());
  return true;
}

void say_resumed(const char* prog, const Job& job) {
  std::fprintf(stderr, "%s: %s at row %lld of rows %lld:%lld\n", prog,
               job.resumed_from() > job.row_begin() ? "resuming" : "nothing to resume: starting",
               static_cast<long long>(job.resumed_from()), static_cast<long long>(job.row_begin()),
               static_cast<long long>(job.row_end()));
}

namespace {

int say_stopped(const char* prog, const JobResult& r) {
  if (r.journal.empty()) {
    std::fprintf(stderr,
                 "%s: stopped at row %lld of rows %lld:%lld; nothing is kept: run it "
                 "again\n",
                 prog, static_cast<long long>(r.stopped_at), static_cast<long long>(r.row_begin),
                 static_cast<long long>(r.row_end));
  } else {
    std::fprintf(stderr,
                 "%s: stopped at row %lld of rows %lld:%lld; kept '%s' and the journal '%s': "
                 "run the same command with --resume to go on\n",
                 prog, static_cast<long long>(r.stopped_at), static_cast<long long>(r.row_begin),
                 static_cast<long long>(r.row_end), r.kept.c_str(), r.journal.c_str());
  }
  return ooc::kExitResumable;
}

}  // namespace

int end_of_run(const char* prog, const ReportCli& rc, const JobResult& r,
               const std::string& extra_json) {
  const bool quiet = rc.quiet;
  if (r.end == JobResult::End::stopped) return say_stopped(prog, r);
  World& world = World::get();
  if (r.end == JobResult::End::others) {
    if (world.rank() == 0)
      std::fprintf(stderr,
                   "%s: another rank failed or stopped: the output is not finished; run again "
                   "with --resume\n",
                   prog);
    return ooc::kExitResumable;
  }
  const std::string& out = r.report.output_path;
  const bool writes = r.report.output_type != "none" && out != "null:";
  if (!world.mpi() && r.is_part && writes && !quiet)
    std::fprintf(stderr,
                 "%s: rows %lld:%lld of '%s' done; when every part is, run: %s --finish %s\n", prog,
                 static_cast<long long>(r.row_begin), static_cast<long long>(r.row_end),
                 out.c_str(), prog, out.c_str());
  if (world.rank() != 0) return 0;
  if (!r.report.nodata_note.empty() && !quiet)
    std::fprintf(stderr, "%s: note: %s\n", prog, r.report.nodata_note.c_str());
  nlohmann::json extra =
      extra_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(extra_json);
  if (!r.ranks_json.empty()) {
    extra["mpi"] = nlohmann::json::parse(r.ranks_json);
    if (!quiet) {
      const double s = std::max(r.slowest_seconds, 1e-9);
      std::fprintf(stderr, "%s: %d ranks: %.2f GB in %.2f s (slowest rank), %.2f GB/s%s%s\n", prog,
                   r.ranks, r.ranks_bytes_read / 1e9, r.slowest_seconds,
                   r.ranks_bytes_read / s / 1e9, r.finished.empty() ? "" : "; ",
                   r.finished.c_str());
    }
  }
  report(prog, rc.stats, quiet || world.mpi(), r.report, extra.empty() ? "" : extra.dump());
  return 0;
}

void report(const char* prog, const std::string& stats, bool quiet, const RunReport& r,
            const std::string& extra_json) {
  const BandPlan& plan = r.plan;
  const RunStats& st = r.stats;
  const double secs = st.seconds > 0 ? st.seconds : 1e-9;
  const double mpix = static_cast<double>(st.pixels) / secs / 1e6;
  const double mbps = static_cast<double>(st.bytes_read) / secs / 1e6;
  const std::size_t rss = ooc::peak_rss_bytes();
  std::string report;
  if (stats == "json") {
    report = ooc::stats_json(r, extra_json) + "\n";
  } else if (stats == "text") {
    std::ostringstream t;
    t << "input        " << r.input_description << "\n"
      << "output       " << r.output_description << "\n"
      << "operation    " << r.operation << "\n";
    for (std::size_t k = 0; k < r.stages.size(); ++k)
      t << "stage " << std::left << std::setw(7) << k + 1 << r.stages[k] << "\n";
    t << "io           input " << r.input_io << ", output " << r.output_io << "\n"
      << "backend      " << r.backend << "\n";
    if (!r.start_error.empty())
      t << "cuda start   failed, ran on the CPU: " << r.start_error << "\n";
    else if (r.cuda)
      t << "cpu bands    " << st.cpu_bands
        << " bands on the CPU (while CUDA started, and its share), every pass's\n";
    t << "plan         " << plan.bands << " bands of " << plan.band_rows << " rows, " << plan.slots
      << " slots, " << plan.threads << " threads, "
      << (plan.tile_cols > 0 ? "tiles of " + std::to_string(plan.tile_cols) + " columns, "
                             : std::string())
      << (plan.slab_planes > 0 ? "slabs of " + std::to_string(plan.slab_planes) + " planes, "
                               : std::string())
      << "ring " << ooc::format_bytes(double(plan.ring_bytes)) << " of "
      << ooc::format_bytes(double(plan.mem_limit))
      << (plan.estimate_seconds > 0
              ? ", estimated " + std::to_string(plan.estimate_seconds).substr(0, 6) + " s"
              : std::string())
      << "\n"
      << "mem limit    " << ooc::format_bytes(double(plan.mem_limit)) << ", from "
      << r.mem_limit_from << "\n"
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
    ooc::cli::write_report(report, r.output_path == "null:" || r.output_path.empty()
                                       ? std::string("the run itself succeeded")
                                       : "output '" + r.output_path + "' is complete");
  if (!quiet && stats.empty()) {
    // Which bands the CPU did on the CUDA backend, and why: a GPU benchmark must not mistake them.
    std::string backend = r.backend;
    if (!r.start_error.empty())
      backend += " (CUDA failed to start: " + r.start_error + ")";
    else if (st.cpu_bands > 0)
      backend += " (" + std::to_string(st.cpu_bands) +
                 " bands on the CPU, every pass's: while CUDA started, and its share; --cpu-start "
                 "off for none)";
    std::fprintf(stderr, "%s: %s -> %s: %.2f s, %.1f Mpixel/s, %.1f MB/s, %s, peak RSS %s\n", prog,
                 r.input_description.c_str(),
                 r.output_path.empty() ? "(no output)" : r.output_path.c_str(), st.seconds, mpix,
                 mbps, backend.c_str(), ooc::format_bytes(double(rss)).c_str());
  }
}

}  // namespace ooc::cli
