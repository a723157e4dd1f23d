// The CUDA side of a volume's convolution with a 3-D kernel (conv3d.cpp): each kernel plane's 2-D
// convolution (conv2d_cuda.cpp, or conv2d_fft_cuda.cpp where the plane's cost chose the FFT) of its
// input plane into the accumulator's type, added plane by plane in the CPU's order, then converted
// to the output's type once.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/convolution/conv3d.cuh"
#include "kernels/cuda/point/pointwise.cuh"
#include "ops/convolution/band_fill.hpp"
#include "ops/pipeline/chain_impl.hpp"

namespace ooc::detail {
namespace {

// A row so far above any image that the 2-D kernels take every row of a plane as the constant
// border's (the CPU's null rows: a plane outside the volume under the constant rule).
constexpr std::int64_t kOutsideRow = -(std::int64_t{1} << 40);

class Conv3dCudaKernel final : public CudaKernel {
 public:
  Conv3dCudaKernel(const std::vector<int>& devices, const std::vector<const Operation*>& slices,
                   std::vector<std::int64_t> dz, BorderMode border, bool f64, SampleType out)
      : dz_(std::move(dz)), border_(border), f64_(f64), out_(out) {
    for (const Operation* op : slices) k_.push_back(op->make_cuda(devices));
  }
  void start(const CudaSlotInfo& slot) override {
    for (auto& k : k_) k->start(slot);
  }
  void stop(const CudaSlotInfo& slot) override {
    for (auto& k : k_) k->stop(slot);
  }
  void run_async(const CudaBand& b) override {
    const std::int64_t rows = b.band.rows, n = b.in_spec.row_samples();
    const std::size_t pitch = align_up(static_cast<std::size_t>(n) * (f64_ ? 8 : 4));
    std::byte* sum = b.scratch;
    std::byte* part = sum + pitch * static_cast<std::size_t>(rows);
    std::byte* inner = part + pitch * static_cast<std::size_t>(rows);
    const auto stream = static_cast<cudaStream_t>(b.stream);
    for (std::size_t i = 0; i < k_.size(); ++i) {
      // Plane z + dz: its first band row, and the rows of its halo above.
      CudaBand s = b;
      const std::byte* plane = cuda_plane(b, b.plane_halo + dz_[i], border_);
      if (plane) {
        s.in = plane - static_cast<std::size_t>(b.halo) * b.in_stride;
      } else {
        s.in = b.in;  // never read: every row is the constant's
        s.first_row = kOutsideRow;
      }
      s.plane_halo = 0;
      s.plane_in = nullptr;
      s.out = i == 0 ? sum : part;
      s.out_stride = pitch;
      s.partial = nullptr;
      s.scratch = inner;
      k_[i]->run_async(s);
      if (i > 0) cuda::accumulate_async(sum, part, pitch, rows, n, f64_, stream);
    }
    kernels::PointParams convert;
    convert.kind = kernels::PointKind::convert;
    cuda::point_async(sum, pitch, f64_ ? SampleType::f64 : SampleType::f32, b.out, b.out_stride,
                      out_, rows, n, convert, stream);
  }

 private:
  std::vector<std::int64_t> dz_;
  BorderMode border_;
  bool f64_;
  SampleType out_;
  std::vector<std::unique_ptr<CudaKernel>> k_;
};

}  // namespace

// Declared in conv3d.cpp (which builds without CUDA): slices[i] convolves input plane z + dz[i].
std::unique_ptr<CudaKernel> make_conv3d_cuda(const std::vector<int>& devices,
                                             const std::vector<const Operation*>& slices,
                                             std::vector<std::int64_t> dz, BorderMode border,
                                             bool f64, SampleType out) {
  return std::make_unique<Conv3dCudaKernel>(devices, slices, std::move(dz), border, f64, out);
}

std::size_t conv3d_cuda_scratch(const std::vector<const Operation*>& slices, std::int64_t rows,
                                std::int64_t row_samples, bool f64) {
  const std::size_t pitch = align_up(static_cast<std::size_t>(row_samples) * (f64 ? 8 : 4));
  std::size_t most = 0;
  for (const Operation* op : slices) most = std::max(most, op->cuda_scratch_bytes(rows));
  return 2 * pitch * static_cast<std::size_t>(rows) + most;
}

}  // namespace ooc::detail
