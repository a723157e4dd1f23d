// ooc_gpu_stages' options and the helpers its stages share (gpu_stages.hpp): parsing the command
// line, medians and formatting, timing on a stream, the Gaussian taps, the input file's size.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_stages.hpp"
#include "ooc/error.hpp"

namespace gpu_stages {
namespace {

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

}  // namespace

const char* const kUsage =
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

std::int64_t file_size_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorKind::input, io_message("cannot stat the --file", path, errno));
  if (!S_ISREG(st.st_mode) || st.st_size <= 0)
    throw Error(ErrorKind::input, "--file '" + path + "' is not a non-empty regular file");
  return st.st_size;
}

}  // namespace gpu_stages
