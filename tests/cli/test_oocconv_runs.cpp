// oocconv runs that end: killed runs leave no finished-looking output (SIGTERM a resumable
// partial), successful ones an output of the exact size, and peak memory stays bounded by
// --mem-limit on images far larger than it.
#include <gtest/gtest.h>

#include "oocconv_cli_support.hpp"

namespace {

using namespace ooc::test::oocconv_cli;

// ---------------------------------------------------------------------------------------------
// Killed runs never leave a file that looks finished.

class OocconvKilled : public OocconvCli {
 protected:
  // Starts a long run (a 12.5 GiB output), waits until its partial output exists, then ~0.3 s
  // more, and sends `sig`.
  void SetUp() override {
    OocconvCli::SetUp();
    if (HasFatalFailure()) return;
    // oocconv reserves the whole output up front; without room it fails before any signal.
    if (free_bytes(dir_) < 14 * kGiB)
      GTEST_SKIP() << "needs 14 GiB free in " << dir_.parent_path() << " for the 12.5 GiB output, "
                   << free_bytes(dir_) / kMiB << " MiB free";
  }

  RunResult run_and_kill(int sig) {
    Child child(bin_,
                {"synth:noise", out(), "--width", "16384", "--height", "200000", "--radius", "4"},
                dir_);
    EXPECT_TRUE(child.running());
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!fs::exists(partial()) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(fs::exists(partial())) << "oocconv did not create " << partial() << " within 30 s";
    std::this_thread::sleep_for(300ms);
    child.signal(sig);
    return child.wait(60s);
  }
};

// A raw output is resumable: SIGTERM finishes the bands in flight, keeps the partial and its
// journal, and exits 75 (test_parts_and_resume.py resumes such runs and compares them).
TEST_F(OocconvKilled, SigtermKeepsAResumablePartialOutput) {
  const RunResult r = run_and_kill(SIGTERM);
  EXPECT_FALSE(r.exited && r.exit_code == 0) << r;
  EXPECT_TRUE(!r.exited || r.exit_code == 75) << r;
  EXPECT_FALSE(fs::exists(out()));
  if (r.exited && r.exit_code == 75) {
    EXPECT_TRUE(fs::exists(partial())) << r;
    EXPECT_TRUE(fs::exists(partial() + ".journal")) << r;
  }
}

TEST_F(OocconvKilled, SigkillLeavesNoFinishedOutput) {
  const RunResult r = run_and_kill(SIGKILL);
  EXPECT_FALSE(r.exited) << r;
  EXPECT_EQ(r.term_signal, SIGKILL) << r;
  EXPECT_FALSE(fs::exists(out()));  // OUT.partial may stay: nothing can remove it
}

// ---------------------------------------------------------------------------------------------
// Successful runs.

TEST_F(OocconvCli, SuccessfulRunLeavesTheOutputAtItsExactSizeAndNoPartial) {
  make_input(37, 23);
  RunResult r = run({in(), out(), "--width", "37", "--radius", "3"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_EQ(fs::file_size(out()), 37u * 23u * 4u);
  EXPECT_FALSE(fs::exists(partial()));
  EXPECT_NE(read_file(out()), input_bytes_) << "a blur of noise should change it";
  expect_input_unchanged();

  // Another type, channel count and output type: 10 x 7 pixels x 3 channels of u16 -> f64.
  const fs::path in16 = dir_ / "in16.raw";
  write_file(in16, std::string(10 * 7 * 3 * 2, '\x11'));
  const std::string out64 = (dir_ / "out64.raw").string();
  r = run({in16.string(), out64, "--width", "10", "--type", "u16", "--channels", "3", "--sigma",
           "1.5", "--out-type", "f64", "--border", "nearest"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_EQ(fs::file_size(out64), 10u * 7u * 3u * 8u);
  EXPECT_FALSE(fs::exists(out64 + ".partial"));
  // A constant image stays constant under a normalized filter with nearest borders (up to the
  // rounding of the f32 accumulation that --precision auto picks for u16).
  const std::string o = read_file(out64);
  for (std::size_t i = 0; i + 8 <= o.size(); i += 8) {
    double v;
    std::memcpy(&v, o.data() + i, 8);
    ASSERT_NEAR(v, 0x1111, 0x1111 * 1e-6) << "sample " << i / 8;  // f32 accumulation
  }
}

TEST_F(OocconvCli, StatsJsonReportsThePlanAndPeakRss) {
  make_input(37, 23);
  const RunResult r = run({in(), out(), "--width", "37", "--radius", "2", "--stats", "json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  const auto first = r.out.find_first_not_of(" \n");
  const auto last = r.out.find_last_not_of(" \n");
  ASSERT_NE(first, std::string::npos) << r;
  EXPECT_EQ(r.out[first], '{') << r;
  EXPECT_EQ(r.out[last], '}') << r;
  EXPECT_NE(r.out.find("\"band_rows\""), std::string::npos) << r;
  EXPECT_NE(r.out.find("\"peak_rss_bytes\""), std::string::npos) << r;
  EXPECT_EQ(fs::file_size(out()), 37u * 23u * 4u);
}

// ---------------------------------------------------------------------------------------------
// Memory stays bounded by --mem-limit however large the image.

constexpr std::int64_t kMemLimit = 64 * kMiB;
constexpr std::int64_t kFixedOverhead = 48 * kMiB;  // binary, libraries, TBB, page tables

TEST_F(OocconvCli, TenGiBSyntheticImageStaysUnderTheMemoryLimit) {
  const RunResult r =
      run({"synth:noise", "null:", "--width", "65536", "--height", "40000", "--type", "f32",
           "--radius", "16", "--mem-limit", "64M", "--device", "cpu"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_LT(r.max_rss_bytes, kMemLimit + kFixedOverhead) << r;
  RecordProperty("peak_rss_mib", std::to_string(r.max_rss_bytes / kMiB));
  std::cerr << "[ info ] 10 GiB synthetic: " << r.seconds << " s, peak RSS "
            << r.max_rss_bytes / kMiB << " MiB\n";
}

TEST_F(OocconvCli, MultiGiBSparseRawFileStaysUnderTheMemoryLimit) {
  // 2 GiB of f32, 65536 wide (8192 rows): a sparse file, so it costs no disk until read; the
  // output is a real file of the same size. (4 GiB takes ~25 s on a 2-core machine.)
  constexpr std::int64_t kWidth = 65536, kBytes = 2 * kGiB;
  if (free_bytes(dir_) < kBytes + kGiB)
    GTEST_SKIP() << "needs 3 GiB free in " << dir_.parent_path() << " for the 2 GiB output, "
                 << free_bytes(dir_) / kMiB << " MiB free";
  input_ = dir_ / "sparse.raw";
  {
    const int fd = ::open(input_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ASSERT_EQ(::ftruncate(fd, kBytes), 0) << std::strerror(errno);
    // A few non-zero rows, so the image is not all zero.
    const std::string row = random_f32_image(kWidth, 3);
    for (std::int64_t y : {std::int64_t{0}, std::int64_t{4000}, kBytes / (kWidth * 4) - 1})
      ASSERT_EQ(::pwrite(fd, row.data(), row.size(), y * kWidth * 4),
                static_cast<ssize_t>(row.size()));
    ::close(fd);
  }
  const RunResult r = run({in(), out(), "--width", std::to_string(kWidth), "--type", "f32",
                           "--radius", "16", "--mem-limit", "64M", "--device", "cpu"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_LT(r.max_rss_bytes, kMemLimit + kFixedOverhead) << r;
  std::error_code ec;
  EXPECT_EQ(fs::file_size(out(), ec), static_cast<std::uintmax_t>(kBytes));
  EXPECT_FALSE(fs::exists(partial()));
  std::cerr << "[ info ] 2 GiB sparse raw -> file: " << r.seconds << " s, peak RSS "
            << r.max_rss_bytes / kMiB << " MiB\n";
  fs::remove(out(), ec);
  fs::remove(input_, ec);
}

}  // namespace
