// Projections of a volume along z (the `project` stage, a pipeline's last): each output sample the
// maximum, minimum, sum or mean of its column of planes (numpy's max/min/sum/mean over axis 0),
// streamed band by band with the band's rows in every plane. Maximum and minimum keep the type
// and pick as the 2-D kernels do (a NaN wins); sums run in double and are written in the
// pipeline's working type (f32, or f64), which is the output's unless a convert or --out-type
// follows.
#include <tbb/parallel_for.h>

#include <vector>

#include "kernels/cpu/morphology/minmax.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/stage_registry.hpp"

namespace ooc::detail {
#if defined(OOC_HAVE_CUDA)
// project_cuda.cpp: kind as ProjectKind's order.
std::unique_ptr<CudaKernel> make_project_cuda(int kind, SampleType out);
#endif
namespace {

enum class ProjectKind { max, min, sum, mean };

class ProjectKernel final : public CpuKernel {
 public:
  ProjectKernel(ProjectKind kind, SampleType out) : kind_(kind), out_(out) {}
  void run(const CpuBand& b) override {
    const std::int64_t D = b.in.depth, count = b.band.rows + 2 * b.halo;
    const std::int64_t n = b.in.row_samples();
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      auto row = [&](std::int64_t k) { return b.rows[k * count + b.halo + y]; };
      dispatch_type(b.in.type, [&](auto t) {
        using T = decltype(t);
        if (kind_ == ProjectKind::max || kind_ == ProjectKind::min) {
          T* out = reinterpret_cast<T*>(b.out.row(y));
          const T* first = reinterpret_cast<const T*>(row(0));
          std::copy(first, first + n, out);
          for (std::int64_t k = 1; k < D; ++k) {
            const T* in = reinterpret_cast<const T*>(row(k));
            if (kind_ == ProjectKind::max)
              for (std::int64_t i = 0; i < n; ++i) out[i] = kernels::pick<true>(out[i], in[i]);
            else
              for (std::int64_t i = 0; i < n; ++i) out[i] = kernels::pick<false>(out[i], in[i]);
          }
          return;
        }
        std::vector<double> acc(static_cast<std::size_t>(n), 0.0);
        for (std::int64_t k = 0; k < D; ++k) {
          const T* in = reinterpret_cast<const T*>(row(k));
          for (std::int64_t i = 0; i < n; ++i) acc[static_cast<std::size_t>(i)] += in[i];
        }
        const double scale = kind_ == ProjectKind::mean ? 1.0 / static_cast<double>(D) : 1.0;
        dispatch_type(out_, [&](auto o) {
          using O = decltype(o);
          O* out = reinterpret_cast<O*>(b.out.row(y));
          for (std::int64_t i = 0; i < n; ++i)
            out[i] =
                static_cast<O>(kind_ == ProjectKind::mean ? acc[static_cast<std::size_t>(i)] * scale
                                                          : acc[static_cast<std::size_t>(i)]);
        });
      });
    });
  }

 private:
  ProjectKind kind_;
  SampleType out_;
};

class Project final : public Operation {
 public:
  Project(const ImageSpec& in, ProjectKind kind, std::string what, SampleType acc)
      : in_(in), out_(in), kind_(kind), what_(std::move(what)) {
    out_.depth = 1;
    out_.stack = false;  // one plane, an image
    if (kind == ProjectKind::sum || kind == ProjectKind::mean) out_.type = acc;
  }
  std::string describe() const override {
    return what_ + " of " + std::to_string(in_.depth) + " planes";
  }
  std::optional<ImageSpec> output() const override { return out_; }
  bool projects() const override { return true; }
  std::optional<std::int64_t> column_halo() const override { return 0; }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<ProjectKernel>(kind_, out_.type);
  }
  bool has_cuda() const override { return kCudaBuilt; }       // project_cuda.cpp
  bool cpu_gives_cuda_bits() const override { return true; }  // picks, and sums in order
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>&) const override {
#if defined(OOC_HAVE_CUDA)
    return make_project_cuda(static_cast<int>(kind_), out_.type);
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
  ProjectKind kind_;
  std::string what_;
};

}  // namespace

std::vector<StageEntry> project_stages() {
  StageEntry e{
      {"project",
       "a volume's projection along z: max, min, sum or mean of each column of planes (numpy's "
       "over axis 0); one plane out (sum, mean: f32, or f64), which later stages filter",
       {other_param("op", StageParam::Kind::text, std::string("max"), "max, min, sum or mean")}},
      [](const StageContext& c) {
        const std::string op = c.args.text("op");
        const ProjectKind kind =
            op == "max"    ? ProjectKind::max
            : op == "min"  ? ProjectKind::min
            : op == "sum"  ? ProjectKind::sum
            : op == "mean" ? ProjectKind::mean
                           : throw Error(ErrorKind::usage, c.args.at() +
                                                               ": op must be max, min, sum or "
                                                               "mean, got '" +
                                                               op + "'");
        if (!c.in.volume())
          throw Error(ErrorKind::usage, c.args.at() + ": the input is one plane (" +
                                            c.in.describe() +
                                            "): a projection takes a volume (--depth, a 3-D "
                                            ".npy, a multi-page TIFF)");
        return BuiltStage{std::make_unique<Project>(c.in, kind, c.args.call_text(), c.acc())};
      }};
  e.decl.volume = true;
  e.decl.sets_type = true;
  return {e};
}

}  // namespace ooc::detail
