// The engine's buffers for a volume's bands on the CPU (engine.cpp): the runs of rows kept for the
// bands that read them again, and the slabs' output in 2 MiB pages.
#pragma once

#include <sys/mman.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "ooc/io.hpp"

namespace ooc::detail {

// Anonymous memory in 2 MiB pages where the kernel gives them (transparent huge pages on
// request): a slab's output buffers are hundreds of MiB written once a run, and faulting them in
// 4 KiB at a time cost more system time than the filter's reads.
struct HugeBuffer {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit HugeBuffer(std::size_t n) : bytes(n) {
    p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    ::madvise(p, n, MADV_HUGEPAGE);
#endif
  }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  ~HugeBuffer() {
    ::munmap(p, bytes);
  }
  std::byte* data() const {
    return static_cast<std::byte*>(p);
  }
};

// Rows a source gave for one plane of a band, kept for the bands after it that read the same
// rows: a volume's band reads its rows in 2R + 1 planes, each plane's rows again for the next 2R
// planes' bands. Mapping (or decoding) them once instead of 2R + 1 times, and faulting their pages
// in once, made a 13-plane z pass 3x faster. They are copied (Source::read_rows) into buffers used
// again and again rather than mapped: the z pass reads each of them 2R + 1 times, and reading
// freshly mapped file pages (a page table entry each, set up as they fault in) cost the z pass 2x
// the reads of memory the process already uses, where mapping and faulting are dear (a VM).
//
// A run is copied in pieces that anyone may take: tasks the read stage starts when it asks for the
// run, and the band that needs it, which takes what is left and then waits for pieces under way.
// Copied in the serial read stage, the runs set the pace of a 16-thread z pass (4 of 4 s); a band
// never waits on a piece nobody copies, so the filling cannot stall the pipeline.
struct CachedRun {
  std::unique_ptr<std::byte[]> buffer;
  std::size_t bytes = 0;  // the buffer's size
  const std::byte* data = nullptr;
  Source* source = nullptr;
  std::int64_t y0 = 0, n = 0, step = 0, pieces = 0;
  mutable std::atomic<std::int64_t> next{0}, done{0};
  mutable std::atomic<bool> failed{false};
  mutable std::exception_ptr error;

  // Copies pieces until none is left to take.
  void fill() const {
    const std::size_t row = source->spec().row_bytes();
    for (std::int64_t k; (k = next.fetch_add(1)) < pieces;) {
      const std::int64_t a = k * step, m = std::min(step, n - a);
      try {
        // Isolated: a source that reads with tasks of its own (synth:) must not, while it waits
        // for them, take up a band that would wait for the piece this thread holds.
        if (!failed.load())
          tbb::this_task_arena::isolate(
              [&] { source->read_rows(y0 + a, m, buffer.get() + a * row); });
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();  // the first error
      }
      done.fetch_add(1);  // after `error`: a waiter reads it once every piece is done
    }
  }
  // The rows are there (or the copy's error is thrown).
  void wait() const {
    fill();
    while (done.load(std::memory_order_acquire) < pieces) std::this_thread::yield();
    if (failed.load()) std::rethrow_exception(error);
  }
};

// The last `capacity` runs asked for, by their rows (the read stage's alone: no lock). A run
// evicted is reused, with its buffer, for a later one once no band holds it: freeing and
// allocating a band's worth of rows for every plane let the allocator keep a fifth more than
// the limit resident (generated and decoded rows live in the arena).
class RunCache {
 public:
  explicit RunCache(std::size_t capacity) : capacity_(capacity) {}
  ~RunCache() { drain(); }
  // Waits for the copying tasks; call it inside the arena that ran them (the pipeline's): a
  // thread outside it cannot run what is left of them, and with one thread nobody else would.
  void drain() { tasks_.wait(); }
  RunCache(const RunCache&) = delete;
  RunCache& operator=(const RunCache&) = delete;

  // The run, whose copy has started (CachedRun::wait before reading it).
  std::shared_ptr<const CachedRun> get(Source& source, std::int64_t y0, std::int64_t n) {
    const auto key = std::make_pair(y0, n);
    for (auto it = runs_.begin(); it != runs_.end(); ++it)
      if (it->first == key) {
        runs_.splice(runs_.begin(), runs_, it);
        return runs_.front().second;
      }
    std::shared_ptr<CachedRun> run;
    for (auto it = evicted_.begin(); it != evicted_.end(); ++it)
      if (it->use_count() == 1) {  // no band (nor copying task) holds it
        run = std::move(*it);
        evicted_.erase(it);
        break;
      }
    if (!run) run = std::make_shared<CachedRun>();
    const std::size_t row = source.spec().row_bytes();
    const std::size_t bytes = static_cast<std::size_t>(n) * row;
    if (run->bytes < bytes) {
      run->buffer.reset(new std::byte[bytes]);
      run->bytes = bytes;
    }
    run->data = run->buffer.get();
    run->source = &source;
    run->y0 = y0;
    run->n = n;
    // Pieces of 256 KiB; a decoder reads in order, from one thread: one piece, copied here.
    const bool parallel = source.parallel_reads();
    run->step =
        parallel ? std::max<std::int64_t>(1, static_cast<std::int64_t>((256 << 10) / row)) : n;
    run->pieces = (n + run->step - 1) / run->step;
    run->next.store(0);
    run->done.store(0);
    run->failed.store(false);
    run->error = nullptr;
    if (parallel) {
      const std::int64_t helpers = std::min<std::int64_t>(run->pieces, 4);
      for (std::int64_t i = 0; i < helpers; ++i) tasks_.run([run] { run->fill(); });
    } else {
      run->wait();
    }
    runs_.emplace_front(key, run);
    if (runs_.size() > capacity_) {
      evicted_.push_back(std::move(runs_.back().second));
      runs_.pop_back();
    }
    return run;
  }

 private:
  std::size_t capacity_;
  std::list<std::pair<std::pair<std::int64_t, std::int64_t>, std::shared_ptr<CachedRun>>> runs_;
  std::vector<std::shared_ptr<CachedRun>> evicted_;  // at most the bands in flight hold them
  tbb::task_group tasks_;
};

}  // namespace ooc::detail
