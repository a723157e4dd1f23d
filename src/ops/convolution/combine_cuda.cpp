// The CUDA side of a volume's gradient magnitude (combine.cpp): its three Sobel derivatives (each
// a chain of a z pass and the 2-D passes, with planes of context) into device scratch, then the
// root of their squares' sum rounded as the CPU's. The stages of one or two filters take
// chain_cuda.cpp's CombineCudaKernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/point/pointwise.cuh"
#include "ops/convolution/band_fill.hpp"
#include "ops/pipeline/chain_impl.hpp"

namespace ooc::detail {
namespace {

class Magnitude3CudaKernel final : public CudaKernel {
 public:
  Magnitude3CudaKernel(const std::vector<int>& devices, std::vector<const Operation*> g, bool f64,
                       SampleType out)
      : g_(std::move(g)), f64_(f64), out_(out), tables_(g_.size()) {
    for (const Operation* op : g_) k_.push_back(op->make_cuda(devices));
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
    const std::size_t plane = pitch * static_cast<std::size_t>(rows);
    std::byte* sub = b.scratch + g_.size() * plane;
    for (std::size_t i = 0; i < g_.size(); ++i)
      k_[i]->run_async(part(b, *g_[i], b.scratch + i * plane, pitch, sub, tables_[i]));
    cuda::magnitude3_async(b.scratch, b.scratch + plane, b.scratch + 2 * plane, pitch, b.out,
                           b.out_stride, out_, rows, n, f64_, static_cast<cudaStream_t>(b.stream));
  }

 private:
  // The band of `b` for a derivative of halo h <= b.halo: the middle 2 ph + 1 of its planes,
  // through `table` (which must outlive the launch).
  static CudaBand part(const CudaBand& b, const Operation& op, std::byte* out,
                       std::size_t out_stride, std::byte* scratch,
                       std::vector<const std::byte*>& table) {
    CudaBand s = with_halo(b, op.halo());
    if (b.plane_halo > 0) {
      const std::int64_t ph = op.plane_halo();
      table.resize(static_cast<std::size_t>(2 * ph + 1));
      for (std::int64_t k = 0; k <= 2 * ph; ++k)
        table[static_cast<std::size_t>(k)] = cuda_plane(b, b.plane_halo - ph + k, op.border());
      s.plane_halo = ph;
      s.plane_in = table.data();
    }
    s.out = out;
    s.out_stride = out_stride;
    s.partial = nullptr;
    s.scratch = scratch;
    return s;
  }

  std::vector<const Operation*> g_;
  bool f64_;
  SampleType out_;
  std::vector<std::unique_ptr<CudaKernel>> k_;
  std::vector<std::vector<const std::byte*>> tables_;  // each derivative's planes (one band)
};

}  // namespace

// Declared in combine.cpp (which builds without CUDA).
std::unique_ptr<CudaKernel> make_magnitude3_cuda(const std::vector<int>& devices,
                                                 std::vector<const Operation*> g, bool f64,
                                                 SampleType out) {
  return std::make_unique<Magnitude3CudaKernel>(devices, std::move(g), f64, out);
}

std::size_t magnitude3_cuda_scratch(const std::vector<const Operation*>& g, std::int64_t band_rows,
                                    std::int64_t row_samples, bool f64) {
  const std::size_t pitch = align_up(static_cast<std::size_t>(row_samples) * (f64 ? 8 : 4));
  std::size_t most = 0;
  for (const Operation* op : g) most = std::max(most, op->cuda_scratch_bytes(band_rows));
  return g.size() * pitch * static_cast<std::size_t>(band_rows) + most;
}

}  // namespace ooc::detail
