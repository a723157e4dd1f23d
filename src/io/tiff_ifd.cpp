// TIFF tags and directories for the writer: the codec and predictor an output's options name,
// the tags libtiff writes (the input's descriptive ones, shapes rewritten to the output's), and
// directories (IFDs) serialized by us where the layout places them (pyramids, COG).
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "formats.hpp"
#include "io/pyramid.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"
#include "output_file.hpp"
#include "tiff_common.hpp"
#include "tiff_ifd.hpp"

namespace ooc::detail {

int compression_code(const std::string& name) {
  if (name == "none" || name.empty()) return COMPRESSION_NONE;
  if (name == "lzw") return COMPRESSION_LZW;
  if (name == "deflate") return COMPRESSION_ADOBE_DEFLATE;
  if (name == "zstd") return COMPRESSION_ZSTD;
  if (name == "packbits") return COMPRESSION_PACKBITS;
  throw Error(ErrorKind::usage,
              "--compress takes none, lzw, deflate, zstd or packbits, got '" + name + "'");
}

std::string resolved_predictor(const SinkOptions& o, SampleType type) {
  const int compression = compression_code(o.compress);
  const bool takes = compression == COMPRESSION_LZW || compression == COMPRESSION_ADOBE_DEFLATE ||
                     compression == COMPRESSION_ZSTD;
  const bool is_float = type == SampleType::f32 || type == SampleType::f64;
  const std::string& p = o.predictor;
  if (p == "auto" || p.empty()) return takes ? "horizontal" : "none";
  if (p == "none") return p;
  if (p != "horizontal" && p != "float")
    throw Error(ErrorKind::usage,
                "--predictor takes auto, none, horizontal or float, got '" + p + "'");
  if (!takes)
    throw Error(ErrorKind::usage,
                "--predictor " + p +
                    " applies to --compress lzw, deflate or zstd, and the output is " +
                    (compression == COMPRESSION_NONE ? std::string("uncompressed")
                                                     : "compressed with " + o.compress) +
                    ": add --compress deflate (or lzw, zstd), or drop --predictor");
  if (p == "float" && !is_float)
    throw Error(ErrorKind::usage,
                std::string("--predictor float applies to f32 and f64 samples, and "
                            "the output's are ") +
                    std::string(name(type)) + ": use --predictor horizontal (or auto)");
  return p;
}

int predictor_code(const std::string& resolved) {
  return resolved == "horizontal" ? PREDICTOR_HORIZONTAL
         : resolved == "float"    ? PREDICTOR_FLOATINGPOINT
                                  : PREDICTOR_NONE;
}

namespace {

int base_channels(int photometric) {
  switch (photometric) {
    case PHOTOMETRIC_RGB:
      return 3;
    case PHOTOMETRIC_SEPARATED:
      return 4;
    default:
      return 1;
  }
}

// The output's array as tifffile reads it: one page of interleaved samples, a page per plane.
std::vector<std::int64_t> output_shape(const ImageSpec& s) {
  std::vector<std::int64_t> shape{s.height, s.width};
  if (s.channels > 1) shape.push_back(s.channels);
  if (s.volume()) shape.insert(shape.begin(), s.depth);
  return shape;
}

// tifffile's JSON description ({"shape": [...], ...}) with its shape (and axes, if given) made the
// output's; empty when it is not as tifffile writes it.
std::string rewrite_json_shape(const std::string& text, const ImageSpec& s) {
  const std::string key = "{\"shape\":";
  const std::size_t open = text.find_first_not_of(' ', key.size());
  const std::size_t close = open == std::string::npos ? open : text.find(']', open);
  if (open == std::string::npos || text[open] != '[' || close == std::string::npos ||
      text.back() != '}')
    return {};
  std::string list = "[";
  for (const std::int64_t n : output_shape(s)) {
    if (list.size() > 1) list += ", ";
    list += std::to_string(n);
  }
  std::string out = key + " " + list + "]" + text.substr(close + 1);
  const std::string axes_key = "\"axes\": \"";
  if (const std::size_t a = out.find(axes_key); a != std::string::npos) {
    const std::size_t from = a + axes_key.size(), to = out.find('"', from);
    if (to == std::string::npos) return {};
    out.replace(from, to - from,
                std::string(s.volume() ? "Z" : "") + (s.channels > 1 ? "YXS" : "YX"));
  }
  return out;
}

// A description that is still true of the output. tifffile's shape descriptions (JSON, or the
// older "shape=(...)") say how to reshape the pages, so they are rewritten to the output's array:
// carried over from separate planes, or from a stack of pages, they would make tifffile read it
// scrambled. An ImageJ description of other images than the output's pages (channels or frames
// as pages, another count of slices) is dropped. Any other text is the user's and is kept.
std::string output_description(const std::string& text, const ImageSpec& s) {
  if (text.rfind("{\"shape\":", 0) == 0) return rewrite_json_shape(text, s);
  if (text.rfind("shape=(", 0) == 0) {
    std::string out = "shape=(";
    for (const std::int64_t n : output_shape(s)) {
      if (out.size() > 7) out += ',';
      out += std::to_string(n);
    }
    return out + ")";
  }
  if (text.rfind("ImageJ=", 0) == 0) {
    for (const char* key : {"\nimages=", "\nchannels=", "\nslices=", "\nframes="}) {
      const std::size_t at = text.find(key);
      const bool planes = key[1] == 'i' || key[1] == 's';
      if (at != std::string::npos &&
          std::atoll(text.c_str() + at + std::strlen(key)) != (planes ? s.depth : 1))
        return {};
    }
  }
  return text;
}

}  // namespace

void set_tags(TIFF* tif, const TiffPlan& p) {
  const ImageSpec& s = p.spec;
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(s.width));
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(s.height));
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(s.channels));
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(8 * sample_bytes(s.type)));
  const bool is_float = s.type == SampleType::f32 || s.type == SampleType::f64;
  const bool is_signed = s.type == SampleType::i16 || s.type == SampleType::i32;
  TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT,
               is_float    ? SAMPLEFORMAT_IEEEFP
               : is_signed ? SAMPLEFORMAT_INT
                           : SAMPLEFORMAT_UINT);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  // Rows are filtered and written in stored order, so the stored orientation still applies.
  TIFFSetField(tif, TIFFTAG_ORIENTATION,
               static_cast<std::uint16_t>(p.metadata.orientation >= 1 && p.metadata.orientation <= 8
                                              ? p.metadata.orientation
                                              : ORIENTATION_TOPLEFT));
  // The input's interpretation when it fits the channel count; else grey, or RGB from 3 channels.
  int photometric = p.metadata.photometric;
  if (photometric < 0 || base_channels(photometric) > s.channels)
    photometric = s.channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, static_cast<std::uint16_t>(photometric));
  const int extra = s.channels - base_channels(photometric);
  if (extra > 0) {
    std::vector<std::uint16_t> kinds(extra, EXTRASAMPLE_UNSPECIFIED);
    if (static_cast<int>(p.metadata.extra_samples.size()) == extra)
      kinds = p.metadata.extra_samples;
    TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, static_cast<std::uint16_t>(extra), kinds.data());
  }
  if (p.metadata.x_resolution > 0 && p.metadata.y_resolution > 0) {
    TIFFSetField(tif, TIFFTAG_XRESOLUTION, static_cast<float>(p.metadata.x_resolution));
    TIFFSetField(tif, TIFFTAG_YRESOLUTION, static_cast<float>(p.metadata.y_resolution));
    if (p.metadata.resolution_unit > 0)
      TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT,
                   static_cast<std::uint16_t>(p.metadata.resolution_unit));
  }
  if (const std::string d = output_description(p.metadata.description, s); !d.empty())
    TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, d.c_str());
  TIFFSetField(tif, TIFFTAG_SOFTWARE, "ooc");
  TIFFSetField(tif, TIFFTAG_COMPRESSION, static_cast<std::uint16_t>(p.compression));
  if (p.predictor != PREDICTOR_NONE)
    TIFFSetField(tif, TIFFTAG_PREDICTOR, static_cast<std::uint16_t>(p.predictor));
  if (p.level > 0 && p.compression == COMPRESSION_ADOBE_DEFLATE)
    TIFFSetField(tif, TIFFTAG_ZIPQUALITY, p.level);
  if (p.level > 0 && p.compression == COMPRESSION_ZSTD)
    TIFFSetField(tif, TIFFTAG_ZSTD_LEVEL, p.level);
  if (p.tiled) {
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, static_cast<std::uint32_t>(p.chunk_w));
    TIFFSetField(tif, TIFFTAG_TILELENGTH, static_cast<std::uint32_t>(p.chunk_h));
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, static_cast<std::uint32_t>(p.chunk_h));
  }
}

std::size_t geo_bytes(const GeoTags& g) {
  return 8 * (g.model_pixel_scale.size() + g.model_tiepoint.size() + g.model_transformation.size() +
              g.geo_double_params.size()) +
         2 * g.geo_key_directory.size() + g.geo_ascii_params.size() + g.gdal_metadata.size() +
         g.gdal_nodata.size();
}

namespace {

// A file in memory behind a libtiff handle, for directories libtiff fills and we place.
struct MemoryFile {
  std::vector<std::byte> bytes;
  std::uint64_t pos = 0;

  static tmsize_t read(thandle_t h, void* p, tmsize_t n) {
    auto* m = static_cast<MemoryFile*>(h);
    const std::uint64_t have = m->pos < m->bytes.size() ? m->bytes.size() - m->pos : 0;
    const std::uint64_t k = std::min<std::uint64_t>(have, static_cast<std::uint64_t>(n));
    if (k > 0) std::memcpy(p, m->bytes.data() + m->pos, k);
    m->pos += k;
    return static_cast<tmsize_t>(k);
  }
  static tmsize_t write(thandle_t h, void* p, tmsize_t n) {
    auto* m = static_cast<MemoryFile*>(h);
    const auto len = static_cast<std::size_t>(n);
    if (m->pos + len > m->bytes.size()) m->bytes.resize(m->pos + len);
    std::memcpy(m->bytes.data() + m->pos, p, len);
    m->pos += len;
    return n;
  }
  static toff_t seek(thandle_t h, toff_t off, int whence) {
    auto* m = static_cast<MemoryFile*>(h);
    m->pos = whence == SEEK_SET ? off : whence == SEEK_CUR ? m->pos + off : m->bytes.size() + off;
    return m->pos;
  }
  static int close(thandle_t) { return 0; }
  static toff_t size(thandle_t h) { return static_cast<MemoryFile*>(h)->bytes.size(); }
};

std::size_t type_bytes(std::uint16_t type) {
  switch (type) {
    case 1:
    case 2:
    case 6:
    case 7:
      return 1;
    case 3:
    case 8:
      return 2;
    case 4:
    case 9:
    case 11:
    case 13:
      return 4;
    case 5:
    case 10:
    case 12:
    case 16:
    case 17:
    case 18:
      return 8;
    default:
      return 0;
  }
}

}  // namespace

std::vector<IfdEntry> directory_tags(const TiffPlan& plan, const GeoTags& geo, bool bigtiff,
                                     bool reduced) {
  MemoryFile m;
  TIFF* t = TIFFClientOpen("ooc directory", bigtiff ? "w8l" : "wl", &m, &MemoryFile::read,
                           &MemoryFile::write, &MemoryFile::seek, &MemoryFile::close,
                           &MemoryFile::size, nullptr, nullptr);
  if (!t) throw Error(ErrorKind::io, "cannot set up a TIFF directory: " + take_tiff_error());
  set_tags(t, plan);
  write_geo_tags(t, geo, plan.spec.type);
  if (reduced)
    TIFFSetField(t, TIFFTAG_SUBFILETYPE, static_cast<std::uint32_t>(FILETYPE_REDUCEDIMAGE));
  const bool ok = TIFFWriteDirectory(t) != 0;
  TIFFClose(t);
  if (!ok) throw Error(ErrorKind::io, "cannot write a TIFF directory: " + take_tiff_error());
  const std::vector<std::byte>& f = m.bytes;
  std::uint64_t at = bigtiff ? load<std::uint64_t>(f, 8) : load<std::uint32_t>(f, 4);
  const std::uint64_t n = bigtiff ? load<std::uint64_t>(f, at) : load<std::uint16_t>(f, at);
  at += bigtiff ? 8 : 2;
  const std::uint64_t inline_bytes = bigtiff ? 8 : 4;
  std::vector<IfdEntry> out;
  for (std::uint64_t i = 0; i < n; ++i, at += bigtiff ? 20 : 12) {
    IfdEntry e;
    e.tag = load<std::uint16_t>(f, at);
    e.type = load<std::uint16_t>(f, at + 2);
    e.count = bigtiff ? load<std::uint64_t>(f, at + 4) : load<std::uint32_t>(f, at + 4);
    if (e.tag == kTagTileOffsets || e.tag == kTagTileByteCounts) continue;
    const std::uint64_t bytes = e.count * type_bytes(e.type);
    if (type_bytes(e.type) == 0)
      throw Error(ErrorKind::io, "cannot lay out the TIFF pyramid: tag " + std::to_string(e.tag) +
                                     " has a type we do not know");
    std::uint64_t v = at + (bigtiff ? 12 : 8);
    if (bytes > inline_bytes) v = bigtiff ? load<std::uint64_t>(f, v) : load<std::uint32_t>(f, v);
    if (v + bytes > f.size())
      throw Error(ErrorKind::io,
                  "cannot lay out the TIFF pyramid: libtiff's directory is cut short");
    e.value.assign(f.begin() + static_cast<std::ptrdiff_t>(v),
                   f.begin() + static_cast<std::ptrdiff_t>(v + bytes));
    out.push_back(std::move(e));
  }
  return out;
}

IfdEntry array_entry(std::uint16_t tag, std::uint16_t type,
                     const std::vector<std::uint64_t>& values) {
  IfdEntry e{tag, type, values.size(), {}};
  const std::size_t w = type_bytes(type);
  e.value.resize(values.size() * w);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (w == 4)
      store(e.value.data() + i * w, static_cast<std::uint32_t>(values[i]));
    else
      store(e.value.data() + i * w, values[i]);
  }
  return e;
}

std::uint64_t ifd_bytes(const std::vector<IfdEntry>& entries, bool bigtiff) {
  std::uint64_t n = (bigtiff ? 16 : 6) + entries.size() * (bigtiff ? 20 : 12);
  for (const IfdEntry& e : entries)
    if (e.value.size() > (bigtiff ? 8u : 4u)) n += e.value.size() + (e.value.size() & 1);
  return n;
}

std::vector<std::byte> ifd_image(std::vector<IfdEntry> entries, bool bigtiff, std::uint64_t at,
                                 std::uint64_t next) {
  std::sort(entries.begin(), entries.end(),
            [](const IfdEntry& a, const IfdEntry& b) { return a.tag < b.tag; });
  std::vector<std::byte> out(ifd_bytes(entries, bigtiff));
  const std::size_t entry = bigtiff ? 20 : 12, inline_bytes = bigtiff ? 8 : 4;
  std::size_t p = bigtiff ? 8 : 2;
  if (bigtiff)
    store(out.data(), static_cast<std::uint64_t>(entries.size()));
  else
    store(out.data(), static_cast<std::uint16_t>(entries.size()));
  std::uint64_t extra = p + entries.size() * entry + (bigtiff ? 8 : 4);
  for (const IfdEntry& e : entries) {
    store(out.data() + p, e.tag);
    store(out.data() + p + 2, e.type);
    if (bigtiff)
      store(out.data() + p + 4, e.count);
    else
      store(out.data() + p + 4, static_cast<std::uint32_t>(e.count));
    std::byte* v = out.data() + p + (bigtiff ? 12 : 8);
    if (e.value.size() <= inline_bytes) {
      if (!e.value.empty()) std::memcpy(v, e.value.data(), e.value.size());
    } else {
      if (bigtiff)
        store(v, at + extra);
      else
        store(v, static_cast<std::uint32_t>(at + extra));
      std::memcpy(out.data() + extra, e.value.data(), e.value.size());
      extra += e.value.size() + (e.value.size() & 1);
    }
    p += entry;
  }
  if (bigtiff)
    store(out.data() + p, next);
  else
    store(out.data() + p, static_cast<std::uint32_t>(next));
  return out;
}

GeoTags level_geo(const GeoTags& geo, int k) {
  GeoTags g = geo;
  const double f = std::ldexp(1.0, k);
  if (g.model_pixel_scale.size() >= 2) {
    g.model_pixel_scale[0] *= f;
    g.model_pixel_scale[1] *= f;
  }
  for (std::size_t i = 0; i + 1 < g.model_tiepoint.size(); i += 6) {
    g.model_tiepoint[i] /= f;
    g.model_tiepoint[i + 1] /= f;
  }
  if (g.model_transformation.size() == 16)
    for (const int i : {0, 1, 4, 5, 8, 9, 12, 13}) g.model_transformation[i] *= f;
  return g;
}

}  // namespace ooc::detail
