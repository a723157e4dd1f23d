// ooccheck --kernel: the 2-D reference accepts oocconv --kernel over types, channels, borders,
// kernel files and built-ins (rank 1 or not, larger than the image, the FFT's rounding), matches
// hand-computed results and the built-ins' definitions, finds a corrupted sample (also under
// --sample) and refuses bad kernels.
#include <gtest/gtest.h>

#include "ooccheck_cli_support.hpp"

namespace {

using namespace ooc::test::ooccheck_cli;

// ---------------------------------------------------------------------------------------------
// --kernel (2-D convolution).

TEST_F(ooccheck, KernelReferencePassesOocconvAcrossTypesChannelsBordersAndKernels) {
  // A rank-2 text kernel with commas, blank and comment lines; a 5 x 7 .npy (f8) and a 3 x 5 one
  // (f4, rank 1 by construction: oocconv runs it as factors); the built-ins. 37 x 71: odd, and
  // no multiple of ooccheck's 64-row bands nor of oocconv's 7.
  std::ofstream(dir_ / "k.txt") << "# 3 x 5\n0.5, -1, 2, 0.25 -0.75\n\n1 0 -2 3 0.5 # row 2\n"
                                << "-1,1,1,-1,0.125\n";
  const std::vector<double> k57 = some_taps(35, 7);
  write_npy(dir_ / "k57.npy", "<f8", 5, 7, k57.data(), k57.size() * 8);
  std::vector<float> k35;
  for (const double c : {1.0, -0.5, 0.25})
    for (const double r : {0.5, 2.0, -1.0, 0.75, 1.5}) k35.push_back(float(c * r));
  write_npy(dir_ / "k35.npy", "<f4", 3, 5, k35.data(), k35.size() * 4);
  const std::vector<std::string> kernels{(dir_ / "k.txt").string(),
                                         (dir_ / "k57.npy").string(),
                                         (dir_ / "k35.npy").string(),
                                         "laplace",
                                         "sobel-x",
                                         "sobel-y",
                                         "box:5",
                                         "gaussian2d:1.2"};
  const std::vector<std::vector<std::string>> borders{
      {"--border", "reflect"},
      {"--border", "constant", "--border-value", "17.5"},
      {"--border", "wrap"},
      {"--border", "mirror"},
      {"--border", "nearest"}};
  std::size_t i = 0;
  for (const std::string type : {"u8", "u16", "f32"}) {
    for (const int channels : {1, 3}) {
      const fs::path in = make_image("in_" + type + ".raw", 37, 71, type, channels);
      for (const auto& kernel : kernels) {
        std::vector<std::string> filter{"--kernel", kernel};
        const auto& border = borders[i++ % borders.size()];
        filter.insert(filter.end(), border.begin(), border.end());
        expect_reference_agrees(in, raw_input(37, type, channels), filter);
      }
    }
  }
  // Output types and precisions as oocconv's.
  const fs::path in = make_image("in16.raw", 37, 71, "u16", 2);
  const auto input = raw_input(37, "u16", 2);
  expect_reference_agrees(in, input, {"--kernel", "laplace", "--out-type", "f32"});
  expect_reference_agrees(in, input, {"--kernel", "sobel-y", "--out-type", "i16"});
  expect_reference_agrees(in, input,
                          {"--kernel", (dir_ / "k57.npy").string(), "--precision", "f64"});
}

TEST_F(ooccheck, KernelReferenceAllowsTheFftsRoundingAndStillCatchesAnError) {
  // --method fft: the bound adds the FFT's rounding (fft_error_bound x sum|k| x max|input|,
  // named in the summary), and an output one tap off still fails. A spike of 1e5 in the tile
  // makes the FFT's rounding of its small neighbours far larger than the direct sum's bound.
  const fs::path in = make_image("in_fft.raw", 61, 45, "f32", 1);
  const auto input = raw_input(61, "f32", 1);
  {
    std::fstream f(in, std::ios::in | std::ios::out | std::ios::binary);
    const float spike = 1e5f;
    f.seekp((20 * 61 + 30) * 4);
    f.write(reinterpret_cast<const char*>(&spike), 4);
  }
  {
    std::ofstream k(dir_ / "k7.txt");
    for (int y = 0; y < 7; ++y) {
      for (int x = 0; x < 7; ++x) k << ((x * 3 + y * 5) % 7) - 2.5 << (x < 6 ? " " : "\n");
    }
  }
  const std::vector<std::string> filter{"--kernel", (dir_ / "k7.txt").string(), "--method", "fft"};
  expect_reference_agrees(in, input, filter);
  const fs::path out = dir_ / "out.raw";
  const RunResult r = check(out, in, input, filter);
  EXPECT_NE(r.out.find("the FFT's rounding"), std::string::npos) << r;
  // Held to the direct sum's bound, the same output fails: the allowance is needed.
  EXPECT_EQ(check(out, in, input, {"--kernel", (dir_ / "k7.txt").string(), "--method", "direct"})
                .exit_code,
            1);
  // The same kernel with one tap changed, checked as if it were the given one: fails.
  const fs::path other = dir_ / "other.raw";
  {
    std::ifstream a(dir_ / "k7.txt");
    std::string text((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
    text[0] = text[0] == '-' ? ' ' : '-';
    std::ofstream(dir_ / "k7b.txt") << text;
  }
  conv(in, other, input, {"--kernel", (dir_ / "k7b.txt").string(), "--method", "fft"});
  EXPECT_EQ(check(other, in, input, filter).exit_code, 1);
}

TEST_F(ooccheck, KernelReferencePassesAKernelLargerThanTheImage) {
  // 25 x 23 taps over 9 x 6 pixels: coordinates fold over the image several times both ways.
  const std::vector<double> k = some_taps(25 * 23, 3);
  write_npy(dir_ / "big.npy", "<f8", 25, 23, k.data(), k.size() * 8);
  const fs::path in = make_image("tiny.raw", 9, 6, "f32", 2);
  for (const std::string border : {"reflect", "mirror", "nearest", "wrap", "constant"})
    expect_reference_agrees(
        in, raw_input(9, "f32", 2),
        {"--kernel", (dir_ / "big.npy").string(), "--border", border, "--border-value", "0.25"});
}

TEST_F(ooccheck, KernelReferenceMatchesConvolutionsComputedByHand) {
  auto write_f64 = [&](const std::string& name, std::vector<double> v) {
    const fs::path p = dir_ / name;
    write_samples(p, v);
    return p;
  };
  // [[1 2] [3 4]] under the 4-neighbour Laplacian: reflect repeats the edge sample, constant 0
  // drops it.
  const fs::path square = write_f64("square.raw", {1, 2, 3, 4});
  const auto input2 = raw_input(2, "f64");
  const std::vector<std::string> exact{"--tolerance", "0"};
  EXPECT_EQ(
      check(write_f64("lr.raw", {3, 1, -1, -3}), square, input2, {"--kernel", "laplace"}, exact)
          .exit_code,
      0);
  EXPECT_EQ(check(write_f64("lc.raw", {1, -3, -7, -11}), square, input2,
                  {"--kernel", "laplace", "--border", "constant"}, exact)
                .exit_code,
            0);
  // A ramp 0 1 2 3 4 on 3 rows under sobel-x (convolution flips it: 4 x (left - right)) and
  // sobel-y (rows alike: 0), nearest.
  const fs::path ramp = write_f64("ramp.raw", {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
  const auto input5 = raw_input(5, "f64");
  std::vector<double> sx;
  for (int y = 0; y < 3; ++y) sx.insert(sx.end(), {-4, -8, -8, -8, -4});
  const fs::path gx = write_f64("gx.raw", sx);
  EXPECT_EQ(
      check(gx, ramp, input5, {"--kernel", "sobel-x", "--border", "nearest"}, exact).exit_code, 0);
  EXPECT_EQ(check(write_f64("gy.raw", std::vector<double>(15, 0.0)), ramp, input5,
                  {"--kernel", "sobel-y", "--border", "nearest"}, exact)
                .exit_code,
            0);
  // The kernel's orientation matters: sobel-x's output is no sobel-y's.
  RunResult r = check(gx, ramp, input5, {"--kernel", "sobel-y", "--border", "nearest"}, exact);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 15) << r;
  // A 1 x 3 text kernel 1 2 3 along x (as the separable hand case: reflect 7 10 16 21).
  std::ofstream(dir_ / "row.txt") << "1 2 3\n";
  const fs::path line = write_f64("line.raw", {1, 2, 3, 4});
  r = check(write_f64("lx.raw", {7, 10, 16, 22}), line, raw_input(4, "f64"),
            {"--kernel", (dir_ / "row.txt").string()}, exact);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 1) << r;
  EXPECT_EQ(check(write_f64("lx.raw", {7, 10, 16, 21}), line, raw_input(4, "f64"),
                  {"--kernel", (dir_ / "row.txt").string()}, exact)
                .exit_code,
            0);
}

TEST_F(ooccheck, KernelBuiltinsFollowTheirDefinitions) {
  // A unit impulse in the middle of a 31 x 31 f64 image, constant border 0: the output is the
  // kernel itself around it. Expected taps computed here from the definitions.
  constexpr int kS = 31, kC = 15;
  std::vector<double> impulse(kS * kS, 0.0);
  impulse[kC * kS + kC] = 1;
  const fs::path in = dir_ / "impulse.raw", out = dir_ / "k.raw";
  write_samples(in, impulse);
  const auto input = raw_input(kS, "f64");
  auto gaussian = [](int r, double sigma) {
    std::vector<double> t;
    double sum = 0;
    for (int i = -r; i <= r; ++i) sum += std::exp(-0.5 * (i / sigma) * (i / sigma));
    for (int i = -r; i <= r; ++i) t.push_back(std::exp(-0.5 * (i / sigma) * (i / sigma)) / sum);
    return t;
  };
  auto placed = [&](const std::vector<double>& col, const std::vector<double>& row) {
    std::vector<double> v(kS * kS, 0.0);
    const int ry = int(col.size() / 2), rx = int(row.size() / 2);
    for (int i = -ry; i <= ry; ++i)
      for (int j = -rx; j <= rx; ++j) v[(kC + i) * kS + kC + j] = col[ry + i] * row[rx + j];
    return v;
  };
  const std::vector<std::pair<std::string, std::vector<double>>> cases{
      {"gaussian2d:1", placed(gaussian(3, 1.0), gaussian(3, 1.0))},
      {"gaussian2d:1.5", placed(gaussian(5, 1.5), gaussian(5, 1.5))},  // radius ceil(4.5)
      {"box:3", placed(std::vector<double>(3, 1.0 / 3), std::vector<double>(3, 1.0 / 3))},
      {"sobel-x", placed({1, 2, 1}, {-1, 0, 1})},
      {"sobel-y", placed({-1, 0, 1}, {1, 2, 1})},
  };
  for (const auto& [kernel, expected] : cases) {
    SCOPED_TRACE(kernel);
    const std::vector<std::string> filter{"--kernel", kernel, "--border", "constant"};
    write_samples(out, expected);
    RunResult r = check(out, in, input, filter);
    EXPECT_EQ(r.exit_code, 0) << r;
    // Off by 1e-12 relative (another normalization) fails: f64 all the way allows ~1e-14.
    std::vector<double> wrong = expected;
    for (double& v : wrong) v *= 1 + 1e-12;
    write_samples(out, wrong);
    r = check(out, in, input, filter);
    EXPECT_EQ(r.exit_code, 1) << r;
  }
}

TEST_F(ooccheck, KernelReferenceFailsACorruptedOutputAlsoInSampledBands) {
  const fs::path in = make_image("in.raw", 129, 5 * 64 - 3, "u16");
  const fs::path out = dir_ / "out.raw";
  const auto input = raw_input(129, "u16");
  const std::vector<std::string> filter{"--kernel", "laplace", "--border", "wrap"};
  conv(in, out, input, filter);
  RunResult r = check(out, in, input, filter, {"--sample", "2"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("in 2 of 5 bands of 64 rows (--sample 2, seed 1)"), std::string::npos) << r;
  // The top bit of one sample: off by exactly 32768.
  flip_byte(out, (100 * 129 + 40) * 2 + 1, 0x80);
  r = check(out, in, input, filter);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 1) << r;
  EXPECT_NE(r.out.find("max abs error 32768 at row 100 sample 40"), std::string::npos) << r;
  // One more in every band: any 2 bands picked hold 2.
  for (int band = 0; band < 5; ++band) flip_byte(out, (band * 64 + 7) * 129 * 2 + 1, 0x80);
  r = check(out, in, input, filter, {"--sample", "2", "--seed", "5"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_GE(over_count(r.out), 2) << r;
  EXPECT_LE(over_count(r.out), 3) << r;

  // f32: one sample scaled by 1.001, far above f32 rounding.
  const fs::path inf = make_image("inf.raw", 64, 64, "f32", 3);
  const auto input_f = raw_input(64, "f32", 3);
  const std::vector<std::string> gauss{"--kernel", "gaussian2d:1.5"};
  conv(inf, out, input_f, gauss);
  std::vector<float> v = read_floats(out);
  v[(33 * 64 + 20) * 3 + 1] *= 1.001f;
  write_samples(out, v);
  r = check(out, inf, input_f, gauss);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 1) << r;
  EXPECT_NE(r.out.find("at row 33 sample 61 (x 20, channel 1)"), std::string::npos) << r;
}

TEST_F(ooccheck, BadKernelsAreUsageErrors) {
  const fs::path in = make_image("in.raw", 20, 10, "f32");
  auto text = [&](const std::string& name, const std::string& body) {
    std::ofstream(dir_ / name) << body;
    return (dir_ / name).string();
  };
  // Every real dtype is a kernel (as oocconv takes it); a complex one is not.
  const float complex_taps[18] = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0};
  write_npy(dir_ / "c8.npy", "<c8", 3, 3, complex_taps, sizeof complex_taps);
  const double even[6] = {1, 2, 3, 4, 5, 6};
  write_npy(dir_ / "even.npy", "<f8", 2, 3, even, sizeof even);
  const std::vector<std::pair<std::string, std::string>> cases{
      {text("even.txt", "1 2\n3 4\n"), "odd"},
      {text("ragged.txt", "1 2 3\n4 5\n6 7 8\n"), "line 2"},
      {text("word.txt", "1 2 x\n"), "'x' is not a number"},
      {text("nan.txt", "1 nan 1\n"), "not finite"},
      {text("empty.txt", "# nothing\n\n"), "no taps"},
      {(dir_ / "c8.npy").string(), "has dtype '<c8'"},
      {(dir_ / "even.npy").string(), "odd"},
      {dir_.string(), "not a regular file"},
      {"gauss:2", "neither a file nor a built-in"},
      {"box:4", "odd N"},
      {"gaussian2d:0", "sigma above 0"},
      {"gaussian2d:1e9", "sigma above 0"},
  };
  for (const auto& [kernel, message] : cases) {
    const RunResult r = check(in, in, {"--width", "20"}, {"--kernel", kernel});
    EXPECT_EQ(r.exit_code, 2) << kernel << "\n" << r;
    EXPECT_NE(r.err.find(message), std::string::npos) << kernel << "\n" << r;
  }
  // Options oocconv refuses beside --kernel, ooccheck refuses too.
  const RunResult r = check(in, in, {"--width", "20"}, {"--kernel", "laplace", "--radius", "2"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("--kernel excludes"), std::string::npos) << r;
}

}  // namespace
