// What --stats json says of a run: one schema for the tools and the Python module (which takes
// this file without the rest of the CLI library and its MPI).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ooc/image.hpp"
#include "ooc/job.hpp"
#include "ooc/pipeline.hpp"

namespace ooc::cli {

// A run's facts, gathered from a Job (run_report) or, for a run on the engine alone, field by
// field.
struct RunReport {
  std::string input_path, input_description, output_path, output_type = "none", operation;
  std::string backend, backend_choice;  // Backend::describe() and Backend::why
  std::string start_error;              // Backend::start_error()
  // How the input was read and the output written (Source/Sink::io_method(): mmap, direct, ...).
  std::string input_io, output_io = "none";
  std::string output_predictor;     // Sink::predictor(): a TIFF output's, else empty
  std::vector<std::string> stages;  // a pipeline's stages as built (PipelinePlan), else empty
  bool cuda = false;
  ImageSpec in;
  BandPlan plan;
  RunStats stats;
};

RunReport run_report(Job& job, const std::string& operation, const RunStats& stats);
// The --stats json object, peak_rss_bytes() included.
nlohmann::json stats_json(const RunReport& r);

// VmHWM (this address space's high-water mark), else ru_maxrss.
std::size_t peak_rss_bytes();

}  // namespace ooc::cli
