// The TIFF reader's view of one directory: the tags it reads (refusing, with advice, the images
// ooc does not filter), the check of every strip or tile against the file, and the layout line.
#include "tiff_info.hpp"

#include <string>

#include "ooc/error.hpp"
#include "tiff_common.hpp"
#include "tiff_ome.hpp"

namespace ooc::tiff_read {
namespace {

const char* photometric_name(int p) {
  switch (p) {
    case PHOTOMETRIC_MINISWHITE:
      return "min-is-white";
    case PHOTOMETRIC_MINISBLACK:
      return "min-is-black";
    case PHOTOMETRIC_RGB:
      return "RGB";
    case PHOTOMETRIC_PALETTE:
      return "palette";
    case PHOTOMETRIC_MASK:
      return "transparency mask";
    case PHOTOMETRIC_SEPARATED:
      return "separated (CMYK)";
    case PHOTOMETRIC_YCBCR:
      return "YCbCr";
    case PHOTOMETRIC_CIELAB:
      return "CIE L*a*b*";
    default:
      return "unusual";
  }
}

SampleType sample_type_of(const std::string& path, int bits, int format) {
  const auto unsupported = [&](const std::string& what) {
    return Error(ErrorKind::input, "TIFF '" + path + "' has " + what +
                                       ", which ooc does not read: it reads 8/16/32/64-bit samples "
                                       "(u8 u16 i16 u32 i32 f32 f64); convert it first, e.g. "
                                       "with vips cast or tiffcp");
  };
  if (format == SAMPLEFORMAT_UINT) {
    if (bits == 8) return SampleType::u8;
    if (bits == 16) return SampleType::u16;
    if (bits == 32) return SampleType::u32;
  } else if (format == SAMPLEFORMAT_INT) {
    if (bits == 16) return SampleType::i16;
    if (bits == 32) return SampleType::i32;
  } else if (format == SAMPLEFORMAT_IEEEFP) {
    if (bits == 32) return SampleType::f32;
    if (bits == 64) return SampleType::f64;
  } else {
    throw unsupported("sample format " + std::to_string(format) + " (complex or undefined)");
  }
  if (bits == 1) throw unsupported("1-bit (bilevel) samples");
  const char* kind = format == SAMPLEFORMAT_UINT  ? "unsigned"
                     : format == SAMPLEFORMAT_INT ? "signed"
                                                  : "floating-point";
  throw unsupported(std::to_string(bits) + "-bit " + kind + " samples");
}

}  // namespace

TiffInfo read_info(TIFF* tif, const std::string& path) {
  TiffInfo t;
  std::uint32_t w = 0, h = 0;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h) ||
      w == 0 || h == 0)
    throw Error(ErrorKind::input, "TIFF '" + path + "' has no image size (ImageWidth/Length)");
  std::uint16_t spp = 1, bits = 1, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &t.compression);
  std::uint16_t photometric = PHOTOMETRIC_MINISBLACK;
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);

  const SampleType type = sample_type_of(path, bits, format);
  if (spp < 1 || spp > 4)
    throw Error(ErrorKind::input, "TIFF '" + path + "' has " + std::to_string(spp) +
                                      " samples per pixel; ooc reads 1 to 4");
  if (photometric != PHOTOMETRIC_MINISBLACK && photometric != PHOTOMETRIC_MINISWHITE &&
      photometric != PHOTOMETRIC_RGB && photometric != PHOTOMETRIC_SEPARATED)
    throw Error(ErrorKind::input,
                "TIFF '" + path + "' is a " + photometric_name(photometric) +
                    " image (photometric " + std::to_string(photometric) +
                    "), which ooc does not filter: it reads grey, RGB and CMYK sample values; "
                    "expand it first, e.g. with vips colourspace or tiffcp");
  if (!TIFFIsCODECConfigured(t.compression))
    throw Error(ErrorKind::input, "TIFF '" + path + "' uses compression " +
                                      std::to_string(t.compression) +
                                      ", which this libtiff cannot decode: recompress it with "
                                      "LZW, Deflate or ZSTD (tiffcp -c lzw)");
  std::uint32_t depth = 1;
  if (TIFFGetField(tif, TIFFTAG_IMAGEDEPTH, &depth) && depth > 1)
    throw Error(ErrorKind::input, "TIFF '" + path + "' is a volume " + std::to_string(depth) +
                                      " slices deep (ImageDepth " + std::to_string(depth) +
                                      "), which ooc does not read: store the slices as pages, "
                                      "which it reads as the planes of a volume");
  t.spec = ImageSpec{w, h, spp, type};
  validate(t.spec);
  t.separate = planar == PLANARCONFIG_SEPARATE && spp > 1;
  t.planes = t.separate ? spp : 1;
  t.tiled = TIFFIsTiled(tif) != 0;
  if (t.tiled) {
    std::uint32_t tw = 0, th = 0;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    if (tw == 0 || th == 0)
      throw Error(ErrorKind::input, "TIFF '" + path + "' is tiled with a zero tile size");
    t.chunk_w = tw;
    t.chunk_h = th;
  } else {
    std::uint32_t rps = 0;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rps);
    t.chunk_w = w;
    t.chunk_h = std::clamp<std::int64_t>(rps, 1, h);
  }
  t.across = (t.spec.width + t.chunk_w - 1) / t.chunk_w;
  t.down = (t.spec.height + t.chunk_h - 1) / t.chunk_h;
  t.swapped = TIFFIsByteSwapped(tif) != 0;
  t.bigtiff = TIFFIsBigTIFF(tif) != 0;

  Metadata& m = t.metadata;
  if (TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric)) m.photometric = photometric;
  std::uint16_t extra_count = 0;
  std::uint16_t* extra = nullptr;
  if (TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &extra_count, &extra) && extra)
    m.extra_samples.assign(extra, extra + extra_count);
  float xres = 0, yres = 0;
  if (TIFFGetField(tif, TIFFTAG_XRESOLUTION, &xres)) m.x_resolution = xres;
  if (TIFFGetField(tif, TIFFTAG_YRESOLUTION, &yres)) m.y_resolution = yres;
  std::uint16_t unit = 0;
  if (TIFFGetField(tif, TIFFTAG_RESOLUTIONUNIT, &unit)) m.resolution_unit = unit;
  std::uint16_t orientation = 0;
  if (TIFFGetField(tif, TIFFTAG_ORIENTATION, &orientation)) m.orientation = orientation;
  const char* description = nullptr;
  if (TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &description) && description)
    m.description = description;
  m.voxel = detail::tiff_voxel(m);
  m.geo = read_geo_tags(tif, path);
  return t;
}

void check_chunks(TIFF* tif, TiffInfo& t, const std::string& path, std::uintmax_t size) {
  std::uint64_t largest = 0;
  const std::uint64_t count = t.tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
  const std::uint64_t need = static_cast<std::uint64_t>(t.across * t.down * t.planes);
  if (count < need)
    throw Error(ErrorKind::input, "TIFF '" + path + "' lists " + std::to_string(count) + " " +
                                      t.chunk_name() + "s; its size needs " + std::to_string(need));
  for (std::int64_t p = 0; p < t.planes; ++p)
    for (std::int64_t cy = 0; cy < t.down; ++cy)
      for (std::int64_t cx = 0; cx < t.across; ++cx) {
        const std::uint32_t i = t.index(cy, cx, p);
        int err = 0;
        const std::uint64_t offset = TIFFGetStrileOffsetWithErr(tif, i, &err);
        const std::uint64_t bytes = err ? 0 : TIFFGetStrileByteCountWithErr(tif, i, &err);
        const std::string which = std::string(t.chunk_name()) + " " + std::to_string(i);
        if (err)
          throw Error(ErrorKind::input, "TIFF '" + path + "': the offset or size of " + which +
                                            " cannot be read: " + take_tiff_error());
        if (bytes == 0)
          throw Error(ErrorKind::input, "TIFF '" + path + "': " + which +
                                            " is empty (0 bytes): the file is damaged or "
                                            "was not finished");
        if (offset > size || bytes > size - offset)
          throw Error(ErrorKind::input,
                      "TIFF '" + path + "': " + which + " lies past the end of the file (bytes " +
                          std::to_string(offset) + " + " + std::to_string(bytes) + ", file size " +
                          std::to_string(size) + "): the file is truncated");
        largest = std::max(largest, bytes);
        if (t.compression == COMPRESSION_NONE && bytes < t.chunk_bytes(cy))
          throw Error(ErrorKind::input, "TIFF '" + path + "': " + which + " holds " +
                                            std::to_string(bytes) + " bytes, its pixels need " +
                                            std::to_string(t.chunk_bytes(cy)) +
                                            ": the file is damaged");
      }
  t.largest_chunk = largest;
}

std::optional<std::uint64_t> raw_data_offset(TIFF* tif, const TiffInfo& t) {
  if (t.compression != COMPRESSION_NONE || t.tiled || t.separate) return std::nullopt;
  const std::uint64_t first = TIFFGetStrileOffset(tif, 0);
  std::uint64_t expect = first;
  for (std::int64_t cy = 0; cy < t.down; ++cy) {
    if (TIFFGetStrileOffset(tif, static_cast<std::uint32_t>(cy)) != expect) return std::nullopt;
    expect += t.chunk_bytes(cy);
  }
  return first;
}

std::string describe_layout(const TiffInfo& t, int page, int level) {
  std::string s = t.bigtiff ? "BigTIFF" : "classic TIFF";
  s += t.swapped ? ", big endian" : ", little endian";
  if (t.tiled)
    s += ", tiles " + std::to_string(t.chunk_w) + " x " + std::to_string(t.chunk_h) + " (" +
         std::to_string(t.across * t.down * t.planes) + ")";
  else
    s += ", strips of " + std::to_string(t.chunk_h) + " rows (" +
         std::to_string(t.down * t.planes) + ")";
  s += std::string(", ") + compression_name(t.compression);
  if (t.separate) s += ", separate planes";
  s += ", page " + std::to_string(page) + " of " + std::to_string(t.pages);
  if (level > 0)
    s += ", reduced level " + std::to_string(level) + " of " + std::to_string(t.levels);
  else if (t.levels > 0)
    s += ", " + std::to_string(t.levels) + " reduced level(s) as SubIFDs (--input-level)";
  return s;
}

}  // namespace ooc::tiff_read

namespace ooc::tiff_read {
namespace {

PageEntry page_entry(TIFF* tif, int index) {
  PageEntry e;
  e.index = index;
  e.offset = TIFFCurrentDirOffset(tif);
  std::uint32_t subfile = 0;
  if (TIFFGetField(tif, TIFFTAG_SUBFILETYPE, &subfile))
    e.reduced = (subfile & FILETYPE_REDUCEDIMAGE) != 0;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &e.width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &e.height);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &e.samples);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &e.bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &e.format);
  return e;
}

std::string geometry(const PageEntry& e) {
  const char* kind = e.format == SAMPLEFORMAT_IEEEFP ? "float"
                     : e.format == SAMPLEFORMAT_INT  ? "signed"
                                                     : "unsigned";
  return std::to_string(e.width) + " x " + std::to_string(e.height) + " x " +
         std::to_string(e.samples) + " " + std::to_string(e.bits) + "-bit " + kind;
}

// One end of --pages: empty (the default), or an integer, negative from the end.
bool slice_end(const std::string& text, std::int64_t count, std::int64_t fallback,
               std::int64_t* out) {
  if (text.empty()) {
    *out = fallback;
    return true;
  }
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  if (used != text.size() || v < -count || v > count) return false;
  *out = v < 0 ? v + count : v;
  return true;
}

}  // namespace

std::vector<PageEntry> stack_planes(TIFF* tif, const std::string& path, const std::string& pages) {
  const int count = TIFFNumberOfDirectories(tif);
  if (!TIFFSetDirectory(tif, 0))
    throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read page 0: " + take_tiff_error());
  // Read in order along the chain: setting each directory by number walks the chain each time.
  std::vector<PageEntry> planes;
  for (int d = 0; d < count; ++d) {
    if (d > 0 && !TIFFReadDirectory(tif))
      throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read page " + std::to_string(d) +
                                        ": " + take_tiff_error());
    const PageEntry e = page_entry(tif, d);
    if (!e.reduced || d == 0) planes.push_back(e);
  }
  const auto n = static_cast<std::int64_t>(planes.size());
  std::int64_t a = 0, b = n;
  if (!pages.empty()) {
    const std::size_t colon = pages.find(':');
    const bool ok = colon != std::string::npos && pages.find(':', colon + 1) == std::string::npos &&
                    slice_end(pages.substr(0, colon), n, 0, &a) &&
                    slice_end(pages.substr(colon + 1), n, n, &b) && a < b;
    if (!ok)
      throw Error(ErrorKind::usage,
                  "--pages takes A:B, the planes A to B-1 as a Python slice (either end optional, "
                  "negative from the end, A < B), within the " +
                      std::to_string(n) + " plane(s) of TIFF '" + path + "'; got '" + pages +
                      "' (one page as a 2-D image: --page N)");
  }
  std::vector<PageEntry> picked(planes.begin() + a, planes.begin() + b);
  const PageEntry& first = picked.front();
  for (const PageEntry& e : picked)
    if (e.width != first.width || e.height != first.height || e.samples != first.samples ||
        e.bits != first.bits || e.format != first.format)
      throw Error(ErrorKind::input,
                  "TIFF '" + path + "': page " + std::to_string(e.index) + " is " + geometry(e) +
                      ", page " + std::to_string(first.index) + " " + geometry(first) +
                      ": its pages are not the planes of one volume; read one page with --page " +
                      std::to_string(e.index) + " (or --page " + std::to_string(first.index) +
                      "), or the planes alike with --pages A:B");
  return picked;
}

}  // namespace ooc::tiff_read
