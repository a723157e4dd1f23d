// What the unit tests that touch files share: a scratch folder removed with its contents, random
// bytes, and a substring test for error messages.
#pragma once

#include <stdlib.h>

#include <cstddef>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>
#include <vector>

namespace ooc::test {

// A fresh folder under /var/tmp (a disk file system: tmpfs may refuse O_DIRECT, or take it without
// meaning), named after the test file's `tag`.
struct TempDir {
  std::filesystem::path dir;
  explicit TempDir(const std::string& tag) {
    std::string name = "/var/tmp/ooc-test-" + tag + "-XXXXXX";
    if (::mkdtemp(name.data())) dir = name;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& f) const { return (dir / f).string(); }
};

inline std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng() & 0xff);
  return v;
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace ooc::test
