// ooc_gpu_stages' host-side stages (gpu_stages.hpp): the page-cache read into pinned memory (by
// pread, a mapping, or pages registered with the driver), the output write, and making pinned
// buffers.
#include <cuda_runtime.h>
#include <emmintrin.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "gpu_stages.hpp"
#include "ooc/error.hpp"

namespace gpu_stages {

// Stage 1a. The file once through a plain read() loop, so that it is in the page cache.
void stage_warmup(const Options& o, Report& rep) {
  const std::string& path = o.file;
  Fd fd(::open(path.c_str(), O_RDONLY));
  if (fd.get() < 0) throw Error(ErrorKind::input, io_message("cannot open", path, errno));
  constexpr std::size_t kChunk = std::size_t{16} << 20;
  std::unique_ptr<char[]> buf(new char[kChunk]);
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.get(), kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrorKind::io, io_message("read failed on", path, errno));
    if (n == 0) break;
    total += n;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.row("read-warmup", static_cast<double>(total) / s / kGB, 1, s * 1e3, -1,
          static_cast<double>(total),
          "first pass, 1 thread, read() into 16 MiB pageable buffer (fills the page cache)");
}

// Stage 1b. `repeats` passes over the file band by band into one pinned band buffer, each band
// split into T slices read in parallel with pread; threads meet at a barrier after each band.
// With copies, H2D and D2H of band-sized buffers run all the while (CopyLoad).
// Copies n bytes with non-temporal stores (no read for ownership of the destination's lines);
// dst and src 16-byte aligned, n a multiple of 16 (the read stage's slices are 4 KiB multiples
// but the last).
static void copy_nt(std::byte* dst, const std::byte* src, std::size_t n) {
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_load_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_load_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_load_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  std::memcpy(dst + i, src + i, n - i);
  _mm_sfence();
}

// The start of slice i of T of a band of len bytes (slice T: the end), on 4 KiB multiples.
static std::int64_t slice_edge(std::int64_t len, int T, int i) {
  return i == T ? len : (len * i / T) & ~std::int64_t{4095};
}

void stage_read(const Options& o, std::int64_t file_bytes, PinnedBuffer& band, int T, bool copies,
                const std::string& method, Report& rep) {
  const std::string& path = o.file;
  Fd fd(::open(path.c_str(), O_RDONLY));
  if (fd.get() < 0) throw Error(ErrorKind::input, io_message("cannot open", path, errno));
  const std::int64_t band_bytes = static_cast<std::int64_t>(band.size());
  const std::int64_t nbands = (file_bytes + band_bytes - 1) / band_bytes;
  std::vector<double> ms, dma_gbps;
  for (int rep_i = 0; rep_i < o.repeats; ++rep_i) {
    std::unique_ptr<CopyLoad> load;
    if (copies) {
      load = std::make_unique<CopyLoad>(o.device, band.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the loop under way
    }
    const double dma0 = load ? load->bytes() : 0;
    std::barrier sync(T);
    std::atomic<int> error{0};
    const auto t0 = std::chrono::steady_clock::now();
    // mmap methods: the whole file mapped in each pass, so that the page faults are counted.
    const std::byte* map = nullptr;
    if (method != "pread") {
      void* m =
          ::mmap(nullptr, static_cast<std::size_t>(file_bytes), PROT_READ, MAP_SHARED, fd.get(), 0);
      if (m == MAP_FAILED) throw Error(ErrorKind::io, io_message("cannot map", path, errno));
      map = static_cast<const std::byte*>(m);
    }
    std::vector<std::thread> pool;
    for (int t = 0; t < T; ++t) {
      pool.emplace_back([&, t] {
        for (std::int64_t b = 0; b < nbands; ++b) {
          const std::int64_t off = b * band_bytes;
          const std::int64_t len = std::min(band_bytes, file_bytes - off);
          std::int64_t pos = slice_edge(len, T, t);
          const std::int64_t end = slice_edge(len, T, t + 1);
          if (map && method == "mmap-nt") {
            copy_nt(band.data() + pos, map + off + pos, static_cast<std::size_t>(end - pos));
            pos = end;
          } else if (map) {
            std::memcpy(band.data() + pos, map + off + pos, static_cast<std::size_t>(end - pos));
            pos = end;
          }
          while (pos < end && error.load(std::memory_order_relaxed) == 0) {
            const ssize_t n = ::pread(fd.get(), band.data() + pos,
                                      static_cast<std::size_t>(end - pos), off + pos);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
              int expected = 0;
              error.compare_exchange_strong(expected, n < 0 ? errno : EIO);
              break;
            }
            pos += n;
          }
          sync.arrive_and_wait();
        }
      });
    }
    for (auto& th : pool) th.join();
    if (map) ::munmap(const_cast<std::byte*>(map), static_cast<std::size_t>(file_bytes));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (load) {
      dma_gbps.push_back((load->bytes() - dma0) / s / kGB);
      const std::string err = load->error();
      if (!err.empty()) throw Error(ErrorKind::device, "the copy load failed: " + err);
    }
    if (error.load() != 0)
      throw Error(ErrorKind::io, io_message("pread failed on", path, error.load()));
    ms.push_back(s * 1e3);
  }
  const double bytes = static_cast<double>(file_bytes);
  const std::string suffix = method == "pread" ? "" : "-" + method;
  rep.row((copies ? "read+copies" : "read") + suffix, median(gbps_of(ms, bytes)), o.repeats,
          median(ms), -1, bytes,
          "page cache -> pinned band buffer (" + fmt("%.1f", band_bytes / 1e6) + " MB), " +
              std::to_string(T) + " threads " +
              (method == "pread"  ? std::string("pread")
               : method == "mmap" ? std::string("memcpy from the mapped file")
                                  : std::string("non-temporal copy from the mapped file")) +
              ", " + std::to_string(nbands) + " bands, whole file " + fmt("%.2f", bytes / kGB) +
              " GB" +
              (copies ? "; meanwhile H2D + D2H of band-sized buffers without pause: " +
                            fmt("%.1f", median(dma_gbps)) + " GB/s both ways together"
                      : std::string()));
}

// Stage 1c. No copy on the host: the file mapped once per pass, each band's pages registered with
// the driver read-only (pinning page-cache pages; T threads register a slice each, the next band
// while this band's H2D runs) and copied to the device straight from them, then unregistered.
// With copies: a band-sized D2H into pinned memory alongside each band, as the pipeline's copy
// out. The question it answers: does pinning cost less than the pack's memcpy?
void stage_register(const Options& o, std::int64_t file_bytes, std::size_t band_size, int T,
                    bool copies, Report& rep) {
  const std::string name = copies ? "read+d2h-register" : "read-register";
  int ro = 0, pageable = 0, host_pt = 0;
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, o.device));
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, o.device));
  OOC_CUDA_TRY(cudaDeviceGetAttribute(&host_pt, cudaDevAttrPageableMemoryAccessUsesHostPageTables,
                                      o.device));
  const std::string attrs = "(device: read-only register " + std::to_string(ro) +
                            ", pageable access " + std::to_string(pageable) +
                            ", via host page tables " + std::to_string(host_pt) + ")";
  if (!ro) {
    rep.row(name, -1, 0, -1, -1, -1, "skipped: no read-only host register " + attrs);
    return;
  }
  const std::string& path = o.file;
  Fd fd(::open(path.c_str(), O_RDONLY));
  if (fd.get() < 0) throw Error(ErrorKind::input, io_message("cannot open", path, errno));
  const std::int64_t band_bytes = static_cast<std::int64_t>(band_size) & ~std::int64_t{4095};
  const std::int64_t nbands = (file_bytes + band_bytes - 1) / band_bytes;
  DeviceBuffer d_in0(o.device, static_cast<std::size_t>(band_bytes)),
      d_in1(o.device, static_cast<std::size_t>(band_bytes)),
      d_out(o.device, static_cast<std::size_t>(band_bytes));
  PinnedBuffer h_out(copies ? static_cast<std::size_t>(band_bytes) : 0);
  std::byte* d_in[2] = {d_in0.data(), d_in1.data()};
  Stream s, s2;
  Event done[2];
  std::vector<double> ms, reg_ms, unreg_ms;
  std::string failure;
  for (int rep_i = 0; rep_i < o.repeats && failure.empty(); ++rep_i) {
    const auto t0 = std::chrono::steady_clock::now();
    void* m =
        ::mmap(nullptr, static_cast<std::size_t>(file_bytes), PROT_READ, MAP_SHARED, fd.get(), 0);
    if (m == MAP_FAILED) throw Error(ErrorKind::io, io_message("cannot map", path, errno));
    std::byte* map = static_cast<std::byte*>(m);
    // Slice t of band b: [lo, hi) bytes of the file, on 4 KiB multiples.
    auto slice = [&](std::int64_t b, int t, std::int64_t& lo, std::int64_t& hi) {
      const std::int64_t off = b * band_bytes, len = std::min(band_bytes, file_bytes - off);
      lo = off + slice_edge(len, T, t);
      hi = off + slice_edge(len, T, t + 1);
    };
    // registered[b % 3][t]: whether slice t of band b is registered (three bands at most: one
    // being registered, one in flight, one waiting to be unregistered).
    std::vector<std::vector<char>> registered(3, std::vector<char>(static_cast<std::size_t>(T)));
    std::mutex fail_mutex;
    std::atomic<double> reg_s{0};
    std::barrier sync(T + 1);
    std::vector<std::thread> pool;
    for (int t = 0; t < T; ++t) {
      pool.emplace_back([&, t] {
        for (std::int64_t b = 0; b < nbands; ++b) {
          std::int64_t lo = 0, hi = 0;
          slice(b, t, lo, hi);
          const auto r0 = std::chrono::steady_clock::now();
          bool ok = hi <= lo;
          if (!ok) {
            const cudaError_t e = cudaHostRegister(map + lo, static_cast<std::size_t>(hi - lo),
                                                   cudaHostRegisterReadOnly);
            ok = e == cudaSuccess;
            if (!ok) {
              (void)cudaGetLastError();
              std::lock_guard<std::mutex> lock(fail_mutex);
              if (failure.empty())
                failure =
                    std::string("cudaHostRegister(read-only) failed: ") + cudaGetErrorString(e);
            }
          }
          if (t == 0)
            reg_s.store(
                reg_s.load() +
                std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count());
          registered[static_cast<std::size_t>(b % 3)][static_cast<std::size_t>(t)] = ok && hi > lo;
          sync.arrive_and_wait();
        }
      });
    }
    double unreg_s = 0;
    auto unregister = [&](std::int64_t b) {
      OOC_CUDA_TRY(cudaEventSynchronize(done[b % 2].get()));
      const auto u0 = std::chrono::steady_clock::now();
      for (int t = 0; t < T; ++t) {
        char& on = registered[static_cast<std::size_t>(b % 3)][static_cast<std::size_t>(t)];
        if (!on) continue;
        std::int64_t lo = 0, hi = 0;
        slice(b, t, lo, hi);
        OOC_CUDA_TRY(cudaHostUnregister(map + lo));
        on = 0;
      }
      unreg_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - u0).count();
    };
    for (std::int64_t b = 0; b < nbands; ++b) {
      sync.arrive_and_wait();  // band b registered; the workers go on to band b + 1
      std::byte* dst = d_in[b % 2];
      for (int t = 0; t < T && failure.empty(); ++t) {
        std::int64_t lo = 0, hi = 0;
        slice(b, t, lo, hi);
        if (hi > lo)
          OOC_CUDA_TRY(cudaMemcpyAsync(dst + (lo - b * band_bytes), map + lo,
                                       static_cast<std::size_t>(hi - lo), cudaMemcpyHostToDevice,
                                       s.get()));
      }
      OOC_CUDA_TRY(cudaEventRecord(done[b % 2].get(), s.get()));
      if (copies)
        OOC_CUDA_TRY(cudaMemcpyAsync(h_out.data(), d_out.data(), h_out.size(),
                                     cudaMemcpyDeviceToHost, s2.get()));
      if (b > 0) unregister(b - 1);
    }
    for (auto& th : pool) th.join();
    if (nbands > 0) unregister(nbands - 1);
    OOC_CUDA_TRY(cudaStreamSynchronize(s2.get()));
    ::munmap(m, static_cast<std::size_t>(file_bytes));
    ms.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() *
                 1e3);
    reg_ms.push_back(reg_s.load() * 1e3 / static_cast<double>(nbands));
    unreg_ms.push_back(unreg_s * 1e3 / static_cast<double>(nbands));
  }
  if (!failure.empty()) {
    rep.row(name, -1, 0, -1, -1, -1, "failed: " + failure + " " + attrs);
    return;
  }
  const double bytes = static_cast<double>(file_bytes);
  rep.row(name, median(gbps_of(ms, bytes)), o.repeats, median(ms), -1, bytes,
          "page cache -> device, no host copy: bands of " + fmt("%.1f", band_bytes / 1e6) +
              " MB of the mapping registered read-only by " + std::to_string(T) +
              " threads (per band: register " + fmt("%.2f", median(reg_ms)) +
              " ms by thread 0's slice, unregister " + fmt("%.2f", median(unreg_ms)) +
              " ms, all slices, one thread), H2D from the registered pages" +
              (copies ? std::string(", and a band-sized D2H alongside") : std::string()) +
              ", whole file " + fmt("%.2f", bytes / kGB) + " GB " + attrs);
}

// Stage 6. The pinned output band written with pwrite, again and again, until as many bytes as
// the input file are written, then fsync; a fresh file each repeat; deleted at the end.
void stage_write(const Options& o, std::int64_t total, const PinnedBuffer& band, Report& rep) {
  const std::string path = o.file + ".stagewrite";
  struct Remove {
    const std::string& p;
    ~Remove() { ::unlink(p.c_str()); }
  } remove_at_end{path};
  const std::int64_t band_bytes = static_cast<std::int64_t>(band.size());
  std::vector<double> ms;
  for (int rep_i = 0; rep_i < o.repeats; ++rep_i) {
    ::unlink(path.c_str());
    const auto t0 = std::chrono::steady_clock::now();
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    if (fd.get() < 0) throw Error(ErrorKind::io, io_message("cannot create", path, errno));
    std::int64_t done = 0;
    while (done < total) {
      const std::int64_t len = std::min(band_bytes, total - done);
      std::int64_t pos = 0;
      while (pos < len) {
        const ssize_t n =
            ::pwrite(fd.get(), band.data() + pos, static_cast<std::size_t>(len - pos), done + pos);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error(ErrorKind::io, io_message("pwrite failed on", path, errno));
        pos += n;
      }
      done += len;
    }
    if (::fsync(fd.get()) != 0) throw Error(ErrorKind::io, io_message("fsync failed", path, errno));
    if (::close(fd.release()) != 0)
      throw Error(ErrorKind::io, io_message("close failed", path, errno));
    ms.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() *
                 1e3);
  }
  const double bytes = static_cast<double>(total);
  rep.row("write", median(gbps_of(ms, bytes)), o.repeats, median(ms), -1, bytes,
          "pinned output band (" + fmt("%.1f", band_bytes / 1e6) + " MB) -> pwrite, 1 thread, " +
              fmt("%.2f", bytes / kGB) + " GB then fsync (included), to " + path);
}

// Stage 0 (on request). What a pinned buffer costs to make and free, and whether the way it was
// made changes the H2D rate: cudaHostAlloc (holds the driver's lock while the kernel fills it);
// the engine's slots (anonymous memory on transparent huge pages, populated, then registered);
// malloc + memset + cudaHostRegister (4 KiB pages).
void stage_pinned(const Options& o, Report& rep) {
  using Clock = std::chrono::steady_clock;
  auto secs = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  cudaStream_t stream = nullptr;
  OOC_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const std::size_t mib : {64, 256, 1024, 4096}) {
    const std::size_t n = mib << 20;
    DeviceBuffer dev(o.device, n);
    for (const std::string way :
         {"cudaHostAlloc", "ring slot (THP + register)", "malloc + register"}) {
      std::vector<double> make, free_, h2d;
      for (int rep_i = 0; rep_i < 3; ++rep_i) {
        void* p = nullptr;
        std::unique_ptr<PinnedBuffer> slot;
        auto t0 = Clock::now();
        if (way == "cudaHostAlloc") {
          OOC_CUDA_TRY(cudaHostAlloc(&p, n, cudaHostAllocPortable));
        } else if (way == "malloc + register") {
          p = std::malloc(n);
          if (!p) throw std::bad_alloc();
          std::memset(p, 0, n);
          OOC_CUDA_TRY(cudaHostRegister(p, n, cudaHostRegisterPortable));
        } else {
          slot = std::make_unique<PinnedBuffer>(n);
          p = slot->data();
        }
        make.push_back(secs(t0));
        t0 = Clock::now();
        OOC_CUDA_TRY(cudaMemcpyAsync(dev.data(), p, n, cudaMemcpyHostToDevice, stream));
        OOC_CUDA_TRY(cudaStreamSynchronize(stream));
        h2d.push_back(static_cast<double>(n) / 1e9 / secs(t0));
        t0 = Clock::now();
        if (way == "cudaHostAlloc") {
          OOC_CUDA_TRY(cudaFreeHost(p));
        } else if (way == "malloc + register") {
          OOC_CUDA_TRY(cudaHostUnregister(p));
          std::free(p);
        } else {
          slot.reset();
        }
        free_.push_back(secs(t0));
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      const double m = median(make);
      rep.row("pinned", static_cast<double>(n) / 1e9 / m, 3, m * 1e3, -1, static_cast<double>(n),
              way + ", " + std::to_string(mib) + " MiB: make " + fmt("%.1f", m * 1e3) +
                  " ms, free " + fmt("%.1f", median(free_) * 1e3) + " ms, then H2D " +
                  fmt("%.1f", median(h2d)) + " GB/s (GB/s column: bytes made per second)");
    }
  }
  OOC_CUDA_TRY(cudaStreamDestroy(stream));
}

}  // namespace gpu_stages
