// The z pass of a volume's filters as an operation (kernels/cpu/convolution/zpass.hpp): a weighted
// sum, minimum or maximum of the same row of 2R + 1 planes. The 3-D stages (gaussian, uniform,
// correlate1d axis=0, minimum, maximum, ...) run it before their 2-D passes, in one fused band.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/convolution/separable.hpp"
#include "kernels/cpu/convolution/zpass.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/stage_registry.hpp"

namespace ooc::detail {
namespace {

class ZPassKernel final : public CpuKernel {
 public:
  ZPassKernel(kernels::ZPassKind kind, std::vector<double> taps, std::int64_t before,
              SampleType out, double cval)
      : kind_(kind), taps_(std::move(taps)), before_(before), out_(out), cval_(cval) {}
  void run(const CpuBand& b) override {
    // The window's planes [z - before, z - before + taps) within the band's z +- plane_halo.
    const std::int64_t planes = static_cast<std::int64_t>(taps_.size());
    const std::int64_t count = b.band.rows + 2 * b.halo, first = b.plane_halo - before_;
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      std::vector<const std::byte*> rows(static_cast<std::size_t>(planes));
      for (std::int64_t k = 0; k < planes; ++k)
        rows[static_cast<std::size_t>(k)] = b.rows[(first + k) * count + b.halo + y];
      kernels::ZPassArgs a;
      a.kind = kind_;
      a.rows = rows.data();
      a.planes = planes;
      a.taps = taps_.data();
      a.in_type = b.in.type;
      a.out_type = out_;
      a.samples = b.in.row_samples();
      a.border_value = cval_;
      a.out = b.out.row(y);
      kernels::zpass_row(a);
    });
  }

 private:
  kernels::ZPassKind kind_;
  std::vector<double> taps_;
  std::int64_t before_;
  SampleType out_;
  double cval_;
};

class ZPass final : public Operation {
 public:
  ZPass(const ImageSpec& in, kernels::ZPassKind kind, std::vector<double> taps, std::int64_t before,
        SampleType out, BorderMode border, double cval)
      : in_(in),
        out_(in),
        kind_(kind),
        taps_(std::move(taps)),
        before_(before),
        border_(border),
        cval_(cval) {
    out_.type = out;
  }
  std::string describe() const override {
    const std::string n = std::to_string(taps_.size());
    switch (kind_) {
      case kernels::ZPassKind::sum:
        return "z pass of " + n + " taps (" + std::string(name(out_.type)) + ")";
      case kernels::ZPassKind::minimum:
        return "z minimum over " + n + " planes";
      case kernels::ZPassKind::maximum:
        return "z maximum over " + n + " planes";
    }
    return "z pass";
  }
  std::string fingerprint() const override {
    std::string f = describe() + " [";
    for (double t : taps_) f += exact_number(t) + " ";
    return f + "] from -" + std::to_string(before_) + " " + std::string(name(border_)) + " " +
           exact_number(cval_);
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t plane_halo() const override {
    return std::max(before_, static_cast<std::int64_t>(taps_.size()) - 1 - before_);
  }
  std::optional<std::int64_t> column_halo() const override { return 0; }
  BorderMode border() const override { return border_; }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<ZPassKernel>(kind_, taps_, before_, out_.type, cval_);
  }
  bool has_cuda() const override { return kCudaBuilt && taps_.size() <= kZPassCudaMaxPlanes; }
  // Extremes only select; sums round as the CPU's vector build (FMA in plane order), which the
  // baseline build does not.
  bool cpu_gives_cuda_bits() const override {
    return kind_ != kernels::ZPassKind::sum || kernels::sums_fma();
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>&) const override {
#if defined(OOC_HAVE_CUDA)
    return make_zpass_cuda(kind_, taps_, before_, out_.type, border_, cval_);
#else
    return nullptr;
#endif
  }
  Cost cost() const override {
    Cost c;
    if (kind_ == kernels::ZPassKind::sum) {
      c.kind = Cost::Kind::separable;
      c.taps = static_cast<double>(taps_.size());
      c.f64 = out_.type == SampleType::f64;
    } else {
      c.kind = Cost::Kind::minmax;
      c.window_rows = static_cast<double>(taps_.size());
      c.window_cols = 1;
    }
    return c;
  }

 private:
  ImageSpec in_, out_;
  kernels::ZPassKind kind_;
  std::vector<double> taps_;
  std::int64_t before_;
  BorderMode border_;
  double cval_;
};

}  // namespace

std::unique_ptr<Operation> make_zpass(const ImageSpec& in, kernels::ZPassKind kind,
                                      std::vector<double> taps, std::int64_t before, SampleType out,
                                      BorderMode border, double cval) {
  return std::make_unique<ZPass>(in, kind, std::move(taps), before, out, border, cval);
}

}  // namespace ooc::detail
