// The conversion to another sample type under nodata (issue 48): the convert stage and the
// pipeline's last convert to --out-type, where the pipeline has a nodata value. Holes take the
// output type's nodata value (kernels/cpu/masked/convert.hpp: the input's where the type holds
// it, else the value the conversion gives it, NaN into an integer type the lowest), and valid
// samples that convert to it move one step off, so that no hole becomes a sample and no sample a
// hole. The GPU's kernel (masked_convert_cuda.cpp) gives the same bytes.
#include <tbb/parallel_for.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/masked/convert.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

class MaskedConvertKernel final : public CpuKernel {
 public:
  MaskedConvertKernel(SampleType out, double nodata) : out_(out), nodata_(nodata) {}
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples();
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      const std::byte* src = b.rows[b.halo + y];
      std::byte* dst = b.out.row(y);
      dispatch_type(b.in.type, [&](auto in) {
        dispatch_type(out_, [&](auto out) {
          using I = decltype(in);
          using O = decltype(out);
          kernels::masked::convert_row<I, O>(reinterpret_cast<const I*>(src),
                                             reinterpret_cast<O*>(dst), n, nodata_);
        });
      });
    });
  }

 private:
  SampleType out_;
  double nodata_;
};

class MaskedConvert final : public Operation {
 public:
  MaskedConvert(const ImageSpec& in, SampleType out, double nodata, std::string what)
      : in_(in),
        out_{in.width, in.height, in.channels, out, in.depth, in.stack},
        nodata_(nodata),
        what_(std::move(what)) {}
  std::string describe() const override {
    const double to = kernels::masked::nodata_in(out_.type, nodata_);
    const bool same = std::isnan(to) ? std::isnan(nodata_) : to == nodata_;
    return what_ + ", nodata " + nodata_text(nodata_) +
           (same ? " kept" : " written as " + nodata_text(to)) + ", valid samples kept off it";
  }
  std::string fingerprint() const override {
    return "masked " + describe() + " from " + std::string(name(in_.type)) + " to " +
           std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::optional<std::int64_t> column_halo() const override { return 0; }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<MaskedConvertKernel>(out_.type, nodata_);
  }
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }  // one rounding a sample, alike
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>&) const override {
#if defined(OOC_HAVE_CUDA)
    return make_masked_convert_cuda(in_.type, out_.type, nodata_);
#else
    return nullptr;
#endif
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::pointwise;
    return c;
  }

 private:
  ImageSpec in_, out_;
  double nodata_;
  std::string what_;
};

}  // namespace

std::unique_ptr<Operation> make_masked_convert(const ImageSpec& in, SampleType out, double nodata,
                                               std::string what) {
  // To its own type, where holes keep their value and no valid sample has it (an integer type
  // that holds nodata, or NaN in a float one): the copy, which also runs on the GPU.
  const bool same = in.type == out &&
                    (is_integer(out) ? kernels::masked::holds_in(out, nodata) : std::isnan(nodata));
  if (same) {
    kernels::PointParams p;
    p.kind = kernels::PointKind::convert;
    return make_point(in, p, out, std::move(what));
  }
  return std::make_unique<MaskedConvert>(in, out, nodata, std::move(what));
}

}  // namespace ooc::detail
