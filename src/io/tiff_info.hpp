// Private to the TIFF reader (tiff_info.cpp, tiff_read.cpp): what one TIFF directory says about
// its image and how its strips or tiles lie, read and checked once when the input is opened.
#pragma once

#include <tiffio.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc::tiff_read {

// What one TIFF directory says about its image.
struct TiffInfo {
  ImageSpec spec;
  bool tiled = false, separate = false, swapped = false, bigtiff = false;
  std::uint16_t compression = COMPRESSION_NONE;
  std::int64_t chunk_w = 0, chunk_h = 0;  // a strip is image-wide
  std::int64_t across = 1, down = 1, planes = 1;
  int pages = 1;
  int levels = 0;                   // SubIFDs (reduced levels) of the page read
  std::uint64_t largest_chunk = 0;  // bytes of the largest stored (compressed) strip or tile
  Metadata metadata;

  std::int64_t chunk_samples() const { return chunk_w * (separate ? 1 : spec.channels); }
  std::uint64_t chunk_row_bytes() const {
    return static_cast<std::uint64_t>(chunk_samples()) * sample_bytes(spec.type);
  }
  // Rows chunk row cy holds in the image (strips: the last one is shorter).
  std::int64_t rows_in(std::int64_t cy) const {
    return std::min(chunk_h, spec.height - cy * chunk_h);
  }
  // Bytes the decoded chunk holds: tiles are always whole, strips only their rows.
  std::uint64_t chunk_bytes(std::int64_t cy) const {
    return chunk_row_bytes() * static_cast<std::uint64_t>(tiled ? chunk_h : rows_in(cy));
  }
  std::uint32_t index(std::int64_t cy, std::int64_t cx, std::int64_t plane) const {
    return static_cast<std::uint32_t>((plane * down + cy) * across + cx);
  }
  const char* chunk_name() const { return tiled ? "tile" : "strip"; }
};

// The directory tif is at (pages and levels are left for the caller to fill in).
TiffInfo read_info(TIFF* tif, const std::string& path);

// Every strip or tile must lie inside the file and be non-empty; uncompressed ones must hold
// their rows. Checked once, up front, so that a damaged file fails before any output is written.
// Sets t.largest_chunk.
void check_chunks(TIFF* tif, TiffInfo& t, const std::string& path, std::uintmax_t size);

// The start of the image data, when it is raw: uncompressed chunky strips, one after another.
std::optional<std::uint64_t> raw_data_offset(TIFF* tif, const TiffInfo& t);

// The layout line of Source::layout().
std::string describe_layout(const TiffInfo& t, int page, int level = 0);

// A page of the main directory chain: where its directory lies and its geometry.
struct PageEntry {
  int index = 0;             // counting every page from 0, as --page does
  std::uint64_t offset = 0;  // of its directory
  bool reduced = false;      // NewSubfileType bit 0: an overview, not a plane
  std::uint32_t width = 0, height = 0;
  std::uint16_t samples = 1, bits = 1, format = SAMPLEFORMAT_UINT;
};

// The planes of a z-stack: the pages of the main chain that are not reduced-resolution ones,
// those `pages` picks ("A:B", as a Python slice; empty: all), each of the first's geometry (an
// input Error names the first that differs, a usage Error a bad --pages). Leaves tif anywhere.
std::vector<PageEntry> stack_planes(TIFF* tif, const std::string& path, const std::string& pages);

}  // namespace ooc::tiff_read
