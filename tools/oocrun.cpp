// oocrun: a pipeline of stages ("gaussian sigma=2 ! convert type=u8") in one pass over an image
// of any size (a pass more for each equalize), fused band by band on the CPU or a GPU.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/filter_options.hpp"
#include "cli/main.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "cli/world.hpp"
#include "ooc/error.hpp"
#include "ooc/filter_options.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/pipeline.hpp"
#include "ooc/run.hpp"

namespace {

constexpr const char* kExamples = R"(
Examples:
  oocrun mosaic.tif view.tif 'gaussian sigma=1.5 ! subtract-background sigma=60 ! convert type=u8'
  oocrun in.raw edges.raw --width 65536 gradient-magnitude ! threshold value=40
      (quote a '!' that your shell reads as history, or give the pipeline as one argument)
  oocrun scan.raw eq.raw --width 20000 --type u16 'gaussian sigma=2 ! equalize'
      equalize adds a histogram pass; the stages before it run in both passes
  oocrun --list                       every stage, its parameters, defaults and ranges

Each stage filters the previous stage's image, with the border rule applied to that image (as
running the stages one by one, scipy.ndimage semantics); intermediate values are f32, or f64
where the input, the output or a convert is f64, u32 or i32 (as oocconv; --precision sets it);
the output has the type of the last convert or equalize, else the input's (--out-type sets it).
Parts, MPI and resume as in oocconv (a pipeline with equalize: MPI, no --part or --rows; a
resumed run takes the histogram the interrupted one saved).

Exit codes: 0 done, 2 usage, 3 bad input, 4 I/O, 5 GPU, 75 stopped by a signal: --resume.
)";

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("oocrun", [&]() -> int {
    CLI::App app{
        "oocrun: a pipeline of filters over an image larger than memory, in one pass.\n"
        "PIPELINE = STAGE [! STAGE ...], STAGE = NAME [key=value ...] (oocrun --list)"};
    app.footer(kExamples);
    app.get_formatter()->column_width(34);
    app.allow_extras(false);

    std::vector<std::string> words;
    app.add_option("INPUT OUTPUT PIPELINE", words,
                   "input (raw, .npy, TIFF, synth:PATTERN), output (raw, .npy, .tif, null:), "
                   "then the stages");
    bool list = false, list_markdown = false;
    app.add_flag("--list", list, "list every stage and its parameters, then exit");
    app.add_flag("--list-markdown", list_markdown, "the stage table of the README, then exit");

    ooc::JobOptions jo;
    ooc::cli::InputCli input_cli;
    ooc::cli::add_input_options(*app.add_option_group("Input"), input_cli, jo.hints, jo.seed, "f32",
                                "u8 u16 i16 u32 i32 f32 f64");

    std::string border = "reflect", out_type, precision = "auto";
    double border_value = 0;
    bool planes = false;
    auto* g_f = app.add_option_group("Stages");
    g_f->add_option("--border", border,
                    "reflect, mirror, nearest, wrap or constant (scipy.ndimage modes), for "
                    "every stage")
        ->default_str("reflect");
    g_f->add_option("--border-value", border_value, "the constant of --border constant")
        ->default_str("0");
    g_f->add_flag("--planes", planes,
                  "a volume: every stage filters each plane in 2-D (default: the stages with a "
                  "3-D version filter in 3-D, the others are refused)");
    g_f->add_option("--out-type", out_type,
                    "output sample type (default: the last convert's or equalize's, else the "
                    "input's)");
    std::string nodata;
    ooc::cli::add_nodata_option(*g_f, nodata);
    g_f->add_option("--precision", precision,
                    "auto (f64 where the input, output or a convert is f64, u32 or i32, else "
                    "f32), f32 or f64: the intermediates' and sums' type")
        ->default_str("auto");

    ooc::cli::JobCli job_cli;
    ooc::cli::add_job_options(app, job_cli, jo.sink);
    auto& [progress, quiet, stats] = job_cli.report;

    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "oocrun")) return *code;
    using ooc::Error;
    using ooc::ErrorKind;
    if (list || list_markdown) {
      std::fputs((list ? ooc::stage_list() : ooc::stage_table()).c_str(), stdout);
      return 0;
    }
    if (ooc::cli::finish_if_asked("oocrun", job_cli.run.finish, !words.empty(), quiet)) return 0;
    if (words.size() < 3)
      throw Error(ErrorKind::usage,
                  "give INPUT, OUTPUT and a pipeline, e.g. oocrun in.tif out.tif 'gaussian "
                  "sigma=2' (oocrun --list shows the stages)");
    jo.input = words[0];
    jo.output = words[1];
    const auto stages = ooc::parse_pipeline({words.begin() + 2, words.end()});
    ooc::cli::check_report_options(job_cli.report);
    ooc::cli::apply_input_options(input_cli, jo.hints);
    ooc::PipelineSettings settings =
        ooc::pipeline_settings(border, border_value, out_type, precision);
    settings.planes = planes;
    ooc::apply_nodata(nodata, settings);
    // Where given, it beats the input's for the stages and the output alike.
    settings.voxel = jo.sink.voxel = ooc::cli::voxel_option(input_cli);
    ooc::cli::apply_pipeline_options(job_cli.pipeline, jo);
    ooc::cli::apply_run_options(job_cli.run, jo);

    ooc::cli::World& world = ooc::cli::World::get();
    ooc::JobSpec spec;
    spec.name = "oocrun";
    spec.options = jo;
    spec.options.journal = true;  // resumable; a pipeline with equalize saves its histogram
    spec.stages = stages;
    spec.settings = settings;
    spec.stop_on_signals = true;
    spec.processes = &world;
    std::optional<ooc::cli::Progress> bar;
    spec.on_start = [&](ooc::Job& job, int passes) {
      if (jo.resume && !quiet) ooc::cli::say_resumed("oocrun", job);
      // One bar over every pass: the file is read once a pass.
      bar.emplace(progress, passes * job.source().spec().total_bytes(), "oocrun");
    };
    spec.progress = [&](std::int64_t d, std::int64_t t) {
      if (bar) bar->update(d, t);
    };
    const ooc::JobResult r = ooc::run_job(std::move(spec));
    if (bar) bar->finish();
    nlohmann::json extra;
    if (r.passes.size() > 1) {
      extra["passes"] = nlohmann::json::array();
      for (const ooc::RunStats& st : r.passes)
        extra["passes"].push_back({{"seconds", st.seconds}, {"bytes_read", st.bytes_read}});
    }
    return ooc::cli::end_of_run("oocrun", job_cli.report, r, extra.empty() ? "" : extra.dump());
  });
}
