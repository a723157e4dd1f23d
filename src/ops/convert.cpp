// The copy/convert operation (see convert.hpp): the pipelines' convert (kernels/cpu/pointwise.hpp),
// the filters' rounding and saturation, in double, so every value converts exactly where it can.
#include "ooc/ops/convert.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/pointwise.hpp"
#include "ooc/detail/sample_type.hpp"

namespace ooc {
namespace {

const kernels::PointParams kConvert{kernels::PointKind::convert, 0, 0};

class ConvertKernel final : public CpuKernel {
 public:
  explicit ConvertKernel(SampleType out) : out_(out) {}
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples();
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      const std::byte* src = b.rows[b.halo + y];
      std::byte* dst = b.out.row(y);
      dispatch_type(b.in.type, [&](auto in) {
        dispatch_type(out_, [&](auto out) {
          kernels::point_row<decltype(in), decltype(out)>(src, dst, n, kConvert);
        });
      });
    });
  }

 private:
  SampleType out_;
};

class Convert final : public Operation {
 public:
  Convert(const ImageSpec& in, SampleType out)
      : in_(in), out_{in.width, in.height, in.channels, out} {}
  std::string describe() const override {
    return in_.type == out_.type
               ? "copy"
               : "convert " + std::string(name(in_.type)) + " to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<ConvertKernel>(out_.type);
  }

 private:
  ImageSpec in_, out_;
};

}  // namespace

std::unique_ptr<Operation> make_convert(const ImageSpec& input, SampleType out_type) {
  return std::make_unique<Convert>(input, out_type);
}

}  // namespace ooc
