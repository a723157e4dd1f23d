// What the ooccheck end-to-end tests (test_ooccheck_*.cpp) share: running the binaries
// (fork/execv, stdout and stderr sent to files), raw and .npy files, taps, and the fixture
// (test names read "cli.ooccheck.*", so that `ctest -R ooccheck` runs them). The binaries are
// found through OOC_BIN_DIR (set by CTest), else next to the test executable or in one of its
// parent directories.
#pragma once

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

namespace ooc::test::ooccheck_cli {

using ooc::test::read_file;

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal, or never ran
  std::string out, err;
};

inline std::ostream& operator<<(std::ostream& os, const RunResult& r) {
  return os << "exit " << r.exit_code << "\n--- stdout:\n" << r.out << "--- stderr:\n" << r.err;
}

// XORs `mask` into the byte at `offset` of a file, in place (pread/pwrite: the rest stays).
inline void flip_byte(const fs::path& path, std::int64_t offset, unsigned char mask) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, offset), 1) << std::strerror(errno);
  b ^= mask;
  ASSERT_EQ(::pwrite(fd, &b, 1, offset), 1) << std::strerror(errno);
  ::close(fd);
}

// The input options of a raw image.
inline std::vector<std::string> raw_input(std::int64_t width, const std::string& type,
                                          int channels = 1) {
  return {"--width", std::to_string(width), "--type", type, "--channels", std::to_string(channels)};
}

inline std::vector<float> read_floats(const fs::path& path) {
  const std::string bytes = read_file(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

template <class T>
inline void write_samples(const fs::path& path, const std::vector<T>& v) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
}

// The number in "N over tolerance" of ooccheck's report, or -1.
inline long long over_count(const std::string& report) {
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

// A 2-D .npy array of `descr` ('<f8', '<f4', '|u1') with the given rows, columns and raw data.
inline void write_npy(const fs::path& path, const std::string& descr, std::int64_t rows,
                      std::int64_t cols, const void* data, std::size_t bytes) {
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
inline std::vector<double> some_taps(std::size_t n, std::uint64_t seed) {
  std::vector<double> v(n);
  for (double& t : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    t = double(seed >> 11) * 0x1p-52 - 1;
  }
  return v;
}

}  // namespace ooc::test::ooccheck_cli
