// Private to ooc_gpu_stages (gpu_stages.cpp says what it measures): its options, the result rows,
// the CUDA and file helpers the stages share, and the stages that time the host side (the page
// cache read, pinned buffers, the output write), which gpu_stages_host.cpp holds.
#pragma once

#include <cuda_runtime.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "ooc/error.hpp"
#include "ooc/image.hpp"

namespace gpu_stages {

using ooc::Error;
using ooc::ErrorKind;
using ooc::SampleType;
using ooc::cuda::DeviceBuffer;
using ooc::cuda::PinnedBuffer;

inline constexpr const char* kProg = "ooc_gpu_stages";
inline constexpr double kGB = 1e9;

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

extern const char* const kUsage;

bool wants(const Options& o, std::string_view stage);
// Returns false when --help was asked for.
bool parse_options(int argc, char** argv, Options& o);

double median(std::vector<double> v);
std::string fmt(const char* f, double x);
std::string io_message(const std::string& what, const std::string& path, int err);

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
                                   const std::function<void(cudaStream_t)>& enqueue);

std::vector<double> gbps_of(const std::vector<double>& ms, double bytes);

// Normalized Gaussian taps, sigma = radius / 3, in correlation order (symmetric anyway).
std::vector<float> gaussian_taps(std::int64_t r);

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

std::int64_t file_size_of(const std::string& path);

// H2D and D2H of one band each, on two streams, again and again
// until stop is set: the DMA traffic that shares host memory
// with the pipeline's reads. Returns the bytes copied both ways.
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

  // Bytes moved both ways so far, and the first CUDA error of
  // the loop ("" if none).
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

// The host-side stages (gpu_stages_host.cpp).
// Stage 1a. The file once through a plain read() loop, so that
// it is in the page cache.
void stage_warmup(const Options& o, Report& rep);
// Stage 1b. `repeats` passes over the file band by band into one
// pinned band buffer, each band split into T slices read in
// parallel with pread; threads meet at a barrier after each
// band. With copies, H2D and D2H of band-sized buffers run all
// the while (CopyLoad).
void stage_read(const Options& o, std::int64_t file_bytes, PinnedBuffer& band, int T, bool copies,
                const std::string& method, Report& rep);
// Stage 1c. No copy on the host: the file mapped once per pass,
// each band's pages registered with the driver read-only
// (pinning page-cache pages; T threads register a slice each,
// the next band while this band's H2D runs) and copied to the
// device straight from them, then unregistered. With copies: a
// band-sized D2H into pinned memory alongside each band, as the
// pipeline's copy out. The question it answers: does pinning
// cost less than the pack's memcpy?
void stage_register(const Options& o, std::int64_t file_bytes, std::size_t band_size, int T,
                    bool copies, Report& rep);
// Stage 6. The pinned output band written with pwrite, again and
// again, until as many bytes as the input file are written, then
// fsync; a fresh file each repeat; deleted at the end.
void stage_write(const Options& o, std::int64_t total, const PinnedBuffer& band, Report& rep);
// Stage 0 (on request). What a pinned buffer costs to make and
// free, and whether the way it was made changes the H2D rate:
// cudaHostAlloc (holds the driver's lock while the kernel fills
// it); the engine's slots (anonymous memory on transparent huge
// pages, populated, then registered); malloc + memset +
// cudaHostRegister (4 KiB pages).
void stage_pinned(const Options& o, Report& rep);

}  // namespace gpu_stages
