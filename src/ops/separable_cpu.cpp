// Separable convolution on the CPU: the Operation that plugs kernels/cpu into the pipeline.
#include <vector>

#include "../../kernels/cpu/separable.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/separable.hpp"

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

class SeparableCpuSlot final : public SlotKernel {
 public:
  SeparableCpuSlot(const cpu::SeparableArgs& base, std::int64_t band_rows)
      : args_(base), out_(static_cast<std::size_t>(band_rows) * base.out_stride) {}

  void compute_async(const BandInput& in, const Band& band) override {
    args_.rows = in.rows;
    args_.out = out_.data();
    args_.out_rows = band.rows;
    cpu::separable_band(args_);
  }

  BandView wait() override {
    return BandView{out_.data(), args_.out_stride, args_.out_rows,
                    args_.width, args_.channels,   args_.out_type};
  }

 private:
  cpu::SeparableArgs args_;
  std::vector<std::byte> out_;
};

class SeparableCpu final : public Operation {
 public:
  SeparableCpu(const ImageSpec& in, const SeparableParams& p, const PipelineOptions& o)
      : params_(p),
        options_(o),
        out_spec_{in.width, in.height, in.channels, p.out_type.value_or(in.type)},
        row_taps_(correlation_taps(p.filter.row)),
        col_taps_(correlation_taps(p.filter.col)) {
    if (row_taps_.size() % 2 == 0 || col_taps_.size() % 2 == 0)
      throw Error(ErrorKind::usage, "filter tap counts must be odd");
    args_.width = in.width;
    args_.channels = in.channels;
    args_.in_type = in.type;
    args_.out_type = out_spec_.type;
    args_.out_stride = out_spec_.row_bytes();
    args_.row_taps = row_taps_.data();
    args_.rx = p.filter.radius_x();
    args_.col_taps = col_taps_.data();
    args_.ry = p.filter.radius_y();
    args_.border = p.border;
    args_.border_value = p.border_value;
    args_.strip_samples = o.strip_samples;
    args_.f64 = accumulates_in_f64(in.type, out_spec_.type, p.precision);
  }

  std::string describe() const override {
    return params_.filter.describe() + ", border " + std::string(name(params_.border)) +
           ", accumulate " + (args_.f64 ? "f64" : "f32");
  }
  std::string backend() const override { return std::string("cpu (") + cpu::separable_isa() + ")"; }
  std::int64_t halo_rows() const override { return args_.ry; }
  BorderMode border() const override { return params_.border; }
  ImageSpec output_spec() const override { return out_spec_; }
  std::size_t target_slot_bytes() const override { return options_.target_slot_bytes; }

  std::size_t slot_bytes(std::int64_t band_rows) const override {
    return static_cast<std::size_t>(band_rows) * out_spec_.row_bytes() +
           static_cast<std::size_t>(band_rows + 2 * args_.ry) * sizeof(void*);
  }
  std::size_t shared_bytes(std::int64_t band_rows, int threads) const override {
    cpu::SeparableArgs a = args_;
    a.out_rows = band_rows;
    return static_cast<std::size_t>(threads) * cpu::separable_scratch_bytes(a);
  }

  std::unique_ptr<SlotKernel> make_slot(std::int64_t band_rows, int) override {
    return std::make_unique<SeparableCpuSlot>(args_, band_rows);
  }

 private:
  SeparableParams params_;
  PipelineOptions options_;
  ImageSpec out_spec_;
  std::vector<double> row_taps_, col_taps_;
  cpu::SeparableArgs args_;
};

}  // namespace

std::unique_ptr<Operation> make_separable_cpu(const ImageSpec& input, const SeparableParams& params,
                                              const PipelineOptions& options) {
  return std::make_unique<SeparableCpu>(input, params, options);
}

}  // namespace ooc
