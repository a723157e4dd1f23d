// Reading TIFF and BigTIFF through libtiff, band by band. Uncompressed chunky strips that lie in
// file order are a raw image at an offset and are read mapped, like raw files. Every other layout
// (tiles, compression, separate planes, scattered strips) is decoded strip by strip or tile by tile
// by a set of decode threads, each with its own libtiff handle (one handle is not thread-safe),
// ahead of the reader, into a small cache of decoded rows of blocks: strips or tiles that
// straddle two bands are decoded once. A multi-page file whose pages are alike is a z-stack: its
// pages are the planes of a volume, each decoded (or mapped) as a page alone would be.
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "formats.hpp"
#include "io/chunk_cache.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"
#include "tiff_common.hpp"
#include "tiff_info.hpp"

namespace ooc {
namespace {

using tiff_read::TiffInfo;

// Strips or tiles are decoded whole; one row of them must fit in memory several times over.
constexpr std::uint64_t kMaxChunkRowBytes = 512ull << 20;

// A row of strips or tiles must decode in bounded memory: an input Error naming the fix.
void check_chunk_row(const TiffInfo& t, const std::string& path) {
  const std::uint64_t chunk_row = t.chunk_row_bytes() * t.across * t.chunk_h;
  if (chunk_row > kMaxChunkRowBytes)
    throw Error(ErrorKind::input,
                "TIFF '" + path + "' stores " + std::to_string(t.chunk_h) + " rows per " +
                    t.chunk_name() + " (" + std::to_string(chunk_row >> 20) +
                    " MiB per row of them), too many to decode in bounded memory: rewrite it "
                    "tiled or in smaller strips, e.g. vips tiffsave IN OUT.tif --tile");
}

// libtiff handles, one per worker at a time: a handle is not thread-safe, and opening one costs a
// directory read, so they are kept for reuse. A z-stack's handles move between its planes'
// directories (by offset: no walk along the chain); a free handle already on the plane asked for
// is taken first.
class HandlePool {
  struct Handle {
    TIFF* tif = nullptr;
    std::int64_t plane = 0;  // -1: a failed move left it nowhere
  };

 public:
  // `dirs`: the planes' directory offsets (empty: a 2-D image, the handles stay on page/level).
  HandlePool(std::string path, int page, int level, std::vector<std::uint64_t> dirs)
      : path_(std::move(path)), page_(page), level_(level), dirs_(std::move(dirs)) {}
  ~HandlePool() {
    for (const Handle& h : free_) TIFFClose(h.tif);
  }
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;

  class Lease {
   public:
    Lease(HandlePool& pool, std::int64_t plane) : pool_(pool), h_(pool.acquire(plane)) {}
    ~Lease() { pool_.release(h_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    TIFF* get() const { return h_.tif; }

   private:
    HandlePool& pool_;
    Handle h_;
  };

  // The first handle, opened by the caller to read the directory (of plane 0).
  void adopt(TIFF* tif) { release({tif, 0}); }

 private:
  Handle acquire(std::int64_t plane) {
    Handle h;
    {
      std::lock_guard lock(mutex_);
      auto at = std::find_if(free_.begin(), free_.end(),
                             [&](const Handle& f) { return f.plane == plane; });
      if (at == free_.end() && !free_.empty()) at = free_.end() - 1;
      if (at != free_.end()) {
        h = *at;
        free_.erase(at);
      }
    }
    if (!h.tif) h = {open_tiff(path_, page_, level_), 0};
    if (h.plane != plane && !dirs_.empty()) {
      if (!TIFFSetSubDirectory(h.tif, dirs_[static_cast<std::size_t>(plane)])) {
        release({h.tif, -1});
        throw Error(ErrorKind::input, "TIFF '" + path_ + "': cannot read the directory of plane " +
                                          std::to_string(plane) + ": " + take_tiff_error());
      }
      h.plane = plane;
    }
    return h;
  }
  void release(Handle h) {
    std::lock_guard lock(mutex_);
    free_.push_back(h);
  }

  std::string path_;
  int page_;
  int level_;
  std::vector<std::uint64_t> dirs_;
  std::mutex mutex_;
  std::vector<Handle> free_;
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

// The rows of blocks of a plane (one for a 2-D image; a z-stack's pages each have their own
// strips or tiles, however they lie) decoded by a set of threads into the shared cache. A row of
// blocks never crosses planes; reading ahead goes on into the next plane.
class TiffChunkSource final : public Source {
 public:
  // `infos`: one per plane, each of the plane's geometry; `dirs`: their directories' offsets
  // (empty for a 2-D image, read at page/level).
  TiffChunkSource(std::string path, std::vector<TiffInfo> infos, std::vector<std::uint64_t> dirs,
                  int page, int level, std::string layout, TIFF* first, unsigned threads)
      : path_(std::move(path)),
        planes_(std::move(infos)),
        layout_(std::move(layout)),
        pool_(path_, page, level, std::move(dirs)),
        cache_(planes_[0].spec.row_bytes()) {
    pool_.adopt(first);
    spec_ = planes_[0].spec;
    spec_.depth = static_cast<std::int64_t>(planes_.size());
    for (const TiffInfo& t : planes_) {
      block_row_ = std::max(block_row_, t.spec.row_bytes() * static_cast<std::uint64_t>(t.chunk_h));
      per_row_ = std::max(per_row_, t.across * t.planes);
      min_chunk_h_ = std::min(min_chunk_h_, t.chunk_h);
      down_ += t.down;
      per_thread_ = std::max(per_thread_, t.largest_chunk + (t.tiled ? t.chunk_bytes(0) : 0));
    }
    // Rows of blocks decoded ahead: two blocks per thread, within kMaxAheadBytes.
    ahead_ = std::clamp<std::int64_t>((2 * threads + per_row_ - 1) / per_row_, 1,
                                      std::max<std::int64_t>(1, kMaxAheadBytes / block_row_));
    slack_ = std::clamp<std::int64_t>(static_cast<std::int64_t>(kMaxAheadBytes / block_row_), 1, 8);
    threads_ = threads;
    decoders_ = std::make_unique<DecodeThreads>(threads);
  }
  // Decodes still queued become no-ops; the ones running finish first: none may outlive us.
  ~TiffChunkSource() override {
    closing_ = true;
    cache_.drain();
  }

  const ImageSpec& spec() const noexcept override { return spec_; }
  std::string describe() const override { return "tiff '" + path_ + "' " + spec_.describe(); }
  std::string layout() const override { return layout_; }
  const Metadata& metadata() const noexcept override { return planes_[0].metadata; }

  // Rows of blocks cached: those the readers hold, the ones read ahead, and the slack kept for
  // readers in other threads; and per decode thread the stored block and the decoded one.
  std::size_t buffer_bytes(std::int64_t band_rows, int readers) const override {
    const std::uint64_t down = static_cast<std::uint64_t>(down_);
    const std::uint64_t held = std::min<std::uint64_t>(
        down, std::uint64_t(std::max(readers, 1)) * std::uint64_t(band_rows / min_chunk_h_ + 2));
    const std::uint64_t cached = std::min<std::uint64_t>(down, held + ahead_ + slack_);
    // Blocks decode into the cached rows; a thread holds the stored bytes (and a tile).
    const std::uint64_t decoding =
        std::min<std::uint64_t>(threads_, std::min<std::uint64_t>(down, held + ahead_) * per_row_);
    return static_cast<std::size_t>(cached * block_row_ + decoding * per_thread_);
  }

  const std::byte* rows(std::int64_t y0, std::int64_t n, RowArena& arena) override {
    std::byte* out = arena.take(static_cast<std::size_t>(n) * spec_.row_bytes());
    read_rows(y0, n, out);
    return out;
  }

  // Rows of blocks that lie wholly inside [y0, y0 + n) and are not decoded yet decode straight
  // into dst; the others (shared with the next band, or read ahead) come from the cache. The
  // next ahead_ rows of blocks are queued behind them, so the decoders work in file order.
  void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) override {
    const std::size_t row = spec_.row_bytes();
    const BlockRow last = block_row_of(y0 + n - 1);
    std::vector<ChunkCache::Ptr> need;
    std::int64_t ahead = 0;
    for (BlockRow b = block_row_of(y0); b.z < spec_.depth; b = next(b)) {
      const bool needed = b.z < last.z || (b.z == last.z && b.cy <= last.cy);
      if (!needed && ahead++ >= ahead_) break;
      const std::int64_t top = top_of(b), count = plane(b).rows_in(b.cy);
      const bool inside = needed && top >= y0 && top + count <= y0 + n;
      auto c = claim(b, inside ? dst + (top - y0) * row : nullptr);
      if (needed) need.push_back(std::move(c));
    }
    // The rows just asked for, the ones ahead, and some slack for readers in other threads.
    cache_.trim(
        static_cast<std::uint64_t>(static_cast<std::int64_t>(need.size()) + ahead_ + slack_) *
        block_row_);
    // Every block must be done before returning, even after an error: some decode into dst.
    for (const auto& c : need) cache_.wait(*c, [&] { return decoders_->help_one(); });
    for (const auto& c : need)
      if (c->error) std::rethrow_exception(c->error);
    for (const auto& c : need)
      if (!c->direct) cache_.copy_out(*c, y0, n, dst);
  }

  bool parallel_reads() const override { return false; }

  // Rows of blocks that fit in max_bytes, with what their decoding holds, up to ahead_ of them.
  void prefetch(std::int64_t y0, std::size_t max_bytes) override {
    if (y0 < 0 || y0 >= spec_.stacked_rows()) return;
    const std::uint64_t decoding = threads_ * per_thread_;
    if (block_row_ + decoding > max_bytes) return;
    const std::int64_t rows = static_cast<std::int64_t>((max_bytes - decoding) / block_row_);
    const std::int64_t count = std::min(ahead_ + 1, rows);
    BlockRow b = block_row_of(y0);
    for (std::int64_t i = 0; i < count && b.z < spec_.depth; ++i, b = next(b)) claim(b, nullptr);
  }

 private:
  struct BlockRow {
    std::int64_t z = 0, cy = 0;
  };
  const TiffInfo& plane(const BlockRow& b) const { return planes_[static_cast<std::size_t>(b.z)]; }
  BlockRow block_row_of(std::int64_t r) const {
    const std::int64_t z = r / spec_.height;
    return {z, (r % spec_.height) / planes_[static_cast<std::size_t>(z)].chunk_h};
  }
  BlockRow next(BlockRow b) const {
    return b.cy + 1 < plane(b).down ? BlockRow{b.z, b.cy + 1} : BlockRow{b.z + 1, 0};
  }
  std::int64_t top_of(const BlockRow& b) const {
    return b.z * spec_.height + b.cy * plane(b).chunk_h;
  }

  // Row of blocks b from the cache, or else its decode queued: into `direct` (its image rows in
  // a reader's buffer) when given, into the cache otherwise.
  ChunkCache::Ptr claim(BlockRow b, std::byte* direct) {
    const TiffInfo& t = plane(b);
    const std::int64_t blocks = t.across * t.planes;
    auto [c, fresh] =
        cache_.claim(b.z * spec_.height + b.cy, top_of(b), t.rows_in(b.cy), blocks, direct);
    if (!fresh) return c;
    std::vector<std::function<void()>> jobs;
    for (std::int64_t k = 0; k < blocks; ++k)
      jobs.emplace_back([this, c, k, b] {
        std::exception_ptr error;
        try {
          if (!closing_) decode_into(b, k, c->rows);
        } catch (...) {
          error = std::current_exception();
        }
        cache_.done(c, 1, error);
      });
    decoders_->post(std::move(jobs));
    return c;
  }

  // Decodes block k (cx + across * plane) of row of blocks b into `rows`, the image rows of that
  // row of blocks (row_bytes apart).
  void decode_into(const BlockRow& b, std::int64_t k, std::byte* rows) {
    const TiffInfo& t = plane(b);
    const std::int64_t cy = b.cy;
    const std::int64_t cx = k % t.across, sample_plane = k / t.across;
    const std::uint32_t index = t.index(cy, cx, sample_plane);
    const std::size_t row = t.spec.row_bytes(), bytes = t.chunk_bytes(cy);
    const std::size_t sb = sample_bytes(t.spec.type);
    // An image-wide chunky strip is exactly the image rows: no staging copy.
    const bool direct = !t.tiled && !t.separate;
    thread_local std::vector<std::byte> staging;
    std::byte* buf = rows;
    if (!direct) {
      if (staging.size() < bytes) staging.resize(bytes);
      buf = staging.data();
    }
    HandlePool::Lease lease(pool_, b.z);
    const tmsize_t got =
        t.tiled ? TIFFReadEncodedTile(lease.get(), index, buf, static_cast<tmsize_t>(bytes))
                : TIFFReadEncodedStrip(lease.get(), index, buf, static_cast<tmsize_t>(bytes));
    const std::string which = std::string(t.chunk_name()) + " " + std::to_string(index) +
                              (spec_.volume() ? " of plane " + std::to_string(b.z) : "");
    if (got < 0)
      throw Error(ErrorKind::input,
                  "TIFF '" + path_ + "': cannot decode " + which + ": " + take_tiff_error());
    if (static_cast<std::size_t>(got) < bytes)
      throw Error(ErrorKind::input, "TIFF '" + path_ + "': " + which + " decodes to " +
                                        std::to_string(got) + " bytes, its pixels need " +
                                        std::to_string(bytes) + ": the file is damaged");
    if (direct) return;
    const std::int64_t x0 = cx * t.chunk_w, x1 = std::min(t.spec.width, x0 + t.chunk_w);
    const std::int64_t nrows = t.rows_in(cy);
    const std::size_t pixel = t.spec.pixel_bytes();
    for (std::int64_t r = 0; r < nrows; ++r) {
      const std::byte* src = buf + r * t.chunk_row_bytes();
      std::byte* out = rows + r * row + x0 * pixel;
      if (!t.separate)
        std::memcpy(out, src, static_cast<std::size_t>(x1 - x0) * pixel);
      else
        scatter_samples(src, out + sample_plane * sb, x1 - x0, sb, t.spec.channels);
    }
  }

  static constexpr std::uint64_t kMaxAheadBytes = 64u << 20;

  std::string path_;
  std::vector<TiffInfo> planes_;
  ImageSpec spec_;
  std::string layout_;
  HandlePool pool_;
  // Over the planes: the largest row of blocks, blocks in one, stored block (and tile); the
  // shortest block; rows of blocks in all.
  std::uint64_t block_row_ = 1;
  std::int64_t per_row_ = 1, min_chunk_h_ = std::numeric_limits<std::int64_t>::max(), down_ = 0;
  std::uint64_t per_thread_ = 0;
  std::int64_t ahead_ = 1;
  std::int64_t slack_ = 1;
  std::uint64_t threads_ = 1;
  std::atomic<bool> closing_ = false;
  ChunkCache cache_;
  // Last: its threads are joined first, while everything their jobs touch still exists.
  std::unique_ptr<DecodeThreads> decoders_;
};

// The first byte of a z-stack's planes where they lie raw and one after the other in the file
// (uncompressed chunky strips in file order, page after page), as a raw volume is.
std::optional<std::uint64_t> raw_volume_offset(TIFF* tif, const std::vector<TiffInfo>& infos,
                                               const std::vector<std::uint64_t>& dirs) {
  std::optional<std::uint64_t> first;
  std::uint64_t expect = 0;
  for (std::size_t z = 0; z < infos.size(); ++z) {
    if (!TIFFSetSubDirectory(tif, dirs[z])) return std::nullopt;
    const auto at = tiff_read::raw_data_offset(tif, infos[z]);
    if (!at || infos[z].swapped != infos[0].swapped || (first && *at != expect))
      return std::nullopt;
    if (!first) first = at;
    expect = *at + infos[z].spec.total_bytes();
  }
  return first;
}

// A z-stack of planes (pages alike): each page's tags and blocks checked, read mapped where the
// planes lie raw one after the other, decoded otherwise. tif and fd are handed on (and set to
// null and -1) once the source owns them.
// Page 0's voxel size and plane size. OME-XML and ImageJ state the size in page 0's description
// only: the other pages of a stack (--pages, --page) and a page's reduced levels (SubIFDs) inherit
// it, a level's y and x scaled by how much smaller it is. Read with the handle on page 0.
struct FirstPage {
  VoxelSize voxel;
  std::int64_t width = 0, height = 0;
};
FirstPage first_page(TIFF* tif, const std::string& path) {
  FirstPage f;
  try {
    const TiffInfo t = tiff_read::read_info(tif, path);
    f = {t.metadata.voxel, t.spec.width, t.spec.height};
  } catch (const Error&) {
    take_tiff_error();  // a page 0 ooc cannot read states nothing for the others
  }
  return f;
}
// `page_w` x `page_h`: the page whose level `level_w` x `level_h` was read (the same size: no
// level).
void inherit_voxel(Metadata& m, const FirstPage& f, std::int64_t page_w, std::int64_t page_h,
                   std::int64_t level_w, std::int64_t level_h, bool volume) {
  if (m.voxel.known() || !f.voxel.known() || page_w != f.width || page_h != f.height) return;
  m.voxel = f.voxel;
  m.voxel.x *= double(page_w) / double(level_w);
  m.voxel.y *= double(page_h) / double(level_h);
  if (!volume) m.voxel.z = 0;
  m.voxel.origin +=
      level_w != page_w || level_h != page_h ? " of page 0, scaled to the level" : " of page 0";
}

std::unique_ptr<Source> open_tiff_volume(const std::string& path, int& fd, TIFF*& tif,
                                         const RawHints& hints, std::uintmax_t file_size,
                                         const std::vector<tiff_read::PageEntry>& picked, int pages,
                                         const FirstPage& page0) {
  std::vector<TiffInfo> infos;
  std::vector<std::uint64_t> dirs;
  const int level = std::max(0, hints.zarr_level);
  for (const tiff_read::PageEntry& e : picked) {
    if (!TIFFSetSubDirectory(tif, e.offset))
      throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read page " +
                                        std::to_string(e.index) + ": " + take_tiff_error());
    // --input-level: each plane's reduced level is its page's SubIFD (OME-TIFF's pyramid).
    select_level(tif, level, path, e.index);
    TiffInfo t = tiff_read::read_info(tif, path);
    t.pages = pages;
    tiff_read::check_chunks(tif, t, path, file_size);
    infos.push_back(std::move(t));
    dirs.push_back(level > 0 ? static_cast<std::uint64_t>(TIFFCurrentDirOffset(tif)) : e.offset);
  }
  ImageSpec spec = infos[0].spec;
  spec.depth = static_cast<std::int64_t>(infos.size());
  inherit_voxel(infos[0].metadata, page0, picked.front().width, picked.front().height, spec.width,
                spec.height, true);
  validate(spec);
  check_hints(hints, spec, "the TIFF pages of '" + path + "', which say");
  const std::string range = "pages " + std::to_string(picked.front().index) + " to " +
                            std::to_string(picked.back().index) + " of " + std::to_string(pages) +
                            " as " + std::to_string(spec.depth) + " planes";
  std::string layout = tiff_read::describe_layout(infos[0], picked.front().index, level);
  layout = layout.substr(0, layout.rfind(", page ")) + ", " + range +
           (level > 0 ? ", level " + std::to_string(level) + " (SubIFD) of each" : "");
  if (const auto offset = raw_volume_offset(tif, infos, dirs)) {
    FileLayout l;
    l.spec = spec;
    l.offset = *offset;
    l.swap = infos[0].swapped && sample_bytes(spec.type) > 1;
    l.format = "tiff";
    l.layout = layout + ", read mapped";
    l.metadata = infos[0].metadata;
    TIFFClose(tif);
    tif = nullptr;
    const int owned = fd;
    fd = -1;
    return make_mapped_source(path, owned, std::move(l));
  }
  for (const TiffInfo& t : infos) check_chunk_row(t, path);
  // The pool's first handle rests on plane 0.
  if (!TIFFSetSubDirectory(tif, dirs[0]))
    throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read page " +
                                      std::to_string(picked.front().index) + ": " +
                                      take_tiff_error());
  const unsigned threads =
      static_cast<unsigned>(hints.threads > 0 ? hints.threads : default_threads());
  TIFF* first = tif;
  tif = nullptr;
  return std::make_unique<TiffChunkSource>(path, std::move(infos), std::move(dirs),
                                           picked.front().index, level, layout, first, threads);
}

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
  // --page: that page as a 2-D image, as always; otherwise the pages alike are a z-stack.
  const bool one_page = hints.page_given || hints.page != 0;
  if (one_page && !hints.pages.empty())
    throw Error(ErrorKind::usage,
                "--page reads one page as a 2-D image, --pages a z-stack's planes: give one");
  TIFF* tif = open_tiff(path, -1);
  TiffInfo t;
  int page = hints.page;
  try {
    const int pages = TIFFNumberOfDirectories(tif);
    if (hints.page >= pages)
      throw Error(ErrorKind::usage, "TIFF '" + path + "' has " + std::to_string(pages) +
                                        " page(s); --page " + std::to_string(hints.page) +
                                        " does not exist (pages count from 0)");
    const FirstPage first = first_page(tif, path);
    if (!one_page) {
      const auto picked = tiff_read::stack_planes(tif, path, hints.pages);
      if (picked.size() > 1)
        return open_tiff_volume(path, guard.fd, tif, hints, file_size, picked, pages, first);
      page = picked.front().index;
    }
    if (!TIFFSetDirectory(tif, static_cast<tdir_t>(page)))
      throw Error(ErrorKind::input, "TIFF '" + path + "': cannot read page " +
                                        std::to_string(page) + ": " + take_tiff_error());
    const int level = std::max(0, hints.zarr_level);
    const int levels = subifd_count(tif);
    std::uint32_t page_w = 0, page_h = 0;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &page_w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &page_h);
    select_level(tif, level, path, page);
    t = tiff_read::read_info(tif, path);
    t.pages = pages;
    inherit_voxel(t.metadata, first, page_w, page_h, t.spec.width, t.spec.height, false);
    t.levels = levels;
    check_hints(hints, t.spec, "the TIFF tags of '" + path + "', which say");
    tiff_read::check_chunks(tif, t, path, file_size);
    if (const auto offset = tiff_read::raw_data_offset(tif, t)) {
      FileLayout l;
      l.spec = t.spec;
      l.offset = *offset;
      l.swap = t.swapped && sample_bytes(t.spec.type) > 1;
      l.format = "tiff";
      l.layout =
          tiff_read::describe_layout(t, page, std::max(0, hints.zarr_level)) + ", read mapped";
      l.metadata = t.metadata;
      TIFFClose(tif);
      tif = nullptr;
      guard.fd = -1;
      return make_mapped_source(path, fd, std::move(l));
    }
    check_chunk_row(t, path);
  } catch (...) {
    if (tif) TIFFClose(tif);
    throw;
  }
  const unsigned threads =
      static_cast<unsigned>(hints.threads > 0 ? hints.threads : default_threads());
  const int level = std::max(0, hints.zarr_level);
  std::string layout = tiff_read::describe_layout(t, page, level);
  return std::make_unique<TiffChunkSource>(path, std::vector<TiffInfo>{std::move(t)},
                                           std::vector<std::uint64_t>{}, page, level,
                                           std::move(layout), tif, threads);
}

}  // namespace ooc
