// TIFF outputs made by several writers (parts, MPI ranks, a stopped run and its resumption):
// each writer keeps its compressed blocks in files of its own beside the output's temporary, and
// one step assembles the TIFF from them by offsets, without recompressing (tiff_parts.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc {

// The rows a part of a TIFF output must begin at a multiple of: the strip height of a striped
// output (which depends on the row size, hence the spec), the tile side of a tiled one.
std::int64_t tiff_row_alignment(const ImageSpec& spec, const SinkOptions& options);

// Whether writers left TIFF blocks beside `temporary` (OUT.partial): their settings file is there.
bool is_tiff_parts_temporary(const std::string& temporary);

// Assembles `output` from the blocks and edge rows the writers left beside `temporary`, byte for
// byte what one process writes, renames it into place and removes the writers' files. Throws an
// input Error (resumable) naming the rows whose blocks are missing.
void finish_tiff_parts(const std::string& output, const std::string& temporary);

}  // namespace ooc
