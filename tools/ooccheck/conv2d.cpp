// ooccheck OUT IN --kernel K: the 2-D convolution (scipy.ndimage.convolve), the kernel read or
// built here from oocconv's documented definitions, every tap of the K x L window summed in
// float64 per sample whatever path oocconv took.
#include <sys/stat.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "cli/filter_options.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/separable.hpp"

namespace ooc::check {
namespace {

// oocconv refuses longer sides, so no OUT comes from them; the reference would take them.
constexpr std::int64_t kMaxKernelSide = 4097;

// The kernel and how it was made.
struct OwnKernel : KernelTaps {
  std::string recipe;  // "gaussian2d sigma 1.5 (radius 5)", "text file k.txt", ...
};

OwnKernel outer_kernel(const std::vector<double>& col, const std::vector<double>& row,
                       std::string recipe) {
  OwnKernel k;
  k.rows = static_cast<std::int64_t>(col.size());
  k.cols = static_cast<std::int64_t>(row.size());
  for (const double c : col)
    for (const double r : row) k.taps.push_back(c * r);
  k.recipe = std::move(recipe);
  return k;
}

double kernel_argument(const std::string& spec, const std::string& arg) {
  char* end = nullptr;
  const double v = std::strtod(arg.c_str(), &end);
  if (arg.empty() || end != arg.c_str() + arg.size() || !std::isfinite(v))
    throw Error(ErrorKind::usage, "--kernel " + spec + ": '" + arg + "' is not a finite number");
  return v;
}

OwnKernel own_builtin_kernel(const std::string& spec) {
  const std::size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
  if (name == "box" && colon != std::string::npos) {
    const double n = kernel_argument(spec, arg);
    if (!(n >= 1 && n <= double(kMaxKernelSide) && n == std::floor(n) && std::fmod(n, 2) == 1))
      throw Error(ErrorKind::usage, std::string("--kernel box:N takes an odd N from 1 to ") +
                                        std::to_string(kMaxKernelSide) + ", got " + arg);
    const auto side = static_cast<std::int64_t>(n);
    // The mean of the N x N window: every tap 1 / N^2.
    OwnKernel k;
    k.rows = k.cols = side;
    k.taps.assign(static_cast<std::size_t>(side * side), 1.0 / (n * n));
    k.recipe = std::string("box ") + std::to_string(side) + " x " + std::to_string(side);
    return k;
  }
  if (name == "gaussian2d" && colon != std::string::npos) {
    const double sigma = kernel_argument(spec, arg);
    if (!(sigma > 0) || 3 * sigma > double((kMaxKernelSide - 1) / 2))
      throw Error(ErrorKind::usage,
                  std::string("--kernel gaussian2d:SIGMA takes a sigma above 0 and at most ") +
                      number(double((kMaxKernelSide - 1) / 2) / 3) + ", got " + arg);
    // The outer product of the normalized 1-D Gaussian of radius ceil(3 sigma) with itself (1e-9:
    // as for --sigma, a sigma of k/3 typed in decimal is radius k).
    const auto r = static_cast<std::int64_t>(std::ceil(3 * sigma - 1e-9));
    const std::vector<double> g = own_gaussian(r, sigma);
    return outer_kernel(
        g, g,
        std::string("gaussian2d sigma ") + number(sigma) + " (radius " + std::to_string(r) + ")");
  }
  // The 3 x 3 operators from their definitions: the 4-neighbour Laplacian, and Sobel's central
  // difference along one axis times the [1 2 1] smoothing along the other.
  if (spec == "laplace") {
    OwnKernel k;
    k.rows = k.cols = 3;
    k.taps = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    k.recipe = "laplace (4-neighbour)";
    return k;
  }
  if (spec == "sobel-x") return outer_kernel({1, 2, 1}, {-1, 0, 1}, "sobel-x");
  if (spec == "sobel-y") return outer_kernel({-1, 0, 1}, {1, 2, 1}, "sobel-y");
  throw Error(ErrorKind::usage, "--kernel '" + spec +
                                    "' is neither a file nor a built-in kernel: use a text or .npy "
                                    "file, box:N, gaussian2d:SIGMA, laplace, sobel-x or sobel-y");
}

// Rows of numbers between commas and white space; '#' starts a comment; lines without numbers
// are skipped; every row as long as the first.
OwnKernel own_text_kernel(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::input, "cannot read kernel file '" + path + "'");
  OwnKernel k;
  k.recipe = "text file " + path;
  std::int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::vector<std::string> tokens = ooc::check::line_tokens(line);
    for (const std::string& token : tokens) {
      char* end = nullptr;
      const double v = std::strtod(token.c_str(), &end);
      const bool number_ok = end == token.c_str() + token.size();
      if (!number_ok || !std::isfinite(v))
        throw Error(ErrorKind::usage, "kernel file '" + path + "' line " + std::to_string(line_no) +
                                          ": '" + token + "' is not " +
                                          (number_ok ? "finite" : "a number"));
      k.taps.push_back(v);
    }
    const auto count = static_cast<std::int64_t>(tokens.size());
    if (count == 0) continue;
    if (k.rows > 0 && count != k.cols)
      throw Error(ErrorKind::usage, "kernel file '" + path + "' line " + std::to_string(line_no) +
                                        " has " + std::to_string(count) + " taps, the first row " +
                                        std::to_string(k.cols) + ": every row needs as many");
    k.cols = count;
    // Stop reading what oocconv refuses anyway before it takes the memory.
    if (++k.rows > kMaxKernelSide || k.cols > kMaxKernelSide)
      throw Error(ErrorKind::usage, "kernel file '" + path + "' is larger than " +
                                        std::to_string(kMaxKernelSide) +
                                        " on a side: oocconv refuses it");
  }
  return k;
}

// A 2-D array of a real dtype (bool, integers of 1 to 8 bytes, float16/32/64; shape (K, L) or
// (K, L, 1); C or Fortran order), read here from its header's text, apart from oocconv's reader.
OwnKernel own_npy_kernel(const std::string& path) {
  const std::string what =
      "; a kernel file is a 2-D .npy array of real numbers (bool, int8 to int64, uint8 to "
      "uint64, float16, float32 or float64)";
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::usage, "kernel file '" + path + "' " + why + what);
  };
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw bad("is not a .npy file");
  const auto u8 = [&](std::size_t i) { return static_cast<std::size_t>(std::uint8_t(bytes[i])); };
  const bool v1 = bytes[6] == 1;
  const std::size_t header_len = v1 ? u8(8) | u8(9) << 8
                                 : bytes.size() < 12
                                     ? 0
                                     : u8(8) | u8(9) << 8 | u8(10) << 16 | u8(11) << 24;
  const std::size_t data = (v1 ? 10 : 12) + header_len;
  if (header_len == 0 || data > bytes.size()) throw bad("has a damaged header");
  const std::string header = bytes.substr(v1 ? 10 : 12, header_len);
  auto value_of = [&](const std::string& key) {
    const std::size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) throw bad("has no " + key + " in its header");
    std::size_t from = header.find(':', at) + 1;
    while (from < header.size() && header[from] == ' ') ++from;
    const char close = header[from] == '(' ? ')' : header[from] == '\'' ? '\'' : ',';
    const std::size_t to = header.find(close, from + 1);
    return header.substr(from, to == std::string::npos ? std::string::npos : to + 1 - from);
  };
  const std::string descr = value_of("descr");  // '<f8'
  if (descr.size() != 5) throw bad("has dtype " + descr);
  const char order = descr[1], kind = descr[2];
  const int width = descr[3] - '0';
  const bool real =
      (kind == 'b' && width == 1) ||
      ((kind == 'i' || kind == 'u') && (width == 1 || width == 2 || width == 4 || width == 8)) ||
      (kind == 'f' && (width == 2 || width == 4 || width == 8));
  if (!real) throw bad("has dtype " + descr);
  const bool fortran = value_of("fortran_order").rfind("True", 0) == 0;
  std::vector<std::int64_t> dims;
  const std::string shape = value_of("shape");
  for (std::size_t i = 0; i < shape.size();) {
    if (std::isdigit(static_cast<unsigned char>(shape[i]))) {
      std::size_t used = 0;
      dims.push_back(std::stoll(shape.substr(i), &used));
      i += used;
    } else {
      ++i;
    }
  }
  if (dims.size() != 2 && !(dims.size() == 3 && dims[2] == 1)) throw bad("has shape " + shape);
  if (dims[0] > kMaxKernelSide || dims[1] > kMaxKernelSide)
    throw Error(ErrorKind::usage, "kernel file '" + path + "' is larger than " +
                                      std::to_string(kMaxKernelSide) +
                                      " on a side: oocconv refuses it");
  OwnKernel k;
  k.rows = dims[0];
  k.cols = dims[1];
  k.recipe = ".npy file " + path;
  const std::size_t n = static_cast<std::size_t>(k.rows * k.cols);
  if (bytes.size() < data + n * static_cast<std::size_t>(width)) throw bad("is truncated");
  k.taps.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    // The sample's bytes in little-endian order.
    unsigned char b[8] = {};
    for (int j = 0; j < width; ++j)
      b[j] =
          static_cast<unsigned char>(bytes[data + i * width + (order == '>' ? width - 1 - j : j)]);
    std::uint64_t bits = 0;
    for (int j = width - 1; j >= 0; --j) bits = bits << 8 | b[j];
    double v = 0;
    if (kind == 'f' && width == 8) {
      std::memcpy(&v, &bits, 8);
    } else if (kind == 'f' && width == 4) {
      const auto w = static_cast<std::uint32_t>(bits);
      float f;
      std::memcpy(&f, &w, 4);
      v = f;
    } else if (kind == 'f') {  // IEEE half: sign, 5 exponent bits (bias 15), 10 fraction bits
      const int e = static_cast<int>(bits >> 10 & 31), m = static_cast<int>(bits & 1023);
      v = e == 0    ? std::ldexp(m, -24)
          : e == 31 ? (m ? std::numeric_limits<double>::quiet_NaN()
                         : std::numeric_limits<double>::infinity())
                    : std::ldexp(1024 + m, e - 25);
      if (bits & 0x8000) v = -v;
    } else if (kind == 'i') {
      const std::uint64_t sign = std::uint64_t{1} << (8 * width - 1);
      v = (bits & sign) ? -static_cast<double>((~bits + 1) & (sign | (sign - 1)))
                        : static_cast<double>(bits);
    } else {
      v = static_cast<double>(bits);
    }
    const std::size_t at =
        fortran ? (i % static_cast<std::size_t>(k.rows)) * static_cast<std::size_t>(k.cols) +
                      i / static_cast<std::size_t>(k.rows)
                : i;
    k.taps[at] = v;
  }
  return k;
}

// --kernel as oocconv takes it: an existing path is a file (.npy by its magic bytes, else text),
// anything else the name of a built-in.
OwnKernel own_kernel(const std::string& spec) {
  OwnKernel k;
  struct stat st {};
  if (::stat(spec.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw Error(ErrorKind::usage, "kernel file '" + spec + "' is not a regular file");
    char magic[6] = {};
    std::ifstream(spec, std::ios::binary).read(magic, sizeof magic);
    k = std::memcmp(magic, "\x93NUMPY", 6) == 0 ? own_npy_kernel(spec) : own_text_kernel(spec);
  } else {
    k = own_builtin_kernel(spec);
  }
  if (k.rows == 0 || k.cols == 0)
    throw Error(ErrorKind::usage, "kernel '" + spec + "' has no taps");
  if (k.rows % 2 == 0 || k.cols % 2 == 0)
    throw Error(ErrorKind::usage, "kernel '" + spec + "' is " + std::to_string(k.rows) + " x " +
                                      std::to_string(k.cols) +
                                      ": both sides must be odd (the centre is the origin)");
  for (const double t : k.taps)
    if (!std::isfinite(t))
      throw Error(ErrorKind::usage, "kernel '" + spec + "' holds a tap that is not finite");
  return k;
}

// Checks the options as oocconv checks them (contradictions with the separable filter's options,
// --border, --out-type, --precision) on a copy whose kernel is a harmless built-in: the kernel
// itself is ooccheck's own to read and judge.
ooc::Conv2dParams validated_conv2d_params(const ooc::FilterOptions& f) {
  ooc::FilterOptions probe = f;
  probe.kernel = "box:1";
  return ooc::conv2d_params(probe);
}

}  // namespace

void largest_input(ooc::Source& in, double& peak) {
  const ooc::ImageSpec& s = in.spec();
  const std::int64_t n = s.row_samples(), step = 64;
  std::vector<std::byte> raw(static_cast<std::size_t>(step) * s.row_bytes());
  std::vector<double> row(static_cast<std::size_t>(n));
  for (std::int64_t y = 0; y < s.height; y += step) {
    const std::int64_t rows = std::min(step, s.height - y);
    in.read_rows(y, rows, raw.data());
    for (std::int64_t r = 0; r < rows; ++r) {
      to_double(s.type, raw.data() + static_cast<std::size_t>(r) * s.row_bytes(), n, row.data());
      for (const double v : row)
        if (std::isfinite(v)) peak = std::max(peak, std::abs(v));
    }
  }
}

namespace {

// Bytes the 2-D reference holds for a kernel over an image: the taps and their magnitudes, per
// band the distinct input rows padded along x, per thread a raw row and three output rows.
double reference2d_bytes(const OwnKernel& k, const ooc::ImageSpec& s) {
  const double threads = tbb::this_task_arena::max_concurrency();
  const double slots = std::min(double(s.height) + 1, double(kBandRows) + 2 * double(k.ry()));
  const double n = double(s.width) * s.channels;
  return 16 * double(k.taps.size()) +
         slots * 8 * (double(s.width) + 2 * double(k.rx())) * s.channels +
         threads * (double(s.row_bytes()) + 24 * n);
}

}  // namespace

int run_reference2d(const std::vector<std::string>& files, const ooc::RawHints& hints,
                    std::uint64_t seed, const ooc::FilterOptions& filter, double tolerance,
                    std::int64_t sample) {
  const std::string &out_path = files[0], &in_path = files[1];
  const ooc::Conv2dParams params = validated_conv2d_params(filter);
  const OwnKernel kernel = own_kernel(filter.kernel);
  auto in = ooc::open_source(in_path, hints, seed);
  auto out = open_output(out_path, *in, in_path, params.out_type);
  const ooc::ImageSpec& is = in->spec();
  refuse_volume(is, in_path);
  const double need = reference2d_bytes(kernel, is), have = double(usable_memory_bytes()) / 2;
  if (need > have)
    throw Error(ErrorKind::usage, "--kernel " + filter.kernel + " (" + std::to_string(kernel.rows) +
                                      " x " + std::to_string(kernel.cols) + ") over " +
                                      is.describe() + " needs about " + bytes_text(need) +
                                      " in ooccheck's float64 reference, more than half of the " +
                                      ooc::format_bytes(double(usable_memory_bytes())) +
                                      " this process may use (memory, ulimit -v)");
  const SampleType out_type = out->spec().type;
  const bool acc_f64 = ooc::accumulates_in_f64(is.type, out_type, params.precision);
  double sum_abs_taps = 0, peak_tap = 0;
  for (const double t : kernel.taps) {
    sum_abs_taps += std::abs(t);
    peak_tap = std::max(peak_tap, std::abs(t));
  }
  const std::string window = std::to_string(kernel.rows) + " x " + std::to_string(kernel.cols);
  // 2^-48 max|tap| per unit of S: oocconv accepts factors whose products are within 2^-49
  // max|tap| of each tap (plus their own rounding), an error relative to the largest tap, not
  // to the tap it replaces, so M alone does not bound it.
  ReferenceTolerance tolerance_of(
      double(kernel.taps.size()), acc_f64, out_type, tolerance, sum_abs_taps, 0x1p-48 * peak_tap,
      "M = sum of |tap| x |input| and S = sum of |input| over the sample's " + window + " window");

  // The FFT (--method fft, or auto's pick on either backend): its error bound, relative to
  // sum|k| x max|x| over a tile (fft_error_bound), taken with the largest |x| of the whole input
  // (and the constant border), which one extra pass over the input finds.
  // (The params hold a stand-in kernel: ooccheck reads the kernel itself.) Under auto a kernel
  // of rank 1 runs as a separable filter, never by FFT.
  ooc::Conv2dParams planned = params;
  planned.kernel = ooc::Kernel2d{kernel.rows, kernel.cols, kernel.taps, kernel.recipe};
  const ooc::Conv2dCosts costs = ooc::conv2d_costs(is, planned);
  const bool fft =
      params.method == ooc::ConvMethod::fft ||
      (params.method == ooc::ConvMethod::automatic && !ooc::separable_factors(planned.kernel) &&
       (costs.cpu_uses_fft || costs.cuda_uses_fft));
  if (fft && costs.tile_rows > 0) {
    double peak = params.border == ooc::BorderMode::constant ? std::abs(params.border_value) : 0;
    largest_input(*in, peak);
    const double bound = ooc::fft_error_bound(costs.tile_rows, costs.tile_cols, acc_f64);
    tolerance_of.allow_fft(bound * sum_abs_taps * peak,
                           "the FFT's rounding: " + number(bound) + " x sum|k| " +
                               number(sum_abs_taps) + " x max|input| " + number(peak) + ", tiles " +
                               std::to_string(costs.tile_rows) + " x " +
                               std::to_string(costs.tile_cols));
  }

  Reference2d ref(*in, kernel, params.border, params.border_value, acc_f64 ? DBL_MIN : FLT_MIN);
  const std::int64_t n = ref.row_samples();
  tbb::combinable<double> largest_m([] { return 0.0; });
  auto check = [&](std::int64_t y0, std::int64_t rows, tbb::combinable<Tally>& tallies) {
    ref.load_band(y0, rows);
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t y) {
      thread_local std::vector<double> expected, mag, sum_abs, got;
      thread_local std::vector<std::byte> raw;
      expected.resize(n);
      mag.resize(n);
      sum_abs.resize(n);
      got.resize(n);
      raw.resize(out->spec().row_bytes());
      ref.output_row(y, expected.data(), mag.data(), sum_abs.data());
      out->read_rows(y0 + y, 1, raw.data());
      to_double(out_type, raw.data(), n, got.data());
      Tally& t = tallies.local();
      double& lm = largest_m.local();
      const std::int64_t base = (y0 + y) * n;
      for (std::int64_t i = 0; i < n; ++i) {
        const double e = expected[i], m = mag[i];
        if (std::isfinite(m)) lm = std::max(lm, m);
        t.add(base + i, as_stored(e, out_type), got[i], tolerance_of(e, m, sum_abs[i]));
      }
    });
  };

  return check_reference(*in, *out,
                         "2-D kernel (ooccheck's own taps, every tap summed): " + kernel.recipe +
                             ", " + window + " taps",
                         params.border, params.border_value, acc_f64, tolerance_of, largest_m,
                         sample, seed, check);
}

}  // namespace ooc::check
