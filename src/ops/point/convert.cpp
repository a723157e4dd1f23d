// The copy/convert operation (see convert.hpp): it runs the pipelines' convert kernel (point.cpp,
// kernels/cpu/point/pointwise.hpp), the filters' rounding and saturation, in double, so every value
// converts exactly where it can. Unlike the pipelines' convert it stays on the CPU.
#include "ooc/ops/convert.hpp"

#include "kernels/cpu/point/pointwise.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace {

class Convert final : public Operation {
 public:
  Convert(const ImageSpec& in, SampleType out)
      : in_(in), out_{in.width, in.height, in.channels, out, in.depth, in.stack} {}
  std::string describe() const override {
    return in_.type == out_.type
               ? "copy"
               : "convert " + std::string(name(in_.type)) + " to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::optional<std::int64_t> column_halo() const override { return 0; }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return detail::make_point_cpu({kernels::PointKind::convert, 0, 0}, out_.type);
  }

 private:
  ImageSpec in_, out_;
};

}  // namespace

std::unique_ptr<Operation> make_convert(const ImageSpec& input, SampleType out_type) {
  return std::make_unique<Convert>(input, out_type);
}

}  // namespace ooc
