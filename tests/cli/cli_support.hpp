// What the CLI test programs share: finding the tools' directory and reading a whole file.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ooc::test {

// The directory holding `tool`: $OOC_BIN_DIR (set by CTest, or by hand on the GPU machine), else
// the test's own directory or one of its ancestors; empty when not found.
inline std::filesystem::path find_bin_dir(const std::string& tool) {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("OOC_BIN_DIR"); dir != nullptr && *dir != '\0') return dir;
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (int up = 0; up < 4 && !ec && !dir.empty(); ++up, dir = dir.parent_path()) {
    if (fs::exists(dir / tool)) return dir;
    if (dir == dir.parent_path()) break;
  }
  return {};
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace ooc::test
