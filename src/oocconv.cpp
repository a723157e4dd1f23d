// oocconv: filter an image of any size with a separable convolution, band by band, in bounded
// memory.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "cli/common.hpp"
#include "cli/filter_options.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/io.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/pipeline.hpp"

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
  oocconv synth:noise null: --width 65536 --height 200000 --radius 16 --stats json
      Pipeline throughput on a synthetic image, nothing read from or written to disk.

Exit codes: 0 done, 2 usage, 3 bad input, 4 I/O (disk full, permissions), 5 GPU.
)";

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("oocconv", [&]() -> int {
    CLI::App app{
        "oocconv: out-of-core separable convolution of images larger than memory.\n"
        "Reads INPUT band by band, filters along x then y (scipy.ndimage.convolve1d "
        "semantics), writes OUTPUT."};
    app.footer(kExamples);
    app.get_formatter()->column_width(34);

    std::string input, output;
    app.add_option("INPUT", input,
                   "raw, .npy or TIFF image file, or synth:PATTERN (noise, gradient, checker, "
                   "gaussian-spots)")
        ->required();
    app.add_option(
           "OUTPUT", output,
           "raw, .npy or .tif file (written as OUTPUT.partial, renamed when done), or null:")
        ->required();

    ooc::RawHints hints;
    std::string type = "f32";
    std::uint64_t seed = 1;
    auto* g_in = app.add_option_group("Input");
    g_in->add_option("--width", hints.width, "samples per row (raw input: required)")
        ->check(ooc::cli::positive());
    g_in->add_option("--height", hints.height, "rows (raw: checked against the file size)")
        ->check(ooc::cli::positive());
    auto* type_opt = g_in->add_option("--type", type, "sample type: u8 u16 i16 u32 i32 f32 f64")
                         ->default_str("f32");
    auto* channels_opt =
        g_in->add_option("--channels", hints.channels, "interleaved channels, 1 to 4")
            ->default_str("1");
    g_in->add_option("--seed", seed, "seed of a synth: input")->default_str("1");
    g_in->add_option("--in-format", hints.format, "auto (magic bytes), raw, npy or tiff")
        ->default_str("auto");
    g_in->add_option("--page", hints.page, "TIFF: the page (image) to read, from 0")
        ->default_str("0")
        ->check(CLI::NonNegativeNumber);

    ooc::cli::FilterCli filter;
    ooc::cli::add_filter_options(app, filter);

    ooc::SinkOptions out_options;
    ooc::cli::add_output_options(*app.add_option_group("Output file"), out_options);

    ooc::PipelineOptions popt;
    std::optional<std::string> mem_limit;
    std::string device = "auto", devices = "all";
    auto* g_p = app.add_option_group("Pipeline");
    g_p->add_option("--mem-limit", mem_limit,
                    "memory for the band ring, e.g. 512M, 4G (default: min(1G, RAM/4))");
    g_p->add_option("--threads", popt.threads, "worker threads (default: all cores)")
        ->check(CLI::Range(1, ooc::kMaxThreads));
    g_p->add_option("--band-rows", popt.band_rows, "output rows per band (default: planned)")
        ->check(ooc::cli::positive());
    g_p->add_option("--slots", popt.slots, "bands in flight (default: threads + 2)")
        ->check(CLI::Range(1, 1 << 16));
    g_p->add_option("--device", device, "auto (CUDA when a GPU is usable), cpu or cuda")
        ->default_str("auto");
    g_p->add_option("--devices", devices, "GPUs to use: all, or a list like 0,1")
        ->default_str("all");

    bool progress = ooc::cli::stderr_is_terminal(), quiet = false;
    std::string stats;
    auto* g_r = app.add_option_group("Reporting");
    g_r->add_flag("--progress,!--no-progress", progress,
                  "progress bar on stderr (default: if a terminal)");
    g_r->add_option("--stats", stats, "print a summary on stdout: json or text");
    g_r->add_flag("-q,--quiet", quiet, "no summary line on stderr");

    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "oocconv")) return *code;
    using ooc::Error;
    using ooc::ErrorKind;
    if (!stats.empty() && stats != "json" && stats != "text")
      throw Error(ErrorKind::usage, "--stats takes json or text, got '" + stats + "'");
    hints.type = ooc::parse_sample_type(type);
    hints.type_given = type_opt->count() > 0;
    hints.channels_given = channels_opt->count() > 0;
    if (mem_limit) popt.mem_limit = ooc::parse_size(*mem_limit, "--mem-limit");

    const ooc::SeparableParams params = ooc::cli::filter_params(filter, popt.mem_limit);
    if (device != "auto" && device != "cpu" && device != "cuda")
      throw Error(ErrorKind::usage, "--device takes auto, cpu or cuda, got '" + device + "'");
    std::vector<int> gpu_list;  // empty: all
    if (devices != "all") {
      std::istringstream in(devices);
      for (std::string tok; std::getline(in, tok, ',');) {
        try {
          std::size_t pos = 0;
          gpu_list.push_back(std::stoi(tok, &pos));
          if (pos != tok.size()) throw std::invalid_argument(tok);
        } catch (const std::exception&) {
          throw Error(ErrorKind::usage,
                      "--devices takes all or a list like 0,1; got '" + devices + "'");
        }
      }
    }
    const bool use_cuda = device == "cuda" || (device == "auto" && ooc::cuda_device_count() > 0);

    auto source = ooc::open_source(input, hints, seed);
    auto op = use_cuda ? ooc::make_separable_cuda(source->spec(), params, popt, gpu_list)
                       : ooc::make_separable_cpu(source->spec(), params, popt);
    out_options.metadata = source->metadata();
    out_options.mem_limit = popt.mem_limit;
    out_options.threads = popt.threads;
    auto sink = ooc::create_sink(output, op->output_spec(), input, out_options);
    const ooc::BandPlan plan = ooc::plan_bands(source->spec(), *op, popt, source.get(), sink.get());

    ooc::cli::Progress bar(progress, source->spec().total_bytes());
    const ooc::RunStats st =
        ooc::run_pipeline(*source, *sink, *op, plan,
                          [&](std::int64_t done, std::int64_t total) { bar.update(done, total); });
    bar.finish();
    sink->commit();

    const double secs = st.seconds > 0 ? st.seconds : 1e-9;
    const double mpix = static_cast<double>(st.pixels) / secs / 1e6;
    const double mbps = static_cast<double>(st.bytes_read) / secs / 1e6;
    const std::size_t rss = ooc::cli::peak_rss_bytes();
    std::string report;
    if (stats == "json") {
      nlohmann::json j;
      j["input"] = {{"path", input},
                    {"description", source->describe()},
                    {"width", source->spec().width},
                    {"height", source->spec().height},
                    {"channels", source->spec().channels},
                    {"type", std::string(ooc::name(source->spec().type))},
                    {"bytes", st.bytes_read}};
      j["output"] = {{"path", output},
                     {"type", std::string(ooc::name(op->output_spec().type))},
                     {"bytes", st.bytes_written}};
      j["operation"] = op->describe();
      j["backend"] = op->backend();
      j["plan"] = {{"band_rows", plan.band_rows},
                   {"bands", plan.bands},
                   {"slots", plan.slots},
                   {"threads", plan.threads},
                   {"mem_limit_bytes", plan.mem_limit},
                   {"ring_bytes", plan.ring_bytes}};
      j["seconds"] = {{"total", st.seconds},
                      {"setup", st.setup_seconds},
                      {"read_stage", st.read_seconds},
                      {"compute_stage", st.compute_seconds},
                      {"write_stage", st.write_seconds}};
      // Streaming: bands only, without the one-off setup (pinned and GPU buffers).
      const double stream_s = std::max(st.seconds - st.setup_seconds, 1e-9);
      j["throughput"] = {{"mpixel_per_s", mpix},
                         {"input_mb_per_s", mbps},
                         {"streaming_input_mb_per_s", double(st.bytes_read) / stream_s / 1e6}};
      j["pixels"] = st.pixels;
      j["peak_rss_bytes"] = rss;
      report = j.dump(2) + "\n";
    } else if (stats == "text") {
      std::ostringstream t;
      t << "input        " << source->describe() << "\n"
        << "output       " << sink->describe() << "\n"
        << "operation    " << op->describe() << "\n"
        << "backend      " << op->backend() << "\n"
        << "plan         " << plan.bands << " bands of " << plan.band_rows << " rows, "
        << plan.slots << " slots, " << plan.threads << " threads, ring "
        << ooc::format_bytes(double(plan.ring_bytes)) << " of "
        << ooc::format_bytes(double(plan.mem_limit)) << "\n"
        << "seconds      " << st.seconds << " (setup " << st.setup_seconds << ", read "
        << st.read_seconds << ", compute " << st.compute_seconds << ", write " << st.write_seconds
        << ")\n"
        << "throughput   " << mpix << " Mpixel/s, " << mbps << " MB/s\n"
        << "peak RSS     " << ooc::format_bytes(double(rss)) << "\n";
      report = t.str();
    }
    // The output is in place by now: a report that cannot be written is still an error (exit 4),
    // since a batch script reads it, but the message says the output itself is fine.
    if (!report.empty())
      ooc::cli::write_report(report, output == "null:" ? std::string("the run itself succeeded")
                                                       : "output '" + output + "' is complete");
    if (!quiet && stats.empty()) {
      std::fprintf(stderr, "oocconv: %s -> %s: %.2f s, %.1f Mpixel/s, %.1f MB/s, %s, peak RSS %s\n",
                   source->describe().c_str(), output.c_str(), st.seconds, mpix, mbps,
                   op->backend().c_str(), ooc::format_bytes(double(rss)).c_str());
    }
    return 0;
  });
}
