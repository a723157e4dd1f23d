// The filter options of oocconv and ooccheck as command-line flags (see filter_options.hpp).
#include "filter_options.hpp"

#include <CLI/CLI.hpp>

#include "ooc/pipeline.hpp"

namespace ooc::cli {

void add_filter_options(CLI::App& app, FilterOptions& f) {
  // The filters are pipeline stages; their declarations say what the values mean.
  auto help = [](const char* stage, const char* param) {
    return stage_parameter(stage, param).help;
  };
  auto* g_f = app.add_option_group("Filter");
  g_f->add_option("--radius", f.radius,
                  "radius R: " + help("gaussian", "radius") + "; alone: sigma = R/3");
  g_f->add_option("--sigma", f.sigma,
                  help("gaussian", "sigma") + " (stage gaussian); alone: radius = ceil(3 sigma)");
  g_f->add_option("--filter", f.filter_kind,
                  "gaussian, or box (stage uniform, size 2R+1) with --radius")
      ->default_str("gaussian");
  g_f->add_option("--taps", f.taps, "taps a,b,c,... for both directions (stage separable)");
  g_f->add_option("--row-taps", f.row_taps, help("separable", "row"));
  g_f->add_option("--col-taps", f.col_taps, help("separable", "col"));
  g_f->add_option("--taps-file", f.taps_file, "file: one line of taps, or two (x then y)");
  g_f->add_option("--kernel", f.kernel,
                  stage_declaration("convolve").help + ": " + help("convolve", "kernel"));
  g_f->add_option("--border", f.border, "reflect mirror nearest wrap constant")
      ->default_str("reflect");
  g_f->add_flag("--planes", f.planes,
                "a volume: filter each plane in 2-D (default: in 3-D, the same filter along z)");
  g_f->add_option("--border-value", f.border_value, "value outside the image for constant")
      ->default_str("0");

  auto* g_r = app.add_option_group("Result");
  g_r->add_option("--out-type", f.out_type, "output sample type (default: the input's)");
  g_r->add_option("--precision", f.precision, "accumulate in f32, f64 or auto")
      ->default_str("auto");
  g_r->add_option("--method", f.method,
                  "auto (a cost model), direct, or fft (overlap-save: 2-D tiles for --kernel, 1-D "
                  "blocks along rows then columns for separable filters); --stats shows the pick")
      ->default_str("auto");
}

void add_nodata_option(CLI::App& group, std::string& text) {
  group
      .add_option("--nodata", text,
                  "samples that are holes: a value V (NaN is a hole too), nan, or none; "
                  "default: the input's GDAL_NODATA tag, else none. Linear stages normalize "
                  "over valid samples, rank stages count them only; holes stay holes")
      ->default_str("the input's tag");
}

}  // namespace ooc::cli
