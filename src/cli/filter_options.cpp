// Parsing and validation of the shared filter options (see filter_options.hpp).
#include "filter_options.hpp"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/limits.hpp"
#include "ooc/ops/chain.hpp"
#include "ooc/pipeline.hpp"

namespace ooc::cli {

namespace {

// Larger than any sensible radius, small enough that 2R+1 and byte counts cannot overflow.
constexpr std::int64_t kMaxRadius = std::int64_t{1} << 40;

std::string read_text_file(const std::string& path, std::size_t mem_limit) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorKind::input, system_message("cannot read taps file", path, errno));
  if (!S_ISREG(st.st_mode))
    throw Error(ErrorKind::usage,
                "taps file '" + path + "' is not a regular file: name a text file");
  // A tap takes at least two characters ("1,") in the file.
  if (filter_taps_bytes(st.st_size / 4) > mem_limit)
    throw Error(ErrorKind::usage, "taps file '" + path + "' (" + std::to_string(st.st_size) +
                                      " bytes) is too large for --mem-limit " +
                                      format_bytes(double(mem_limit)) +
                                      ": raise --mem-limit or use fewer taps");
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::input, "cannot read taps file '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Lines of a taps file without comments (#) and blank lines.
std::vector<std::string> taps_file_lines(const std::string& path, std::size_t mem_limit) {
  std::istringstream in(read_text_file(path, mem_limit));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r,") != std::string::npos) lines.push_back(line);
  }
  if (lines.empty() || lines.size() > 2)
    throw Error(
        ErrorKind::usage,
        "taps file '" + path + "' must hold one line of taps (both directions) or two (x, then y)");
  return lines;
}

// A double as the shortest text that reads back as the same double.
std::string exact_text(double v) {
  char s[64];
  const auto r = std::to_chars(s, s + sizeof s, v);
  return std::string(s, r.ptr);
}

// --border, --border-value, --out-type and --precision, shared by both kinds of filter.
template <class Params>
void result_options(const FilterCli& f, Params& params) {
  params.border = parse_border_mode(f.border);
  params.border_value = f.border_value;
  if (!f.out_type.empty()) params.out_type = parse_sample_type(f.out_type);
  if (f.precision == "f32") {
    params.precision = Precision::f32;
  } else if (f.precision == "f64") {
    params.precision = Precision::f64;
  } else if (f.precision != "auto") {
    throw Error(ErrorKind::usage, "--precision takes f32, f64 or auto, got '" + f.precision + "'");
  }
}

}  // namespace

void add_filter_options(CLI::App& app, FilterCli& f) {
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

std::size_t filter_taps_bytes(std::int64_t radius) {
  // Doubles given and reversed, in f32/f64 copies per direction, and a row pointer per tap.
  return static_cast<std::size_t>(2 * std::min(radius, kMaxRadius) + 1) * 64;
}

ooc::StageCall filter_stage(const FilterCli& f, std::size_t mem_limit) {
  if (mem_limit == 0) mem_limit = default_mem_limit();
  // Each value is checked by the declaration of the parameter it becomes, named as the option.
  StageCall call;
  auto arg = [&](const char* param, const std::string& value, const char* option) {
    check_stage_value(stage_parameter(call.name, param), value, option);
    call.args.emplace_back(param, value);
  };
  if (!f.kernel.empty()) {
    if (f.radius || f.sigma || f.filter_kind != "gaussian" || !f.taps.empty() ||
        !f.row_taps.empty() || !f.col_taps.empty() || !f.taps_file.empty())
      throw Error(ErrorKind::usage,
                  "--kernel excludes --radius, --sigma, --filter and the --taps options: give "
                  "one filter");
    call.name = "convolve";
    arg("kernel", f.kernel, "--kernel");
    arg("method", f.method, "--method");
    return call;
  }
  parse_conv_method(f.method);  // a bad --method is named as such, whatever the filter
  const bool explicit_taps =
      !f.taps.empty() || !f.row_taps.empty() || !f.col_taps.empty() || !f.taps_file.empty();
  if (explicit_taps) {
    if (f.radius || f.sigma || f.filter_kind != "gaussian")
      throw Error(ErrorKind::usage,
                  "explicit taps exclude --radius, --sigma and --filter: give one or the other");
    if (!f.taps.empty() + !f.taps_file.empty() + !(f.row_taps.empty() && f.col_taps.empty()) > 1)
      throw Error(ErrorKind::usage,
                  "give taps one way: --taps, --taps-file, or --row-taps/--col-taps");
    call.name = "separable";
    if (!f.taps.empty()) {
      arg("row", f.taps, "--taps");
      arg("col", f.taps, "--taps");
    } else if (!f.taps_file.empty()) {
      const auto lines = taps_file_lines(f.taps_file, mem_limit);
      arg("row", lines[0], f.taps_file.c_str());
      arg("col", lines.back(), f.taps_file.c_str());
    } else {
      // A direction without taps is left alone: the identity, one tap of 1.
      arg("row", f.row_taps.empty() ? "1" : f.row_taps, "--row-taps");
      arg("col", f.col_taps.empty() ? "1" : f.col_taps, "--col-taps");
    }
    arg("method", f.method, "--method");
    return call;
  }
  if (!f.radius && !f.sigma)
    throw Error(ErrorKind::usage,
                "no filter given: use --radius R, --sigma S, --taps or --kernel (see --help)");
  if (f.filter_kind != "gaussian" && f.filter_kind != "box")
    throw Error(ErrorKind::usage, "unknown --filter '" + f.filter_kind + "': use gaussian or box");
  if (f.filter_kind == "box" && f.sigma)
    throw Error(ErrorKind::usage, "--filter box takes --radius, not --sigma");
  call.name = f.filter_kind == "box" ? "uniform" : "gaussian";
  if (f.radius)
    check_stage_value(stage_parameter("gaussian", "radius"), std::to_string(*f.radius), "--radius");
  if (f.sigma)
    check_stage_value(stage_parameter("gaussian", "sigma"), exact_text(*f.sigma), "--sigma");
  // 1e-9: a sigma of k/3 typed in decimal (3 x 0.3333333333333334 is just over 1) is radius k.
  const double wanted = f.radius ? double(*f.radius) : std::ceil(3.0 * *f.sigma - 1e-9);
  const std::int64_t max_r = static_cast<std::int64_t>((mem_limit / filter_taps_bytes(0) - 1) / 2);
  if (wanted > double(max_r)) {
    const std::string given = f.radius ? std::to_string(*f.radius) : exact_text(*f.sigma);
    throw Error(ErrorKind::usage,
                std::string(f.radius ? "--radius" : "--sigma") + " " + given +
                    " makes a filter of " + std::to_string(std::int64_t(wanted) * 2 + 1) +
                    " taps, more than --mem-limit " + format_bytes(double(mem_limit)) +
                    " holds (at most radius " + std::to_string(max_r) +
                    "): lower the radius or sigma, or raise --mem-limit");
  }
  if (call.name == "uniform") {
    arg("size", std::to_string(2 * *f.radius + 1), "--radius");
  } else if (f.sigma) {
    arg("sigma", exact_text(*f.sigma), "--sigma");
    if (f.radius) arg("radius", std::to_string(*f.radius), "--radius");
  } else if (*f.radius == 0) {
    call = StageCall{"separable", {{"row", "1"}, {"col", "1"}}};  // no sigma for radius 0
  } else {
    // --radius alone: sigma R/3, as scipy's gaussian_filter(sigma=R/3, truncate=3).
    arg("sigma", exact_text(double(*f.radius) / 3.0), "--radius");
    arg("radius", std::to_string(*f.radius), "--radius");
  }
  arg("method", f.method, "--method");
  return call;
}

ooc::SeparableParams filter_params(const FilterCli& f, std::size_t mem_limit) {
  if (!f.kernel.empty()) return {};  // a 2-D kernel: conv2d_params() builds the filter
  SeparableParams params;
  params.filter = stage_taps(filter_stage(f, mem_limit));
  result_options(f, params);
  params.method = parse_conv_method(f.method);
  return params;
}

ooc::Conv2dParams conv2d_params(const FilterCli& f, std::size_t mem_limit) {
  if (mem_limit == 0) mem_limit = default_mem_limit();
  const StageCall call = filter_stage(f, mem_limit);
  if (call.name != "convolve") throw Error(ErrorKind::usage, "no --kernel given");
  Conv2dParams params;
  params.kernel = parse_kernel(f.kernel, mem_limit);
  result_options(f, params);
  params.method = parse_conv_method(f.method);
  return params;
}

}  // namespace ooc::cli
