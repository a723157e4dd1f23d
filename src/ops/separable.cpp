// Separable convolution (row pass along x, then column pass along y): its declaration and CPU
// kernel; the CUDA kernel is made in separable_cuda.cpp.
#include "ooc/ops/separable.hpp"

#include <string_view>
#include <vector>

#include "band_fill.hpp"
#include "cuda_kernels.hpp"
#include "io/digest.hpp"
#include "kernels/cpu/separable.hpp"
#include "ooc/error.hpp"

namespace ooc {

bool accumulates_in_f64(SampleType input, SampleType output, Precision precision) noexcept {
  if (precision != Precision::automatic) return precision == Precision::f64;
  // f32 holds integers exactly only up to 2^24: 32-bit integers, read or written, need f64.
  auto wide = [](SampleType t) {
    return t == SampleType::f64 || t == SampleType::u32 || t == SampleType::i32;
  };
  return wide(input) || wide(output);
}

namespace {

class SeparableCpuKernel final : public CpuKernel {
 public:
  explicit SeparableCpuKernel(const cpu::SeparableArgs& base) : base_(base) {}
  void run(const CpuBand& b) override {
    cpu::SeparableArgs a = base_;
    detail::set_band(a, b);
    cpu::separable_band(a);
  }

 private:
  cpu::SeparableArgs base_;
};

class Separable final : public Operation {
 public:
  Separable(const ImageSpec& in, const SeparableParams& p, const PipelineOptions& o)
      : params_(p),
        out_spec_{in.width, in.height, in.channels, p.out_type.value_or(in.type)},
        row_taps_(correlation_taps(p.filter.row)),
        col_taps_(correlation_taps(p.filter.col)) {
    if (row_taps_.size() % 2 == 0 || col_taps_.size() % 2 == 0)
      throw Error(ErrorKind::usage, "filter tap counts must be odd");
    detail::set_images(args_, in, out_spec_, p.border, p.border_value);
    args_.row_taps = row_taps_.data();
    args_.rx = p.filter.radius_x();
    args_.col_taps = col_taps_.data();
    args_.ry = p.filter.radius_y();
    args_.strip_samples = o.strip_samples;
    args_.f64 = accumulates_in_f64(in.type, out_spec_.type, p.precision);
  }

  std::string describe() const override {
    return params_.filter.describe() + ", border " + std::string(name(params_.border)) +
           ", accumulate " + (args_.f64 ? "f64" : "f32");
  }
  std::string fingerprint() const override {
    return describe() + ", values " +
           detail::Digest()
               .add(params_.filter.row)
               .add(params_.filter.col)
               .add(params_.border_value)
               .add(std::string(name(params_.border)))
               .hex() +
           " to " + std::string(name(out_spec_.type));
  }
  std::optional<ImageSpec> output() const override { return out_spec_; }
  std::int64_t halo() const override { return args_.ry; }
  BorderMode border() const override { return params_.border; }

  std::size_t cpu_scratch_bytes(std::int64_t band_rows) const override {
    cpu::SeparableArgs a = args_;
    a.out_rows = band_rows;
    return cpu::separable_scratch_bytes(a);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<SeparableCpuKernel>(args_);
  }

  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::separable;
    c.taps = double(row_taps_.size() + col_taps_.size());
    c.f64 = args_.f64;
    return c;
  }
  bool has_cuda() const override { return kCudaBuilt; }
  // Float sums: both round every sample the same way (FMA in tap order from a plain first
  // product, a float intermediate, round-to-nearest-even stores), checked byte for byte by
  // test_gpu (docs/design.md, "Starting CUDA"). Without FMA the CPU rounds each product; double
  // sums differ in the last bit (f64 images, radius 3).
  bool cpu_gives_cuda_bits() const override {
    return !args_.f64 && std::string_view(cpu::separable_isa()) != "baseline";
  }
  std::size_t cuda_scratch_bytes(std::int64_t band_rows) const override {
#if defined(OOC_HAVE_CUDA)
    return separable_cuda_scratch(band_rows, args_.ry, out_spec_.row_samples(), args_.f64);
#else
    (void)band_rows;
    return 0;
#endif
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_separable_cuda(devices, out_spec_, params_, row_taps_, col_taps_, args_.f64);
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  SeparableParams params_;
  ImageSpec out_spec_;
  std::vector<double> row_taps_, col_taps_;
  cpu::SeparableArgs args_;
};

}  // namespace

std::unique_ptr<Operation> make_separable(const ImageSpec& input, const SeparableParams& params,
                                          const PipelineOptions& options) {
  return std::make_unique<Separable>(input, params, options);
}

}  // namespace ooc
