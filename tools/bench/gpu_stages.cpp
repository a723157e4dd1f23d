// ooc_gpu_stages: the ceiling of each stage of the GPU pipeline, measured on its own, for one band
// of W x B samples (plus 2 r halo rows of input): a page-cache read into pinned memory with T
// threads (for each T asked for, alone and again while H2D and D2H copies run without pause, as
// they do in the pipeline: the host memory the two share), H2D, D2H, both copies at once, the
// separable kernels alone (against a device-to-device cudaMemcpy of the same run), NPP's row +
// column filters on the same band, and pwrite + fsync of the output. The slowest of these bounds
// what the whole pipeline can reach. One line per stage, "stage GB/s (median of N)" plus details;
// --csv writes the same rows as CSV. GB = 1e9 bytes. The kernels run twice side by side on the same
// band: the path the pipeline takes (kernels specialized on the radius where there are some) and
// the generic kernels (kernels-generic); their outputs are compared byte for byte. Each kernel row
// also gives the time of its bounds over its time: memory (the DRAM bytes it must move /
// --dram-peak) and FMA (2 (2r + 1) FMAs per output pixel / the device's fp32 FMA rate, SMs x 128 x
// clock): 1.00 = at the bound. The pinned stage times making and freeing pinned host buffers of
// 64 MiB to 4 GiB three ways (cudaHostAlloc; the engine's ring slots: anonymous memory on huge
// pages, populated, then cudaHostRegister; malloc + memset + cudaHostRegister) and the H2D rate
// from each.
//
// Usage: ooc_gpu_stages --file PATH [--width 65536] [--rows 256] [--radius 16] [--type f32|u8]
//                       [--repeats 10] [--threads 8[,16...]] [--device 0] [--csv PATH]
//                       [--dram-peak 3900] [--stages read,copies,kernels,write,pinned]
//                       [--read-methods pread,mmap,mmap-nt,register]
// PATH is an existing file of at least 2 GiB (its content does not matter); it is read once
// before the read stage so that it is in the page cache. The write stage writes as many bytes to
// PATH.stagewrite and deletes it. Without --file, the read and write stages are skipped.
// Exit codes: 0 ok, 1 unexpected failure, 2 usage, 3 input file, 4 I/O, 5 no/failed GPU.
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
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "kernels/cuda/convolution/separable.cuh"
#include "ooc/error.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/pipeline.hpp"

#if defined(OOC_BENCH_HAVE_NPP)
#include <nppi_filtering_functions.h>

#include "npp_support.hpp"
#endif

namespace {

using ooc::Error;
using ooc::ErrorKind;
using ooc::SampleType;
using ooc::cuda::DeviceBuffer;
using ooc::cuda::PinnedBuffer;

constexpr const char* kProg = "ooc_gpu_stages";
constexpr double kGB = 1e9;

struct Options {
  std::int64_t width = 65536;
  std::int64_t rows = 256;
  std::int64_t radius = 16;
  SampleType type = SampleType::f32;
  int repeats = 10;
  std::vector<int> threads{8};
  std::vector<std::string> read_methods{"pread"};  // how the read stage copies the file
  std::vector<std::string> stages{"read", "copies", "kernels", "write"};  // pinned, fft: asked for
  std::vector<int> fft_kernels{63, 129, 255, 511};
  int device = 0;
  std::string file;
  std::string csv;
  double dram_peak_gbps = 3900;  // the device's DRAM bandwidth, GB/s (H200: 3.9e12 B/s)
};

const char* kUsage =
    "usage: ooc_gpu_stages --file PATH [--width 65536] [--rows 256] [--radius 16]\n"
    "                      [--type f32|u8] [--repeats 10] [--threads 8[,16...]] [--device 0]\n"
    "                      [--csv PATH] [--dram-peak 3900] [--stages read,copies,kernels,write]\n"
    "                      [--read-methods pread,mmap,mmap-nt,register]\n"
    "                      [--fft-kernels 63,129,255,511]\n"
    "Measures each GPU pipeline stage's own ceiling for one band of width x rows samples\n"
    "(input band: rows + 2 radius rows). PATH: a file of at least 2 GiB, read through the page\n"
    "cache; PATH.stagewrite is written and deleted. Without --file the read and write stages are\n"
    "skipped. --threads: the read stage's thread counts. --stages: which stages to run (copies:\n"
    "H2D, D2H, both, device-to-device; kernels: ours, NPP's; pinned, only when named: making\n"
    "pinned buffers of 64 MiB to 4 GiB three ways, and H2D from each; fft, only when named: the\n"
    "2-D convolution by FFT, as the engine runs it, on the band for each K of --fft-kernels).\n"
    "--dram-peak: the device's DRAM bandwidth in GB/s, for the kernels' memory bound.\n"
    "--read-methods: pread into the pinned buffer; mmap: the file mapped (once per pass) and\n"
    "copied with memcpy; mmap-nt: the same with non-temporal 16-byte stores; register: no copy on\n"
    "the host: each band's pages of the mapping registered read-only (T threads, a slice each)\n"
    "and sent to the device straight from the page cache (H2D, and D2H alongside with copies).\n";

std::int64_t parse_int(std::string_view opt, const std::string& v, std::int64_t lo,
                       std::int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
    throw Error(ErrorKind::usage, std::string(opt) + " wants an integer in [" + std::to_string(lo) +
                                      ", " + std::to_string(hi) + "], got '" + v + "'");
  return x;
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = v.find(',', at);
    out.push_back(v.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

bool wants(const Options& o, std::string_view stage) {
  return std::find(o.stages.begin(), o.stages.end(), stage) != o.stages.end();
}

// Returns false when --help was asked for.
bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") return false;
    std::string value;
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    } else {
      if (i + 1 >= argc) throw Error(ErrorKind::usage, arg + " needs a value (see --help)");
      value = argv[++i];
    }
    constexpr std::int64_t kBig = std::int64_t{1} << 40;
    if (arg == "--width") {
      o.width = parse_int(arg, value, 1, kBig);
    } else if (arg == "--rows") {
      o.rows = parse_int(arg, value, 1, kBig);
    } else if (arg == "--radius") {
      o.radius = parse_int(arg, value, 0, 1 << 20);
    } else if (arg == "--type") {
      if (value == "f32" || value == "float32") {
        o.type = SampleType::f32;
      } else if (value == "u8" || value == "uint8") {
        o.type = SampleType::u8;
      } else {
        throw Error(ErrorKind::usage, "--type wants f32 or u8, got '" + value + "'");
      }
    } else if (arg == "--repeats") {
      o.repeats = static_cast<int>(parse_int(arg, value, 1, 100000));
    } else if (arg == "--threads") {
      o.threads.clear();
      for (const std::string& t : split_list(value))
        o.threads.push_back(static_cast<int>(parse_int(arg, t, 1, 1024)));
    } else if (arg == "--read-methods") {
      o.read_methods = split_list(value);
      for (const std::string& m : o.read_methods)
        if (m != "pread" && m != "mmap" && m != "mmap-nt" && m != "register")
          throw Error(
              ErrorKind::usage,
              "--read-methods wants names from pread, mmap, mmap-nt, register; got '" + m + "'");
    } else if (arg == "--stages") {
      o.stages = split_list(value);
      for (const std::string& st : o.stages)
        if (st != "read" && st != "copies" && st != "kernels" && st != "write" && st != "pinned" &&
            st != "fft")
          throw Error(ErrorKind::usage,
                      "--stages wants names from read, copies, kernels, write, pinned, fft; got '" +
                          st + "'");
    } else if (arg == "--fft-kernels") {
      o.fft_kernels.clear();
      for (const std::string& k : split_list(value))
        o.fft_kernels.push_back(static_cast<int>(parse_int(arg, k, 3, 4095)));
    } else if (arg == "--device") {
      o.device = static_cast<int>(parse_int(arg, value, 0, 1024));
    } else if (arg == "--file") {
      o.file = value;
    } else if (arg == "--csv") {
      o.csv = value;
    } else if (arg == "--dram-peak") {
      char* end = nullptr;
      o.dram_peak_gbps = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(o.dram_peak_gbps > 0) || o.dram_peak_gbps > 1e6)
        throw Error(ErrorKind::usage, "--dram-peak wants GB/s in (0, 1e6], got '" + value + "'");
    } else {
      throw Error(ErrorKind::usage, "unknown option '" + arg + "' (see --help)");
    }
  }
  return true;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string io_message(const std::string& what, const std::string& path, int err) {
  return what + " '" + path + "': " + std::strerror(err);
}

// One result row: printed at once and appended to the CSV.
class Report {
 public:
  explicit Report(const std::string& csv_path) {
    if (csv_path.empty()) return;
    csv_.open(csv_path, std::ios::out | std::ios::trunc);
    if (!csv_) throw Error(ErrorKind::io, io_message("cannot write the CSV", csv_path, errno));
    csv_path_ = csv_path;
    csv_ << "stage,gb_per_s,median_of,ms,gpixel_per_s,bytes,note,mem_bound_fraction,"
            "fma_bound_fraction\n";
    csv_.flush();
  }

  // gbps < 0: not measured ("n/a"); ms, gpix and the bound fractions < 0: not applicable.
  // mem_frac, fma_frac: the time of the kernel's memory (FMA) bound over its measured time.
  void row(const std::string& stage, double gbps, int n, double ms, double gpix, double bytes,
           const std::string& note, double mem_frac = -1, double fma_frac = -1) {
    if (gbps >= 0 && mem_frac >= 0) {
      std::printf(
          "%-14s %9.2f GB/s (median of %d)  [%.2f of its memory bound, %.2f of its FMA "
          "bound]  %s\n",
          stage.c_str(), gbps, n, mem_frac, fma_frac, note.c_str());
    } else if (gbps >= 0) {
      std::printf("%-14s %9.2f GB/s (median of %d)  %s\n", stage.c_str(), gbps, n, note.c_str());
    } else {
      std::printf("%-14s %9s                    %s\n", stage.c_str(), "n/a", note.c_str());
    }
    std::fflush(stdout);
    if (!csv_.is_open()) return;
    std::string quoted;
    for (char c : note) {
      if (c == '"') quoted += '"';
      quoted += c;
    }
    auto num = [](double x, const char* f) { return x < 0 ? std::string() : fmt(f, x); };
    csv_ << stage << ',' << (gbps < 0 ? "n/a" : fmt("%.3f", gbps)) << ','
         << (gbps < 0 ? std::string() : std::to_string(n)) << ',' << num(ms, "%.4f") << ','
         << num(gpix, "%.4f") << ',' << num(bytes, "%.0f") << ",\"" << quoted << "\","
         << num(mem_frac, "%.4f") << ',' << num(fma_frac, "%.4f") << "\n";
    csv_.flush();
    if (!csv_) throw Error(ErrorKind::io, "writing the CSV '" + csv_path_ + "' failed");
  }

 private:
  std::ofstream csv_;
  std::string csv_path_;
};

class Stream {
 public:
  Stream() { OOC_CUDA_TRY(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const noexcept { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { OOC_CUDA_TRY(cudaEventCreate(&e_)); }  // with timing
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Runs enqueue(stream) once untimed, then `repeats` times between two events on `stream`;
// returns the milliseconds of each timed run.
std::vector<double> time_on_stream(cudaStream_t s, int repeats,
                                   const std::function<void(cudaStream_t)>& enqueue) {
  Event start, stop;
  enqueue(s);  // warm-up
  OOC_CUDA_TRY(cudaStreamSynchronize(s));
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    OOC_CUDA_TRY(cudaEventRecord(start.get(), s));
    enqueue(s);
    OOC_CUDA_TRY(cudaEventRecord(stop.get(), s));
    OOC_CUDA_TRY(cudaEventSynchronize(stop.get()));
    float t = 0;
    OOC_CUDA_TRY(cudaEventElapsedTime(&t, start.get(), stop.get()));
    ms.push_back(t);
  }
  return ms;
}

std::vector<double> gbps_of(const std::vector<double>& ms, double bytes) {
  std::vector<double> r;
  for (double t : ms) r.push_back(bytes / (t * 1e-3) / kGB);
  return r;
}

// Normalized Gaussian taps, sigma = radius / 3, in correlation order (symmetric anyway).
std::vector<float> gaussian_taps(std::int64_t r) {
  if (r == 0) return {1.0f};
  const double sigma = static_cast<double>(r) / 3.0;
  std::vector<double> w(static_cast<std::size_t>(2 * r + 1));
  double sum = 0;
  for (std::int64_t k = -r; k <= r; ++k) {
    const double x = static_cast<double>(k);
    w[static_cast<std::size_t>(k + r)] = std::exp(-x * x / (2 * sigma * sigma));
    sum += w[static_cast<std::size_t>(k + r)];
  }
  std::vector<float> f;
  for (double v : w) f.push_back(static_cast<float>(v / sum));
  return f;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::int64_t file_size_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorKind::input, io_message("cannot stat the --file", path, errno));
  if (!S_ISREG(st.st_mode) || st.st_size <= 0)
    throw Error(ErrorKind::input, "--file '" + path + "' is not a non-empty regular file");
  return st.st_size;
}

// H2D and D2H of one band each, on two streams, again and again until stop is set: the DMA
// traffic that shares host memory with the pipeline's reads. Returns the bytes copied both ways.
class CopyLoad {
 public:
  CopyLoad(int device, std::size_t bytes)
      : device_(device), h_in_(bytes), h_out_(bytes), d_in_(device, bytes), d_out_(device, bytes) {
    std::memset(h_in_.data(), 1, bytes);
    thread_ = std::thread([this] { loop(); });
  }
  ~CopyLoad() {
    stop_.store(true);
    thread_.join();
  }
  CopyLoad(const CopyLoad&) = delete;
  CopyLoad& operator=(const CopyLoad&) = delete;

  // Bytes moved both ways so far, and the first CUDA error of the loop ("" if none).
  double bytes() const { return bytes_.load(); }
  std::string error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  void loop() {
    try {
      OOC_CUDA_TRY(cudaSetDevice(device_));
      Stream a, b;
      const std::size_t n = h_in_.size();
      while (!stop_.load()) {
        OOC_CUDA_TRY(
            cudaMemcpyAsync(d_in_.data(), h_in_.data(), n, cudaMemcpyHostToDevice, a.get()));
        OOC_CUDA_TRY(
            cudaMemcpyAsync(h_out_.data(), d_out_.data(), n, cudaMemcpyDeviceToHost, b.get()));
        OOC_CUDA_TRY(cudaStreamSynchronize(a.get()));
        OOC_CUDA_TRY(cudaStreamSynchronize(b.get()));
        bytes_.store(bytes_.load() + 2.0 * static_cast<double>(n));
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = e.what();
    }
  }

  int device_;
  PinnedBuffer h_in_, h_out_;
  DeviceBuffer d_in_, d_out_;
  std::atomic<bool> stop_{false};
  std::atomic<double> bytes_{0};
  mutable std::mutex mutex_;
  std::string error_;
  std::thread thread_;
};

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
void copy_nt(std::byte* dst, const std::byte* src, std::size_t n) {
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
std::int64_t slice_edge(std::int64_t len, int T, int i) {
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

// The 2-D convolution by FFT (--method fft: cuFFT overlap-save on the image's tile grid) as the
// engine runs it on a band already in device memory: the operation's CUDA kernel object, its slot
// started (plans, the kernel's spectrum), then run_async timed. f32, a random K x K kernel (not
// separable), nearest border; the band lies inside a taller image (its halo rows are real rows)
// and is whole tile rows high, the nearest to --rows (what the planner makes of a band).
// tools/device/gpu_fft_peers.py times CuPy and NPP on the same shapes.
void stage_fft(const Options& o, Report& rep) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(1.0f, 200.0f), tap(0.1f, 1.0f);
  Stream s;
  for (const int k : o.fft_kernels) {
    ooc::Conv2dParams p;
    p.kernel.rows = p.kernel.cols = k;
    p.kernel.name = "random";
    double sum = 0;
    for (int i = 0; i < k * k; ++i) sum += p.kernel.taps.emplace_back(tap(rng));
    for (double& t : p.kernel.taps) t /= sum;
    p.border = ooc::BorderMode::nearest;
    p.method = ooc::ConvMethod::fft;
    const ooc::ImageSpec spec{o.width, std::int64_t{1} << 22, 1, SampleType::f32};
    const auto op = ooc::make_conv2d(spec, p, {});
    const std::int64_t grid = std::max<std::int64_t>(op->row_grid(), 1);
    const std::int64_t rows = std::max(grid, (o.rows + grid / 2) / grid * grid);
    const std::int64_t halo = op->halo(), in_rows = rows + 2 * halo;
    std::vector<float> in(static_cast<std::size_t>(o.width * in_rows));
    for (float& v : in) v = value(rng);
    DeviceBuffer d_in(o.device, in.size() * sizeof(float));
    OOC_CUDA_TRY(cudaMemcpy(d_in.data(), in.data(), d_in.size(), cudaMemcpyHostToDevice));
    DeviceBuffer d_out(o.device, static_cast<std::size_t>(o.width * rows) * sizeof(float));
    DeviceBuffer d_scratch(o.device, std::max<std::size_t>(op->cuda_scratch_bytes(rows), 1));
    const auto kernel = op->make_cuda({o.device});
    const ooc::CudaSlotInfo slot{0, o.device, s.get()};
    kernel->start(slot);
    ooc::CudaBand b;
    b.band.rows = rows;
    b.band.y0 = 4 * rows;  // on the tile grid, away from the image's edges
    b.in = d_in.data();
    b.in_stride = static_cast<std::size_t>(o.width) * sizeof(float);
    b.halo = halo;
    b.first_row = b.band.y0 - halo;
    b.in_spec = spec;
    b.out = d_out.data();
    b.out_stride = b.in_stride;
    b.scratch = d_scratch.data();
    b.device = o.device;
    b.stream = s.get();
    const auto ms = time_on_stream(s.get(), o.repeats, [&](cudaStream_t) { kernel->run_async(b); });
    kernel->stop(slot);
    const double t = median(ms), pixels = double(o.width) * double(rows);
    const double bytes = double(in_rows + rows) * double(o.width) * sizeof(float);
    std::string what = op->describe();
    for (char& c : what)
      if (c == ',') c = ';';
    rep.row("fft-k" + std::to_string(k), median(gbps_of(ms, bytes)), o.repeats, t,
            pixels / (t * 1e-3) / 1e9, bytes,
            fmt("%.3f", t) + " ms/band of " + std::to_string(rows) + " rows (halo " +
                std::to_string(halo) + "), " + fmt("%.2f", pixels / (t * 1e-3) / 1e9) +
                " Gpixel/s; " + what);
  }
}

int run(const Options& o) {
  // The device first: with none, say so and leave with the device exit code (5).
  int ndev = 0;
  OOC_CUDA_TRY(cudaGetDeviceCount(&ndev));
  if (ndev == 0) throw Error(ErrorKind::device, "no CUDA device found");
  if (o.device >= ndev)
    throw Error(ErrorKind::usage, "--device " + std::to_string(o.device) + " but only " +
                                      std::to_string(ndev) + " CUDA device(s)");
  OOC_CUDA_TRY(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  OOC_CUDA_TRY(cudaGetDeviceProperties(&prop, o.device));

  std::int64_t file_bytes = 0;
  if (!o.file.empty()) {
    file_bytes = file_size_of(o.file);
    if (file_bytes < (std::int64_t{2} << 30))
      std::fprintf(stderr,
                   "%s: warning: --file '%s' has %lld bytes, less than the 2 GiB asked for\n",
                   kProg, o.file.c_str(), static_cast<long long>(file_bytes));
  }

  const bool f32 = o.type == SampleType::f32;
  const std::int64_t W = o.width, B = o.rows, r = o.radius;
  const std::int64_t in_rows = B + 2 * r;
  const std::size_t esize = f32 ? 4 : 1;  // the output has the input's type
  const std::size_t in_bytes = static_cast<std::size_t>(W * in_rows) * esize;
  const std::size_t out_bytes = static_cast<std::size_t>(W * B) * esize;
  const std::size_t mid_bytes = static_cast<std::size_t>(W * in_rows) * sizeof(float);

  std::printf("%s: %s (sm_%d%d, %d SMs), band %lld x %lld + 2 x %lld halo rows, %s, radius %lld\n",
              kProg, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              static_cast<long long>(W), static_cast<long long>(B), static_cast<long long>(r),
              f32 ? "f32" : "u8", static_cast<long long>(r));
  std::printf("%s: input band %.1f MB, output band %.1f MB, f32 intermediate %.1f MB; GB = 1e9 B\n",
              kProg, in_bytes / 1e6, out_bytes / 1e6, mid_bytes / 1e6);
  std::fflush(stdout);

  Report rep(o.csv);
  if (wants(o, "pinned")) stage_pinned(o, rep);
  if (wants(o, "fft")) stage_fft(o, rep);
  PinnedBuffer h_in(in_bytes), h_out(out_bytes);

  // 1. read
  if (!wants(o, "read")) {
  } else if (o.file.empty()) {
    rep.row("read", -1, 0, -1, -1, -1, "skipped: no --file");
  } else {
    stage_warmup(o, rep);
    for (const int T : o.threads)
      for (const std::string& m : o.read_methods)
        for (const bool copies : {false, true}) {
          if (m == "register")
            stage_register(o, file_bytes, h_in.size(), T, copies, rep);
          else
            stage_read(o, file_bytes, h_in, T, copies, m, rep);
        }
  }

  // Random non-zero input (after the read stage, which overwrote h_in with file bytes).
  {
    std::mt19937 gen(12345);
    if (f32) {
      std::uniform_real_distribution<float> dist(0.25f, 1.25f);
      auto* p = reinterpret_cast<float*>(h_in.data());
      for (std::size_t i = 0; i < in_bytes / 4; ++i) p[i] = dist(gen);
    } else {
      std::uniform_int_distribution<int> dist(1, 255);
      auto* p = reinterpret_cast<std::uint8_t*>(h_in.data());
      for (std::size_t i = 0; i < in_bytes; ++i) p[i] = static_cast<std::uint8_t>(dist(gen));
    }
    std::memset(h_out.data(), 0, out_bytes);
  }

  DeviceBuffer d_in(o.device, in_bytes), d_mid(o.device, mid_bytes), d_out(o.device, out_bytes);
  Stream s1, s2;

  // 2. H2D (this also puts the random input on the device for the kernels).
  if (!wants(o, "copies")) {
    OOC_CUDA_TRY(cudaMemcpy(d_in.data(), h_in.data(), in_bytes, cudaMemcpyHostToDevice));
  } else {
    const auto ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t s) {
      OOC_CUDA_TRY(cudaMemcpyAsync(d_in.data(), h_in.data(), in_bytes, cudaMemcpyHostToDevice, s));
    });
    rep.row("h2d", median(gbps_of(ms, in_bytes)), o.repeats, median(ms), -1,
            static_cast<double>(in_bytes), "pinned -> device, one input band incl. halo rows");
  }
  // 3. D2H
  if (wants(o, "copies")) {
    const auto ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t s) {
      OOC_CUDA_TRY(
          cudaMemcpyAsync(h_out.data(), d_out.data(), out_bytes, cudaMemcpyDeviceToHost, s));
    });
    rep.row("d2h", median(gbps_of(ms, out_bytes)), o.repeats, median(ms), -1,
            static_cast<double>(out_bytes), "device -> pinned, one output band");
  }
  // 2b. H2D and D2H at once, on two streams; the time is from the start of both to the end of
  // both, over the bytes of both.
  if (wants(o, "copies")) {
    PinnedBuffer h_out2(out_bytes);
    DeviceBuffer d_out2(o.device, out_bytes);
    OOC_CUDA_TRY(cudaMemsetAsync(d_out2.data(), 0, out_bytes, s1.get()));
    Event forked, joined;
    const auto ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t s) {
      OOC_CUDA_TRY(cudaEventRecord(forked.get(), s));
      OOC_CUDA_TRY(cudaStreamWaitEvent(s2.get(), forked.get(), 0));
      OOC_CUDA_TRY(cudaMemcpyAsync(d_in.data(), h_in.data(), in_bytes, cudaMemcpyHostToDevice, s));
      OOC_CUDA_TRY(cudaMemcpyAsync(h_out2.data(), d_out2.data(), out_bytes, cudaMemcpyDeviceToHost,
                                   s2.get()));
      OOC_CUDA_TRY(cudaEventRecord(joined.get(), s2.get()));
      OOC_CUDA_TRY(cudaStreamWaitEvent(s, joined.get(), 0));
    });
    const double bytes = static_cast<double>(in_bytes + out_bytes);
    rep.row("h2d+d2h", median(gbps_of(ms, bytes)), o.repeats, median(ms), -1, bytes,
            "both at once on two streams, input band H2D + output band D2H, bytes of both");
  }

  // Device-to-device cudaMemcpy, the device memory ceiling of this run (read + write bytes).
  double d2d_gbps = 0;
  if (wants(o, "copies") || wants(o, "kernels")) {
    const std::size_t n = std::max<std::size_t>(std::size_t{256} << 20, mid_bytes);
    DeviceBuffer a(o.device, n), b(o.device, n);
    OOC_CUDA_TRY(cudaMemsetAsync(a.data(), 1, n, s1.get()));
    const auto ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t s) {
      OOC_CUDA_TRY(cudaMemcpyAsync(b.data(), a.data(), n, cudaMemcpyDeviceToDevice, s));
    });
    d2d_gbps = median(gbps_of(ms, 2.0 * n));
    rep.row("d2d-memcpy", d2d_gbps, o.repeats, median(ms), -1, 2.0 * n,
            "cudaMemcpyAsync device -> device of " + fmt("%.0f", n / 1e6) +
                " MB, counting read + write bytes");
  }

  // 4. kernels alone: the path the pipeline takes, then the generic kernels, on the same band.
  if (wants(o, "kernels")) {
    const std::vector<float> taps = gaussian_taps(r);
    DeviceBuffer d_taps(o.device, taps.size() * sizeof(float));
    OOC_CUDA_TRY(cudaMemcpy(d_taps.data(), taps.data(), taps.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
    ooc::cuda::SeparableLaunch a;
    a.in = d_in.data();
    a.in_stride = static_cast<std::size_t>(W) * esize;
    a.mid = d_mid.data();
    a.mid_stride = static_cast<std::size_t>(W) * sizeof(float);
    a.out = d_out.data();
    a.out_stride = static_cast<std::size_t>(W) * esize;
    a.width = W;
    a.channels = 1;
    a.in_type = o.type;
    a.out_type = o.type;
    a.out_rows = B;
    a.rx = r;
    a.ry = r;
    a.row_taps = d_taps.data();
    a.col_taps = d_taps.data();
    a.row_taps_host = taps.data();
    a.col_taps_host = taps.data();
    a.border = ooc::BorderMode::reflect;
    a.first_row = 0;  // a band inside the image: every input row is a real row
    a.image_height = in_rows;
    a.f64 = false;
    ooc::cuda::SeparableLaunch g = a;
    g.generic = true;
    DeviceBuffer d_out_generic(o.device, out_bytes);
    g.out = d_out_generic.data();
    const auto path = ooc::cuda::separable_path(a);
    const char* path_name = path == ooc::cuda::SeparablePath::fused      ? "fused"
                            : path == ooc::cuda::SeparablePath::two_pass ? "two-pass specialized"
                                                                         : "generic";
    // Poison both outputs, so that a sample one of them leaves unwritten shows as a difference.
    OOC_CUDA_TRY(cudaMemsetAsync(d_out.data(), 0xA5, out_bytes, s1.get()));
    OOC_CUDA_TRY(cudaMemsetAsync(d_out_generic.data(), 0x5A, out_bytes, s1.get()));
    // Interleaved: fast, generic, fast, generic... so that clocks and caches treat both alike.
    std::vector<double> kernel_ms, generic_ms;
    for (int i = 0; i < o.repeats; ++i) {
      const auto f = time_on_stream(s1.get(), 1,
                                    [&](cudaStream_t s) { ooc::cuda::separable_band_async(a, s); });
      const auto gm = time_on_stream(
          s1.get(), 1, [&](cudaStream_t s) { ooc::cuda::separable_band_async(g, s); });
      kernel_ms.push_back(f[0]);
      generic_ms.push_back(gm[0]);
    }
    bool identical = false;
    {
      std::vector<unsigned char> x(out_bytes), y(out_bytes);
      OOC_CUDA_TRY(cudaMemcpy(x.data(), d_out.data(), out_bytes, cudaMemcpyDeviceToHost));
      OOC_CUDA_TRY(cudaMemcpy(y.data(), d_out_generic.data(), out_bytes, cudaMemcpyDeviceToHost));
      identical = std::memcmp(x.data(), y.data(), out_bytes) == 0;
    }
    const double ours_ms = median(kernel_ms);
    const double generic_med = median(generic_ms);
    const double pixels = static_cast<double>(W) * static_cast<double>(B);
    // Bounds: DRAM bytes a kernel must move at --dram-peak, and 2 (2r + 1) FMAs per output pixel
    // at the device's fp32 rate (SMs x 128 FMA per clock x clock).
    int clock_khz = 0;
    OOC_CUDA_TRY(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, o.device));
    const double fma_rate = static_cast<double>(prop.multiProcessorCount) * 128.0 * clock_khz * 1e3;
    const double fmas = pixels * 2.0 * static_cast<double>(2 * r + 1);
    const double peak = o.dram_peak_gbps * kGB;
    const double two_pass_bytes = static_cast<double>(in_bytes + 2 * mid_bytes + out_bytes);
    const double fused_bytes = static_cast<double>(in_bytes + out_bytes);
    auto mem_frac = [&](double bytes, double ms) { return bytes / peak / (ms * 1e-3); };
    auto fma_frac = [&](double ms) { return fmas / fma_rate / (ms * 1e-3); };
    std::printf(
        "%s: bounds: DRAM %.0f GB/s (--dram-peak), fp32 FMA %.1f TFMA/s (%d SMs x 128 x "
        "%.0f MHz); %.0f FMAs per output pixel\n",
        kProg, o.dram_peak_gbps, fma_rate / 1e12, prop.multiProcessorCount, clock_khz / 1e3,
        2.0 * static_cast<double>(2 * r + 1));
    std::printf("%s: path taken: %s; outputs of the two paths %s\n", kProg, path_name,
                identical ? "byte-identical" : "DIFFER (a bug: they must be byte-identical)");
    std::fflush(stdout);
    {
      const double io_bytes = static_cast<double>(in_bytes + out_bytes);
      const bool fused = path == ooc::cuda::SeparablePath::fused;
      const double must = fused ? fused_bytes : two_pass_bytes;
      rep.row("kernels", median(gbps_of(kernel_ms, io_bytes)), o.repeats, ours_ms,
              pixels / (ours_ms * 1e-3) / 1e9, io_bytes,
              std::string("separable_band_async (") + path_name +
                  "), f32 accumulate, reflect, Gaussian sigma r/3: " + fmt("%.3f", ours_ms) +
                  " ms/band, " + fmt("%.2f", pixels / (ours_ms * 1e-3) / 1e9) +
                  " Gpixel/s; bytes = input + output band; generic/this time = " +
                  fmt("%.2f", generic_med / ours_ms) + "x; outputs " +
                  (identical ? "byte-identical to the generic kernels"
                             : "DIFFER from the generic kernels"),
              mem_frac(must, ours_ms), fma_frac(ours_ms));
      const double moved = must;
      const double moved_gbps = median(gbps_of(kernel_ms, moved));
      rep.row("kernels-moved", moved_gbps, o.repeats, ours_ms, pixels / (ours_ms * 1e-3) / 1e9,
              moved,
              std::string("same runs, bytes = ") +
                  (fused ? "input + output (fused: no intermediate in DRAM)"
                         : "input + 2 x f32 intermediate + output") +
                  " = " + fmt("%.0f", 100.0 * moved_gbps / d2d_gbps) + "% of d2d-memcpy",
              mem_frac(must, ours_ms), fma_frac(ours_ms));
      rep.row("kernels-generic", median(gbps_of(generic_ms, io_bytes)), o.repeats, generic_med,
              pixels / (generic_med * 1e-3) / 1e9, io_bytes,
              "the generic kernels (SeparableLaunch::generic) on the same band, runs interleaved "
              "with the row above: " +
                  fmt("%.3f", generic_med) + " ms/band, " +
                  fmt("%.2f", pixels / (generic_med * 1e-3) / 1e9) +
                  " Gpixel/s; bytes = input + output band; memory bound counts input + 2 x f32 "
                  "intermediate + output",
              mem_frac(two_pass_bytes, generic_med), fma_frac(generic_med));
    }

    // 5. NPP on the same band
#if defined(OOC_BENCH_HAVE_NPP)
    if (!f32) {
      rep.row("npp", -1, 0, -1, -1, -1, "n/a: the NPP comparison is f32 only");
    } else if (W > std::numeric_limits<int>::max() / 4 ||
               in_rows > std::numeric_limits<int>::max()) {
      rep.row("npp", -1, 0, -1, -1, -1, "n/a: the band is too large for NPP's int sizes");
    } else {
      // NPP convolves (the kernel is applied reversed): hand it the taps reversed, anchor r.
      std::vector<float> rev(taps.rbegin(), taps.rend());
      DeviceBuffer d_rev(o.device, rev.size() * sizeof(float));
      OOC_CUDA_TRY(
          cudaMemcpy(d_rev.data(), rev.data(), rev.size() * sizeof(float), cudaMemcpyHostToDevice));
      DeviceBuffer n_mid(o.device, mid_bytes), n_out(o.device, out_bytes);
      const NppStreamContext ctx = ooc::bench::npp_context(s1.get());
      const int step = static_cast<int>(W * 4);
      const int iw = static_cast<int>(W), ih = static_cast<int>(in_rows), oh = static_cast<int>(B);
      const int mask = static_cast<int>(2 * r + 1), anchor = static_cast<int>(r);
      const auto* src = reinterpret_cast<const Npp32f*>(d_in.data());
      auto* mid = reinterpret_cast<Npp32f*>(n_mid.data());
      auto* dst = reinterpret_cast<Npp32f*>(n_out.data());
      const auto* k = reinterpret_cast<const Npp32f*>(d_rev.data());
      const auto npp_ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t) {
        // Row pass over all input rows. Column pass: NPP's pSrc points at the first pixel of the
        // ROI (row r) and oSrcOffset says where that is in the W x (B + 2r) source, so the halo
        // rows are read as real rows and NPP's border rule (replicate) only applies at the left
        // and right edges.
        OOC_NPP_TRY(nppiFilterRowBorder_32f_C1R_Ctx(src, step, NppiSize{iw, ih}, NppiPoint{0, 0},
                                                    mid, step, NppiSize{iw, ih}, k, mask, anchor,
                                                    NPP_BORDER_REPLICATE, ctx));
        OOC_NPP_TRY(nppiFilterColumnBorder_32f_C1R_Ctx(
            mid + r * W, step, NppiSize{iw, ih}, NppiPoint{0, anchor}, dst, step, NppiSize{iw, oh},
            k, mask, anchor, NPP_BORDER_REPLICATE, ctx));
        OOC_CUDA_TRY(cudaGetLastError());
      });
      // Agreement with our kernels away from the left and right edges (borders differ there).
      std::vector<float> ours(static_cast<std::size_t>(W * B)), theirs(ours.size());
      OOC_CUDA_TRY(cudaMemcpy(ours.data(), d_out.data(), out_bytes, cudaMemcpyDeviceToHost));
      OOC_CUDA_TRY(cudaMemcpy(theirs.data(), n_out.data(), out_bytes, cudaMemcpyDeviceToHost));
      double max_diff = 0;
      for (std::int64_t y = 0; y < B; ++y)
        for (std::int64_t x = r; x < W - r; ++x) {
          const std::size_t i = static_cast<std::size_t>(y * W + x);
          max_diff = std::max(max_diff, static_cast<double>(std::fabs(ours[i] - theirs[i])));
        }
      const double t = median(npp_ms);
      const double io_bytes = static_cast<double>(in_bytes + out_bytes);
      rep.row("npp", median(gbps_of(npp_ms, io_bytes)), o.repeats, t, pixels / (t * 1e-3) / 1e9,
              io_bytes,
              "nppiFilterRowBorder + nppiFilterColumnBorder_32f_C1R_Ctx, NPP_BORDER_REPLICATE (NPP "
              "has no reflect): " +
                  fmt("%.3f", t) + " ms/band, " + fmt("%.2f", pixels / (t * 1e-3) / 1e9) +
                  " Gpixel/s, npp/ours time = " + fmt("%.2f", t / ours_ms) +
                  "x, npp/generic time = " + fmt("%.2f", t / generic_med) +
                  "x, max |npp - ours| off the edges = " + fmt("%.2g", max_diff) +
                  "; memory bound counts input + 2 x f32 intermediate + output",
              mem_frac(two_pass_bytes, t), fma_frac(t));
    }
#else
    rep.row("npp", -1, 0, -1, -1, -1,
            f32 ? "n/a: built without NPP (nppif/nppc not found when configuring)"
                : "n/a: the NPP comparison is f32 only");
#endif
  }

  // The output band on the host, for the write stage.
  OOC_CUDA_TRY(cudaMemcpy(h_out.data(), d_out.data(), out_bytes, cudaMemcpyDeviceToHost));

  // 6. write
  if (!wants(o, "write")) {
  } else if (o.file.empty()) {
    rep.row("write", -1, 0, -1, -1, -1, "skipped: no --file");
  } else {
    stage_write(o, file_bytes, h_out, rep);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o;
    if (!parse_options(argc, argv, o)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    if (e.kind() == ErrorKind::device)
      std::fprintf(stderr, "%s: this benchmark needs a working CUDA GPU and driver\n", kProg);
    if (e.kind() == ErrorKind::usage) std::fputs(kUsage, stderr);
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: unexpected failure: %s\n", kProg, e.what());
    return 1;
  }
}
