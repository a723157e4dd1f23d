// The facts of a run and the --stats json schema (ooc/run.hpp), for every front end.
#include <nlohmann/json.hpp>

#include "ooc/run.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ooc {

std::size_t peak_rss_bytes() {
  // VmHWM belongs to this program's address space; ru_maxrss carries over the high-water mark of
  // whatever ran in the process before exec (a Python launcher, say).
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned long long kb = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
      found = std::sscanf(line, "VmHWM: %llu kB", &kb) == 1;
    std::fclose(f);
    if (found) return static_cast<std::size_t>(kb) * 1024;
  }
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::size_t>(ru.ru_maxrss) * 1024;
}

RunReport run_report(Job& job, const std::string& operation, const RunStats& stats) {
  RunReport r;
  r.input_path = job.options().input;
  r.input_description = job.source().describe();
  r.in = job.source().spec();
  r.output_path = job.options().output;
  if (job.sink()) r.output_type = std::string(name(job.sink()->spec().type));
  if (job.sink()) r.output_description = job.sink()->describe();
  r.input_io = r.input_path.rfind("synth:", 0) == 0 ? "generated" : job.source().io_method();
  if (job.sink()) r.output_io = job.sink()->io_method();
  if (job.sink()) r.output_predictor = job.sink()->predictor();
  r.operation = operation;
  r.backend = job.backend().describe();
  r.backend_choice = job.backend().why;
  r.start_error = job.backend().start_error();
  r.cuda = job.backend().cuda;
  r.plan = job.plan();
  r.mem_limit_from =
      job.options().pipeline.mem_limit > 0 ? std::string("--mem-limit") : default_budget().from;
  r.stats = stats;
  return r;
}

std::string stats_json(const RunReport& r, const std::string& extra_json) {
  const RunStats& st = r.stats;
  const BandPlan& plan = r.plan;
  const double secs = st.seconds > 0 ? st.seconds : 1e-9;
  nlohmann::json j;
  j["input"] = {{"path", r.input_path},      {"description", r.input_description},
                {"width", r.in.width},       {"height", r.in.height},
                {"channels", r.in.channels}, {"type", std::string(name(r.in.type))},
                {"bytes", st.bytes_read}};
  if (r.in.volume()) j["input"]["depth"] = r.in.depth;
  if (!r.input_io.empty()) j["input"]["io"] = r.input_io;
  j["output"] = {{"path", r.output_path}, {"type", r.output_type}, {"bytes", st.bytes_written}};
  j["output"]["io"] = r.output_io;
  if (!r.output_predictor.empty()) j["output"]["predictor"] = r.output_predictor;
  if (r.output_nodata)
    j["output"]["nodata"] =
        std::isnan(*r.output_nodata) ? nlohmann::json("nan") : nlohmann::json(*r.output_nodata);
  j["operation"] = r.operation;
  if (!r.stages.empty()) j["stages"] = r.stages;
  if (r.components) j["components"] = *r.components;
  j["backend"] = r.backend;
  j["backend_choice"] = r.backend_choice;  // how --device picked it (auto: both estimates)
  if (!r.start_error.empty()) j["cuda_start_error"] = r.start_error;  // auto went on on the CPU
  j["plan"] = {{"band_rows", plan.band_rows},
               {"bands", plan.bands},
               {"slots", plan.slots},
               {"threads", plan.threads},
               {"tile_cols", plan.tile_cols},
               {"slab_planes", plan.slab_planes},
               {"column_halo", plan.column_halo},
               {"estimate_seconds", plan.estimate_seconds},
               {"mem_limit_bytes", plan.mem_limit},
               {"mem_limit_from", r.mem_limit_from},
               {"ring_bytes", plan.ring_bytes}};
  j["seconds"] = {{"total", st.seconds},
                  {"setup", st.setup_seconds},
                  {"read_stage", st.read_seconds},
                  {"compute_stage", st.compute_seconds},
                  {"write_stage", st.write_seconds}};
  if (r.cuda) {
    j["gpu_seconds"] = {{"pack", st.pack_seconds},
                        {"h2d", st.h2d_seconds},
                        {"kernels", st.kernel_seconds},
                        {"d2h", st.d2h_seconds}};
    // Every pass's bands the CPU took: while CUDA started, and its share (BandPlan::cpu_share).
    j["cpu_bands"] = st.cpu_bands;
  }
  // Streaming: bands only, without the one-off setup (pinned and GPU buffers).
  const double stream_s = std::max(st.seconds - st.setup_seconds, 1e-9);
  j["throughput"] = {{"mpixel_per_s", double(st.pixels) / secs / 1e6},
                     {"input_mb_per_s", double(st.bytes_read) / secs / 1e6},
                     {"streaming_input_mb_per_s", double(st.bytes_read) / stream_s / 1e6}};
  j["pixels"] = st.pixels;
  j["peak_rss_bytes"] = peak_rss_bytes();
  if (!extra_json.empty()) j.update(nlohmann::json::parse(extra_json));
  return j.dump(2);
}

}  // namespace ooc
