// The CUDA side of a volume's projections (src/ops/point/project.cpp): every plane of a band's
// rows in device memory, from the engine's layout (plane k of the band's rows after plane k - 1)
// or a fused chain's (CudaBand::plane_in, one entry a plane, equally spaced), to one launch.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/cuda/point/project.cuh"
#include "ooc/engine.hpp"

namespace ooc::detail {
namespace {

class ProjectCudaKernel final : public CudaKernel {
 public:
  ProjectCudaKernel(int kind, SampleType out) : kind_(kind), out_(out) {}
  void run_async(const CudaBand& b) override {
    cuda::ProjectLaunch l;
    l.kind = kind_;
    l.planes = b.in_spec.depth;
    l.in_stride = b.in_stride;
    if (b.plane_in) {
      l.in = b.plane_in[0];
      l.plane_step = l.planes > 1 ? static_cast<std::size_t>(b.plane_in[1] - b.plane_in[0]) : 0;
      for (std::int64_t k = 1; k < l.planes; ++k)
        if (b.plane_in[k] != l.in + static_cast<std::size_t>(k) * l.plane_step)
          throw std::logic_error("CUDA projection: planes not equally spaced");
    } else {
      l.in = b.in + static_cast<std::size_t>(b.halo) * b.in_stride;
      l.plane_step = static_cast<std::size_t>(b.band.rows + 2 * b.halo) * b.in_stride;
    }
    l.in_type = b.in_spec.type;
    l.out_type = out_;
    l.samples = b.in_spec.row_samples();
    l.rows = b.band.rows;
    l.out = b.out;
    l.out_stride = b.out_stride;
    cuda::project_async(l, static_cast<cudaStream_t>(b.stream));
  }

 private:
  int kind_;
  SampleType out_;
};

}  // namespace

// Declared in project.cpp (which builds without CUDA): kind 0 max, 1 min, 2 sum, 3 mean.
std::unique_ptr<CudaKernel> make_project_cuda(int kind, SampleType out) {
  return std::make_unique<ProjectCudaKernel>(kind, out);
}

}  // namespace ooc::detail
