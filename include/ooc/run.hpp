// The job runner: one call runs a job's whole life for every front end (oocconv, oocrun, ooceq,
// the Python module). It opens the input, builds the pipeline from the stages' declarations,
// fingerprints what the output's bytes depend on, lets a signal stop the run cleanly, resumes,
// runs the passes with progress, commits the output, finishes a run in parts over several
// processes, and gathers the facts of the run for a report. Front ends only turn their options
// into a JobSpec and render the JobResult.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ooc/engine.hpp"
#include "ooc/job.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {

// The processes of a run in parts that wait for each other (MPI ranks); one process by default.
// The MPI front ends implement it; the library itself never starts MPI.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  // Whether every process got here with ok (a barrier).
  virtual bool all_ok(bool ok) { return ok; }
  // Element-wise sums over the processes, the same on every one.
  virtual void sum(std::vector<std::uint64_t>&) {}
  // Every process's values, on rank 0, rank by rank (empty elsewhere).
  virtual std::vector<double> gather(const std::vector<double>& mine) { return mine; }
  // Ends every process with `code`: a failed one must not leave the others waiting.
  [[noreturn]] virtual void abort(int code);
};

// What --stats reports of a run: one schema for the tools and the Python module.
struct RunReport {
  std::string input_path, input_description, output_path, output_type = "none", operation;
  std::string output_description = "none";  // Sink::describe()
  std::string backend, backend_choice;      // Backend::describe() and Backend::why
  std::string start_error;                  // Backend::start_error()
  // How the input was read and the output written (Source/Sink::io_method(): mmap, direct, ...).
  std::string input_io, output_io = "none";
  std::string output_predictor;     // Sink::predictor(): a TIFF output's, else empty
  std::vector<std::string> stages;  // a pipeline's stages as built (PipelinePlan), else empty
  bool cuda = false;
  ImageSpec in;
  BandPlan plan;
  // Where plan.mem_limit came from: "--mem-limit" where the job set one, else DefaultBudget::from.
  std::string mem_limit_from;
  RunStats stats;
  std::optional<std::uint64_t> components;  // a label stage's count (--stats json)
  // Where the output's type cannot hold the input's nodata value: the one its holes took, said
  // (--stats json "output"."nodata", and a note on stderr).
  std::string nodata_note;
  std::optional<double> output_nodata;
};
// The facts of `job` after a run of `operation` that gave `stats`.
RunReport run_report(Job& job, const std::string& operation, const RunStats& stats);
// The --stats json object as text (peak_rss_bytes() included), `extra_json` (an object, as text)
// merged into it.
std::string stats_json(const RunReport& r, const std::string& extra_json = "");
// VmHWM (this address space's high-water mark), else ru_maxrss.
std::size_t peak_rss_bytes();

// A job: where from and to (options, or a source and sink the caller made), and the pipeline to
// run.
struct JobSpec {
  JobOptions options;
  // A job over the caller's source and sink (arrays, memory): no file, temporary or journal of
  // its own (the Job's second constructor). Both or neither.
  std::unique_ptr<Source> source;
  std::unique_ptr<Sink> sink;
  std::vector<StageCall> stages;
  PipelineSettings settings;
  // Instead of stages: one operation the front end builds once the input is open (oocatax's
  // product, which is no pipeline stage); it keeps a copy to read its results after the run.
  std::function<std::shared_ptr<Operation>(Job&)> make_operation;
  std::string name = "ooc";  // the front end, in messages
  // The operation's name in reports: this text; else, with operation_as_built, the stages as
  // built (PipelinePlan::stage_descriptions: the method, taps, accumulator); else the pipeline
  // as written.
  std::string operation;
  bool operation_as_built = false;
  // A check of the input before anything is built (a tool's own rule on the input's type).
  std::function<void(const ImageSpec&)> check_input;
  // SIGINT and SIGTERM stop the run after the bands in flight (a command-line tool); a second
  // signal ends the process.
  bool stop_on_signals = false;
  ProgressFn progress;  // rows of every pass, the passes one after the other
  // The processes of a run over MPI ranks (null: this process alone).
  ProcessGroup* processes = nullptr;
  // Its reductions run as parts of separate processes (--part, --rows): ooclabel, whose label
  // stage keeps each part's faces in files for the others.
  bool reductions_in_parts = false;
  // Called once the operations are built, before the output is made: a caller that holds memory
  // of its own beside the bands (an array run's copy of its input) lowers the limit there.
  std::function<void(Job&, const std::vector<const Operation*>&)> before_start;
  // Called once the output exists and the rows to do are known, with the number of passes: a
  // resumed run says from where, a progress bar learns the bytes it will count.
  std::function<void(Job&, int passes)> on_start;
};

struct JobResult {
  enum class End {
    done,     // the output is complete (or, for a part, its rows are)
    stopped,  // a signal stopped it: --resume goes on (rows kept in the journal)
    others    // another process failed or stopped: the output is not finished
  };
  End end = End::done;
  RunStats total;                // every pass's stats summed (rows and output: the last pass's)
  std::vector<RunStats> passes;  // each pass's
  RunReport report;              // for --stats
  // A stop: the row it stopped at, the job's rows, and what is kept for --resume (empty: none).
  std::int64_t stopped_at = 0, row_begin = 0, row_end = 0;
  std::string kept, journal;
  bool is_part = false;  // a part of a run whose output --finish completes
  // A run over MPI ranks, on rank 0: finish_output's summary and the ranks' times and bytes.
  std::string finished;
  int ranks = 1;
  double slowest_seconds = 0, ranks_bytes_read = 0, ranks_bytes_written = 0;
  std::string ranks_json;  // the "mpi" object of --stats, as text (empty: one process)
  // The histograms of the equalize stages, summed over the processes, in pass order.
  std::vector<PipelinePlan::Histogram> histograms;
};

// Runs the job; throws ooc::Error as the Job and the pipeline do. A usage Error before anything
// is created when a pipeline with a reduction (equalize) is asked to run as a --part or --rows.
JobResult run_job(JobSpec spec);

}  // namespace ooc
