// Reading the small text files the kernel publishes (/proc, /sys, cgroup limits): the first line,
// for the job's limits and the GPUs' PCIe links alike.
#pragma once

#include <fstream>
#include <string>

namespace ooc::detail {

// The first line of `path`, without its newline; empty when it cannot be read.
inline std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace ooc::detail
