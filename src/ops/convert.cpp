// The copy/convert operation (see convert.hpp). Same rounding and saturation as the filters'
// output stage, in double, so every value of every type converts exactly where it can.
#include "ooc/ops/convert.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ooc/detail/sample_type.hpp"

namespace ooc {
namespace {

template <class In, class Out>
void convert_row(const std::byte* src, std::byte* dst, std::int64_t n) {
  if constexpr (std::is_same_v<In, Out>) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(In));
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      In v;
      std::memcpy(&v, src + i * sizeof(In), sizeof v);
      Out o;
      if constexpr (std::is_floating_point_v<Out>) {
        o = static_cast<Out>(v);
      } else {
        double d = static_cast<double>(v);
        d = d == d ? d : 0.0;
        d = std::clamp(d, double(std::numeric_limits<Out>::lowest()),
                       double(std::numeric_limits<Out>::max()));
        o = static_cast<Out>(std::nearbyint(d));
      }
      std::memcpy(dst + i * sizeof(Out), &o, sizeof o);
    }
  }
}

class ConvertKernel final : public CpuKernel {
 public:
  explicit ConvertKernel(SampleType out) : out_(out) {}
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples();
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      const std::byte* src = b.rows[b.halo + y];
      std::byte* dst = b.out.row(y);
      dispatch_type(b.in.type, [&](auto in) {
        dispatch_type(out_,
                      [&](auto out) { convert_row<decltype(in), decltype(out)>(src, dst, n); });
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
