// .npy header parsing, shared by the raw reader (an .npy file is a raw image after its header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ooc/image.hpp"

namespace ooc {

struct NpyLayout {
  ImageSpec spec;
  std::uint64_t data_offset = 0;
  bool big_endian = false;  // samples need swapping on this (little-endian) machine
};

// Parses the first `n` bytes of a file (enough to hold its header); throws an input Error.
NpyLayout parse_npy_header(const unsigned char* p, std::size_t n, const std::string& path);

}  // namespace ooc
