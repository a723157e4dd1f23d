// End-to-end tests of ooccheck: its float64 reference accepts what oocconv writes over a sweep of
// types, channels, borders and radii, rejects an output with a few corrupted samples and says how
// many, finds corruption in the bands that --sample picks, refuses an output of another geometry,
// and --compare still judges two images. Adversarial images (noise with one huge sample) check
// that the per-sample tolerances of both modes see tampering anywhere; its own taps are checked
// against their definitions; radii beyond the image are fast, and absurd ones refused.
#include <gtest/gtest.h>

#include "ooccheck_cli_support.hpp"

namespace {

using namespace ooc::test::ooccheck_cli;

TEST_F(ooccheck, PassesOocconvOutputAcrossTypesChannelsBordersAndRadii) {
  // 53 x 71: odd, and not a multiple of ooccheck's 64-row bands nor of oocconv's 7.
  for (const std::string type : {"u8", "u16", "f32", "f64"}) {
    for (const int channels : {1, 3}) {
      const fs::path in = make_image("in_" + type + ".raw", 53, 71, type, channels);
      const auto input = raw_input(53, type, channels);
      for (const std::vector<std::string>& border :
           {std::vector<std::string>{"--border", "reflect"},
            {"--border", "constant", "--border-value", "17.5"},
            {"--border", "wrap"}}) {
        for (const std::string radius : {"0", "1", "5", "40"}) {
          std::vector<std::string> filter{"--radius", radius};
          filter.insert(filter.end(), border.begin(), border.end());
          expect_reference_agrees(in, input, filter);
        }
      }
    }
  }
}

TEST_F(ooccheck, PassesOtherTypesPrecisionsAndOutputTypes) {
  for (const std::string type : {"i16", "u32", "i32"}) {
    const fs::path in = make_image("in.raw", 40, 66, type, 2);
    expect_reference_agrees(in, raw_input(40, type, 2), {"--sigma", "1.5", "--border", "mirror"});
  }
  const fs::path in = make_image("in16.raw", 40, 66, "u16", 4);
  const auto input = raw_input(40, "u16", 4);
  expect_reference_agrees(in, input, {"--radius", "3", "--out-type", "f32"});
  expect_reference_agrees(in, input, {"--radius", "3", "--out-type", "u8", "--border", "nearest"});
  expect_reference_agrees(in, input, {"--radius", "3", "--precision", "f64"});
  expect_reference_agrees(in, input, {"--filter", "box", "--radius", "4", "--out-type", "f64"});
}

TEST_F(ooccheck, PassesAsymmetricRowAndColumnTaps) {
  // Taps of both signs and of different lengths along x and y, and the same through a file.
  std::ofstream(dir_ / "taps.txt") << "# x, then y\n1,-2,0.5\n0.25 0.5 3 -1 0.1\n";
  for (const std::string type : {"u16", "f32"}) {
    const fs::path in = make_image("in.raw", 61, 70, type, 1);
    const auto input = raw_input(61, type);
    expect_reference_agrees(in, input,
                            {"--row-taps", "1,-2,0.5", "--col-taps", "0.25,0.5,3,-1,0.1"});
    expect_reference_agrees(in, input, {"--row-taps", "0.2,0.3,0.5", "--border", "wrap"});
    expect_reference_agrees(in, input, {"--col-taps", "1,2,3,4,5,6,7,8,9", "--out-type", "f64"});
    expect_reference_agrees(in, input,
                            {"--taps-file", (dir_ / "taps.txt").string(), "--border", "constant",
                             "--border-value", "-3"});
  }
}

TEST_F(ooccheck, MatchesAConvolutionComputedByHand) {
  // x = 1 2 3 4 under taps 1,2,3 (convolution: out(p) = x(p+1) + 2 x(p) + 3 x(p-1)), once along
  // x and once along y: reflect gives 7 10 16 21; constant 5 gives 19 10 16 22.
  auto write_f64 = [&](const std::string& name, std::vector<double> v) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 8));
    return p;
  };
  const fs::path in = write_f64("in.raw", {1, 2, 3, 4});
  const fs::path reflect = write_f64("reflect.raw", {7, 10, 16, 21});
  const fs::path constant = write_f64("constant.raw", {19, 10, 16, 22});
  const fs::path wrong = write_f64("wrong.raw", {7, 10, 16, 22});
  for (const auto& [width, taps] : {std::pair{"4", "--row-taps"}, std::pair{"1", "--col-taps"}}) {
    const auto input = raw_input(std::stoi(width), "f64");
    EXPECT_EQ(check(reflect, in, input, {taps, "1,2,3"}, {"--tolerance", "0"}).exit_code, 0);
    EXPECT_EQ(
        check(constant, in, input, {taps, "1,2,3", "--border", "constant", "--border-value", "5"},
              {"--tolerance", "0"})
            .exit_code,
        0);
    const RunResult r = check(wrong, in, input, {taps, "1,2,3"}, {"--tolerance", "0"});
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_EQ(over_count(r.out), 1) << r;
  }
}

TEST_F(ooccheck, RoundsTiesToEvenAsOocconvDoes) {
  // The mean of two u8 neighbours is exact in f32, and half the time a tie: with a tolerance of
  // 0 only the same rounding rule passes.
  const fs::path in = make_image("in.raw", 77, 20, "u8");
  const fs::path out = dir_ / "out.raw";
  const auto input = raw_input(77, "u8");
  const std::vector<std::string> filter{"--row-taps", "0.5,0.5,0"};
  conv(in, out, input, filter);
  const RunResult r = check(out, in, input, filter, {"--tolerance", "0"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("max abs error 0,"), std::string::npos) << r;
}

TEST_F(ooccheck, PassesAnImageSmallerThanTheRadius) {
  // 5 x 3 pixels under a radius of 9: coordinates fold over the image several times.
  const fs::path in = make_image("tiny.raw", 5, 3, "f32", 2);
  for (const std::string border : {"reflect", "mirror", "nearest", "wrap", "constant"})
    expect_reference_agrees(in, raw_input(5, "f32", 2),
                            {"--radius", "9", "--border", border, "--border-value", "0.25"});
  const fs::path row = make_image("row.raw", 7, 1, "u8");
  expect_reference_agrees(row, raw_input(7, "u8"), {"--radius", "4"});
}

TEST_F(ooccheck, TypeOfANpyOutputComesFromItsHeader) {
  const fs::path in = make_image("in.raw", 45, 30, "u16");
  const fs::path out = dir_ / "out.npy";
  conv(in, out, raw_input(45, "u16"), {"--radius", "2", "--out-type", "f32"});
  RunResult r = check(out, in, raw_input(45, "u16"), {"--radius", "2"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("output f32"), std::string::npos) << r;
  // An --out-type that contradicts the header is named with it.
  r = check(out, in, raw_input(45, "u16"), {"--radius", "2", "--out-type", "u8"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("u8"), std::string::npos) << r;
  EXPECT_NE(r.err.find("f32"), std::string::npos) << r;
}

TEST_F(ooccheck, PassesASyntheticInputOnlyWithTheSeedThatMadeIt) {
  const std::vector<std::string> synth{"--width", "100", "--height", "130", "--type", "f32"};
  const fs::path out = dir_ / "out.raw";
  std::vector<std::string> in3 = synth;
  in3.insert(in3.end(), {"--seed", "3"});
  conv("synth:noise", out, in3, {"--radius", "2"});
  RunResult r = check(out, "synth:noise", in3, {"--radius", "2"});
  EXPECT_EQ(r.exit_code, 0) << r;
  std::vector<std::string> in4 = synth;
  in4.insert(in4.end(), {"--seed", "4"});
  r = check(out, "synth:noise", in4, {"--radius", "2"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_GT(over_count(r.out), 1000) << r;
}

TEST_F(ooccheck, FailsACorruptedOutputAndCountsTheBadSamples) {
  const fs::path in = make_image("in.raw", 97, 150, "u16");
  const fs::path out = dir_ / "out.raw";
  const auto input = raw_input(97, "u16");
  conv(in, out, input, {"--radius", "3"});
  ASSERT_EQ(check(out, in, input, {"--radius", "3"}).exit_code, 0);
  // The top bit of 5 samples in the middle: each is then off by exactly 32768.
  const std::int64_t first = (75 * 97 + 40) * 2;
  for (int k = 0; k < 5; ++k) flip_byte(out, first + 2 * k * 13 + 1, 0x80);
  const RunResult r = check(out, in, input, {"--radius", "3"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 5) << r;
  EXPECT_NE(r.out.find("max abs error 32768 at row 75 sample 40"), std::string::npos) << r;
  EXPECT_NE(r.out.find("FAIL: 5 samples over their tolerance"), std::string::npos) << r;
}

TEST_F(ooccheck, DefaultFloatToleranceCatchesASmallRelativeError) {
  const fs::path in = make_image("in.raw", 64, 64, "f32");
  const fs::path out = dir_ / "out.raw";
  const std::vector<std::string> input{"--width", "64"};
  conv(in, out, input, {"--sigma", "1"});
  // One sample scaled by 1.001: far above f32 rounding, far below anything a byte flip does.
  std::string bytes = read_file(out);
  const std::size_t at = (33 * 64 + 20) * sizeof(float);
  float v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  v *= 1.001f;
  std::memcpy(bytes.data() + at, &v, sizeof v);
  std::ofstream(out, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  const RunResult r = check(out, in, input, {"--sigma", "1"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 1) << r;
  EXPECT_NE(r.out.find("at row 33 sample 20"), std::string::npos) << r;
  // An explicit tolerance overrides the default.
  EXPECT_EQ(check(out, in, input, {"--sigma", "1"}, {"--tolerance", "0.01"}).exit_code, 0);
}

TEST_F(ooccheck, SampleChecksSomeBandsAndFindsCorruptionInThem) {
  // 40 bands of 64 rows; one sample corrupted in every band, so any pick of bands sees it.
  const fs::path in = make_image("in.raw", 256, 40 * 64, "u8");
  const fs::path out = dir_ / "out.raw";
  const auto input = raw_input(256, "u8");
  conv(in, out, input, {"--radius", "2"});
  RunResult r = check(out, in, input, {"--radius", "2"}, {"--sample", "5"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("in 5 of 40 bands of 64 rows (--sample 5, seed 1)"), std::string::npos) << r;
  EXPECT_NE(r.out.find("checked " + std::to_string(5 * 64 * 256) + " samples"), std::string::npos)
      << r;
  for (int band = 0; band < 40; ++band) flip_byte(out, (band * 64 + 10) * 256 + 100, 0x80);
  r = check(out, in, input, {"--radius", "2"}, {"--sample", "5", "--seed", "9"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 5) << r;
  EXPECT_NE(r.out.find("seed 9"), std::string::npos) << r;
  // The same seed picks the same bands; all bands find all 40.
  EXPECT_EQ(check(out, in, input, {"--radius", "2"}, {"--sample", "5", "--seed", "9"}).out, r.out);
  r = check(out, in, input, {"--radius", "2"});
  EXPECT_EQ(over_count(r.out), 40) << r;
  EXPECT_NE(r.out.find("in 40 of 40 bands"), std::string::npos) << r;
}

TEST_F(ooccheck, OutputOfAnotherGeometryIsAnInputErrorNamingBoth) {
  const fs::path in = make_image("in.raw", 50, 41, "f32");
  // Same width, fewer rows.
  const fs::path short_out = make_image("short.raw", 50, 40, "f32");
  RunResult r = check(short_out, in, {"--width", "50"}, {"--radius", "1"});
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("50 x 40 x 1 f32"), std::string::npos) << r;
  EXPECT_NE(r.err.find("50 x 41 x 1 f32"), std::string::npos) << r;
  // A raw file whose size is no whole number of the input's rows.
  const fs::path odd_out = make_image("odd.raw", 49, 41, "f32");
  r = check(odd_out, in, {"--width", "50"}, {"--radius", "1"});
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("odd.raw"), std::string::npos) << r;
  EXPECT_NE(r.err.find("50 x 41 x 1 f32"), std::string::npos) << r;
  // A .npy of another width.
  const fs::path npy_out = make_image("wide.npy", 51, 41, "f32");
  r = check(npy_out, in, {"--width", "50"}, {"--radius", "1"});
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("51 x 41 x 1 f32"), std::string::npos) << r;
  EXPECT_NE(r.err.find("50 x 41 x 1 f32"), std::string::npos) << r;
}

TEST_F(ooccheck, MisusedOptionsAreUsageErrors) {
  const fs::path in = make_image("in.raw", 20, 20, "f32");
  RunResult r = check(in, in, {"--width", "20"}, {});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("no filter given"), std::string::npos) << r;
  r = run("ooccheck", {"--compare", in.string(), in.string(), "--width", "20", "--radius", "2"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("--radius"), std::string::npos) << r;
  r = check(in, in, {"--width", "20"}, {"--radius", "1"}, {"--margin", "2"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("--margin"), std::string::npos) << r;
}

TEST_F(ooccheck, CatchesTamperingAnywhereInAnImageWithOneHugeSample) {
  // Noise in [0, 1) with one sample of 1e6: a tolerance relative to the largest value of the whole
  // image (1e-5 x the filtered spike) lets nearly all of the tampering below through.
  constexpr std::int64_t W = 300, H = 200;
  const fs::path in = make_image("spike.raw", W, H, "f32");
  std::vector<float> image = read_floats(in);
  ASSERT_EQ(image.size(), std::size_t(W * H));
  image[100 * W + 150] = 1e6f;
  write_samples(in, image);
  const auto input = raw_input(W, "f32");
  const fs::path bad = dir_ / "tampered.raw";
  for (const std::string radius : {"3", "16"}) {
    SCOPED_TRACE("--radius " + radius);
    const std::vector<std::string> filter{"--radius", radius};
    const fs::path out = dir_ / "out.raw";
    conv(in, out, input, filter);
    const std::vector<float> good = read_floats(out);
    ASSERT_EQ(good.size(), image.size());
    auto compare = [&](const fs::path& b) {
      return run("ooccheck", {"--compare", out.string(), b.string(), "--width", "300"});
    };

    // Untouched: both modes pass, also against the same filter summed in f64.
    RunResult r = check(out, in, input, filter);
    EXPECT_EQ(r.exit_code, 0) << r;
    write_samples(bad, good);
    r = compare(bad);
    EXPECT_EQ(r.exit_code, 0) << r;
    const fs::path f64 = dir_ / "f64.raw";
    std::vector<std::string> precise = filter;
    precise.insert(precise.end(), {"--precision", "f64"});
    conv(in, f64, input, precise);
    r = compare(f64);
    EXPECT_EQ(r.exit_code, 0) << r;

    // (a) 3 rows of 4 zeroed: every zeroed sample is wrong, and the reference says so for each.
    std::vector<float> t = good;
    for (std::int64_t y = 0; y < H; ++y)
      if (y % 4 != 0) std::fill(t.begin() + y * W, t.begin() + (y + 1) * W, 0.0f);
    write_samples(bad, t);
    r = check(bad, in, input, filter);
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_EQ(over_count(r.out), H * W * 3 / 4) << r;
    r = compare(bad);
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_GT(over_count(r.out), H * W * 3 / 4 * 9 / 10) << r;

    // (b) every row shifted right by 3 pixels (rotated).
    for (std::int64_t y = 0; y < H; ++y)
      for (std::int64_t x = 0; x < W; ++x) t[y * W + x] = good[y * W + (x + W - 3) % W];
    write_samples(bad, t);
    r = check(bad, in, input, filter);
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_GT(over_count(r.out), H * W * 9 / 10) << r;
    r = compare(bad);
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_GT(over_count(r.out), H * W * 9 / 10) << r;

    // (c) one sample far from the spike off by 1e-3 relative.
    t = good;
    t[20 * W + 250] *= 1.001f;
    write_samples(bad, t);
    r = check(bad, in, input, filter);
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_EQ(over_count(r.out), 1) << r;
    EXPECT_NE(r.out.find("at row 20 sample 250"), std::string::npos) << r;
    r = compare(bad);
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_EQ(over_count(r.out), 1) << r;
    EXPECT_NE(r.out.find("at row 20 sample 250"), std::string::npos) << r;
  }
}

TEST_F(ooccheck, ReportsTheRuleAndTheWorstErrorRelativeToItsTolerance) {
  const fs::path in = make_image("in.raw", 40, 30, "u16");
  const fs::path out = dir_ / "out.raw";
  const auto input = raw_input(40, "u16");
  conv(in, out, input, {"--radius", "2"});
  RunResult r = check(out, in, input, {"--radius", "2"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("(10 taps + 4) x 2^-24 x M"), std::string::npos) << r;
  EXPECT_NE(r.out.find("b + 1 (integer output)"), std::string::npos) << r;
  EXPECT_NE(r.out.find("worst error / its tolerance: "), std::string::npos) << r;
  r = check(out, in, input, {"--radius", "2", "--out-type", "u16", "--precision", "f64"},
            {"--tolerance", "0.5"});
  EXPECT_NE(r.out.find("--tolerance 0.5 for every sample"), std::string::npos) << r;
  r = run("ooccheck", {"--compare", out.string(), out.string(), "--width", "40", "--type", "u16"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("tolerance: 1 for every sample (integers)"), std::string::npos) << r;
}

TEST_F(ooccheck, BuildsGaussianAndBoxTapsFromTheirDefinitions) {
  // A unit impulse in a 1-row image: along x the output is the taps themselves, along y (every
  // row coordinate folds onto the one row) the column taps sum to 1. The expected values are
  // computed here from the definitions, not by the library.
  constexpr int kW = 31, kC = 15;
  std::vector<double> impulse(kW, 0.0);
  impulse[kC] = 1;
  const fs::path in = dir_ / "impulse.raw", out = dir_ / "taps.raw";
  write_samples(in, impulse);
  const auto input = raw_input(kW, "f64");
  auto gaussian = [](int r, double sigma) {
    std::vector<double> t;
    double sum = 0;
    for (int i = -r; i <= r; ++i) sum += std::exp(-0.5 * (i / sigma) * (i / sigma));
    for (int i = -r; i <= r; ++i) t.push_back(std::exp(-0.5 * (i / sigma) * (i / sigma)) / sum);
    return t;
  };
  auto placed = [&](const std::vector<double>& taps) {
    std::vector<double> v(kW, 0.0);
    const int r = static_cast<int>(taps.size() / 2);
    for (int i = -r; i <= r; ++i) v[kC + i] = taps[r + i];
    return v;
  };
  const std::vector<std::pair<std::vector<std::string>, std::vector<double>>> cases{
      {{"--radius", "3"}, gaussian(3, 1.0)},
      {{"--radius", "6"}, gaussian(6, 2.0)},
      {{"--sigma", "1.5"}, gaussian(5, 1.5)},                                // radius ceil(4.5)
      {{"--sigma", "0.3333333333333334"}, gaussian(1, 0.3333333333333334)},  // radius 1, not 2
      {{"--radius", "4", "--sigma", "2.5"}, gaussian(4, 2.5)},
      {{"--radius", "0"}, {1.0}},
      {{"--filter", "box", "--radius", "4"}, std::vector<double>(9, 1.0 / 9)},
  };
  for (const auto& [filter, taps] : cases) {
    SCOPED_TRACE(filter[0] + " " + filter[1]);
    write_samples(out, placed(taps));
    RunResult r = check(out, in, input, filter);
    EXPECT_EQ(r.exit_code, 0) << r;
    // Off by 1e-12 relative (another normalization) fails: f64 all the way allows ~1e-14.
    std::vector<double> wrong = placed(taps);
    for (double& v : wrong) v *= 1 + 1e-12;
    write_samples(out, wrong);
    r = check(out, in, input, filter);
    EXPECT_EQ(r.exit_code, 1) << r;
  }
  write_samples(out, placed(gaussian(3, 1.5)));
  EXPECT_EQ(check(out, in, input, {"--radius", "3"}).exit_code, 1);
}

TEST_F(ooccheck, PassesATinyImageUnderAHugeRadiusQuickly) {
  // 100 x 50 pixels under a radius of 30000: the 60050 row coordinates of a band fold onto 50
  // rows, each filtered along x once, so this takes well under a second (minutes if every
  // coordinate were filtered).
  const fs::path in = make_image("tiny.raw", 100, 50, "f32");
  const auto input = raw_input(100, "f32");
  for (const std::string border : {"reflect", "mirror", "nearest", "wrap", "constant"}) {
    const std::vector<std::string> filter{"--radius", "30000",          "--border",
                                          border,     "--border-value", "0.5"};
    const fs::path out = dir_ / "out.raw";
    const RunResult c =
        run("oocconv", {in.string(), out.string(), "--width", "100", "--radius", "30000",
                        "--border", border, "--border-value", "0.5", "--device", "cpu", "-q"});
    ASSERT_EQ(c.exit_code, 0) << c;
    const auto start = std::chrono::steady_clock::now();
    const RunResult r = check(out, in, input, filter);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 0) << border << "\n" << r;
    // A guard against the quadratic behaviour, not a benchmark: ~0.3 s here.
    EXPECT_LT(seconds, 20) << border;
  }
}

TEST_F(ooccheck, RefusesRadiiAndSigmasItCannotHoldWithAUsageError) {
  const fs::path in = make_image("in.raw", 20, 10, "f32");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--radius", "4611686018427387904"}, "--radius"},
      {{"--filter", "box", "--radius", "4611686018427387904"}, "--radius"},
      {{"--radius", "1000000000000000000"}, "--radius"},
      {{"--radius", "9223372036854775807"}, "--radius"},
      {{"--sigma", "inf"}, "--sigma"},
      {{"--sigma", "nan"}, "--sigma"},
      {{"--sigma", "1e300"}, "--sigma"},
      {{"--sigma", "-2"}, "--sigma"},
      {{"--radius", "-1"}, "--radius"},
  };
  for (const auto& [filter, option] : cases) {
    const RunResult r = check(in, in, {"--width", "20"}, filter);
    EXPECT_EQ(r.exit_code, 2) << filter[filter.size() - 1] << "\n" << r;
    EXPECT_NE(r.err.find(option), std::string::npos) << r;
  }
}

TEST_F(ooccheck, CompareJudgesTwoImagesAndSamplesBands) {
  const fs::path in = make_image("in.raw", 129, 200, "f32");
  const fs::path x = dir_ / "x.raw", y = dir_ / "y.raw";
  const std::vector<std::string> input{"--width", "129"};
  conv(in, x, input, {"--radius", "5"});
  const RunResult ry = run("oocconv", {in.string(), y.string(), "--width", "129", "--radius", "5",
                                       "--threads", "1", "--device", "cpu", "-q"});
  ASSERT_EQ(ry.exit_code, 0) << ry;
  RunResult r =
      run("ooccheck", {"--compare", x.string(), y.string(), "--width", "129", "--tolerance", "0"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("max abs error 0,"), std::string::npos) << r;
  // The sign of one sample in each of the 4 bands.
  for (int band = 0; band < 4; ++band) flip_byte(y, ((band * 64 + 3) * 129 + 17) * 4 + 3, 0x80);
  r = run("ooccheck", {"--compare", x.string(), y.string(), "--width", "129"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 4) << r;
  EXPECT_NE(r.out.find(" sample 17 (A "), std::string::npos) << r;
  r = run("ooccheck", {"--compare", x.string(), y.string(), "--width", "129", "--sample", "2"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 2) << r;
  EXPECT_NE(r.out.find("2 of 4 bands"), std::string::npos) << r;
}

}  // namespace
