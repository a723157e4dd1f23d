// Writing TIFF and BigTIFF: striped or tiled, uncompressed or compressed, with the input's
// descriptive tags. The write stage hands rows over in order; each complete row of strips or tiles
// is compressed in parallel, each worker through a private in-memory libtiff handle (libtiff has
// no thread-safe "encode this block" call), and the compressed bytes are appended to the file in
// order with TIFFWriteRawStrip/Tile. The file goes through our own I/O callbacks, so write errors
// keep their errno, and all-zero blocks past the end of the file become holes (a sparse file).
#include <fcntl.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "formats.hpp"
#include "ooc/error.hpp"
#include "ooc/pipeline.hpp"
#include "output_file.hpp"
#include "tiff_common.hpp"

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

// The layout and tags of the output, shared by the file and the encoders.
struct TiffPlan {
  ImageSpec spec;
  int compression = COMPRESSION_NONE;
  int level = -1;
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
  if (p.compression == COMPRESSION_LZW || p.compression == COMPRESSION_ADOBE_DEFLATE ||
      p.compression == COMPRESSION_ZSTD)
    TIFFSetField(tif, TIFFTAG_PREDICTOR, is_float ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL);
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

class TiffSink final : public Sink {
 public:
  TiffSink(const std::string& path, const ImageSpec& spec, const std::string& input_path,
           const SinkOptions& o)
      : path_(path) {
    plan_.spec = spec;
    plan_.compression = compression_code(o.compress);
    plan_.metadata = o.metadata;
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
    plan_.tiled = o.tile > 0;
    if (plan_.tiled) {
      plan_.chunk_w = plan_.chunk_h = o.tile;
    } else {
      plan_.chunk_w = spec.width;
      plan_.chunk_h = std::clamp<std::int64_t>(
          static_cast<std::int64_t>(kStripBytes / spec.row_bytes()), 1, spec.height);
    }
    plan_.across = (spec.width + plan_.chunk_w - 1) / plan_.chunk_w;
    plan_.down = (spec.height + plan_.chunk_h - 1) / plan_.chunk_h;

    // The largest the file could get: LZW can grow incompressible data by half, the others
    // barely; plus the offset tables and the tags.
    const double growth = plan_.compression == COMPRESSION_LZW        ? 1.5
                          : plan_.compression == COMPRESSION_PACKBITS ? 1.01
                          : plan_.compression == COMPRESSION_NONE     ? 1.0
                                                                      : 1.001;
    const double blocks = double(plan_.across * plan_.down);
    const std::uint64_t padded =
        plan_.chunk_bytes(0) * static_cast<std::uint64_t>(plan_.across * plan_.down);
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
    const double least = block_row * kept + double(threads) * per_thread;
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
    buffer_bytes_ = static_cast<std::size_t>(double(batch_rows_) * double(spec.row_bytes()) * kept +
                                             double(threads) * per_thread);

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

    file_ =
        std::make_unique<OutputFile>(path, input_path, OutputMode::fresh, 0, 0, false, o.no_locks);
    fd_ = file_->fd();
    install_tiff_handlers();
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

  ~TiffSink() override { discard(); }

  const ImageSpec& spec() const noexcept override { return plan_.spec; }
  std::size_t buffer_bytes() const override { return buffer_bytes_; }
  std::string describe() const override {
    return std::string(bigtiff_ ? "BigTIFF '" : "tiff '") + path_ + "' " + plan_.spec.describe();
  }

  // Uncompressed strips are appended straight from the band. Everything else is gathered, whole
  // rows of blocks at a time, in batch_, and compressed a batch at a time: a band may hold only a
  // block or two, and one batch keeps every core busy whatever the band height.
  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                  std::size_t stride) override {
    const std::size_t row = plan_.spec.row_bytes();
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
    flush_batch(true);
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

 private:
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

  // Encodes the chunks of the given chunk rows in parallel, then appends them in order.
  void flush(const std::vector<std::pair<std::int64_t, const std::byte*>>& rows) {
    if (rows.empty()) return;
    const std::int64_t per_row = plan_.across;
    const std::int64_t count = static_cast<std::int64_t>(rows.size()) * per_row;
    const bool raw_strips = plan_.compression == COMPRESSION_NONE && !plan_.tiled;
    std::vector<std::vector<std::byte>> blocks(raw_strips ? 0 : count);
    if (!raw_strips)
      tbb::parallel_for(std::int64_t{0}, count, [&](std::int64_t k) {
        const auto& [cy, src] = rows[k / per_row];
        encode(cy, k % per_row, src, blocks[k]);
      });
    for (std::int64_t k = 0; k < count; ++k) {
      const auto& [cy, src] = rows[k / per_row];
      const auto index = static_cast<std::uint32_t>(cy * plan_.across + k % per_row);
      const std::byte* p = raw_strips ? src : blocks[k].data();
      const std::size_t bytes = raw_strips ? plan_.chunk_bytes(cy) : blocks[k].size();
      const tmsize_t w = plan_.tiled ? TIFFWriteRawTile(tif_, index, const_cast<std::byte*>(p),
                                                        static_cast<tmsize_t>(bytes))
                                     : TIFFWriteRawStrip(tif_, index, const_cast<std::byte*>(p),
                                                         static_cast<tmsize_t>(bytes));
      if (w < 0) throw failure("cannot write output '" + path_ + "'");
    }
  }

  // Block cx of chunk row cy (image rows at src) into `out`: gathered into a whole block (tiles
  // padded with zeros at the edges), then compressed unless the output is uncompressed.
  void encode(std::int64_t cy, std::int64_t cx, const std::byte* src, std::vector<std::byte>& out) {
    const std::size_t row = plan_.spec.row_bytes(), pixel = plan_.spec.pixel_bytes();
    const std::size_t bytes = plan_.chunk_bytes(cy);
    thread_local std::vector<std::byte> block;
    std::byte* b;
    if (plan_.tiled) {
      block.assign(bytes, std::byte{0});
      const std::int64_t x0 = cx * plan_.chunk_w;
      const std::int64_t w = std::min(plan_.chunk_w, plan_.spec.width - x0);
      const std::int64_t h = std::min(plan_.chunk_h, plan_.spec.height - cy * plan_.chunk_h);
      for (std::int64_t r = 0; r < h; ++r)
        std::memcpy(block.data() + r * plan_.chunk_row_bytes(), src + r * row + x0 * pixel,
                    static_cast<std::size_t>(w) * pixel);
      b = block.data();
    } else {
      // The codec's predictor works in place: compress a copy, not the caller's rows.
      block.assign(src, src + bytes);
      b = block.data();
    }
    if (plan_.compression == COMPRESSION_NONE) {
      out.assign(b, b + bytes);
      return;
    }
    auto& encoder = encoders_.local();
    if (!encoder) encoder = std::make_unique<Encoder>(plan_);
    const auto index = static_cast<std::uint32_t>(cy * plan_.across + cx);
    encoder->encode(plan_.tiled, index, b, bytes, out);
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
};

}  // namespace

std::unique_ptr<Sink> create_tiff_sink(const std::string& path, const ImageSpec& spec,
                                       const std::string& input_path, const SinkOptions& options) {
  return std::make_unique<TiffSink>(path, spec, input_path, options);
}

}  // namespace ooc
