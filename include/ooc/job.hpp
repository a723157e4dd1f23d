// What every tool does around its operations: open the input, pick the backend, plan the bands
// for all passes, create the output, run the passes on one set of slots, commit the output.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ooc/io.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {

struct JobOptions {
  std::string input;  // a file, or synth:PATTERN
  RawHints hints;
  std::uint64_t seed = 1;  // of a synth: input
  std::string output;      // a file, null: to discard, or empty for a job that writes none
  SinkOptions sink;
  PipelineOptions pipeline;
  std::string device = "auto", devices = "all";
};

class Job {
 public:
  explicit Job(JobOptions options);  // opens the input
  ~Job();

  Source& source() noexcept { return *source_; }
  const JobOptions& options() const noexcept { return options_; }

  // Picks the backend, creates the output (for the operation that writes one), plans the bands
  // for every pass and makes the engine. Call once, with every operation the job will run.
  void start(const std::vector<const Operation*>& ops);
  // One pass; an operation with an output writes it to the job's output.
  RunStats run(Operation& op, const ProgressFn& progress = {});
  // Renames the output into place (nothing without one).
  void commit();

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
};

}  // namespace ooc
