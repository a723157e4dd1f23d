// The CUDA kernel object of the 2-D convolution by FFT: the kernel's half spectrum uploaded once
// per device, cuFFT plans (R2C and C2R, batched over the planes of one tile row) made when a slot
// starts and destroyed when it stops, their work area in the slot's device scratch
// (conv2d_fft_cuda_scratch, which the planner counts against device memory), and per tile row of a
// band: pack, forward, product, inverse, unpack, all in the slot's stream.
//
// One tile row per batch whatever the band, so every plane goes through the same plan: results do
// not depend on the band height (the tile grid is the image's, as on the CPU).
#include <cuda_runtime.h>

#include <algorithm>
#include <complex>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "cufft_dl.hpp"  // cuFFT, loaded on first use
#include "kernels/cpu/convolution/fft_backend.hpp"
#include "kernels/cuda/convolution/fft_conv.cuh"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"

namespace ooc {
namespace {

[[noreturn]] void throw_cufft_error(cufftResult r, const char* call, const char* file, int line) {
  std::string msg = "cuFFT error " + std::to_string(static_cast<int>(r)) + " in " + call + " at " +
                    file + ":" + std::to_string(line);
  if (r == CUFFT_ALLOC_FAILED)
    msg += ": the GPU is out of memory; lower --mem-limit or --slots, or use --method direct";
  throw Error(ErrorKind::device, msg);
}

#define OOC_CUFFT_TRY(expr)                                                                        \
  do {                                                                                             \
    const cufftResult ooc_cufft_r_ = (expr);                                                       \
    if (ooc_cufft_r_ != CUFFT_SUCCESS) throw_cufft_error(ooc_cufft_r_, #expr, __FILE__, __LINE__); \
  } while (0)

constexpr std::size_t kAlign = 256;
std::size_t align_up(std::size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// The layout of one tile row's planes, and the plans' geometry.
struct Geometry {
  std::int64_t planes = 0, pitch = 0, half = 0;  // half = m / 2 + 1 complex columns
  std::size_t planes_bytes = 0;
  Geometry(const FftCudaShape& s, bool f64) {
    const std::int64_t across = (s.width + s.w - 1) / s.w;
    planes = across * s.channels;
    half = s.m / 2 + 1;
    pitch = 2 * half;
    planes_bytes = align_up(static_cast<std::size_t>(planes * s.n * pitch) * (f64 ? 8 : 4));
  }
};

// The arguments of cufft{Make,Estimate}PlanMany for the in-place real transforms of a tile row.
struct PlanArgs {
  int dims[2], real_embed[2], complex_embed[2];
  int real_dist, complex_dist, batch;
  PlanArgs(const FftCudaShape& s, const Geometry& g) {
    dims[0] = real_embed[0] = complex_embed[0] = static_cast<int>(s.n);
    dims[1] = static_cast<int>(s.m);
    real_embed[1] = static_cast<int>(g.pitch);
    complex_embed[1] = static_cast<int>(g.half);
    real_dist = static_cast<int>(s.n * g.pitch);
    complex_dist = static_cast<int>(s.n * g.half);
    batch = static_cast<int>(g.planes);
  }
};

std::size_t estimated_work_bytes(const FftCudaShape& s, const Geometry& g, bool f64) {
  PlanArgs a(s, g);
  std::size_t fwd = 0, inv = 0;
  OOC_CUFFT_TRY(cufftEstimateMany(2, a.dims, a.real_embed, 1, a.real_dist, a.complex_embed, 1,
                                  a.complex_dist, f64 ? CUFFT_D2Z : CUFFT_R2C, a.batch, &fwd));
  OOC_CUFFT_TRY(cufftEstimateMany(2, a.dims, a.complex_embed, 1, a.complex_dist, a.real_embed, 1,
                                  a.real_dist, f64 ? CUFFT_Z2D : CUFFT_C2R, a.batch, &inv));
  // Estimates may fall short of what the plans ask for; a plan that wants more gets its own
  // buffer (Plans), so this margin only keeps that rare.
  return align_up(std::max(fwd, inv) + std::max(fwd, inv) / 4 + (std::size_t{1} << 20));
}

// The half spectrum of the kernel placed at the origin of an n x m tile, scaled by 1 / (n m)
// (the inverse's factor): n x (m / 2 + 1) complex values, computed in double.
std::vector<std::complex<double>> half_spectrum(const std::vector<double>& taps,
                                                const FftCudaShape& s) {
  const std::int64_t n = s.n, m = s.m, half = m / 2 + 1;
  std::vector<std::complex<double>> a(static_cast<std::size_t>(n * m)), b(a.size());
  for (std::int64_t i = 0; i < s.K; ++i)
    for (std::int64_t j = 0; j < s.L; ++j) a[i * m + j] = taps[i * s.L + j];
  kernels::Fft1d<double> rows(m, false, 1), cols(n, false, m);
  for (std::int64_t i = 0; i < n; ++i) rows.run(a.data() + i * m, b.data() + i * m);
  std::vector<std::complex<double>> col(static_cast<std::size_t>(n));
  std::vector<std::complex<double>> out(static_cast<std::size_t>(n * half));
  const double scale = 1.0 / (double(n) * double(m));
  for (std::int64_t j = 0; j < half; ++j) {
    cols.run(b.data() + j, col.data());
    for (std::int64_t i = 0; i < n; ++i) out[i * half + j] = col[i] * scale;
  }
  return out;
}

class FftCudaKernel final : public CudaKernel {
 public:
  FftCudaKernel(const std::vector<int>& devices, const FftCudaShape& s,
                const std::vector<double>& taps, bool f64)
      : s_(s), g_(s, f64), f64_(f64), work_bytes_(estimated_work_bytes(s, g_, f64)) {
    const auto spec = half_spectrum(taps, s);
    if (f64) {
      spectrum_.emplace(devices, spec.data(), spec.size() * sizeof(spec[0]));
    } else {
      std::vector<std::complex<float>> f(spec.begin(), spec.end());
      spectrum_.emplace(devices, f.data(), f.size() * sizeof(f[0]));
    }
  }

  ~FftCudaKernel() override {
    for (Plans& p : plans_) destroy(p);
  }

  // The plans of one slot: a plan's stream and work area are set before each band, so two slots
  // never share one.
  void start(const CudaSlotInfo& slot) override {
    const auto i = static_cast<std::size_t>(slot.slot);
    if (plans_.size() <= i) plans_.resize(i + 1);
    Plans& p = plans_[i];
    p.device = slot.device;
    PlanArgs a(s_, g_);
    std::size_t fwd_bytes = 0, inv_bytes = 0;
    OOC_CUFFT_TRY(cufftCreate(&p.fwd));
    p.has_fwd = true;
    OOC_CUFFT_TRY(cufftCreate(&p.inv));
    p.has_inv = true;
    OOC_CUFFT_TRY(cufftSetAutoAllocation(p.fwd, 0));
    OOC_CUFFT_TRY(cufftSetAutoAllocation(p.inv, 0));
    OOC_CUFFT_TRY(cufftMakePlanMany(p.fwd, 2, a.dims, a.real_embed, 1, a.real_dist, a.complex_embed,
                                    1, a.complex_dist, f64_ ? CUFFT_D2Z : CUFFT_R2C, a.batch,
                                    &fwd_bytes));
    OOC_CUFFT_TRY(cufftMakePlanMany(p.inv, 2, a.dims, a.complex_embed, 1, a.complex_dist,
                                    a.real_embed, 1, a.real_dist, f64_ ? CUFFT_Z2D : CUFFT_C2R,
                                    a.batch, &inv_bytes));
    const std::size_t need = std::max(fwd_bytes, inv_bytes);
    if (need > work_bytes_) p.own_work = std::make_unique<cuda::DeviceBuffer>(slot.device, need);
  }
  void stop(const CudaSlotInfo& slot) override {
    const auto i = static_cast<std::size_t>(slot.slot);
    if (i < plans_.size()) destroy(plans_[i]);
  }

  void run_async(const CudaBand& b) override {
    const auto stream = static_cast<cudaStream_t>(b.stream);
    Plans& p = plans_[static_cast<std::size_t>(b.slot)];
    std::byte* planes = b.scratch;
    void* work = p.own_work ? static_cast<void*>(p.own_work->data())
                            : static_cast<void*>(b.scratch + g_.planes_bytes);
    OOC_CUFFT_TRY(cufftSetStream(p.fwd, stream));
    OOC_CUFFT_TRY(cufftSetStream(p.inv, stream));
    OOC_CUFFT_TRY(cufftSetWorkArea(p.fwd, work));
    OOC_CUFFT_TRY(cufftSetWorkArea(p.inv, work));

    cuda::FftTileRow r;
    r.in = b.in;
    r.in_stride = b.in_stride;
    r.in_type = b.in_spec.type;
    r.first_row = b.first_row;
    // A band's first input row is at most its halo above the image; a volume's convolution marks
    // a plane outside the volume (constant border) by one far above it (conv3d_cuda.cpp).
    r.outside = b.first_row < -b.halo;
    r.height = s_.height;
    r.width = s_.width;
    r.channels = s_.channels;
    r.border = s_.border;
    r.border_value = s_.border_value;
    r.K = s_.K;
    r.L = s_.L;
    r.n = s_.n;
    r.m = s_.m;
    r.h = s_.h;
    r.w = s_.w;
    r.planes = g_.planes;
    r.planes_data = planes;
    r.pitch = g_.pitch;
    r.out = b.out;
    r.out_stride = b.out_stride;
    r.out_type = s_.out_type;
    r.y0 = b.band.y0;
    r.out_rows = b.band.rows;
    r.f64 = f64_;
    const std::int64_t first = floor_div(b.band.y0, s_.h);
    const std::int64_t last = floor_div(b.band.y0 + b.band.rows - 1, s_.h);
    const void* spectrum = spectrum_->on(b.device);
    for (std::int64_t t = first; t <= last; ++t) {
      r.ty = t * s_.h;
      cuda::fft_pack_async(r, stream);
      if (f64_) {
        OOC_CUFFT_TRY(cufftExecD2Z(p.fwd, reinterpret_cast<cufftDoubleReal*>(planes),
                                   reinterpret_cast<cufftDoubleComplex*>(planes)));
      } else {
        OOC_CUFFT_TRY(cufftExecR2C(p.fwd, reinterpret_cast<cufftReal*>(planes),
                                   reinterpret_cast<cufftComplex*>(planes)));
      }
      cuda::fft_multiply_async(planes, spectrum, g_.planes, s_.n * g_.half, f64_, stream);
      if (f64_) {
        OOC_CUFFT_TRY(cufftExecZ2D(p.inv, reinterpret_cast<cufftDoubleComplex*>(planes),
                                   reinterpret_cast<cufftDoubleReal*>(planes)));
      } else {
        OOC_CUFFT_TRY(cufftExecC2R(p.inv, reinterpret_cast<cufftComplex*>(planes),
                                   reinterpret_cast<cufftReal*>(planes)));
      }
      cuda::fft_unpack_async(r, stream);
    }
  }

  static std::size_t scratch_bytes(const FftCudaShape& s, bool f64) {
    const Geometry g(s, f64);
    return g.planes_bytes + estimated_work_bytes(s, g, f64);
  }

 private:
  struct Plans {
    cufftHandle fwd = 0, inv = 0;
    bool has_fwd = false, has_inv = false;  // a handle of 0 is a valid one
    int device = 0;
    std::unique_ptr<cuda::DeviceBuffer> own_work;  // when the plans want more than estimated
  };

  static void destroy(Plans& p) {
    if (p.has_fwd || p.has_inv) cudaSetDevice(p.device);
    if (p.has_fwd) cufftDestroy(p.fwd);
    if (p.has_inv) cufftDestroy(p.inv);
    p = Plans{};
  }

  static std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
  }

  FftCudaShape s_;
  Geometry g_;
  bool f64_;
  std::size_t work_bytes_;
  std::optional<cuda::Replicated> spectrum_;
  std::vector<Plans> plans_;  // by slot (start, stop)
};

}  // namespace

std::unique_ptr<CudaKernel> make_conv2d_fft_cuda(const std::vector<int>& devices,
                                                 const FftCudaShape& shape,
                                                 const std::vector<double>& taps, bool f64) {
  return std::make_unique<FftCudaKernel>(devices, shape, taps, f64);
}

std::size_t conv2d_fft_cuda_scratch(const FftCudaShape& shape, std::int64_t /*band_rows*/,
                                    bool f64) {
  return FftCudaKernel::scratch_bytes(shape, f64);
}

}  // namespace ooc
