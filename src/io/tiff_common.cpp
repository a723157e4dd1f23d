// libtiff glue shared by the TIFF reader and writer: error capture, opening, names, and the
// GeoTIFF / GDAL tags (registered with libtiff, read, checked, written back).
#include "tiff_common.hpp"

#include <cerrno>

#include "formats.hpp"

#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <mutex>

#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"

namespace ooc {
namespace {

// libtiff reports through a process-wide handler; each thread keeps its own last message, so the
// call that failed can say why even while other workers decode.
thread_local std::string t_last_error;

void on_error(const char* module, const char* fmt, va_list ap) {
  char text[1024];
  std::vsnprintf(text, sizeof text, fmt, ap);
  t_last_error = (module && *module ? std::string(module) + ": " : std::string()) + text;
}

constexpr ttag_t kModelPixelScale = 33550, kModelTiepoint = 33922, kModelTransformation = 34264,
                 kGeoKeyDirectory = 34735, kGeoDoubleParams = 34736, kGeoAsciiParams = 34737,
                 kGdalMetadata = 42112, kGdalNodata = 42113;

// As libgeotiff and GDAL declare them, but with 32-bit counts (TIFF_VARIABLE2): a file with more
// than 65535 tie points still reads. Without these, libtiff reads the tags as anonymous fields
// and cannot write them at all.
char kNames[][24] = {"ModelPixelScaleTag", "ModelTiepointTag",   "ModelTransformationTag",
                     "GeoKeyDirectoryTag", "GeoDoubleParamsTag", "GeoASCIIParamsTag",
                     "GDALMetadata",       "GDALNoDataValue"};
const TIFFFieldInfo kGeoFields[] = {
    {kModelPixelScale, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, kNames[0]},
    {kModelTiepoint, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, kNames[1]},
    {kModelTransformation, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1,
     kNames[2]},
    {kGeoKeyDirectory, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_SHORT, FIELD_CUSTOM, 1, 1, kNames[3]},
    {kGeoDoubleParams, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, kNames[4]},
    {kGeoAsciiParams, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, kNames[5]},
    {kGdalMetadata, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, kNames[6]},
    {kGdalNodata, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, kNames[7]},
};

TIFFExtendProc g_parent_extender = nullptr;

void extend_fields(TIFF* tif) {
  // Tags libtiff already knows (it may define the GDAL ones) are left as they are.
  TIFFMergeFieldInfo(tif, kGeoFields, sizeof kGeoFields / sizeof kGeoFields[0]);
  if (g_parent_extender) g_parent_extender(tif);
}

void warn(const std::string& path, const std::string& what) {
  std::fprintf(stderr, "ooc: warning: TIFF '%s': %s: not carried over\n", path.c_str(),
               what.c_str());
}

template <class T>
std::vector<T> get_array(TIFF* tif, ttag_t tag) {
  std::uint32_t count = 0;
  T* data = nullptr;
  if (!TIFFGetField(tif, tag, &count, &data) || !data) return {};
  return std::vector<T>(data, data + count);
}

std::string get_text(TIFF* tif, ttag_t tag) {
  const char* text = nullptr;
  if (!TIFFGetField(tif, tag, &text) || !text) return {};
  return text;
}

// What is wrong with the GeoKeyDirectory, if anything (empty: nothing). It must be a header
// {version, revision, minor, count} and `count` keys of four, each pointing inside the
// parameters it names.
std::string key_directory_problem(const GeoTags& g) {
  const auto& k = g.geo_key_directory;
  if (k.size() < 4) return "GeoKeyDirectory has " + std::to_string(k.size()) + " values, not 4+";
  const std::size_t want = 4 * (std::size_t{k[3]} + 1);
  if (k.size() != want)
    return "GeoKeyDirectory lists " + std::to_string(k[3]) + " keys in " +
           std::to_string(k.size()) + " values, not " + std::to_string(want);
  for (std::size_t i = 4; i < k.size(); i += 4) {
    const std::size_t where = k[i + 1], count = k[i + 2], offset = k[i + 3];
    const std::size_t size = where == kGeoDoubleParams   ? g.geo_double_params.size()
                             : where == kGeoAsciiParams  ? g.geo_ascii_params.size()
                             : where == kGeoKeyDirectory ? k.size()
                                                         : offset + count;
    if (where != 0 && offset + count > size)
      return "GeoKey " + std::to_string(k[i]) + " points past the end of tag " +
             std::to_string(where);
  }
  return {};
}

// GDAL_NODATA as GDAL reads it (CPLAtof: a number, nan or inf), when a sample of `type` holds it.
bool nodata_fits(const std::string& text, SampleType type) {
  std::size_t a = text.find_first_not_of(" \t"), b = text.find_last_not_of(" \t");
  if (a == std::string::npos) return false;
  if (text[a] == '+') ++a;
  double v = 0;
  const char* end = text.data() + b + 1;
  const auto r = std::from_chars(text.data() + a, end, v);
  if (r.ec != std::errc() || r.ptr != end) return false;
  return dispatch_type(type, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T>)
      return !std::isfinite(v) || std::fabs(v) <= double(std::numeric_limits<T>::max());
    else
      return std::isfinite(v) && v == std::trunc(v) && v >= double(std::numeric_limits<T>::min()) &&
             v <= double(std::numeric_limits<T>::max());
  });
}

// GDAL_METADATA without its <Item name="STATISTICS_..."> entries: those describe the input's
// pixels. Empty when nothing else is left.
std::string without_statistics(const std::string& xml) {
  std::string out;
  std::size_t pos = 0, items = 0;
  for (;;) {
    const std::size_t open = xml.find("<Item", pos);
    if (open == std::string::npos) break;
    const std::size_t tag_end = xml.find('>', open);
    if (tag_end == std::string::npos) break;
    std::size_t end = xml[tag_end - 1] == '/' ? tag_end + 1 : xml.find("</Item>", tag_end);
    if (end == std::string::npos) break;
    if (xml[tag_end - 1] != '/') end += 7;
    const std::string head = xml.substr(open, tag_end - open);
    if (head.find("name=\"STATISTICS_") == std::string::npos) {
      out.append(xml, pos, end - pos);
      ++items;
    } else {
      // The item's line goes with it: its indentation before, its line break after.
      std::size_t from = open;
      while (from > pos && (xml[from - 1] == ' ' || xml[from - 1] == '\t')) --from;
      out.append(xml, pos, from - pos);
      if (end < xml.size() && xml[end] == '\n') ++end;
    }
    pos = end;
  }
  out.append(xml, pos, std::string::npos);
  return items > 0 ? out : std::string();
}

}  // namespace

GeoTags read_geo_tags(TIFF* tif, const std::string& path) {
  GeoTags g;
  g.model_pixel_scale = get_array<double>(tif, kModelPixelScale);
  g.model_tiepoint = get_array<double>(tif, kModelTiepoint);
  g.model_transformation = get_array<double>(tif, kModelTransformation);
  g.geo_key_directory = get_array<std::uint16_t>(tif, kGeoKeyDirectory);
  g.geo_double_params = get_array<double>(tif, kGeoDoubleParams);
  g.geo_ascii_params = get_text(tif, kGeoAsciiParams);
  g.gdal_metadata = get_text(tif, kGdalMetadata);
  g.gdal_nodata = get_text(tif, kGdalNodata);
  const auto count_is = [&](std::vector<double>& v, const char* name, bool ok, const char* want) {
    if (v.empty() || ok) return;
    warn(path, std::string(name) + " has " + std::to_string(v.size()) + " values, not " + want);
    v.clear();
  };
  count_is(g.model_pixel_scale, "ModelPixelScale", g.model_pixel_scale.size() == 3, "3");
  count_is(g.model_tiepoint, "ModelTiepoint", g.model_tiepoint.size() % 6 == 0, "6 per point");
  count_is(g.model_transformation, "ModelTransformation", g.model_transformation.size() == 16,
           "16");
  if (!g.geo_key_directory.empty()) {
    if (const std::string problem = key_directory_problem(g); !problem.empty()) {
      // The parameters mean something only through the keys.
      warn(path, problem + " (so are GeoDoubleParams and GeoAsciiParams)");
      g.geo_key_directory.clear();
      g.geo_double_params.clear();
      g.geo_ascii_params.clear();
    }
  }
  // Messages of tags libtiff could not read (a wrong type) are no reason for a later failure.
  t_last_error.clear();
  return g;
}

void write_geo_tags(TIFF* tif, const GeoTags& geo, SampleType type) {
  const auto put = [&](ttag_t tag, const auto& v) {
    if (!v.empty()) TIFFSetField(tif, tag, static_cast<std::uint32_t>(v.size()), v.data());
  };
  put(kModelPixelScale, geo.model_pixel_scale);
  put(kModelTiepoint, geo.model_tiepoint);
  put(kModelTransformation, geo.model_transformation);
  put(kGeoKeyDirectory, geo.geo_key_directory);
  put(kGeoDoubleParams, geo.geo_double_params);
  if (!geo.geo_ascii_params.empty())
    TIFFSetField(tif, kGeoAsciiParams, geo.geo_ascii_params.c_str());
  if (const std::string xml = without_statistics(geo.gdal_metadata); !xml.empty())
    TIFFSetField(tif, kGdalMetadata, xml.c_str());
  if (!geo.gdal_nodata.empty() && nodata_fits(geo.gdal_nodata, type))
    TIFFSetField(tif, kGdalNodata, geo.gdal_nodata.c_str());
}

std::string take_tiff_error() {
  std::string e = t_last_error.empty() ? "libtiff gave no reason" : t_last_error;
  t_last_error.clear();
  return e;
}

void install_tiff_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(on_error);
    TIFFSetWarningHandler(nullptr);
    g_parent_extender = TIFFSetTagExtender(extend_fields);
  });
}

int subifd_count(TIFF* tif) {
  std::uint16_t n = 0;
  toff_t* offsets = nullptr;
  return TIFFGetField(tif, TIFFTAG_SUBIFD, &n, &offsets) ? n : 0;
}

void select_level(TIFF* tif, int level, const std::string& path, int page) {
  if (level <= 0) return;
  std::uint16_t n = 0;
  toff_t* offsets = nullptr;
  if (!TIFFGetField(tif, TIFFTAG_SUBIFD, &n, &offsets) || n == 0)
    throw Error(ErrorKind::usage,
                "TIFF '" + path + "' page " + std::to_string(page) +
                    " has no reduced levels (SubIFDs) for --input-level " + std::to_string(level) +
                    "; a Cloud-Optimized GeoTIFF's overviews are pages: use --page");
  if (level > n)
    throw Error(ErrorKind::usage, "TIFF '" + path + "' page " + std::to_string(page) + " has " +
                                      std::to_string(n) + " reduced level(s); --input-level " +
                                      std::to_string(level) + " does not exist (0 is the page)");
  // The offsets live in the directory TIFFSetSubDirectory is about to leave.
  const toff_t at = offsets[level - 1];
  if (!TIFFSetSubDirectory(tif, at))
    throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read level " +
                                      std::to_string(level) + " of page " + std::to_string(page) +
                                      ": " + take_tiff_error());
}

TIFF* open_tiff(const std::string& path, int page, int level) {
  install_tiff_handlers();
  t_last_error.clear();
  errno = 0;
  TIFF* tif = TIFFOpen(path.c_str(), "rm");
  if (!tif && read_error_kind(errno) == ErrorKind::io)
    throw Error(ErrorKind::io, system_message("cannot open input", path, errno));
  if (!tif) {
    // libtiff opens a header whose first directory offset is 0 as "no images" without a word.
    const std::string why =
        t_last_error.empty() ? "it holds no image directory" : take_tiff_error();
    t_last_error.clear();
    throw Error(ErrorKind::input, "cannot read TIFF '" + path + "': " + why +
                                      " (the file is truncated or damaged, or not a TIFF file)");
  }
  if (page >= 0 && !TIFFSetDirectory(tif, static_cast<tdir_t>(page))) {
    TIFFClose(tif);
    throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read page " + std::to_string(page) +
                                      ": " + take_tiff_error());
  }
  try {
    select_level(tif, level, path, page);
  } catch (...) {
    TIFFClose(tif);
    throw;
  }
  return tif;
}

const char* compression_name(int compression) {
  switch (compression) {
    case COMPRESSION_NONE:
      return "uncompressed";
    case COMPRESSION_LZW:
      return "LZW";
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE:
      return "Deflate";
    case COMPRESSION_ZSTD:
      return "ZSTD";
    case COMPRESSION_PACKBITS:
      return "PackBits";
    case COMPRESSION_JPEG:
      return "JPEG";
    case COMPRESSION_LZMA:
      return "LZMA";
    case COMPRESSION_WEBP:
      return "WebP";
    case COMPRESSION_CCITTFAX4:
      return "CCITT G4";
    default:
      return "compressed (other codec)";
  }
}

}  // namespace ooc
