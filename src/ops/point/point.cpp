// Point operations (scale, abs, clamp, threshold, convert), one sample in, one out, and their
// pipeline stages. The pipeline also appends a convert to reach --out-type.
#include <tbb/parallel_for.h>

#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"
#include "ops/pipeline/chain_impl.hpp"
#include "ops/stage_registry.hpp"

namespace ooc::detail {
namespace {

class PointKernel final : public CpuKernel {
 public:
  PointKernel(kernels::PointParams p, SampleType out) : p_(p), out_(out) {}
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples();
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      const std::byte* src = b.rows[b.halo + y];
      std::byte* dst = b.out.row(y);
      dispatch_type(b.in.type, [&](auto in) {
        dispatch_type(out_, [&](auto out) {
          kernels::point_row<decltype(in), decltype(out)>(src, dst, n, p_);
        });
      });
    });
  }

 private:
  kernels::PointParams p_;
  SampleType out_;
};

class PointOp final : public Operation {
 public:
  PointOp(const ImageSpec& in, kernels::PointParams p, SampleType out, std::string what)
      : in_(in),
        out_{in.width, in.height, in.channels, out, in.depth, in.stack},
        p_(p),
        what_(std::move(what)) {}
  std::string describe() const override { return what_; }
  std::string fingerprint() const override {
    return what_ + " (" + exact_number(p_.a) + ", " + exact_number(p_.b) + ") to " +
           std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::optional<std::int64_t> column_halo() const override { return 0; }
  std::unique_ptr<CpuKernel> make_cpu() const override { return make_point_cpu(p_, out_.type); }
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>&) const override {
    return detail::make_point_cuda(p_, in_.type, out_.type);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::pointwise;
    return c;
  }

 private:
  ImageSpec in_, out_;
  kernels::PointParams p_;
  std::string what_;
};

}  // namespace

std::unique_ptr<Operation> make_point(const ImageSpec& in, const kernels::PointParams& p,
                                      SampleType out, std::string what) {
  return std::make_unique<PointOp>(in, p, out, std::move(what));
}

std::unique_ptr<CpuKernel> make_point_cpu(const kernels::PointParams& p, SampleType out) {
  return std::make_unique<PointKernel>(p, out);
}

std::vector<StageEntry> point_stages() {
  using kernels::PointKind;
  // Point stages compute in the accumulator's type (convert: in its own).
  auto point = [](const StageContext& c, PointKind k, double a, double b, SampleType out) {
    kernels::PointParams p;
    p.kind = k;
    p.a = a;
    p.b = b;
    return BuiltStage{make_point(c.in, p, out, c.args.call_text())};
  };
  std::vector<StageEntry> s;
  s.push_back({{"scale",
                "mul x + add",
                {number_param("mul", 1.0, -kInf, false, "factor"),
                 number_param("add", 0.0, -kInf, false, "offset")}},
               [point](const StageContext& c) {
                 return point(c, PointKind::scale, c.args.number("mul"), c.args.number("add"),
                              c.acc());
               }});
  s.push_back({{"abs", "absolute value", {}},
               [point](const StageContext& c) { return point(c, PointKind::abs, 0, 0, c.acc()); }});
  s.push_back({{"clamp",
                "values below min become min, above max become max",
                {number_param("min", std::nullopt, -kInf, false, "lower bound"),
                 number_param("max", std::nullopt, -kInf, false, "upper bound")}},
               [point](const StageContext& c) {
                 if (c.args.number("min") > c.args.number("max"))
                   throw Error(ErrorKind::usage, c.args.at() + ": min " + c.args.text("min") +
                                                     " is above max " + c.args.text("max"));
                 return point(c, PointKind::clamp, c.args.number("min"), c.args.number("max"),
                              c.acc());
               }});
  s.push_back({{"threshold",
                "1 where x > value, else 0",
                {number_param("value", std::nullopt, -kInf, false, "threshold")}},
               [point](const StageContext& c) {
                 return point(c, PointKind::threshold, c.args.number("value"), 0, c.acc());
               }});
  s.push_back(
      {{"convert",
        "to another sample type, rounding half to even and saturating (as --out-type)",
        {other_param("type", StageParam::Kind::type, std::nullopt, "u8 u16 i16 u32 i32 f32 f64")}},
       [point](const StageContext& c) {
         if (c.settings.nodata)  // holes to the type's nodata (masked_convert.cpp)
           return BuiltStage{make_masked_convert(c.in, c.args.type("type"), *c.settings.nodata,
                                                 c.args.call_text())};
         return point(c, PointKind::convert, 0, 0, c.args.type("type"));
       }});
  s.back().decl.sets_type = true;
  s.back().decl.masked = true;
  for (StageEntry& e : s) e.decl.volume = true;  // sample by sample: the same in 3-D
  return s;
}

}  // namespace ooc::detail
