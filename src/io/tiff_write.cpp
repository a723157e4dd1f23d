// Writing TIFF and BigTIFF: striped or tiled, uncompressed or compressed, with the input's
// descriptive tags. The write stage hands rows over in order; each complete row of strips or tiles
// is compressed in parallel, each worker through a private in-memory libtiff handle (libtiff has
// no thread-safe "encode this block" call), and the compressed bytes are appended to the file in
// order with TIFFWriteRawStrip/Tile. The file goes through our own I/O callbacks, so write errors
// keep their errno, and all-zero blocks past the end of the file become holes (a sparse file).
// Pyramids (levels as SubIFDs of the first page, or a Cloud-Optimized GeoTIFF) are built from the
// rows as they stream; their tiles are compressed as each tile row of a level completes and kept
// in unlinked spill files beside the output until commit, which copies them into the order the
// layout needs and writes the directories itself (libtiff fills in the tags, we place them: libtiff
// cannot put directories before data written earlier).
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
#include "tiff_parts.hpp"

namespace ooc {
namespace {

constexpr std::uint64_t kFourGiB = 1ull << 32;
// Strips of about this many bytes: enough blocks per band for all cores, small enough to stream.
constexpr std::uint64_t kStripBytes = 1u << 20;
// Rows gathered before a round of compression (besides the rows of blocks being written).
constexpr std::uint64_t kBatchBytes = 64u << 20;

int compression_code(const std::string& name) {
  if (name == "none" || name.empty()) return COMPRESSION_NONE;
  if (name == "lzw") return COMPRESSION_LZW;
  if (name == "deflate") return COMPRESSION_ADOBE_DEFLATE;
  if (name == "zstd") return COMPRESSION_ZSTD;
  if (name == "packbits") return COMPRESSION_PACKBITS;
  throw Error(ErrorKind::usage,
              "--compress takes none, lzw, deflate, zstd or packbits, got '" + name + "'");
}

// The predictor a TIFF output is written with: "none", "horizontal" or "float". auto takes the
// horizontal one wherever a predictor applies, floats included: every reader decodes it (tifffile
// without the imagecodecs package, Debian's, decodes no floating-point predictor), and libtiff
// applies it to a float's bits as to an integer's, losslessly.
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

// The layout and tags of the output, shared by the file and the encoders.
struct TiffPlan {
  ImageSpec spec;
  int compression = COMPRESSION_NONE;
  int level = -1;
  int predictor = PREDICTOR_NONE;
  bool tiled = false;
  std::int64_t chunk_w = 0, chunk_h = 0, across = 1, down = 1;
  Metadata metadata;

  std::uint64_t chunk_row_bytes() const { return chunk_w * spec.pixel_bytes(); }
  // Tiles are always whole (padded at the edges), strips hold their rows.
  std::uint64_t chunk_bytes(std::int64_t cy) const {
    return chunk_row_bytes() * static_cast<std::uint64_t>(
                                   tiled ? chunk_h : std::min(chunk_h, spec.height - cy * chunk_h));
  }
};

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

// The output's array as tifffile reads it: one page of interleaved samples.
std::vector<std::int64_t> output_shape(const ImageSpec& s) {
  if (s.channels > 1) return {s.height, s.width, s.channels};
  return {s.height, s.width};
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
    out.replace(from, to - from, s.channels > 1 ? "YXS" : "YX");
  }
  return out;
}

// A description that is still true of the output. tifffile's shape descriptions (JSON, or the
// older "shape=(...)") say how to reshape the pages, so they are rewritten to the output's array:
// carried over from separate planes, or from a stack of pages, they would make tifffile read it
// scrambled. An ImageJ description of more than one image (a stack, channels as pages) is dropped:
// the output is one page. Any other text is the user's and is kept.
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
      if (at != std::string::npos && std::atoll(text.c_str() + at + std::strlen(key)) != 1)
        return {};
    }
  }
  return text;
}

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

// A private libtiff handle that writes into memory: TIFFWriteEncodedStrip/Tile on it runs the
// codec (predictor included) and its "file" collects exactly the encoded bytes of that block.
class Encoder {
 public:
  explicit Encoder(const TiffPlan& plan) {
    tif_ = TIFFClientOpen("ooc encoder", "w8", this, &Encoder::read, &Encoder::write,
                          &Encoder::seek, &Encoder::close, &Encoder::size, nullptr, nullptr);
    if (!tif_) throw Error(ErrorKind::io, "cannot set up a TIFF encoder: " + take_tiff_error());
    set_tags(tif_, plan);
  }
  ~Encoder() {
    if (tif_) TIFFClose(tif_);
  }
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  // Compresses block `index` (bytes of its pixels at `data`) into `out`.
  void encode(bool tiled, std::uint32_t index, std::byte* data, std::size_t bytes,
              std::vector<std::byte>& out) {
    out_ = &out;
    out.clear();
    // Each block starts a fresh in-memory file: offsets stay small and nothing accumulates.
    pos_ = end_ = 16;
    const tmsize_t r = tiled
                           ? TIFFWriteEncodedTile(tif_, index, data, static_cast<tmsize_t>(bytes))
                           : TIFFWriteEncodedStrip(tif_, index, data, static_cast<tmsize_t>(bytes));
    out_ = nullptr;
    if (r < 0) throw Error(ErrorKind::io, "cannot compress TIFF block: " + take_tiff_error());
  }

 private:
  static tmsize_t read(thandle_t, void*, tmsize_t) { return 0; }
  static tmsize_t write(thandle_t h, void* p, tmsize_t n) {
    auto* e = static_cast<Encoder*>(h);
    if (e->out_) {
      const auto* b = static_cast<const std::byte*>(p);
      e->out_->insert(e->out_->end(), b, b + n);
    }
    e->pos_ += static_cast<std::uint64_t>(n);
    e->end_ = std::max(e->end_, e->pos_);
    return n;
  }
  static toff_t seek(thandle_t h, toff_t off, int whence) {
    auto* e = static_cast<Encoder*>(h);
    e->pos_ = whence == SEEK_SET ? off : whence == SEEK_CUR ? e->pos_ + off : e->end_ + off;
    return e->pos_;
  }
  static int close(thandle_t) { return 0; }
  static toff_t size(thandle_t h) { return static_cast<Encoder*>(h)->end_; }

  TIFF* tif_ = nullptr;
  std::vector<std::byte>* out_ = nullptr;
  std::uint64_t pos_ = 0, end_ = 0;
};

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

// One directory entry, its value as the file stores it (little endian).
struct IfdEntry {
  std::uint16_t tag = 0, type = 0;
  std::uint64_t count = 0;
  std::vector<std::byte> value;
};

constexpr std::uint16_t kTypeLong = 4, kTypeIfd = 13, kTypeLong8 = 16, kTypeIfd8 = 18;
constexpr std::uint16_t kTagTileOffsets = 324, kTagTileByteCounts = 325, kTagSubIfds = 330;

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

template <class T>
T load(const std::vector<std::byte>& f, std::uint64_t at) {
  if (at + sizeof(T) > f.size())
    throw Error(ErrorKind::io, "cannot lay out the TIFF pyramid: libtiff's directory is cut short");
  T v;
  std::memcpy(&v, f.data() + at, sizeof(T));
  return v;
}

template <class T>
void store(std::byte* at, T v) {
  std::memcpy(at, &v, sizeof(T));
}

// The tags of a directory of `plan`, as libtiff writes them (so that every layout carries the
// same tags as a flat output), less the tile offsets and sizes, which only the layout knows.
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

// An entry of `type` (LONG, LONG8, IFD or IFD8) holding `values`.
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

// Bytes a directory takes with its values that do not fit in their entries (each at an even
// offset, as TIFF asks).
std::uint64_t ifd_bytes(const std::vector<IfdEntry>& entries, bool bigtiff) {
  std::uint64_t n = (bigtiff ? 16 : 6) + entries.size() * (bigtiff ? 20 : 12);
  for (const IfdEntry& e : entries)
    if (e.value.size() > (bigtiff ? 8u : 4u)) n += e.value.size() + (e.value.size() & 1);
  return n;
}

// The directory as it lies at file offset `at` (even), followed by `next`.
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

// Georeferencing of level k: a pixel there covers 2^k x 2^k pixels of level 0, from the same
// corner.
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

bool ome_name(const std::string& path) {
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string end : {".ome.tif", ".ome.tiff"})
    if (lower.size() > end.size() && lower.compare(lower.size() - end.size(), end.size(), end) == 0)
      return true;
  return false;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Minimal OME-XML for one interleaved plane (the layout OME-TIFF readers expect of an RGB or
// single-channel image): the levels below are the first page's SubIFDs.
std::string ome_xml(const ImageSpec& s, const std::string& path) {
  const char* type = "uint8";
  switch (s.type) {
    case SampleType::u8:
      type = "uint8";
      break;
    case SampleType::u16:
      type = "uint16";
      break;
    case SampleType::i16:
      type = "int16";
      break;
    case SampleType::u32:
      type = "uint32";
      break;
    case SampleType::i32:
      type = "int32";
      break;
    case SampleType::f32:
      type = "float";
      break;
    case SampleType::f64:
      type = "double";
      break;
  }
  std::string name = path.substr(path.rfind('/') + 1);
  const std::size_t dot = name.find(".ome.");
  if (dot != std::string::npos) name.resize(dot);
  const std::string c = std::to_string(s.channels);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<OME xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\" "
         "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
         "xsi:schemaLocation=\"http://www.openmicroscopy.org/Schemas/OME/2016-06 "
         "http://www.openmicroscopy.org/Schemas/OME/2016-06/ome.xsd\" Creator=\"ooc\">"
         "<Image ID=\"Image:0\" Name=\"" +
         xml_escape(name) + "\"><Pixels ID=\"Pixels:0\" DimensionOrder=\"XYCZT\" Type=\"" + type +
         "\" SizeX=\"" + std::to_string(s.width) + "\" SizeY=\"" + std::to_string(s.height) +
         "\" SizeC=\"" + c +
         "\" SizeZ=\"1\" SizeT=\"1\" Interleaved=\"true\" BigEndian=\"false\">"
         "<Channel ID=\"Channel:0:0\" SamplesPerPixel=\"" +
         c + "\"/><TiffData IFD=\"0\" PlaneCount=\"1\"/></Pixels></Image></OME>";
}

// ---- Writers' files, for outputs made in parts or resumed (see tiff_parts.hpp) ----------------
// Beside the temporary TEMP (OUT.partial): TEMP.tiff-parts (the settings every writer shares,
// which the assembly rebuilds the writer from), TEMP.rows-A-B.tiff-blocks (one writer's
// compressed blocks, appended) with TEMP.rows-A-B.tiff-index (what each block is and where it
// lies, a record per block, appended after the block: a record never names bytes not written),
// and TEMP.tiff-edge-L<level>-<first>-<end> (raw rows of a row of blocks no writer made whole).

// A tiled output's tile side (0: strips): a pyramid or a COG is tiled, 512 unless --tile says.
std::int64_t tile_side(const SinkOptions& o) {
  return o.tile == 0 && (o.pyramid_levels != 0 || o.cog) ? 512 : o.tile;
}

std::int64_t strip_rows(const ImageSpec& spec) {
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(kStripBytes / spec.row_bytes()), 1,
                                  spec.height);
}

constexpr std::uint32_t kIndexMagic = 0x6b6c426f;  // "oBlk"
struct IndexRecord {
  std::uint32_t magic = kIndexMagic, level = 0;
  std::uint64_t index = 0, offset = 0, size = 0;
};
static_assert(sizeof(IndexRecord) == 32);

// Where the temporary of `output` lives: beside the file a link points to (as OutputFile and
// the job's journals have it).
std::string temporary_for(const std::string& output) {
  struct stat st {};
  if (::lstat(output.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (::realpath(output.c_str(), resolved) != nullptr) return partial_path(resolved);
  }
  return partial_path(output);
}

std::string settings_path(const std::string& temp) {
  return temp + ".tiff-parts";
}
std::string range_stem(const std::string& temp, std::int64_t lo, std::int64_t hi) {
  return temp + ".rows-" + std::to_string(lo) + "-" + std::to_string(hi);
}
constexpr const char* kBlocksSuffix = ".tiff-blocks";
constexpr const char* kIndexSuffix = ".tiff-index";
std::string edge_path(const std::string& temp, int k, std::int64_t lo, std::int64_t hi) {
  return temp + ".tiff-edge-L" + std::to_string(k) + "-" + std::to_string(lo) + "-" +
         std::to_string(hi);
}

std::string hex(const std::string& text) {
  static const char* digits = "0123456789abcdef";
  std::string out = "x";  // never empty: a line always has a value to read
  for (const unsigned char c : text) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string unhex(const std::string& h) {
  std::string out;
  for (std::size_t i = 1; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

template <class T>
std::string list_text(const std::vector<T>& v) {
  std::ostringstream o;
  o << v.size();
  for (const T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      char b[40];
      std::snprintf(b, sizeof b, " %.17g", x);
      o << b;
    } else {
      o << " " << x;
    }
  }
  return o.str();
}

template <class T>
std::vector<T> read_list(std::istream& in) {
  std::size_t n = 0;
  in >> n;
  if (!in || n > (1u << 20)) throw std::runtime_error("bad list");
  std::vector<T> v(n);
  for (T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      std::string w;
      in >> w;
      x = std::strtod(w.c_str(), nullptr);
    } else {
      in >> x;
    }
  }
  return v;
}

// What every writer of one output must agree on, and all the assembly needs to write the file as
// one process would: the image, the layout options and the tags carried over from the input.
std::string settings_text(const ImageSpec& s, const SinkOptions& o) {
  const Metadata& m = o.metadata;
  const GeoTags& g = m.geo;
  char res[96];
  std::snprintf(res, sizeof res, "%.17g %.17g", m.x_resolution, m.y_resolution);
  std::ostringstream t;
  t << "ooc-tiff-parts 2\nimage " << s.width << " " << s.height << " " << s.channels << " "
    << static_cast<int>(s.type) << "\ncompress " << hex(o.compress) << " " << o.level << " "
    << resolved_predictor(o, s.type) << "\nlayout " << o.tile << " " << o.pyramid_levels << " "
    << (o.cog ? 1 : 0) << " " << hex(o.bigtiff) << "\nphotometric " << m.photometric << " "
    << list_text(m.extra_samples) << "\nresolution " << res << " " << m.resolution_unit
    << "\ndescription " << hex(m.description) << "\norientation " << m.orientation << "\ngeo "
    << list_text(g.model_pixel_scale) << " " << list_text(g.model_tiepoint) << " "
    << list_text(g.model_transformation) << " " << list_text(g.geo_key_directory) << " "
    << list_text(g.geo_double_params) << " " << hex(g.geo_ascii_params) << " "
    << hex(g.gdal_metadata) << " " << hex(g.gdal_nodata) << "\nend\n";
  return t.str();
}

void parse_settings(const std::string& text, const std::string& path, ImageSpec& s,
                    SinkOptions& o) {
  try {
    std::istringstream in(text);
    std::string line, key, h;
    std::getline(in, line);
    if (line != "ooc-tiff-parts 2") throw std::runtime_error("not ours");
    int type = 0, cog = 0;
    in >> key >> s.width >> s.height >> s.channels >> type;
    s.type = static_cast<SampleType>(type);
    in >> key >> h >> o.level >> o.predictor;
    o.compress = unhex(h);
    in >> key >> o.tile >> o.pyramid_levels >> cog >> h;
    o.cog = cog != 0;
    o.bigtiff = unhex(h);
    Metadata& m = o.metadata;
    in >> key >> m.photometric;
    m.extra_samples = read_list<std::uint16_t>(in);
    std::string xr, yr;
    in >> key >> xr >> yr >> m.resolution_unit;
    m.x_resolution = std::strtod(xr.c_str(), nullptr);
    m.y_resolution = std::strtod(yr.c_str(), nullptr);
    in >> key >> h;
    m.description = unhex(h);
    in >> key >> m.orientation >> key;
    GeoTags& g = m.geo;
    g.model_pixel_scale = read_list<double>(in);
    g.model_tiepoint = read_list<double>(in);
    g.model_transformation = read_list<double>(in);
    g.geo_key_directory = read_list<std::uint16_t>(in);
    g.geo_double_params = read_list<double>(in);
    in >> h;
    g.geo_ascii_params = unhex(h);
    in >> h;
    g.gdal_metadata = unhex(h);
    in >> h;
    g.gdal_nodata = unhex(h);
    in >> key;
    if (!in || key != "end") throw std::runtime_error("cut short");
  } catch (const std::exception&) {
    throw Error(ErrorKind::input, "'" + path +
                                      "' (the settings of a TIFF made in parts) is damaged: "
                                      "remove '" +
                                      path.substr(0, path.size() - 11) + ".*' and run again");
  }
}

std::string read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw Error(ErrorKind::io, system_message("cannot read", path, errno));
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

void write_all(int fd, const void* data, std::size_t len, std::uint64_t at,
               const std::string& name) {
  const auto* b = static_cast<const std::byte*>(data);
  for (std::size_t done = 0; done < len;) {
    const ssize_t w = ::pwrite(fd, b + done, len - done, static_cast<off_t>(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : ENOSPC;
      throw Error(ErrorKind::io, system_message("cannot write", name, err) + full_hint(err));
    }
    done += static_cast<std::size_t>(w);
  }
}

void read_all(int fd, void* data, std::size_t len, std::uint64_t at, const std::string& name) {
  auto* b = static_cast<std::byte*>(data);
  for (std::size_t done = 0; done < len;) {
    const ssize_t r = ::pread(fd, b + done, len - done, static_cast<off_t>(at + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw Error(ErrorKind::io, system_message("cannot read", name, r < 0 ? errno : EIO));
    done += static_cast<std::size_t>(r);
  }
}

// Written beside and renamed: a file of rows appears whole or not at all.
void write_file_atomic(const std::string& path, const void* data, std::size_t len) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::io, system_message("cannot write", tmp, errno) + full_hint(errno));
  try {
    write_all(fd, data, len, 0, tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::io, system_message("cannot write", path, err));
  }
}

// The writers' files beside `temp` (every TEMP.rows-*.tiff-*, TEMP.tiff-edge-*, and the
// settings when `settings`), full paths.
std::vector<std::string> part_files(const std::string& temp, bool settings) {
  const std::size_t slash = temp.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : temp.substr(0, slash + 1);
  const std::string stem = temp.substr(slash == std::string::npos ? 0 : slash + 1);
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind(stem + ".", 0) != 0) continue;
    const std::string rest = n.substr(stem.size());
    const bool ours =
        (rest.rfind(".rows-", 0) == 0 && (rest.find(kBlocksSuffix) != std::string::npos ||
                                          rest.find(kIndexSuffix) != std::string::npos)) ||
        rest.rfind(".tiff-edge-L", 0) == 0 || (settings && rest.rfind(".tiff-parts", 0) == 0);
    if (ours) out.push_back((slash == std::string::npos ? "" : dir) + n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void remove_part_files(const std::string& temp) {
  for (const std::string& p : part_files(temp, true)) ::unlink(p.c_str());
}

// Records `text` as the settings of the writers of `temp`, or checks it against the settings
// another writer recorded first (made aside and linked: a reader never sees half of it).
void claim_settings(const std::string& temp, const std::string& text) {
  const std::string path = settings_path(temp);
  for (int attempt = 0; attempt < 2; ++attempt) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      const std::string there = read_small_file(path);
      if (there != text)
        throw Error(ErrorKind::usage,
                    "the TIFF output beside '" + temp +
                        "' is being made in parts with other settings (image size, --tile, "
                        "--compress, --level, --predictor, --levels, --cog, --bigtiff or the "
                        "input's tags differ): run every part alike, or remove '" +
                        temp + ".*' to start over");
      return;
    }
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    write_file_atomic(tmp, text.data(), text.size());
    const int rc = ::link(tmp.c_str(), path.c_str());
    const int err = errno;
    ::unlink(tmp.c_str());
    if (rc == 0) return;
    if (err != EEXIST) throw Error(ErrorKind::io, system_message("cannot create", path, err));
  }
}

class TiffSink final : public Sink {
 public:
  // `assemble`: made by finish_tiff_parts, which hands it the writers' blocks (the writers' files
  // beside the temporary are then its input, not leftovers to clear).
  TiffSink(const std::string& path, const ImageSpec& spec, const std::string& input_path,
           const SinkOptions& o, bool assemble = false)
      : path_(path), temp_(temporary_for(path)), settings_(settings_text(spec, o)), mode_(o.mode) {
    plan_.spec = spec;
    plan_.compression = compression_code(o.compress);
    compress_name_ = o.compress;
    predictor_ = resolved_predictor(o, spec.type);
    plan_.predictor = predictor_code(predictor_);
    plan_.metadata = o.metadata;
    cog_ = o.cog;
    if (ome_name(path)) {
      if (cog_)
        throw Error(ErrorKind::usage,
                    "--cog writes a GeoTIFF, and '" + path +
                        "' names an OME-TIFF (whose pyramid is SubIFDs): drop --cog or name the "
                        "output .tif");
      plan_.metadata.description = ome_xml(spec, path);
    }
    // A COG without overviews (--cog --levels 0) is valid; the front ends turn a --cog without
    // --levels into -1 (automatic levels).
    levels_count_ = o.pyramid_levels < 0 ? pyramid_auto_levels(spec) : o.pyramid_levels;
    if (levels_count_ > 0) {
      const ImageSpec above = pyramid_level(spec, levels_count_ - 1);
      if (above.width == 1 && above.height == 1)
        throw Error(ErrorKind::usage, "--levels " + std::to_string(levels_count_) +
                                          " is too many for a " + std::to_string(spec.width) +
                                          " x " + std::to_string(spec.height) + " image: level " +
                                          std::to_string(levels_count_ - 1) + " is already 1 x 1");
    }
    // Directories we place ourselves: a pyramid, or a COG (IFDs before the data).
    own_layout_ = levels_count_ > 0 || cog_;
    if (!TIFFIsCODECConfigured(static_cast<std::uint16_t>(plan_.compression)))
      throw Error(ErrorKind::usage,
                  "this libtiff cannot write " + o.compress + ": pick another --compress");
    plan_.level = o.level;
    if (o.level != -1) {
      const int top = plan_.compression == COMPRESSION_ADOBE_DEFLATE ? 9
                      : plan_.compression == COMPRESSION_ZSTD        ? 22
                                                                     : 0;
      if (top == 0)
        throw Error(ErrorKind::usage,
                    "--level applies to --compress deflate (1-9) and zstd (1-22)");
      if (o.level < 1 || o.level > top)
        throw Error(ErrorKind::usage, "--level for " + o.compress + " is 1 to " +
                                          std::to_string(top) + ", got " + std::to_string(o.level));
    }
    if (spec.width > 0xffffffffLL || spec.height > 0xffffffffLL)
      throw Error(ErrorKind::usage,
                  "a TIFF image is at most 4294967295 pixels on a side; write "
                  "raw or .npy instead");
    if (o.tile < 0 || o.tile % 16 != 0)
      throw Error(ErrorKind::usage, "--tile must be a positive multiple of 16 (TIFF's rule), got " +
                                        std::to_string(o.tile));
    // A pyramid is tiled: 512, as GDAL's COG and libvips' pyramids default to.
    const std::int64_t tile = tile_side(o);
    plan_.tiled = tile > 0;
    if (plan_.tiled) {
      plan_.chunk_w = plan_.chunk_h = tile;
    } else {
      plan_.chunk_w = spec.width;
      plan_.chunk_h = strip_rows(spec);
    }
    plan_.across = (spec.width + plan_.chunk_w - 1) / plan_.chunk_w;
    plan_.down = (spec.height + plan_.chunk_h - 1) / plan_.chunk_h;

    // The largest the file could get: LZW can grow incompressible data by half, the others
    // barely; plus the offset tables and the tags.
    const double growth = plan_.compression == COMPRESSION_LZW        ? 1.5
                          : plan_.compression == COMPRESSION_PACKBITS ? 1.01
                          : plan_.compression == COMPRESSION_NONE     ? 1.0
                                                                      : 1.001;
    double blocks = double(plan_.across * plan_.down);
    std::uint64_t padded =
        plan_.chunk_bytes(0) * static_cast<std::uint64_t>(plan_.across * plan_.down);
    // Each level's plan: the same tiles, codec and tags, its own size.
    // An ImageJ description cannot say that there are levels, and readers that trust it (tifffile)
    // would not look for them.
    if (levels_count_ > 0 && plan_.metadata.description.rfind("ImageJ=", 0) == 0)
      plan_.metadata.description.clear();
    levels_.resize(static_cast<std::size_t>(levels_count_) + 1);
    double level_rows_bytes = 0;
    for (int k = 0; k <= levels_count_; ++k) {
      Level& l = levels_[static_cast<std::size_t>(k)];
      l.plan = plan_;
      l.plan.spec = pyramid_level(spec, k);
      // A shape description goes on every level, rewritten to its shape: tifffile reads a
      // shaped series' SubIFDs only when each has one. Other text describes level 0 alone.
      const std::string& d = l.plan.metadata.description;
      if (k > 0 && d.rfind("{\"shape\":", 0) != 0 && d.rfind("shape=(", 0) != 0)
        l.plan.metadata.description.clear();
      l.plan.across = (l.plan.spec.width + l.plan.chunk_w - 1) / l.plan.chunk_w;
      l.plan.down = (l.plan.spec.height + l.plan.chunk_h - 1) / l.plan.chunk_h;
      if (!own_layout_) continue;
      const auto tiles = static_cast<std::size_t>(l.plan.across * l.plan.down);
      l.offsets.assign(tiles, 0);
      l.counts.assign(tiles, 0);
      if (k == 0) continue;
      blocks += double(tiles);
      padded += l.plan.chunk_bytes(0) * tiles;
      // A row of tiles gathered, and the builder's pending row.
      level_rows_bytes +=
          double(l.plan.chunk_h + 2) * double(l.plan.spec.row_bytes()) + 16.0 * double(tiles);
    }
    const double worst = double(plan_.tiled ? padded : spec.total_bytes()) * growth + blocks * 64 +
                         16 * (1 << 20) + double(o.metadata.description.size()) +
                         double(geo_bytes(o.metadata.geo));
    // Memory: the batch of rows gathered for compression (at least one row of blocks), the
    // compressed blocks of one batch, and per thread a block being assembled and the codec's
    // buffers. Checked against --mem-limit before anything is allocated or created.
    const std::size_t limit = o.mem_limit > 0 ? o.mem_limit : default_mem_limit();
    const std::uint64_t threads =
        static_cast<std::uint64_t>(o.threads > 0 ? o.threads : default_threads());
    const bool encoded = plan_.compression != COMPRESSION_NONE || plan_.tiled;
    const double block_row = double(plan_.chunk_bytes(0)) * double(plan_.tiled ? plan_.across : 1);
    const double per_thread = encoded ? 3.0 * double(plan_.chunk_bytes(0)) : 0.0;
    const double kept = encoded ? 1.0 + growth : 1.0;
    const double least = block_row * kept + double(threads) * per_thread + level_rows_bytes * kept;
    if (least > double(limit) / 2) {
      const std::string what =
          plan_.tiled ? "--tile " + std::to_string(o.tile) + " makes one row of tiles " +
                            std::to_string(plan_.chunk_h) + " x " +
                            std::to_string(plan_.chunk_w * plan_.across) + " pixels"
                      : "a row of strips of this image";
      throw Error(ErrorKind::usage, what + " (the image is " + std::to_string(spec.width) + " x " +
                                        std::to_string(spec.height) + "), and writing it needs " +
                                        format_bytes(least) + " with " + std::to_string(threads) +
                                        " threads, more than half of --mem-limit " +
                                        format_bytes(double(limit)) +
                                        ": use a smaller --tile or raise --mem-limit");
    }
    const std::int64_t want_rows =
        (4 * static_cast<std::int64_t>(threads) + plan_.across - 1) / plan_.across;
    const double budget = std::max(block_row, std::min(double(kBatchBytes), double(limit) / 8));
    const std::int64_t fit = static_cast<std::int64_t>(budget / block_row);
    batch_rows_ = std::min(plan_.chunk_h * std::max<std::int64_t>(1, std::min(want_rows, fit)),
                           plan_.down * plan_.chunk_h);
    buffer_bytes_ =
        static_cast<std::size_t>(double(batch_rows_) * double(spec.row_bytes()) * kept +
                                 double(threads) * per_thread + level_rows_bytes * kept);

    if (o.bigtiff == "yes" || o.bigtiff == "auto") {
      bigtiff_ = o.bigtiff == "yes" || worst >= double(kFourGiB);
    } else if (o.bigtiff == "no") {
      if (plan_.compression == COMPRESSION_NONE && worst >= double(kFourGiB))
        throw Error(ErrorKind::usage, "output '" + path +
                                          "' needs more than 4 GiB, past what a classic TIFF "
                                          "holds: use --bigtiff auto or yes");
    } else {
      throw Error(ErrorKind::usage, "--bigtiff takes auto, yes or no, got '" + o.bigtiff + "'");
    }

    install_tiff_handlers();
    if (o.mode != OutputMode::fresh) {
      open_range(o, input_path);
      return;
    }
    file_ =
        std::make_unique<OutputFile>(path, input_path, OutputMode::fresh, 0, 0, false, o.no_locks);
    fd_ = file_->fd();
    // A fresh run replaces what an earlier stopped run of this output kept (it holds the
    // temporary's lock now, and the job refused to start while parts are being made).
    if (!assemble) remove_part_files(temp_);
    if (own_layout_) {
      start_own_layout();
      batch_.resize(static_cast<std::size_t>(batch_rows_) * spec.row_bytes());
      return;
    }
    tif_ = TIFFClientOpen(file_->partial().c_str(), bigtiff_ ? "w8" : "w", this, &TiffSink::read,
                          &TiffSink::write, &TiffSink::seek, &TiffSink::close, &TiffSink::size,
                          nullptr, nullptr);
    if (!tif_) {
      discard();
      throw failure("cannot start TIFF output");
    }
    set_tags(tif_, plan_);
    // In the file only: the encoders' in-memory handles never write a directory.
    write_geo_tags(tif_, plan_.metadata.geo, spec.type);
    batch_.resize(static_cast<std::size_t>(batch_rows_) * spec.row_bytes());
  }

  ~TiffSink() override {
    discard();
    for (Level& l : levels_)
      if (l.fd >= 0) ::close(l.fd);
    if (data_fd_ >= 0) ::close(data_fd_);
    if (index_fd_ >= 0) ::close(index_fd_);
    // An error ended a resumed single run: what it and the runs before it kept goes with it, as
    // the job's journal does. Parts leave their files to --finish and --resume.
    if (range_ && !done_ && mode_ == OutputMode::resume) remove_part_files(temp_);
  }

  const ImageSpec& spec() const noexcept override { return plan_.spec; }
  std::size_t buffer_bytes() const override { return buffer_bytes_; }
  std::string describe() const override {
    std::string d =
        std::string(bigtiff_ ? "BigTIFF '" : "tiff '") + path_ + "' " + plan_.spec.describe();
    if (cog_)
      d += ", COG with " + std::to_string(levels_count_) + " overviews";
    else if (levels_count_ > 0)
      d += ", " + std::to_string(levels_count_) + " levels as SubIFDs";
    if (plan_.compression != COMPRESSION_NONE)
      d += ", " + compress_name_ + ", predictor " + predictor_;
    return d;
  }
  std::string predictor() const override { return predictor_; }

  // Uncompressed strips are appended straight from the band. Everything else is gathered, whole
  // rows of blocks at a time, in batch_, and compressed a batch at a time: a band may hold only a
  // block or two, and one batch keeps every core busy whatever the band height.
  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                  std::size_t stride) override {
    const std::size_t row = plan_.spec.row_bytes();
    if (range_) {
      write_range_rows(y0, n, data, stride);
      return;
    }
    if (own_layout_) {
      gather(n, data, stride);
      if (levels_count_ > 0) {
        if (!builder_)
          builder_ = std::make_unique<PyramidBuilder>(
              plan_.spec, levels_count_, 0, plan_.spec.height,
              [this](int k, std::int64_t r, const std::byte* p) { add_level_row(k, r, p); });
        builder_->push(y0, n, data, stride);
      }
      return;
    }
    if (plan_.compression == COMPRESSION_NONE && !plan_.tiled && stride == row) {
      std::vector<std::pair<std::int64_t, const std::byte*>> ready;
      for (std::int64_t y = y0; y < y0 + n;) {
        const std::int64_t cy = y / plan_.chunk_h, top = cy * plan_.chunk_h;
        const std::int64_t rows = std::min(plan_.chunk_h, plan_.spec.height - top);
        const std::int64_t take = std::min(top + rows - y, y0 + n - y);
        if (y == top && take == rows) {
          ready.emplace_back(cy, data + (y - y0) * stride);
        } else {
          // A strip split between bands: in order, after the strips before it.
          flush(ready);
          ready.clear();
          // Strips before it went straight to the file: the batch restarts at this strip.
          if (batch_end_ == batch_y0_) batch_y0_ = batch_end_ = top;
          gather(take, data + (y - y0) * stride, stride);
          flush_batch(true);
        }
        y += take;
      }
      flush(ready);
      return;
    }
    gather(n, data, stride);
  }

  void commit() override {
    if (range_) {
      end_range(false);
      // A resumed single run puts the output in place itself; parts leave that to --finish.
      if (mode_ == OutputMode::resume) finish_tiff_parts(path_, temp_);
      done_ = true;
      return;
    }
    flush_batch(true);
    if (own_layout_) {
      finish_own_layout();
      fd_ = -1;
      file_->commit();
      return;
    }
    if (!TIFFWriteDirectory(tif_)) throw failure("cannot finish output '" + path_ + "'");
    TIFFClose(tif_);
    tif_ = nullptr;
    // Trailing holes exist only in our bookkeeping until the file is given its full length.
    if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0)
      throw Error(ErrorKind::io, system_message("cannot finish output", file_->partial(), errno) +
                                     full_hint(errno));
    fd_ = -1;
    file_->commit();
  }

  // A stop for --resume. A writer of a range (a part, a resumed run) has its blocks in its own
  // files already; a single run's output turns into such files: its blocks stay where they are
  // (the temporary is renamed to a blocks file, the pyramid's spilled tiles appended to it) and
  // an index says where each lies. Rows of unfinished rows of blocks go to edge files.
  void keep() override {
    if (range_) {
      end_range(true);
      kept_path_ = data_path_.empty() ? settings_path(temp_) : data_path_;
      done_ = true;
      return;
    }
    flush_batch(true);
    const std::int64_t blocks_end = done_end_;  // the edge below moves done_end_ past the blocks
    if (batch_end_ > batch_y0_) write_edge(0, batch_y0_, batch_end_, batch_.data());
    for (int k = 1; k <= levels_count_; ++k) flush_partial(k);
    std::vector<IndexRecord> records;
    std::uint64_t end = 0;
    if (own_layout_) {
      end = levels_[0].fd < 0 ? levels_[0].end : header_bytes_;
      for (std::size_t k = 0; k < levels_.size(); ++k) {
        Level& l = levels_[k];
        std::uint64_t base = 0;
        if (l.fd >= 0) {
          copy_spill(static_cast<int>(k), l.end, end);
          base = end;
          end += l.end;
        }
        for (std::size_t i = 0; i < l.counts.size(); ++i)
          if (l.counts[i] > 0)
            records.push_back(
                {kIndexMagic, static_cast<std::uint32_t>(k), i, l.offsets[i] + base, l.counts[i]});
      }
    } else {
      const std::int64_t rows_done = (blocks_end + plan_.chunk_h - 1) / plan_.chunk_h;
      for (std::int64_t i = 0; i < rows_done * plan_.across; ++i) {
        const auto index = static_cast<std::uint32_t>(i);
        records.push_back({kIndexMagic, 0, static_cast<std::uint64_t>(i),
                           TIFFGetStrileOffset(tif_, index), TIFFGetStrileByteCount(tif_, index)});
      }
      end = end_;
      // No directory: the file is only blocks now.
      cancelled_ = true;
      TIFFCleanup(tif_);
      tif_ = nullptr;
    }
    if (::ftruncate(fd_, static_cast<off_t>(end)) != 0)
      throw Error(ErrorKind::io,
                  system_message("cannot keep", file_->partial(), errno) + full_hint(errno));
    claim_settings(temp_, settings_);
    const std::string stem = range_stem(temp_, 0, batch_end_);
    write_file_atomic(stem + kIndexSuffix, records.data(), records.size() * sizeof(IndexRecord));
    fd_ = -1;
    file_->keep();
    if (::rename(file_->partial().c_str(), (stem + kBlocksSuffix).c_str()) != 0)
      throw Error(ErrorKind::io, system_message("cannot keep", file_->partial(), errno));
    kept_path_ = stem + kBlocksSuffix;
    done_ = true;
  }
  std::string kept_path() const override { return kept_path_; }

  std::int64_t durable_end(std::int64_t first, std::int64_t written_end) const override {
    (void)written_end;
    // A single run's blocks have no index until keep(); a pyramid's level rows are not tracked
    // level by level (as for Zarr): a rerun after a kill redoes the range.
    if (!range_ || levels_count_ > 0) return first;
    return std::max(first, done_end_.load());
  }

  // For finish_tiff_parts: the levels' layouts, the codec, and the file's way of taking blocks.
  int level_count() const noexcept { return levels_count_; }
  const TiffPlan& level_plan(int k) const {
    return k == 0 ? plan_ : levels_[static_cast<std::size_t>(k)].plan;
  }
  std::vector<std::vector<std::byte>> encode_row(int level, std::int64_t cy,
                                                 const std::byte* rows) {
    const TiffPlan& plan = level_plan(level);
    std::vector<std::vector<std::byte>> out(static_cast<std::size_t>(plan.across));
    tbb::parallel_for(std::int64_t{0}, plan.across, [&](std::int64_t cx) {
      encode(plan, cy, cx, rows, out[static_cast<std::size_t>(cx)]);
    });
    return out;
  }
  // Block `index` of `level`, compressed, appended as a single run appends it.
  void emit_block(int level, std::uint32_t index, const std::byte* p, std::size_t bytes) {
    if (own_layout_) {
      put_block(level, index, p, bytes);
      return;
    }
    const tmsize_t w = plan_.tiled ? TIFFWriteRawTile(tif_, index, const_cast<std::byte*>(p),
                                                      static_cast<tmsize_t>(bytes))
                                   : TIFFWriteRawStrip(tif_, index, const_cast<std::byte*>(p),
                                                       static_cast<tmsize_t>(bytes));
    if (w < 0) throw failure("cannot write output '" + path_ + "'");
  }

 private:
  // A writer of rows [row_begin, row_end) of an output made in parts, or of the rows a resumed
  // run has left: its blocks go to files of its own (TEMP.rows-A-B.tiff-blocks and -index).
  void open_range(const SinkOptions& o, const std::string& input_path) {
    range_ = true;
    row_begin_ = o.row_begin;
    row_end_ = o.row_end > 0 ? o.row_end : plan_.spec.height;
    struct stat in {
    }, out{};
    if (!input_path.empty() && ::stat(input_path.c_str(), &in) == 0 &&
        ::stat(path_.c_str(), &out) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw Error(ErrorKind::usage, "output '" + path_ + "' is the input: name another output");
    claim_settings(temp_, settings_);
    batch_.resize(static_cast<std::size_t>(batch_rows_) * plan_.spec.row_bytes());
    for (Level& l : levels_)
      l.rows.resize(static_cast<std::size_t>(l.plan.chunk_h) * l.plan.spec.row_bytes());
    if (row_begin_ >= row_end_) return;  // nothing left to write: a resumed run only assembles
    const std::string stem = range_stem(temp_, row_begin_, row_end_);
    data_path_ = stem + kBlocksSuffix;
    index_path_ = stem + kIndexSuffix;
    data_fd_ = ::open(data_path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (data_fd_ < 0)
      throw Error(ErrorKind::io,
                  system_message("cannot create", data_path_, errno) + full_hint(errno));
    if (!ooc::try_lock(data_fd_, data_path_, o.no_locks)) {
      const pid_t pid = lock_holder(data_fd_);
      throw Error(ErrorKind::io, "rows " + std::to_string(row_begin_) + ":" +
                                     std::to_string(row_end_) + " of output '" + path_ +
                                     "' are being written by another process" +
                                     (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "") +
                                     ": wait for it to end, or write elsewhere");
    }
    // Its index first: a record never outlives the bytes it names.
    index_fd_ =
        ::open(index_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (index_fd_ < 0 || ::ftruncate(data_fd_, 0) != 0)
      throw Error(ErrorKind::io,
                  system_message("cannot create", index_path_, errno) + full_hint(errno));
  }

  // Rows of a range writer: rows before its first block boundary (a resumed run that starts
  // inside a row of blocks) are gathered as an edge; then whole rows of blocks, batched.
  void write_range_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                        std::size_t stride) {
    if (!started_) {
      started_ = true;
      const std::int64_t ch = plan_.chunk_h;
      head_end_ = std::min(plan_.spec.height, (y0 + ch - 1) / ch * ch);
      batch_y0_ = batch_end_ = head_end_;
      done_end_ = y0;
      if (levels_count_ > 0)
        builder_ = std::make_unique<PyramidBuilder>(
            plan_.spec, levels_count_, y0, row_end_,
            [this](int k, std::int64_t r, const std::byte* p) { add_level_row(k, r, p); });
    }
    std::int64_t i = 0;
    for (; i < n && y0 + i < head_end_; ++i)
      add_level_row(0, y0 + i, data + static_cast<std::size_t>(i) * stride);
    if (i < n) gather(n - i, data + static_cast<std::size_t>(i) * stride, stride);
    if (builder_) builder_->push(y0, n, data, stride);
  }

  // The end of a range writer's rows (commit) or a stop (keep): whole rows of blocks are
  // written, the rest kept as edges.
  void end_range(bool stop) {
    flush_batch(true);
    if (batch_end_ > batch_y0_) {
      write_edge(0, batch_y0_, batch_end_, batch_.data());
      batch_y0_ = batch_end_;
    }
    for (int k = 0; k <= levels_count_; ++k) flush_partial(k);
    for (int* fd : {&data_fd_, &index_fd_}) {
      if (*fd < 0) continue;
      const int rc = stop ? ::fsync(*fd) : 0;
      const int err = errno;
      ::close(*fd);
      *fd = -1;
      if (rc != 0) throw Error(ErrorKind::io, system_message("cannot flush", data_path_, err));
    }
  }

  void write_edge(int k, std::int64_t lo, std::int64_t hi, const std::byte* rows) {
    const std::size_t rb = level_plan(k).spec.row_bytes();
    write_file_atomic(edge_path(temp_, k, lo, hi), rows, static_cast<std::size_t>(hi - lo) * rb);
    if (k == 0) done_end_ = std::max(done_end_.load(), hi);
  }

  // The rows held of a row of blocks of level k that this writer does not make whole.
  void flush_partial(int k) {
    Level& l = levels_[static_cast<std::size_t>(k)];
    if (l.lo < 0) return;
    const std::size_t rb = l.plan.spec.row_bytes();
    write_edge(k, l.lo, l.hi, l.rows.data() + static_cast<std::size_t>(l.lo % l.plan.chunk_h) * rb);
    l.lo = l.hi = -1;
  }

  // Appends a compressed block to this writer's blocks file; its index record follows in
  // put_records once the blocks of a flush are written.
  void put_part_block(int level, std::uint32_t index, const std::byte* p, std::size_t bytes) {
    write_all(data_fd_, p, bytes, data_end_, data_path_);
    records_.push_back({kIndexMagic, static_cast<std::uint32_t>(level), index, data_end_, bytes});
    data_end_ += bytes;
  }

  void put_records() {
    if (records_.empty()) return;
    const std::size_t bytes = records_.size() * sizeof(IndexRecord);
    write_all(index_fd_, records_.data(), bytes, index_end_, index_path_);
    index_end_ += bytes;
    records_.clear();
  }

  // Appends the next n rows to batch_, compressing each batch as it fills.
  void gather(std::int64_t n, const std::byte* data, std::size_t stride) {
    const std::size_t row = plan_.spec.row_bytes();
    for (std::int64_t r = 0; r < n;) {
      const std::int64_t room = batch_rows_ - (batch_end_ - batch_y0_);
      const std::int64_t take = std::min(room, n - r);
      for (std::int64_t k = 0; k < take; ++k)
        std::memcpy(batch_.data() + (batch_end_ - batch_y0_ + k) * row, data + (r + k) * stride,
                    row);
      batch_end_ += take;
      r += take;
      flush_batch(false);
    }
  }

  // Compresses and appends the complete rows of blocks in batch_ once it is full (or, with
  // `now`, at once); rows of an unfinished row of blocks move to its front.
  void flush_batch(bool now) {
    const std::int64_t held = batch_end_ - batch_y0_;
    if (held == 0 || (!now && held < batch_rows_ && batch_end_ < plan_.spec.height)) return;
    const std::size_t row = plan_.spec.row_bytes();
    std::vector<std::pair<std::int64_t, const std::byte*>> rows;
    std::int64_t done = batch_y0_;
    for (std::int64_t cy = batch_y0_ / plan_.chunk_h;; ++cy) {
      const std::int64_t top = cy * plan_.chunk_h;
      const std::int64_t bottom = std::min(top + plan_.chunk_h, plan_.spec.height);
      if (top >= batch_end_ || bottom > batch_end_) break;
      rows.emplace_back(cy, batch_.data() + (top - batch_y0_) * row);
      done = bottom;
    }
    flush(rows);
    const std::int64_t left = batch_end_ - done;
    if (left > 0)
      std::memmove(batch_.data(), batch_.data() + (done - batch_y0_) * row,
                   static_cast<std::size_t>(left) * row);
    batch_y0_ = done;
  }

  // Encodes the chunks of the given chunk rows of level `level` in parallel, then appends them in
  // order.
  void flush(const std::vector<std::pair<std::int64_t, const std::byte*>>& rows, int level = 0) {
    if (rows.empty()) return;
    const TiffPlan& plan = level == 0 ? plan_ : levels_[static_cast<std::size_t>(level)].plan;
    const std::int64_t per_row = plan.across;
    const std::int64_t count = static_cast<std::int64_t>(rows.size()) * per_row;
    const bool raw_strips = plan.compression == COMPRESSION_NONE && !plan.tiled;
    std::vector<std::vector<std::byte>> blocks(raw_strips ? 0 : count);
    if (!raw_strips)
      tbb::parallel_for(std::int64_t{0}, count, [&](std::int64_t k) {
        const auto& [cy, src] = rows[k / per_row];
        encode(plan, cy, k % per_row, src, blocks[k]);
      });
    for (std::int64_t k = 0; k < count; ++k) {
      const auto& [cy, src] = rows[k / per_row];
      const auto index = static_cast<std::uint32_t>(cy * plan.across + k % per_row);
      const std::byte* p = raw_strips ? src : blocks[k].data();
      const std::size_t bytes = raw_strips ? plan.chunk_bytes(cy) : blocks[k].size();
      if (range_)
        put_part_block(level, index, p, bytes);
      else
        emit_block(level, index, p, bytes);
    }
    if (range_) put_records();
    if (level == 0)
      done_end_ = std::max(done_end_.load(),
                           std::min(plan_.spec.height, (rows.back().first + 1) * plan_.chunk_h));
  }

  // Block cx of chunk row cy (image rows at src) into `out`: gathered into a whole block (tiles
  // padded with zeros at the edges), then compressed unless the output is uncompressed.
  void encode(const TiffPlan& plan, std::int64_t cy, std::int64_t cx, const std::byte* src,
              std::vector<std::byte>& out) {
    const std::size_t row = plan.spec.row_bytes(), pixel = plan.spec.pixel_bytes();
    const std::size_t bytes = plan.chunk_bytes(cy);
    thread_local std::vector<std::byte> block;
    std::byte* b;
    if (plan.tiled) {
      block.assign(bytes, std::byte{0});
      const std::int64_t x0 = cx * plan.chunk_w;
      const std::int64_t w = std::min(plan.chunk_w, plan.spec.width - x0);
      const std::int64_t h = std::min(plan.chunk_h, plan.spec.height - cy * plan.chunk_h);
      for (std::int64_t r = 0; r < h; ++r)
        std::memcpy(block.data() + r * plan.chunk_row_bytes(), src + r * row + x0 * pixel,
                    static_cast<std::size_t>(w) * pixel);
      b = block.data();
    } else {
      // The codec's predictor works in place: compress a copy, not the caller's rows.
      block.assign(src, src + bytes);
      b = block.data();
    }
    if (plan.compression == COMPRESSION_NONE) {
      out.assign(b, b + bytes);
      return;
    }
    // One encoder per thread for every level (a codec's state can take megabytes: zstd's): a
    // level's tiles have level 0's size and codec, and its indices are within level 0's.
    auto& encoder = encoders_.local();
    if (!encoder) encoder = std::make_unique<Encoder>(plan_);
    const auto index = static_cast<std::uint32_t>(cy * plan.across + cx);
    encoder->encode(plan.tiled, index, b, bytes, out);
  }

  // The header (its first directory's offset filled in at commit) and a spill file for each level
  // whose tiles cannot go straight to their place: every level of a COG (overviews come first),
  // the levels below the first page of a SubIFD pyramid.
  void start_own_layout() {
    header_bytes_ = bigtiff_ ? 16 : 8;
    std::byte h[16] = {};
    h[0] = h[1] = std::byte{'I'};
    h[2] = std::byte{static_cast<unsigned char>(bigtiff_ ? 43 : 42)};
    if (bigtiff_) h[4] = std::byte{8};
    write_at(fd_, h, header_bytes_, 0, file_->partial());
    for (std::size_t k = 0; k < levels_.size(); ++k) {
      Level& l = levels_[k];
      if (k > 0) l.rows.resize(static_cast<std::size_t>(l.plan.chunk_h) * l.plan.spec.row_bytes());
      if (k == 0 && !cog_) {
        l.end = header_bytes_;
        continue;
      }
      std::string name = file_->partial() + ".level" + std::to_string(k) + ".XXXXXX";
      const int fd = ::mkostemp(name.data(), O_CLOEXEC);
      if (fd < 0)
        throw Error(ErrorKind::io,
                    system_message("cannot create a spill file for the pyramid", name, errno) +
                        full_hint(errno));
      // Unlinked at once: it goes with the process, however the process ends.
      ::unlink(name.c_str());
      l.fd = fd;
    }
  }

  // Row r of level k from the pyramid builder: a complete row of tiles is compressed at once.
  // A writer whose rows of level k begin inside a row of tiles keeps that row's rows as an edge.
  void add_level_row(int k, std::int64_t r, const std::byte* row) {
    Level& l = levels_[static_cast<std::size_t>(k)];
    const std::size_t bytes = l.plan.spec.row_bytes();
    const std::int64_t cy = r / l.plan.chunk_h, top = cy * l.plan.chunk_h;
    if (l.lo >= 0 && l.lo / l.plan.chunk_h != cy) flush_partial(k);
    if (l.lo < 0) l.lo = r;
    std::memcpy(l.rows.data() + static_cast<std::size_t>(r - top) * bytes, row, bytes);
    l.hi = r + 1;
    if (l.hi == std::min(top + l.plan.chunk_h, l.plan.spec.height)) {
      if (l.lo == top)
        flush({{cy, l.rows.data()}}, k);
      else
        flush_partial(k);
      l.lo = l.hi = -1;
    }
  }

  void put_block(int k, std::uint32_t index, const std::byte* p, std::size_t bytes) {
    Level& l = levels_[static_cast<std::size_t>(k)];
    write_at(l.fd >= 0 ? l.fd : fd_, p, bytes, l.end,
             l.fd >= 0 ? file_->partial() + ".level" + std::to_string(k) : file_->partial());
    l.offsets[index] = l.end;
    l.counts[index] = bytes;
    l.end += bytes;
  }

  void write_at(int fd, const void* data, std::size_t len, std::uint64_t at,
                const std::string& name) {
    const auto* b = static_cast<const std::byte*>(data);
    for (std::size_t done = 0; done < len;) {
      const ssize_t w = ::pwrite(fd, b + done, len - done, static_cast<off_t>(at + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : ENOSPC;
        throw Error(ErrorKind::io, system_message("cannot write", name, err) + full_hint(err));
      }
      done += static_cast<std::size_t>(w);
    }
  }

  // Copies a spill file's `len` bytes to offset `at` of the output, in the kernel where it can.
  void copy_spill(int k, std::uint64_t len, std::uint64_t at) {
    const int src = levels_[static_cast<std::size_t>(k)].fd;
    const std::string name = file_->partial() + ".level" + std::to_string(k);
    std::uint64_t done = 0;
    bool kernel = true;
    std::vector<std::byte> buf;
    while (done < len) {
      if (kernel) {
        loff_t in = static_cast<loff_t>(done), out = static_cast<loff_t>(at + done);
        const ssize_t n = ::copy_file_range(src, &in, fd_, &out, len - done, 0);
        if (n > 0) {
          done += static_cast<std::uint64_t>(n);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
          throw Error(ErrorKind::io, system_message("cannot copy the pyramid's tiles into",
                                                    file_->partial(), errno) +
                                         full_hint(errno));
        kernel = false;  // not supported here: read and write instead
        buf.resize(std::size_t{1} << 20);
      }
      const std::size_t want =
          static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), len - done));
      const ssize_t r = ::pread(src, buf.data(), want, static_cast<off_t>(done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw Error(ErrorKind::io, system_message("cannot read back", name, r < 0 ? errno : EIO));
      write_at(fd_, buf.data(), static_cast<std::size_t>(r), at + done, file_->partial());
      done += static_cast<std::uint64_t>(r);
    }
  }

  // Places the spilled tiles and writes every directory. SubIFD pyramid: header, level 0's
  // tiles (already there), the levels' tiles, then the first page's directory and its SubIFDs.
  // COG: header, GDAL's structural metadata, every directory (level 0, then overviews from the
  // largest), then the tiles of the smallest overview first and level 0's last.
  void finish_own_layout() {
    const bool big = bigtiff_;
    const std::size_t count = levels_.size();
    for (const Level& l : levels_)
      for (const std::uint64_t c : l.counts)
        if (c == 0)
          throw Error(ErrorKind::io, "output '" + path_ + "' is incomplete: rows are missing");
    std::vector<std::vector<IfdEntry>> tags(count);
    for (std::size_t k = 0; k < count; ++k)
      tags[k] = directory_tags(levels_[k].plan, level_geo(plan_.metadata.geo, static_cast<int>(k)),
                               big, k > 0);
    const std::uint16_t offset_type = big ? kTypeLong8 : kTypeLong;
    const auto entries = [&](std::size_t k, std::uint64_t base,
                             const std::vector<std::uint64_t>& subifds) {
      std::vector<IfdEntry> e = tags[k];
      std::vector<std::uint64_t> offsets = levels_[k].offsets;
      for (std::uint64_t& o : offsets) o += base;
      e.push_back(array_entry(kTagTileOffsets, offset_type, offsets));
      e.push_back(array_entry(kTagTileByteCounts, offset_type, levels_[k].counts));
      if (k == 0 && !cog_ && count > 1)
        e.push_back(array_entry(kTagSubIfds, big ? kTypeIfd8 : kTypeIfd, subifds));
      return e;
    };
    const std::vector<std::uint64_t> none(count - 1, 0);
    std::vector<std::uint64_t> base(count, 0), ifd_at(count, 0), size(count, 0);
    for (std::size_t k = 0; k < count; ++k) size[k] = ifd_bytes(entries(k, 0, none), big);
    std::string ghost;
    std::uint64_t pos;
    if (cog_) {
      const std::string md =
          "LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\nKNOWN_INCOMPATIBLE_EDITION=NO\n";
      char head[64];
      std::snprintf(head, sizeof head, "GDAL_STRUCTURAL_METADATA_SIZE=%06zu bytes\n", md.size());
      ghost = head + md;
      pos = header_bytes_ + ghost.size();
      pos += pos & 1;
      for (std::size_t k = 0; k < count; ++k) {
        ifd_at[k] = pos;
        pos += size[k];
      }
      for (std::size_t k = count; k-- > 0;) {
        base[k] = pos;
        pos += levels_[k].end;
      }
    } else {
      pos = levels_[0].end;  // level 0's offsets are already the file's
      for (std::size_t k = 1; k < count; ++k) {
        base[k] = pos;
        pos += levels_[k].end;
      }
      pos += pos & 1;
      for (std::size_t k = 0; k < count; ++k) {
        ifd_at[k] = pos;
        pos += size[k];
      }
    }
    if (!big && pos >= kFourGiB)
      throw Error(ErrorKind::io, "output '" + path_ +
                                     "' passed 4 GiB, past what a classic TIFF holds: use "
                                     "--bigtiff auto or yes");
    for (std::size_t k = 0; k < count; ++k)
      if (levels_[k].fd >= 0) copy_spill(static_cast<int>(k), levels_[k].end, base[k]);
    const std::vector<std::uint64_t> subifds(ifd_at.begin() + 1, ifd_at.end());
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint64_t next = cog_ && k + 1 < count ? ifd_at[k + 1] : 0;
      const std::vector<std::byte> image =
          ifd_image(entries(k, base[k], subifds), big, ifd_at[k], next);
      write_at(fd_, image.data(), image.size(), ifd_at[k], file_->partial());
    }
    if (!ghost.empty()) write_at(fd_, ghost.data(), ghost.size(), header_bytes_, file_->partial());
    std::byte first[8];
    if (big)
      store(first, ifd_at[0]);
    else
      store(first, static_cast<std::uint32_t>(ifd_at[0]));
    write_at(fd_, first, big ? 8 : 4, big ? 8 : 4, file_->partial());
    for (Level& l : levels_)
      if (l.fd >= 0) {
        ::close(l.fd);
        l.fd = -1;
      }
  }

  Error failure(const std::string& what) {
    if (io_errno_ != 0) {
      return Error(ErrorKind::io, system_message(what.c_str(), file_->partial(), io_errno_) +
                                      full_hint(io_errno_));
    }
    std::string why = take_tiff_error();
    if (why.find("Maximum TIFF file size exceeded") != std::string::npos)
      return Error(ErrorKind::io, "output '" + path_ +
                                      "' passed 4 GiB, past what a classic TIFF holds: use "
                                      "--bigtiff auto or yes");
    return Error(ErrorKind::io, what + ": " + why);
  }

  // I/O callbacks: positioned reads and writes on fd_, with the errno kept for the message.
  static tmsize_t read(thandle_t h, void* p, tmsize_t n) {
    auto* s = static_cast<TiffSink*>(h);
    const ssize_t r = ::pread(s->fd_, p, static_cast<std::size_t>(n), static_cast<off_t>(s->pos_));
    if (r < 0) return -1;
    s->pos_ += static_cast<std::uint64_t>(r);
    return r;
  }
  static tmsize_t write(thandle_t h, void* p, tmsize_t n) {
    auto* s = static_cast<TiffSink*>(h);
    if (s->cancelled_) return -1;
    const auto* b = static_cast<const std::byte*>(p);
    const auto len = static_cast<std::size_t>(n);
    // A zero block appended past everything written is left as a hole: it reads back as zeros.
    const bool hole = s->pos_ >= s->written_ && len >= 4096 && b[0] == std::byte{0} &&
                      std::memcmp(b, b + 1, len - 1) == 0;
    if (!hole) {
      std::size_t done = 0;
      while (done < len) {
        const ssize_t w =
            ::pwrite(s->fd_, b + done, len - done, static_cast<off_t>(s->pos_ + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          s->io_errno_ = w < 0 ? errno : ENOSPC;
          return -1;
        }
        done += static_cast<std::size_t>(w);
      }
      s->written_ = std::max(s->written_, s->pos_ + len);
    }
    s->pos_ += len;
    s->end_ = std::max(s->end_, s->pos_);
    return n;
  }
  static toff_t seek(thandle_t h, toff_t off, int whence) {
    auto* s = static_cast<TiffSink*>(h);
    s->pos_ = whence == SEEK_SET ? off : whence == SEEK_CUR ? s->pos_ + off : s->end_ + off;
    return s->pos_;
  }
  static int close(thandle_t) { return 0; }
  static toff_t size(thandle_t h) { return static_cast<TiffSink*>(h)->end_; }

  void discard() noexcept {
    if (tif_) {
      // Cleaning up flushes a directory: make every write fail, so nothing reaches the file.
      cancelled_ = true;
      TIFFCleanup(tif_);
      tif_ = nullptr;
    }
    fd_ = -1;
    if (file_) file_->discard();
  }

  std::string path_;
  std::unique_ptr<OutputFile> file_;
  TiffPlan plan_;
  bool bigtiff_ = false;
  int fd_ = -1;
  TIFF* tif_ = nullptr;
  std::uint64_t pos_ = 0, end_ = 0, written_ = 0;
  int io_errno_ = 0;
  bool cancelled_ = false;
  std::vector<std::byte> batch_;  // rows [batch_y0_, batch_end_) waiting to be compressed
  std::int64_t batch_rows_ = 0, batch_y0_ = 0, batch_end_ = 0;
  std::size_t buffer_bytes_ = 0;
  tbb::enumerable_thread_specific<std::unique_ptr<Encoder>> encoders_;

  // A level of a pyramid (level 0 too, for its tile offsets): where its compressed tiles went.
  struct Level {
    TiffPlan plan;
    std::vector<std::byte> rows;    // the row of tiles being gathered (levels 1..)
    std::int64_t lo = -1, hi = -1;  // the rows of it held
    int fd = -1;                    // its spill file; -1: the output itself
    std::uint64_t end = 0;          // bytes written to the spill file (or the output's end)
    std::vector<std::uint64_t> offsets, counts;
  };
  bool cog_ = false, own_layout_ = false;
  std::string compress_name_, predictor_;  // --compress, and the predictor it runs with
  std::string kept_path_;                  // keep()'s blocks file
  std::size_t header_bytes_ = 8;
  int levels_count_ = 0;
  std::vector<Level> levels_;
  std::unique_ptr<PyramidBuilder> builder_;

  // Outputs in parts and resumed runs (see tiff_parts.hpp).
  std::string temp_, settings_;
  OutputMode mode_ = OutputMode::fresh;
  bool range_ = false, started_ = false, done_ = false;
  std::int64_t row_begin_ = 0, row_end_ = 0, head_end_ = 0;
  // Level 0's rows whose blocks (or edge) are written: the journal's durable row. Read by the
  // progress callback, written by the write stage.
  std::atomic<std::int64_t> done_end_{0};
  std::string data_path_, index_path_;
  int data_fd_ = -1, index_fd_ = -1;
  std::uint64_t data_end_ = 0, index_end_ = 0;
  std::vector<IndexRecord> records_;
};

}  // namespace

std::unique_ptr<Sink> create_tiff_sink(const std::string& path, const ImageSpec& spec,
                                       const std::string& input_path, const SinkOptions& options) {
  return std::make_unique<TiffSink>(path, spec, input_path, options);
}

std::int64_t tiff_row_alignment(const ImageSpec& spec, const SinkOptions& options) {
  const std::int64_t tile = tile_side(options);
  return tile > 0 ? tile : strip_rows(spec);
}

bool is_tiff_parts_temporary(const std::string& temporary) {
  struct stat st {};
  return ::lstat(settings_path(temporary).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void finish_tiff_parts(const std::string& output, const std::string& temp) {
  const std::string sp = settings_path(temp);
  ImageSpec spec;
  SinkOptions o;
  parse_settings(read_small_file(sp), sp, spec, o);
  // Every block the writers' indexes name whose bytes are there (first found wins: two writers
  // of one block wrote the same bytes).
  struct Place {
    int fd;
    std::uint64_t offset, size;
  };
  std::map<std::pair<int, std::uint64_t>, Place> blocks;
  std::vector<int> fds;
  std::vector<std::string> names;
  struct Closer {
    std::vector<int>& fds;
    ~Closer() {
      for (const int fd : fds) ::close(fd);
    }
  } closer{fds};
  const std::vector<std::string> files = part_files(temp, false);
  const std::string index_suffix = kIndexSuffix;
  for (const std::string& index : files) {
    if (index.size() < index_suffix.size() ||
        index.compare(index.size() - index_suffix.size(), index_suffix.size(), index_suffix) != 0)
      continue;
    const std::string data = index.substr(0, index.size() - index_suffix.size()) + kBlocksSuffix;
    const int fd = ::open(data.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;  // a stop that died before its blocks file was in place
    fds.push_back(fd);
    names.push_back(data);
    if (const pid_t pid = lock_holder(fd); pid > 0)
      throw Error(ErrorKind::io,
                  "output '" + output + "' is still being written: a part is running (pid " +
                      std::to_string(pid) + " holds '" + data +
                      "'); wait for every part to end, then --finish again",
                  true);
    struct stat st {};
    ::fstat(fd, &st);
    const std::string text = read_small_file(index);
    const std::size_t n = text.size() / sizeof(IndexRecord);  // a record cut short is ignored
    for (std::size_t i = 0; i < n; ++i) {
      IndexRecord r;
      std::memcpy(&r, text.data() + i * sizeof r, sizeof r);
      if (r.magic != kIndexMagic || r.level > 64 || r.size == 0 || r.offset + r.size < r.offset ||
          r.offset + r.size > static_cast<std::uint64_t>(st.st_size))
        continue;
      blocks.emplace(std::make_pair(static_cast<int>(r.level), r.index),
                     Place{fd, r.offset, r.size});
    }
  }
  SinkOptions so = o;
  so.mode = OutputMode::fresh;
  TiffSink sink(output, spec, "", so, true);
  const int levels = sink.level_count();
  const auto incomplete = [&](int k, std::int64_t r0, std::int64_t r1) {
    return Error(ErrorKind::input,
                 "output '" + output + "' is not complete: rows " + std::to_string(r0) + ":" +
                     std::to_string(r1) +
                     (k > 0 ? " of pyramid level " + std::to_string(k) : std::string()) +
                     " were not written. Run the parts that cover them (with --resume), then "
                     "--finish again",
                 true);
  };
  const auto row_present = [&](int k, std::int64_t cy) {
    const TiffPlan& plan = sink.level_plan(k);
    for (std::int64_t cx = 0; cx < plan.across; ++cx)
      if (!blocks.count({k, static_cast<std::uint64_t>(cy * plan.across + cx)})) return false;
    return true;
  };

  // Rows of blocks that straddle writers' boundaries, level by level: from the rows the writers
  // left, and the level rows whose two source rows two writers made (as finish_zarr_store).
  std::vector<LevelEdge> edges;
  for (const std::string& f : files) {
    const std::size_t at = f.rfind(".tiff-edge-L");
    int level = 0;
    long long lo = 0, hi = 0;
    if (at == std::string::npos || f.find(".tmp-", at) != std::string::npos ||
        std::sscanf(f.c_str() + at + 12, "%d-%lld-%lld", &level, &lo, &hi) != 3)
      continue;
    edges.push_back({level, lo, hi, f});
  }
  std::map<std::pair<int, std::int64_t>, std::vector<std::vector<std::byte>>> made;
  join_pyramid_edges(
      levels, [&](int k) { return sink.level_plan(k).spec; },
      [&](int k) { return sink.level_plan(k).chunk_h; }, edges, temp,
      [&](int k, std::int64_t cy, const std::byte* rows) {
        if (row_present(k, cy)) return;  // a writer made it whole after all (a rerun)
        made[{k, cy}] = sink.encode_row(k, cy, rows);
      },
      [&](int k, std::int64_t cy, std::int64_t r0, std::int64_t r1) {
        if (!row_present(k, cy)) throw incomplete(k, r0, r1);
      });

  // Every block, in the order one process appends them.
  std::vector<std::byte> buf;
  for (int k = 0; k <= levels; ++k) {
    const TiffPlan& plan = sink.level_plan(k);
    for (std::int64_t cy = 0; cy < plan.down; ++cy) {
      const auto m = made.find({k, cy});
      if (m == made.end() && !row_present(k, cy)) {
        const std::int64_t r0 = cy * plan.chunk_h;
        throw incomplete(k, r0, std::min(r0 + plan.chunk_h, plan.spec.height));
      }
      for (std::int64_t cx = 0; cx < plan.across; ++cx) {
        const auto index = static_cast<std::uint32_t>(cy * plan.across + cx);
        if (m != made.end()) {
          const std::vector<std::byte>& b = m->second[static_cast<std::size_t>(cx)];
          sink.emit_block(k, index, b.data(), b.size());
          continue;
        }
        const Place& at = blocks.at({k, index});
        buf.resize(at.size);
        const auto which = std::find(fds.begin(), fds.end(), at.fd) - fds.begin();
        read_all(at.fd, buf.data(), at.size, at.offset, names[static_cast<std::size_t>(which)]);
        sink.emit_block(k, index, buf.data(), buf.size());
      }
    }
  }
  sink.commit();
  remove_part_files(temp);
}

}  // namespace ooc
