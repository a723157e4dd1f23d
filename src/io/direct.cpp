// Direct I/O (see direct.hpp): aligned buffers, requests split over a few threads, the unaligned
// ends of a range through bounce buffers (reads) or the buffered descriptor (writes).
#include "direct.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <new>
#include <tuple>

#include "formats.hpp"
#include "ooc/error.hpp"

namespace ooc::direct {

void FreeDeleter::operator()(std::byte* p) const noexcept {
  std::free(p);
}

AlignedBytes allocate_aligned(std::size_t bytes) {
  void* p = std::aligned_alloc(kAlign, align_up(std::max<std::size_t>(bytes, 1)));
  if (!p) throw std::bad_alloc();
  return AlignedBytes(static_cast<std::byte*>(p));
}

int open_direct(const std::string& path, int flags) {
  return ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC);
}

int reopen_direct(int fd, int flags) {
  // Not a dup: O_DIRECT belongs to the open file description, which the buffered writes share.
  return open_direct("/proc/self/fd/" + std::to_string(fd), flags);
}

double resident_fraction(int fd, std::uint64_t offset, std::uint64_t bytes) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t first = offset / page, last = (offset + bytes + page - 1) / page;
  if (last <= first) return 1;
  // 256 windows of 16 pages spread over the range: cheap for 64 GiB, fair for partial caching.
  constexpr std::uint64_t kWindows = 256, kPages = 16;
  const std::uint64_t pages = last - first;
  std::uint64_t seen = 0, in = 0;
  std::vector<unsigned char> vec(kPages);
  for (std::uint64_t w = 0; w < kWindows; ++w) {
    const std::uint64_t at = first + pages * w / kWindows;
    const std::uint64_t n = std::min(kPages, last - at);
    if (w > 0 && at == first + pages * (w - 1) / kWindows) continue;  // a small range
    void* m = ::mmap(nullptr, n * page, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(at * page));
    if (m == MAP_FAILED) return 1;
    const int rc = ::mincore(m, n * page, vec.data());
    ::munmap(m, n * page);
    if (rc != 0) return 1;
    for (std::uint64_t i = 0; i < n; ++i) in += vec[i] & 1;
    seen += n;
  }
  return seen ? static_cast<double>(in) / static_cast<double>(seen) : 1;
}

std::uint64_t memory_budget() {
  std::uint64_t mem = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                      static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  // The limit of this process's memory cgroup: v2 ("0::/path", memory.max, "max" when
  // unlimited) or v1 ("N:memory:/path", memory.limit_in_bytes). A parent's lower limit is not
  // looked for: Slurm sets it on the job's own group.
  std::vector<std::string> files;
  if (std::ifstream cg("/proc/self/cgroup"); cg) {
    for (std::string line; std::getline(cg, line);) {
      if (line.rfind("0::", 0) == 0)
        files.push_back("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
      const auto m = line.find(":memory:");
      if (m != std::string::npos)
        files.push_back("/sys/fs/cgroup/memory" + line.substr(m + 8) + "/memory.limit_in_bytes");
    }
  }
  for (const std::string& f : files) {
    std::ifstream in(f);
    unsigned long long v = 0;
    if (in >> v && v > 0 && v < mem) mem = v;
  }
  return mem / 2;
}

// ---------------------------------------------------------------------------------------------

struct Workers::Batch {
  const std::function<void(std::size_t)>* task;
  std::size_t n, next = 0, done = 0;
  std::exception_ptr error;
  std::condition_variable finished;
};

Workers::Workers(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

Workers::~Workers() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void Workers::run(std::size_t n, const std::function<void(std::size_t)>& task) {
  if (n == 0) return;
  if (n == 1) return task(0);
  auto b = std::make_shared<Batch>();
  b->task = &task;
  b->n = n;
  std::unique_lock lock(mutex_);
  batches_.push_back(b);
  wake_.notify_all();
  // The caller takes pieces too; then waits for those the workers took.
  while (b->next < b->n) {
    const std::size_t i = b->next++;
    if (b->next == b->n) batches_.erase(std::find(batches_.begin(), batches_.end(), b));
    lock.unlock();
    std::exception_ptr err;
    try {
      task(i);
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (err && !b->error) b->error = err;
    ++b->done;
  }
  b->finished.wait(lock, [&] { return b->done == b->n; });
  if (b->error) std::rethrow_exception(b->error);
}

void Workers::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !batches_.empty(); });
    if (stop_) return;
    std::shared_ptr<Batch> b = batches_.front();
    const std::size_t i = b->next++;
    if (b->next == b->n) batches_.pop_front();
    lock.unlock();
    std::exception_ptr err;
    try {
      (*b->task)(i);
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (err && !b->error) b->error = err;
    if (++b->done == b->n) b->finished.notify_all();
  }
}

// ---------------------------------------------------------------------------------------------

// Aligned buffers for the rows of CPU bands, reused band after band (a fresh buffer would be
// faulted in page by page every band).
struct Reader::Pool {
  std::mutex mutex;
  std::vector<std::pair<AlignedBytes, std::size_t>> free;  // buffer, capacity
  std::size_t held = 0;                                    // bytes of all buffers made
};

// A range being read in the background: its buffer, from which block on it is read, and the read.
struct Reader::Ahead {
  std::uint64_t offset = 0;
  std::size_t bytes = 0, skip = 0, capacity = 0;
  AlignedBytes buffer;
  std::future<void> done;
};

Reader::Reader(int direct_fd, std::string path, int threads)
    : fd_(direct_fd), path_(std::move(path)), workers_(threads), pool_(std::make_shared<Pool>()) {}

Reader::~Reader() {
  // What is read ahead uses the workers and the descriptor: done before they go.
  for (auto& a : ahead_)
    if (a->done.valid()) a->done.wait();
  ahead_.clear();
  if (fd_ >= 0) ::close(fd_);
}

std::size_t Reader::buffer_bytes() const {
  // One bounce buffer per reading thread (a worker or a caller of read()).
  return 8 * (kRequest + 2 * kAlign);
}

void Reader::read_aligned(std::uint64_t offset, std::size_t bytes, std::byte* dst,
                          std::size_t need) {
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t r = ::pread(fd_, dst + got, bytes - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      throw Error(ErrorKind::io, system_message("cannot read input (direct I/O)", path_, errno) +
                                     ": try --io mmap");
    if (r == 0) break;  // the end of the file: the last block is partial
    got += static_cast<std::size_t>(r);
    if (got % kAlign != 0) break;  // a short read stops at the end of the file
  }
  if (got < need) throw Error(ErrorKind::io, "input '" + path_ + "' became shorter while reading");
}

namespace {
// One bounce buffer per thread, kept for the thread's life.
std::byte* bounce_buffer() {
  thread_local AlignedBytes buffer = allocate_aligned(kRequest + 2 * kAlign);
  return buffer.get();
}
}  // namespace

void Reader::read_bounced(std::uint64_t offset, std::size_t bytes, std::byte* dst) {
  std::byte* b = bounce_buffer();
  const std::uint64_t a0 = align_down(offset);
  const std::size_t span = align_up(offset + bytes) - a0;
  read_aligned(a0, span, b, static_cast<std::size_t>(offset - a0) + bytes);
  std::memcpy(dst, b + (offset - a0), bytes);
}

void Reader::read(std::uint64_t offset, std::size_t bytes, std::byte* dst) {
  if (bytes == 0) return;
  drop_ahead();  // rows read this way (GPU slots after the CPU's first bands) need none of them
  const bool lined_up = (reinterpret_cast<std::uintptr_t>(dst) - offset) % kAlign == 0;
  // Pieces: the partial blocks at the ends (lined up) or everything (not) through a bounce
  // buffer, in requests of kRequest.
  std::uint64_t mid0 = offset, mid1 = offset;
  if (lined_up) {
    mid0 = std::min<std::uint64_t>(align_up(offset), offset + bytes);
    mid1 = std::max(mid0, align_down(offset + bytes));
  }
  const std::uint64_t end = offset + bytes;
  struct Piece {
    std::uint64_t offset;
    std::size_t bytes;
    bool straight;
  };
  std::vector<Piece> pieces;
  if (mid0 > offset) pieces.push_back({offset, static_cast<std::size_t>(mid0 - offset), false});
  for (std::uint64_t at = mid0; at < mid1; at += kRequest)
    pieces.push_back(
        {at, static_cast<std::size_t>(std::min<std::uint64_t>(kRequest, mid1 - at)), true});
  for (std::uint64_t at = std::max(mid1, offset); at < end && !lined_up; at += kRequest)
    pieces.push_back(
        {at, static_cast<std::size_t>(std::min<std::uint64_t>(kRequest, end - at)), false});
  if (lined_up && end > mid1 && mid1 >= mid0)
    pieces.push_back({mid1, static_cast<std::size_t>(end - mid1), false});
  workers_.run(pieces.size(), [&](std::size_t i) {
    const Piece& p = pieces[i];
    std::byte* to = dst + (p.offset - offset);
    if (p.straight)
      read_aligned(p.offset, p.bytes, to, p.bytes);
    else
      read_bounced(p.offset, p.bytes, to);
  });
}

std::pair<AlignedBytes, std::size_t> Reader::take_buffer(std::size_t span) {
  AlignedBytes buffer;
  std::size_t capacity = 0;
  {
    std::lock_guard lock(pool_->mutex);
    auto& f = pool_->free;
    auto it = std::find_if(f.begin(), f.end(), [&](const auto& b) { return b.second >= span; });
    if (it == f.end() && !f.empty()) it = f.begin();  // too small: replaced below
    if (it != f.end()) {
      buffer = std::move(it->first);
      capacity = it->second;
      f.erase(it);
    }
    if (capacity < span) {
      pool_->held -= capacity;
      pool_->held += span;
    }
  }
  if (capacity < span) {
    buffer.reset();
    buffer = allocate_aligned(span);
    capacity = span;
  }
  return {std::move(buffer), capacity};
}

std::shared_ptr<const void> Reader::hand_out(AlignedBytes buffer, std::size_t capacity) {
  // The deleter hands the buffer back; the pool outlives the source if a slot holds rows longer.
  auto pool = pool_;
  std::byte* raw = buffer.release();
  return std::shared_ptr<const void>(raw, [pool, capacity](const void* p) {
    AlignedBytes back(static_cast<std::byte*>(const_cast<void*>(p)));
    std::lock_guard lock(pool->mutex);
    pool->free.emplace_back(std::move(back), capacity);
  });
}

namespace {
// Whole blocks of a range's span that its known bytes make unnecessary to read.
std::size_t known_blocks(std::uint64_t offset, std::size_t bytes, std::size_t known_bytes) {
  if (known_bytes == 0) return 0;
  const std::size_t head = static_cast<std::size_t>(offset - align_down(offset));
  return static_cast<std::size_t>(align_down(head + std::min(known_bytes, bytes)));
}
}  // namespace

void Reader::drop_ahead() {
  std::deque<std::unique_ptr<Ahead>> dropped;
  {
    std::lock_guard lock(ahead_mutex_);
    if (ahead_.empty()) return;
    dropped.swap(ahead_);
  }
  for (auto& a : dropped) {
    try {
      a->done.get();
    } catch (...) {  // not asked for: its error does not matter
    }
    hand_out(std::move(a->buffer), a->capacity);  // back to the pool
  }
}

void Reader::read_ahead(std::uint64_t offset, std::size_t bytes, std::size_t known_bytes) {
  if (bytes == 0) return;
  {
    std::lock_guard lock(ahead_mutex_);
    if (static_cast<int>(ahead_.size()) >= kAhead) return;
    for (const auto& a : ahead_)
      if (a->offset == offset && a->bytes == bytes) return;
  }
  auto a = std::make_unique<Ahead>();
  a->offset = offset;
  a->bytes = bytes;
  const std::uint64_t a0 = align_down(offset);
  const std::size_t span = align_up(offset + bytes) - a0;
  a->skip = known_blocks(offset, bytes, known_bytes);
  auto [buffer, capacity] = take_buffer(span);
  a->buffer = std::move(buffer);
  a->capacity = capacity;
  // Its own thread: the caller returns at once, and the pieces still run on the workers beside
  // the caller's own reads (Workers takes batches from several callers).
  const std::size_t need = static_cast<std::size_t>(offset - a0) + bytes, skip = a->skip;
  std::byte* b = a->buffer.get();
  a->done = std::async(std::launch::async, [this, a0, span, skip, need, b] {
    const std::size_t n = (span - skip + kRequest - 1) / kRequest;
    workers_.run(n, [&](std::size_t i) {
      const std::size_t at = skip + i * kRequest, len = std::min(kRequest, span - at);
      read_aligned(a0 + at, len, b + at, need > at ? std::min(len, need - at) : 0);
    });
  });
  std::lock_guard lock(ahead_mutex_);
  ahead_.push_back(std::move(a));
}

std::shared_ptr<const void> Reader::read_pooled(std::uint64_t offset, std::size_t bytes,
                                                const std::byte** data, const std::byte* known,
                                                std::size_t known_bytes) {
  const std::uint64_t a0 = align_down(offset);
  const std::size_t span = align_up(offset + bytes) - a0;
  const std::size_t head = static_cast<std::size_t>(offset - a0);
  if (!known) known_bytes = 0;
  known_bytes = std::min(known_bytes, bytes);
  // Whole blocks of the span not read: those the caller holds.
  const std::size_t skip = known_blocks(offset, bytes, known_bytes);

  // Read ahead: the oldest range, if it is this one; ranges before it will not be asked for.
  std::unique_ptr<Ahead> ahead;
  {
    std::unique_lock lock(ahead_mutex_);
    while (!ahead_.empty()) {
      std::unique_ptr<Ahead> a = std::move(ahead_.front());
      ahead_.pop_front();
      if (a->offset == offset && a->bytes == bytes) {
        ahead = std::move(a);
        break;
      }
      lock.unlock();
      try {
        a->done.get();
      } catch (...) {  // not asked for: its error does not matter
      }
      hand_out(std::move(a->buffer), a->capacity);  // back to the pool at once
      lock.lock();
    }
  }
  AlignedBytes buffer;
  std::size_t capacity = 0;
  std::size_t read_from = skip, read_to = span;  // the blocks still to read
  if (ahead) {
    ahead->done.get();  // its read error is this read's
    buffer = std::move(ahead->buffer);
    capacity = ahead->capacity;
    read_to = std::max(ahead->skip, skip);  // [skip, ahead->skip): neither known nor read ahead
  } else {
    std::tie(buffer, capacity) = take_buffer(span);
  }
  std::byte* b = buffer.get();
  // The known bytes up to the block where the disk takes over (the rest of them is read again
  // with that block: the same bytes of the same file).
  const std::size_t copy_to = ahead ? std::min(skip, ahead->skip) : skip;
  if (copy_to > head) std::memcpy(b + head, known, copy_to - head);
  // Straight into the buffer, in requests side by side.
  const std::size_t need = head + bytes;
  if (read_to > read_from) {
    const std::size_t n = (read_to - read_from + kRequest - 1) / kRequest;
    workers_.run(n, [&](std::size_t i) {
      const std::size_t at = read_from + i * kRequest, len = std::min(kRequest, read_to - at);
      read_aligned(a0 + at, len, b + at, need > at ? std::min(len, need - at) : 0);
    });
  }
  *data = b + head;
  return hand_out(std::move(buffer), capacity);
}

// ---------------------------------------------------------------------------------------------

Writer::Writer(int buffered_fd, int direct_fd, std::string partial, int threads, int buffers)
    : fd_(buffered_fd), direct_fd_(direct_fd), partial_(std::move(partial)) {
  for (int i = 0; i < buffers; ++i) {
    buffers_.push_back(allocate_aligned(kRequest));
    free_.push_back(buffers_.back().get());
  }
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

Writer::~Writer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  freed_.notify_all();
  for (auto& t : threads_) t.join();
  if (direct_fd_ >= 0) ::close(direct_fd_);
}

void Writer::pwrite_all(int fd, const std::byte* p, std::size_t bytes, std::uint64_t offset) {
  while (bytes > 0) {
    const ssize_t w = ::pwrite(fd, p, bytes, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : ENOSPC;
      throw Error(ErrorKind::io, system_message("cannot write output", partial_, err) +
                                     full_hint(err) +
                                     (fd == direct_fd_ && err == EINVAL ? ": try --io mmap" : ""));
    }
    p += w;
    bytes -= static_cast<std::size_t>(w);
    offset += static_cast<std::uint64_t>(w);
  }
}

void Writer::rethrow() {
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(error_);
}

void Writer::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || next_ < queue_.size(); });
    if (stop_) return;
    Request* r = &queue_[next_++];
    const bool failed = error_ != nullptr;  // after an error, requests only give buffers back
    lock.unlock();
    std::exception_ptr err;
    if (!failed) try {
        pwrite_all(direct_fd_, r->buffer, r->bytes, r->offset);
      } catch (...) {
        err = std::current_exception();
      }
    lock.lock();
    if (err && !error_) error_ = err;
    r->done = true;
    while (!queue_.empty() && queue_.front().done) {
      if (!error_) durable_ = queue_.front().offset + queue_.front().bytes;
      free_.push_back(queue_.front().buffer);
      queue_.pop_front();
      --next_;
    }
    freed_.notify_all();
  }
}

void Writer::submit(std::size_t bytes) {
  std::unique_lock lock(mutex_);
  if (bytes > 0) {
    queue_.push_back({stretch_offset_, bytes, current_});
    wake_.notify_one();
  } else {
    free_.push_back(current_);
  }
  current_ = nullptr;
  stretch_offset_ += bytes;
  fill_ = 0;
}

void Writer::end_stretch() {
  if (!open_stretch_) return;
  // Whole blocks direct; the partial last block through the page cache (its other bytes may be
  // another part's, or past the end of the file).
  const std::size_t whole = align_down(fill_);
  const std::size_t tail = fill_ - whole;
  std::byte* buffer = current_;
  const std::uint64_t tail_at = stretch_offset_ + whole;
  if (buffer && tail > 0) {
    // Written before the buffer can be reused by a request.
    pwrite_all(fd_, buffer + whole, tail, tail_at);
  }
  if (buffer) submit(whole);
  open_stretch_ = false;
}

void Writer::write(const std::byte* p, std::size_t bytes, std::uint64_t offset) {
  rethrow();
  // A jump (never within one pass): what came before is written first, so that the durable
  // offset stays true of the new stretch.
  if (open_stretch_ && offset != stretch_offset_ + fill_) flush();
  if (!open_stretch_) {
    // The head, up to the first block boundary, through the page cache.
    const std::size_t head =
        static_cast<std::size_t>(std::min<std::uint64_t>(align_up(offset) - offset, bytes));
    if (head > 0) pwrite_all(fd_, p, head, offset);
    p += head;
    bytes -= head;
    offset += head;
    {
      std::lock_guard lock(mutex_);
      durable_ = offset;
    }
    if (bytes == 0) return;
    open_stretch_ = true;
    stretch_offset_ = offset;
    fill_ = 0;
  }
  handed_ = offset + bytes;
  while (bytes > 0) {
    if (!current_) {
      std::unique_lock lock(mutex_);
      freed_.wait(lock, [&] { return !free_.empty() || error_ || stop_; });
      if (error_) std::rethrow_exception(error_);
      current_ = free_.front();
      free_.pop_front();
    }
    const std::size_t n = std::min(bytes, kRequest - fill_);
    std::memcpy(current_ + fill_, p, n);
    fill_ += n;
    p += n;
    bytes -= n;
    if (fill_ == kRequest) submit(kRequest);
  }
}

void Writer::flush() {
  end_stretch();
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return queue_.empty() || stop_; });
  if (error_) std::rethrow_exception(error_);
  durable_ = handed_;  // the partial last block went through the page cache
}

std::uint64_t Writer::durable_offset() const {
  std::lock_guard lock(mutex_);
  return durable_;
}

}  // namespace ooc::direct
