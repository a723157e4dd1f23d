// oocatax: y = A^T (A X), A X or A^T X for a dense matrix A stored in a file larger than memory,
// in one streaming pass over A's rows, on the CPU or GPUs (cuBLAS). X comes from .npy, text, or is
// generated; y goes to .npy or text (A X, which has a row per row of A, to .npy or raw through the
// engine's output file).
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/main.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "io/npy.hpp"
#include "io/output_file.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "ooc/limits.hpp"
#include "ooc/ops/atax.hpp"
#include "ooc/ops/atax_x.hpp"
#include "ooc/run.hpp"

namespace {

using ooc::Error;
using ooc::ErrorKind;

constexpr const char* kFooter = R"(
Products (--op): atax  y = A^T (A X)   X is N x k, y is N x k   (the normal-equations product)
                 ax    y = A X         X is N x k, y is M x k   (written through the output file)
                 atx   y = A^T X       X is M x k, y is N x k
A is M rows x N columns, row-major, one channel of f32 or f64: raw (--rows, --cols, --type), .npy
(2-D, C order) or a single-channel TIFF. Every element of A is read once.

X (--x): FILE.npy (shape (n,) or (n, k), any numeric dtype), FILE.txt (a row per line, values
separated by spaces or commas), `ones`, or `random` (uniform in [-1, 1), from --seed; --k columns).
y (--out): .npy (float64; shape (n,) when X is one column given as (n,) or generated, else (n, k))
or .txt (a row per line, 17 significant digits). ax writes .npy of shape (M, k), or raw.

Precision: products and sums in double by default; --precision f32 computes each leaf's products
in float (faster on GPUs, about 1e-6 relative) and still sums the leaves in double. The result has
the same bits for every --band-rows, --slots and --threads: rows are summed in leaves of a fixed
size, the leaves as a fixed binary tree (see oocatax --stats json: leaf_rows). The default leaf
(16 MiB of A) is halved until a band of one leaf fits --mem-limit; --leaf-rows fixes it.
NaN or Inf in X or A are computed with (IEEE rules), warned about on stderr (also under -q) and
counted in --stats json (x_nonfinite, a_nonfinite and the first one's row and column).

Examples:
  oocgen A.raw --width 16384 --height 65536 --pattern low-rank
  oocatax A.raw --rows 65536 --cols 16384 --x random --k 8 --out y.npy
  oocatax A.npy --x v.npy --out v.npy --stats json       (a power-iteration step)
  oocatax A.tif --op ax --x x.txt --out Ax.npy --device cuda

Exit codes: 0 done, 2 usage, 3 bad input, 4 I/O (disk full, permissions), 5 GPU.
)";

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

struct Matrix {
  std::vector<double> v;  // rows x cols, row-major
  std::int64_t rows = 0;
  int cols = 0;
  bool one_d = false;  // given as a vector (written back as one)
};

// The dtype of a .npy header ('<f8', '|u1', ...) as a reader of one value.
double npy_value(const char* p, char kind, int size) {
  auto get = [&](auto t) {
    std::memcpy(&t, p, sizeof t);
    return static_cast<double>(t);
  };
  if (kind == 'f') return size == 4 ? get(float{}) : get(double{});
  if (kind == 'i')
    return size == 1   ? get(std::int8_t{})
           : size == 2 ? get(std::int16_t{})
           : size == 4 ? get(std::int32_t{})
                       : get(std::int64_t{});
  return size == 1   ? get(std::uint8_t{})
         : size == 2 ? get(std::uint16_t{})
         : size == 4 ? get(std::uint32_t{})
                     : get(std::uint64_t{});
}

Matrix read_npy(const std::string& path, const std::string& bytes) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::input, "X file '" + path + "': " + why);
  };
  const ooc::NpyArray h = ooc::parse_npy_array(reinterpret_cast<const unsigned char*>(bytes.data()),
                                               bytes.size(), path);
  const std::string descr = std::string(1, h.order) + h.kind;
  const char kind = h.kind.empty() ? '?' : h.kind[0];
  const int size = h.kind.size() == 2 ? h.kind[1] - '0' : 0;
  if ((h.order != '<' && h.order != '|') || std::string("fiu").find(kind) == std::string::npos)
    throw bad("dtype '" + descr + "' is not a little-endian int, uint or float; save it with " +
              "numpy.save(path, x.astype('<f8'))");
  if ((kind == 'f' && size != 4 && size != 8) ||
      (kind != 'f' && size != 1 && size != 2 && size != 4 && size != 8))
    throw bad("dtype '" + descr + "' is not supported; use float64");
  if (h.fortran)
    throw bad("Fortran order; save it with numpy.save(path, numpy.ascontiguousarray(x))");
  const std::vector<std::int64_t>& dims = h.dims;
  if (dims.empty() || dims.size() > 2 || dims[0] < 1 || (dims.size() == 2 && dims[1] < 1))
    throw bad("shape " + h.shape + " is not (n,) or (n, k) with n, k >= 1");
  Matrix m;
  m.rows = dims[0];
  m.cols = dims.size() == 2 ? static_cast<int>(std::min<std::int64_t>(dims[1], 1 << 20)) : 1;
  m.one_d = dims.size() == 1;
  const std::size_t n = static_cast<std::size_t>(m.rows) * m.cols;
  if (bytes.size() - h.data_offset < n * size)
    throw bad("holds " + std::to_string((bytes.size() - h.data_offset) / size) +
              " values, its shape " + h.shape + " says " + std::to_string(n));
  m.v.resize(n);
  const char* p = bytes.data() + h.data_offset;
  for (std::size_t i = 0; i < n; ++i) m.v[i] = npy_value(p + i * size, kind, size);
  return m;
}

Matrix read_text(const std::string& path, const std::string& bytes) {
  Matrix m;
  std::stringstream in(bytes);
  std::int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    for (char& c : line)
      if (c == ',' || c == '\t' || c == '\r') c = ' ';
    std::stringstream ls(line);
    int count = 0;
    for (std::string tok; ls >> tok; ++count) {
      char* end = nullptr;
      const double v = std::strtod(tok.c_str(), &end);
      if (end == tok.c_str() || *end != '\0')
        throw Error(ErrorKind::input, "X file '" + path + "' line " + std::to_string(line_no) +
                                          ": '" + tok + "' is not a number");
      m.v.push_back(v);
    }
    if (count == 0) continue;
    if (m.rows == 0) m.cols = count;
    if (count != m.cols)
      throw Error(ErrorKind::input, "X file '" + path + "' line " + std::to_string(line_no) +
                                        " has " + std::to_string(count) + " values, the first " +
                                        "row has " + std::to_string(m.cols));
    ++m.rows;
  }
  if (m.rows == 0) throw Error(ErrorKind::input, "X file '" + path + "' holds no numbers");
  m.one_d = m.cols == 1;
  return m;
}

Matrix load_x(const std::string& spec, std::int64_t rows, int k, std::uint64_t seed) {
  Matrix m;
  if (spec == "ones" || spec == "random") {
    m.rows = rows;
    m.cols = k;
    m.one_d = k == 1;
    m.v.resize(static_cast<std::size_t>(rows) * k, 1.0);
    if (spec == "random")
      for (std::int64_t i = 0; i < rows; ++i)
        for (int j = 0; j < k; ++j)
          m.v[static_cast<std::size_t>(i) * k + j] = ooc::atax_random_x(seed, i, j, k);
    return m;
  }
  std::ifstream f(spec, std::ios::binary);
  if (!f)
    throw Error(ErrorKind::input, ooc::system_message("cannot open X file", spec, errno) +
                                      " (--x takes FILE.npy, FILE.txt, ones or random)");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return bytes.compare(0, 6, "\x93NUMPY") == 0 ? read_npy(spec, bytes) : read_text(spec, bytes);
}

void write_all(ooc::OutputFile& f, const std::string& data) {
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t w = ::write(f.fd(), data.data() + done, data.size() - done);
    if (w <= 0)
      throw Error(ErrorKind::io, ooc::system_message("cannot write y", f.partial(), errno));
    done += static_cast<std::size_t>(w);
  }
}

// y (rows x k) to .npy (float64) or text, through a temporary renamed when complete.
void write_y(ooc::OutputFile& f, const std::vector<double>& y, std::int64_t rows, int k,
             bool one_d) {
  const std::string& path = f.path();
  std::string data;
  if (ends_with(path, ".npy")) {
    data = ooc::npy_array_header(
        "<f8", one_d ? std::vector<std::int64_t>{rows} : std::vector<std::int64_t>{rows, k});
    data.append(reinterpret_cast<const char*>(y.data()), y.size() * sizeof(double));
  } else {
    char buf[32];
    for (std::int64_t i = 0; i < rows; ++i) {
      for (int j = 0; j < k; ++j) {
        std::snprintf(buf, sizeof buf, j ? " %.17g" : "%.17g",
                      y[static_cast<std::size_t>(i) * k + j]);
        data += buf;
      }
      data += '\n';
    }
  }
  write_all(f, data);
  f.commit();
}

std::int64_t count_nonfinite(const std::vector<double>& v) {
  std::int64_t n = 0;
  for (double d : v) n += !std::isfinite(d);
  return n;
}

// Column counts near `cols` that divide `samples` (what a raw file of that many values could be).
std::string cols_that_fit(std::uint64_t samples, std::int64_t cols) {
  std::vector<std::uint64_t> d;
  for (std::uint64_t i = 1; i * i <= samples; ++i)
    if (samples % i == 0) {
      d.push_back(i);
      if (i != samples / i) d.push_back(samples / i);
    }
  const auto off = [&](std::uint64_t v) {
    const auto c = static_cast<std::uint64_t>(cols);
    return v > c ? v - c : c - v;
  };
  std::sort(d.begin(), d.end(), [&](auto a, auto b) { return off(a) < off(b); });
  d.resize(std::min<std::size_t>(d.size(), 6));
  std::sort(d.begin(), d.end());
  std::string out;
  for (auto v : d) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

// A raw A, in oocatax's words: the library's messages name the image options (--width, --height,
// --channels), which oocatax calls --cols and --rows and does without.
void check_raw_matrix(const std::string& path, const ooc::RawHints& h) {
  if (h.width <= 0)
    throw Error(ErrorKind::usage, "raw matrix '" + path +
                                      "' needs --cols (N, the values in a row) and its --type "
                                      "(f32, the default, or f64); --rows is then optional");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // opening it tells why
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t value = ooc::sample_bytes(h.type);
  const std::string type(ooc::name(h.type));
  if (size == 0) throw Error(ErrorKind::input, "matrix '" + path + "' is empty");
  const auto row = static_cast<unsigned __int128>(h.width) * value;
  if (size % row != 0) {
    std::string msg = "the size of matrix '" + path + "', " + std::to_string(size) +
                      " bytes, is not a whole number of rows of --cols " + std::to_string(h.width) +
                      " values of " + std::to_string(value) + " bytes (" + type + ")";
    if (size % value == 0) msg += "; --cols that fit: " + cols_that_fit(size / value, h.width);
    throw Error(ErrorKind::input, msg + "; check --cols and --type");
  }
  const auto rows = static_cast<std::int64_t>(size / static_cast<std::uint64_t>(row));
  if (h.height > 0 && h.height != rows)
    throw Error(ErrorKind::input, "matrix '" + path + "' holds " + std::to_string(rows) +
                                      " rows of " + std::to_string(h.width) + " " + type +
                                      " values, but --rows says " + std::to_string(h.height) +
                                      ": drop --rows, or check --cols and --type");
}

// Whether the job plans within `limit` bytes: the planner's own arithmetic (plan_bands) on the
// CPU backend. A GPU's ring holds no scratch per thread, and its planner checks the devices.
bool plans_within(const ooc::Operation& op, ooc::Source& source, ooc::EngineOptions po,
                  std::size_t limit) {
  po.mem_limit = limit;
  try {
    ooc::plan_bands(source.spec(), {&op}, ooc::Backend{}, po, &source);
    return true;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::usage) throw;
    return false;
  }
}

// `bytes` as --mem-limit takes it, rounded up to a tenth of its unit: "9.5K".
std::string size_rounded_up(std::size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes);
  const char* units = "KMGT";
  int u = 0;
  double unit = 1024;
  while (u < 3 && double(bytes) >= 1024 * unit) unit *= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%c", std::ceil(double(bytes) * 10 / unit) / 10, units[u]);
  return buf;
}

// The least --mem-limit above `low` (too small) that `fits`, as a figure that itself fits: the
// planner's slot count grows with the limit, so a rounded-up figure is checked, not assumed.
std::string least_limit(std::size_t low, std::size_t huge,
                        const std::function<bool(std::size_t)>& fits) {
  for (;;) {
    std::size_t hi = low;
    do hi = std::min(hi * 2 + 1, huge);
    while (!fits(hi));
    while (hi - low > 1) {
      const std::size_t mid = low + (hi - low) / 2;
      (fits(mid) ? hi : low) = mid;
    }
    const std::string text = size_rounded_up(hi);
    const std::size_t shown = ooc::parse_size(text, "--mem-limit");
    if (fits(shown)) return text;
    low = shown;
  }
}

// Leaves and bands for --mem-limit: the planner takes a band of at least one leaf, and the
// kernels' scratch grows with the leaf (T is leaf x k per thread), so an automatic leaf is halved
// until one fits. When none does (or --leaf-rows or --band-rows asks for too much), the error
// names a limit the run then fits, not the planner's one-row floor that a leaf raises.
void fit_to_memory(ooc::MatrixProductOp& op, ooc::Source& source, const ooc::JobOptions& jo,
                   bool leaf_given) {
  const ooc::EngineOptions& po = jo.pipeline;
  const std::size_t limit = po.mem_limit > 0 ? po.mem_limit : ooc::default_mem_limit();
  constexpr std::size_t kHuge = std::size_t{1} << 62;
  // Not a matter of memory (--threads): the job's own plan says what.
  if (!plans_within(op, source, po, kHuge)) return;
  const auto fits = [&](std::size_t l) { return plans_within(op, source, po, l); };
  if (!leaf_given)
    while (op.leaf_rows() > 1 && !fits(limit)) op.set_leaf_rows(op.leaf_rows() / 2);
  // A GPU's ring is not this arithmetic's: there the planner has the last word.
  if (fits(limit) || (jo.device != "cpu" && op.has_cuda())) return;
  const std::string need = least_limit(limit, kHuge, fits);
  const ooc::ImageSpec& a = source.spec();
  std::string lower;
  if (leaf_given) lower += ", or lower --leaf-rows (by default the leaf shrinks to fit)";
  if (po.band_rows > 0) lower += ", or lower --band-rows";
  if (po.slots > 0) lower += ", or lower --slots";
  if (po.threads > 0) lower += ", or use fewer --threads";
  throw Error(ErrorKind::usage,
              "--mem-limit " + ooc::format_bytes(double(limit)) + " is too small: this job needs " +
                  "--mem-limit " + need + " or more (each slot holds a band of at least one leaf " +
                  "of " + std::to_string(std::min(op.leaf_rows(), a.height)) + " row(s) of " +
                  std::to_string(a.width) + " " + std::string(ooc::name(a.type)) +
                  " values, each thread the leaf's products and the partial sums of y); raise " +
                  "--mem-limit to " + need + lower);
}

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("oocatax", [&]() -> int {
    CLI::App app{
        "oocatax: y = A^T (A X), A X or A^T X for a matrix A larger than memory, in one pass over "
        "the file, on the CPU or GPUs."};
    app.footer(kFooter);
    app.get_formatter()->column_width(34);
    ooc::JobOptions jo;
    ooc::ProductParams params;
    std::string out, op_name = "atax", x_spec, type = "f32", precision = "f64";
    int k = 1;
    std::uint64_t seed = 1;
    app.add_option("A", jo.input, "raw, .npy or TIFF matrix file, or synth:PATTERN")->required();
    auto* g_in = app.add_option_group("Matrix");
    g_in->add_option("--rows", jo.hints.height, "rows M (raw: checked against the file size)")
        ->check(ooc::cli::positive());
    g_in->add_option("--cols", jo.hints.width, "columns N (raw input: required)")
        ->check(ooc::cli::positive());
    auto* type_opt =
        g_in->add_option("--type", type, "element type of raw A: f32 or f64")->default_str("f32");
    g_in->add_option("--in-format", jo.hints.format, "auto (magic bytes), raw, npy or tiff")
        ->default_str("auto");
    g_in->add_option("--page", jo.hints.page, "TIFF: the page (image) to read, from 0")
        ->default_str("0")
        ->check(CLI::NonNegativeNumber)
        ->each([&jo](const std::string&) { jo.hints.page_given = true; });
    g_in->add_option("--matrix-seed", jo.seed, "seed of a synth: matrix")->default_str("1");
    auto* g_x = app.add_option_group("Product");
    g_x->add_option("--op", op_name, "atax, ax or atx")->default_str("atax");
    g_x->add_option("--x", x_spec, "X: FILE.npy, FILE.txt, ones or random")->required();
    g_x->add_option("--k", k, "columns of a generated X")
        ->default_str("1")
        ->check(CLI::Range(1, 4096));
    g_x->add_option("--seed", seed, "seed of --x random")->default_str("1");
    g_x->add_option("--out", out, "y: FILE.npy or FILE.txt (ax: FILE.npy or raw)")->required();
    g_x->add_option("--precision", precision, "f64 (default) or f32 products")->default_str("f64");

    ooc::cli::PipelineCli pipeline_cli;
    auto* g_p = app.add_option_group("Pipeline");
    ooc::cli::add_pipeline_options(*g_p, pipeline_cli,
                                   "rows per band (rounded down to leaves x a power of 2)");
    g_p->add_option("--leaf-rows", params.leaf_rows,
                    "rows summed before the tree, a power of 2 (default: 16 MiB of A)");
    ooc::cli::ReportCli report_cli;
    ooc::cli::add_report_options(*app.add_option_group("Reporting"), report_cli);
    auto& [progress, quiet, stats] = report_cli;

    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "oocatax")) return *code;
    ooc::cli::check_report_options(report_cli);
    if (precision != "f64" && precision != "f32")
      throw Error(ErrorKind::usage, "--precision takes f64 or f32, got '" + precision + "'");
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
      if (const char* n = std::getenv(v); n && std::atoi(n) > 1)
        throw Error(ErrorKind::usage,
                    "oocatax runs as one process (its sums are not split over MPI ranks): run "
                    "it without mpirun/srun, with --devices for several GPUs");
    params.kind = ooc::parse_product_kind(op_name);
    params.f32 = precision == "f32";
    jo.hints.type = ooc::parse_sample_type(type);
    jo.hints.type_given = type_opt->count() > 0;
    ooc::cli::apply_pipeline_options(pipeline_cli, jo);
    if (params.kind == ooc::ProductKind::ax) {
      if (ends_with(out, ".txt"))
        throw Error(ErrorKind::usage,
                    "--op ax writes y through the output file: .npy or raw, "
                    "not .txt");
      jo.output = out;
    }
    if (out == "null:" && params.kind != ooc::ProductKind::ax) out.clear();

    // Raw and synthetic A are checked here, with oocatax's option names; a .npy or TIFF header
    // is checked against --rows and --cols once it is read.
    const std::int64_t rows_given = jo.hints.height, cols_given = jo.hints.width;
    const bool synthetic = jo.input.rfind("synth:", 0) == 0;
    const std::string format =
        jo.hints.format == "auto" && !synthetic ? ooc::detect_format(jo.input) : jo.hints.format;
    if (synthetic && (rows_given <= 0 || cols_given <= 0))
      throw Error(ErrorKind::usage, "a synth: matrix needs --rows and --cols");
    if (!synthetic && format == "raw") check_raw_matrix(jo.input, jo.hints);
    if (!synthetic && format != "raw") jo.hints.width = jo.hints.height = 0;

    // The product is built once A is open: its shape decides X's and the leaf.
    ooc::JobSpec job_spec;
    job_spec.name = "oocatax";
    job_spec.options = jo;
    std::shared_ptr<ooc::MatrixProductOp> op;
    std::optional<ooc::OutputFile> y_file;
    Matrix x;
    std::int64_t x_nonfinite = 0;
    job_spec.make_operation = [&](ooc::Job& job) -> std::shared_ptr<ooc::Operation> {
      const ooc::ImageSpec& spec = job.source().spec();
      auto contradicts = [&](const char* option, std::int64_t given, std::int64_t is,
                             const char* what) {
        return Error(ErrorKind::usage, std::string(option) + " " + std::to_string(given) +
                                           " contradicts '" + jo.input + "', which holds " +
                                           std::to_string(is) + " " + what + ": drop " + option);
      };
      if (cols_given > 0 && cols_given != spec.width)
        throw contradicts("--cols", cols_given, spec.width, "columns");
      if (rows_given > 0 && rows_given != spec.height)
        throw contradicts("--rows", rows_given, spec.height, "rows");
      const std::int64_t x_rows = ooc::product_x_rows(spec, params.kind);
      x = load_x(x_spec, x_rows, k, seed);
      if (x.rows != x_rows)
        throw Error(ErrorKind::input,
                    "X has " + std::to_string(x.rows) + " rows, but " + op_name + " of a " +
                        std::to_string(spec.height) + " x " + std::to_string(spec.width) +
                        " matrix needs " + std::to_string(x_rows) +
                        (params.kind == ooc::ProductKind::atx ? " (one per row of A)"
                                                              : " (one per column of A)"));
      params.k = x.cols;
      x_nonfinite = count_nonfinite(x.v);
      params.x = std::move(x.v);
      const bool leaf_given = params.leaf_rows > 0;
      op = ooc::make_matrix_product(spec, std::move(params));
      fit_to_memory(*op, job.source(), jo, leaf_given);
      // y's temporary now: a bad --out is refused before the pass over A, not after it.
      if (!op->output() && !out.empty()) y_file.emplace(out, jo.input);
      return op;
    };
    std::optional<ooc::cli::Progress> bar;
    job_spec.on_start = [&](ooc::Job& job, int) {
      bar.emplace(progress, job.source().spec().total_bytes(), "oocatax");
    };
    job_spec.progress = [&](std::int64_t d, std::int64_t t) {
      if (bar) bar->update(d, t);
    };
    const ooc::JobResult r = ooc::run_job(std::move(job_spec));
    if (bar) bar->finish();
    if (r.end != ooc::JobResult::End::done)
      throw Error(ErrorKind::io, "stopped before the last band");
    const ooc::RunStats& st = r.total;
    const ooc::ImageSpec& spec = r.report.in;
    std::int64_t y_nonfinite = 0;
    const bool ax = op->output().has_value();
    if (!ax) {
      const std::vector<double> y = op->result();
      y_nonfinite = count_nonfinite(y);
      if (y_file) write_y(*y_file, y, spec.width, x.cols, x.one_d);
    }
    // Even under -q (which silences the summary and progress): y is not what a finite input
    // gives, and rc stays 0 since IEEE arithmetic did what was asked.
    const ooc::NonFiniteA a_bad = op->a_nonfinite();
    const std::string in_y =
        ax ? std::string() : " (" + std::to_string(y_nonfinite) + " non-finite value(s) in y)";
    if (x_nonfinite > 0) {
      std::fprintf(
          stderr,
          "oocatax: warning: X holds %lld NaN or Inf value(s); y was computed with them%s\n",
          static_cast<long long>(x_nonfinite), in_y.c_str());
    } else if (a_bad.count > 0) {
      std::fprintf(stderr,
                   "oocatax: warning: A holds %s%lld NaN or Inf value(s), the first at row %lld, "
                   "column %lld (from 0); y was computed with them%s\n",
                   a_bad.searched ? "" : "at least ", static_cast<long long>(a_bad.count),
                   static_cast<long long>(a_bad.row), static_cast<long long>(a_bad.col),
                   in_y.c_str());
    } else if (y_nonfinite > 0 && a_bad.searched) {
      std::fprintf(stderr,
                   "oocatax: warning: y holds %lld NaN or Inf value(s), though A and X are "
                   "finite: the products overflowed %s\n",
                   static_cast<long long>(y_nonfinite),
                   precision == "f32" ? "float; use --precision f64" : "double; scale A or X down");
    } else if (y_nonfinite > 0) {
      std::fprintf(stderr,
                   "oocatax: warning: y holds %lld NaN or Inf value(s), though X is finite: A "
                   "holds NaN or Inf, or the products overflowed (--device cpu finds the first "
                   "NaN or Inf of A)\n",
                   static_cast<long long>(y_nonfinite));
    }

    // Where the time went, as shares of the busy time summed over threads or slots.
    nlohmann::json shares;
    if (r.report.cuda) {
      const double busy =
          std::max(st.pack_seconds + st.h2d_seconds + st.d2h_seconds + st.kernel_seconds, 1e-12);
      shares = {{"read", st.pack_seconds / busy},
                {"copy", (st.h2d_seconds + st.d2h_seconds) / busy},
                {"compute", st.kernel_seconds / busy}};
    } else {
      const double busy = std::max(op->cpu_read_seconds() + op->cpu_compute_seconds(), 1e-12);
      shares = {{"read", op->cpu_read_seconds() / busy},
                {"copy", 0.0},
                {"compute", op->cpu_compute_seconds() / busy}};
    }
    nlohmann::json extra;
    extra["product"] = {{"op", op_name},
                        {"k", x.cols},
                        {"precision", precision},
                        {"leaf_rows", op->leaf_rows()},
                        {"leaf_rows_default", ooc::default_leaf_rows(spec)},
                        {"y", out.empty() ? std::string("(not written)") : out},
                        {"x_nonfinite", x_nonfinite},
                        {"y_nonfinite", y_nonfinite},
                        {"a_nonfinite", a_bad.searched ? nlohmann::json(a_bad.count) : nullptr},
                        {"a_first_nonfinite",
                         a_bad.count > 0 ? nlohmann::json{{"row", a_bad.row}, {"col", a_bad.col}}
                                         : nlohmann::json(nullptr)}};
    extra["bytes_read"] = st.bytes_read;
    extra["gb_per_s"] = double(st.bytes_read) / std::max(st.seconds, 1e-9) / 1e9;
    extra["time_shares"] = shares;
    ooc::cli::report("oocatax", stats, quiet, r.report, extra.dump());
    return 0;
  });
}
