// Normalized convolution (issue 48): the separable stages (gaussian, uniform, correlate1d,
// separable) and convolve's direct sum, of an image with holes, sum(k x m) / sum(k m) over each
// window's valid samples, as two separable passes over x m and over m
// (kernels/cpu/masked/normalized.hpp; on the GPU the separable stages' through
// kernels/cuda/masked). Built by the stages where the pipeline has a nodata value.
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/digest.hpp"
#include "kernels/cpu/convolution/separable.hpp"
#include "kernels/cpu/masked/normalized.hpp"
#include "ooc/error.hpp"
#include "ooc/precision.hpp"
#include "ops/convolution/band_fill.hpp"
#include "ops/convolution/method_param.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

// One band of either operation: the normalized kernel of kernels/cpu/masked/normalized.hpp.
class NormalizedKernel final : public CpuKernel {
 public:
  explicit NormalizedKernel(const kernels::masked::NormalizedArgs& a) : base_(a) {}
  void run(const CpuBand& b) override {
    kernels::masked::NormalizedArgs a = base_;
    set_band(a, b, b.halo - a.ry);  // a band may carry more context than the taps read
    kernels::masked::normalized_band(a);
  }

 private:
  kernels::masked::NormalizedArgs base_;
};

// What both operations fill alike: the images, the border, nodata, min-weight and fill, and the
// accumulator (as the unmasked kernels pick it).
void set_common(kernels::masked::NormalizedArgs& a, const ImageSpec& in, const ImageSpec& out,
                const StageContext& c, double min_weight, bool fill) {
  set_images(a, in, out, c.settings.border, c.settings.border_value);
  a.nodata = *c.settings.nodata;
  a.min_weight = min_weight;
  a.fill = fill;
  a.f64 = accumulates_in_f64(in.type, out.type, c.settings.precision);
  a.strip_samples = c.options.strip_samples;
}

std::string accumulate_text(const kernels::masked::NormalizedArgs& a) {
  return std::string(", accumulate ") + (a.f64 ? "f64" : "f32");
}

std::size_t scratch_of(kernels::masked::NormalizedArgs a, std::int64_t band_rows,
                       std::int64_t cols) {
  a.out_rows = band_rows;
  a.width = cols;
  return kernels::masked::normalized_scratch_bytes(a);
}

class MaskedSeparable final : public Operation {
 public:
  MaskedSeparable(const StageContext& c, const SeparableFilter& f, SampleType out,
                  double min_weight, bool fill)
      : filter_(f),
        out_{c.in.width, c.in.height, c.in.channels, out, c.in.depth, c.in.stack},
        row_(correlation_taps(f.row)),
        col_(correlation_taps(f.col)) {
    if (row_.size() % 2 == 0 || col_.size() % 2 == 0)
      throw Error(ErrorKind::usage, "filter tap counts must be odd");
    set_common(a_, c.in, out_, c, min_weight, fill);
    a_.row_taps = row_.data();
    a_.rx = f.radius_x();
    a_.col_taps = col_.data();
    a_.ry = f.radius_y();
  }
  std::string describe() const override {
    char w[64];
    std::snprintf(w, sizeof w, "%g", a_.min_weight);
    return "normalized " + filter_.describe() + ", border " + std::string(name(a_.border)) +
           ", nodata " + nodata_text(a_.nodata) + ", min-weight " + w +
           (a_.fill ? ", holes filled" : ", holes kept") + accumulate_text(a_);
  }
  std::string fingerprint() const override {
    return "normalized " + filter_.describe() + ", border " + std::string(name(a_.border)) +
           accumulate_text(a_) + ", values " +
           Digest()
               .add(filter_.row)
               .add(filter_.col)
               .add(a_.border_value)
               .add(nodata_text(a_.nodata))
               .add(a_.min_weight)
               .add(std::string(a_.fill ? "fill" : "keep"))
               .hex() +
           " to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return a_.ry; }
  BorderMode border() const override { return a_.border; }
  // Whole rows: the kernel maps the border's columns itself.
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return scratch_of(a_, band_rows, cols);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<NormalizedKernel>(a_);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::separable;
    c.f64 = a_.f64;
    c.taps = double(row_.size() + col_.size());  // the numerator; weights only near holes
    return c;
  }
  // The GPU's kernel (kernels/cuda/masked) rounds as the CPU's AVX2 one: an fma a tap in tap
  // order from a plain first product, a float division; not the baseline's separate products,
  // and the double sums are not checked.
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return !a_.f64 && kernels::sums_fma(); }
  std::size_t cuda_scratch_bytes(std::int64_t band_rows) const override {
#if defined(OOC_HAVE_CUDA)
    return masked_separable_cuda_scratch(band_rows, a_.ry, out_.row_samples(), a_.f64);
#else
    (void)band_rows;
    return 0;
#endif
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    MaskedCudaArgs m;
    m.row_taps = row_;
    m.col_taps = col_;
    m.out = out_;
    m.border = a_.border;
    m.border_value = a_.border_value;
    m.nodata = a_.nodata;
    m.min_weight = a_.min_weight;
    m.fill = a_.fill;
    m.f64 = a_.f64;
    return make_masked_separable_cuda(devices, m);
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  SeparableFilter filter_;
  ImageSpec out_;
  std::vector<double> row_, col_;
  kernels::masked::NormalizedArgs a_;
};

// convolve's normalized convolution by the direct sum over the kernel's K x L window (the FFT's
// is masked_fft.cpp's).
class MaskedConv2d final : public Operation {
 public:
  MaskedConv2d(const StageContext& c, const Kernel2d& k, double min_weight, bool fill)
      : kernel_(k), out_{c.in.width, c.in.height, c.in.channels, c.out(), c.in.depth, c.in.stack} {
    if (k.rows % 2 == 0 || k.cols % 2 == 0)
      throw Error(ErrorKind::usage, "kernel '" + k.name + "' must have odd sides");
    // Correlation order: the kernel turned by half a turn, as scipy.ndimage.convolve does.
    taps_.assign(k.taps.rbegin(), k.taps.rend());
    set_common(a_, c.in, out_, c, min_weight, fill);
    a_.taps2d = taps_.data();
    a_.ry = k.rows / 2;
    a_.rx = k.cols / 2;
  }
  std::string describe() const override {
    return "normalized convolve " + kernel_.name + " (" + std::to_string(kernel_.rows) + "x" +
           std::to_string(kernel_.cols) + ", direct), border " + std::string(name(a_.border)) +
           ", nodata " + nodata_text(a_.nodata) + (a_.fill ? ", holes filled" : ", holes kept") +
           accumulate_text(a_);
  }
  std::string fingerprint() const override {
    return describe() + ", values " +
           Digest()
               .add(kernel_.taps)
               .add(a_.border_value)
               .add(a_.min_weight)
               .add(double(kernel_.cols))
               .hex() +
           " to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return a_.ry; }
  BorderMode border() const override { return a_.border; }
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return scratch_of(a_, band_rows, cols);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<NormalizedKernel>(a_);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::conv2d;
    c.f64 = a_.f64;
    c.taps = double(taps_.size());
    return c;
  }
  // The GPU's sums (masked_conv2d_cuda.cpp) take the taps in the CPU's order and roundings.
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return !a_.f64 && kernels::sums_fma(); }
  std::size_t cuda_scratch_bytes(std::int64_t band_rows) const override {
#if defined(OOC_HAVE_CUDA)
    return masked_conv2d_cuda_scratch(cuda_args(), band_rows, a_.ry);
#else
    (void)band_rows;
    return 0;
#endif
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_masked_conv2d_cuda(devices, cuda_args());
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  MaskedConv2dCudaArgs cuda_args() const {
    MaskedConv2dCudaArgs m;
    m.taps = kernel_.taps;
    m.rows = kernel_.rows;
    m.cols = kernel_.cols;
    m.out = out_;
    m.border = a_.border;
    m.border_value = a_.border_value;
    m.nodata = a_.nodata;
    double total_abs = 0;  // as the CPU's kernel sums it: in correlation order
    for (const double t : taps_) total_abs += std::fabs(t);
    m.min_weight_need = a_.min_weight * total_abs;
    m.fill = a_.fill;
    m.f64 = a_.f64;
    return m;
  }

  Kernel2d kernel_;
  ImageSpec out_;
  std::vector<double> taps_;
  kernels::masked::NormalizedArgs a_;
};

}  // namespace

bool fill_of(const StageContext& c) {
  const std::string fill = c.args.text("fill");
  if (fill != "true" && fill != "false")
    throw Error(ErrorKind::usage, c.args.at() + ": fill takes true or false, got '" + fill + "'");
  return fill == "true";
}

std::unique_ptr<Operation> make_masked_conv2d(const StageContext& c, const Kernel2d& k) {
  const double min_weight = c.args.number("min-weight");
  const bool fill = fill_of(c);
  if (auto fft = make_masked_fft_conv2d(c, k, method_of(c.args), min_weight, fill)) return fft;
  return std::make_unique<MaskedConv2d>(c, k, min_weight, fill);
}

std::string nodata_text(double v) {
  return std::isnan(v) ? std::string("nan") : exact_number(v);
}

StageParam min_weight_param() {
  return number_param("min-weight", 0.0, 0, false,
                      "with --nodata: the least fraction of the window's |taps| on valid "
                      "samples; below it the output is nodata (0: at least one valid sample)",
                      1);
}

StageParam fill_param() {
  return other_param("fill", StageParam::Kind::text, std::string("false"),
                     "with --nodata: true gives holes the normalized value of their neighbours "
                     "(astropy's interpolate); false keeps them holes");
}

std::unique_ptr<Operation> make_masked_separable(const StageContext& c, const SeparableFilter& f) {
  return std::make_unique<MaskedSeparable>(c, f, c.out(), c.args.number("min-weight"), fill_of(c));
}

std::unique_ptr<Operation> make_masked_gaussian(const StageContext& c, double sigma) {
  return make_masked_gaussian(c, sigma, sigma);
}

std::unique_ptr<Operation> make_masked_gaussian(const StageContext& c, double sigma_y,
                                                double sigma_x) {
  auto taps = [](double s) {
    return s == 0 ? std::vector<double>{1.0} : gaussian_taps(gaussian_radius(s), s);
  };
  return std::make_unique<MaskedSeparable>(c, SeparableFilter{taps(sigma_x), taps(sigma_y)},
                                           c.acc(), 0.0, false);
}

}  // namespace ooc::detail
