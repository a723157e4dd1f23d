// Direct I/O (O_DIRECT) for raw and .npy files: reads and writes that bypass the page cache, so
// that a streaming pass over a file larger than memory neither copies every byte once more nor
// evicts the cached data of every other job on the node.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ooc::direct {

// Offsets, lengths and buffer addresses of O_DIRECT requests are multiples of this: a page, and a
// multiple of every logical block size in use (512 or 4096).
inline constexpr std::size_t kAlign = 4096;
// One request: large enough that the device sees long transfers (dd bs=16M's pace), small enough
// that a band splits into several requests in flight.
inline constexpr std::size_t kRequest = std::size_t{8} << 20;

inline std::uint64_t align_down(std::uint64_t v) {
  return v / kAlign * kAlign;
}
inline std::uint64_t align_up(std::uint64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

// Memory aligned to kAlign, freed with std::free.
struct FreeDeleter {
  void operator()(std::byte* p) const noexcept;
};
using AlignedBytes = std::unique_ptr<std::byte[], FreeDeleter>;
AlignedBytes allocate_aligned(std::size_t bytes);  // throws std::bad_alloc

// open(2) with O_DIRECT added; -1 with errno set where refused (EINVAL: the file system does not
// do direct I/O).
int open_direct(const std::string& path, int flags);
// A second descriptor with O_DIRECT on the file `fd` is open on (through /proc/self/fd, so the
// same file whatever its name now is); -1 with errno set where refused.
int reopen_direct(int fd, int flags);

// The fraction of a sample of the pages of bytes [offset, offset + bytes) of fd's file that are in
// the page cache (mincore over a mapping that touches nothing); 1 where it cannot tell.
double resident_fraction(int fd, std::uint64_t offset, std::uint64_t bytes);

// Half the memory this process may use: of the RAM, or of the cgroup's memory.max (a Slurm job's
// memory limit) when lower. --io auto goes direct for files larger than this.
std::uint64_t memory_budget();

// A few threads that run the pieces of a large request side by side (O_DIRECT requests are
// synchronous: several in flight need several threads). The caller runs pieces too, so that
// several callers at once (the GPU staging threads) all make progress.
class Workers {
 public:
  explicit Workers(int threads);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
  // Runs task(0) .. task(n - 1) and returns when all are done; rethrows the first error.
  void run(std::size_t n, const std::function<void(std::size_t)>& task);

 private:
  struct Batch;
  void loop();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Batch>> batches_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Reads byte ranges of a file opened with O_DIRECT. Safe to call from several threads at once.
class Reader {
 public:
  // Owns direct_fd. `path` is for messages.
  Reader(int direct_fd, std::string path, int threads = 4);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // Copies bytes [offset, offset + bytes) of the file into dst, exactly the bytes a buffered read
  // would give. Whole blocks go straight into dst where dst lines up with the file's blocks;
  // otherwise (and for the partial blocks at either end) through aligned bounce buffers.
  void read(std::uint64_t offset, std::size_t bytes, std::byte* dst);

  // Rows for the CPU path: [offset, offset + bytes) in a reused aligned buffer placed so that the
  // file's blocks land straight in it (no bounce). The buffer goes back to the pool when the last
  // copy of the returned pointer is dropped.
  // known, known_bytes: the first known_bytes of the range, held by the caller (the rows a band
  // shares with the one before): copied, and only the blocks after them read from the disk.
  std::shared_ptr<const void> read_pooled(std::uint64_t offset, std::size_t bytes,
                                          const std::byte** data, const std::byte* known = nullptr,
                                          std::size_t known_bytes = 0);
  // Starts reading, in the background, a range that a later read_pooled with the same offset and
  // bytes will ask for, with its first known_bytes known then (only the blocks after them are
  // read now). The serial read stage then finds the band's rows read, or being read, instead of
  // waiting for the disk with one band's requests in flight. A read_pooled that asks for
  // something else drops what was read ahead. At most kAhead ranges are read ahead.
  void read_ahead(std::uint64_t offset, std::size_t bytes, std::size_t known_bytes);
  static constexpr int kAhead = 4;
  // How many bands of `band_bytes` to read ahead: enough for kAheadBytes in flight (a 32 MiB band
  // read as four requests side by side already kept pace with dd), at most kAhead.
  static constexpr std::size_t kAheadBytes = std::size_t{32} << 20;
  static int ahead_bands(std::size_t band_bytes) {
    if (band_bytes == 0) return 0;
    const std::size_t n = (kAheadBytes + band_bytes - 1) / band_bytes;
    return static_cast<int>(n < std::size_t(kAhead) ? n : std::size_t(kAhead));
  }

  // Bounce buffers and pooled buffers held besides the rows handed out, at most, for the planner.
  std::size_t buffer_bytes() const;

 private:
  struct Pool;
  struct Ahead;
  // A pooled buffer of at least `span` bytes, and its capacity.
  std::pair<AlignedBytes, std::size_t> take_buffer(std::size_t span);
  std::shared_ptr<const void> hand_out(AlignedBytes buffer, std::size_t capacity);
  void drop_ahead();  // waits for what is read ahead and gives its buffers back
  // Reads the aligned range [offset, offset + bytes) into aligned dst, stopping early only past
  // the end of the file (fewer than `need` bytes read is an error).
  void read_aligned(std::uint64_t offset, std::size_t bytes, std::byte* dst, std::size_t need);
  void read_bounced(std::uint64_t offset, std::size_t bytes, std::byte* dst);

  int fd_;
  std::string path_;
  Workers workers_;
  std::shared_ptr<Pool> pool_;
  std::mutex ahead_mutex_;
  std::deque<std::unique_ptr<Ahead>> ahead_;  // in the order they will be asked for
};

// Writes a stream of rows at increasing offsets of a file: whole aligned blocks are gathered into
// aligned buffers and written with O_DIRECT by writer threads (several requests in flight) while
// the caller goes on; the partial blocks at either end of a contiguous stretch go through the
// buffered descriptor, since another part of a shared output may own the rest of those blocks (a
// direct read-modify-write would race with it). Errors are kept and thrown by the next call.
class Writer {
 public:
  // Owns direct_fd, not buffered_fd. `partial` is for messages.
  Writer(int buffered_fd, int direct_fd, std::string partial, int threads = 2, int buffers = 4);
  ~Writer();  // abandons what is queued (an error path: the temporary goes anyway)
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // From one thread, in order of offset within a stretch; a jump starts a new stretch.
  void write(const std::byte* p, std::size_t bytes, std::uint64_t offset);
  // Writes what is gathered and waits for every request; throws the first error.
  void flush();
  // The end of the bytes of the current stretch that are in the file (below it, nothing is left
  // in a buffer): what a journal may call done.
  std::uint64_t durable_offset() const;
  std::size_t buffer_bytes() const { return buffers_.size() * kRequest; }

 private:
  struct Request {
    std::uint64_t offset;
    std::size_t bytes;
    std::byte* buffer;
    bool done = false;
  };
  void submit(std::size_t bytes);  // the current buffer's first `bytes` (a multiple of kAlign)
  void end_stretch();
  void pwrite_all(int fd, const std::byte* p, std::size_t bytes, std::uint64_t offset);
  void loop();
  void rethrow();

  int fd_, direct_fd_;
  std::string partial_;
  std::vector<AlignedBytes> buffers_;
  std::byte* current_ = nullptr;  // being filled
  std::size_t fill_ = 0;
  std::uint64_t stretch_offset_ = 0;  // file offset of current_[0]
  bool open_stretch_ = false;
  mutable std::mutex mutex_;
  std::condition_variable wake_, freed_;
  std::deque<std::byte*> free_;
  std::deque<Request> queue_;  // in file order; written ones are popped from the front
  std::size_t next_ = 0;       // queue_ index of the next request to write
  std::uint64_t durable_ = 0;  // end of the contiguous written bytes of the stretch
  std::uint64_t handed_ = 0;   // end of the bytes handed to write()
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ooc::direct
