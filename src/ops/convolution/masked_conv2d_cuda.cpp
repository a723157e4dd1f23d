// The CUDA kernel object of convolve's normalized convolution (masked_separable.cpp's direct sum,
// masked_fft.cpp's FFT): the band split into x m and m in the accumulator type, each convolved by
// the unmasked 2-D convolution's CUDA kernels (the tiled direct sum, or cuFFT's overlap-save
// tiles; a third pass of m with |k| where a tap is negative), then divided under the nodata rule
// (kernels/cuda/masked/normalized.cuh). The direct sum's taps meet the samples in the CPU's
// order and roundings, so it gives the CPU's bytes; the FFT's results are within its bound.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/cpu/masked/masked.hpp"
#include "kernels/cuda/masked/normalized.cuh"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

std::size_t aligned(std::size_t n) {
  return (n + 255) & ~std::size_t{255};
}

bool negative(const MaskedConv2dCudaArgs& a) {
  return std::any_of(a.taps.begin(), a.taps.end(), [](double t) { return t < 0; });
}

// The scratch's planes: x m and m of the band's input rows, then the sums of the output rows.
struct Planes {
  std::size_t pitch, in_plane, out_plane, inner;  // inner: where the convolutions' scratch starts
  Planes(const MaskedConv2dCudaArgs& a, std::int64_t band_rows, std::int64_t halo) {
    pitch = aligned(static_cast<std::size_t>(a.out.row_samples()) * (a.f64 ? 8 : 4));
    in_plane = pitch * static_cast<std::size_t>(band_rows + 2 * halo);
    out_plane = pitch * static_cast<std::size_t>(band_rows);
    inner = 2 * in_plane + (negative(a) ? 3 : 2) * out_plane;
  }
};

ImageSpec acc_spec(const MaskedConv2dCudaArgs& a) {
  ImageSpec s = a.out;
  s.type = a.f64 ? SampleType::f64 : SampleType::f32;
  return s;
}

class MaskedConv2dCudaKernel final : public CudaKernel {
 public:
  MaskedConv2dCudaKernel(const std::vector<int>& devices, MaskedConv2dCudaArgs a)
      : a_(std::move(a)) {
    // scipy pads with cval, weight 1, unless cval is itself a hole (the CPU's rule).
    const bool cval_ok = !kernels::masked::hole(a_.border_value, a_.nodata);
    const double cv = cval_ok ? a_.border_value : 0.0, cm = cval_ok ? 1.0 : 0.0;
    std::vector<double> abs_taps(a_.taps);
    for (double& t : abs_taps) t = std::fabs(t);
    const auto make = [&](const std::vector<double>& taps, double cval) {
      if (a_.fft) {
        return make_conv2d_fft_cuda(
            devices, fft_cuda_shape(a_.rows, a_.cols, *a_.fft, acc_spec(a_), a_.border, cval), taps,
            a_.f64);
      }
      // The direct kernel takes correlation order: the kernel turned by half a turn.
      return make_conv2d_cuda(devices, acc_spec(a_), a_.border, cval,
                              std::vector<double>(taps.rbegin(), taps.rend()), a_.cols / 2,
                              a_.rows / 2, a_.f64);
    };
    num_ = make(a_.taps, cv);
    den_ = make(a_.taps, cm);
    if (negative(a_)) abs_ = make(abs_taps, cm);
  }
  void start(const CudaSlotInfo& slot) override {
    for (CudaKernel* k : kernels()) k->start(slot);
  }
  void stop(const CudaSlotInfo& slot) override {
    for (CudaKernel* k : kernels()) k->stop(slot);
  }
  void run_async(const CudaBand& b) override {
    const auto stream = static_cast<cudaStream_t>(b.stream);
    const Planes p(a_, b.band.rows, b.halo);
    std::byte* v = b.scratch;
    std::byte* m = v + p.in_plane;
    std::byte* sums = m + p.in_plane;  // num, den, then |k| m's
    cuda::NormalizedSplit s;
    s.in = b.in;
    s.in_stride = b.in_stride;
    s.in_type = b.in_spec.type;
    s.rows = b.band.rows + 2 * b.halo;
    s.first_row = b.first_row;
    s.image_height = b.in_spec.height;
    s.row_samples = b.in_spec.row_samples();
    s.constant_border = a_.border == BorderMode::constant;
    s.nodata = a_.nodata;
    s.v = v;
    s.m = m;
    s.pitch = p.pitch;
    s.f64 = a_.f64;
    cuda::normalized_split_async(s, stream);
    const auto pass = [&](CudaKernel& k, const std::byte* plane, int i) {
      CudaBand c = b;
      c.in = plane;
      c.in_stride = p.pitch;
      c.in_spec = acc_spec(a_);
      c.out = sums + static_cast<std::size_t>(i) * p.out_plane;
      c.out_stride = p.pitch;
      c.partial = nullptr;
      c.scratch = b.scratch + p.inner;
      k.run_async(c);
    };
    pass(*num_, v, 0);
    pass(*den_, m, 1);
    if (abs_) pass(*abs_, m, 2);
    cuda::NormalizedFinish f;
    f.num = sums;
    f.den = sums + p.out_plane;
    f.weights = abs_ ? sums + 2 * p.out_plane : f.den;
    f.own = m + static_cast<std::size_t>(b.halo) * p.pitch;
    f.pitch = p.pitch;
    f.rows = b.band.rows;
    f.row_samples = b.in_spec.row_samples();
    f.out = b.out;
    f.out_stride = b.out_stride;
    f.out_type = a_.out.type;
    f.nodata = a_.nodata;
    f.min_weight_need = a_.min_weight_need;
    f.tolerance = a_.tolerance;
    f.fill = a_.fill;
    f.f64 = a_.f64;
    f.fft = a_.fft.has_value();
    cuda::normalized_finish_async(f, stream);
  }

 private:
  std::vector<CudaKernel*> kernels() const {
    std::vector<CudaKernel*> k{num_.get(), den_.get()};
    if (abs_) k.push_back(abs_.get());
    return k;
  }

  MaskedConv2dCudaArgs a_;
  std::unique_ptr<CudaKernel> num_, den_, abs_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_masked_conv2d_cuda(const std::vector<int>& devices,
                                                    const MaskedConv2dCudaArgs& a) {
  return std::make_unique<MaskedConv2dCudaKernel>(devices, a);
}

std::size_t masked_conv2d_cuda_scratch(const MaskedConv2dCudaArgs& a, std::int64_t band_rows,
                                       std::int64_t halo) {
  const Planes p(a, band_rows, halo);
  std::size_t inner = 0;
  if (a.fft)
    inner = conv2d_fft_cuda_scratch(
        fft_cuda_shape(a.rows, a.cols, *a.fft, acc_spec(a), a.border, a.border_value), band_rows,
        a.f64);
  return p.inner + inner;
}

}  // namespace ooc::detail
