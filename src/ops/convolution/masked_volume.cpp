// Normalized convolution of a volume in 3-D (issue 48): the separable stages (gaussian, uniform,
// correlate1d, separable: z taps, then column and row taps) and convolve with a 3-D kernel (the
// direct sum) give sum(k x m) / sum(k m) over each 3-D window's valid samples
// (kernels/cpu/masked/volume.hpp); on the GPU too, with the CPU's roundings
// (masked_volume_cuda.cpp). Built by the stages where the pipeline has a nodata value and filters
// a volume in 3-D.
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/digest.hpp"
#include "kernels/cpu/convolution/separable.hpp"
#include "kernels/cpu/masked/pool.hpp"
#include "kernels/cpu/masked/volume.hpp"
#include "ooc/error.hpp"
#include "ooc/precision.hpp"
#include "ops/convolution/band_fill.hpp"
#include "ops/convolution/fold_taps.hpp"
#include "ops/convolution/method_param.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

class MaskedVolumeKernel final : public CpuKernel {
 public:
  explicit MaskedVolumeKernel(const kernels::masked::VolumeNormalizedArgs& a) : base_(a) {}
  void run(const CpuBand& b) override {
    kernels::masked::VolumeNormalizedArgs a = base_;
    set_band(a, b);
    a.halo = b.halo;
    a.plane_halo = b.plane_halo;
    auto scratch = pool_.take();
    kernels::masked::volume_normalized_band(a, *scratch);
  }

 private:
  kernels::masked::VolumeNormalizedArgs base_;
  kernels::masked::BufferPool<std::vector<std::byte>> pool_;
};

double abs_sum(const std::vector<double>& t) {
  double s = 0;
  for (double v : t) s += std::fabs(v);
  return s;
}

// Both forms: `what` says the kernel, `values` its taps' digest.
class MaskedVolume final : public Operation {
 public:
  MaskedVolume(const StageContext& c, std::string what, double min_weight, bool fill)
      : what_(std::move(what)), out_{c.in.width, c.in.height, c.in.channels,
                                     c.out(),    c.in.depth,  c.in.stack} {
    set_images(a_, c.in, out_, c.settings.border, c.settings.border_value);
    a_.nodata = *c.settings.nodata;
    a_.min_weight = min_weight;
    a_.fill = fill;
    a_.f64 = accumulates_in_f64(c.in.type, out_.type, c.settings.precision);
  }
  // z, col, row in convolution order.
  void separable(const std::vector<double>& z, std::int64_t depth, const SeparableFilter& xy) {
    total_ = abs_sum(z) * abs_sum(xy.col) * abs_sum(xy.row);
    const std::vector<double> zc(z.rbegin(), z.rend());
    std::vector<double> za;
    for (double t : zc) za.push_back(std::fabs(t));
    z_ = fold_taps(zc, depth, a_.border);
    z_abs_ = fold_taps(za, depth, a_.border);
    col_ = correlation_taps(xy.col);
    row_ = correlation_taps(xy.row);
    if (z_.size() % 2 == 0 || col_.size() % 2 == 0 || row_.size() % 2 == 0)
      throw Error(ErrorKind::usage, "filter tap counts must be odd");
    a_.z_taps = z_.data();
    a_.z_abs = z_abs_.data();
    a_.col_taps = col_.data();
    a_.row_taps = row_.data();
    a_.rz = static_cast<std::int64_t>(z_.size() / 2);
    a_.ry = static_cast<std::int64_t>(col_.size() / 2);
    a_.rx = static_cast<std::int64_t>(row_.size() / 2);
    a_.total_abs = total_;
    values_ = Digest().add(z_).add(z_abs_).add(col_).add(row_).hex();
  }
  // A planes x rows x cols kernel in convolution order (as scipy.ndimage.convolve's weights).
  void direct(const Kernel2d& k) {
    if (k.planes % 2 == 0 || k.rows % 2 == 0 || k.cols % 2 == 0)
      throw Error(ErrorKind::usage, "kernel '" + k.name + "' must have odd sides");
    taps_.assign(k.taps.rbegin(), k.taps.rend());  // correlation order
    total_ = abs_sum(taps_);
    a_.taps3d = taps_.data();
    a_.rz = k.planes / 2;
    a_.ry = k.rows / 2;
    a_.rx = k.cols / 2;
    a_.total_abs = total_;
    values_ = Digest().add(taps_).hex();
  }
  std::string describe() const override {
    char w[64];
    std::snprintf(w, sizeof w, "%g", a_.min_weight);
    return "normalized 3-D " + what_ + ", border " + std::string(name(a_.border)) + ", nodata " +
           nodata_text(a_.nodata) + ", min-weight " + w +
           (a_.fill ? ", holes filled" : ", holes kept") + ", accumulate " +
           (a_.f64 ? "f64" : "f32");
  }
  std::string fingerprint() const override {
    return describe() + ", values " +
           Digest().add(values_).add(a_.border_value).add(a_.min_weight).hex() + " to " +
           std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return a_.ry; }
  std::int64_t plane_halo() const override { return a_.rz; }
  BorderMode border() const override { return a_.border; }
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return kernels::masked::volume_normalized_thread_bytes(sized(band_rows, cols));
  }
  std::size_t cpu_band_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return kernels::masked::volume_normalized_band_bytes(sized(band_rows, cols));
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<MaskedVolumeKernel>(a_);
  }
  bool has_cuda() const override {
    return kCudaBuilt && 2 * a_.rz + 1 <= kMaskedVolumeCudaMaxPlanes;
  }
  // As the 2-D normalized convolution's (masked_separable.cpp): an fma a tap in tap order.
  bool cpu_gives_cuda_bits() const override { return !a_.f64 && kernels::sums_fma(); }
  std::size_t cuda_scratch_bytes(std::int64_t band_rows) const override {
#if defined(OOC_HAVE_CUDA)
    return masked_volume_cuda_scratch(cuda_args(), band_rows);
#else
    (void)band_rows;
    return 0;
#endif
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_masked_volume_cuda(devices, cuda_args());
#else
    (void)devices;
    return nullptr;
#endif
  }
  Cost cost() const override {
    Cost c;
    c.kind = a_.taps3d ? Cost::Kind::conv2d : Cost::Kind::separable;
    c.f64 = a_.f64;
    c.taps = a_.taps3d ? 2.0 * double(taps_.size())
                       : 2.0 * double(z_.size() + col_.size() + row_.size());
    return c;
  }

 private:
  kernels::masked::VolumeNormalizedArgs sized(std::int64_t rows, std::int64_t cols) const {
    kernels::masked::VolumeNormalizedArgs a = a_;
    a.out_rows = rows;
    a.width = cols;
    a.halo = a.ry;
    a.plane_halo = a.rz;
    return a;
  }
  MaskedVolumeCudaArgs cuda_args() const {
    MaskedVolumeCudaArgs m;
    m.z = z_;
    m.z_abs = z_abs_;
    m.col = col_;
    m.row = row_;
    m.taps3d = taps_;
    m.rz = a_.rz;
    m.ry = a_.ry;
    m.rx = a_.rx;
    m.out = out_;
    m.border = a_.border;
    m.border_value = a_.border_value;
    m.nodata = a_.nodata;
    m.min_weight_need = a_.min_weight * a_.total_abs;
    m.fill = a_.fill;
    m.f64 = a_.f64;
    return m;
  }

  std::string what_, values_;
  ImageSpec out_;
  std::vector<double> z_, z_abs_, col_, row_, taps_;
  double total_ = 1;
  kernels::masked::VolumeNormalizedArgs a_;
};

}  // namespace

std::unique_ptr<Operation> make_masked_volume_separable(const StageContext& c,
                                                        const std::vector<double>& z,
                                                        const SeparableFilter& xy,
                                                        const std::string& what) {
  auto op = std::make_unique<MaskedVolume>(c, what, c.args.number("min-weight"), fill_of(c));
  op->separable(z, c.in.depth, xy);
  return op;
}

bool masked_in_3d(const std::string& name) {
  for (const char* s : {"gaussian", "uniform", "correlate1d", "separable", "convolve", "median",
                        "percentile", "rank", "minimum", "maximum", "opening", "closing"})
    if (name == s) return true;
  return false;
}

std::unique_ptr<Operation> make_masked_conv3d(const StageContext& c, const Kernel2d& k) {
  if (method_of(c.args) == ConvMethod::fft)
    throw Error(ErrorKind::usage, c.args.at() +
                                      ": under --nodata a volume's 3-D kernel is summed directly: "
                                      "give method=direct (or auto), or --planes for 2-D FFTs");
  auto op = std::make_unique<MaskedVolume>(c,
                                           "convolve " + k.name + " (" + std::to_string(k.planes) +
                                               "x" + std::to_string(k.rows) + "x" +
                                               std::to_string(k.cols) + ", direct)",
                                           c.args.number("min-weight"), fill_of(c));
  op->direct(k);
  return op;
}

}  // namespace ooc::detail
