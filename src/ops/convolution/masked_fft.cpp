// convolve's normalized convolution by FFT (issue 48): the overlap-save kernel
// (kernels/cpu/convolution/fft_conv.hpp) transforms each tile's x m and m as one complex tile and
// finishes each output row as it comes out; where a tap is negative it runs over x m, over m and
// over m with |k| apart, then divides. On the GPU through cuFFT (masked_conv2d_cuda.cpp). Its
// results differ from the direct normalized sum by the transforms' rounding: weights within the
// FFT's error bound of 0 count as no valid sample.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "io/digest.hpp"
#include "kernels/cpu/convolution/fft_conv.hpp"
#include "kernels/cpu/masked/convert.hpp"
#include "kernels/cpu/masked/masked.hpp"
#include "kernels/cpu/masked/pool.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/precision.hpp"
#include "ops/convolution/band_fill.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"

namespace ooc::detail {
namespace {

struct MaskedFftParams {
  double nodata = 0, cval = 0, min_weight = 0;
  bool fill = false, f64 = false, negative = false;
  double total_abs = 0;  // sum |k|
  double tolerance = 0;  // weights at most this are 0 (the FFT's bound on them)
};

// One output row where the output is the accumulator's type: n / d where the window is valid,
// else the hole's value (the thresholds in Acc, see run_as). Restrict pointers and selects
// only, so that it vectorizes.
template <class Acc>
void finish_row(const Acc* __restrict own, const Acc* __restrict n, const Acc* __restrict d,
                const Acc* __restrict w, Acc* __restrict out, std::int64_t S, bool fill, Acc tol,
                Acc least, Acc hole, Acc off) {
  // In vectors of 16 bytes (GCC keeps the scalar loop's selects as branches).
  typedef Acc V __attribute__((vector_size(16)));
  using Int = std::conditional_t<sizeof(Acc) == 4, std::int32_t, std::int64_t>;
  typedef Int I __attribute__((vector_size(16)));
  constexpr std::int64_t L = 16 / sizeof(Acc);
  const I all = I{} - Int(fill ? 1 : 0);
  const V tv = V{} + tol, lv = V{} + least, hv = V{} + hole, ov = V{} + off, zero{};
  std::int64_t j = 0;
  for (; j + L <= S; j += L) {
    V o, nn, dd, ww;
    std::memcpy(&o, own + j, sizeof o);
    std::memcpy(&nn, n + j, sizeof nn);
    std::memcpy(&dd, d + j, sizeof dd);
    std::memcpy(&ww, w + j, sizeof ww);
    const V ad = dd < zero ? -dd : dd;
    const I valid = (all | (o != zero)) & (ww > tv) & (ww >= lv) & (ad > tv);
    const V q = nn / dd;
    const V r = valid ? (q == hv ? ov : q) : hv;
    std::memcpy(out + j, &r, sizeof r);
  }
  for (; j < S; ++j) {
    const bool valid =
        (fill | (own[j] != 0)) & (w[j] > tol) & (w[j] >= least) & (std::fabs(d[j]) > tol);
    const Acc q = n[j] / d[j];
    out[j] = valid ? (q == hole ? off : q) : hole;
  }
}

// What the fused path's finish reads (one band): its input rows for the own samples, the rule.
template <class Acc>
struct FusedFinish {
  const CpuBand* band;
  const MaskedFftParams* p;
  Acc tol, least;  // the thresholds in Acc (see run_fused)
  double need;

  // Output samples [x, x + n) of channel c of image row y from num and den (n each).
  static void row(const void* context, std::int64_t y, int c, std::int64_t x, std::int64_t n,
                  const void* num_v, const void* den_v, std::byte* out_row) {
    const FusedFinish& f = *static_cast<const FusedFinish*>(context);
    const CpuBand& b = *f.band;
    const MaskedFftParams& p = *f.p;
    const int C = b.in.channels;
    const auto* num = static_cast<const Acc*>(num_v);
    const auto* den = static_cast<const Acc*>(den_v);
    thread_local std::vector<Acc> own;  // 1: the output's own sample is valid
    own.resize(static_cast<std::size_t>(n));
    const std::byte* in = b.rows[y - b.band.y0 + b.halo];
    dispatch_type(b.in.type, [&](auto t) {
      using T = decltype(t);
      const T* q = reinterpret_cast<const T*>(in) + x * C + c;
      // The hole test in T, branch-free (masked.hpp's rule), so that it vectorizes.
      const bool has = !std::isnan(p.nodata) && kernels::masked::holds<T>(p.nodata);
      const T nd = has ? static_cast<T>(p.nodata) : T{};
      for (std::int64_t i = 0; i < n; ++i) {
        const T u = q[i * C];
        bool h = has & (u == nd);
        if constexpr (std::is_floating_point_v<T>) h = h | (u != u);
        own[i] = h ? Acc(0) : Acc(1);
      }
    });
    const Acc fill_value =
        std::isnan(p.nodata) ? std::numeric_limits<Acc>::quiet_NaN() : static_cast<Acc>(p.nodata);
    dispatch_type(b.out.type, [&](auto u) {
      using U = decltype(u);
      const U hole = kernels::masked::nodata_of<U>(double(fill_value));
      U* out = reinterpret_cast<U*>(out_row) + x * C + c;
      if constexpr (std::is_same_v<U, Acc>) {
        if (C == 1) {
          finish_row<Acc>(own.data(), num, den, den, out, n, p.fill, f.tol, f.least, hole,
                          kernels::masked::off_nodata(hole));
          return;
        }
      }
      for (std::int64_t i = 0; i < n; ++i) {
        const double d = double(den[i]);
        const bool valid =
            (p.fill || own[i] != 0) && d > p.tolerance && d >= f.need && std::fabs(d) > p.tolerance;
        out[i * C] = valid ? kernels::masked::store_valid<U>(double(num[i] / den[i]), hole) : hole;
      }
    });
  }
};

class MaskedFftKernel final : public CpuKernel {
 public:
  MaskedFftKernel(std::shared_ptr<const kernels::FftConv2d> k,
                  std::shared_ptr<const kernels::FftConv2d> kabs, const kernels::FftConvArgs& base,
                  const MaskedFftParams& p)
      : k_(std::move(k)), kabs_(std::move(kabs)), base_(base), p_(p) {}
  void run(const CpuBand& b) override {
    if (p_.f64)
      run_as<double>(b);
    else
      run_as<float>(b);
  }

 private:
  // Without a negative tap: one transform a tile, of x m (real part) and m (imaginary part),
  // finished as each output row comes out (kernels::FftNormalized): no planes between the passes.
  template <class Acc>
  void run_fused(const CpuBand& b) {
    FusedFinish<Acc> f{&b, &p_, 0, 0, p_.min_weight * p_.total_abs};
    thresholds(f.need, f.tol, f.least);
    const bool cval_ok = !kernels::masked::hole(p_.cval, p_.nodata);
    kernels::FftNormalized nz;
    nz.nodata = p_.nodata;
    nz.cv = cval_ok ? p_.cval : 0.0;
    nz.cm = cval_ok ? 1.0 : 0.0;
    nz.context = &f;
    nz.finish = &FusedFinish<Acc>::row;
    kernels::FftConvArgs a = base_;
    set_band(a, b);
    a.halo = b.halo;
    a.y0 = b.band.y0;
    a.height = b.in.height;
    a.in_type = b.in.type;
    a.out_type = b.out.type;
    a.normalized = &nz;
    k_->band(a);
  }

  // The tests of valid weights in Acc, so that they vectorize: w > tol exactly where w exceeds
  // the tolerance, w >= least exactly where it reaches `need`.
  template <class Acc>
  void thresholds(double need, Acc& tol, Acc& least) const {
    constexpr Acc inf = std::numeric_limits<Acc>::infinity();
    tol = static_cast<Acc>(std::min(p_.tolerance, double(std::numeric_limits<Acc>::max())));
    if (double(tol) > p_.tolerance) tol = std::nextafter(tol, -inf);
    least = need > double(std::numeric_limits<Acc>::max()) ? inf : static_cast<Acc>(need);
    if (double(least) < need) least = std::nextafter(least, inf);
  }

  template <class Acc>
  void run_as(const CpuBand& b) {
    if (!p_.negative) {
      run_fused<Acc>(b);
      return;
    }
    const std::int64_t S = b.in.width * b.in.channels, rows = b.band.rows + 2 * b.halo;
    const std::int64_t out_rows = b.band.rows;
    const auto s = static_cast<std::size_t>(S);
    const bool cval_ok = !kernels::masked::hole(p_.cval, p_.nodata);
    auto lease = pool_.take();
    Buffers& buf = *lease;
    const auto in_n = static_cast<std::size_t>(rows) * s,
               out_n = static_cast<std::size_t>(out_rows) * s;
    // Grown, never shrunk nor cleared: every sample read is written first.
    for (auto* v : {&buf.v, &buf.m}) v->resize(std::max(v->size(), in_n * sizeof(Acc)));
    for (auto* v : {&buf.num, &buf.den}) v->resize(std::max(v->size(), out_n * sizeof(Acc)));
    if (p_.negative) buf.wab.resize(std::max(buf.wab.size(), out_n * sizeof(Acc)));
    Acc* const v = reinterpret_cast<Acc*>(buf.v.data());
    Acc* const m = reinterpret_cast<Acc*>(buf.m.data());
    Acc* const num = reinterpret_cast<Acc*>(buf.num.data());
    Acc* const den = reinterpret_cast<Acc*>(buf.den.data());
    Acc* const wab = reinterpret_cast<Acc*>(buf.wab.data());
    std::vector<const std::byte*> vrows(static_cast<std::size_t>(rows)), mrows(vrows.size());
    // Rows over TBB threads, as the transforms between run (a loop on one thread here and in
    // the finish left the masked run's wall time 3x the unmasked one's on 2 cores).
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t i) {
      if (!b.rows[i]) return;  // the constant border: the kernel's border_value below
      Acc* vi = v + i * S;
      Acc* mi = m + i * S;
      dispatch_type(b.in.type, [&](auto t) {
        using T = decltype(t);
        const T* p = reinterpret_cast<const T*>(b.rows[i]);
        // The hole test in T, branch-free, so that it vectorizes (the rule of masked.hpp's hole:
        // NaN, and the value where T holds it).
        const bool has = !std::isnan(p_.nodata) && kernels::masked::holds<T>(p_.nodata);
        const T nd = has ? static_cast<T>(p_.nodata) : T{};
        for (std::int64_t j = 0; j < S; ++j) {
          const T x = p[j];
          bool h = has & (x == nd);
          if constexpr (std::is_floating_point_v<T>) h = h | (x != x);
          vi[j] = h ? Acc(0) : static_cast<Acc>(x);
          mi[j] = h ? Acc(0) : Acc(1);
        }
      });
      vrows[i] = reinterpret_cast<const std::byte*>(vi);
      mrows[i] = reinterpret_cast<const std::byte*>(mi);
    });
    kernels::FftConvArgs a = base_;
    set_band(a, b);
    a.halo = b.halo;
    a.y0 = b.band.y0;
    a.height = b.in.height;
    a.in_type = a.out_type = std::is_same_v<Acc, float> ? SampleType::f32 : SampleType::f64;
    a.out_stride = s * sizeof(Acc);
    const auto pass = [&](const kernels::FftConv2d& k, const std::vector<const std::byte*>& r,
                          double cval, Acc* out) {
      a.rows = r.data();
      a.border_value = cval;
      a.out = reinterpret_cast<std::byte*>(out);
      k.band(a);
    };
    pass(*k_, vrows, cval_ok ? p_.cval : 0.0, num);
    pass(*k_, mrows, cval_ok ? 1.0 : 0.0, den);
    if (p_.negative) pass(*kabs_, mrows, cval_ok ? 1.0 : 0.0, wab);
    const double need = p_.min_weight * p_.total_abs;
    const Acc fill_value =
        std::isnan(p_.nodata) ? std::numeric_limits<Acc>::quiet_NaN() : static_cast<Acc>(p_.nodata);
    dispatch_type(b.out.type, [&](auto t) {
      using U = decltype(t);
      // Holes as U's nodata value, valid samples kept off it (kernels/cpu/masked/convert.hpp).
      const U hole = kernels::masked::nodata_of<U>(double(fill_value));
      if constexpr (std::is_same_v<U, Acc>) {
        // The same tests in Acc, so that the loop vectorizes: w > tolerance exactly where w
        // exceeds the largest Acc at or below it, w >= need where w reaches the least Acc at or
        // above it; the quotient is already U (store_valid's conversion is none).
        Acc tol, least;
        thresholds(need, tol, least);
        const Acc off = kernels::masked::off_nodata(hole);
        const bool fill = p_.fill;
        tbb::parallel_for(std::int64_t{0}, out_rows, [&](std::int64_t y) {
          const Acc* own = m + (y + b.halo) * S;
          const Acc* n = num + y * S;
          const Acc* d = den + y * S;
          const Acc* w = p_.negative ? wab + y * S : d;
          U* out =
              reinterpret_cast<U*>(b.out.data + static_cast<std::size_t>(y) * b.out.row_stride);
          finish_row<Acc>(own, n, d, w, out, S, fill, tol, least, hole, off);
        });
        return;
      }
      tbb::parallel_for(std::int64_t{0}, out_rows, [&](std::int64_t y) {
        const Acc* own = m + (y + b.halo) * S;
        const Acc* n = num + y * S;
        const Acc* d = den + y * S;
        const Acc* w = p_.negative ? wab + y * S : d;
        U* out = reinterpret_cast<U*>(b.out.data + static_cast<std::size_t>(y) * b.out.row_stride);
        for (std::int64_t j = 0; j < S; ++j) {
          const bool valid = (p_.fill || own[j] != 0) && double(w[j]) > p_.tolerance &&
                             double(w[j]) >= need && std::fabs(double(d[j])) > p_.tolerance;
          out[j] = valid ? kernels::masked::store_valid<U>(double(n[j] / d[j]), hole) : hole;
        }
      });
    });
  }

  struct Buffers {
    std::vector<std::byte> v, m, num, den, wab;
  };
  std::shared_ptr<const kernels::FftConv2d> k_, kabs_;
  kernels::FftConvArgs base_;
  MaskedFftParams p_;
  kernels::masked::BufferPool<Buffers> pool_;
};

class MaskedFftConv2d final : public Operation {
 public:
  MaskedFftConv2d(const StageContext& c, const Kernel2d& k, const kernels::FftTiling& t,
                  double min_weight, bool fill)
      : kernel_(k),
        out_{c.in.width, c.in.height, c.in.channels, c.out(), c.in.depth, c.in.stack},
        tiling_(t) {
    set_images(args_, c.in, out_, c.settings.border, c.settings.border_value);
    p_.nodata = *c.settings.nodata;
    p_.cval = c.settings.border_value;
    p_.min_weight = min_weight;
    p_.fill = fill;
    p_.f64 = accumulates_in_f64(c.in.type, out_.type, c.settings.precision);
    for (double v : k.taps) {
      p_.negative |= v < 0;
      p_.total_abs += std::fabs(v);
    }
    // The FFT's bound on a weight (|m| <= 1), twice over.
    p_.tolerance = 2 * fft_error_bound(t.n, t.m, p_.f64) * p_.total_abs;
  }
  std::string describe() const override {
    return "normalized convolve " + kernel_.name + " (" + std::to_string(kernel_.rows) + "x" +
           std::to_string(kernel_.cols) + ", FFT of x m and m" +
           (p_.negative ? ", and of m with |k|, " : " in one transform, ") +
           std::to_string(tiling_.n) + "x" + std::to_string(tiling_.m) + " tiles), border " +
           std::string(name(args_.border)) + ", nodata " + nodata_text(p_.nodata) +
           (p_.fill ? ", holes filled" : ", holes kept") + ", accumulate " +
           (p_.f64 ? "f64" : "f32");
  }
  std::string fingerprint() const override {
    return describe() + ", values " +
           Digest()
               .add(kernel_.taps)
               .add(p_.cval)
               .add(p_.min_weight)
               .add(double(kernel_.cols))
               .hex() +
           " to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return kernels::fft_halo(kernel_.rows, tiling_); }
  std::int64_t row_grid() const override { return tiling_.h; }
  std::int64_t grid_halo() const override { return kernel_.rows / 2; }
  BorderMode border() const override { return args_.border; }
  std::int64_t fit_band_rows(std::int64_t rows, std::int64_t /*span*/) const override {
    return rows < tiling_.h ? rows : rows / tiling_.h * tiling_.h;
  }
  // The fused path (no negative tap) keeps nothing between passes but a row of weights a thread.
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    const std::size_t acc = p_.f64 ? 8 : 4, S = static_cast<std::size_t>(cols * out_.channels);
    const std::size_t fft = kernels::FftConv2d::thread_bytes(tiling_, p_.f64) +
                            kernels::FftConv2d::shared_bytes(tiling_, p_.f64);
    if (!p_.negative) return fft + static_cast<std::size_t>(tiling_.w) * acc;
    const auto in_rows = static_cast<std::size_t>(band_rows + 2 * halo());
    const auto out_rows = static_cast<std::size_t>(band_rows);
    return (2 * in_rows + 3 * out_rows + 1) * S * acc + 2 * fft;
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    auto k = std::make_shared<const kernels::FftConv2d>(kernel_.taps, kernel_.rows, kernel_.cols,
                                                        tiling_, p_.f64);
    std::shared_ptr<const kernels::FftConv2d> kabs;
    if (p_.negative) {
      std::vector<double> a(kernel_.taps);
      for (double& v : a) v = std::fabs(v);
      kabs = std::make_shared<const kernels::FftConv2d>(a, kernel_.rows, kernel_.cols, tiling_,
                                                        p_.f64);
    }
    return std::make_unique<MaskedFftKernel>(k, kabs, args_, p_);
  }
  Cost cost() const override { return work_; }
  void set_cost(const Cost& c) { work_ = c; }
  // cuFFT over the same tiles (masked_conv2d_cuda.cpp): within the FFT's bound, not the CPU's bits.
  bool has_cuda() const override { return kCudaBuilt; }
  std::size_t cuda_scratch_bytes(std::int64_t band_rows) const override {
#if defined(OOC_HAVE_CUDA)
    return masked_conv2d_cuda_scratch(cuda_args(), band_rows, halo());
#else
    (void)band_rows;
    return 0;
#endif
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_masked_conv2d_cuda(devices, cuda_args());
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  MaskedConv2dCudaArgs cuda_args() const {
    MaskedConv2dCudaArgs m;
    m.taps = kernel_.taps;
    m.rows = kernel_.rows;
    m.cols = kernel_.cols;
    m.out = out_;
    m.border = args_.border;
    m.border_value = p_.cval;
    m.nodata = p_.nodata;
    m.min_weight_need = p_.min_weight * p_.total_abs;
    m.fill = p_.fill;
    m.f64 = p_.f64;
    m.fft = MaskedConv2dCudaArgs::FftTiles{tiling_.n, tiling_.m, tiling_.h, tiling_.w};
    m.tolerance = p_.tolerance;
    return m;
  }

  Kernel2d kernel_;
  ImageSpec out_;
  kernels::FftTiling tiling_;
  kernels::FftConvArgs args_;
  MaskedFftParams p_;
  Cost work_;
};

}  // namespace

std::unique_ptr<Operation> make_masked_fft_conv2d(const StageContext& c, const Kernel2d& k,
                                                  ConvMethod method, double min_weight, bool fill) {
  if (method == ConvMethod::direct) return nullptr;
  Conv2dParams p;
  p.kernel = k;
  p.border = c.settings.border;
  p.border_value = c.settings.border_value;
  p.out_type = c.out();
  p.precision = c.settings.precision;
  p.method = method;
  const Conv2dCosts costs = conv2d_costs(c.in, p);
  if (costs.tile_rows == 0) {
    if (method == ConvMethod::fft)
      throw Error(ErrorKind::usage, "--method fft: no FFT tile of at most 2^20 points holds the " +
                                        std::to_string(k.rows) + " x " + std::to_string(k.cols) +
                                        " kernel: use --method direct");
    return nullptr;
  }
  // Two transforms (three with a negative tap) against the direct sum's numerator and, near
  // holes, its weights.
  const double transforms =
      2.0 + (std::any_of(k.taps.begin(), k.taps.end(), [](double v) { return v < 0; }) ? 1.0 : 0.0);
  if (method == ConvMethod::automatic && !(transforms * costs.cpu_fft < 1.5 * costs.cpu_direct))
    return nullptr;
  const kernels::FftTiling t{costs.tile_rows, costs.tile_cols, costs.tile_rows - k.rows + 1,
                             costs.tile_cols - k.cols + 1};
  auto op = std::make_unique<MaskedFftConv2d>(c, k, t, min_weight, fill);
  Cost w = costs.work;
  w.cpu_fft = w.cuda_fft = true;
  w.fft_work *= transforms;
  op->set_cost(w);
  return op;
}

}  // namespace ooc::detail
