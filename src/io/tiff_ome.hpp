// Private to the TIFF writer: OME-XML for outputs named .ome.tif (tiff_ome.cpp).
#pragma once

#include <string>

#include "ooc/image.hpp"

namespace ooc::detail {

bool ome_name(const std::string& path);

// Minimal OME-XML for one interleaved plane (the layout OME-TIFF readers expect of an RGB or
// single-channel image): the levels below are the first page's SubIFDs.
std::string ome_xml(const ImageSpec& s, const std::string& path);

}  // namespace ooc::detail
