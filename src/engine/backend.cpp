// Picking the backend: the CPU, or CUDA devices (--device, --devices), and --device auto's
// estimate of which is faster for a run.
#include <tbb/info.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cost_model.hpp"
#include "kernels/cpu/convolution/separable.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"
#include "staging.hpp"

namespace ooc {

const char* cpu_kernels_isa() noexcept {
  return kernels::separable_isa();
}

std::string Backend::describe() const {
  if (!cuda || (start && start->failed()))
    return std::string("cpu (") + kernels::separable_isa() + ")";
  std::string s = "cuda:";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(devices[i]);
  }
  return s + " (" + cuda_device_name(devices.empty() ? 0 : devices[0]) + ")";
}

std::string Backend::start_error() const {
  if (!start || !start->failed()) return {};
  try {
    start->wait();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

namespace {

// GPUs CUDA will see, told without initializing it (which costs about 0.15 s) from the NVIDIA
// kernel driver's list and CUDA_VISIBLE_DEVICES when it is a list of indices (as Slurm sets it);
// -1 when that cannot be told (no /proc entry, as in some containers, or UUIDs in the variable).
int listed_gpus() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/driver/nvidia/gpus", ec);
  if (ec) return std::filesystem::exists("/dev/nvidiactl", ec) ? -1 : 0;
  int n = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return -1;
    ++n;
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return n;
  // CUDA takes the entries up to the first that names no device; repeats make it fail.
  std::istringstream in(visible);
  std::vector<int> seen;
  for (std::string tok; std::getline(in, tok, ',');) {
    if (tok.empty() || tok.size() > 4 || tok.find_first_not_of("0123456789") != std::string::npos)
      return -1;
    const int d = std::stoi(tok);
    if (d >= n) break;
    if (std::find(seen.begin(), seen.end(), d) != seen.end()) return -1;
    seen.push_back(d);
  }
  return static_cast<int>(seen.size());
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f s" : "%.0f s", s);
  return buf;
}

}  // namespace

Workload workload(const ImageSpec& spec, std::int64_t rows, int threads) {
  Workload w;
  w.samples = static_cast<std::uint64_t>(std::max<std::int64_t>(rows, 0)) *
              static_cast<std::uint64_t>(spec.row_samples());
  w.bytes = w.samples * sample_bytes(spec.type);
  w.threads = threads;
  return w;
}

Backend select_backend(const std::string& device, const std::string& devices,
                       const std::vector<const Operation*>& ops, const Workload* work) {
  if (device != "auto" && device != "cpu" && device != "cuda")
    throw Error(ErrorKind::usage, "--device takes auto, cpu or cuda, got '" + device + "'");
  std::vector<int> list;  // empty: all
  if (devices != "all") {
    std::istringstream in(devices);
    for (std::string tok; std::getline(in, tok, ',');) {
      try {
        std::size_t pos = 0;
        list.push_back(std::stoi(tok, &pos));
        if (pos != tok.size()) throw std::invalid_argument(tok);
      } catch (const std::exception&) {
        throw Error(ErrorKind::usage,
                    "--devices takes all or a list like 0,1; got '" + devices + "'");
      }
    }
  }
  Backend b;
  bool every_op_on_gpu = true;
  for (const Operation* op : ops) every_op_on_gpu = every_op_on_gpu && op->has_cuda();
  int count = -1;  // CUDA devices, once asked
  if (device == "cpu") {
    count = 0;
  } else if (device == "auto" && work != nullptr && every_op_on_gpu) {
    // A run the CPU wins never touches CUDA: initializing the driver just to count the devices
    // costs about 0.15 s, more than a small image takes. The kernel driver's list of GPUs (when
    // it can be read) stands in for the count until the GPU is chosen.
    int gpus = devices != "all" ? static_cast<int>(list.size()) : listed_gpus();
    if (gpus < 0) gpus = count = cuda_device_count();
    if (gpus == 0) {
      b.why = "auto: no usable CUDA device";
      return b;
    }
    const int threads = work->threads > 0 ? work->threads : default_threads();
    detail::RunEstimate e =
        detail::estimate_seconds(ops, *work, threads, static_cast<std::size_t>(gpus));
    if (devices != "all") {  // the GPUs listed, every one of them
      e.gpus = static_cast<std::size_t>(gpus);
      e.cuda = detail::cuda_seconds(ops, *work, e.gpus);
      e.cuda_start = detail::cuda_start_seconds(e.gpus);
    }
    const int used = static_cast<int>(e.gpus);
    b.why = "auto: estimated " + seconds(e.cpu) + " on " + std::to_string(threads) +
            " CPU threads, " + seconds(e.cuda) + " on " +
            (used < gpus ? std::to_string(used) + " of " : "") + std::to_string(gpus) + " GPU" +
            (gpus > 1 ? "s" : "") + " (" + seconds(e.cuda_start) + " of it start-up)";
    if (e.cpu <= e.cuda) return b;
  }
  if (count < 0) {
    count = listed_gpus();
    if (count < 0) count = cuda_device_count();
  }
  b.cuda = device == "cuda" || (device == "auto" && count > 0 && every_op_on_gpu);
  if (device != "auto")
    b.why = "--device " + device;
  else if (count == 0)
    b.why = "auto: no usable CUDA device";
  else if (!every_op_on_gpu)
    b.why = "auto: the operation has no CUDA version";
  else if (b.why.empty())
    b.why = "auto: a CUDA device is usable";
  if (!b.cuda) return b;
  if (count == 0)
    throw Error(ErrorKind::device,
                "--device cuda: no usable CUDA device (driver missing, no GPU, or no CUDA in this "
                "build); use --device cpu or auto");
  if (!every_op_on_gpu) {
    // A volume's 3-D stages without CUDA kernels (3-D convolutions by FFT, windows deeper than
    // a launch's planes, the masked 3-D filters) run on the CPU only.
    const bool volume = std::any_of(ops.begin(), ops.end(), [](const Operation* op) {
      return op->plane_halo() > 0 || op->projects();
    });
    throw Error(ErrorKind::device,
                volume ? "--device cuda: a stage of this 3-D pipeline (a 3-D convolution by "
                         "FFT, a window deeper than 129 planes for a z pass or 256 for a rank "
                         "filter, a 3-D filter under --nodata) runs on the CPU only; use "
                         "--device cpu or auto, or --planes to filter each plane in 2-D"
                       : "--device cuda: this operation has no CUDA version; use --device cpu or "
                         "auto");
  }
  if (list.empty()) {
    for (int d = 0; d < count; ++d) list.push_back(d);
    // --devices all: the GPUs that pay. Where the host's copies bound the run (streaming from
    // the page cache or a disk), a second GPU only adds its start and takes bands from the CPU's
    // share while CUDA starts (`bench_nodes.sh gpus`: such jobs run slower on two GPUs).
    if (work != nullptr && count > 1) {
      const int threads = work->threads > 0 ? work->threads : default_threads();
      const std::size_t best =
          detail::estimate_seconds(ops, *work, threads, static_cast<std::size_t>(count)).gpus;
      if (best < list.size()) {
        if (device == "cuda")
          b.why += ", " + std::to_string(best) + " of " + std::to_string(count) +
                   " GPUs: estimated " + seconds(detail::cuda_seconds(ops, *work, best)) +
                   " against " + seconds(detail::cuda_seconds(ops, *work, list.size())) +
                   " on all (--devices lists them)";
        list.resize(best);
      }
    }
  }
  for (int d : list)
    if (d < 0 || d >= count)
      throw Error(ErrorKind::device,
                  "--devices: device " + std::to_string(d) + " does not exist; this machine has " +
                      std::to_string(count) + " (0 to " + std::to_string(count - 1) + ")");
  b.devices = list;
  // The count may have come from the driver's list: the start checks it against CUDA's own.
  b.cpu_if_cuda_fails = device == "auto";
  try {
    b.start = detail::CudaStart::begin(b.devices);
  } catch (const Error& e) {  // a build without CUDA on a machine with a GPU
    if (!b.cpu_if_cuda_fails) throw;
    Backend cpu;
    cpu.why = std::string("auto: ") + e.what();
    return cpu;
  }
  return b;
}

}  // namespace ooc
