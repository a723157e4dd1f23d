// End-to-end tests of the oocconv binary: exit codes and messages of every failure a user can
// cause, that a failed or killed run leaves no finished-looking output and never touches the
// input, and that peak memory stays bounded by --mem-limit on images far larger than it.
//
// The binary is found through OOC_BIN_DIR (set by CTest), else next to this test executable or in
// one of its parent directories. Each child runs through fork/execv with stdout and stderr sent to
// files; its exit status and peak RSS come from wait4.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

using ooc::test::read_file;

std::string read_file_prefix(const fs::path& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// Random, never all-zero bytes: a valid image of any sample type (f32 NaNs aside, which the
// tests that compute on the result avoid by building floats explicitly).
std::string random_f32_image(std::int64_t samples, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::string bytes(static_cast<std::size_t>(samples) * sizeof(float), '\0');
  for (std::int64_t i = 0; i < samples; ++i) {
    const float v = dist(rng) + 0.5f;
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof v);
  }
  return bytes;
}

// Bytes an unprivileged writer may still use on the file system that holds `dir`.
std::int64_t free_bytes(const fs::path& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return 0;
  return static_cast<std::int64_t>(v.f_bavail) * static_cast<std::int64_t>(v.f_frsize);
}

struct RunResult {
  bool exited = false;  // false: killed by a signal (term_signal), or never ran
  int exit_code = -1;
  int term_signal = 0;
  std::int64_t max_rss_bytes = 0;  // the child's peak resident memory (ru_maxrss)
  double seconds = 0;
  std::string out, err;
};

std::ostream& operator<<(std::ostream& os, const RunResult& r) {
  os << (r.exited ? "exit " + std::to_string(r.exit_code)
                  : "signal " + std::to_string(r.term_signal))
     << ", " << r.seconds << " s, peak RSS " << r.max_rss_bytes / kMiB << " MiB\n--- stderr:\n"
     << r.err << "--- stdout (first 2000 bytes):\n"
     << r.out.substr(0, 2000);
  return os;
}

struct ChildOptions {
  std::optional<rlim_t> file_size_limit;  // RLIMIT_FSIZE in bytes, with SIGXFSZ ignored
};

// One oocconv process. The argument vector and the redirections are prepared before fork, so the
// child only calls async-signal-safe functions.
class Child {
 public:
  Child(const fs::path& binary, const std::vector<std::string>& args, const fs::path& io_dir,
        const ChildOptions& opt = {})
      : out_path_(io_dir / ".child.stdout"), err_path_(io_dir / ".child.stderr") {
    std::vector<std::string> argv_s{binary.string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int out_fd = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err_fd = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out_fd < 0 || err_fd < 0 || null_fd < 0) {
      ADD_FAILURE() << "cannot open capture files in " << io_dir << ": " << std::strerror(errno);
      return;
    }
    start_ = std::chrono::steady_clock::now();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(null_fd, STDIN_FILENO);
      ::dup2(out_fd, STDOUT_FILENO);
      ::dup2(err_fd, STDERR_FILENO);
      if (opt.file_size_limit) {
        ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
        const struct rlimit rl { *opt.file_size_limit, *opt.file_size_limit };
        if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(126);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    if (pid_ < 0) ADD_FAILURE() << "fork failed: " << std::strerror(errno);
    ::close(out_fd);
    ::close(err_fd);
    ::close(null_fd);
  }

  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::wait4(pid_, nullptr, 0, nullptr);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  bool running() const { return pid_ > 0; }

  // Waits for the child (SIGKILL after `timeout`, reported as a failure).
  RunResult wait(std::chrono::seconds timeout = 300s) {
    RunResult r;
    if (pid_ <= 0) return r;
    int status = 0;
    struct rusage ru {};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const pid_t got = ::wait4(pid_, &status, WNOHANG, &ru);
      if (got == pid_) break;
      if (got < 0 && errno != EINTR) {
        ADD_FAILURE() << "wait4: " << std::strerror(errno);
        pid_ = -1;
        return r;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "oocconv ran longer than " << timeout.count() << " s: killed";
        ::kill(pid_, SIGKILL);
        ::wait4(pid_, &status, 0, &ru);
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    pid_ = -1;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    r.exited = WIFEXITED(status);
    r.exit_code = r.exited ? WEXITSTATUS(status) : -1;
    r.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    r.max_rss_bytes = static_cast<std::int64_t>(ru.ru_maxrss) * 1024;  // KiB on Linux
    r.out = read_file(out_path_);
    r.err = read_file(err_path_);
    return r;
  }

 private:
  fs::path out_path_, err_path_;
  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point start_;
};

class OocconvCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto dir = ooc::test::find_bin_dir("oocconv"); !dir.empty()) bin_ = dir / "oocconv";
    ASSERT_FALSE(bin_.empty() || !fs::exists(bin_))
        << "oocconv not found: set OOC_BIN_DIR to the directory that holds it";
    char tmpl[] = "/tmp/ooc_cli_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }

  void TearDown() override {
    if (!mount_point_.empty()) ::umount2(mount_point_.c_str(), MNT_DETACH);
    if (!dir_.empty()) {
      // Undo permission changes made by a test so that the directory can be removed.
      std::error_code ec;
      for (const auto& e : fs::recursive_directory_iterator(dir_, ec))
        fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
      fs::remove_all(dir_, ec);
    }
  }

  RunResult run(const std::vector<std::string>& args, const ChildOptions& opt = {},
                std::chrono::seconds timeout = 300s) {
    Child child(bin_, args, dir_, opt);
    return child.wait(timeout);
  }

  // A companion tool (oocgen, ooccheck) from the same build as oocconv.
  RunResult run_tool(const std::string& tool, const std::vector<std::string>& args) {
    Child child(bin_.parent_path() / tool, args, dir_, {});
    return child.wait(300s);
  }

  // A program from the system (tiffinfo, vipsheader), or an empty path when it is not installed.
  static fs::path system_tool(const std::string& name) {
    for (const char* d : {"/usr/bin", "/usr/local/bin", "/bin"})
      if (fs::exists(fs::path(d) / name)) return fs::path(d) / name;
    return {};
  }
  RunResult run_system(const fs::path& tool, const std::vector<std::string>& args) {
    Child child(tool, args, dir_, {});
    return child.wait(300s);
  }

  // A 37 x 23 f32 input whose bytes the failing runs must leave alone.
  fs::path make_input(std::int64_t width = 37, std::int64_t height = 23) {
    input_ = dir_ / "in.raw";
    input_bytes_ = random_f32_image(width * height, 7);
    write_file(input_, input_bytes_);
    return input_;
  }

  void expect_input_unchanged() const {
    ASSERT_FALSE(input_.empty());
    EXPECT_TRUE(read_file(input_) == input_bytes_) << "oocconv changed its input " << input_;
  }

  // Files in the temp dir other than the input and the capture files.
  std::vector<std::string> stray_files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string n = e.path().filename().string();
      if (e.path() != input_ && n.rfind(".child.", 0) != 0) names.push_back(n);
    }
    return names;
  }

  // Runs a command that must fail with `code` and a stderr containing every phrase, and leave
  // the input as it was and nothing else behind in the temp dir.
  void expect_failure(const std::vector<std::string>& args, int code,
                      const std::vector<std::string>& phrases) {
    const RunResult r = run(args);
    EXPECT_TRUE(r.exited) << r;
    EXPECT_EQ(r.exit_code, code) << r;
    for (const auto& p : phrases)
      EXPECT_NE(r.err.find(p), std::string::npos) << "no '" << p << "' in:\n" << r;
    if (!input_.empty()) expect_input_unchanged();
  }

  std::string in() const { return input_.string(); }
  std::string out() const { return (dir_ / "out.raw").string(); }
  std::string partial() const { return out() + ".partial"; }

  fs::path bin_, dir_, input_, mount_point_;
  std::string input_bytes_;
};

// ---------------------------------------------------------------------------------------------
// Bad input: exit 3.

TEST_F(OocconvCli, MissingInputIsAnInputError) {
  expect_failure({(dir_ / "nope.raw").string(), out(), "--width", "37", "--radius", "1"}, 3,
                 {"does not exist", "nope.raw"});
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, InputThatIsADirectoryIsAnInputError) {
  fs::create_directory(dir_ / "adir");
  expect_failure({(dir_ / "adir").string(), out(), "--width", "37", "--radius", "1"}, 3,
                 {"is a directory"});
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_FALSE(fs::exists(partial()));
}

TEST_F(OocconvCli, UnreadableInputIsAnInputError) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: file permissions do not stop root";
  make_input();
  fs::permissions(input_, fs::perms::none);
  const RunResult r = run({in(), out(), "--width", "37", "--radius", "1"});
  fs::permissions(input_, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r;
  expect_input_unchanged();
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, FileSizeNotAMultipleOfTheRowNamesBothSizesAndWidthsThatFit) {
  make_input(37, 23);  // 3404 bytes; rows of width 36 f32 are 144 bytes: 3404 % 144 != 0
  const std::string size = std::to_string(37 * 23 * 4);
  expect_failure({in(), out(), "--width", "36", "--radius", "1"}, 3,
                 {size, "144", "widths that fit", "37"});
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, HeightThatDisagreesWithTheFileIsAnInputError) {
  make_input(37, 23);
  expect_failure({in(), out(), "--width", "37", "--height", "24", "--radius", "1"}, 3,
                 {"--height", "23", "24"});
  EXPECT_TRUE(stray_files().empty());
}

// ---------------------------------------------------------------------------------------------
// Bad command line: exit 2.

TEST_F(OocconvCli, UnknownSampleTypeIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "37", "--type", "f16", "--radius", "1"}, 2,
                 {"unknown sample type", "f16"});
}

TEST_F(OocconvCli, ZeroWidthIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "0", "--radius", "1"}, 2, {"--width"});
}

TEST_F(OocconvCli, MissingWidthForRawInputIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--radius", "1"}, 2, {"--width"});
}

TEST_F(OocconvCli, NoFilterOptionsIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "37"}, 2, {"no filter", "--radius"});
}

TEST_F(OocconvCli, EvenTapCountIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "37", "--taps", "1,2,2,1"}, 2, {"odd"});
  expect_failure({in(), out(), "--width", "37", "--row-taps", "1,2", "--col-taps", "1,2,1"}, 2,
                 {"odd", "--row-taps"});
}

TEST_F(OocconvCli, UnknownBorderIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "37", "--radius", "1", "--border", "clamp"}, 2,
                 {"border", "clamp"});
}

TEST_F(OocconvCli, HelpExitsZeroAndShowsExamples) {
  const RunResult r = run({"--help"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("Examples"), std::string::npos) << r;
  EXPECT_NE(r.out.find("--mem-limit"), std::string::npos) << r;
}

// ---------------------------------------------------------------------------------------------
// Output problems.

TEST_F(OocconvCli, OutputInAMissingDirectoryIsAnIoError) {
  make_input();
  expect_failure({in(), (dir_ / "missing" / "out.raw").string(), "--width", "37", "--radius", "1"},
                 4, {"does not exist", "missing"});
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, OutputThatIsTheInputIsRefused) {
  make_input();
  expect_failure({in(), in(), "--width", "37", "--radius", "1"}, 2, {"is the input"});
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, OutputThatIsASymlinkToTheInputIsRefused) {
  make_input();
  fs::create_symlink(input_, dir_ / "link.raw");
  expect_failure({in(), (dir_ / "link.raw").string(), "--width", "37", "--radius", "1"}, 2,
                 {"is the input"});
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.raw"));
  EXPECT_FALSE(fs::exists(dir_ / "link.raw.partial"));
}

TEST_F(OocconvCli, OutputThatIsARelativePathToTheInputIsRefused) {
  make_input();
  fs::create_directory(dir_ / "sub");
  const std::string dotted = (dir_ / "sub" / ".." / "in.raw").string();
  expect_failure({in(), dotted, "--width", "37", "--radius", "1"}, 2, {"is the input"});
}

TEST_F(OocconvCli, UnwritableOutputDirectoryIsAnIoError) {
  make_input();
  std::string target;
  if (::geteuid() == 0) {
    // Root ignores permission bits; sysfs refuses to create regular files even for root.
    if (!fs::is_directory("/sys/kernel"))
      GTEST_SKIP() << "running as root and /sys is not mounted: no directory root cannot write";
    target = "/sys/ooc_cli_test_" + std::to_string(::getpid()) + ".raw";
  } else {
    fs::create_directory(dir_ / "ro");
    fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    target = (dir_ / "ro" / "out.raw").string();
  }
  expect_failure({in(), target, "--width", "37", "--radius", "1"}, 4,
                 {"cannot create output", target});
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(target + ".partial"));
}

// ---------------------------------------------------------------------------------------------
// A full disk: the output cannot be made at full size.

TEST_F(OocconvCli, FileSizeLimitIsAnIoErrorThatLeavesNothingBehind) {
  make_input(256, 256);  // 256 KiB in and out
  ChildOptions opt;
  opt.file_size_limit = 64 * 1024;
  const RunResult r = run({in(), out(), "--width", "256", "--radius", "2"}, opt);
  EXPECT_TRUE(r.exited) << r;
  EXPECT_EQ(r.exit_code, 4) << r;
  EXPECT_NE(r.err.find(out()), std::string::npos) << "the message should name the output\n" << r;
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_FALSE(fs::exists(partial()));
  expect_input_unchanged();
}

TEST_F(OocconvCli, FailedRunLeavesAnExistingOutputAsItWas) {
  make_input(256, 256);
  const std::string previous = "the result of an earlier run";
  write_file(out(), previous);
  ChildOptions opt;
  opt.file_size_limit = 64 * 1024;
  const RunResult r = run({in(), out(), "--width", "256", "--radius", "2"}, opt);
  EXPECT_EQ(r.exit_code, 4) << r;
  EXPECT_EQ(read_file(out()), previous) << "a failed run replaced the existing output";
  EXPECT_FALSE(fs::exists(partial()));
  expect_input_unchanged();
}

TEST_F(OocconvCli, FullTmpfsIsAnIoErrorThatLeavesNothingBehind) {
  make_input(512, 1024);  // 2 MiB in and out, on a 1 MiB file system
  const fs::path mnt = dir_ / "tiny";
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1M") != 0)
    GTEST_SKIP() << "cannot mount a 1 MiB tmpfs (" << std::strerror(errno)
                 << "): needs root or CAP_SYS_ADMIN";
  mount_point_ = mnt;
  const std::string target = (mnt / "out.raw").string();
  const RunResult r = run({in(), target, "--width", "512", "--radius", "2"});
  EXPECT_TRUE(r.exited) << r;
  EXPECT_EQ(r.exit_code, 4) << r;
  EXPECT_NE(r.err.find(target), std::string::npos) << "the message should name the output\n" << r;
  EXPECT_NE(r.err.find("space"), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(target + ".partial"));
  expect_input_unchanged();
}

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
// journal, and exits 75 (parts_check.py resumes such runs and compares them).
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

// ---------------------------------------------------------------------------------------------
// Companion tools: oocgen makes deterministic images, ooccheck --compare judges two of them.

TEST_F(OocconvCli, OocgenIsDeterministicForASeedAndNotConstant) {
  const auto a = dir_ / "a.raw", b = dir_ / "b.raw", c = dir_ / "c.raw";
  for (const auto& [path, seed] : {std::pair{a, "5"}, std::pair{b, "5"}, std::pair{c, "6"}}) {
    const RunResult r =
        run_tool("oocgen", {path.string(), "--width", "301", "--height", "77", "--type", "u16",
                            "--channels", "3", "--seed", seed, "-q"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  }
  ASSERT_EQ(fs::file_size(a), 301u * 77u * 3u * 2u);
  const std::string da = read_file(a), db = read_file(b), dc = read_file(c);
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
  std::set<char> distinct(da.begin(), da.end());
  EXPECT_GT(distinct.size(), 200u);
}

TEST_F(OocconvCli, OoccheckPassesEqualImagesAndFailsACorruptedOne) {
  const auto gen = dir_ / "g.raw", x = dir_ / "x.raw", y = dir_ / "y.raw";
  ASSERT_EQ(run_tool("oocgen", {gen.string(), "--width", "129", "--height", "65", "-q"}).exit_code,
            0);
  // The same filter with different plans: equal to the bit.
  ASSERT_EQ(run({gen.string(), x.string(), "--width", "129", "--radius", "5", "--band-rows", "3",
                 "-q", "--device", "cpu"})
                .exit_code,
            0);
  ASSERT_EQ(run({gen.string(), y.string(), "--width", "129", "--radius", "5", "--threads", "1",
                 "-q", "--device", "cpu"})
                .exit_code,
            0);
  RunResult r = run_tool(
      "ooccheck", {"--compare", x.string(), y.string(), "--width", "129", "--tolerance", "0"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("max abs error 0"), std::string::npos) << r;
  // One sample off by 0.5: over a tolerance of 1e-3, and found where it is.
  std::string bytes = read_file(y);
  float v;
  std::memcpy(&v, bytes.data() + (40 * 129 + 17) * 4, 4);
  v += 0.5f;
  std::memcpy(bytes.data() + (40 * 129 + 17) * 4, &v, 4);
  write_file(y, bytes);
  r = run_tool("ooccheck",
               {"--compare", x.string(), y.string(), "--width", "129", "--tolerance", "1e-3"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << r;
  EXPECT_NE(r.out.find("1 over tolerance"), std::string::npos) << r;
  EXPECT_NE(r.out.find("at row 40 sample 17"), std::string::npos) << r;
}

TEST_F(OocconvCli, OocinfoListsDevicesAndDescribesFiles) {
  RunResult r = run_tool("oocinfo", {});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("CUDA devices: "), std::string::npos) << r;
  EXPECT_NE(r.out.find("oocconv --device auto would use: c"), std::string::npos) << r;
  // A raw file described by options, a .npy file by its header, side by side.
  make_input(37, 23);
  const auto npy = dir_ / "g.npy";
  ASSERT_EQ(
      run_tool("oocgen", {npy.string(), "--width", "50", "--height", "20", "--type", "u16", "-q"})
          .exit_code,
      0);
  r = run_tool("oocinfo",
               {in(), npy.string(), "--width", "37", "--mem-limit", "64M", "--device", "cpu"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("raw '" + in() + "' 37 x 23 x 1 f32"), std::string::npos) << r;
  EXPECT_NE(r.out.find("npy '" + npy.string() + "' 50 x 20 x 1 u16"), std::string::npos) << r;
  EXPECT_NE(r.out.find("plan for radius 16 on cpu"), std::string::npos) << r;
  r = run_tool("oocinfo", {(dir_ / "missing.raw").string(), "--width", "8"});
  EXPECT_TRUE(r.exited && r.exit_code == 3) << r;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r;
}

// Inputs the fuzzers found (tests/fuzz/regressions): each a clean input error.
TEST_F(OocconvCli, FuzzerFindingsAreCleanInputErrors) {
  const fs::path dir = fs::path(__FILE__).parent_path().parent_path() / "fuzz" / "regressions";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int seen = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const RunResult r = run({e.path().string(), out(), "--radius", "1", "--width", "16"});
    EXPECT_TRUE(r.exited && r.exit_code == 3) << e.path() << "\n" << r;
    EXPECT_EQ(r.err.rfind("oocconv: ", 0), 0u) << r;
    EXPECT_FALSE(fs::exists(out())) << e.path();
    ++seen;
  }
  EXPECT_GT(seen, 0);
}

// Bands that end inside strips and tiles (7 and 64 rows against strips of 21 rows, tiles of 16
// and 32): every layout must still hold the input exactly.
TEST_F(OocconvCli, TiffOutputOfBandsThatSplitStripsAndTilesRoundTrips) {
  const auto raw = dir_ / "w.raw";
  ASSERT_EQ(run_tool("oocgen", {raw.string(), "--width", "8191", "--height", "300", "--type", "u16",
                                "--channels", "3", "-q"})
                .exit_code,
            0);
  const std::string original = read_file(raw);
  for (const std::string band : {"7", "64"})
    for (const std::vector<std::string>& layout : {std::vector<std::string>{},
                                                   {"--tile", "32"},
                                                   {"--compress", "lzw"},
                                                   {"--compress", "zstd", "--tile", "16"}}) {
      const auto tif = dir_ / "w.tif", back = dir_ / "back.raw";
      std::vector<std::string> args = {raw.string(),  tif.string(), "--width", "8191",   "--type",
                                       "u16",         "--channels", "3",       "--taps", "1",
                                       "--band-rows", band,         "-q"};
      args.insert(args.end(), layout.begin(), layout.end());
      RunResult r = run(args);
      ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
      r = run({tif.string(), back.string(), "--taps", "1", "--band-rows", "5", "-q"});
      ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
      EXPECT_TRUE(read_file(back) == original)
          << "band rows " << band << ", layout " << (layout.empty() ? "strips" : layout[1]);
    }
}

TEST_F(OocconvCli, OocinfoDescribesTiffLayouts) {
  const auto tiled = dir_ / "t.tif", striped = dir_ / "s.tif";
  ASSERT_EQ(
      run_tool("oocgen", {tiled.string(), "--width", "300", "--height", "200", "--type", "u16",
                          "--channels", "3", "--tile", "64", "--compress", "zstd", "-q"})
          .exit_code,
      0);
  ASSERT_EQ(run_tool("oocgen", {striped.string(), "--width", "300", "--height", "200", "--type",
                                "f32", "--bigtiff", "yes", "-q"})
                .exit_code,
            0);
  const RunResult r = run_tool("oocinfo", {tiled.string(), striped.string(), "--device", "cpu"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("tiff '" + tiled.string() + "' 300 x 200 x 3 u16"), std::string::npos) << r;
  EXPECT_NE(r.out.find("classic TIFF, little endian, tiles 64 x 64 (20), ZSTD"), std::string::npos)
      << r;
  EXPECT_NE(r.out.find("BigTIFF, little endian, strips of"), std::string::npos) << r;
  EXPECT_NE(r.out.find("uncompressed, page 0 of 1, read mapped"), std::string::npos) << r;
}

// An output past 4 GiB becomes a BigTIFF by itself, and other readers open it. The content is
// mostly zero, and zero strips are written as holes, so the file costs little disk.
TEST_F(OocconvCli, TiffOutputPast4GiBIsABigTiffThatOtherReadersOpen) {
  const auto big = dir_ / "big.tif";
  const std::vector<std::string> geometry = {"--width", "8192",   "--height",
                                             "270000",  "--type", "u16"};
  auto args = std::vector<std::string>{big.string(), "--pattern", "gaussian-spots", "-q"};
  args.insert(args.end(), geometry.begin(), geometry.end());
  auto no = args;
  no.insert(no.end(), {"--bigtiff", "no"});
  RunResult r = run_tool("oocgen", no);
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r;
  EXPECT_NE(r.err.find("use --bigtiff auto or yes"), std::string::npos) << r;
  r = run_tool("oocgen", args);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  std::cerr << "[ info ] oocgen 4.4 GB gaussian-spots TIFF: " << r.seconds << " s\n";
  struct stat st {};
  ASSERT_EQ(::stat(big.c_str(), &st), 0);
  EXPECT_GT(std::uint64_t(st.st_size), 8192ull * 270000 * 2);
  std::cerr << "[ info ] file " << st.st_size / kMiB << " MiB, on disk "
            << st.st_blocks * 512 / kMiB << " MiB\n";
  const std::string head = read_file_prefix(big, 4);
  EXPECT_EQ(head, std::string("II+\0", 4)) << "not a little-endian BigTIFF header";
  // Samples of bands spread over the whole file, against the generator itself.
  auto check = std::vector<std::string>{
      "--compare", big.string(), "synth:gaussian-spots", "--sample", "12", "--tolerance", "0"};
  check.insert(check.end(), geometry.begin(), geometry.end());
  r = run_tool("ooccheck", check);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  if (const auto tiffinfo = system_tool("tiffinfo"); !tiffinfo.empty()) {
    r = run_system(tiffinfo, {big.string()});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
    EXPECT_NE(r.out.find("Image Width: 8192 Image Length: 270000"), std::string::npos) << r;
  }
  if (const auto vips = system_tool("vips"); !vips.empty()) {
    // libvips opens it and decodes the last rows, which lie past 4 GiB.
    r = run_system(
        vips, {"crop", big.string(), (dir_ / "tail.v").string(), "0", "269000", "8192", "1000"});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
    r = run_system(vips, {"avg", (dir_ / "tail.v").string()});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
    r = run_system(vips, {"getpoint", big.string(), "8191", "269999"});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  }
  std::error_code ec;
  fs::remove(big, ec);
  if (system_tool("tiffinfo").empty() || system_tool("vips").empty())
    GTEST_SKIP() << "the checks by tiffinfo and vips did not run: tools/bootstrap.sh installs "
                    "libtiff-tools and libvips-tools";
}

// ---------------------------------------------------------------------------------------------
// Issue 29: --part auto from the environment, -q and progress, ooceq's advice on other types,
// --no-locks, gaussian-spots at every size.

// Sets (or unsets, for nullptr) environment variables for one scope; children inherit them.
// The launcher variables of whatever runs the tests are cleared first, so that only the ones a
// test names are seen.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, const char*>>& vars) {
    for (const char* name :
         {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
          "SLURM_ARRAY_TASK_MAX", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
          "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK"})
      set(name, nullptr);
    for (const auto& [name, value] : vars) set(name, value);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// --part auto takes I/N from Slurm's variables: a value that makes no part is refused (exit 2)
// naming the variables and the values they hold, never turned into a part the user did not ask
// for ("--part -3/4"), truncated ("1215752191 parts") or ignored (the whole image as 0/1).
TEST_F(OocconvCli, PartAutoRefusesSlurmVariablesThatMakeNoPartAndNamesThem) {
  make_input(37, 23);
  const std::vector<std::string> args = {in(), out(),    "--width", "37",       "--radius",
                                         "1",  "--part", "auto",    "--device", "cpu"};
  struct Case {
    std::vector<std::pair<std::string, const char*>> env;
    std::vector<std::string> phrases, absent;
  };
  const std::vector<Case> cases = {
      {{{"SLURM_ARRAY_TASK_ID", "2"},
        {"SLURM_ARRAY_TASK_COUNT", "4"},
        {"SLURM_ARRAY_TASK_MIN", "5"}},
       {"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_MIN=5", "SLURM_ARRAY_TASK_COUNT=4"},
       {"--part -3/4"}},
      {{{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "99999999999"}},
       {"SLURM_ARRAY_TASK_COUNT=99999999999", "1048576"},
       {"1215752191"}},
      {{{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "99999999999999999999999"}},
       {"SLURM_ARRAY_TASK_COUNT='99999999999999999999999'", "64 bits"},
       {}},
      {{{"SLURM_ARRAY_TASK_ID", "seven"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}},
       {"SLURM_ARRAY_TASK_ID='seven'", "not a whole number"},
       {}},
      {{{"SLURM_ARRAY_TASK_ID", "-1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
       {"SLURM_ARRAY_TASK_ID='-1'"},
       {}},
      {{{"SLURM_ARRAY_TASK_ID", "3"}}, {"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_COUNT"}, {}},
      {{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "2"}}, {"SLURM_PROCID=3", "SLURM_NTASKS=2"}, {}},
      {{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2x"}}, {"SLURM_NTASKS='2x'"}, {}},
  };
  for (const Case& c : cases) {
    ScopedEnv env(c.env);
    std::string label;
    for (const auto& [name, value] : c.env) label += name + "=" + value + " ";
    const RunResult r = run(args);
    EXPECT_TRUE(r.exited && r.exit_code == 2) << label << "\n" << r;
    EXPECT_NE(r.err.find("--part auto: "), std::string::npos) << label << "\n" << r;
    for (const auto& p : c.phrases)
      EXPECT_NE(r.err.find(p), std::string::npos) << "no '" << p << "' for " << label << "\n" << r;
    for (const auto& p : c.absent)
      EXPECT_EQ(r.err.find(p), std::string::npos) << "'" << p << "' for " << label << "\n" << r;
    EXPECT_TRUE(stray_files().empty()) << label;
  }
  // A right array still works: task 1 of 0..1 writes part 1/2.
  ScopedEnv env({{"SLURM_ARRAY_TASK_ID", "1"},
                 {"SLURM_ARRAY_TASK_COUNT", "2"},
                 {"SLURM_ARRAY_TASK_MIN", "0"},
                 {"SLURM_ARRAY_TASK_MAX", "1"}});
  const RunResult r = run(args);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_TRUE(fs::exists(partial() + ".part-1-of-2.journal")) << r;
  expect_input_unchanged();
}

// -q: no progress lines on a stderr that is not a terminal (the default there is a line every
// 10 s); an explicit --progress-log still prints them. Three runs side by side, stopped after
// 12.5 s: the one without -q shows that a line was due.
TEST_F(OocconvCli, QuietSilencesDefaultProgressLinesButNotAnExplicitProgressLog) {
  const std::vector<std::string> base = {
      "synth:noise", "null:",     "--width", "65536",       "--height", "1000000",  "--radius",
      "16",          "--threads", "1",       "--band-rows", "16",       "--device", "cpu"};
  struct Run {
    std::string name;
    std::vector<std::string> extra;
    bool lines;
  };
  const std::vector<Run> runs = {{"quiet", {"-q"}, false},
                                 {"default", {}, true},
                                 {"quiet-log", {"-q", "--progress-log=1"}, true}};
  std::vector<std::unique_ptr<Child>> children;
  for (const Run& run : runs) {
    fs::create_directory(dir_ / run.name);
    auto args = base;
    args.insert(args.end(), run.extra.begin(), run.extra.end());
    children.push_back(std::make_unique<Child>(bin_, args, dir_ / run.name));
  }
  std::this_thread::sleep_for(12500ms);
  for (auto& c : children) c->signal(SIGTERM);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunResult r = children[i]->wait(60s);
    EXPECT_TRUE(r.exited && r.exit_code == 75) << runs[i].name << " did not run 12.5 s?\n" << r;
    const bool lines = r.err.find(" rows, ") != std::string::npos &&
                       r.err.find(" GB/s, ETA ") != std::string::npos;
    EXPECT_EQ(lines, runs[i].lines) << runs[i].name << "\n" << r;
  }
  const RunResult help = run({"--help"});
  EXPECT_NE(help.out.find("an explicit --progress or --progress-log still reports"),
            std::string::npos)
      << help;
}

// ooceq refuses f32 with a conversion that works: oocconv's --taps 1 --out-type u16 (the old
// advice) maps data in [0, 1) to 0 and 1; a one-tap scale of 65535 keeps it.
TEST_F(OocconvCli, OoceqOnFloatSuggestsAConversionThatKeepsTheValues) {
  const fs::path ooceq = bin_.parent_path() / "ooceq";
  if (!fs::exists(ooceq)) GTEST_SKIP() << "no ooceq beside oocconv: build it";
  const auto f = dir_ / "f.raw", u = dir_ / "u.raw", eq = dir_ / "eq.raw";
  const std::vector<std::string> geometry = {"--width", "256", "--height", "128", "--type", "f32"};
  auto gen = std::vector<std::string>{f.string(), "-q"};
  gen.insert(gen.end(), geometry.begin(), geometry.end());
  ASSERT_EQ(run_tool("oocgen", gen).exit_code, 0);  // noise: values in [0, 1)
  RunResult r = run_tool("ooceq", {f.string(), eq.string(), "--width", "256", "--type", "f32"});
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r;
  const std::string advice = "--row-taps 65535 --out-type u16";
  EXPECT_NE(r.err.find(advice), std::string::npos) << r;
  EXPECT_EQ(r.err.find("--taps 1 "), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(eq));
  // The advice, as given, on the file.
  r = run({f.string(), u.string(), "--width", "256", "--type", "f32", "--row-taps", "65535",
           "--out-type", "u16", "-q"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  const std::string fb = read_file(f), ub = read_file(u);
  ASSERT_EQ(fb.size(), 256u * 128u * 4u);
  ASSERT_EQ(ub.size(), 256u * 128u * 2u);
  std::set<std::uint16_t> distinct;
  std::uint16_t top = 0;
  long worst = 0;
  for (std::size_t i = 0; i < 256u * 128u; ++i) {
    float v;
    std::uint16_t w;
    std::memcpy(&v, fb.data() + 4 * i, 4);
    std::memcpy(&w, ub.data() + 2 * i, 2);
    const long want = static_cast<long>(double(v) * 65535.0 + 0.5);
    worst = std::max(worst, std::labs(long(w) - want));
    top = std::max(top, w);
    distinct.insert(w);
  }
  EXPECT_LE(worst, 1) << "u16 = round(65535 f) within 1 (f32 product)";
  EXPECT_GT(top, 60000);
  EXPECT_GT(distinct.size(), 20000u);
  r = run_tool("ooceq", {u.string(), eq.string(), "--width", "256", "--type", "u16", "-q"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_EQ(fs::file_size(eq), 256u * 128u * 2u);
}

// --no-locks is one of the shared output options (oocconv, ooceq, oocgen): accepted, with its
// warning in --help. What it allows (a file system without fcntl locks) is the job's.
TEST_F(OocconvCli, NoLocksIsASharedOutputOption) {
  make_input(37, 23);
  RunResult r = run({"--help"});
  EXPECT_NE(r.out.find("--no-locks"), std::string::npos) << r;
  EXPECT_NE(r.out.find("two writers of one output then go unnoticed"), std::string::npos) << r;
  r = run({in(), out(), "--width", "37", "--radius", "1", "--no-locks", "-q", "--device", "cpu"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_EQ(fs::file_size(out()), 37u * 23u * 4u);
  r = run_tool("oocgen",
               {(dir_ / "g.raw").string(), "--width", "8", "--height", "8", "--no-locks", "-q"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  if (fs::exists(bin_.parent_path() / "ooceq")) {
    r = run_tool("ooceq", {"--help"});
    EXPECT_NE(r.out.find("--no-locks"), std::string::npos) << r;
  }
}

// gaussian-spots has spots at every size: a cell of 64 x 64 pixels holds one, so the share of
// non-zero pixels does not depend on the image's size (it was one cell in 32 of 512 px: a
// 2048 x 1536 image was all zero). Deterministic for a seed.
TEST_F(OocconvCli, GaussianSpotsHasSpotsAtEverySize) {
  const auto share = [&](int w, int h, int seed, const std::string& type) -> double {
    const auto path = dir_ / "spots.raw";
    const RunResult r =
        run_tool("oocgen", {path.string(), "--width", std::to_string(w), "--height",
                            std::to_string(h), "--type", type, "--pattern", "gaussian-spots",
                            "--seed", std::to_string(seed), "-q"});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
    const std::string b = read_file(path);
    const std::size_t size = type == "u8" ? 1 : 2;
    EXPECT_EQ(b.size(), std::size_t(w) * std::size_t(h) * size);
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i + size <= b.size(); i += size)
      nonzero += (b[i] != 0 || (size == 2 && b[i + 1] != 0)) ? 1 : 0;
    return double(nonzero) / double(std::size_t(w) * std::size_t(h));
  };
  for (int seed = 1; seed <= 6; ++seed) {
    const double s = share(64, 64, seed, "u16");
    EXPECT_GT(s, 0.02) << "64 x 64, seed " << seed;
    EXPECT_LT(s, 0.30) << "64 x 64, seed " << seed;
  }
  for (const auto& [w, h, type] : {std::tuple{1024, 1024, "u16"}, std::tuple{2048, 1536, "u8"}}) {
    const double s = share(w, h, 1, type);
    EXPECT_GT(s, 0.05) << w << " x " << h << " " << type;
    EXPECT_LT(s, 0.20) << w << " x " << h << " " << type;
  }
  // One seed, one image; another seed, another.
  const auto a = dir_ / "a.raw", b = dir_ / "b.raw", c = dir_ / "c.raw";
  for (const auto& [path, seed] : {std::pair{a, "3"}, std::pair{b, "3"}, std::pair{c, "4"}})
    ASSERT_EQ(run_tool("oocgen", {path.string(), "--width", "300", "--height", "200", "--type",
                                  "u16", "--pattern", "gaussian-spots", "--seed", seed, "-q"})
                  .exit_code,
              0);
  EXPECT_TRUE(read_file(a) == read_file(b));
  EXPECT_FALSE(read_file(a) == read_file(c));
}

}  // namespace
