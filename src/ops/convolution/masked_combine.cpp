// dog, unsharp and subtract-background under nodata (issue 48): their combination of the masked
// Gaussians (normalized convolution, holes kept), then nodata again wherever the output's own
// input sample is a hole (the combination of two nodata values is a number: -9999 - -9999 is 0).
// Elsewhere every masked Gaussian has a valid sample (the own one), so the combination is of
// valid values only. On the GPU the same steps: the combination's CUDA kernel, then
// make_keep_holes_cuda.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/masked/convert.hpp"
#include "kernels/cpu/masked/masked.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

class HolesKeptKernel final : public CpuKernel {
 public:
  HolesKeptKernel(std::unique_ptr<CpuKernel> inner, double nodata)
      : inner_(std::move(inner)), nodata_(nodata) {}
  void start(int slot) override { inner_->start(slot); }
  void stop(int slot) override { inner_->stop(slot); }
  void run(const CpuBand& b) override {
    inner_->run(b);
    const std::int64_t S = b.in.width * b.in.channels;
    dispatch_type(b.in.type, [&](auto ti) {
      using T = decltype(ti);
      dispatch_type(b.out.type, [&](auto to) {
        using U = decltype(to);
        // Holes as U's nodata value, valid samples kept off it (kernels/cpu/masked/convert.hpp).
        const U value = kernels::masked::nodata_of<U>(nodata_);
        const U step = kernels::masked::off_nodata(value);
        for (std::int64_t y = 0; y < b.band.rows; ++y) {
          const T* own = reinterpret_cast<const T*>(b.rows[b.halo + y]);
          U* o = reinterpret_cast<U*>(b.out.data + static_cast<std::size_t>(y) * b.out.row_stride);
          for (std::int64_t s = 0; s < S; ++s)
            o[s] = kernels::masked::hole(static_cast<double>(own[s]), nodata_) ? value
                   : o[s] == value                                             ? step
                                                                               : o[s];
        }
      });
    });
  }

 private:
  std::unique_ptr<CpuKernel> inner_;
  double nodata_;
};

// The stage's combination with its holes put back; the rest is the combination's.
class HolesKept final : public Operation {
 public:
  HolesKept(std::unique_ptr<Operation> inner, double nodata)
      : inner_(std::move(inner)), nodata_(nodata) {}
  std::string describe() const override {
    return inner_->describe() + ", holes kept (nodata " + nodata_text(nodata_) + ")";
  }
  std::string fingerprint() const override {
    return inner_->fingerprint() + ", holes kept (nodata " + nodata_text(nodata_) + ")";
  }
  std::optional<ImageSpec> output() const override { return inner_->output(); }
  std::int64_t halo() const override { return inner_->halo(); }
  std::optional<std::int64_t> column_halo() const override { return inner_->column_halo(); }
  BorderMode border() const override { return inner_->border(); }
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    return inner_->cpu_scratch_bytes(rows, cols);
  }
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    return inner_->cpu_band_bytes(rows, cols);
  }
  std::int64_t fit_band_rows(std::int64_t rows, std::int64_t span) const override {
    return inner_->fit_band_rows(rows, span);
  }
  std::int64_t row_grid() const override { return inner_->row_grid(); }
  std::int64_t grid_halo() const override { return inner_->grid_halo(); }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<HolesKeptKernel>(inner_->make_cpu(), nodata_);
  }
  Cost cost() const override { return inner_->cost(); }
  bool has_cuda() const override { return kCudaBuilt && inner_->has_cuda(); }
  bool cpu_gives_cuda_bits() const override { return inner_->cpu_gives_cuda_bits(); }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return inner_->cuda_scratch_bytes(rows);
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_keep_holes_cuda(inner_->make_cuda(devices), output()->type, nodata_);
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  std::unique_ptr<Operation> inner_;
  double nodata_;
};

}  // namespace

std::unique_ptr<Operation> keep_holes(std::unique_ptr<Operation> combined, double nodata) {
  return std::make_unique<HolesKept>(std::move(combined), nodata);
}

}  // namespace ooc::detail
