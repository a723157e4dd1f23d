// Normalized convolution (issue 48): the separable stages (gaussian, uniform, correlate1d,
// separable) and convolve's direct sum, of an image with holes, sum(k x m) / sum(k m) over each
// window's valid samples, as two separable passes over x m and over m
// (kernels/cpu/masked/masked.hpp). Built by the stages where the pipeline has a nodata value; runs
// on the CPU only.
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/digest.hpp"
#include "kernels/cpu/masked/masked.hpp"
#include "ooc/error.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

class MaskedSeparableKernel final : public CpuKernel {
 public:
  explicit MaskedSeparableKernel(const kernels::masked::SeparableArgs& a) : base_(a) {}
  void run(const CpuBand& b) override {
    kernels::masked::SeparableArgs a = base_;
    a.rows = b.rows + (b.halo - a.ry);  // a band may carry more context than the taps read
    a.out_rows = b.band.rows;
    a.width = b.in.width;
    a.out = b.out.data;
    a.out_stride = b.out.row_stride;
    thread_local std::vector<double> scratch;
    kernels::masked::separable_band(a, scratch);
  }

 private:
  kernels::masked::SeparableArgs base_;
};

class MaskedSeparable final : public Operation {
 public:
  MaskedSeparable(const ImageSpec& in, const SeparableFilter& f, SampleType out,
                  const PipelineSettings& s, double min_weight, bool fill)
      : filter_(f),
        out_{in.width, in.height, in.channels, out, in.depth, in.stack},
        row_(correlation_taps(f.row)),
        col_(correlation_taps(f.col)) {
    if (row_.size() % 2 == 0 || col_.size() % 2 == 0)
      throw Error(ErrorKind::usage, "filter tap counts must be odd");
    a_.channels = in.channels;
    a_.in_type = in.type;
    a_.out_type = out;
    a_.border = s.border;
    a_.cval = s.border_value;
    a_.row = row_.data();
    a_.rx = f.radius_x();
    a_.col = col_.data();
    a_.ry = f.radius_y();
    a_.nodata = *s.nodata;
    a_.min_weight = min_weight;
    a_.fill = fill;
  }
  std::string describe() const override {
    char w[64];
    std::snprintf(w, sizeof w, "%g", a_.min_weight);
    return "normalized " + filter_.describe() + ", border " + std::string(name(a_.border)) +
           ", nodata " + nodata_text(a_.nodata) + ", min-weight " + w +
           (a_.fill ? ", holes filled" : ", holes kept") + ", accumulate f64";
  }
  std::string fingerprint() const override {
    return "normalized " + filter_.describe() + ", border " + std::string(name(a_.border)) +
           ", values " +
           Digest()
               .add(filter_.row)
               .add(filter_.col)
               .add(a_.cval)
               .add(nodata_text(a_.nodata))
               .add(a_.min_weight)
               .add(std::string(a_.fill ? "fill" : "keep"))
               .hex() +
           " to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return a_.ry; }
  BorderMode border() const override { return a_.border; }
  // Whole rows: the kernel maps the border's columns itself (column_table).
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return kernels::masked::separable_scratch_doubles(band_rows, a_.ry, a_.rx, cols, a_.channels) *
           sizeof(double);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<MaskedSeparableKernel>(a_);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::separable;
    c.f64 = true;
    c.taps = 3.0 * double(row_.size() + col_.size());  // values, weights and |weights|
    return c;
  }

 private:
  SeparableFilter filter_;
  ImageSpec out_;
  std::vector<double> row_, col_;
  kernels::masked::SeparableArgs a_;
};

class MaskedConv2dKernel final : public CpuKernel {
 public:
  explicit MaskedConv2dKernel(const kernels::masked::Conv2dArgs& a) : base_(a) {}
  void run(const CpuBand& b) override {
    kernels::masked::Conv2dArgs a = base_;
    a.rows = b.rows + (b.halo - a.ry);
    a.out_rows = b.band.rows;
    a.width = b.in.width;
    a.out = b.out.data;
    a.out_stride = b.out.row_stride;
    thread_local std::vector<double> scratch;
    kernels::masked::conv2d_band(a, scratch);
  }

 private:
  kernels::masked::Conv2dArgs base_;
};

// convolve's normalized convolution: the direct sum over the kernel's K x L window (the FFT
// would need the transforms of x m and of m; not built).
class MaskedConv2d final : public Operation {
 public:
  MaskedConv2d(const ImageSpec& in, const Kernel2d& k, SampleType out, const PipelineSettings& s,
               double min_weight, bool fill)
      : kernel_(k), out_{in.width, in.height, in.channels, out, in.depth, in.stack} {
    if (k.rows % 2 == 0 || k.cols % 2 == 0)
      throw Error(ErrorKind::usage, "kernel '" + k.name + "' must have odd sides");
    // Correlation order: the kernel turned by half a turn, as scipy.ndimage.convolve does.
    taps_.assign(k.taps.rbegin(), k.taps.rend());
    a_.channels = in.channels;
    a_.in_type = in.type;
    a_.out_type = out;
    a_.border = s.border;
    a_.cval = s.border_value;
    a_.taps = taps_.data();
    a_.ry = k.rows / 2;
    a_.rx = k.cols / 2;
    a_.nodata = *s.nodata;
    a_.min_weight = min_weight;
    a_.fill = fill;
  }
  std::string describe() const override {
    return "normalized convolve " + kernel_.name + " (" + std::to_string(kernel_.rows) + "x" +
           std::to_string(kernel_.cols) + ", direct), border " + std::string(name(a_.border)) +
           ", nodata " + nodata_text(a_.nodata) + (a_.fill ? ", holes filled" : ", holes kept") +
           ", accumulate f64";
  }
  std::string fingerprint() const override {
    return describe() + ", values " +
           Digest()
               .add(kernel_.taps)
               .add(a_.cval)
               .add(a_.min_weight)
               .add(double(kernel_.cols))
               .hex() +
           " to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return a_.ry; }
  BorderMode border() const override { return a_.border; }
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return kernels::masked::conv2d_scratch_doubles(band_rows, a_.ry, cols, a_.channels) *
           sizeof(double);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<MaskedConv2dKernel>(a_);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::conv2d;
    c.f64 = true;
    c.taps = 3.0 * double(taps_.size());
    return c;
  }

 private:
  Kernel2d kernel_;
  ImageSpec out_;
  std::vector<double> taps_;
  kernels::masked::Conv2dArgs a_;
};

// fill= as the stage gives it.
bool fill_of(const StageContext& c) {
  const std::string fill = c.args.text("fill");
  if (fill != "true" && fill != "false")
    throw Error(ErrorKind::usage, c.args.at() + ": fill takes true or false, got '" + fill + "'");
  return fill == "true";
}

}  // namespace

std::unique_ptr<Operation> make_masked_conv2d(const StageContext& c, const Kernel2d& k) {
  return std::make_unique<MaskedConv2d>(c.in, k, c.out(), c.settings, c.args.number("min-weight"),
                                        fill_of(c));
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
  return std::make_unique<MaskedSeparable>(c.in, f, c.out(), c.settings,
                                           c.args.number("min-weight"), fill_of(c));
}

}  // namespace ooc::detail
