// What every tool does around its operations: open the input, pick the backend, plan the bands
// for all passes, create the output, run the passes on one set of slots, commit the output.
// A job may cover a part of the image (one of N parts, or a row range) and write its rows into a
// temporary shared with the other parts; finish_output() puts the whole into place. Every run
// that writes a raw or .npy file keeps a journal beside its temporary (which rows are done, and a
// fingerprint of the input and the options), so that an interrupted run can resume.
// A job may also run over a Source and Sink its caller made (arrays, memory): the same backend
// choice, plan and passes, on the whole image, with no file, temporary or journal of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/engine.hpp"
#include "ooc/io.hpp"

namespace ooc {

struct JobOptions {
  // A file, or synth:PATTERN. A job over a caller's source and sink opens and creates nothing:
  // input and output only name them in reports (stats), and its output may stay empty.
  std::string input;
  RawHints hints;
  std::uint64_t seed = 1;  // of a synth: input
  std::string output;      // a file, null: to discard, or empty for a job that writes none
  SinkOptions sink;
  EngineOptions pipeline;
  std::string device = "auto", devices = "all";
  // Part part_index of part_count (rows split evenly), or rows [rows_begin, rows_end) when
  // rows_end > 0: the rows go into a temporary shared with the other parts.
  int part_index = 0, part_count = 1;
  std::int64_t rows_begin = 0, rows_end = 0;
  bool resume = false;      // continue from the journal (starts afresh when there is none)
  bool journal = false;     // keep a journal (resumable); parts always keep one
  std::string fingerprint;  // what the tool's options make of the bytes (checked on resume)
};

// Checks that the parts of `output` (their journals) are complete, from one input and the same
// options, and cover the image; then renames the temporary into place and removes the journals.
// Throws an input Error naming each missing or unfinished part. Returns a one-line summary.
std::string finish_output(const std::string& output);

class Job {
 public:
  explicit Job(JobOptions options);  // opens the input
  // Runs over `source` and writes into `sink` (null for operations that write none); the job
  // owns both. It covers the whole image in this process: JobOptions' parts, rows, journal and
  // resume must stay unset, and nothing on disk is created, renamed or removed by the job.
  // start() checks that the writing operation's output has the sink's spec.
  Job(std::unique_ptr<Source> source, std::unique_ptr<Sink> sink, JobOptions options = {});
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  Source& source() noexcept { return *source_; }
  // What the tool's options make of the bytes (JobOptions::fingerprint), once the operation that
  // knows it is built; before start().
  void set_fingerprint(std::string f) { options_.fingerprint = std::move(f); }
  // Whether the job keeps a journal (JobOptions::journal), once the operations say whether it
  // can resume; before start().
  void set_journal(bool on) { options_.journal = on; }
  // The nodata value the output records (SinkOptions::nodata), once the pipeline knows it (a
  // type that cannot hold the input's takes its own); before start().
  void set_output_nodata(double v) {
    options_.sink.nodata = v;
    options_.sink.nodata_given = true;
  }
  const JobOptions& options() const noexcept { return options_; }
  // The memory limit of the bands (JobOptions::pipeline.mem_limit), before start(): a caller that
  // holds memory of its own beside them (an array run's copy of its input) lowers it by that.
  void set_mem_limit(std::size_t bytes) { options_.pipeline.mem_limit = bytes; }
  // Picks the backend for `ops` (the operations start() will get) now, instead of in start(), for
  // a caller that sizes its own memory by the backend's bands first. Picked once: start() keeps it.
  const Backend& pick_backend(const std::vector<const Operation*>& ops);

  // Picks the backend, creates the output (for the operation that writes one), plans the bands
  // for every pass and makes the engine. Call once, with every operation the job will run.
  void start(const std::vector<const Operation*>& ops);
  // One pass; an operation with an output writes it to the job's output. When request_stop()
  // ends it early (RunStats::stopped), the output is flushed and the journal records the rows
  // done: the tool then exits with EX_TEMPFAIL (75), which --resume continues.
  RunStats run(Operation& op, const ProgressFn& progress = {});
  // Renames the output into place (nothing without one); a part only records that it is done.
  void commit();

  // The rows this job covers, and where it started (later than begin when resumed).
  std::int64_t row_begin() const noexcept { return begin_; }
  std::int64_t row_end() const noexcept { return end_; }
  std::int64_t resumed_from() const noexcept { return start_; }
  bool is_part() const noexcept { return shared_; }
  // Nothing was left to do (a resumed run whose rows were all done).
  bool nothing_left() const noexcept { return start_ >= run_end_; }
  const std::string& journal_path() const noexcept { return journal_; }
  // After a stop: the file that holds the rows kept for --resume (the output's temporary, or the
  // file a TIFF output keeps its blocks in).
  std::string kept_path() const;
  // State a resumed run needs besides the rows on disk (a pipeline's histogram): a file beside
  // the output's temporary, named `name` (empty where the job keeps no journal). Saved
  // atomically with a checksum; kept with the journal by a stop, removed with it at the end.
  std::string state_path(const std::string& name) const;
  void save_state(const std::string& path, const std::vector<std::uint64_t>& values) const;
  // Nothing when the file does not exist; an input Error when it is damaged.
  std::optional<std::vector<std::uint64_t>> load_state(const std::string& path) const;

  const Backend& backend() const noexcept { return backend_; }
  const BandPlan& plan() const noexcept { return plan_; }
  Sink* sink() noexcept { return sink_.get(); }

 private:
  JobOptions options_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<Sink> sink_;
  Backend backend_;
  BandPlan plan_;
  std::unique_ptr<Engine> engine_;
  bool given_ = false;   // the caller's source and sink: no files of the job's own
  bool picked_ = false;  // backend_ chosen (pick_backend)
  // This job's rows [begin_, end_); it writes [start_, run_end_), the rest being on disk already
  // (a resumed run).
  std::int64_t begin_ = 0, end_ = 0, start_ = 0, run_end_ = 0;
  std::int64_t rows_ = 0;  // the output's rows (a projection's: one plane), or the input's
  bool shared_ = false;
  std::string journal_;  // empty: the output keeps none
  std::string identity_;
  int journal_slot_ = -1;       // in the registry of temporaries (removed on errors and SIGBUS)
  int manifest_slot_ = -1;      // likewise, a whole-image run's manifest
  bool kept_ = false;           // committed, or stopped for --resume
  bool owns_manifest_ = false;  // a whole-image run's: removed with its journal on an error
  bool made_manifest_ = false;  // by this run's claim before its output was made
  void write_journal(std::int64_t done) const;
  // start() of a job over the caller's source and sink.
  void start_given(const std::vector<const Operation*>& ops, const Operation* writer);
};

}  // namespace ooc
