// oocconv's filter options as a pipeline stage (ooc/filter_options.hpp), for every front end.
#include "ooc/filter_options.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/limits.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {

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

// --border, --border-value, --out-type and --precision, shared by both kinds of filter.
template <class Params>
void result_options(const FilterOptions& f, Params& params) {
  const PipelineSettings s = filter_settings(f);
  params.border = s.border;
  params.border_value = s.border_value;
  if (s.out_type) params.out_type = *s.out_type;
  params.precision = s.precision;
}

}  // namespace

std::size_t filter_taps_bytes(std::int64_t radius) {
  // Doubles given and reversed, in f32/f64 copies per direction, and a row pointer per tap.
  return static_cast<std::size_t>(2 * std::min(radius, kMaxRadius) + 1) * 64;
}

StageCall filter_stage(const FilterOptions& f, std::size_t mem_limit) {
  if (mem_limit == 0) mem_limit = default_mem_limit();
  // Each value is checked by the declaration of the parameter it becomes, named as the option.
  StageCall call;
  // Text the user wrote (taps, a method) is parsed for its parameter; numbers are checked.
  auto arg = [&](const char* param, const std::string& text, const char* option) {
    call.set(param, parse_stage_value(stage_parameter(call.name, param), text, option));
  };
  auto value = [&](const char* param, StageValue v, const char* option) {
    check_stage_value(stage_parameter(call.name, param), v, option);
    call.set(param, std::move(v));
  };
  parse_conv_method(f.method);  // a bad --method is named as such, whatever the filter
  if (!f.kernel.empty()) {
    if (f.radius || f.sigma || f.filter_kind != "gaussian" || !f.taps.empty() ||
        !f.row_taps.empty() || !f.col_taps.empty() || !f.taps_file.empty())
      throw Error(ErrorKind::usage,
                  "--kernel excludes --radius, --sigma, --filter and the --taps options: give "
                  "one filter");
    call.name = "convolve";
    // Read once, here: a bad kernel is a usage error before the input opens, and the stage
    // takes the kernel as values.
    value("kernel", parse_kernel(f.kernel, mem_limit), "--kernel");
    arg("method", f.method, "--method");
    return call;
  }
  const bool given_taps = !f.taps.empty() || f.taps_values;
  const bool given_rows = !f.row_taps.empty() || f.row_values;
  const bool given_cols = !f.col_taps.empty() || f.col_values;
  const bool explicit_taps = given_taps || given_rows || given_cols || !f.taps_file.empty();
  if (explicit_taps) {
    if (f.radius || f.sigma || f.filter_kind != "gaussian")
      throw Error(ErrorKind::usage,
                  "explicit taps exclude --radius, --sigma and --filter: give one or the other");
    if (given_taps + !f.taps_file.empty() + (given_rows || given_cols) > 1)
      throw Error(ErrorKind::usage,
                  "give taps one way: --taps, --taps-file, or --row-taps/--col-taps");
    call.name = "separable";
    // Taps as values are checked as the stage checks them; as text, parsed by it.
    auto taps = [&](const char* param, const std::optional<std::vector<double>>& values,
                    const std::string& text, const char* option) {
      if (values)
        value(param, *values, option);
      else
        arg(param, text.empty() ? "1" : text, option);
    };
    if (given_taps) {
      taps("row", f.taps_values, f.taps, "--taps");
      taps("col", f.taps_values, f.taps, "--taps");
    } else if (!f.taps_file.empty()) {
      const auto lines = taps_file_lines(f.taps_file, mem_limit);
      arg("row", lines[0], f.taps_file.c_str());
      arg("col", lines.back(), f.taps_file.c_str());
    } else {
      // A direction without taps is left alone: the identity, one tap of 1.
      taps("row", f.row_values, f.row_taps, "--row-taps");
      taps("col", f.col_values, f.col_taps, "--col-taps");
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
  if (f.radius) check_stage_value(stage_parameter("gaussian", "radius"), *f.radius, "--radius");
  if (f.sigma) check_stage_value(stage_parameter("gaussian", "sigma"), *f.sigma, "--sigma");
  const double wanted = f.radius ? double(*f.radius) : double(gaussian_radius(*f.sigma));
  const std::int64_t max_r = static_cast<std::int64_t>((mem_limit / filter_taps_bytes(0) - 1) / 2);
  if (wanted > double(max_r)) {
    const std::string given = format_stage_value(f.radius ? StageValue(*f.radius) : *f.sigma);
    throw Error(ErrorKind::usage,
                std::string(f.radius ? "--radius" : "--sigma") + " " + given +
                    " makes a filter of " + std::to_string(std::int64_t(wanted) * 2 + 1) +
                    " taps, more than --mem-limit " + format_bytes(double(mem_limit)) +
                    " holds (at most radius " + std::to_string(max_r) +
                    "): lower the radius or sigma, or raise --mem-limit");
  }
  if (call.name == "uniform") {
    value("size", 2 * *f.radius + 1, "--radius");
  } else if (f.sigma) {
    value("sigma", *f.sigma, "--sigma");
    if (f.radius) value("radius", *f.radius, "--radius");
  } else if (*f.radius == 0) {
    call = StageCall{"separable",
                     {{"row", std::vector<double>{1.0}},
                      {"col", std::vector<double>{1.0}}}};  // no sigma for radius 0
  } else {
    // --radius alone: sigma R/3, as scipy's gaussian_filter(sigma=R/3, truncate=3).
    value("sigma", double(*f.radius) / 3.0, "--radius");
    value("radius", *f.radius, "--radius");
  }
  arg("method", f.method, "--method");
  return call;
}

PipelineSettings pipeline_settings(const std::string& border, double border_value,
                                   const std::string& out_type, const std::string& precision) {
  PipelineSettings s;
  s.border = parse_border_mode(border);
  s.border_value = border_value;
  if (!out_type.empty()) s.out_type = parse_sample_type(out_type);
  s.precision = parse_precision(precision);
  return s;
}

PipelineSettings filter_settings(const FilterOptions& f) {
  PipelineSettings s = pipeline_settings(f.border, f.border_value, f.out_type, f.precision);
  s.planes = f.planes;
  apply_nodata(f.nodata, s);
  return s;
}

std::optional<double> parse_gdal_nodata(const std::string& text) {
  const std::size_t a = text.find_first_not_of(" \t"), b = text.find_last_not_of(" \t\n");
  if (a == std::string::npos) return std::nullopt;
  std::string t = text.substr(a, b - a + 1);
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (t == "nan" || t == "-nan" || t == "+nan") return std::numeric_limits<double>::quiet_NaN();
  if (t.front() == '+') t.erase(0, 1);
  double v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

void apply_nodata(const std::string& text, PipelineSettings& s, const std::string& what) {
  if (text.empty()) return;  // the input's tag decides (run_job)
  s.nodata_given = true;
  if (text == "none") {
    s.nodata.reset();
    return;
  }
  s.nodata = parse_gdal_nodata(text);
  if (!s.nodata || std::isinf(*s.nodata))
    throw Error(ErrorKind::usage, what + " takes a number, nan or none, got '" + text + "'");
}

SeparableParams filter_params(const FilterOptions& f, std::size_t mem_limit) {
  if (!f.kernel.empty()) return {};  // a 2-D kernel: conv2d_params() builds the filter
  SeparableParams params;
  params.filter = stage_taps(filter_stage(f, mem_limit));
  result_options(f, params);
  params.method = parse_conv_method(f.method);
  return params;
}

Conv2dParams conv2d_params(const FilterOptions& f, std::size_t mem_limit) {
  if (mem_limit == 0) mem_limit = default_mem_limit();
  const StageCall call = filter_stage(f, mem_limit);
  if (call.name != "convolve") throw Error(ErrorKind::usage, "no --kernel given");
  Conv2dParams params;
  params.kernel = std::get<Kernel2d>(*call.get("kernel"));
  result_options(f, params);
  params.method = parse_conv_method(f.method);
  return params;
}

}  // namespace ooc
