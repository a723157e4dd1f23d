// The job runner (ooc/run.hpp): a job's whole life, the same for every front end.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ooc/error.hpp"
#include "ooc/filter_options.hpp"
#include "ooc/io.hpp"
#include "ooc/run.hpp"

namespace ooc {

void ProcessGroup::abort(int code) {
  // One process has no others to end: the library reports, its caller exits.
  throw Error(ErrorKind::io, "the run was ended with exit code " + std::to_string(code));
}

namespace {

// A run over several processes ends together: rank 0 finishes the output once every process is
// done, and gathers their times. False when another process failed or stopped.
bool finish_processes(const std::string& name, Job& job, ProcessGroup& pg, const RunStats& st,
                      JobResult& r) {
  const bool writes = job.sink() != nullptr && job.options().output != "null:";
  if (!pg.all_ok(true)) return false;
  bool ok = true;
  if (pg.rank() == 0 && writes) {
    try {
      r.finished = finish_output(job.options().output);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s: rank 0: error: %s\n", name.c_str(), e.what());
      // Exit 75 asks a batch system to run the job again: only where that can finish it (parts
      // stopped or missing); mixed or damaged journals end every rank with the error's code.
      if (!e.resumable()) {
        std::fflush(stderr);
        pg.abort(e.exit_code());
      }
      ok = false;
    }
  }
  if (!pg.all_ok(ok)) return false;
  const std::vector<double> mine{double(pg.rank()),       st.seconds,
                                 double(st.bytes_read),   double(st.bytes_written),
                                 double(job.row_begin()), double(job.row_end())};
  const std::vector<double> all = pg.gather(mine);
  if (pg.rank() != 0) return true;
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t i = 0; i + 5 < all.size(); i += 6) {
    r.slowest_seconds = std::max(r.slowest_seconds, all[i + 1]);
    r.ranks_bytes_read += all[i + 2];
    r.ranks_bytes_written += all[i + 3];
    ranks.push_back({{"rank", int(all[i])},
                     {"seconds", all[i + 1]},
                     {"bytes_read", all[i + 2]},
                     {"rows", {std::int64_t(all[i + 4]), std::int64_t(all[i + 5])}}});
  }
  r.ranks = pg.size();
  const double read = r.ranks_bytes_read;
  nlohmann::json mpi = {{"ranks", pg.size()},
                        {"seconds", r.slowest_seconds},
                        {"bytes_read", read},
                        {"bytes_written", r.ranks_bytes_written},
                        {"input_gb_per_s", read / std::max(r.slowest_seconds, 1e-9) / 1e9},
                        {"per_rank", ranks}};
  r.ranks_json = mpi.dump();
  return true;
}

}  // namespace

namespace {

// What the job runs: a pipeline's passes, or one operation a front end built (oocatax's product).
struct Work {
  std::unique_ptr<PipelinePlan> plan;
  std::shared_ptr<Operation> op;
  std::vector<const Operation*> operations() const {
    return plan ? plan->operations() : std::vector<const Operation*>{op.get()};
  }
  int passes() const { return plan ? plan->passes() : 1; }
  std::string fingerprint() const { return plan ? plan->fingerprint() : op->fingerprint(); }
  std::optional<ImageSpec> output() const {
    return plan ? std::optional<ImageSpec>(plan->output()) : op->output();
  }
  std::vector<std::string> stages() const {
    return plan ? plan->stage_descriptions() : std::vector<std::string>{};
  }
  std::string operation(const JobSpec& spec) const {
    if (!spec.operation.empty()) return spec.operation;
    if (!plan) return op->describe();
    std::string text;
    if (spec.operation_as_built)
      for (const std::string& s : plan->stage_descriptions())
        text += (text.empty() ? "" : " ! ") + s;
    return text.empty() ? plan->describe() : text;
  }
};

}  // namespace

JobResult run_job(JobSpec spec) {
  ProcessGroup alone;
  ProcessGroup& pg = spec.processes ? *spec.processes : alone;
  JobResult r;
  // --nodata given: the outputs record it (an input's tag they carry anyway).
  if (spec.settings.nodata_given) {
    spec.options.sink.nodata = spec.settings.nodata;
    spec.options.sink.nodata_given = true;
  }
  std::unique_ptr<Job> made =
      spec.source
          ? std::make_unique<Job>(std::move(spec.source), std::move(spec.sink), spec.options)
          : std::make_unique<Job>(spec.options);
  Job& job = *made;
  const ImageSpec& in = job.source().spec();
  if (spec.check_input) spec.check_input(in);
  const JobOptions& jo = spec.options;
  Work work;
  if (spec.make_operation) {
    work.op = spec.make_operation(job);
  } else {
    // Physical units (sigma-um) divide by the input's voxel size, unless the front end gave one.
    if (!spec.settings.voxel.known()) spec.settings.voxel = job.source().metadata().voxel;
    // Holes are the input's GDAL_NODATA where --nodata is not given (docs/design.md, "Nodata").
    if (!spec.settings.nodata_given)
      spec.settings.nodata = parse_gdal_nodata(job.source().metadata().geo.gdal_nodata);
    work.plan = std::make_unique<PipelinePlan>(in, spec.stages, spec.settings, jo.pipeline);
    if (work.plan->has_reduction() && pg.size() == 1 && (jo.part_count > 1 || jo.rows_end > 0) &&
        !spec.reductions_in_parts)
      throw Error(ErrorKind::usage,
                  "equalize and label need every band of the image: a pipeline with them runs "
                  "in one process (or as MPI ranks), not as --part or --rows (ooclabel labels in "
                  "parts)");
  }
  // Holes in an output type that cannot hold the input's nodata value have that type's own
  // (-9999 into u8: 0): the output records it, the run says it.
  std::string nodata_note;
  std::optional<double> written_nodata;
  if (work.plan && work.plan->output_nodata()) {
    const double nd = *work.plan->output_nodata();
    const std::optional<double> was =
        jo.sink.nodata_given ? jo.sink.nodata
                             : parse_gdal_nodata(job.source().metadata().geo.gdal_nodata);
    const auto text = [](double v) {
      char t[32];
      std::snprintf(t, sizeof t, "%.17g", v);
      return std::isnan(v) ? std::string("nan") : std::string(t);
    };
    if (was && !(std::isnan(*was) ? std::isnan(nd) : *was == nd)) {
      job.set_output_nodata(nd);
      written_nodata = nd;
      nodata_note = "nodata " + text(*was) + " does not fit the output's type " +
                    std::string(name(work.plan->output().type)) + ": its holes are " + text(nd) +
                    " (recorded as its nodata), and valid samples that would convert to " +
                    text(nd) + " move one step off it";
    }
  }
  // What makes the output's bytes: checked when a run resumes or parts are finished.
  if (const std::optional<ImageSpec> out = work.output())
    job.set_fingerprint(work.fingerprint() + "; output " + out->describe() + " " +
                        output_format(jo.output, jo.sink));
  // Before start(), which creates the temporary: a signal from then on stops cleanly. Every
  // output is resumable (a TIFF keeps its compressed blocks), a pipeline with equalize with the
  // histogram it saved.
  if (spec.stop_on_signals) set_stop_on_signals(true);
  if (spec.before_start) spec.before_start(job, work.operations());
  job.start(work.operations());
  if (spec.on_start) spec.on_start(job, work.passes());

  if (work.plan) {
    r.total = run_pipeline(
        job, *work.plan, spec.progress, [&](std::vector<std::uint64_t>& v) { pg.sum(v); },
        &r.passes);
  } else {
    r.total = job.run(*work.op, spec.progress);
    r.passes = {r.total};
  }
  r.row_begin = job.row_begin();
  r.row_end = job.row_end();
  r.is_part = job.is_part();
  if (r.total.stopped) {
    r.end = JobResult::End::stopped;
    // Stopped before the last pass: no row is written yet.
    const std::int64_t rows =
        static_cast<int>(r.passes.size()) < work.passes() ? 0 : r.passes.back().rows_done;
    r.stopped_at = job.resumed_from() + rows;
    if (!job.journal_path().empty()) {
      r.kept = job.kept_path();
      r.journal = job.journal_path();
    }
    if (pg.size() > 1) pg.all_ok(false);
    return r;
  }
  if (work.plan)
    for (int i = 0; i + 1 < work.plan->passes(); ++i)
      if (const PipelinePlan::Histogram* h = work.plan->histogram(i)) r.histograms.push_back(*h);
  job.commit();
  if (pg.size() > 1 && !finish_processes(spec.name, job, pg, r.total, r)) {
    r.end = JobResult::End::others;
    return r;
  }
  r.report = run_report(job, work.operation(spec), r.total);
  r.report.stages = work.stages();
  r.report.nodata_note = nodata_note;
  r.report.output_nodata = written_nodata;
  if (work.plan) r.report.components = work.plan->components();
  return r;
}

}  // namespace ooc
