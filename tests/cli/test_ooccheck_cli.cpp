// End-to-end tests of ooccheck: its float64 reference accepts what oocconv writes over a sweep of
// types, channels, borders and radii, rejects an output with a few corrupted samples and says how
// many, finds corruption in the bands that --sample picks, refuses an output of another geometry,
// and --compare still judges two images. Adversarial images (noise with one huge sample) check
// that the per-sample tolerances of both modes see tampering anywhere; its own taps are checked
// against their definitions; radii beyond the image are fast, and absurd ones refused.
// --kernel: the 2-D reference accepts oocconv --kernel over types, channels, borders, kernel
// files and built-ins (rank 1 or not, larger than the image), matches hand-computed results and
// the built-ins' definitions, finds a corrupted sample (also under --sample) and refuses bad
// kernels. --equalize: accepts ooceq's output, rounds in float32 as cv2.equalizeHist does, leaves
// a constant image alone, finds a corrupted sample and refuses what ooceq refuses. --atax: accepts
// oocatax's products (atax, ax, atx) computed here by plain float64 loops, from .npy and text Y
// and X and from generated X, finds a corrupted element (also in sampled rows), tells float32 from
// float64 accumulation, matches NaN and infinities, and refuses wrong shapes; oocgen's low-rank
// matrix follows its documented definition.
//
// The binaries are found through OOC_BIN_DIR (set by CTest), else next to this test executable or
// in one of its parent directories. Each runs through fork/execv with stdout and stderr sent to
// files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace fs = std::filesystem;

namespace {

using ooc::test::read_file;

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal, or never ran
  std::string out, err;
};

std::ostream& operator<<(std::ostream& os, const RunResult& r) {
  return os << "exit " << r.exit_code << "\n--- stdout:\n" << r.out << "--- stderr:\n" << r.err;
}

// XORs `mask` into the byte at `offset` of a file, in place (pread/pwrite: the rest stays).
void flip_byte(const fs::path& path, std::int64_t offset, unsigned char mask) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, offset), 1) << std::strerror(errno);
  b ^= mask;
  ASSERT_EQ(::pwrite(fd, &b, 1, offset), 1) << std::strerror(errno);
  ::close(fd);
}

// The input options of a raw image.
std::vector<std::string> raw_input(std::int64_t width, const std::string& type, int channels = 1) {
  return {"--width", std::to_string(width), "--type", type, "--channels", std::to_string(channels)};
}

std::vector<float> read_floats(const fs::path& path) {
  const std::string bytes = read_file(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

template <class T>
void write_samples(const fs::path& path, const std::vector<T>& v) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
}

// The number in "N over tolerance" of ooccheck's report, or -1.
long long over_count(const std::string& report) {
  std::smatch m;
  static const std::regex re("(\\d+) over tolerance");
  return std::regex_search(report, m, re) ? std::stoll(m[1]) : -1;
}

class OoccheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = ooc::test::find_bin_dir("ooccheck");
    ASSERT_FALSE(bin_.empty() || !fs::exists(bin_ / "ooccheck"))
        << "ooccheck not found: set OOC_BIN_DIR to the directory that holds it";
    char tmpl[] = "/tmp/ooc_check_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }

  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  RunResult run(const std::string& tool, const std::vector<std::string>& args) {
    std::vector<std::string> argv_s{(bin_ / tool).string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const fs::path out = dir_ / ".stdout", err = dir_ / ".stderr";
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    RunResult r;
    if (out_fd < 0 || err_fd < 0) {
      ADD_FAILURE() << "cannot open capture files in " << dir_;
      return r;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(out_fd, STDOUT_FILENO);
      ::dup2(err_fd, STDERR_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out_fd);
    ::close(err_fd);
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid) {
      ADD_FAILURE() << "cannot run " << argv_s[0] << ": " << std::strerror(errno);
      return r;
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
  }

  // A random raw image from oocgen (noise; deterministic for the seed).
  fs::path make_image(const std::string& name, std::int64_t width, std::int64_t height,
                      const std::string& type, int channels = 1, int seed = 1) {
    const fs::path p = dir_ / name;
    const RunResult r =
        run("oocgen", {p.string(), "--width", std::to_string(width), "--height",
                       std::to_string(height), "--type", type, "--channels",
                       std::to_string(channels), "--seed", std::to_string(seed), "-q"});
    EXPECT_EQ(r.exit_code, 0) << r;
    return p;
  }

  // oocconv IN OUT <input> <filter> on the CPU, with a band height that divides nothing.
  void conv(const fs::path& in, const fs::path& out, const std::vector<std::string>& input,
            const std::vector<std::string>& filter) {
    std::vector<std::string> args{in.string(), out.string()};
    args.insert(args.end(), input.begin(), input.end());
    args.insert(args.end(), filter.begin(), filter.end());
    for (const char* a : {"--device", "cpu", "--band-rows", "7", "-q"}) args.emplace_back(a);
    const RunResult r = run("oocconv", args);
    ASSERT_EQ(r.exit_code, 0) << r;
  }

  // ooccheck OUT IN <input> <filter> <extra>.
  RunResult check(const fs::path& out, const fs::path& in, const std::vector<std::string>& input,
                  const std::vector<std::string>& filter,
                  const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{out.string(), in.string()};
    for (const auto* v : {&input, &filter, &extra}) args.insert(args.end(), v->begin(), v->end());
    return run("ooccheck", args);
  }

  // oocconv, then ooccheck with the same options: must pass.
  void expect_reference_agrees(const fs::path& in, const std::vector<std::string>& input,
                               const std::vector<std::string>& filter) {
    const fs::path out = dir_ / "out.raw";
    conv(in, out, input, filter);
    const RunResult r = check(out, in, input, filter);
    std::string what;
    for (const auto* v : {&input, &filter})
      for (const auto& a : *v) what += a + " ";
    EXPECT_EQ(r.exit_code, 0) << what << "\n" << r;
    EXPECT_NE(r.out.find("OK: within tolerance"), std::string::npos) << what << "\n" << r;
    EXPECT_EQ(over_count(r.out), 0) << r;
  }

  fs::path bin_, dir_;
};

// Test names read "cli.ooccheck.*", so that `ctest -R ooccheck` runs them.
using ooccheck = OoccheckCli;

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

// ---------------------------------------------------------------------------------------------
// --kernel (2-D convolution) and --equalize.

// A 2-D .npy array of `descr` ('<f8', '<f4', '|u1') with the given rows, columns and raw data.
void write_npy(const fs::path& path, const std::string& descr, std::int64_t rows, std::int64_t cols,
               const void* data, std::size_t bytes) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');  // data 64-byte aligned, as NumPy does
  header += '\n';
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(header.size() & 0xff),
                       static_cast<char>(header.size() >> 8)};
  f.write(len, 2);
  f << header;
  f.write(static_cast<const char*>(data), std::streamsize(bytes));
}

// Uniform taps in [-1, 1) from a fixed linear congruential sequence (no library involved).
std::vector<double> some_taps(std::size_t n, std::uint64_t seed) {
  std::vector<double> v(n);
  for (double& t : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    t = double(seed >> 11) * 0x1p-52 - 1;
  }
  return v;
}

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

TEST_F(ooccheck, EqualizePassesOoceqOutputAndSamplesOnlyTheComparison) {
  for (const std::string type : {"u8", "u16"}) {
    for (const int channels : {1, 3}) {
      SCOPED_TRACE(type + " x " + std::to_string(channels));
      const fs::path in = make_image("in.raw", 45, 200, type, channels, 3);
      const fs::path out = dir_ / "eq.raw";
      const auto input = raw_input(45, type, channels);
      std::vector<std::string> args{in.string(),   out.string(), "--device", "cpu",
                                    "--band-rows", "7",          "-q"};
      args.insert(args.end(), input.begin(), input.end());
      const RunResult e = run("ooceq", args);
      ASSERT_EQ(e.exit_code, 0) << e;
      std::vector<std::string> c{"--equalize", out.string(), in.string()};
      c.insert(c.end(), input.begin(), input.end());
      RunResult r = run("ooccheck", c);
      EXPECT_EQ(r.exit_code, 0) << r;
      EXPECT_NE(r.out.find("checked " + std::to_string(45 * 200 * channels) + " samples"),
                std::string::npos)
          << r;
      c.insert(c.end(), {"--sample", "1"});
      r = run("ooccheck", c);
      EXPECT_EQ(r.exit_code, 0) << r;
      EXPECT_NE(r.out.find("in 1 of 4 bands"), std::string::npos) << r;
      EXPECT_NE(r.out.find("histogram of every row"), std::string::npos) << r;
    }
  }
}

TEST_F(ooccheck, EqualizeRoundsInFloat32AsCv2Does) {
  // 0 once, 1 and 2 seven times each: N - h[0] = 14, and 1 maps to 7 x float32(255 / 14). The
  // float32 scale is just below 255 / 14, so 127.49999 -> 127 (cv2.equalizeHist says 127);
  // exact arithmetic would make it the tie 127.5 -> 128. u16: 23 samples, 11 and 11: 32767.
  auto image = [&](const std::string& name, auto zero, int n) {
    using T = decltype(zero);
    std::vector<T> v{T(0)};
    v.insert(v.end(), n, T(1));
    v.insert(v.end(), n, T(2));
    write_samples(dir_ / name, v);
    return v.size();
  };
  auto expect = [&](const std::string& name, auto zero, int n, double mid, double top) {
    using T = decltype(zero);
    std::vector<T> v{T(0)};
    v.insert(v.end(), n, T(mid));
    v.insert(v.end(), n, T(top));
    write_samples(dir_ / name, v);
  };
  const std::size_t w8 = image("in8.raw", std::uint8_t{}, 7);
  const std::size_t w16 = image("in16.raw", std::uint16_t{}, 11);
  auto judge = [&](const std::string& out, const std::string& in, std::size_t w,
                   const std::string& type) {
    return run("ooccheck", {"--equalize", (dir_ / out).string(), (dir_ / in).string(), "--width",
                            std::to_string(w), "--type", type});
  };
  expect("ok8.raw", std::uint8_t{}, 7, 127, 255);
  expect("bad8.raw", std::uint8_t{}, 7, 128, 255);
  expect("ok16.raw", std::uint16_t{}, 11, 32767, 65535);
  expect("bad16.raw", std::uint16_t{}, 11, 32768, 65535);
  RunResult r = judge("ok8.raw", "in8.raw", w8, "u8");
  EXPECT_EQ(r.exit_code, 0) << r;
  r = judge("bad8.raw", "in8.raw", w8, "u8");
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 7) << r;
  EXPECT_EQ(judge("ok16.raw", "in16.raw", w16, "u16").exit_code, 0);
  EXPECT_EQ(judge("bad16.raw", "in16.raw", w16, "u16").exit_code, 1);
  // ooceq agrees.
  const RunResult e = run("ooceq", {(dir_ / "in8.raw").string(), (dir_ / "eq8.raw").string(),
                                    "--width", std::to_string(w8), "-q"});
  ASSERT_EQ(e.exit_code, 0) << e;
  EXPECT_EQ(read_file(dir_ / "eq8.raw"), read_file(dir_ / "ok8.raw"));
}

TEST_F(ooccheck, EqualizeLeavesAConstantImageAndFailsACorruptedOne) {
  const std::vector<std::uint16_t> flat(3 * 40 * 30, 40000);
  write_samples(dir_ / "flat.raw", flat);
  const std::vector<std::string> input{"--width", "40", "--type", "u16", "--channels", "3"};
  auto judge = [&](const fs::path& out, const fs::path& in) {
    std::vector<std::string> args{"--equalize", out.string(), in.string()};
    args.insert(args.end(), input.begin(), input.end());
    return run("ooccheck", args);
  };
  RunResult r = judge(dir_ / "flat.raw", dir_ / "flat.raw");
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("one value: unchanged"), std::string::npos) << r;
  write_samples(dir_ / "zero.raw", std::vector<std::uint16_t>(flat.size(), 0));
  r = judge(dir_ / "zero.raw", dir_ / "flat.raw");
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), static_cast<long long>(flat.size())) << r;

  // ooceq's output of noise with one sample's low bit flipped: off by exactly 1, and found.
  const fs::path in = make_image("in.raw", 40, 30, "u16", 3);
  const fs::path out = dir_ / "eq.raw";
  std::vector<std::string> args{in.string(), out.string(), "-q"};
  args.insert(args.end(), input.begin(), input.end());
  ASSERT_EQ(run("ooceq", args).exit_code, 0);
  ASSERT_EQ(judge(out, in).exit_code, 0);
  flip_byte(out, (17 * 40 * 3 + 5) * 2, 0x01);
  r = judge(out, in);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 1) << r;
  EXPECT_NE(r.out.find("max abs error 1 at row 17 sample 5 (x 1, channel 2)"), std::string::npos)
      << r;
}

TEST_F(ooccheck, EqualizeRefusesWhatOoceqRefuses) {
  const fs::path in = make_image("in.raw", 20, 10, "f32");
  RunResult r = run("ooccheck", {"--equalize", in.string(), in.string(), "--width", "20"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("u8 or u16"), std::string::npos) << r;
  EXPECT_NE(r.err.find("f32"), std::string::npos) << r;
  // A .npy OUT of another type than IN's.
  const fs::path in8 = make_image("in8.raw", 20, 10, "u8");
  const fs::path out16 = make_image("out16.npy", 20, 10, "u16");
  r = run("ooccheck",
          {"--equalize", out16.string(), in8.string(), "--width", "20", "--type", "u8"});
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("input's type"), std::string::npos) << r;
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--radius", "2"},
                                                {"--kernel", "laplace"},
                                                {"--tolerance", "1"},
                                                {"--compare"}}) {
    std::vector<std::string> args{"--equalize", in8.string(), in8.string(), "--width",
                                  "20",         "--type",     "u8"};
    args.insert(args.end(), extra.begin(), extra.end());
    r = run("ooccheck", args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << "\n" << r;
  }
}

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
