// Separable convolution on one or many GPUs: the Operation that plugs kernels/cuda into the
// pipeline. Each slot owns pinned host buffers, device buffers and a stream on one device.
// compute_async packs the band's rows into pinned memory (in parallel), then enqueues H2D, the row
// and column kernels and D2H without blocking; wait() blocks on the slot's event.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "../../kernels/cuda/separable.cuh"
#include "../cuda/check.hpp"
#include "../cuda/resources.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/separable.hpp"

namespace ooc {
namespace {

struct Layout {
  std::size_t in_row, mid_row, out_row, acc;
  std::int64_t ry;
  std::size_t device_bytes(std::int64_t rows) const {
    const auto in_rows = static_cast<std::size_t>(rows + 2 * ry);
    return in_rows * (in_row + mid_row) + static_cast<std::size_t>(rows) * out_row;
  }
  std::size_t pinned_bytes(std::int64_t rows) const {
    return static_cast<std::size_t>(rows + 2 * ry) * in_row +
           static_cast<std::size_t>(rows) * out_row;
  }
};

class SeparableCudaSlot final : public SlotKernel {
  static constexpr std::int64_t kRowsPerRead = 4;  // ~1 MiB reads for 65536-wide f32 rows

 public:
  SeparableCudaSlot(int device, const Layout& layout, const cuda::SeparableLaunch& base,
                    const std::vector<double>& row_taps, const std::vector<double>& col_taps,
                    std::int64_t band_rows)
      : layout_(layout),
        launch_(base),
        stream_(device),
        h_in_(static_cast<std::size_t>(band_rows + 2 * layout.ry) * layout.in_row),
        h_out_(static_cast<std::size_t>(band_rows) * layout.out_row),
        d_in_(device, h_in_.size()),
        d_mid_(device, static_cast<std::size_t>(band_rows + 2 * layout.ry) * layout.mid_row),
        d_out_(device, h_out_.size()),
        d_taps_(device, (row_taps.size() + col_taps.size()) * layout.acc) {
    // Taps in the accumulator type, uploaded once.
    std::vector<std::byte> taps(d_taps_.size());
    auto put = [&](const std::vector<double>& t, std::size_t offset) {
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (layout.acc == 8) {
          std::memcpy(taps.data() + offset + i * 8, &t[i], 8);
        } else {
          const float f = static_cast<float>(t[i]);
          std::memcpy(taps.data() + offset + i * 4, &f, 4);
        }
      }
    };
    put(row_taps, 0);
    put(col_taps, row_taps.size() * layout.acc);
    OOC_CUDA_TRY(cudaMemcpy(d_taps_.data(), taps.data(), taps.size(), cudaMemcpyHostToDevice));
    launch_.row_taps = d_taps_.data();
    launch_.col_taps = d_taps_.data() + row_taps.size() * layout.acc;
    launch_.in = d_in_.data();
    launch_.in_stride = layout.in_row;
    launch_.mid = d_mid_.data();
    launch_.mid_stride = layout.mid_row;
    launch_.out = d_out_.data();
    launch_.out_stride = layout.out_row;
  }

  void compute_async(const BandInput& in, const Band& band) override {
    const std::int64_t in_rows = band.rows + 2 * layout_.ry;
    const std::size_t row = layout_.in_row;
    // Source -> pinned memory, by several threads (one cannot keep up with PCIe), each reading
    // a run of consecutive image rows straight into place. Constant-border rows (-1) are left
    // alone: the row kernel writes them.
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, in_rows, kRowsPerRead),
                      [&](const tbb::blocked_range<std::int64_t>& r) {
                        for (std::int64_t i = r.begin(); i < r.end();) {
                          const std::int64_t src = in.source_rows[i];
                          std::int64_t j = i + 1;
                          while (j < r.end() && src >= 0 && in.source_rows[j] == src + (j - i)) ++j;
                          if (src >= 0) in.source->read_rows(src, j - i, h_in_.data() + i * row);
                          i = j;
                        }
                      });
    launch_.out_rows = band.rows;
    launch_.first_row = band.y0 - layout_.ry;
    launch_.image_height = in.spec.height;
    rows_ = band.rows;
    const cudaStream_t s = stream_.stream();
    OOC_CUDA_TRY(cudaSetDevice(stream_.device()));
    OOC_CUDA_TRY(cudaMemcpyAsync(d_in_.data(), h_in_.data(),
                                 static_cast<std::size_t>(in_rows) * row, cudaMemcpyHostToDevice,
                                 s));
    cuda::separable_band_async(launch_, s);
    OOC_CUDA_TRY(cudaMemcpyAsync(h_out_.data(), d_out_.data(),
                                 static_cast<std::size_t>(band.rows) * layout_.out_row,
                                 cudaMemcpyDeviceToHost, s));
    stream_.record();
  }

  BandView wait() override {
    stream_.synchronize();
    return BandView{h_out_.data(), layout_.out_row,  rows_,
                    launch_.width, launch_.channels, launch_.out_type};
  }

 private:
  Layout layout_;
  cuda::SeparableLaunch launch_;
  cuda::StreamEvent stream_;
  cuda::PinnedBuffer h_in_, h_out_;
  cuda::DeviceBuffer d_in_, d_mid_, d_out_, d_taps_;
  std::int64_t rows_ = 0;
};

class SeparableCuda final : public Operation {
 public:
  SeparableCuda(const ImageSpec& in, const SeparableParams& p, const PipelineOptions& o,
                std::vector<int> devices)
      : params_(p),
        options_(o),
        devices_(std::move(devices)),
        out_spec_{in.width, in.height, in.channels, p.out_type.value_or(in.type)},
        row_taps_(correlation_taps(p.filter.row)),
        col_taps_(correlation_taps(p.filter.col)) {
    const int count = cuda::device_count();
    if (count == 0)
      throw Error(ErrorKind::device,
                  "--device cuda: no usable CUDA device (driver missing or no "
                  "GPU); use --device cpu or auto");
    if (devices_.empty())
      for (int d = 0; d < count; ++d) devices_.push_back(d);
    for (int d : devices_)
      if (d < 0 || d >= count)
        throw Error(ErrorKind::device, "--devices: device " + std::to_string(d) +
                                           " does not exist; this machine has " +
                                           std::to_string(count) + " (0 to " +
                                           std::to_string(count - 1) + ")");
    const bool f64 = accumulates_in_f64(in.type, out_spec_.type, p.precision);
    layout_ =
        Layout{in.row_bytes(), static_cast<std::size_t>(in.row_samples()) * (f64 ? 8 : 4),
               out_spec_.row_bytes(), static_cast<std::size_t>(f64 ? 8 : 4), p.filter.radius_y()};
    base_.width = in.width;
    base_.channels = in.channels;
    base_.in_type = in.type;
    base_.out_type = out_spec_.type;
    base_.rx = p.filter.radius_x();
    base_.ry = p.filter.radius_y();
    base_.border = p.border;
    base_.border_value = p.border_value;
    base_.f64 = f64;
  }

  std::string describe() const override {
    return params_.filter.describe() + ", border " + std::string(name(params_.border)) +
           ", accumulate " + (base_.f64 ? "f64" : "f32");
  }
  std::string backend() const override {
    std::string s = "cuda:";
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      if (i > 0) s += ',';
      s += std::to_string(devices_[i]);
    }
    s += " (";
    s += cuda::device_name(devices_[0]);
    s += ')';
    return s;
  }
  std::int64_t halo_rows() const override { return layout_.ry; }
  BorderMode border() const override { return params_.border; }
  ImageSpec output_spec() const override { return out_spec_; }
  // Tall bands: PCIe moves each band's halo rows again, so the halo share must stay small.
  std::size_t target_slot_bytes() const override { return std::size_t{256} << 20; }
  // Read, copy in, compute, copy out and write of different bands at once, on every device.
  int preferred_slots(int) const override { return 4 * static_cast<int>(devices_.size()); }

  std::size_t slot_bytes(std::int64_t band_rows) const override {
    return layout_.pinned_bytes(band_rows) +
           static_cast<std::size_t>(band_rows + 2 * layout_.ry) * sizeof(void*);
  }
  std::size_t shared_bytes(std::int64_t, int) const override { return 0; }
  bool reads_rows_itself() const override { return true; }

  std::int64_t max_band_rows(int slots) const override {
    std::int64_t best = std::numeric_limits<std::int64_t>::max();
    const int n = static_cast<int>(devices_.size());
    for (int i = 0; i < n; ++i) {
      const int on_device = (slots - i + n - 1) / n;
      if (on_device == 0) continue;
      std::size_t free_b = 0, total_b = 0;
      cuda::device_memory(devices_[i], free_b, total_b);
      // Leave room for the CUDA context's own needs and other users of the GPU.
      const std::size_t usable = free_b / 10 * 9;
      const std::size_t per_slot = usable / static_cast<std::size_t>(on_device);
      const std::size_t taps = (row_taps_.size() + col_taps_.size()) * layout_.acc;
      std::int64_t lo = 0, hi = out_spec_.height;
      while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo + 1) / 2;
        if (layout_.device_bytes(mid) + taps <= per_slot)
          lo = mid;
        else
          hi = mid - 1;
      }
      if (lo < 1)
        throw Error(ErrorKind::device, "GPU " + std::to_string(devices_[i]) + " has " +
                                           format_bytes(double(free_b)) + " free, too little for " +
                                           std::to_string(on_device) +
                                           " slot(s) of one-row bands (" +
                                           format_bytes(double(layout_.device_bytes(1) + taps)) +
                                           " each): lower --slots or use --device cpu");
      best = std::min(best, lo);
    }
    return best;
  }

  std::unique_ptr<SlotKernel> make_slot(std::int64_t band_rows, int slot_index) override {
    const int device = devices_[static_cast<std::size_t>(slot_index) % devices_.size()];
    return std::make_unique<SeparableCudaSlot>(device, layout_, base_, row_taps_, col_taps_,
                                               band_rows);
  }

 private:
  SeparableParams params_;
  PipelineOptions options_;
  std::vector<int> devices_;
  ImageSpec out_spec_;
  std::vector<double> row_taps_, col_taps_;
  Layout layout_{};
  cuda::SeparableLaunch base_;
};

}  // namespace

std::unique_ptr<Operation> make_separable_cuda(const ImageSpec& input,
                                               const SeparableParams& params,
                                               const PipelineOptions& options,
                                               const std::vector<int>& devices) {
  return std::make_unique<SeparableCuda>(input, params, options, devices);
}

int cuda_device_count() noexcept {
  return cuda::device_count();
}

std::string cuda_device_name(int device) {
  return cuda::device_name(device);
}

}  // namespace ooc
