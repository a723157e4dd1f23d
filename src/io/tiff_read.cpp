// Reading TIFF and BigTIFF through libtiff, band by band. Uncompressed chunky strips that lie in
// file order are a raw image at an offset and are read mapped, like raw files. Every other layout
// (tiles, compression, separate planes, scattered strips) is decoded strip by strip or tile by tile
// by a set of decode threads, each with its own libtiff handle (one handle is not thread-safe),
// ahead of the reader, into a small cache of decoded rows of blocks: strips or tiles that
// straddle two bands are decoded once.
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "formats.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"
#include "tiff_common.hpp"

namespace ooc {
namespace {

// Strips or tiles are decoded whole; one row of them must fit in memory several times over.
constexpr std::uint64_t kMaxChunkRowBytes = 512ull << 20;

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

// What one TIFF directory says about its image.
struct TiffInfo {
  ImageSpec spec;
  bool tiled = false, separate = false, swapped = false, bigtiff = false;
  std::uint16_t compression = COMPRESSION_NONE;
  std::int64_t chunk_w = 0, chunk_h = 0;  // a strip is image-wide
  std::int64_t across = 1, down = 1, planes = 1;
  int pages = 1;
  int levels = 0;                   // SubIFDs (reduced levels) of the page read
  std::uint64_t largest_chunk = 0;  // bytes of the largest stored (compressed) strip or tile
  Metadata metadata;

  std::int64_t chunk_samples() const { return chunk_w * (separate ? 1 : spec.channels); }
  std::uint64_t chunk_row_bytes() const {
    return static_cast<std::uint64_t>(chunk_samples()) * sample_bytes(spec.type);
  }
  // Rows chunk row cy holds in the image (strips: the last one is shorter).
  std::int64_t rows_in(std::int64_t cy) const {
    return std::min(chunk_h, spec.height - cy * chunk_h);
  }
  // Bytes the decoded chunk holds: tiles are always whole, strips only their rows.
  std::uint64_t chunk_bytes(std::int64_t cy) const {
    return chunk_row_bytes() * static_cast<std::uint64_t>(tiled ? chunk_h : rows_in(cy));
  }
  std::uint32_t index(std::int64_t cy, std::int64_t cx, std::int64_t plane) const {
    return static_cast<std::uint32_t>((plane * down + cy) * across + cx);
  }
  const char* chunk_name() const { return tiled ? "tile" : "strip"; }
};

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
                                      "), which ooc does not filter: it reads 2-D images; store "
                                      "the slices as pages and pick one with --page");
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
  m.geo = read_geo_tags(tif, path);
  return t;
}

// Every strip or tile must lie inside the file and be non-empty; uncompressed ones must hold
// their rows. Checked once, up front, so that a damaged file fails before any output is written.
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

// The start of the image data, when it is raw: uncompressed chunky strips, one after another.
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

std::string describe_layout(const TiffInfo& t, int page, int level = 0) {
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

// libtiff handles, one per worker at a time: a handle is not thread-safe, and opening one costs a
// directory read, so they are kept for reuse.
class HandlePool {
 public:
  HandlePool(std::string path, int page, int level)
      : path_(std::move(path)), page_(page), level_(level) {}
  ~HandlePool() {
    for (TIFF* t : free_) TIFFClose(t);
  }
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;

  class Lease {
   public:
    explicit Lease(HandlePool& pool) : pool_(pool), tif_(pool.acquire()) {}
    ~Lease() { pool_.release(tif_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    TIFF* get() const { return tif_; }

   private:
    HandlePool& pool_;
    TIFF* tif_;
  };

  // The first handle, opened by the caller to read the directory.
  void adopt(TIFF* tif) { release(tif); }

 private:
  TIFF* acquire() {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        TIFF* t = free_.back();
        free_.pop_back();
        return t;
      }
    }
    TIFF* t = open_tiff(path_, page_, level_);
    return t;
  }
  void release(TIFF* t) {
    std::lock_guard lock(mutex_);
    free_.push_back(t);
  }

  std::string path_;
  int page_;
  int level_;
  std::mutex mutex_;
  std::vector<TIFF*> free_;
};

// Copies `n` samples of `width` bytes, `step` samples apart in dst (one plane into chunky pixels).
void scatter_samples(const std::byte* src, std::byte* dst, std::int64_t n, std::size_t width,
                     std::int64_t step) {
  auto copy = [&]<class T>(T) {
    const auto* s = reinterpret_cast<const T*>(src);
    for (std::int64_t i = 0; i < n; ++i) std::memcpy(dst + i * step * sizeof(T), s + i, sizeof(T));
  };
  switch (width) {
    case 1:
      return copy(std::uint8_t{});
    case 2:
      return copy(std::uint16_t{});
    case 4:
      return copy(std::uint32_t{});
    default:
      return copy(std::uint64_t{});
  }
}

// Threads that decode strips and tiles ahead of the readers, one set per source, as many as the
// job's --threads (a batch job on a shared node must not start one per core). Plain threads, not
// TBB tasks: readers block until a row of blocks is decoded, and a blocked TBB worker could hold
// up the very task it waits for; these threads always make progress.
class DecodeThreads {
 public:
  explicit DecodeThreads(unsigned count) {
    for (unsigned i = 0; i < count; ++i) threads_.emplace_back([this] { work(); });
  }
  ~DecodeThreads() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  DecodeThreads(const DecodeThreads&) = delete;
  DecodeThreads& operator=(const DecodeThreads&) = delete;

  // Runs one queued job in the calling thread, if there is one: a reader that would otherwise wait
  // for decodes helps with them (and the TBB worker it may be is not lost to idling).
  bool help_one() {
    std::function<void()> job;
    {
      std::lock_guard lock(mutex_);
      if (jobs_.empty()) return false;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
    return true;
  }

  void post(std::vector<std::function<void()>> jobs) {
    {
      std::lock_guard lock(mutex_);
      for (auto& j : jobs) jobs_.push_back(std::move(j));
    }
    wake_.notify_all();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

class TiffChunkSource final : public Source {
 public:
  TiffChunkSource(std::string path, TiffInfo info, int page, int level, TIFF* first,
                  unsigned threads)
      : path_(std::move(path)), t_(std::move(info)), page_(page), pool_(path_, page, level) {
    pool_.adopt(first);
    layout_ = describe_layout(t_, page_, level);
    // Rows of blocks decoded ahead: two blocks per thread, within kMaxAheadBytes.
    const std::uint64_t row_bytes = t_.spec.row_bytes() * std::uint64_t(t_.chunk_h);
    const std::int64_t per_row = t_.across * t_.planes;
    ahead_ = std::clamp<std::int64_t>((2 * threads + per_row - 1) / per_row, 1,
                                      std::max<std::int64_t>(1, kMaxAheadBytes / row_bytes));
    slack_ = std::clamp<std::int64_t>(static_cast<std::int64_t>(kMaxAheadBytes / row_bytes), 1, 8);
    threads_ = threads;
    decoders_ = std::make_unique<DecodeThreads>(threads);
  }
  // Decodes still queued become no-ops; the ones running finish first: none may outlive us.
  ~TiffChunkSource() override {
    std::unique_lock lock(mutex_);
    closing_ = true;
    decoded_.wait(lock, [&] { return outstanding_ == 0; });
  }

  const ImageSpec& spec() const noexcept override { return t_.spec; }
  std::string describe() const override { return "tiff '" + path_ + "' " + t_.spec.describe(); }
  std::string layout() const override { return layout_; }
  const Metadata& metadata() const noexcept override { return t_.metadata; }

  // Rows of blocks cached: those the readers hold, the ones read ahead, and the slack kept for
  // readers in other threads; and per decode thread the stored block and the decoded one.
  std::size_t buffer_bytes(std::int64_t band_rows, int readers) const override {
    const std::uint64_t block_row = t_.spec.row_bytes() * std::uint64_t(t_.chunk_h);
    const std::uint64_t down = static_cast<std::uint64_t>(t_.down);
    const std::uint64_t held = std::min<std::uint64_t>(
        down, std::uint64_t(std::max(readers, 1)) * std::uint64_t(band_rows / t_.chunk_h + 2));
    const std::uint64_t cached = std::min<std::uint64_t>(down, held + ahead_ + slack_);
    // Blocks decode into the cached rows; a thread holds the stored bytes (and a tile).
    const std::uint64_t decoding = std::min<std::uint64_t>(
        threads_, std::min<std::uint64_t>(down, held + ahead_) * t_.across * t_.planes);
    const std::uint64_t per_thread = t_.largest_chunk + (t_.tiled ? t_.chunk_bytes(0) : 0);
    return static_cast<std::size_t>(cached * block_row + decoding * per_thread);
  }

  const std::byte* rows(std::int64_t y0, std::int64_t n, RowArena& arena) override {
    std::byte* out = arena.take(static_cast<std::size_t>(n) * t_.spec.row_bytes());
    read_rows(y0, n, out);
    return out;
  }

  // Rows of blocks that lie wholly inside [y0, y0 + n) and are not decoded yet decode straight
  // into dst; the others (shared with the next band, or read ahead) come from the cache. The
  // next ahead_ rows of blocks are queued behind them, so the decoders work in file order.
  void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) override {
    const std::size_t row = t_.spec.row_bytes();
    const std::int64_t cy0 = y0 / t_.chunk_h, cy1 = (y0 + n - 1) / t_.chunk_h;
    std::vector<std::shared_ptr<Cached>> need;
    {
      std::lock_guard lock(mutex_);
      const std::int64_t last = std::min(cy1 + ahead_, t_.down - 1);
      for (std::int64_t cy = cy0; cy <= last; ++cy) {
        const std::int64_t top = cy * t_.chunk_h;
        const bool inside = cy <= cy1 && top >= y0 && top + t_.rows_in(cy) <= y0 + n;
        auto c = find(cy);
        if (!c) c = inside ? decode(cy, dst + (top - y0) * row) : request(cy);
        if (cy <= cy1) need.push_back(std::move(c));
      }
      // The rows just asked for, the ones ahead, and some slack for readers in other threads.
      const std::size_t keep = static_cast<std::size_t>(cy1 - cy0 + 1 + ahead_ + slack_);
      for (auto it = cache_.end(); cache_.size() > keep && it != cache_.begin();) {
        --it;
        if ((*it)->left == 0 && it->use_count() == 1) it = cache_.erase(it);
      }
    }
    // Every block must be done before returning, even after an error: some decode into dst.
    for (const auto& c : need) wait_for(*c);
    for (const auto& c : need)
      if (c->error) std::rethrow_exception(c->error);
    for (const auto& c : need) {
      if (c->target) continue;
      const std::int64_t top = c->cy * t_.chunk_h, bottom = top + t_.rows_in(c->cy);
      const std::int64_t a = std::max(top, y0), b = std::min(bottom, y0 + n);
      std::memcpy(dst + (a - y0) * row, c->data.data() + (a - top) * row,
                  static_cast<std::size_t>(b - a) * row);
    }
  }

  bool parallel_reads() const override { return false; }

  // Rows of blocks that fit in max_bytes, with what their decoding holds, up to ahead_ of them.
  void prefetch(std::int64_t y0, std::size_t max_bytes) override {
    if (y0 < 0 || y0 >= t_.spec.height) return;
    const std::uint64_t block_row = t_.spec.row_bytes() * std::uint64_t(t_.chunk_h);
    const std::uint64_t decoding =
        threads_ * (t_.largest_chunk + (t_.tiled ? t_.chunk_bytes(0) : 0));
    if (block_row + decoding > max_bytes) return;
    const std::int64_t rows = static_cast<std::int64_t>((max_bytes - decoding) / block_row);
    std::lock_guard lock(mutex_);
    const std::int64_t cy0 = y0 / t_.chunk_h;
    const std::int64_t last = std::min({cy0 + ahead_, cy0 + rows - 1, t_.down - 1});
    for (std::int64_t cy = cy0; cy <= last; ++cy) request(cy);
  }

 private:
  struct Cached {
    std::int64_t cy = 0;
    std::vector<std::byte> data;  // the image rows of this row of blocks (cached ones)
    std::byte* target = nullptr;  // or where they decode to, straight (a reader's buffer)
    std::int64_t left = 0;        // blocks still to decode (guarded by mutex_)
    std::exception_ptr error;
  };

  // Blocks left to decode in c; the reader helps the decoders while it waits.
  void wait_for(Cached& c) {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        if (c.left == 0) return;
      }
      if (decoders_->help_one()) continue;
      // Nothing queued: the last blocks are being decoded by other threads.
      std::unique_lock lock(mutex_);
      decoded_.wait_for(lock, std::chrono::milliseconds(2), [&] { return c.left == 0; });
    }
  }

  // Called with mutex_ held, as are the two below.
  // The cache entry of row of blocks cy, made the most recently used; null if there is none.
  std::shared_ptr<Cached> find(std::int64_t cy) {
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if ((*it)->cy == cy) {
        cache_.splice(cache_.begin(), cache_, it);
        return cache_.front();
      }
    return nullptr;
  }

  // The cache entry of row of blocks cy (see find); posts its decode if new.
  std::shared_ptr<Cached> request(std::int64_t cy) {
    if (auto c = find(cy)) return c;
    auto c = std::make_shared<Cached>();
    c->cy = cy;
    c->data.resize(static_cast<std::size_t>(t_.rows_in(cy)) * t_.spec.row_bytes());
    cache_.push_front(c);
    post(c);
    return c;
  }

  // Row of blocks cy decoded straight into `rows` (its image rows), outside the cache.
  std::shared_ptr<Cached> decode(std::int64_t cy, std::byte* rows) {
    auto c = std::make_shared<Cached>();
    c->cy = cy;
    c->target = rows;
    post(c);
    return c;
  }

  // Queues the decode of every block of c's row of blocks.
  void post(const std::shared_ptr<Cached>& c) {
    const std::int64_t blocks = t_.across * t_.planes;
    c->left = blocks;
    outstanding_ += blocks;
    std::vector<std::function<void()>> jobs;
    for (std::int64_t k = 0; k < blocks; ++k)
      jobs.emplace_back([this, c, k] {
        bool closing;
        {
          std::lock_guard lock(mutex_);
          closing = closing_;
        }
        std::exception_ptr error;
        try {
          if (!closing) decode_into(c->cy, k, c->target ? c->target : c->data.data());
        } catch (...) {
          error = std::current_exception();
        }
        std::lock_guard lock(mutex_);
        if (error && !c->error) c->error = error;
        --outstanding_;
        if (--c->left == 0 || outstanding_ == 0) decoded_.notify_all();
      });
    decoders_->post(std::move(jobs));
  }

  // Decodes block k (cx + across * plane) of row of blocks cy into `rows`, the image rows of that
  // row of blocks (row_bytes apart).
  void decode_into(std::int64_t cy, std::int64_t k, std::byte* rows) {
    const std::int64_t cx = k % t_.across, plane = k / t_.across;
    const std::uint32_t index = t_.index(cy, cx, plane);
    const std::size_t row = t_.spec.row_bytes(), bytes = t_.chunk_bytes(cy);
    const std::size_t sb = sample_bytes(t_.spec.type);
    // An image-wide chunky strip is exactly the image rows: no staging copy.
    const bool direct = !t_.tiled && !t_.separate;
    thread_local std::vector<std::byte> staging;
    std::byte* buf = rows;
    if (!direct) {
      if (staging.size() < bytes) staging.resize(bytes);
      buf = staging.data();
    }
    HandlePool::Lease lease(pool_);
    const tmsize_t got =
        t_.tiled ? TIFFReadEncodedTile(lease.get(), index, buf, static_cast<tmsize_t>(bytes))
                 : TIFFReadEncodedStrip(lease.get(), index, buf, static_cast<tmsize_t>(bytes));
    if (got < 0)
      throw Error(ErrorKind::input, "TIFF '" + path_ + "': cannot decode " + t_.chunk_name() + " " +
                                        std::to_string(index) + ": " + take_tiff_error());
    if (static_cast<std::size_t>(got) < bytes)
      throw Error(ErrorKind::input, "TIFF '" + path_ + "': " + t_.chunk_name() + " " +
                                        std::to_string(index) + " decodes to " +
                                        std::to_string(got) + " bytes, its pixels need " +
                                        std::to_string(bytes) + ": the file is damaged");
    if (direct) return;
    const std::int64_t x0 = cx * t_.chunk_w, x1 = std::min(t_.spec.width, x0 + t_.chunk_w);
    const std::int64_t nrows = t_.rows_in(cy);
    const std::size_t pixel = t_.spec.pixel_bytes();
    for (std::int64_t r = 0; r < nrows; ++r) {
      const std::byte* src = buf + r * t_.chunk_row_bytes();
      std::byte* out = rows + r * row + x0 * pixel;
      if (!t_.separate)
        std::memcpy(out, src, static_cast<std::size_t>(x1 - x0) * pixel);
      else
        scatter_samples(src, out + plane * sb, x1 - x0, sb, t_.spec.channels);
    }
  }

  static constexpr std::uint64_t kMaxAheadBytes = 64u << 20;

  std::string path_;
  TiffInfo t_;
  int page_;
  std::string layout_;
  HandlePool pool_;
  std::int64_t ahead_ = 1;
  std::int64_t slack_ = 1;
  std::uint64_t threads_ = 1;
  std::mutex mutex_;
  std::condition_variable decoded_;
  std::list<std::shared_ptr<Cached>> cache_;  // most recently used first
  std::int64_t outstanding_ = 0;              // decode jobs posted and not finished
  bool closing_ = false;
  // Last: its threads are joined first, while everything their jobs touch still exists.
  std::unique_ptr<DecodeThreads> decoders_;
};

}  // namespace

std::unique_ptr<Source> open_tiff_source(const std::string& path, int fd, const RawHints& hints,
                                         std::uintmax_t file_size) {
  struct CloseFd {
    int fd;
    ~CloseFd() {
      if (fd >= 0) ::close(fd);
    }
  } guard{fd};
  if (hints.page < 0)
    throw Error(ErrorKind::usage, "--page counts from 0, got " + std::to_string(hints.page));
  TIFF* tif = open_tiff(path, -1);
  TiffInfo t;
  try {
    const int pages = TIFFNumberOfDirectories(tif);
    if (hints.page >= pages)
      throw Error(ErrorKind::usage, "TIFF '" + path + "' has " + std::to_string(pages) +
                                        " page(s); --page " + std::to_string(hints.page) +
                                        " does not exist (pages count from 0)");
    if (!TIFFSetDirectory(tif, static_cast<tdir_t>(hints.page)))
      throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read page " +
                                        std::to_string(hints.page) + ": " + take_tiff_error());
    const int level = std::max(0, hints.zarr_level);
    const int levels = subifd_count(tif);
    select_level(tif, level, path, hints.page);
    t = read_info(tif, path);
    t.pages = pages;
    t.levels = levels;
    check_hints(hints, t.spec, "the TIFF tags of '" + path + "', which say");
    check_chunks(tif, t, path, file_size);
    if (const auto offset = raw_data_offset(tif, t)) {
      FileLayout l;
      l.spec = t.spec;
      l.offset = *offset;
      l.swap = t.swapped && sample_bytes(t.spec.type) > 1;
      l.format = "tiff";
      l.layout = describe_layout(t, hints.page, std::max(0, hints.zarr_level)) + ", read mapped";
      l.metadata = t.metadata;
      TIFFClose(tif);
      guard.fd = -1;
      return make_mapped_source(path, fd, std::move(l));
    }
    const std::uint64_t chunk_row = t.chunk_row_bytes() * t.across * t.chunk_h;
    if (chunk_row > kMaxChunkRowBytes)
      throw Error(ErrorKind::input,
                  "TIFF '" + path + "' stores " + std::to_string(t.chunk_h) + " rows per " +
                      t.chunk_name() + " (" + std::to_string(chunk_row >> 20) +
                      " MiB per row of them), too many to decode in bounded memory: rewrite it "
                      "tiled or in smaller strips, e.g. vips tiffsave IN OUT.tif --tile");
  } catch (...) {
    TIFFClose(tif);
    throw;
  }
  const unsigned threads =
      static_cast<unsigned>(hints.threads > 0 ? hints.threads : default_threads());
  return std::make_unique<TiffChunkSource>(path, std::move(t), hints.page,
                                           std::max(0, hints.zarr_level), tif, threads);
}

}  // namespace ooc
