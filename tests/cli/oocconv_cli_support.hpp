// What the oocconv end-to-end tests (test_oocconv_*.cpp) share: a child process of the binary
// (fork/execv, stdout and stderr sent to files, exit status and peak RSS from wait4) and the
// fixture that runs it in a scratch folder. The binary is found through OOC_BIN_DIR (set by
// CTest), else next to the test executable or in one of its parent directories.
#pragma once

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

namespace ooc::test::oocconv_cli {

using ooc::test::read_file;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

inline std::string read_file_prefix(const fs::path& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// Random, never all-zero bytes: a valid image of any sample type (f32 NaNs aside, which the
// tests that compute on the result avoid by building floats explicitly).
inline std::string random_f32_image(std::int64_t samples, unsigned seed) {
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
inline std::int64_t free_bytes(const fs::path& dir) {
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

inline std::ostream& operator<<(std::ostream& os, const RunResult& r) {
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

}  // namespace ooc::test::oocconv_cli
