// Private to the TIFF reader and writer: OME-XML for outputs named .ome.tif, and the voxel size
// a TIFF's description says (OME-XML's PhysicalSize, ImageJ's spacing and unit) (tiff_ome.cpp).
#pragma once

#include <string>

#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc::detail {

bool ome_name(const std::string& path);

// Minimal OME-XML for one interleaved plane, or a volume's planes one page each (the layout
// OME-TIFF readers expect of an RGB or single-channel image); a plane's pyramid levels are the
// first page's SubIFDs. PhysicalSize attributes where the voxel size is known.
std::string ome_xml(const ImageSpec& s, const std::string& path, const VoxelSize& voxel = {});

// The voxel size the first page's tags say: OME-XML's Pixels PhysicalSizeX/Y/Z (and units), or an
// ImageJ description's unit= and spacing= with XResolution and YResolution (pixels per unit).
// Unknown (0) where they say none or name no length unit.
VoxelSize tiff_voxel(const Metadata& m);

}  // namespace ooc::detail
