// Private to the TIFF writer (tiff_ifd.cpp, tiff_sink.cpp, tiff_layout.cpp, tiff_parts.cpp): the
// output's layout and tags, the codec run through an in-memory libtiff handle, and the directory
// (IFD) entries the writer places itself.
#pragma once

#include <tiffio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"
#include "tiff_common.hpp"

namespace ooc::detail {

constexpr std::uint64_t kFourGiB = 1ull << 32;

// Strips of about this many bytes: enough blocks per band for all cores, small enough to stream.
constexpr std::uint64_t kStripBytes = 1u << 20;

// Rows gathered before a round of compression (besides the rows of blocks being written).
constexpr std::uint64_t kBatchBytes = 64u << 20;

int compression_code(const std::string& name);

// The predictor a TIFF output is written with: "none", "horizontal" or "float". auto takes the
// horizontal one wherever a predictor applies, floats included: every reader decodes it (tifffile
// without the imagecodecs package, Debian's, decodes no floating-point predictor), and libtiff
// applies it to a float's bits as to an integer's, losslessly.
std::string resolved_predictor(const SinkOptions& o, SampleType type);

int predictor_code(const std::string& resolved);

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

void set_tags(TIFF* tif, const TiffPlan& p);

std::size_t geo_bytes(const GeoTags& g);

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

// One directory entry, its value as the file stores it (little endian).
struct IfdEntry {
  std::uint16_t tag = 0, type = 0;
  std::uint64_t count = 0;
  std::vector<std::byte> value;
};

constexpr std::uint16_t kTypeLong = 4, kTypeIfd = 13, kTypeLong8 = 16, kTypeIfd8 = 18;

constexpr std::uint16_t kTagTileOffsets = 324, kTagTileByteCounts = 325, kTagSubIfds = 330;

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
                                     bool reduced);

// An entry of `type` (LONG, LONG8, IFD or IFD8) holding `values`.
IfdEntry array_entry(std::uint16_t tag, std::uint16_t type,
                     const std::vector<std::uint64_t>& values);

// Bytes a directory takes with its values that do not fit in their entries (each at an even
// offset, as TIFF asks).
std::uint64_t ifd_bytes(const std::vector<IfdEntry>& entries, bool bigtiff);

// The directory as it lies at file offset `at` (even), followed by `next`.
std::vector<std::byte> ifd_image(std::vector<IfdEntry> entries, bool bigtiff, std::uint64_t at,
                                 std::uint64_t next);

// Georeferencing of level k: a pixel there covers 2^k x 2^k pixels of level 0, from the same
// corner.
GeoTags level_geo(const GeoTags& geo, int k);

}  // namespace ooc::detail
