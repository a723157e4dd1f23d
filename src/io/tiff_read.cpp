// Reading TIFF and BigTIFF through libtiff, band by band. Uncompressed chunky strips that lie in
// file order are a raw image at an offset and are read mapped, like raw files. Every other layout
// (tiles, compression, separate planes, scattered strips) is decoded strip by strip or tile by tile
// by a set of decode threads, each with its own libtiff handle (one handle is not thread-safe),
// ahead of the reader, into a small cache of decoded rows of blocks: strips or tiles that
// straddle two bands are decoded once.
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
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
      : path_(std::move(path)),
        t_(std::move(info)),
        page_(page),
        pool_(path_, page, level),
        cache_(t_.spec.row_bytes()) {
    pool_.adopt(first);
    layout_ = tiff_read::describe_layout(t_, page_, level);
    // Rows of blocks decoded ahead: two blocks per thread, within kMaxAheadBytes.
    const std::uint64_t row_bytes = block_row_bytes();
    const std::int64_t per_row = t_.across * t_.planes;
    ahead_ = std::clamp<std::int64_t>((2 * threads + per_row - 1) / per_row, 1,
                                      std::max<std::int64_t>(1, kMaxAheadBytes / row_bytes));
    slack_ = std::clamp<std::int64_t>(static_cast<std::int64_t>(kMaxAheadBytes / row_bytes), 1, 8);
    threads_ = threads;
    decoders_ = std::make_unique<DecodeThreads>(threads);
  }
  // Decodes still queued become no-ops; the ones running finish first: none may outlive us.
  ~TiffChunkSource() override {
    closing_ = true;
    cache_.drain();
  }

  const ImageSpec& spec() const noexcept override { return t_.spec; }
  std::string describe() const override { return "tiff '" + path_ + "' " + t_.spec.describe(); }
  std::string layout() const override { return layout_; }
  const Metadata& metadata() const noexcept override { return t_.metadata; }

  // Rows of blocks cached: those the readers hold, the ones read ahead, and the slack kept for
  // readers in other threads; and per decode thread the stored block and the decoded one.
  std::size_t buffer_bytes(std::int64_t band_rows, int readers) const override {
    const std::uint64_t block_row = block_row_bytes();
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
    std::vector<ChunkCache::Ptr> need;
    const std::int64_t last = std::min(cy1 + ahead_, t_.down - 1);
    for (std::int64_t cy = cy0; cy <= last; ++cy) {
      const std::int64_t top = cy * t_.chunk_h;
      const bool inside = cy <= cy1 && top >= y0 && top + t_.rows_in(cy) <= y0 + n;
      auto c = claim(cy, inside ? dst + (top - y0) * row : nullptr);
      if (cy <= cy1) need.push_back(std::move(c));
    }
    // The rows just asked for, the ones ahead, and some slack for readers in other threads.
    cache_.trim(static_cast<std::uint64_t>(cy1 - cy0 + 1 + ahead_ + slack_) * block_row_bytes());
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
    if (y0 < 0 || y0 >= t_.spec.height) return;
    const std::uint64_t block_row = block_row_bytes();
    const std::uint64_t decoding =
        threads_ * (t_.largest_chunk + (t_.tiled ? t_.chunk_bytes(0) : 0));
    if (block_row + decoding > max_bytes) return;
    const std::int64_t rows = static_cast<std::int64_t>((max_bytes - decoding) / block_row);
    const std::int64_t cy0 = y0 / t_.chunk_h;
    const std::int64_t last = std::min({cy0 + ahead_, cy0 + rows - 1, t_.down - 1});
    for (std::int64_t cy = cy0; cy <= last; ++cy) claim(cy, nullptr);
  }

 private:
  std::uint64_t block_row_bytes() const {
    return t_.spec.row_bytes() * static_cast<std::uint64_t>(t_.chunk_h);
  }

  // Row of blocks cy from the cache, or else its decode queued: into `direct` (its image rows in
  // a reader's buffer) when given, into the cache otherwise.
  ChunkCache::Ptr claim(std::int64_t cy, std::byte* direct) {
    const std::int64_t blocks = t_.across * t_.planes;
    auto [c, fresh] = cache_.claim(cy, cy * t_.chunk_h, t_.rows_in(cy), blocks, direct);
    if (!fresh) return c;
    std::vector<std::function<void()>> jobs;
    for (std::int64_t k = 0; k < blocks; ++k)
      jobs.emplace_back([this, c, k] {
        std::exception_ptr error;
        try {
          if (!closing_) decode_into(c->key, k, c->rows);
        } catch (...) {
          error = std::current_exception();
        }
        cache_.done(c, 1, error);
      });
    decoders_->post(std::move(jobs));
    return c;
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
  std::atomic<bool> closing_ = false;
  ChunkCache cache_;
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
    t = tiff_read::read_info(tif, path);
    t.pages = pages;
    t.levels = levels;
    check_hints(hints, t.spec, "the TIFF tags of '" + path + "', which say");
    tiff_read::check_chunks(tif, t, path, file_size);
    if (const auto offset = tiff_read::raw_data_offset(tif, t)) {
      FileLayout l;
      l.spec = t.spec;
      l.offset = *offset;
      l.swap = t.swapped && sample_bytes(t.spec.type) > 1;
      l.format = "tiff";
      l.layout = tiff_read::describe_layout(t, hints.page, std::max(0, hints.zarr_level)) +
                 ", read mapped";
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
