// oocconv: filter an image of any size with a separable convolution, band by band, in bounded
// memory.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <utility>

#include "cli/filter_options.hpp"
#include "cli/main.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "cli/world.hpp"
#include "engine/trace.hpp"
#include "ooc/error.hpp"
#include "ooc/job.hpp"
#include "ooc/run.hpp"

namespace {

constexpr const char* kExamples = R"(
Examples:
  oocconv in.raw out.raw --width 65536 --radius 16
      Gaussian blur (sigma = radius / 3) of a raw f32 image 65536 samples wide.
  oocconv scan.raw smooth.raw --width 20000 --type u16 --channels 3 --sigma 2.5 --border nearest
  oocconv in.raw out.raw --width 4096 --taps 1,4,6,4,1 --out-type f32
      Explicit (unnormalized) taps along x then y, as scipy.ndimage.convolve1d.
  oocconv slide.tif smooth.tif --sigma 4 --compress zstd --tile 512
      TIFF in (any layout libtiff reads), tiled ZSTD TIFF out, tags carried over.
  oocconv in.raw edges.raw --width 4096 --kernel laplace --border nearest
      2-D kernel (flipped, as scipy.ndimage.convolve); also --kernel K.txt, K.npy, box:7,
      gaussian2d:2.5, sobel-x, sobel-y. A kernel of rank 1 runs as a separable filter.
  oocconv synth:noise null: --width 65536 --height 200000 --radius 16 --stats json
      Pipeline throughput on a synthetic image, nothing read from or written to disk.

Parts, MPI and resume (raw and .npy outputs):
  oocconv in.raw out.raw --width 65536 --part 2/8      rows of part 2 (from 0) of 8, into
      out.raw.partial; in a Slurm array: --part auto. When all parts are done:
  oocconv --finish out.raw                             checks every part, renames into place
  mpirun -np 4 oocconv in.raw out.raw --width 65536    ranks split the rows; rank 0 finishes
  oocconv in.raw out.raw --width 65536 --resume        after SIGTERM/SIGINT (exit 75) or a kill
      A run keeps a journal beside OUT.partial; SIGTERM/SIGINT finish the bands in flight,
      record them, and exit 75. --resume goes on from there (refused if the input or the
      options changed); the result is identical to an uninterrupted run.

Exit codes: 0 done, 2 usage, 3 bad input (or --finish: parts missing), 4 I/O (disk full,
permissions), 5 GPU, 75 stopped by a signal: run again with --resume.
)";

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("oocconv", [&]() -> int {
    CLI::App app{
        "oocconv: out-of-core convolution of images larger than memory.\n"
        "Reads INPUT band by band, filters along x then y (scipy.ndimage.convolve1d "
        "semantics) or with a 2-D --kernel (scipy.ndimage.convolve), writes OUTPUT."};
    app.footer(kExamples);
    app.get_formatter()->column_width(34);

    ooc::JobOptions jo;
    app.add_option("INPUT", jo.input,
                   "raw, .npy or TIFF image file, or synth:PATTERN (noise, gradient, checker, "
                   "gaussian-spots, low-contrast, low-rank[:R[:S]])");
    app.add_option(
        "OUTPUT", jo.output,
        "raw, .npy or .tif file (written as OUTPUT.partial, renamed when done), or null:");
    ooc::cli::InputCli input_cli;
    ooc::cli::add_input_options(*app.add_option_group("Input"), input_cli, jo.hints, jo.seed, "f32",
                                "u8 u16 i16 u32 i32 f32 f64");

    ooc::FilterOptions filter;
    ooc::cli::add_filter_options(app, filter);
    ooc::cli::add_nodata_option(*app.get_option_group("Filter"), filter.nodata);

    ooc::cli::JobCli job_cli;
    ooc::cli::add_job_options(app, job_cli, jo.sink);
    auto& [progress, quiet, stats] = job_cli.report;

    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "oocconv")) return *code;
    using ooc::Error;
    using ooc::ErrorKind;
    if (ooc::cli::finish_if_asked("oocconv", job_cli.run.finish, !jo.input.empty(), quiet))
      return 0;
    if (jo.input.empty() || jo.output.empty())
      throw Error(ErrorKind::usage, "INPUT and OUTPUT are required (see --help)");
    ooc::cli::check_report_options(job_cli.report);
    ooc::cli::apply_input_options(input_cli, jo.hints);
    ooc::cli::apply_pipeline_options(job_cli.pipeline, jo);

    // Options are checked before the input is opened: a bad filter is a usage error first.
    ooc::JobSpec spec;
    spec.name = "oocconv";
    spec.stages = {ooc::filter_stage(filter, jo.pipeline.mem_limit)};
    spec.settings = ooc::filter_settings(filter);
    spec.settings.voxel = jo.sink.voxel = ooc::cli::voxel_option(input_cli);
    ooc::cli::apply_run_options(job_cli.run, jo);
    spec.options = jo;
    spec.options.journal = true;     // resumable
    spec.operation_as_built = true;  // the filter as built: its taps, method and accumulator
    spec.stop_on_signals = true;
    spec.processes = &ooc::cli::World::get();
    std::optional<ooc::cli::Progress> bar;
    spec.on_start = [&](ooc::Job& job, int) {
      ooc::detail::trace_mark("job started");
      if (jo.resume && !quiet) ooc::cli::say_resumed("oocconv", job);
      bar.emplace(progress, job.source().spec().total_bytes(), "oocconv");
    };
    spec.progress = [&](std::int64_t done, std::int64_t total) {
      if (bar) bar->update(done, total);
    };
    const ooc::JobResult r = ooc::run_job(std::move(spec));
    if (bar) bar->finish();
    ooc::detail::trace_mark("job ran");
    const int code = ooc::cli::end_of_run("oocconv", job_cli.report, r);
    ooc::detail::trace_mark("reported");
    return code;
  });
}
