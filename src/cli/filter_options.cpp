// Parsing and validation of the shared filter options (see filter_options.hpp).
#include "filter_options.hpp"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/filter.hpp"
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
  auto* g_f = app.add_option_group("Filter");
  g_f->add_option("--radius", f.radius, "filter radius R (taps = 2R+1); alone: sigma = R/3");
  g_f->add_option("--sigma", f.sigma, "Gaussian sigma; alone: radius = ceil(3 sigma)");
  g_f->add_option("--filter", f.filter_kind, "gaussian or box")->default_str("gaussian");
  g_f->add_option("--taps", f.taps, "explicit taps a,b,c,... for both directions (odd count)");
  g_f->add_option("--row-taps", f.row_taps, "explicit taps along x");
  g_f->add_option("--col-taps", f.col_taps, "explicit taps along y");
  g_f->add_option("--taps-file", f.taps_file, "file: one line of taps, or two (x then y)");
  g_f->add_option("--kernel", f.kernel,
                  "2-D kernel (scipy.ndimage.convolve): a text or .npy file, box:N, "
                  "gaussian2d:SIGMA, laplace, sobel-x or sobel-y");
  g_f->add_option("--border", f.border, "reflect mirror nearest wrap constant")
      ->default_str("reflect");
  g_f->add_option("--border-value", f.border_value, "value outside the image for constant")
      ->default_str("0");

  auto* g_r = app.add_option_group("Result");
  g_r->add_option("--out-type", f.out_type, "output sample type (default: the input's)");
  g_r->add_option("--precision", f.precision, "accumulate in f32, f64 or auto")
      ->default_str("auto");
  g_r->add_option("--method", f.method,
                  "--kernel: direct sum, FFT (overlap-save tiles), or auto (a cost model; "
                  "--stats shows its pick)")
      ->default_str("auto");
}

std::size_t filter_taps_bytes(std::int64_t radius) {
  // Doubles given and reversed, in f32/f64 copies per direction, and a row pointer per tap.
  return static_cast<std::size_t>(2 * std::min(radius, kMaxRadius) + 1) * 64;
}

ooc::SeparableParams filter_params(const FilterCli& f, std::size_t mem_limit) {
  if (mem_limit == 0) mem_limit = default_mem_limit();
  if (!f.kernel.empty()) return {};  // a 2-D kernel: conv2d_params() builds the filter
  if (parse_conv_method(f.method) == ConvMethod::fft)
    throw Error(ErrorKind::usage,
                "--method fft is for 2-D kernels (--kernel); separable filters run directly: "
                "leave --method out");
  SeparableParams params;
  const bool explicit_taps =
      !f.taps.empty() || !f.row_taps.empty() || !f.col_taps.empty() || !f.taps_file.empty();
  if (explicit_taps) {
    if (f.radius || f.sigma || f.filter_kind != "gaussian")
      throw Error(ErrorKind::usage,
                  "explicit taps exclude --radius, --sigma and --filter: give one or the other");
    if (!f.taps.empty() + !f.taps_file.empty() + !(f.row_taps.empty() && f.col_taps.empty()) > 1)
      throw Error(ErrorKind::usage,
                  "give taps one way: --taps, --taps-file, or --row-taps/--col-taps");
    if (!f.taps.empty()) {
      params.filter.row = params.filter.col = parse_taps(f.taps, "--taps");
    } else if (!f.taps_file.empty()) {
      const auto lines = taps_file_lines(f.taps_file, mem_limit);
      params.filter.row = parse_taps(lines[0], f.taps_file);
      params.filter.col = parse_taps(lines.back(), f.taps_file);
    } else {
      // A direction without taps is left alone: the identity, one tap of 1.
      params.filter.row =
          f.row_taps.empty() ? std::vector<double>{1.0} : parse_taps(f.row_taps, "--row-taps");
      params.filter.col =
          f.col_taps.empty() ? std::vector<double>{1.0} : parse_taps(f.col_taps, "--col-taps");
    }
  } else {
    if (!f.radius && !f.sigma)
      throw Error(ErrorKind::usage,
                  "no filter given: use --radius R, --sigma S, --taps or --kernel (see --help)");
    if (f.radius && *f.radius < 0)
      throw Error(ErrorKind::usage, "--radius must be >= 0, got " + std::to_string(*f.radius));
    if (f.sigma && !(*f.sigma > 0 && std::isfinite(*f.sigma)))
      throw Error(ErrorKind::usage,
                  "--sigma must be a positive finite number, got " + std::to_string(*f.sigma));
    const char* option = f.radius ? "--radius" : "--sigma";
    // 1e-9: a sigma of k/3 typed in decimal (3 x 0.3333333333333334 is just over 1) is radius k.
    const double wanted = f.radius ? double(*f.radius) : std::ceil(3.0 * *f.sigma - 1e-9);
    const std::int64_t max_r = std::min<std::int64_t>(
        kMaxRadius, static_cast<std::int64_t>((mem_limit / filter_taps_bytes(0) - 1) / 2));
    if (wanted > double(max_r)) {
      char sigma[32];
      std::snprintf(sigma, sizeof sigma, "%g", f.sigma.value_or(0.0));
      const std::string given = f.radius ? std::to_string(*f.radius) : std::string(sigma);
      throw Error(ErrorKind::usage,
                  std::string(option) + " " + given + " makes a filter of " +
                      (wanted < 1e18 ? std::to_string(std::int64_t(wanted) * 2 + 1) : "over 1e18") +
                      " taps, more than --mem-limit " + format_bytes(double(mem_limit)) +
                      " holds (at most radius " + std::to_string(max_r) +
                      "): lower the radius or sigma, or raise --mem-limit");
    }
    const std::int64_t r = static_cast<std::int64_t>(wanted);
    std::vector<double> t;
    if (f.filter_kind == "gaussian") {
      t = gaussian_taps(r, f.sigma.value_or(0.0));
    } else if (f.filter_kind == "box") {
      if (f.sigma) throw Error(ErrorKind::usage, "--filter box takes --radius, not --sigma");
      t = box_taps(r);
    } else {
      throw Error(ErrorKind::usage,
                  "unknown --filter '" + f.filter_kind + "': use gaussian or box");
    }
    params.filter.row = params.filter.col = t;
  }
  result_options(f, params);
  return params;
}

ooc::Conv2dParams conv2d_params(const FilterCli& f, std::size_t mem_limit) {
  if (mem_limit == 0) mem_limit = default_mem_limit();
  if (f.radius || f.sigma || f.filter_kind != "gaussian" || !f.taps.empty() ||
      !f.row_taps.empty() || !f.col_taps.empty() || !f.taps_file.empty())
    throw Error(ErrorKind::usage,
                "--kernel excludes --radius, --sigma, --filter and the --taps options: give one "
                "filter");
  Conv2dParams params;
  params.kernel = parse_kernel(f.kernel, mem_limit);
  result_options(f, params);
  params.method = parse_conv_method(f.method);
  return params;
}

}  // namespace ooc::cli
