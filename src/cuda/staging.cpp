// The engine's GPU slots: pinned host buffers, device buffers, a stream and an event on one
// device. start() packs the band's rows into pinned memory (in parallel: one thread cannot keep
// up with PCIe), then enqueues H2D, the operation's kernels and D2H without blocking; wait()
// blocks on the slot's event.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "check.hpp"
#include "engine/numa.hpp"
#include "engine/staging.hpp"
#include "kernels/cpu/labels/mask_bits.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "resources.hpp"

namespace ooc::detail {
namespace {

// A pack's reads: at most 4 rows (1 MiB of 65536-wide f32 rows, 64 KiB of 4096-wide ones), at
// least 64 KiB where rows are narrower.
constexpr std::int64_t kRowsPerRead = 4;
constexpr std::size_t kLeastRead = std::size_t{64} << 10;

// Rows source_rows[0, n) into `dst`, `row` bytes apart, runs of consecutive image rows read
// straight into place with every thread by pread (read_rows): from the page cache that beat
// copying from the file's mapping 1.4-1.8x (the mapping's page faults), and a cold file's
// read-ahead suits it. Where `bits` (the image's spec: CudaBand::in_bits), each piece is read
// into a buffer of the thread's and goes into `dst` as one bit a sample instead. Constant-border
// rows (-1) are left alone: the kernels know them. A decoding source reads in order, with its
// own threads.
void pack(Source& source, const std::int64_t* source_rows, std::int64_t n, std::size_t row,
          std::byte* dst, const ImageSpec* bits) {
  const std::size_t file_row = bits ? bits->row_bytes() : row;
  // Rows [first, first + count) of the image into dst's rows from `at`.
  auto read = [&](std::int64_t first, std::int64_t count, std::byte* at) {
    if (!bits) {
      source.read_rows(first, count, at);
      return;
    }
    thread_local std::vector<std::byte> buffer;
    buffer.resize(static_cast<std::size_t>(count) * file_row);
    source.read_rows(first, count, buffer.data());
    kernels::mask_bits_rows(buffer.data(), count, file_row, bits->width * bits->channels,
                            bits->type, at, row);
  };
  for (std::int64_t i = 0; i < n;) {
    const std::int64_t src = source_rows[i];
    std::int64_t j = i + 1;
    while (j < n && src >= 0 && source_rows[j] == src + (j - i)) ++j;
    std::byte* at = dst + static_cast<std::size_t>(i) * row;
    const std::int64_t m = j - i;
    if (src < 0) {
      // Constant-border rows: nothing to read.
    } else if (!source.parallel_reads()) {
      // In one call (its threads decode many blocks at once), or as bits a few rows at a time.
      const std::int64_t step = bits ? kRowsPerRead : m;
      for (std::int64_t k = 0; k < m; k += step)
        read(src + k, std::min(step, m - k), at + static_cast<std::size_t>(k) * row);
    } else {
      // Pieces of at least 64 KiB, and enough of them for every thread to take about four: a
      // 65536-wide u8 band in 32 reads of 4 rows left threads waiting on the last.
      const std::int64_t pieces = 4 * tbb::this_task_arena::max_concurrency();
      const std::int64_t spread = (m + pieces - 1) / pieces;
      const auto per_read = std::max(std::min(kRowsPerRead, spread),
                                     static_cast<std::int64_t>(kLeastRead / file_row));
      tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, m, per_read),
                        [&](const tbb::blocked_range<std::int64_t>& r) {
                          read(src + r.begin(), r.end() - r.begin(),
                               at + static_cast<std::size_t>(r.begin()) * row);
                        });
      // The next rows start coming in now (about four bands' worth), so a disk keeps a deep
      // queue while this band goes through the GPU and the next pack begins. Without it the
      // reads above wait band by band, well below cat's rate on a cold file; four bands ahead
      // came closest to it (docs/performance.md, the GPU machine's cold rows).
      source.prefetch(src + m, 4 * static_cast<std::size_t>(n) * file_row);
    }
    i = j;
  }
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The partial sits after the largest output the slot holds, aligned for any element type (a
// histogram's 64-bit atomics fault on an odd address: rows of odd width end anywhere).
std::size_t partial_offset(const SlotSizes& z) {
  const std::size_t end = static_cast<std::size_t>(z.band_rows) * z.out_row;
  return (end + 255) / 256 * 256;
}

// The NUMA node for a device's pinned slots (numa.hpp), looked up once per device.
int device_node(int device) {
  static std::mutex m;
  static std::map<int, int> nodes;
  std::lock_guard lock(m);
  auto it = nodes.find(device);
  if (it != nodes.end()) return it->second;
  char bus[32] = {};
  const int node = cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess
                       ? staging_node(bus)
                       : ((void)cudaGetLastError(), -1);
  nodes.emplace(device, node);
  return node;
}

class CudaSlotImpl final : public CudaSlot {
 public:
  CudaSlotImpl(int index, int device, const SlotSizes& z)
      : index_(index),
        stream_(device),
        h_in_(static_cast<std::size_t>((z.band_rows + 2 * z.halo) *
                                       (z.host_planes > 0 ? z.host_planes : z.planes)) *
                  z.in_row,
              device_node(device)),
        h_out_(partial_offset(z) + z.partial, device_node(device)),
        d_in_(device, static_cast<std::size_t>((z.band_rows + 2 * z.halo) * z.planes) * z.in_row),
        d_out_(device, h_out_.size()),
        d_scratch_(device, z.scratch),
        sizes_(z) {
    for (cudaEvent_t& e : marks_) OOC_CUDA_TRY(cudaEventCreate(&e));
    for (cudaEvent_t& e : piece_copied_)
      OOC_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    OOC_CUDA_TRY(cudaEventCreateWithFlags(&halo_taken_, cudaEventDisableTiming));
    // The slot's zero: device event times are mapped onto the host's clock from here.
    OOC_CUDA_TRY(cudaEventCreate(&base_));
    OOC_CUDA_TRY(cudaEventRecord(base_, stream_.stream()));
    OOC_CUDA_TRY(cudaEventSynchronize(base_));
    base_host_ = now_s();
  }
  ~CudaSlotImpl() override {
    cudaSetDevice(stream_.device());
    for (cudaEvent_t e : marks_)
      if (e) cudaEventDestroy(e);
    for (cudaEvent_t e : piece_copied_)
      if (e) cudaEventDestroy(e);
    if (base_) cudaEventDestroy(base_);
    if (halo_taken_) cudaEventDestroy(halo_taken_);
  }

  void start_kernel(CudaKernel& kernel) override {
    OOC_CUDA_TRY(cudaSetDevice(stream_.device()));
    kernel.start(info());
  }
  void stop_kernel(CudaKernel& kernel) override {
    OOC_CUDA_TRY(cudaSetDevice(stream_.device()));
    kernel.stop(info());
  }

  void start(Source& source, const std::int64_t* source_rows, const Band& band, std::int64_t halo,
             std::int64_t plane_halo, std::int64_t planes, const ImageSpec& in, CudaKernel& kernel,
             std::size_t out_row, std::size_t partial, CudaSlot* prev_slot, std::int64_t reuse_rows,
             bool bits) override {
    // Every plane's rows of a band with planes of context (CudaBand::plane_halo).
    const std::int64_t in_rows = (band.rows + 2 * halo) * planes;
    const std::size_t row =
        bits ? kernels::mask_bits_row_bytes(in.width * in.channels) : in.row_bytes();
    auto* prev = static_cast<CudaSlotImpl*>(prev_slot);
    const std::int64_t reuse = prev && prev != this && prev->stream_.device() == stream_.device() &&
                                       prev->in_row_ == row && prev->in_bits_ == bits &&
                                       reuse_rows <= prev->in_rows_ && reuse_rows <= in_rows
                                   ? std::max<std::int64_t>(reuse_rows, 0)
                                   : 0;
    const cudaStream_t s = stream_.stream();
    OOC_CUDA_TRY(cudaSetDevice(stream_.device()));
    pack_at_ = now_s();
    // Rows [reuse, in_rows) go in through the pinned input. Where they do not fit (a volume's
    // band that takes no planes from the band before: a slab's first), in pieces through the
    // input and the output buffers in turn, each packed while the one before is copied.
    std::byte* const bufs[2] = {h_in_.data(), h_out_.data()};
    const std::int64_t holds[2] = {static_cast<std::int64_t>(h_in_.size() / row),
                                   static_cast<std::int64_t>(h_out_.size() / row)};
    bool copying[2] = {false, false};
    int piece = 0;
    for (std::int64_t i = reuse; i < in_rows || piece == 0; ++piece) {
      const int k = in_rows - i <= holds[0] || holds[1] == 0 ? 0 : piece % 2;
      // This buffer's last piece is copied in before it is packed again.
      if (copying[k]) OOC_CUDA_TRY(cudaEventSynchronize(piece_copied_[k]));
      const std::int64_t n = std::min(in_rows - i, holds[k]);
      pack(source, source_rows + i, n, row, bufs[k], bits ? &in : nullptr);
      if (piece == 0) {
        // The next band copied its halo out of d_in_: that copy must be done before d_in_ is
        // refilled.
        if (reader_) OOC_CUDA_TRY(cudaStreamWaitEvent(s, reader_, 0));
        reader_ = nullptr;
        OOC_CUDA_TRY(cudaEventRecord(marks_[0], s));
        if (reuse > 0) {
          // After prev's copy in (marks_[1] is recorded again only at prev's next start, which
          // comes after this one: bands start in order).
          OOC_CUDA_TRY(cudaStreamWaitEvent(s, prev->marks_[1], 0));
          OOC_CUDA_TRY(cudaMemcpyAsync(
              d_in_.data(),
              prev->d_in_.data() + static_cast<std::size_t>(prev->in_rows_ - reuse) * row,
              static_cast<std::size_t>(reuse) * row, cudaMemcpyDeviceToDevice, s));
          OOC_CUDA_TRY(cudaEventRecord(halo_taken_, s));
          prev->reader_ = halo_taken_;
        }
      }
      if (n > 0) {
        OOC_CUDA_TRY(cudaMemcpyAsync(d_in_.data() + static_cast<std::size_t>(i) * row, bufs[k],
                                     static_cast<std::size_t>(n) * row, cudaMemcpyHostToDevice, s));
        OOC_CUDA_TRY(cudaEventRecord(piece_copied_[k], s));
        copying[k] = true;
      }
      i += n;
    }
    pack_s_ = now_s() - pack_at_;
    OOC_CUDA_TRY(cudaEventRecord(marks_[1], s));
    in_rows_ = in_rows;
    in_row_ = row;
    in_bits_ = bits;
    const std::size_t out_bytes = static_cast<std::size_t>(band.rows) * out_row;
    const std::size_t partial_at = partial_offset(sizes_);
    if (partial > 0) OOC_CUDA_TRY(cudaMemsetAsync(d_out_.data() + partial_at, 0, partial, s));
    CudaBand b;
    b.band = band;
    b.in = d_in_.data();
    b.in_stride = row;
    b.in_bits = bits;
    b.halo = halo;
    b.first_row = band.y0 - halo;
    b.plane_halo = plane_halo;
    b.in_spec = in;
    b.out = out_row > 0 ? d_out_.data() : nullptr;
    b.out_stride = out_row;
    b.partial = partial > 0 ? d_out_.data() + partial_at : nullptr;
    b.scratch = d_scratch_.data();
    b.device = stream_.device();
    b.stream = s;
    b.slot = index_;
    kernel.run_async(b);
    OOC_CUDA_TRY(cudaEventRecord(marks_[2], s));
    if (out_bytes > 0)
      OOC_CUDA_TRY(
          cudaMemcpyAsync(h_out_.data(), d_out_.data(), out_bytes, cudaMemcpyDeviceToHost, s));
    if (partial > 0)
      OOC_CUDA_TRY(cudaMemcpyAsync(h_out_.data() + partial_at, d_out_.data() + partial_at, partial,
                                   cudaMemcpyDeviceToHost, s));
    OOC_CUDA_TRY(cudaEventRecord(marks_[3], s));
    stream_.record();
  }

  void wait(const std::byte*& out, const std::byte*& partial, SlotTimes& times) override {
    stream_.synchronize();
    out = h_out_.data();
    partial = h_out_.data() + partial_offset(sizes_);
    // Durations between neighbouring marks (exact); the marks' times from the slot's zero, which a
    // float of milliseconds holds to about a microsecond per 10 s the slot has lived.
    float ms[3] = {}, from_base[4] = {};
    for (int i = 0; i < 3; ++i)
      OOC_CUDA_TRY(cudaEventElapsedTime(&ms[i], marks_[i], marks_[i + 1]));
    for (int i = 0; i < 4; ++i) OOC_CUDA_TRY(cudaEventElapsedTime(&from_base[i], base_, marks_[i]));
    times = SlotTimes{pack_s_, 1e-3 * ms[0], 1e-3 * ms[1], 1e-3 * ms[2], {}};
    times.at[0] = pack_at_;
    for (int i = 0; i < 4; ++i) times.at[i + 1] = base_host_ + 1e-3 * from_base[i];
  }

 private:
  CudaSlotInfo info() { return CudaSlotInfo{index_, stream_.device(), stream_.stream()}; }

  int index_;
  cuda::StreamEvent stream_;
  cuda::PinnedBuffer h_in_, h_out_;  // h_out_: the output rows, then the partial
  cuda::DeviceBuffer d_in_, d_out_, d_scratch_;
  SlotSizes sizes_;
  // Timing marks: before the copy in, after it, after the kernels, after the copies out.
  cudaEvent_t marks_[4] = {};
  cudaEvent_t base_ = nullptr;
  // Recorded after this slot copied its first rows out of the previous slot's d_in_; reader_: the
  // event of the slot that copies out of this one's, waited for before d_in_ is written again.
  cudaEvent_t halo_taken_ = nullptr, reader_ = nullptr;
  // Recorded after each piece of a band copied in through a pinned buffer (input, output).
  cudaEvent_t piece_copied_[2] = {};
  std::int64_t in_rows_ = 0;  // input rows of the band last started here
  std::size_t in_row_ = 0;    // and their size
  bool in_bits_ = false;      // and whether as bits
  double base_host_ = 0, pack_at_ = 0, pack_s_ = 0;
};

}  // namespace

std::unique_ptr<CudaSlot> CudaSlot::make(int index, int device, const SlotSizes& sizes) {
  return std::make_unique<CudaSlotImpl>(index, device, sizes);
}

namespace {

class CudaStartImpl final : public CudaStart {
 public:
  explicit CudaStartImpl(const std::vector<int>& devices) : state_(std::make_shared<State>()) {
    state_->devices = devices;
    // The thread owns the state with the object: it may outlive it (background_may_outlive).
    thread_ = std::thread([s = state_] { s->run(); });
  }
  ~CudaStartImpl() override { end_background(thread_); }
  bool ready() const override { return state_->done.load(std::memory_order_acquire); }
  bool failed() const override { return ready() && state_->error != nullptr; }
  void wait() const override {
    std::unique_lock<std::mutex> lock(state_->m);
    state_->cv.wait(lock, [&] { return state_->done.load(std::memory_order_acquire); });
    if (state_->error) std::rethrow_exception(state_->error);
  }
  std::size_t free_bytes(std::size_t i) const override {
    wait();
    return state_->free.at(i);
  }

 private:
  struct State {
    std::vector<int> devices;
    std::vector<std::size_t> free;
    std::exception_ptr error;
    std::atomic<bool> done{false};
    std::mutex m;
    std::condition_variable cv;

    void run() {
      try {
        const int count = cuda::device_count();
        if (count == 0)
          throw Error(ErrorKind::device,
                      "--device cuda: no usable CUDA device (driver missing, no GPU, or no CUDA in "
                      "this build); use --device cpu or auto");
        for (const int d : devices)
          if (d < 0 || d >= count)
            throw Error(ErrorKind::device,
                        "--devices: device " + std::to_string(d) + " does not exist; CUDA sees " +
                            std::to_string(count) + " (0 to " + std::to_string(count - 1) + ")");
        for (const int d : devices) {
          std::size_t f = 0, total = 0;
          cuda::device_memory(d, f, total);  // makes the device's context
          free.push_back(f);
        }
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(m);
        done.store(true, std::memory_order_release);
      }
      cv.notify_all();
    }
  };
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace

std::shared_ptr<CudaStart> CudaStart::begin(const std::vector<int>& devices) {
  return std::make_shared<CudaStartImpl>(devices);
}

std::int64_t cuda_max_band_rows(const std::vector<int>& devices, int slots, std::int64_t height,
                                const std::function<std::size_t(std::int64_t)>& bytes,
                                const CudaStart* start) {
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  const int n = static_cast<int>(devices.size());
  for (int i = 0; i < n; ++i) {
    int on_device = 0;
    for (int k = 0; k < slots; ++k)
      on_device +=
          slot_device_index(std::size_t(k), std::size_t(slots), std::size_t(n)) == std::size_t(i);
    if (on_device == 0) continue;
    std::size_t free_b = 0, total_b = 0;
    if (start)
      free_b = start->free_bytes(static_cast<std::size_t>(i));
    else
      cuda::device_memory(devices[static_cast<std::size_t>(i)], free_b, total_b);
    // Leave room for the CUDA context's own needs, the kernels' tables and other users.
    const std::size_t usable = free_b / 10 * 9;
    const std::size_t per_slot = usable / static_cast<std::size_t>(on_device);
    std::int64_t lo = 0, hi = height;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      if (bytes(mid) <= per_slot)
        lo = mid;
      else
        hi = mid - 1;
    }
    if (lo < 1)
      throw Error(ErrorKind::device,
                  "GPU " + std::to_string(devices[static_cast<std::size_t>(i)]) + " has " +
                      format_bytes(double(free_b)) + " free, too little for " +
                      std::to_string(on_device) + " slot(s) of one-row bands (" +
                      format_bytes(double(bytes(1))) + " each): lower --slots or use --device cpu");
    best = std::min(best, lo);
  }
  return best;
}

}  // namespace ooc::detail
