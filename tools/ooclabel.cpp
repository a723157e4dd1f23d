// ooclabel: connected components of the non-zero samples of an image or volume of any size,
// numbered as scipy.ndimage.label numbers them, in two passes over the file in bounded memory
// (the `label` stage of oocrun, as a tool of its own).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "cli/main.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "cli/world.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/ops/label.hpp"
#include "ooc/pipeline.hpp"
#include "ooc/run.hpp"

namespace {

constexpr const char* kFooter = R"(
Foreground is every non-zero sample. Labels are u32 (u64 past 2^32 - 1 components: --label-type),
numbered from 1 in raster order of each component's first sample (z, then y, then x): the bytes
of scipy.ndimage.label's output with the matching structure (4: generate_binary_structure(2, 1),
8: (2, 2); 6, 18, 26: (3, 1), (3, 2), (3, 3)). The first pass labels each band and joins the components that touch across bands in a
table (in a scratch file in $TMPDIR past a quarter of --mem-limit); the second labels each band
again and writes it through the table. Under mpirun or srun each rank labels its rows and the
ranks join the components that cross their cuts. With --part I/N or --rows A:B (separate
processes) each part labels its rows and keeps what touches its cuts in OUT.label-faces.ROW; a part
run before the others exits 75: run it again once every part has run, then --finish OUT.
--regions and --min-size too. A stop (exit 75) resumes with --resume: in the second pass from
the band it stopped at, through the table the first pass saved beside OUT.partial.
With --device cuda each band is labelled on the GPU and joined on the host: the same bytes.

Examples:
  ooclabel mask.tif labels.tif --connectivity 8
  ooclabel cells.npy labels.npy --connectivity 26 --mem-limit 2G
  ooclabel mask.tif labels.tif --regions cells.csv --intensity raw.tif
  oocrun in.tif labels.tif 'gaussian sigma=2 ! threshold value=40 ! label connectivity=8'
  ooclabel big.tif labels.tif --part 0/4   (and 1/4, 2/4, 3/4; again where 75; then --finish)

Exit codes: 0 done, 2 usage, 3 bad input, 4 I/O (disk full, permissions).
)";

// --finish OUT: the parts' output into place (and their faces removed); before every part has
// written its rows, what their faces say: the rows not labelled yet, or the count once joined.
int finish(const ooc::cli::JobCli& job_cli, bool operands) {
  const std::string& out = job_cli.run.finish;
  const bool quiet = job_cli.report.quiet;
  try {
    ooc::cli::finish_if_asked("ooclabel", out, operands, quiet);
  } catch (const ooc::Error& e) {
    const ooc::LabelFaces f = ooc::label_faces(out);
    if (!e.resumable() || f.parts == 0) throw;
    if (!quiet)
      std::fprintf(stderr, "ooclabel: %s\nooclabel: %s\n", e.what(),
                   f.complete ? ("the parts' faces join into " + std::to_string(f.components) +
                                 " components: run each part again (the same --part or --rows) "
                                 "to write its rows, then ooclabel --finish " +
                                 out)
                                    .c_str()
                              : ("rows " + f.missing +
                                 " are not labelled yet: run their parts, "
                                 "then each part again, then ooclabel --finish " +
                                 out)
                                    .c_str());
    return 75;
  }
  ooc::remove_label_faces(out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("ooclabel", [&]() -> int {
    CLI::App app{
        "ooclabel: connected components of an image or volume larger than memory, numbered as "
        "scipy.ndimage.label: a pass that labels and joins the bands, then one that writes."};
    app.footer(kFooter);
    app.get_formatter()->column_width(34);
    ooc::JobOptions jo;
    app.add_option("INPUT", jo.input, "raw, .npy, TIFF or Zarr image or volume, or synth:PATTERN");
    app.add_option("OUTPUT", jo.output,
                   "raw, .npy or .tif file (written as OUTPUT.partial, renamed when done), or "
                   "null:");
    std::string connectivity = "auto", label_type = "auto";
    app.add_option("--connectivity", connectivity,
                   "4 or 8 on an image, 6, 18 or 26 on a volume; auto: 4 or 6 (scipy's default)")
        ->default_str("auto");
    app.add_option("--label-type", label_type,
                   "u32, u64, or auto: u32 unless the image could hold more components than "
                   "u32 numbers (2^32 - 1), then u64; u32 is refused when the count does not fit")
        ->check(CLI::IsMember({"u32", "u64", "auto"}))
        ->default_str("auto");
    std::string regions;
    app.add_option("--regions", regions,
                   "also write FILE.csv: each label's area, bbox and centroid (the columns of "
                   "skimage.measure.regionprops_table)");
    std::string intensity;
    app.add_option("--intensity", intensity,
                   "with --regions: an image of the input's size whose intensity_sum, _mean, _min, "
                   "_max and _std over each label go into the table (raw: read as the input's "
                   "type)");
    std::uint64_t min_size = 0;
    app.add_option("--min-size", min_size,
                   "drop components of fewer samples, numbering the rest on (skimage's "
                   "remove_small_objects, then label)");
    bool planes = false;
    app.add_flag("--planes", planes, "a volume: label each plane apart (4 or 8), numbers going on");
    ooc::cli::InputCli input_cli;
    ooc::cli::add_input_options(*app.add_option_group("Input"), input_cli, jo.hints, jo.seed, "u8",
                                "u8 u16 i16 u32 i32 f32 f64");
    ooc::cli::JobCli job_cli;
    ooc::cli::add_job_options(app, job_cli, jo.sink);

    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "ooclabel")) return *code;
    if (!job_cli.run.finish.empty())
      return finish(job_cli, !jo.input.empty() || !jo.output.empty());
    if (jo.input.empty() || jo.output.empty())
      throw ooc::Error(ooc::ErrorKind::usage, "INPUT and OUTPUT are required (see --help)");
    ooc::StageCall call{"label", {}};
    if (connectivity != "auto")
      call.set("connectivity", ooc::parse_stage_value(ooc::stage_parameter("label", "connectivity"),
                                                      connectivity, "--connectivity"));
    call.set("label-type", label_type);
    if (min_size > 0) call.set("min-size", static_cast<std::int64_t>(min_size));
    if (!regions.empty()) call.set("regions", regions);
    if (!intensity.empty()) call.set("intensity", intensity);
    ooc::cli::check_report_options(job_cli.report);
    ooc::cli::apply_input_options(input_cli, jo.hints);
    jo.sink.voxel = ooc::cli::voxel_option(input_cli);
    ooc::cli::apply_pipeline_options(job_cli.pipeline, jo);
    ooc::cli::apply_run_options(job_cli.run, jo);

    ooc::cli::World& world = ooc::cli::World::get();
    // Parts as separate processes: each keeps its faces beside the output for the others.
    const bool parts = world.size() == 1 && (jo.part_count > 1 || jo.rows_end > 0);
    if (parts) call.set("faces", ooc::label_faces_prefix(jo.output));
    ooc::JobSpec spec;
    spec.reductions_in_parts = parts;
    spec.name = "ooclabel";
    spec.options = jo;
    // Journaled as oocrun's outputs: a stop in the first pass resumes from the start; one in the
    // second at its band, from the table the first pass saved beside the output's temporary.
    spec.options.journal = true;
    spec.stages = {call};
    spec.settings.planes = planes;
    spec.stop_on_signals = true;
    spec.processes = &world;
    auto& report = job_cli.report;
    std::optional<ooc::cli::Progress> bar;
    spec.on_start = [&](ooc::Job& job, int passes) {
      bar.emplace(report.progress, passes * job.source().spec().total_bytes(), "ooclabel");
    };
    spec.progress = [&](std::int64_t d, std::int64_t t) {
      if (bar) bar->update(d, t);
    };
    ooc::JobResult r;
    try {
      r = ooc::run_job(std::move(spec));
    } catch (const ooc::Error& e) {
      // A part whose faces are saved before the others': run it again once they are.
      if (!parts || !e.resumable()) throw;
      if (!job_cli.report.quiet) std::fprintf(stderr, "ooclabel: %s\n", e.what());
      return 75;
    }
    if (bar) bar->finish();
    nlohmann::json extra;
    if (r.passes.size() > 1) {
      extra["passes"] = nlohmann::json::array();
      for (const ooc::RunStats& st : r.passes)
        extra["passes"].push_back({{"seconds", st.seconds}, {"bytes_read", st.bytes_read}});
    }
    const int code = ooc::cli::end_of_run("ooclabel", report, r, extra.empty() ? "" : extra.dump());
    // The count is the job's result (--stats json's "components" too): no scan of the labels.
    if (code == 0 && r.end == ooc::JobResult::End::done && r.report.components && !report.quiet &&
        world.rank() == 0)
      std::fprintf(stderr, "ooclabel: %llu components\n",
                   static_cast<unsigned long long>(*r.report.components));
    return code;
  });
}
