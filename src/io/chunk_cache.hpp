// The cache of decoded rows of chunks under the chunked readers (TIFF strips and tiles, Zarr
// chunks and shards). A band asks for image rows; the chunks that cover them are decoded a whole
// row of chunks at a time, into the band's buffer where the row of chunks lies wholly inside the
// band, or into an entry of this cache where it does not (the next band's halo, or rows read
// ahead). Every row of chunks is decoded once however many readers want it at once: the first
// claims it, the others wait for it.
//
// One policy: entries past a byte budget go least recently used first, and only idle ones (decoded
// and held by no reader); an entry being decoded or read is never freed under anyone. The budget
// is the source's: it is what the source declares in buffer_bytes, so the engine's memory limit
// covers it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace ooc {

class ChunkCache {
 public:
  // A row of chunks: its image rows, [top, top + count), row_bytes apart.
  struct Entry {
    std::int64_t key = 0;  // the row of chunks, in the source's array (or level)
    std::int64_t top = 0, count = 0;
    std::byte* rows = nullptr;  // the owned rows, or a reader's buffer (direct)
    bool direct = false;        // decoding straight into a reader's buffer, outside the cache
    std::unique_ptr<std::byte[]> owned;
    // Guarded by the cache's mutex: parts still to decode, the last use, and the first error.
    std::int64_t left = 0;
    std::uint64_t used = 0;
    std::exception_ptr error;
  };
  using Ptr = std::shared_ptr<Entry>;
  struct Claim {
    Ptr entry;
    bool fresh = false;  // the caller decodes its `parts` and reports each with done()
  };

  explicit ChunkCache(std::size_t row_bytes) : row_bytes_(row_bytes) {}
  ChunkCache(const ChunkCache&) = delete;
  ChunkCache& operator=(const ChunkCache&) = delete;

  // Row of chunks `key` (image rows [top, top + count)): the cached entry, made the most recently
  // used, or else a fresh one of `parts` parts to decode, into `direct` (a reader's buffer, not
  // cached) when given, or into memory of the cache's own.
  Claim claim(std::int64_t key, std::int64_t top, std::int64_t count, std::int64_t parts,
              std::byte* direct = nullptr);

  // `parts` parts of e are decoded (or failed with `error`; the first error is kept, and a failed
  // entry leaves the cache, so that a later read tries again).
  void done(const Ptr& e, std::int64_t parts, std::exception_ptr error);

  // Waits until every part of e is decoded. help, when given, runs one piece of queued decoding
  // in the waiting thread and says whether there was one.
  void wait(const Entry& e, const std::function<bool()>& help = {});

  // Frees least recently used idle entries until the cached ones hold at most `budget` bytes.
  void trim(std::uint64_t budget);

  // Waits until no part claimed from this cache is still being decoded.
  void drain();

  // Copies the rows of e inside [y0, y0 + n) to dst (image row y0 first).
  void copy_out(const Entry& e, std::int64_t y0, std::int64_t n, std::byte* dst) const;

 private:
  std::size_t row_bytes_;
  std::mutex mutex_;
  std::condition_variable decoded_;
  std::map<std::int64_t, Ptr> entries_;
  std::uint64_t bytes_ = 0;   // of the cached entries
  std::uint64_t tick_ = 0;    // the clock of Entry::used
  std::int64_t pending_ = 0;  // parts claimed and not done
};

}  // namespace ooc
