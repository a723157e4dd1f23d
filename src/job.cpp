// The job driver shared by the tools (see job.hpp).
#include "ooc/job.hpp"

#include "ooc/error.hpp"

namespace ooc {

Job::Job(JobOptions options) : options_(std::move(options)) {
  source_ = open_source(options_.input, options_.hints, options_.seed);
}

Job::~Job() = default;

void Job::start(const std::vector<const Operation*>& ops) {
  if (engine_) throw Error(ErrorKind::usage, "a job starts once");
  backend_ = select_backend(options_.device, options_.devices, ops);
  const Operation* writer = nullptr;
  for (const Operation* op : ops)
    if (op->output()) writer = op;
  if (writer && options_.output.empty())
    throw Error(ErrorKind::usage, "operation '" + writer->describe() + "' needs an output");
  if (writer) {
    SinkOptions so = options_.sink;
    so.metadata = source_->metadata();
    so.mem_limit = options_.pipeline.mem_limit;
    so.threads = options_.pipeline.threads;
    sink_ = create_sink(options_.output, *writer->output(), options_.input, so);
  }
  plan_ = plan_bands(source_->spec(), ops, backend_, options_.pipeline, source_.get(), sink_.get());
  engine_ = std::make_unique<Engine>(*source_, backend_, plan_);
}

RunStats Job::run(Operation& op, const ProgressFn& progress) {
  if (!engine_) throw Error(ErrorKind::usage, "start the job before running it");
  return engine_->run(op, op.output() ? sink_.get() : nullptr, progress);
}

void Job::commit() {
  if (sink_) sink_->commit();
}

}  // namespace ooc
