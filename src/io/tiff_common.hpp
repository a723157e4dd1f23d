// What the TIFF reader and writer share: libtiff's error messages (per thread) and names.
#pragma once

#include <tiffio.h>

#include <string>

namespace ooc {

// The last message libtiff reported on this thread, cleared ("libtiff gave no reason" if none).
std::string take_tiff_error();

// Routes libtiff's errors to take_tiff_error() and silences its warnings (unknown tags and the
// like); idempotent.
void install_tiff_handlers();

// Opens `path` for reading without libtiff's own mapping (reads go through the page cache, and a
// huge file does not pin its pages); page >= 0 selects that directory. Throws an input Error.
TIFF* open_tiff(const std::string& path, int page);

const char* compression_name(int compression);

}  // namespace ooc
