// ooccheck --atax: accepts oocatax's products (atax, ax, atx) computed here by plain float64
// loops, from .npy and text Y and X and from generated X, finds a corrupted element (also in
// sampled rows), tells float32 from float64 accumulation, matches NaN and infinities, and refuses
// wrong shapes; oocgen's low-rank matrix follows its documented definition.
#include <gtest/gtest.h>

#include "ooccheck_cli_support.hpp"

namespace {

using namespace ooc::test::ooccheck_cli;

// ---------------------------------------------------------------------------------------------
// --atax: oocatax's products y = A^T (A X), A X and A^T X against the test's own float64 loops,
// and oocgen's low-rank matrices against their definition.

// A M x N matrix (M rows, N columns) written by oocgen as raw f32 or f64, as doubles.
struct Matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double at(std::int64_t r, std::int64_t c) const { return v[std::size_t(r * cols + c)]; }
};

Matrix read_matrix(const fs::path& path, std::int64_t rows, std::int64_t cols,
                   const std::string& type) {
  Matrix m{rows, cols, {}};
  const std::string bytes = read_file(path);
  const std::size_t size = type == "f32" ? 4 : 8;
  EXPECT_EQ(bytes.size(), std::size_t(rows * cols) * size) << path;
  m.v.resize(std::size_t(rows * cols));
  for (std::size_t i = 0; i < m.v.size() && (i + 1) * size <= bytes.size(); ++i) {
    if (size == 4) {
      float f;
      std::memcpy(&f, bytes.data() + i * 4, 4);
      m.v[i] = f;
    } else {
      std::memcpy(&m.v[i], bytes.data() + i * 8, 8);
    }
  }
  return m;
}

// y = A^T (A X), A X or A^T X by the definitions, in float64; X rows x k, row-major.
std::vector<double> product(const std::string& op, const Matrix& a, const std::vector<double>& x,
                            std::int64_t k) {
  const std::int64_t m = a.rows, n = a.cols;
  auto times = [&](const std::vector<double>& b) {  // A b: m x k
    std::vector<double> out(std::size_t(m * k), 0.0);
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t j = 0; j < k; ++j) {
        double s = 0;
        for (std::int64_t c = 0; c < n; ++c) s += a.at(r, c) * b[std::size_t(c * k + j)];
        out[std::size_t(r * k + j)] = s;
      }
    return out;
  };
  auto transposed_times = [&](const std::vector<double>& b) {  // A^T b: n x k
    std::vector<double> out(std::size_t(n * k), 0.0);
    for (std::int64_t c = 0; c < n; ++c)
      for (std::int64_t j = 0; j < k; ++j) {
        double s = 0;
        for (std::int64_t r = 0; r < m; ++r) s += a.at(r, c) * b[std::size_t(r * k + j)];
        out[std::size_t(c * k + j)] = s;
      }
    return out;
  };
  if (op == "ax") return times(x);
  if (op == "atx") return transposed_times(x);
  return transposed_times(times(x));
}

// The float32 emulation of the same sums (every product and partial sum rounded to float), as
// oocatax --precision f32 would accumulate.
std::vector<double> product_f32(const Matrix& a, const std::vector<double>& x, std::int64_t k) {
  std::vector<float> t(std::size_t(a.rows * k), 0.0f);
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t c = 0; c < a.cols; ++c)
        t[std::size_t(r * k + j)] += float(a.at(r, c)) * float(x[std::size_t(c * k + j)]);
  std::vector<double> y(std::size_t(a.cols * k));
  for (std::int64_t c = 0; c < a.cols; ++c)
    for (std::int64_t j = 0; j < k; ++j) {
      float s = 0;
      for (std::int64_t r = 0; r < a.rows; ++r) s += float(a.at(r, c)) * t[std::size_t(r * k + j)];
      y[std::size_t(c * k + j)] = s;
    }
  return y;
}

// A .npy of doubles: shape (n,) when `vector`, else (n, k).
void write_npy_f8(const fs::path& path, const std::vector<double>& v, std::int64_t k,
                  bool vector = false) {
  const std::int64_t n = std::int64_t(v.size()) / k;
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(n) +
                       (vector ? ",)" : ", " + std::to_string(k) + ")") + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(header.size() & 0xff),
                       static_cast<char>(header.size() >> 8)};
  f.write(len, 2);
  f << header;
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 8));
}

// Text, one row of k numbers per line, printed with `format` ("%.17g") and `separator`.
void write_text(const fs::path& path, const std::vector<double>& v, std::int64_t k,
                const char* format, const char* separator = " ") {
  std::ofstream f(path, std::ios::trunc);
  f << "# written by the test\n";
  for (std::size_t i = 0; i < v.size(); ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v[i]);
    f << buf << ((i + 1) % std::size_t(k) == 0 ? "\n" : separator);
  }
}

// oocatax's --x random, from its definition (written here again, not through the header).
double splitmix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return double((z ^ (z >> 31)) >> 11) * 0x1p-53;
}
std::vector<double> random_x(std::uint64_t seed, std::int64_t n, std::int64_t k) {
  std::vector<double> x(std::size_t(n * k));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < k; ++j)
      x[std::size_t(i * k + j)] =
          2 * splitmix(seed * 0x9E3779B97F4A7C15ULL + std::uint64_t(i * k + j) + 1) - 1;
  return x;
}

class OoccheckAtax : public OoccheckCli {
 protected:
  // A 37 x 53 low-rank matrix (odd sizes, not a multiple of anything the tools use).
  static constexpr std::int64_t kRows = 37, kCols = 53;

  Matrix make_matrix(const std::string& type, const std::string& pattern = "low-rank") {
    a_path_ = dir_ / ("a_" + type + ".raw");
    const RunResult r =
        run("oocgen", {a_path_.string(), "--width", std::to_string(kCols), "--height",
                       std::to_string(kRows), "--type", type, "--pattern", pattern, "-q"});
    EXPECT_EQ(r.exit_code, 0) << r;
    type_ = type;
    return read_matrix(a_path_, kRows, kCols, type);
  }

  // ooccheck --atax Y A <A's geometry> <extra>.
  RunResult atax(const fs::path& y, const std::vector<std::string>& extra) {
    std::vector<std::string> args{"--atax",
                                  y.string(),
                                  a_path_.string(),
                                  "--cols",
                                  std::to_string(kCols),
                                  "--rows",
                                  std::to_string(kRows),
                                  "--type",
                                  type_};
    args.insert(args.end(), extra.begin(), extra.end());
    return run("ooccheck", args);
  }

  fs::path a_path_;
  std::string type_;
};

// Test names read "cli.ooccheck_atax.*".
using ooccheck_atax = OoccheckAtax;

TEST_F(ooccheck_atax, PassesAnIndependentProductAndFailsOneCorruptedElement) {
  for (const std::string type : {"f32", "f64"}) {
    const Matrix a = make_matrix(type);
    for (const std::int64_t k : {1, 3}) {
      const std::string what = type + " k " + std::to_string(k);
      const std::vector<double> x = some_taps(std::size_t(kCols * k), 11);
      write_npy_f8(dir_ / "x.npy", x, k, k == 1);
      std::vector<double> y = product("atax", a, x, k);
      write_npy_f8(dir_ / "y.npy", y, k, k == 1);
      const std::vector<std::string> with_x{"--x", (dir_ / "x.npy").string()};
      RunResult r = atax(dir_ / "y.npy", with_x);
      EXPECT_EQ(r.exit_code, 0) << what << "\n" << r;
      EXPECT_NE(r.out.find("OK: within tolerance"), std::string::npos) << what << "\n" << r;
      EXPECT_NE(r.out.find("checked " + std::to_string(kCols * k) + " elements in 53 of 53 rows"),
                std::string::npos)
          << r;
      // One element off by 1e-9 of itself: far beyond float64 rounding over 37 + 53 terms.
      y[std::size_t(17 * k + k - 1)] *= 1 + 1e-9;
      write_npy_f8(dir_ / "y.npy", y, k, k == 1);
      r = atax(dir_ / "y.npy", with_x);
      EXPECT_EQ(r.exit_code, 1) << what << "\n" << r;
      EXPECT_EQ(over_count(r.out), 1) << what << "\n" << r;
      const std::string name = k == 1 ? "y[17]" : "y[17, 2]";
      EXPECT_NE(r.out.find("max abs error"), std::string::npos) << r;
      EXPECT_NE(r.out.find("at " + name + " (expected "), std::string::npos) << what << "\n" << r;
      EXPECT_NE(r.out.find("FAIL: 1 elements over their tolerance"), std::string::npos) << r;
    }
  }
}

TEST_F(ooccheck_atax, AxAndAtxWithGeneratedXAndSampledRows) {
  const Matrix a = make_matrix("f32");
  // ax: y = A X (37 x 2), X random (seed 5) regenerated by ooccheck.
  const std::vector<double> x = random_x(5, kCols, 2);
  std::vector<double> y = product("ax", a, x, 2);
  write_npy_f8(dir_ / "y.npy", y, 2);
  const std::vector<std::string> gen{"--op", "ax", "--x", "random", "--k", "2", "--seed", "5"};
  RunResult r = atax(dir_ / "y.npy", gen);
  EXPECT_EQ(r.exit_code, 0) << r;
  std::vector<std::string> sampled = gen;
  sampled.insert(sampled.end(), {"--sample", "5"});
  r = atax(dir_ / "y.npy", sampled);
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("checked 10 elements in 5 of 37 rows of y (--sample 5, seed 5)"),
            std::string::npos)
      << r;
  // Another seed is another X.
  std::vector<std::string> other = gen;
  other.back() = "6";
  EXPECT_EQ(atax(dir_ / "y.npy", other).exit_code, 1);
  // Every element off by 1e-9: the 5 sampled rows find 10, all rows 74.
  for (double& v : y) v *= 1 + 1e-9;
  write_npy_f8(dir_ / "y.npy", y, 2);
  r = atax(dir_ / "y.npy", sampled);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 10) << r;
  EXPECT_EQ(over_count(atax(dir_ / "y.npy", gen).out), 74);

  // atx: y = A^T X (53 x 3), X all ones (37 x 3); --sample still reads all of A.
  const std::vector<double> ones(std::size_t(kRows * 3), 1.0);
  write_npy_f8(dir_ / "y.npy", product("atx", a, ones, 3), 3);
  r = atax(dir_ / "y.npy", {"--op", "atx", "--x", "ones", "--k", "3", "--sample", "7"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("7 of 53 rows"), std::string::npos) << r;
  EXPECT_NE(r.out.find("all 37 rows were read"), std::string::npos) << r;
}

TEST_F(ooccheck_atax, ReadsTextYAndXAndAllowsForTheirDigits) {
  const Matrix a = make_matrix("f64");
  const std::vector<double> x = some_taps(std::size_t(kRows * 2), 3);
  write_text(dir_ / "x.txt", x, 2, "%.17g", ", ");
  const std::vector<double> y = product("atx", a, x, 2);
  const std::vector<std::string> opts{"--op", "atx", "--x", (dir_ / "x.txt").string()};
  write_text(dir_ / "y.txt", y, 2, "%.17g");
  RunResult r = atax(dir_ / "y.txt", opts);
  EXPECT_EQ(r.exit_code, 0) << r;
  // 9 digits: each value within 5e-9 of itself, which the tolerance allows for.
  write_text(dir_ / "y9.txt", y, 2, "%.9g");
  r = atax(dir_ / "y9.txt", opts);
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("up to 9 significant digits"), std::string::npos) << r;
  // ... but not for an error in the 6th digit.
  std::vector<double> bad = y;
  bad[std::size_t(40 * 2 + 1)] *= 1 + 3e-6;
  write_text(dir_ / "bad.txt", bad, 2, "%.9g");
  r = atax(dir_ / "bad.txt", opts);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 1) << r;
  EXPECT_NE(r.out.find("y[40, 1]"), std::string::npos) << r;
  // A ragged text file is a bad input.
  std::ofstream(dir_ / "ragged.txt") << "1 2\n3\n";
  r = atax(dir_ / "ragged.txt", opts);
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r;
}

TEST_F(ooccheck_atax, PrecisionF32AllowsForFloat32Accumulation) {
  const Matrix a = make_matrix("f32");
  const std::vector<double> x = random_x(1, kCols, 2);
  write_npy_f8(dir_ / "y.npy", product_f32(a, x, 2), 2);
  const std::vector<std::string> gen{"--x", "random", "--k", "2"};
  RunResult r = atax(dir_ / "y.npy", gen);
  EXPECT_EQ(r.exit_code, 1) << r;
  std::vector<std::string> f32 = gen;
  f32.insert(f32.end(), {"--precision", "f32"});
  r = atax(dir_ / "y.npy", f32);
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("accumulates in f32"), std::string::npos) << r;
}

TEST_F(ooccheck_atax, NanAndInfinityMustMatchInPlaceAndSign) {
  // noise: A in [0, 1), so an infinite X[3] makes every t and every y infinite (or NaN where an
  // entry of A is 0), the same in any order of summing.
  const Matrix a = make_matrix("f64", "noise");
  std::vector<double> x = some_taps(std::size_t(kCols), 5);
  x[3] = -INFINITY;
  write_npy_f8(dir_ / "x.npy", x, 1, true);
  std::vector<double> y = product("atax", a, x, 1);
  ASSERT_TRUE(std::isinf(y[0]));
  write_npy_f8(dir_ / "y.npy", y, 1, true);
  const std::vector<std::string> with_x{"--x", (dir_ / "x.npy").string()};
  RunResult r = atax(dir_ / "y.npy", with_x);
  EXPECT_EQ(r.exit_code, 0) << r;
  y[4] = -y[4];
  y[9] = NAN;
  write_npy_f8(dir_ / "y.npy", y, 1, true);
  r = atax(dir_ / "y.npy", with_x);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.out.find("2 NaN/Inf mismatches"), std::string::npos) << r;
  EXPECT_NE(r.out.find("at y[4]"), std::string::npos) << r;
}

TEST_F(ooccheck_atax, ShapeMismatchesAreInputErrorsAndMisuseUsageErrors) {
  const Matrix a = make_matrix("f32");
  const std::vector<double> x = some_taps(std::size_t(kCols), 7);
  write_npy_f8(dir_ / "x.npy", x, 1, true);
  const std::vector<double> y = product("atax", a, x, 1);
  // Y one element short: exit 3, both shapes named.
  write_npy_f8(dir_ / "short.npy", std::vector<double>(y.begin(), y.end() - 1), 1, true);
  const std::vector<std::string> with_x{"--x", (dir_ / "x.npy").string()};
  RunResult r = atax(dir_ / "short.npy", with_x);
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("is 52 x 1"), std::string::npos) << r;
  EXPECT_NE(r.err.find("gives 53 x 1"), std::string::npos) << r;
  // X of the wrong length (A's rows instead of its columns): exit 3.
  write_npy_f8(dir_ / "y.npy", y, 1, true);
  write_npy_f8(dir_ / "x37.npy", some_taps(std::size_t(kRows), 7), 1, true);
  r = atax(dir_ / "y.npy", {"--x", (dir_ / "x37.npy").string()});
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("37 rows"), std::string::npos) << r;
  // Y with another k than X: exit 3.
  r = atax(dir_ / "y.npy", {"--x", "random", "--k", "2"});
  EXPECT_EQ(r.exit_code, 3) << r;
  // Usage: no --x, an unknown --op, --k against an X file, a missing X file, options of other
  // modes, --op without --atax.
  for (const std::vector<std::string>& bad : {std::vector<std::string>{},
                                              {"--x", "ones", "--op", "xta"},
                                              {"--x", (dir_ / "x.npy").string(), "--k", "2"},
                                              {"--x", "random", "--k", "0"},
                                              {"--x", "ones", "--precision", "f16"},
                                              {"--x", "ones", "--radius", "2"},
                                              {"--x", "ones", "--tolerance", "1"},
                                              {"--x", "ones", "--compare"}}) {
    r = atax(dir_ / "y.npy", bad);
    EXPECT_EQ(r.exit_code, 2) << (bad.empty() ? "(no --x)" : bad.back()) << "\n" << r;
  }
  r = atax(dir_ / "y.npy", {"--x", (dir_ / "missing.npy").string()});
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("missing.npy"), std::string::npos) << r;
  r = run("ooccheck", {(dir_ / "y.npy").string(), a_path_.string(), "--width", "53", "--op", "ax"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("--op belongs to --atax"), std::string::npos) << r;
  // A matrix has one channel.
  const fs::path rgb = make_image("rgb.raw", kCols, kRows, "f32", 3);
  r = run("ooccheck", {"--atax", (dir_ / "y.npy").string(), rgb.string(), "--cols", "53",
                       "--channels", "3", "--x", "ones"});
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("one channel"), std::string::npos) << r;
}

TEST_F(ooccheck_atax, OocgenLowRankFollowsItsDefinition) {
  // A[r, c] = (1/sqrt(R)) sum_{i<R} u_i(r) v_i(c) + s e(r, c) with the hashes of oocgen --help,
  // written here again; f64 keeps the double it computes.
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  auto signed_unit = [](std::uint64_t h) { return 2 * (double(h >> 11) * 0x1p-53) - 1; };
  const std::uint64_t seed = 4, G = 0x9e3779b97f4a7c15ULL, K = 0xd1b54a32d192ed03ULL;
  auto key = [&](std::uint64_t which, std::uint64_t j) { return mix(mix(seed * G + which) + j); };
  const int rank = 3;
  const double noise = 0.25;
  const fs::path p = dir_ / "lr.raw";
  RunResult r =
      run("oocgen", {p.string(), "--width", "29", "--height", "13", "--type", "f64", "--pattern",
                     "low-rank", "--rank", "3", "--noise", "0.25", "--seed", "4", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const Matrix a = read_matrix(p, 13, 29, "f64");
  double worst = 0;
  for (std::uint64_t row = 0; row < 13; ++row)
    for (std::uint64_t c = 0; c < 29; ++c) {
      double s = 0;
      for (std::uint64_t i = 0; i < rank; ++i)
        s += signed_unit(mix(key(1, i) ^ (row * K))) * signed_unit(mix(key(2, i) ^ (c * K)));
      const double want =
          s / std::sqrt(double(rank)) + noise * signed_unit(mix(key(3, row) ^ (c * K)));
      worst = std::max(worst, std::abs(want - a.at(std::int64_t(row), std::int64_t(c))));
    }
  EXPECT_LT(worst, 1e-15);
  // The pattern string says the same; integer types are refused.
  r = run("oocgen", {(dir_ / "lr2.raw").string(), "--width", "29", "--height", "13", "--type",
                     "f64", "--pattern", "low-rank:3:0.25", "--seed", "4", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(read_file(dir_ / "lr2.raw"), read_file(p));
  r = run("oocgen", {(dir_ / "lr3.raw").string(), "--width", "29", "--height", "13", "--type",
                     "u16", "--pattern", "low-rank", "-q"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("f32 or f64"), std::string::npos) << r;
  r = run("oocgen",
          {(dir_ / "lr3.raw").string(), "--width", "29", "--height", "13", "--rank", "3"});
  EXPECT_EQ(r.exit_code, 2) << r;
}

}  // namespace
