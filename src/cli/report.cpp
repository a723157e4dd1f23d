// The end of a run: the summary line or --stats report, a stop by signal (what is kept, how to
// resume), and the parts of an MPI run finished by rank 0.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "internal.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/pipeline.hpp"
#include "stats.hpp"
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
                 "%s: stopped at row %lld of rows %lld:%lld; kept '%s' and the journal '%s': "
                 "run the same command with --resume to go on\n",
                 prog, static_cast<long long>(at), static_cast<long long>(job.row_begin()),
                 static_cast<long long>(job.row_end()), job.kept_path().c_str(),
                 job.journal_path().c_str());
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
      std::fprintf(
          stderr, "%s: rows %lld:%lld of '%s' done; when every part is, run: %s --finish %s\n",
          prog, static_cast<long long>(job.row_begin()), static_cast<long long>(job.row_end()),
          job.options().output.c_str(), prog, job.options().output.c_str());
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

void report(const char* prog, const std::string& stats, bool quiet, Job& job,
            const std::string& operation, const RunStats& st, const nlohmann::json& extra,
            const std::vector<std::string>& stages) {
  const BandPlan& plan = job.plan();
  const double secs = st.seconds > 0 ? st.seconds : 1e-9;
  const double mpix = static_cast<double>(st.pixels) / secs / 1e6;
  const double mbps = static_cast<double>(st.bytes_read) / secs / 1e6;
  const std::size_t rss = ooc::cli::peak_rss_bytes();
  std::string report;
  if (stats == "json") {
    RunReport r = run_report(job, operation, st);
    r.stages = stages;
    nlohmann::json j = stats_json(r);
    if (!extra.is_null()) j.update(extra);
    report = j.dump(2) + "\n";
  } else if (stats == "text") {
    std::ostringstream t;
    t << "input        " << job.source().describe() << "\n"
      << "output       " << (job.sink() ? job.sink()->describe() : std::string("none")) << "\n"
      << "operation    " << operation << "\n";
    for (std::size_t k = 0; k < stages.size(); ++k)
      t << "stage " << std::left << std::setw(7) << k + 1 << stages[k] << "\n";
    t << "io           input "
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
