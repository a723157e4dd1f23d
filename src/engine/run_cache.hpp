// The engine's buffers for a volume's bands on the CPU (engine.cpp): the runs of rows kept for the
// bands that read them again, and the slabs' output in 2 MiB pages.
#pragma once

#include <sys/mman.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <new>
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
struct CachedRun {
  std::unique_ptr<std::byte[]> buffer;
  std::size_t bytes = 0;  // the buffer's size
  const std::byte* data = nullptr;
};

// The last `capacity` runs asked for, by their rows (the read stage's alone: no lock). A run
// evicted is reused, with its buffer, for a later one once no band holds it: freeing and
// allocating a band's worth of rows for every plane let the allocator keep a fifth more than
// the limit resident (generated and decoded rows live in the arena).
class RunCache {
 public:
  explicit RunCache(std::size_t capacity) : capacity_(capacity) {}
  std::shared_ptr<const CachedRun> get(Source& source, std::int64_t y0, std::int64_t n) {
    const auto key = std::make_pair(y0, n);
    for (auto it = runs_.begin(); it != runs_.end(); ++it)
      if (it->first == key) {
        runs_.splice(runs_.begin(), runs_, it);
        return runs_.front().second;
      }
    std::shared_ptr<CachedRun> run;
    for (auto it = evicted_.begin(); it != evicted_.end(); ++it)
      if (it->use_count() == 1) {  // no band holds it (only the read stage adds holders)
        run = std::move(*it);
        evicted_.erase(it);
        break;
      }
    if (!run) run = std::make_shared<CachedRun>();
    const std::size_t bytes = static_cast<std::size_t>(n) * source.spec().row_bytes();
    if (run->bytes < bytes) {
      run->buffer.reset(new std::byte[bytes]);
      run->bytes = bytes;
    }
    // The read stage copies the run, one band at a time: with many threads filtering, one
    // thread's copy held them up, so the rows are copied in pieces by every thread free (a
    // decoder reads in order, from one thread).
    const std::size_t row = source.spec().row_bytes();
    const auto step = std::max<std::int64_t>(1, static_cast<std::int64_t>((256 << 10) / row));
    std::byte* to = run->buffer.get();
    if (source.parallel_reads() && n > step)
      tbb::parallel_for(std::int64_t{0}, (n + step - 1) / step, [&](std::int64_t k) {
        const std::int64_t a = k * step, m = std::min(step, n - a);
        source.read_rows(y0 + a, m, to + static_cast<std::size_t>(a) * row);
      });
    else
      source.read_rows(y0, n, to);
    run->data = to;
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
};

}  // namespace ooc::detail
