// A volume's convolution with a 3-D kernel (scipy.ndimage.convolve in 3-D): the sum over the
// kernel's planes of the 2-D convolutions (conv2d.cpp, direct or FFT) of the matching planes of
// the band's planes of context, each written in the 2-D convolution's accumulator and summed
// there plane by plane, then converted to the output's type once.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cpu/point/pointwise.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/separable.hpp"
#include "ops/convolution/plane_band.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/pipeline/chain_impl.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
#if defined(OOC_HAVE_CUDA)
namespace detail {
// conv3d_cuda.cpp: as Conv3dKernel, on the device.
std::unique_ptr<CudaKernel> make_conv3d_cuda(const std::vector<int>& devices,
                                             const std::vector<const Operation*>& slices,
                                             std::vector<std::int64_t> dz, BorderMode border,
                                             bool f64, SampleType out);
std::size_t conv3d_cuda_scratch(const std::vector<const Operation*>& slices, std::int64_t rows,
                                std::int64_t row_samples, bool f64);
}  // namespace detail
#endif
namespace {

class Conv3dKernel final : public CpuKernel {
 public:
  // slices[i] convolves input plane z + dz[i].
  Conv3dKernel(const std::vector<const Operation*>& slices, std::vector<std::int64_t> dz, bool f64,
               SampleType out)
      : dz_(std::move(dz)), f64_(f64), out_(out) {
    for (const Operation* op : slices) k_.push_back(op->make_cpu());
  }
  void start(int slot) override {
    for (auto& k : k_) k->start(slot);
  }
  void stop(int slot) override {
    for (auto& k : k_) k->stop(slot);
  }
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples(), rows = b.band.rows;
    const std::size_t row_bytes = static_cast<std::size_t>(n) * (f64_ ? 8 : 4);
    const std::size_t bytes = row_bytes * static_cast<std::size_t>(rows);
    detail::ScratchBuffer buf = pool_.take(2 * bytes);
    const SampleType at = f64_ ? SampleType::f64 : SampleType::f32;
    const BandView sum{buf.data(), row_bytes, rows, b.in.width, b.in.channels, at};
    const BandView part{buf.data() + bytes, row_bytes, rows, b.in.width, b.in.channels, at};
    for (std::size_t i = 0; i < k_.size(); ++i) {
      k_[i]->run(detail::plane_band(b, dz_[i], b.halo, i == 0 ? sum : part));
      if (i == 0) continue;
      tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t y) {
        auto add = [&](auto acc) {
          using Acc = decltype(acc);
          Acc* s = reinterpret_cast<Acc*>(sum.row(y));
          const Acc* p = reinterpret_cast<const Acc*>(part.row(y));
          for (std::int64_t j = 0; j < n; ++j) s[j] += p[j];
        };
        if (f64_)
          add(double{});
        else
          add(float{});
      });
    }
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t y) {
      dispatch_type(out_, [&](auto o) {
        using Out = decltype(o);
        auto put = [&](auto acc) {
          using Acc = decltype(acc);
          const Acc* s = reinterpret_cast<const Acc*>(sum.row(y));
          for (std::int64_t j = 0; j < n; ++j)
            kernels::store<Out>(b.out.row(y), j, kernels::convert_sample<Acc, Out>(s[j]));
        };
        if (f64_)
          put(double{});
        else
          put(float{});
      });
    });
    pool_.give(std::move(buf));
  }

 private:
  std::vector<std::int64_t> dz_;
  bool f64_;
  SampleType out_;
  std::vector<std::unique_ptr<CpuKernel>> k_;
  detail::BufferPool pool_;
};

class Conv3d final : public Operation {
 public:
  Conv3d(const ImageSpec& in, const Conv2dParams& p, const EngineOptions& o) : in_(in), p_(p) {
    const Kernel2d& k = p.kernel;
    out_ = in;
    out_.type = p.out_type.value_or(in.type);
    f64_ = accumulates_in_f64(in.type, out_.type, p.precision);
    // One method for every plane (their bands must agree on the FFT's grid): the one the cost
    // model picks for a plane of the kernel.
    Conv2dParams s = p;
    s.kernel.planes = 1;
    s.kernel.axes3 = false;
    s.kernel.taps.assign(static_cast<std::size_t>(k.rows * k.cols), 1.0);
    s.out_type = f64_ ? SampleType::f64 : SampleType::f32;
    s.precision = f64_ ? Precision::f64 : Precision::f32;
    if (p.method == ConvMethod::fft && !conv2d_costs(in, s).cpu_uses_fft)
      throw Error(ErrorKind::usage, "--method fft: no FFT tile holds a plane of the " + shape() +
                                        " kernel: use --method direct");
    s.method = conv2d_costs(in, s).cpu_uses_fft ? ConvMethod::fft : ConvMethod::direct;
    // Convolution: kernel plane j meets input plane z + P/2 - j. Planes of zeros add nothing
    // (one is kept: a kernel of zeros).
    const std::int64_t plane = k.rows * k.cols;
    for (std::int64_t j = 0; j < k.planes; ++j) {
      s.kernel.taps.assign(k.taps.begin() + j * plane, k.taps.begin() + (j + 1) * plane);
      const bool zero =
          std::all_of(s.kernel.taps.begin(), s.kernel.taps.end(), [](double t) { return t == 0; });
      if (zero && !(slices_.empty() && j == k.planes - 1)) continue;
      s.kernel.name = k.name + " plane " + std::to_string(j);
      slices_.push_back(make_conv2d(in, s, o));
      dz_.push_back(k.planes / 2 - j);
    }
  }
  std::string describe() const override {
    return "3-D " + shape() + " kernel " + p_.kernel.name + " (" + std::to_string(slices_.size()) +
           " planes of 2-D convolutions, summed in " + (f64_ ? "f64" : "f32") +
           "): " + slices_[0]->describe();
  }
  std::string fingerprint() const override {
    std::string f = "3-D " + shape() + " to " + std::string(name(out_.type));
    for (std::size_t i = 0; i < slices_.size(); ++i)
      f += "; " + std::to_string(dz_[i]) + ": " + slices_[i]->fingerprint();
    return f;
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return slices_[0]->halo(); }
  std::int64_t plane_halo() const override { return p_.kernel.planes / 2; }
  std::int64_t row_grid() const override { return slices_[0]->row_grid(); }
  std::int64_t grid_halo() const override { return slices_[0]->grid_halo(); }
  std::int64_t fit_band_rows(std::int64_t rows, std::int64_t span) const override {
    return slices_[0]->fit_band_rows(rows, span);
  }
  BorderMode border() const override { return p_.border; }
  std::optional<std::int64_t> column_halo() const override { return slices_[0]->column_halo(); }
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    std::size_t n = 0;
    for (const auto& s : slices_) n += s->cpu_scratch_bytes(rows, cols);
    return n;
  }
  // The sum and one plane's convolution of a band.
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    std::size_t n = 2 * static_cast<std::size_t>(rows) *
                    static_cast<std::size_t>(cols * in_.channels) * (f64_ ? 8 : 4);
    for (const auto& s : slices_) n += s->cpu_band_bytes(rows, cols);
    return n;
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<Conv3dKernel>(slices(), dz_, f64_, out_.type);
  }
  // Each plane's 2-D convolution on the device, direct or by FFT as the slices choose.
  bool has_cuda() const override {
    return kCudaBuilt &&
           std::all_of(slices_.begin(), slices_.end(), [](const auto& s) { return s->has_cuda(); });
  }
  bool cpu_gives_cuda_bits() const override {
    return std::all_of(slices_.begin(), slices_.end(),
                       [](const auto& s) { return s->cpu_gives_cuda_bits(); });
  }
#if defined(OOC_HAVE_CUDA)
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return detail::conv3d_cuda_scratch(slices(), rows, in_.row_samples(), f64_);
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    return detail::make_conv3d_cuda(devices, slices(), dz_, p_.border, f64_, out_.type);
  }
#endif
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::fused;
    for (const auto& s : slices_) c.stages.push_back(s->cost());
    return c;
  }

 private:
  std::vector<const Operation*> slices() const {
    std::vector<const Operation*> s;
    for (const auto& op : slices_) s.push_back(op.get());
    return s;
  }
  std::string shape() const {
    const Kernel2d& k = p_.kernel;
    return std::to_string(k.planes) + "x" + std::to_string(k.rows) + "x" + std::to_string(k.cols);
  }
  ImageSpec in_, out_;
  Conv2dParams p_;
  bool f64_ = false;
  std::vector<std::unique_ptr<Operation>> slices_;
  std::vector<std::int64_t> dz_;
};

}  // namespace

std::unique_ptr<Operation> make_conv3d(const ImageSpec& input, const Conv2dParams& params,
                                       const EngineOptions& options) {
  return std::make_unique<Conv3d>(input, params, options);
}

}  // namespace ooc
