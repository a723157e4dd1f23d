// The option groups of the tools (Input, Output file, Pipeline, Parts and resume, Reporting):
// their flags and how they fill the library's options (JobOptions, RawHints, SinkOptions).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "ooc/engine.hpp"
#include "ooc/io.hpp"
#include "progress.hpp"

namespace ooc {
struct JobOptions;
}  // namespace ooc

namespace ooc::cli {

// The group "Reporting" of the tools that run a job: the progress options, --stats json|text and
// -q. check_report_options() throws a usage Error for a --stats other than json or text, and
// hands -q on to the progress options.
struct ReportCli {
  ProgressCli progress;
  bool quiet = false;
  std::string stats;
};
void add_report_options(CLI::App& app, ReportCli& r);
void check_report_options(ReportCli& r);

// The group "Input" of the tools that read an image: --width, --height, --depth, --volume,
// --type, --channels, --seed, --in-format, --page, --pages, --voxel-size. apply_input_options()
// parses --type and says which hints were given (a file's header decides the others).
struct InputCli {
  std::string type;
  CLI::Option* type_opt = nullptr;
  CLI::Option* channels_opt = nullptr;
  std::string voxel_size;  // --voxel-size z,y,x or y,x (empty: the input's)
};
void add_input_options(CLI::App& group, InputCli& in, ooc::RawHints& hints, std::uint64_t& seed,
                       const std::string& default_type, const std::string& types_help);
void apply_input_options(const InputCli& in, ooc::RawHints& hints);
// --voxel-size parsed (a usage Error for a bad one); unknown where it was not given.
ooc::VoxelSize voxel_option(const InputCli& in);

// The group "Pipeline" of the tools that run a job: --mem-limit, --threads, --band-rows, --slots,
// --device, --devices. apply_pipeline_options() parses --mem-limit and fills `jo`.
struct PipelineCli {
  std::optional<std::string> mem_limit;
  ooc::EngineOptions options;
  std::string device = "auto", devices = "all", cpu_start = "auto";
};
void add_pipeline_options(CLI::App& group, PipelineCli& p, const std::string& band_rows_help);
void apply_pipeline_options(const PipelineCli& p, ooc::JobOptions& jo);

// Parts and resume: --part I/N | auto, --rows A:B, --resume. apply_run_options() fills `jo`;
// under an MPI launcher the ranks are the parts (and --part/--rows are refused).
struct RunCli {
  std::string part, rows;
  bool resume = false;
  std::string finish;  // --finish OUT
};
void add_run_options(CLI::App& app, RunCli& r);
// --finish OUT, of every tool that writes parts (add_run_options adds it).
void add_finish_option(CLI::App& app, std::string& out);
// After a --finish OUT (non-empty `out`): refuses other operands (`operands`: the tool got
// INPUT or OUTPUT), checks every part of OUT and renames it into place, says so unless quiet, and
// returns true: the tool exits 0. False where --finish was not given.
bool finish_if_asked(const char* prog, const std::string& out, bool operands, bool quiet);
void apply_run_options(const RunCli& r, ooc::JobOptions& jo);

// The output-file options of oocconv, ooceq and oocgen: --format, --tile, --compress, --level,
// --bigtiff, --no-locks.
void add_output_options(CLI::App& group, ooc::SinkOptions& options);

// The option groups of the tools that run one job of filters over an image (oocconv, oocrun), in
// their order: "Output file", "Pipeline", "Parts and resume", "Reporting". The apply and check
// functions of each group stay the tool's to call, where its own checks fit between them.
struct JobCli {
  PipelineCli pipeline;
  RunCli run;
  ReportCli report;
};
void add_job_options(CLI::App& app, JobCli& c, ooc::SinkOptions& sink);

// A CLI11 check that a count option (--width, --height, --band-rows) is at least 1.
CLI::Validator positive();

}  // namespace ooc::cli
