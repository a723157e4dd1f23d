// .npy headers, read and written: shared by the raw reader and writer (an .npy file is a raw image
// after its header), 2-D kernel files, and oocatax's vectors and small matrices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ooc/image.hpp"

namespace ooc {

struct NpyLayout {
  ImageSpec spec;
  std::uint64_t data_offset = 0;
  bool big_endian = false;  // samples need swapping on this (little-endian) machine
};

// Any array's header, as written: descr split into its byte order ('<', '>', '|', '=') and kind
// ("f8", "i2", ...), the Fortran flag and the dimensions.
struct NpyArray {
  char order = '<';
  std::string kind;
  bool fortran = false;
  std::vector<std::int64_t> dims;
  std::string shape;  // as the header writes it, for messages
  std::uint64_t data_offset = 0;
};

// Parses the first `n` bytes of a file (enough to hold its header) as any array; throws an input
// Error when the header is damaged.
NpyArray parse_npy_array(const unsigned char* p, std::size_t n, const std::string& path);
// The same, as an image of a sample type, C order: (y, x), (y, x, c) with 1 to 4 channels, a
// volume (z, y, x) (a 3-D array whose last axis is longer than 4, or any with `volume`) or
// (z, y, x, c). Throws an input Error naming what is not.
NpyLayout parse_npy_header(const unsigned char* p, std::size_t n, const std::string& path,
                           bool volume = false);

// A version 1.0 (2.0 for huge dictionaries) header of a C-order array, padded so that the data
// starts on a multiple of 64 bytes: descr such as "<f8", dims such as {n} or {rows, cols}.
std::string npy_array_header(const std::string& descr, const std::vector<std::int64_t>& dims);

// The .npy header (version 1.0, or 2.0 when it must be longer) for an image of `spec`, C order,
// little endian: shape (H, W), or (H, W, C) for several channels; a volume (D, H, W[, C]).
std::string npy_header(const ImageSpec& spec);

}  // namespace ooc
