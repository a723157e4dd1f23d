// ooceq: global histogram equalization of a u8 or u16 image of any size, in two passes over the
// file (a histogram, then a lookup table), in bounded memory, on the CPU or a GPU.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "cli/main.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "cli/world.hpp"
#include "io/npy.hpp"
#include "io/output_file.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/pipeline.hpp"
#include "ooc/run.hpp"

namespace {

constexpr const char* kFooter = R"(
The table is OpenCV's cv2.equalizeHist, each channel on its own (65536 bins for u16): with i0
the smallest value present and N the samples of the channel, lut[i0] = 0 and for i > i0
lut[i] = round(float(h[i0+1] + ... + h[i]) * s), s = float(bins - 1) / float(N - h[i0]) rounded
to a float first, in float, ties to even. An image of one value is returned unchanged. The output
has the input's type.

Examples:
  ooceq scan.tif eq.tif
  ooceq big.raw eq.raw --width 65536 --type u16 --histogram hist.csv --stats json
  ooceq rgb.npy eq.npy --device cuda

Exit codes: 0 done, 2 usage, 3 bad input, 4 I/O (disk full, permissions), 5 GPU.
)";

// The histogram as CSV (value, then one count per channel) or .npy (u8 counts as uint64, shape
// (channels, bins)), written like every output: a temporary renamed when complete.
void write_histogram(const std::string& path, const ooc::PipelinePlan::Histogram& h) {
  const std::int64_t bins = h.bins;
  const int C = h.channels;
  const std::vector<std::uint64_t>& counts = h.counts;
  std::string data;
  const bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  if (npy) {
    data = ooc::npy_array_header("<u8", {C, bins});
    data.append(reinterpret_cast<const char*>(counts.data()),
                counts.size() * sizeof(std::uint64_t));
  } else {
    data = "value";
    for (int c = 0; c < C; ++c) {
      data += ",channel";
      data += std::to_string(c);
    }
    data += "\n";
    for (std::int64_t v = 0; v < bins; ++v) {
      data += std::to_string(v);
      for (int c = 0; c < C; ++c) {
        data += ',';
        data += std::to_string(counts[c * bins + v]);
      }
      data += "\n";
    }
  }
  ooc::OutputFile f(path, "");
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t w = ::write(f.fd(), data.data() + done, data.size() - done);
    if (w <= 0)
      throw ooc::Error(ooc::ErrorKind::io,
                       ooc::system_message("cannot write histogram", f.partial(), errno));
    done += static_cast<std::size_t>(w);
  }
  f.commit();
}

// Other types are refused with a conversion that keeps the image. oocconv rounds and saturates
// into the output type and has no scale option, but a one-tap filter is a scale (taps are used
// as given): --taps 1 alone would map float data in [0, 1] to {0, 1}.
void check_equalizable(ooc::SampleType t) {
  if (t == ooc::SampleType::u8 || t == ooc::SampleType::u16) return;
  const std::string type(ooc::name(t));
  const bool real = t == ooc::SampleType::f32 || t == ooc::SampleType::f64;
  throw ooc::Error(
      ooc::ErrorKind::usage,
      "histogram equalization takes u8 or u16 images, this one is " + type +
          ": convert it first, scaling its values onto 0-65535 with a one-tap filter (oocconv "
          "rounds and saturates to the output type): " +
          (real ? std::string("for values in [0, 1], oocconv IN OUT.raw --row-taps 65535 "
                              "--out-type u16; for [0, M], --row-taps S with S = 65535 / M")
                : std::string("for values in 0..M, oocconv IN OUT.raw --row-taps S --out-type "
                              "u16 with S = 65535 / M")) +
          " (no offset is added: shift negative values to 0 first)");
}

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("ooceq", [&]() -> int {
    CLI::App app{
        "ooceq: histogram equalization of a u8 or u16 image larger than memory, each channel on "
        "its own: a histogram pass, then a lookup-table pass."};
    app.footer(kFooter);
    app.get_formatter()->column_width(34);
    ooc::JobOptions jo;
    app.add_option("INPUT", jo.input, "raw, .npy or TIFF image file, or synth:PATTERN");
    app.add_option(
        "OUTPUT", jo.output,
        "raw, .npy or .tif file (written as OUTPUT.partial, renamed when done), or null:");
    ooc::cli::InputCli input_cli;
    ooc::cli::add_input_options(*app.add_option_group("Input"), input_cli, jo.hints, jo.seed, "u8",
                                "u8 or u16");
    ooc::cli::add_output_options(*app.add_option_group("Output file"), jo.sink);
    std::string histogram;
    app.add_option("--histogram", histogram, "also write the histogram: FILE.csv or FILE.npy");
    app.add_flag("--resume", jo.resume,
                 "continue an interrupted run from its journal and saved histogram; starts "
                 "afresh if none");
    std::string finish;
    ooc::cli::add_finish_option(app, finish);

    ooc::cli::PipelineCli pipeline_cli;
    ooc::cli::add_pipeline_options(*app.add_option_group("Pipeline"), pipeline_cli,
                                   "rows per band (default: planned)");
    ooc::cli::ReportCli report_cli;
    ooc::cli::add_report_options(*app.add_option_group("Reporting"), report_cli);
    auto& [progress, quiet, stats] = report_cli;

    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "ooceq")) return *code;
    if (ooc::cli::finish_if_asked("ooceq", finish, !jo.input.empty(), quiet)) return 0;
    if (jo.input.empty() || jo.output.empty())
      throw ooc::Error(ooc::ErrorKind::usage, "INPUT and OUTPUT are required (see --help)");
    ooc::cli::check_report_options(report_cli);
    ooc::cli::apply_input_options(input_cli, jo.hints);
    jo.sink.voxel = ooc::cli::voxel_option(input_cli);  // recorded by OME outputs
    ooc::cli::apply_pipeline_options(pipeline_cli, jo);

    // Under mpirun/srun each rank takes its rows; the histograms are summed over the ranks.
    ooc::cli::World& world = ooc::cli::World::get();
    ooc::cli::RunCli run_cli;
    run_cli.resume = jo.resume;
    ooc::cli::apply_run_options(run_cli, jo);
    ooc::JobSpec spec;
    spec.name = "ooceq";
    spec.options = jo;
    spec.options.journal = true;  // resumable: the histogram is saved between the passes
    spec.stages = {ooc::StageCall{"equalize", {}}};  // a histogram pass, then the table
    spec.operation = "histogram equalization (2 passes)";
    spec.check_input = [](const ooc::ImageSpec& in) { check_equalizable(in.type); };
    spec.stop_on_signals = true;
    spec.processes = &world;
    std::optional<ooc::cli::Progress> bar;
    spec.on_start = [&](ooc::Job& job, int passes) {
      if (jo.resume && !quiet) ooc::cli::say_resumed("ooceq", job);
      // One bar over both passes: the file is read twice.
      bar.emplace(progress, passes * job.source().spec().total_bytes(), "ooceq");
    };
    spec.progress = [&](std::int64_t d, std::int64_t t) {
      if (bar) bar->update(d, t);
    };
    const ooc::JobResult r = ooc::run_job(std::move(spec));
    if (bar) bar->finish();
    if (r.end != ooc::JobResult::End::done || world.rank() != 0)
      return ooc::cli::end_of_run("ooceq", report_cli, r);
    const ooc::PipelinePlan::Histogram& hist = r.histograms.at(0);
    if (!histogram.empty()) write_histogram(histogram, hist);

    // "bytes" of the input stay the file's; both passes' reads are reported apart.
    nlohmann::json extra;
    extra["passes"] = {{"histogram_seconds", r.passes[0].seconds},
                       {"map_seconds", r.passes[1].seconds},
                       {"bytes_read", r.passes[0].bytes_read + r.passes[1].bytes_read}};
    nlohmann::json channels = nlohmann::json::array();
    for (int c = 0; c < hist.channels; ++c) {
      const std::uint64_t* h = hist.counts.data() + c * hist.bins;
      std::int64_t lo = -1, hi = -1, distinct = 0;
      std::uint64_t samples = 0;
      for (std::int64_t v = 0; v < hist.bins; ++v) {
        if (h[v] == 0) continue;
        if (lo < 0) lo = v;
        hi = v;
        ++distinct;
        samples += h[v];
      }
      channels.push_back(
          {{"min", lo}, {"max", hi}, {"distinct_values", distinct}, {"samples", samples}});
    }
    extra["histogram"] = {{"bins", hist.bins}, {"channels", channels}};
    return ooc::cli::end_of_run("ooceq", report_cli, r, extra.dump());
  });
}
