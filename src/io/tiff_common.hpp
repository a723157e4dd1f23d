// What the TIFF reader and writer share: libtiff's error messages (per thread), names, and the
// GeoTIFF / GDAL tags libtiff does not know by itself.
#pragma once

#include <tiffio.h>

#include <string>

#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc {

// The last message libtiff reported on this thread, cleared ("libtiff gave no reason" if none).
std::string take_tiff_error();

// Routes libtiff's errors to take_tiff_error(), silences its warnings (unknown tags and the like)
// and teaches every handle opened afterwards the GeoTIFF and GDAL tags (GeoTags); idempotent.
void install_tiff_handlers();

// The GeoTIFF and GDAL tags of the current directory. A malformed one (wrong count, or a key
// directory whose keys point outside their parameters) is dropped with a warning on stderr: an
// output must not carry georeferencing that says something else than the input meant.
GeoTags read_geo_tags(TIFF* tif, const std::string& path);

// Writes `geo` into the current directory of an output whose samples are of `type`: GDAL_NODATA
// only when that type holds the value, GDAL_METADATA without its statistics (the pixels changed).
void write_geo_tags(TIFF* tif, const GeoTags& geo, SampleType type);

// Opens `path` for reading without libtiff's own mapping (reads go through the page cache, and a
// huge file does not pin its pages); page >= 0 selects that directory, and level > 0 its
// reduced-resolution SubIFD level - 1 (a pyramidal OME-TIFF's levels). Throws an input Error.
TIFF* open_tiff(const std::string& path, int page, int level = 0);
// Selects SubIFD level - 1 of the current directory (level 0: the directory itself); a usage
// Error names the levels there are.
void select_level(TIFF* tif, int level, const std::string& path, int page);
// How many SubIFDs (reduced levels) the current directory has.
int subifd_count(TIFF* tif);

const char* compression_name(int compression);

}  // namespace ooc
