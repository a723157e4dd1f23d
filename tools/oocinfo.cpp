// oocinfo: what oocconv would see. Without files: the CUDA devices, the CPU, and the backend
// `--device auto` would pick. With files: each one's format, geometry and size, and the band plan
// oocconv (or ooceq, with --equalize) would use for it under the current --mem-limit; for a Zarr
// store, every array (every level of an OME-Zarr group) with its shape, chunks and codec.
#include <tbb/info.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/filter_options.hpp"
#include "cli/main.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "io/formats.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/device.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/filter_options.hpp"
#include "ooc/io.hpp"
#include "ooc/limits.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/ops/separable.hpp"
#include "ooc/pipeline.hpp"

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("oocinfo", [&]() -> int {
    CLI::App app{"oocinfo: the devices oocconv can use, and what it would make of image files."};
    app.footer(R"(
Examples:
  oocinfo                                   devices, CPU, and the backend --device auto picks
  oocinfo scan.npy big.raw --width 65536    format, geometry and band plan of each file
  oocinfo slide.tif --page 2                TIFF layout: strips/tiles, compression, BigTIFF
  oocinfo stack.tif --pages 10:20           a z-stack's planes 10 to 19 (a volume)
  oocinfo scan.ome.zarr                     OME-Zarr levels: shapes, scales, chunks, codecs
  oocinfo big.raw --width 65536 --mem-limit 4G --radius 64
  oocinfo big.raw --width 65536 --kernel box:31      the plan of a 2-D kernel
  oocinfo scan.tif --equalize                        the plan of ooceq's two passes
  oocinfo big.raw --width 65536 --pipeline 'gaussian sigma=2 ! equalize'
                                            the passes of an oocrun pipeline, and their plan
)");
    std::vector<std::string> files;
    ooc::RawHints hints;
    std::string type = "f32", device = "auto";
    std::optional<std::string> mem_limit;
    std::int64_t radius = 16;
    app.add_option("FILES", files, "image files (raw needs --width)");
    app.add_option("--width", hints.width, "samples per row (raw files)");
    app.add_option("--height", hints.height,
                   "rows of a plane (raw: checked against the size; k whole planes: a volume)");
    app.add_option("--depth", hints.depth, "planes of a volume (raw: the height follows)");
    bool volume = false;
    app.add_flag("--volume", volume, ".npy: a 3-D array is (planes, height, width)");
    auto* type_opt = app.add_option("--type", type, "u8 u16 i16 u32 i32 f32 f64 (raw files)");
    auto* channels_opt = app.add_option("--channels", hints.channels, "channels (raw files)");
    app.add_option("--in-format", hints.format, "auto, raw, npy, tiff or zarr")
        ->default_str("auto");
    int page = 0;
    auto* page_opt = app.add_option("--page", page,
                                    "TIFF: the page to describe, from 0 (default: "
                                    "the pages, alike, as a volume's planes)")
                         ->default_str("0");
    std::string pages;
    app.add_option("--pages", pages, "TIFF: the planes A:B of a z-stack, as a Python slice");
    int level = -1;
    app.add_option("--input-level", level, "OME-Zarr: the level the plan is made for, from 0");
    app.add_option("--mem-limit", mem_limit,
                   "as for oocconv (default: oocinfo without files says it)");
    app.add_option("--radius", radius, "filter radius the plan is made for")->default_str("16");
    std::string kernel;
    bool equalize = false;
    app.add_option("--kernel", kernel, "2-D kernel the plan is made for, as for oocconv");
    app.add_flag("--equalize", equalize, "the plan of ooceq (two passes) instead");
    std::string pipeline;
    app.add_option("--pipeline", pipeline,
                   "the plan of this oocrun pipeline instead ('STAGE k=v ! STAGE ...'; oocrun "
                   "--list shows the stages)");
    app.add_option("--device", device, "backend the plan is made for: auto, cpu or cuda")
        ->default_str("auto");
    std::string voxel_size;
    app.add_option("--voxel-size", voxel_size,
                   "z,y,x (or y,x) micrometres, instead of the file's, for --pipeline's sigma-um");
    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "oocinfo")) return *code;
    const ooc::VoxelSize voxel =
        voxel_size.empty() ? ooc::VoxelSize{} : ooc::parse_voxel_size(voxel_size, "--voxel-size");
    hints.type = ooc::parse_sample_type(type);
    hints.type_given = type_opt->count() > 0;
    hints.channels_given = channels_opt->count() > 0;
    ooc::EngineOptions popt;
    if (mem_limit) popt.mem_limit = ooc::parse_size(*mem_limit, "--mem-limit");
    if (device != "auto" && device != "cpu" && device != "cuda")
      throw ooc::Error(ooc::ErrorKind::usage, "--device takes auto, cpu or cuda");

    const auto gpus = ooc::cuda_devices();
    const bool use_cuda = device == "cuda" || (device == "auto" && !gpus.empty());
    if (files.empty()) {
      std::printf("CUDA devices: %zu\n", gpus.size());
      for (const auto& g : gpus)
        std::printf("  %d: %s, compute %d.%d, %d SMs, %s (%s free), %d copy engines, PCI %s%s%s\n",
                    g.index, g.name.c_str(), g.cc_major, g.cc_minor, g.sms,
                    ooc::format_bytes(double(g.memory_total)).c_str(),
                    ooc::format_bytes(double(g.memory_free)).c_str(), g.copy_engines,
                    g.pci_bus_id.c_str(), g.pcie_link.empty() ? "" : ", link ",
                    g.pcie_link.c_str());
      const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
      const ooc::MachineLimits& limits = ooc::machine_limits_cached();
      std::printf("CPU: %ld cores, %s RAM, kernels %s\n", ::sysconf(_SC_NPROCESSORS_ONLN),
                  ooc::format_bytes(double(pages) * double(page)).c_str(), ooc::cpu_kernels_isa());
      std::printf("default --threads: %d, from %s\n", ooc::default_threads(),
                  limits.cpus_from.c_str());
      std::printf("default --mem-limit: %s, %s\n",
                  ooc::format_bytes(double(ooc::default_budget().bytes)).c_str(),
                  ooc::default_budget().from.c_str());
      std::printf("oocconv --device auto would use: %s\n",
                  use_cuda ? ("cuda (" + gpus.front().name +
                              ") for large images, the CPU where the GPU's start-up would cost "
                              "more than it saves: give files for the estimate")
                                 .c_str()
                           : "cpu");
      return 0;
    }

    ooc::FilterOptions filter;
    if (kernel.empty()) filter.radius = radius;  // a 2-D kernel has its own size
    filter.kernel = kernel;
    if (equalize + !kernel.empty() + !pipeline.empty() > 1)
      throw ooc::Error(ooc::ErrorKind::usage, "--equalize, --kernel and --pipeline: pick one");
    // Checked before any file is opened, as oocrun does: a bad stage is a usage error first.
    const std::vector<ooc::StageCall> stages =
        pipeline.empty() ? std::vector<ooc::StageCall>{} : ooc::parse_pipeline({pipeline});
    std::optional<ooc::Conv2dParams> params2d;
    ooc::SeparableParams params;
    if (!kernel.empty())
      params2d = ooc::conv2d_params(filter, popt.mem_limit);
    else
      params = ooc::filter_params(filter, popt.mem_limit);
    for (const auto& path : files) {
      // Raw options describe the raw files; a file with a header describes itself.
      const bool headerless =
          hints.format == "raw" || (hints.format == "auto" && ooc::detect_format(path) == "raw");
      ooc::RawHints file_hints = headerless ? hints : ooc::RawHints{};
      file_hints.page = page;
      file_hints.page_given = page_opt->count() > 0;
      file_hints.pages = pages;
      file_hints.volume = volume;
      file_hints.zarr_level = level;
      auto source = ooc::open_source(path, file_hints);
      const ooc::ImageSpec& s = source->spec();
      std::error_code ec;
      const bool store = std::filesystem::is_directory(path, ec);
      std::uintmax_t size = 0;
      if (!store) size = std::filesystem::file_size(path, ec);
      // A store's size is its files' (chunks and metadata), links not followed.
      for (auto it = store ? std::filesystem::recursive_directory_iterator(path, ec)
                           : std::filesystem::recursive_directory_iterator();
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && !it->is_symlink(ec)) size += it->file_size(ec);
      // The operations of the tool the plan is for: ooceq plans both of its passes at once.
      std::vector<std::unique_ptr<ooc::Operation>> ops;
      std::unique_ptr<ooc::PipelinePlan> passes;
      std::vector<const ooc::Operation*> views;
      std::string what;
      if (!stages.empty()) {
        ooc::PipelineSettings settings;
        settings.voxel = voxel.known() ? voxel : source->metadata().voxel;
        settings.nodata = ooc::parse_gdal_nodata(source->metadata().geo.gdal_nodata);
        passes = std::make_unique<ooc::PipelinePlan>(s, stages, settings, popt);
        views = passes->operations();
        what = "the pipeline (" + std::to_string(passes->passes()) + " pass" +
               (passes->passes() > 1 ? "es" : "") + ", halo " +
               std::to_string(views.back()->halo()) + " rows)";
      } else if (equalize) {
        ops.push_back(ooc::make_histogram(s));
        ops.push_back(ooc::make_lut(s));
        what = "equalization (2 passes)";
      } else if (params2d) {
        ops.push_back(ooc::make_conv2d(s, *params2d, popt));
        what = "--kernel " + kernel;
      } else {
        ops.push_back(ooc::make_separable(s, params, popt));
        what = "radius " + std::to_string(radius);
      }
      for (const auto& op : ops) views.push_back(op.get());
      const ooc::Workload work = ooc::workload(s, s.height, popt.threads);
      const ooc::Backend backend = ooc::select_backend(device, "all", views, &work);
      const ooc::BandPlan plan = ooc::plan_bands(s, views, backend, popt, source.get());
      std::printf(
          "%s\n  %s\n%s  %s %llu bytes, image %llu bytes (%s%lld x %lld pixels, %d channel(s) "
          "of %s)\n  %s\n  plan for %s on %s: %lld bands of %lld rows, %d slots, %d "
          "threads, %s, ring %s of --mem-limit %s%s\n  backend: %s\n",
          path.c_str(), source->describe().c_str(),
          source->layout().empty() ? "" : ("  layout: " + source->layout() + "\n").c_str(),
          store ? "store" : "file", (unsigned long long)size, (unsigned long long)s.total_bytes(),
          s.volume() ? (std::to_string(s.depth) + " planes of ").c_str() : "", (long long)s.width,
          (long long)s.height, s.channels, std::string(ooc::name(s.type)).c_str(),
          (passes ? views.back() : views.front())->describe().c_str(), what.c_str(),
          backend.describe().c_str(), (long long)plan.bands, (long long)plan.band_rows, plan.slots,
          plan.threads,
          plan.tile_cols > 0 ? ("tiles of " + std::to_string(plan.tile_cols) + " columns").c_str()
                             : "whole rows",
          ooc::format_bytes(double(plan.ring_bytes)).c_str(),
          ooc::format_bytes(double(plan.mem_limit)).c_str(),
          plan.estimate_seconds > 0
              ? (", estimated " + std::to_string(plan.estimate_seconds).substr(0, 6) + " s").c_str()
              : "",
          backend.why.c_str());
      // Where the file says it (or --voxel-size): what sigma-um divides, what outputs record.
      if (const ooc::VoxelSize& v = voxel.known() ? voxel : source->metadata().voxel; v.known())
        std::printf("  voxel size: %s\n", ooc::describe_voxel(v).c_str());
      // The holes a run takes by default (oocrun and oocconv --nodata).
      if (const auto nd = ooc::parse_gdal_nodata(source->metadata().geo.gdal_nodata))
        std::printf("  nodata: %s (GDAL_NODATA)\n",
                    std::isnan(*nd) ? "nan" : source->metadata().geo.gdal_nodata.c_str());
      if (passes)  // what each stage computes with (the FFT or the direct sum, the accumulator)
        for (const std::string& stage : passes->stage_descriptions())
          std::printf("  stage: %s\n", stage.c_str());
      if (store)
        for (const std::string& line : ooc::describe_zarr_store(path))
          std::printf("  %s\n", line.c_str());
      if (backend.cuda) {
        bool same_bits = true;
        for (const auto* op : views) same_bits = same_bits && op->cpu_gives_cuda_bits();
        std::string start;
        if (plan.cpu_start_bands > 0)
          start = "the first " + std::to_string(plan.cpu_start_bands) + " band(s) (--cpu-start)";
        else if (plan.cpu_start_bands < 0 && same_bits)
          start = "every band until the GPU is ready (--cpu-start auto)";
        else if (plan.cpu_start_bands < 0)
          start = "none: the CPU's kernels do not give the GPU's bytes for this operation";
        else if (popt.cpu_start_bands != 0)
          start = "none: its buffers do not fit beside the pinned ring under --mem-limit";
        else
          start = "none (--cpu-start off)";
        std::printf("  on the CPU while CUDA starts: %s\n", start.c_str());
      }
    }
    return 0;
  });
}
