// ooccheck --atax Y A --x X: judges oocatax's result y = A^T (A X) (--op ax: A X, --op atx: A^T X)
// against ooccheck's own float64 product, computed in one streaming pass over A (a matrix of M
// rows and N columns: an image of width N, height M, one channel) in chunks of rows, in bounded
// memory: A is never held whole, only X, y and the reference (n x k each).
//
// As for the other modes, the reference is written apart from the library on purpose: it reads A
// through ooc::open_source only, reads X and Y (.npy or text) with its own small readers, and its
// loops are plain float64 sums. Only X's generators (--x ones, --x random) are shared with
// oocatax (ooc/ops/atax_x.hpp): they define X, they compute nothing.
#include "atax.hpp"

#include <sys/stat.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/ops/atax_x.hpp"

namespace ooc::check {
namespace {

// Bytes of A, as doubles, that one chunk of rows holds: the pass reads A this much at a time.
constexpr std::size_t kChunkBytes = std::size_t{32} << 20;
// Output rows of y per task of the A^T update (each task owns its rows: no two threads add into
// one element, and every element sums over A's rows in ascending order, run after run).
constexpr std::size_t kRowBlock = 64;
// The largest .npy header read (NumPy writes far less).
constexpr std::size_t kMaxNpyHeader = std::size_t{1} << 20;

enum class Op { atax, ax, atx };

Op parse_op(const std::string& op) {
  if (op == "atax") return Op::atax;
  if (op == "ax") return Op::ax;
  if (op == "atx") return Op::atx;
  throw Error(ErrorKind::usage,
              "--op takes atax (y = A^T (A X)), ax (y = A X) or atx (y = A^T X), got '" + op + "'");
}

const char* formula(Op op) {
  switch (op) {
    case Op::atax:
      return "A^T (A X)";
    case Op::ax:
      return "A X";
    case Op::atx:
      break;
  }
  return "A^T X";
}

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

// A small dense matrix (X, Y), rows x cols doubles in row-major order.
struct Dense {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> v;
  bool vector = false;  // from a 1-D file, shape (n,)
  std::string what;     // for the report: "'y.npy' (.npy <f4, 53 x 2)"
  // Y: how far a stored value may be from the value oocatax computed, relative to it (rounding
  // to float32, decimal digits of a text file); `stored` says why.
  double stored_relative = 0;
  double stored_absolute = 0;
  std::string stored;
};

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// ---------------------------------------------------------------------------------------------
// .npy: 1-D (n,) or 2-D (n, k), C or Fortran order, either byte order; every float and integer
// dtype for X, f4 or f8 for Y.

// The text of 'key''s value in the header dictionary: a quoted string, a tuple or a word.
std::string npy_value(const std::string& dict, const std::string& key, const std::string& path) {
  std::size_t at = dict.find("'" + key + "'");
  if (at == std::string::npos) at = dict.find("\"" + key + "\"");
  if (at == std::string::npos || (at = dict.find(':', at)) == std::string::npos)
    throw Error(ErrorKind::input, "'" + path + "': the .npy header has no '" + key +
                                      "': the file is damaged or not written by NumPy");
  ++at;
  while (at < dict.size() && dict[at] == ' ') ++at;
  std::size_t end = at;
  if (at < dict.size() && (dict[at] == '\'' || dict[at] == '"')) {
    end = dict.find(dict[at], at + 1);
    if (end == std::string::npos)
      throw Error(ErrorKind::input, "'" + path + "': malformed .npy header near '" + key + "'");
    return dict.substr(at + 1, end - at - 1);
  }
  if (at < dict.size() && dict[at] == '(') {
    end = dict.find(')', at);
    if (end == std::string::npos)
      throw Error(ErrorKind::input, "'" + path + "': malformed .npy header near '" + key + "'");
    return dict.substr(at, end - at + 1);
  }
  while (end < dict.size() && dict[end] != ',' && dict[end] != '}') ++end;
  std::string v = dict.substr(at, end - at);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

// "(53,)", "(53, 2)": the dimensions.
std::vector<std::int64_t> npy_shape(const std::string& text, const std::string& path) {
  std::vector<std::int64_t> dims;
  std::size_t i = 1;
  while (i + 1 < text.size()) {
    if (text[i] == ' ' || text[i] == ',') {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i || j - i > 18)
      throw Error(ErrorKind::input,
                  "'" + path + "': .npy shape " + text + " is not a tuple of sizes");
    dims.push_back(std::stoll(text.substr(i, j - i)));
    i = j;
  }
  return dims;
}

double half_to_double(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

// The element at p (kind f, i or u, `size` bytes, byte-swapped when big-endian) as a double.
double npy_element(const unsigned char* p, char kind, int size, bool swap) {
  unsigned char b[8];
  for (int i = 0; i < size; ++i) b[i] = p[swap ? size - 1 - i : i];
  auto as = [&]<class T>(T) {
    T v;
    std::memcpy(&v, b, sizeof v);
    return static_cast<double>(v);
  };
  if (kind == 'f') {
    if (size == 2) {
      std::uint16_t h;
      std::memcpy(&h, b, 2);
      return half_to_double(h);
    }
    return size == 4 ? as(float{}) : as(double{});
  }
  if (kind == 'i') {
    switch (size) {
      case 1:
        return as(std::int8_t{});
      case 2:
        return as(std::int16_t{});
      case 4:
        return as(std::int32_t{});
      default:
        return as(std::int64_t{});
    }
  }
  switch (size) {
    case 1:
      return as(std::uint8_t{});
    case 2:
      return as(std::uint16_t{});
    case 4:
      return as(std::uint32_t{});
    default:
      return as(std::uint64_t{});
  }
}

Dense read_npy(const std::string& path, const std::string& role, bool y) {
  std::ifstream in(path, std::ios::binary);
  unsigned char prefix[12] = {};
  in.read(reinterpret_cast<char*>(prefix), 10);
  if (!in) throw Error(ErrorKind::input, "'" + path + "': truncated .npy header");
  std::size_t header_len = prefix[8] | (prefix[9] << 8), offset = 10;
  if (prefix[6] >= 2) {
    in.read(reinterpret_cast<char*>(prefix + 10), 2);
    header_len |= std::size_t{prefix[10]} << 16 | std::size_t{prefix[11]} << 24;
    offset = 12;
  }
  if (!in || header_len > kMaxNpyHeader)
    throw Error(ErrorKind::input, "'" + path + "': malformed .npy header");
  std::string dict(header_len, '\0');
  in.read(dict.data(), static_cast<std::streamsize>(header_len));
  if (!in) throw Error(ErrorKind::input, "'" + path + "': truncated .npy header");
  offset += header_len;

  const std::string descr = npy_value(dict, "descr", path);
  const char order = descr.empty() ? '?' : descr[0];
  const char kind = descr.size() > 1 ? descr[1] : '?';
  const int size = descr.size() == 3 ? descr[2] - '0' : 0;
  const bool known =
      (order == '<' || order == '>' || order == '|' || order == '=') &&
      ((kind == 'f' && (size == 2 || size == 4 || size == 8)) ||
       ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)));
  if (y && !(known && kind == 'f' && size >= 4))
    throw Error(ErrorKind::input, role + " '" + path + "' has dtype '" + descr +
                                      "': a result is float32 or float64 (<f4, <f8)");
  if (!known)
    throw Error(ErrorKind::input, role + " '" + path + "' has dtype '" + descr +
                                      "': use a float (f2, f4, f8) or integer (i1..i8, u1..u8) "
                                      "dtype");
  const bool fortran = npy_value(dict, "fortran_order", path) == "True";
  const std::string shape = npy_value(dict, "shape", path);
  const std::vector<std::int64_t> dims = npy_shape(shape, path);
  Dense d;
  if (dims.size() == 1) {
    d.rows = dims[0], d.cols = 1, d.vector = true;
  } else if (dims.size() == 2) {
    d.rows = dims[0], d.cols = dims[1];
  } else {
    throw Error(ErrorKind::input, role + " '" + path + "' has shape " + shape +
                                      ": use a vector (n,) or a matrix (n, k)");
  }
  if (d.rows <= 0 || d.cols <= 0 || d.rows > (std::int64_t{1} << 40) / d.cols)
    throw Error(ErrorKind::input, role + " '" + path + "' has shape " + shape +
                                      ": it must hold at least one element, and fit in memory");
  const auto count = static_cast<std::size_t>(d.rows * d.cols);
  std::vector<unsigned char> raw(count * static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  if (static_cast<std::size_t>(in.gcount()) != raw.size())
    throw Error(ErrorKind::input, role + " '" + path + "' is cut short: its shape " + shape +
                                      " needs " + std::to_string(raw.size()) +
                                      " bytes of data after the " + std::to_string(offset) +
                                      "-byte header, it holds " + std::to_string(in.gcount()));
  const bool swap = order == '>' && size > 1;
  d.v.resize(count);
  for (std::int64_t i = 0; i < d.rows; ++i)
    for (std::int64_t j = 0; j < d.cols; ++j) {
      // Fortran order stores column after column.
      const std::int64_t e = fortran ? j * d.rows + i : i * d.cols + j;
      d.v[static_cast<std::size_t>(i * d.cols + j)] =
          npy_element(raw.data() + e * size, kind, size, swap);
    }
  d.what = "'" + path + "' (.npy " + descr + ", " +
           (d.vector ? "(" + std::to_string(d.rows) + ",)" : shape_text(d.rows, d.cols)) + ")";
  if (kind == 'f' && size == 4) {
    d.stored_relative = 0x1p-24;
    d.stored_absolute = 0x1p-149;
    d.stored = "2^-24 x |expected| (Y stored as f4)";
  } else {
    d.stored_relative = 0x1p-53;
    d.stored = "2^-53 x |expected| (Y stored as f8)";
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Text: one row per line, numbers between white space and commas; '#' starts a comment; lines
// without numbers are skipped. nan, inf and -inf are numbers.

// Significant digits of a decimal token ("-0.00120e5": 3); 0 for a zero, nan or inf.
int significant_digits(const std::string& token) {
  int digits = 0;
  bool leading = true;
  for (const char c : token) {
    if (c == 'e' || c == 'E') break;
    if (!std::isdigit(static_cast<unsigned char>(c))) continue;
    if (leading && c == '0') continue;
    leading = false;
    ++digits;
  }
  return digits;
}

Dense read_text(const std::string& path, const std::string& role) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::input, "cannot read " + role + " '" + path + "'");
  Dense d;
  int most_digits = 0;
  std::int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::vector<std::string> tokens = line_tokens(line);
    for (const std::string& token : tokens) {
      char* end = nullptr;
      const double v = std::strtod(token.c_str(), &end);
      if (end != token.c_str() + token.size())
        throw Error(ErrorKind::input, role + " '" + path + "' line " + std::to_string(line_no) +
                                          ": '" + token + "' is not a number");
      d.v.push_back(v);
      most_digits = std::max(most_digits, significant_digits(token));
    }
    const auto count = static_cast<std::int64_t>(tokens.size());
    if (count == 0) continue;
    if (d.rows > 0 && count != d.cols)
      throw Error(ErrorKind::input, role + " '" + path + "' line " + std::to_string(line_no) +
                                        " has " + std::to_string(count) + " numbers, the first " +
                                        "row " + std::to_string(d.cols) +
                                        ": every row needs as many (one row per line)");
    d.cols = count;
    ++d.rows;
  }
  if (d.rows == 0) throw Error(ErrorKind::input, role + " '" + path + "' holds no numbers");
  d.what = "'" + path + "' (text, " + shape_text(d.rows, d.cols) + ")";
  // Values printed with D significant digits (%.Dg, %.{D-1}e) are within half a unit of their
  // last digit: 0.5 x 10^(1 - D) of themselves. D is the most any number of the file shows (a
  // number whose trailing zeros were dropped shows fewer than it has).
  d.stored_relative =
      most_digits > 0 ? std::max(0x1p-53, 0.5 * std::pow(10.0, 1 - most_digits)) : 0x1p-53;
  d.stored_absolute = 0x1p-1074;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%.3g x |expected| (Y written with up to %d significant digits)",
                d.stored_relative, most_digits);
  d.stored = buf;
  return d;
}

Dense read_dense(const std::string& path, const std::string& role, bool y) {
  if (!is_regular_file(path))
    throw Error(ErrorKind::input, role + " '" + path + "' does not exist or is not a file");
  char magic[6] = {};
  std::ifstream(path, std::ios::binary).read(magic, sizeof magic);
  return std::memcmp(magic, "\x93NUMPY", 6) == 0 ? read_npy(path, role, y) : read_text(path, role);
}

// X: a file, or generated (ones, random) with `rows` rows and --k columns (ooc/ops/atax_x.hpp,
// oocatax's definitions).
Dense load_x(const AtaxCli& a, std::int64_t rows, std::uint64_t seed) {
  if (a.x.empty())
    throw Error(ErrorKind::usage,
                "--atax needs --x: the file oocatax read X from, or ones or "
                "random (with --k and --seed, as given to oocatax)");
  if (a.k && *a.k < 1)
    throw Error(ErrorKind::usage, "--k must be >= 1 (columns of X), got " + std::to_string(*a.k));
  // An existing file is read, as --kernel does; other names must be a generator's.
  if (is_regular_file(a.x) || (a.x != "ones" && a.x != "random")) {
    Dense x = read_dense(a.x, "X", false);
    if (a.k && *a.k != x.cols)
      throw Error(ErrorKind::usage, "--k " + std::to_string(*a.k) + " but X '" + a.x + "' has " +
                                        std::to_string(x.cols) +
                                        " columns: leave --k out for an X file");
    return x;
  }
  Dense x;
  x.rows = rows;
  x.cols = a.k.value_or(1);
  if (x.rows > (std::int64_t{1} << 40) / x.cols)
    throw Error(ErrorKind::usage,
                "X of " + shape_text(x.rows, x.cols) + " would not fit in memory");
  x.v.resize(static_cast<std::size_t>(x.rows * x.cols));
  for (std::int64_t i = 0; i < x.rows; ++i)
    for (std::int64_t j = 0; j < x.cols; ++j)
      x.v[static_cast<std::size_t>(i * x.cols + j)] =
          a.x == "ones" ? ooc::atax_ones_x(i, j) : ooc::atax_random_x(seed, i, j, x.cols);
  x.what = a.x + " " + shape_text(x.rows, x.cols) +
           (a.x == "random" ? " (seed " + std::to_string(seed) + ")" : std::string());
  return x;
}

// ---------------------------------------------------------------------------------------------
// The reference.

// n samples of type t as doubles.
void to_double(SampleType t, const std::byte* p, std::int64_t n, double* out) {
  ooc::dispatch_type(t, [&]<class T>(T) {
    for (std::int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
      out[i] = static_cast<double>(v);
    }
  });
}

// out = row . X and bound = |row| . |X| (k values each), row of n samples, X n x k.
void row_times(const double* row, std::int64_t n, const double* x, const double* x_abs,
               std::int64_t k, double* out, double* bound) {
  std::fill(out, out + k, 0.0);
  std::fill(bound, bound + k, 0.0);
  for (std::int64_t c = 0; c < n; ++c) {
    const double a = row[c], m = std::abs(a);
    const double* xr = x + c * k;
    const double* mr = x_abs + c * k;
    for (std::int64_t j = 0; j < k; ++j) {
      out[j] += a * xr[j];
      bound[j] += m * mr[j];
    }
  }
}

// The float64 product for output rows `rows` of y (k values each, in that order), and the same
// product on |A| and |X| (the scale of any order's rounding errors).
void reference(ooc::Source& a, Op op, const Dense& x, const std::vector<std::int64_t>& rows,
               std::vector<double>& y, std::vector<double>& bound) {
  const ooc::ImageSpec& s = a.spec();
  const std::int64_t m = s.height, n = s.width, k = x.cols;
  std::vector<double> x_abs(x.v.size());
  for (std::size_t i = 0; i < x.v.size(); ++i) x_abs[i] = std::abs(x.v[i]);
  y.assign(rows.size() * static_cast<std::size_t>(k), 0.0);
  bound.assign(y.size(), 0.0);

  if (op == Op::ax) {  // y[r] = A[r] . X: only the picked rows of A are read
    tbb::parallel_for(std::size_t{0}, rows.size(), [&](std::size_t p) {
      thread_local std::vector<std::byte> raw;
      thread_local std::vector<double> row;
      raw.resize(s.row_bytes());
      row.resize(static_cast<std::size_t>(n));
      a.read_rows(rows[p], 1, raw.data());
      to_double(s.type, raw.data(), n, row.data());
      row_times(row.data(), n, x.v.data(), x_abs.data(), k, y.data() + p * k, bound.data() + p * k);
    });
    return;
  }

  // atax: t[r] = A[r] . X, then y[c] += A[r][c] t[r]; atx: y[c] += A[r][c] X[r]. One pass over
  // the rows of A, a chunk at a time; every picked y[c] sums over r ascending.
  const std::int64_t chunk =
      std::clamp<std::int64_t>(static_cast<std::int64_t>(kChunkBytes / (8 * std::size_t(n))), 1, m);
  std::vector<std::byte> raw(static_cast<std::size_t>(chunk) * s.row_bytes());
  std::vector<double> ad(static_cast<std::size_t>(chunk * n));
  std::vector<double> t, tb;
  if (op == Op::atax) {
    t.resize(static_cast<std::size_t>(chunk * k));
    tb.resize(t.size());
  }
  for (std::int64_t r0 = 0; r0 < m; r0 += chunk) {
    const std::int64_t nr = std::min(chunk, m - r0);
    a.read_rows(r0, nr, raw.data());
    tbb::parallel_for(std::int64_t{0}, nr, [&](std::int64_t r) {
      double* row = ad.data() + r * n;
      to_double(s.type, raw.data() + r * static_cast<std::int64_t>(s.row_bytes()), n, row);
      if (op == Op::atax)
        row_times(row, n, x.v.data(), x_abs.data(), k, t.data() + r * k, tb.data() + r * k);
    });
    const double* tv = op == Op::atax ? t.data() : x.v.data() + r0 * k;
    const double* tm = op == Op::atax ? tb.data() : x_abs.data() + r0 * k;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, rows.size(), kRowBlock),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        for (std::int64_t r = 0; r < nr; ++r) {
                          const double* arow = ad.data() + r * n;
                          const double* tr = tv + r * k;
                          const double* mr = tm + r * k;
                          for (std::size_t p = range.begin(); p != range.end(); ++p) {
                            // No shortcut for a zero: 0 x inf is NaN, as in oocatax.
                            const double av = arow[rows[p]], am = std::abs(av);
                            double* yp = y.data() + p * k;
                            double* bp = bound.data() + p * k;
                            for (std::int64_t j = 0; j < k; ++j) {
                              yp[j] += av * tr[j];
                              bp[j] += am * mr[j];
                            }
                          }
                        }
                      });
  }
}

// ---------------------------------------------------------------------------------------------
// The comparison.

struct Element {
  std::int64_t row = -1, col = 0;  // row -1: none yet
  double expected = 0, got = 0, tolerance = 0;
};

struct Tally {
  std::int64_t count = 0, over = 0, nonfinite_mismatch = 0;
  double max_abs = 0, max_ratio = 0, sum_sq = 0, largest_bound = 0;
  Element worst, worst_ratio;

  // NaN must meet NaN, an infinity the same infinity; finite values must be within tolerance.
  void add(std::int64_t row, std::int64_t col, double expected, double got, double tolerance) {
    ++count;
    const Element e{row, col, expected, got, tolerance};
    const bool finite = std::isfinite(expected) && std::isfinite(got);
    if (!finite) {
      const bool same = (std::isnan(expected) && std::isnan(got)) || expected == got;
      if (!same) {
        ++nonfinite_mismatch;
        if (max_ratio < INFINITY) max_ratio = INFINITY, worst_ratio = e;
      }
      return;
    }
    const double d = std::abs(expected - got);
    if (d > max_abs) max_abs = d, worst = e;
    const double ratio = d == 0 ? 0.0 : d / tolerance;
    if (ratio > max_ratio) max_ratio = ratio, worst_ratio = e;
    sum_sq += d * d;
    over += d > tolerance;
  }
};

std::string element_name(const Element& e, bool vector) {
  std::string s = "y[" + std::to_string(e.row);
  if (!vector) s += ", " + std::to_string(e.col);
  return s + "]";
}

std::string value_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

void add_atax_options(CLI::App& app, AtaxCli& a) {
  auto* g = app.add_option_group("Matrix (--atax)");
  g->add_option("--op", a.op, "atax: y = A^T (A X); ax: y = A X; atx: y = A^T X")
      ->default_str("atax");
  g->add_option("--x", a.x,
                "X as oocatax took it: a .npy (n,) or (n, k) or text file, ones or random");
  g->add_option("--k", a.k, "columns of a generated X (ones, random)")->default_str("1");
}

std::string given_atax_option(const CLI::App& app) {
  for (const char* opt : {"--op", "--x", "--k"})
    if (app.get_option(opt)->count() > 0) return opt;
  return {};
}

int run_atax(const std::vector<std::string>& files, const ooc::RawHints& hints, std::uint64_t seed,
             const AtaxCli& cli, const std::string& precision, std::int64_t sample) {
  const Op op = parse_op(cli.op);
  if (precision != "auto" && precision != "f64" && precision != "f32")
    throw Error(
        ErrorKind::usage,
        "--precision takes f64 or f32 (what oocatax accumulated in), got '" + precision + "'");
  const bool f32 = precision == "f32";
  const std::string &y_path = files[0], &a_path = files[1];

  auto a = ooc::open_source(a_path, hints, seed);
  const ooc::ImageSpec& s = a->spec();
  if (s.channels != 1)
    throw Error(ErrorKind::input, "A '" + a_path + "' is " + s.describe() + ": a matrix has " +
                                      "one channel (width = columns N, height = rows M)");
  const std::int64_t m = s.height, n = s.width;
  const std::int64_t x_rows = op == Op::atx ? m : n, y_rows = op == Op::ax ? m : n;
  const Dense x = load_x(cli, x_rows, seed);
  const std::string a_shape = "A (" + shape_text(m, n) + ": M = " + std::to_string(m) +
                              " rows, N = " + std::to_string(n) + " columns)";
  if (x.rows != x_rows)
    throw Error(ErrorKind::input, "X " + x.what + " has " + std::to_string(x.rows) + " rows, but " +
                                      cli.op + " multiplies " + a_shape + " by an X of " +
                                      (op == Op::atx ? "M" : "N") + " = " + std::to_string(x_rows) +
                                      " rows: check --op, --width/--cols and --height/--rows");
  const Dense y = read_dense(y_path, "Y", true);
  const std::int64_t k = x.cols;
  if (y.rows != y_rows || y.cols != k)
    throw Error(ErrorKind::input,
                "Y " + y.what + " is " + shape_text(y.rows, y.cols) + ", but " + cli.op +
                    " (y = " + formula(op) + ") of " + a_shape + " with X of " +
                    shape_text(x.rows, k) + " gives " + shape_text(y_rows, k) +
                    ": check the order of FILES (Y, then A), --op, --x/--k and the geometry of A");

  const std::vector<std::int64_t> rows = pick_sample(y_rows, sample, seed);
  std::printf("%s: y = %s, checked against ooccheck's own float64 product\n", cli.op.c_str(),
              formula(op));
  std::printf("A: %s, M = %lld rows, N = %lld columns\n", a->describe().c_str(),
              static_cast<long long>(m), static_cast<long long>(n));
  std::printf("X: %s\nY: %s\n", x.what.c_str(), y.what.c_str());
  std::vector<double> ref, bound;
  reference(*a, op, x, rows, ref, bound);

  // gamma bounds the rounding of any order of summing the N + M products of an element (both
  // oocatax's, in its precision, and the reference's own); 64 covers the conversions.
  const double terms = double(n) + double(m) + 64;
  const double eps = f32 ? 0x1p-24 : 0x1p-53;
  const double gamma = 4 * terms * eps;
  const double floor = 4 * terms * (f32 ? double(FLT_MIN) : DBL_MIN);
  Tally t;
  for (std::size_t p = 0; p < rows.size(); ++p)
    for (std::int64_t j = 0; j < k; ++j) {
      const std::size_t q = p * static_cast<std::size_t>(k) + static_cast<std::size_t>(j);
      const double e = ref[q], b = bound[q];
      const double got = y.v[static_cast<std::size_t>(rows[p] * k + j)];
      if (std::isfinite(b)) t.largest_bound = std::max(t.largest_bound, b);
      // NaN and infinities exactly; no bound where |A| |X| overflows but A X does not: then only
      // NaN and infinities in Y are judged.
      const double computed = gamma * b + floor;
      const double tol =
          !std::isfinite(e) ? 0.0
          : !std::isfinite(b)
              ? INFINITY
              : computed + y.stored_relative * (std::abs(e) + computed) + y.stored_absolute;
      t.add(rows[p], j, e, got, tol);
    }

  const bool sampled = static_cast<std::int64_t>(rows.size()) < y_rows;
  std::string what = "checked " + std::to_string(t.count) + " elements in " +
                     std::to_string(rows.size()) + " of " + std::to_string(y_rows) + " rows of y";
  if (sampled)
    what += " (--sample " + std::to_string(sample) + ", seed " + std::to_string(seed) + ")";
  const double rms = t.count ? std::sqrt(t.sum_sq / double(t.count)) : 0.0;
  std::printf("%s: max abs error %.6g", what.c_str(), t.max_abs);
  if (t.worst.row >= 0)
    std::printf(" at %s (expected %s, Y has %s, tolerance %.6g)",
                element_name(t.worst, y.vector).c_str(), value_text(t.worst.expected).c_str(),
                value_text(t.worst.got).c_str(), t.worst.tolerance);
  std::printf(", RMS %.6g, %lld over tolerance, %lld NaN/Inf mismatches\n", rms,
              static_cast<long long>(t.over), static_cast<long long>(t.nonfinite_mismatch));
  std::printf("worst error / its tolerance: %.6g", t.max_ratio);
  if (t.worst_ratio.row >= 0)
    std::printf(" at %s (expected %s, Y has %s, |error| %.6g, tolerance %.6g)",
                element_name(t.worst_ratio, y.vector).c_str(),
                value_text(t.worst_ratio.expected).c_str(), value_text(t.worst_ratio.got).c_str(),
                std::abs(t.worst_ratio.expected - t.worst_ratio.got), t.worst_ratio.tolerance);
  const char* bound_text = op == Op::atax ? "|A|^T (|A| |X|)"
                           : op == Op::ax ? "|A| |X|"
                                          : "|A|^T |X|";
  std::printf(
      "\ntolerance: per element, gamma x bound + 4 (N + M + 64) x %s, gamma = 4 (N + M + 64) x "
      "2^%d = %.3g (oocatax accumulates in %s), bound = %s (largest %.6g), plus %s; NaN and "
      "infinities exactly\n",
      f32 ? "FLT_MIN" : "DBL_MIN", f32 ? -24 : -53, gamma, f32 ? "f32" : "f64", bound_text,
      t.largest_bound, y.stored.c_str());
  if (sampled && op != Op::ax)
    std::printf("note: every element of y depends on every row of A: all %lld rows were read\n",
                static_cast<long long>(m));
  const bool ok = t.over == 0 && t.nonfinite_mismatch == 0;
  if (ok) {
    std::printf("OK: within tolerance\n");
  } else {
    std::printf("FAIL: %lld elements over their tolerance, %lld NaN/Inf mismatches\n",
                static_cast<long long>(t.over), static_cast<long long>(t.nonfinite_mismatch));
  }
  return ok ? 0 : 1;
}

}  // namespace ooc::check
