// Normalized convolution's CUDA kernels (normalized.cuh): one thread a sample, a row pass into the
// scratch's three planes and a column pass that divides and stores; a volume's z pass before
// them; for convolve's 2-D sums, the split of a band into x m and m and the finish after the
// convolutions of both.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/masked/convert.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/masked/holes.cuh"
#include "kernels/cuda/masked/normalized.cuh"
#include "ooc/detail/sample_type.hpp"

namespace ooc::cuda {
namespace {

constexpr int kThreads = 256;

template <class Acc>
__device__ __forceinline__ Acc mul(Acc a, Acc b) {
  if constexpr (std::is_same_v<Acc, float>)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
}

template <class Acc>
__device__ __forceinline__ Acc div(Acc a, Acc b) {
  if constexpr (std::is_same_v<Acc, float>)
    return __fdiv_rn(a, b);
  else
    return __ddiv_rn(a, b);
}

// The sums over x m, m and |k| m a tap at a time, rounded as the CPU's: a plain first product,
// then one fma a tap in tap order; the |k| m sum only where `absolute`.
template <class Acc>
struct Sums {
  Acc n = 0, d = 0, a = 0;
  // A tap of weight w (magnitude wa) over the values xn, weights xd and |k| weights xa.
  __device__ __forceinline__ void add(bool first, Acc w, Acc wa, Acc xn, Acc xd, Acc xa,
                                      bool absolute) {
    n = first ? mul(w, xn) : fma(w, xn, n);
    d = first ? mul(w, xd) : fma(w, xd, d);
    if (absolute) a = first ? mul(wa, xa) : fma(wa, xa, a);
  }
  // A tap over a sample's value v and weight m (x m and m).
  __device__ __forceinline__ void tap(bool first, Acc w, Acc wa, Acc v, Acc m, bool absolute) {
    add(first, w, wa, v, m, m, absolute);
  }
};

// A sample's value and weight: 0 and 0 for a hole, else the value and 1.
template <class T, class Acc>
__device__ __forceinline__ void value_weight(T u, const Holes<T>& hole, Acc& v, Acc& m) {
  const bool h = hole(u);
  v = h ? Acc(0) : static_cast<Acc>(u);
  m = h ? Acc(0) : Acc(1);
}

// Row pass: input row j, sample s (pixel x, channel c) -> the sums over x m, m and |k| m.
template <class T, class Acc>
__global__ void row_pass(NormalizedLaunch l, Holes<T> hole, Acc cv, Acc cm, std::int64_t rows,
                         std::int64_t n) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const Acc* w = reinterpret_cast<const Acc*>(l.taps);
  const std::int64_t L = 2 * l.rx + 1, K = 2 * l.ry + 1;
  const Acc* wa = w + L + K;
  Acc* num = reinterpret_cast<Acc*>(l.scratch);
  Acc* den = num + rows * n;
  Acc* wab = den + rows * n;
  const int C = l.channels;
  const std::int64_t x = s / C, c = s - x * C;
  for (std::int64_t j = blockIdx.y; j < rows; j += gridDim.y) {
    const std::int64_t image_row = l.first_row + j;
    const std::size_t at = static_cast<std::size_t>(j * n + s);
    if (l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height)) {
      num[at] = cv;  // scipy pads the column pass with cval: the constant, weight 1
      den[at] = cm;
      wab[at] = cm;
      continue;
    }
    const T* src = reinterpret_cast<const T*>(l.in + static_cast<std::size_t>(j) * l.in_stride);
    Sums<Acc> t;
    for (std::int64_t k = 0; k < L; ++k) {
      const std::int64_t q = map_index(x - l.rx + k, l.width, l.border);
      Acc v = cv, m = cm;
      if (q >= 0) value_weight(src[q * C + c], hole, v, m);
      t.tap(k == 0, w[k], wa[k], v, m, true);
    }
    num[at] = t.n;
    den[at] = t.d;
    wab[at] = t.a;
  }
}

template <class U, class Acc>
__device__ __forceinline__ void put(std::byte* row, std::int64_t s, Acc o, Acc fillv, U nd) {
  if constexpr (std::is_same_v<U, Acc>) {
    reinterpret_cast<U*>(row)[s] = o;
  } else {
    const bool h = (o != o) | (o == fillv);
    const U d = store_as<U, Acc>(o);
    U step;
    if constexpr (std::is_floating_point_v<U>)
      step = nextafter(nd, nd == std::numeric_limits<U>::max() ? -INFINITY : INFINITY);
    else
      step = nd == std::numeric_limits<U>::max() ? static_cast<U>(nd - 1) : static_cast<U>(nd + 1);
    reinterpret_cast<U*>(row)[s] = h ? nd : (d == nd ? step : d);
  }
}

// An output sample from its sums: n / d where the window is valid (`own`: its own sample is no
// hole, or fill; the weights, |k| m's where a tap is negative, above 0 and at least `need`; d
// not 0), else nodata; stored by `put`.
template <class U, class Acc>
__device__ __forceinline__ void finish_sample(std::byte* row, std::int64_t s, const Sums<Acc>& t,
                                              bool negative, bool own, double need, Acc fillv,
                                              U nd) {
  const Acc aw = negative ? t.a : t.d;
  const bool valid = own && aw > Acc(0) && static_cast<double>(aw) >= need && t.d != Acc(0);
  put<U, Acc>(row, s, valid ? div(t.n, t.d) : fillv, fillv, nd);
}

// Column pass: output row y, sample s: the three column sums, the division, the nodata rule.
template <class T, class U, class Acc>
__global__ void column_pass(NormalizedLaunch l, Holes<T> hole, Acc fillv, U nd, std::int64_t rows,
                            std::int64_t n) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const std::int64_t L = 2 * l.rx + 1, K = 2 * l.ry + 1;
  const Acc* wc = reinterpret_cast<const Acc*>(l.taps) + L;
  const Acc* wca = wc + K + L;
  const Acc* num = reinterpret_cast<const Acc*>(l.scratch);
  const Acc* den = num + rows * n;
  const Acc* wab = den + rows * n;
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    Sums<Acc> t;
    for (std::int64_t k = 0; k < K; ++k) {
      const std::size_t at = static_cast<std::size_t>((y + k) * n + s);
      t.add(k == 0, wc[k], wca[k], num[at], den[at], wab[at], l.negative);
    }
    const T* own =
        reinterpret_cast<const T*>(l.in + static_cast<std::size_t>(y + l.ry) * l.in_stride);
    finish_sample<U, Acc>(l.out + static_cast<std::size_t>(y) * l.out_stride, s, t, l.negative,
                          l.fill || !hole(own[s]), l.min_weight_need, fillv, nd);
  }
}

// The constant border's value and weight (both 0 where the constant is itself a hole: scipy pads
// each pass with it) and the value of an output without one, as the CPU's kernels take them.
template <class Acc>
struct Padding {
  Acc cv, cm, fillv;
  Padding(double border_value, double nodata) {
    const bool cval_ok = !(std::isnan(border_value) || border_value == nodata);
    cv = cval_ok ? static_cast<Acc>(border_value) : Acc(0);
    cm = cval_ok ? Acc(1) : Acc(0);
    fillv = std::isnan(nodata) ? std::numeric_limits<Acc>::quiet_NaN() : static_cast<Acc>(nodata);
  }
};

template <class Acc>
void launch(const NormalizedLaunch& l, cudaStream_t stream) {
  const std::int64_t n = l.width * l.channels, rows = l.out_rows + 2 * l.ry;
  const Padding<Acc> pad(l.border_value, l.nodata);
  const Acc cv = pad.cv, cm = pad.cm, fillv = pad.fillv;
  const dim3 block(kThreads);
  const unsigned gx = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  dispatch_type(l.in_type, [&](auto t) {
    using T = decltype(t);
    const Holes<T> hole = holes_of<T>(l.nodata);
    row_pass<T, Acc><<<dim3(gx, grid_rows(rows)), block, 0, stream>>>(l, hole, cv, cm, rows, n);
    OOC_KERNEL_TRY(cudaGetLastError());
    dispatch_type(l.out_type, [&](auto u) {
      using U = decltype(u);
      const U nd = kernels::masked::nodata_of<U>(l.nodata);
      column_pass<T, U, Acc>
          <<<dim3(gx, grid_rows(l.out_rows)), block, 0, stream>>>(l, hole, fillv, nd, rows, n);
      OOC_KERNEL_TRY(cudaGetLastError());
    });
  });
}

// A volume's z pass: column-pass row r (image row y0 - ry + r), padded sample p (pixel
// p / C - rx) -> the z sums over x m, m and |k| m, three planes of R x pw.
template <class T, class Acc>
__global__ void volume_z_pass(VolumeNormalizedLaunch l, Holes<T> hole, Acc cv, Acc cm,
                              std::int64_t R, std::int64_t pw) {
  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pw) return;
  const int C = l.channels;
  const std::int64_t P = 2 * l.rz + 1, q = p / C - l.rx, c = p % C;
  const Acc* wz = reinterpret_cast<const Acc*>(l.taps);
  const Acc* wza = wz + P + (2 * l.ry + 1) + (2 * l.rx + 1);
  Acc* zn = reinterpret_cast<Acc*>(l.scratch);
  Acc* zd = zn + R * pw;
  Acc* za = zd + R * pw;
  const bool constant = l.border == BorderMode::constant;
  const std::int64_t xm = map_index(q, l.width, l.border);
  for (std::int64_t r = blockIdx.y; r < R; r += gridDim.y) {
    const std::size_t at = static_cast<std::size_t>(r * pw + p);
    if (constant && xm < 0) {  // the row pass pads its own input with the constant
      zn[at] = cv;
      zd[at] = cm;
      za[at] = cm;
      continue;
    }
    const std::int64_t row = r - l.ry, image_row = l.y0 + row;
    const bool outside = constant && (image_row < 0 || image_row >= l.image_height);
    Sums<Acc> t;
    for (std::int64_t k = 0; k < P; ++k) {
      Acc v = cv, m = cm;
      if (l.planes[k] && !outside)
        value_weight(
            reinterpret_cast<const T*>(l.planes[k] + row * std::int64_t(l.in_stride))[xm * C + c],
            hole, v, m);
      t.tap(k == 0, wz[k], wza[k], v, m, l.negative);
    }
    zn[at] = t.n;
    zd[at] = t.d;
    if (l.negative) za[at] = t.a;
  }
}

// The row pass of the z sums: three planes of R x n after the z pass's.
template <class Acc>
__global__ void volume_row_pass(VolumeNormalizedLaunch l, Acc cv, Acc cm, std::int64_t R,
                                std::int64_t pw, std::int64_t n) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const int C = l.channels;
  const std::int64_t P = 2 * l.rz + 1, K = 2 * l.ry + 1, L = 2 * l.rx + 1;
  const Acc* wx = reinterpret_cast<const Acc*>(l.taps) + P + K;
  const Acc* wxa = wx + L + P + K;
  const Acc* zn = reinterpret_cast<const Acc*>(l.scratch);
  const Acc* zd = zn + R * pw;
  const Acc* za = zd + R * pw;
  Acc* N = const_cast<Acc*>(za + R * pw);
  Acc* D = N + R * n;
  Acc* A = D + R * n;
  for (std::int64_t r = blockIdx.y; r < R; r += gridDim.y) {
    const std::size_t at = static_cast<std::size_t>(r * n + s);
    const std::int64_t image_row = l.y0 - l.ry + r;
    if (l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height)) {
      N[at] = cv;  // the column pass pads its own input with the constant too
      D[at] = cm;
      A[at] = cm;
      continue;
    }
    const std::size_t row = static_cast<std::size_t>(r * pw + s);
    Sums<Acc> t;
    for (std::int64_t k = 0; k < L; ++k) {
      const std::size_t i = row + static_cast<std::size_t>(k * C);
      t.add(k == 0, wx[k], wxa[k], zn[i], zd[i], za[i], l.negative);
    }
    N[at] = t.n;
    D[at] = t.d;
    if (l.negative) A[at] = t.a;
  }
}

// The column pass, the division, the nodata rule (the 2-D column_pass's, over the row pass's
// planes).
template <class T, class U, class Acc>
__global__ void volume_column_pass(VolumeNormalizedLaunch l, Holes<T> hole, Acc fillv, U nd,
                                   std::int64_t R, std::int64_t pw, std::int64_t n) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const std::int64_t P = 2 * l.rz + 1, K = 2 * l.ry + 1, L = 2 * l.rx + 1;
  const Acc* wy = reinterpret_cast<const Acc*>(l.taps) + P;
  const Acc* wya = wy + K + L + P;
  const Acc* N = reinterpret_cast<const Acc*>(l.scratch) + 3 * R * pw;
  const Acc* D = N + R * n;
  const Acc* A = D + R * n;
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    Sums<Acc> t;
    for (std::int64_t k = 0; k < K; ++k) {
      const std::size_t at = static_cast<std::size_t>((y + k) * n + s);
      t.add(k == 0, wy[k], wya[k], N[at], D[at], A[at], l.negative);
    }
    const T* own = reinterpret_cast<const T*>(l.own + static_cast<std::size_t>(y) * l.in_stride);
    finish_sample<U, Acc>(l.out + static_cast<std::size_t>(y) * l.out_stride, s, t, l.negative,
                          l.fill || !hole(own[s]), l.min_weight_need, fillv, nd);
  }
}

// A 3-D kernel's direct sums, the division and the nodata rule: output row y, sample s.
template <class T, class U, class Acc>
__global__ void volume_direct(VolumeNormalizedLaunch l, Holes<T> hole, Acc cv, Acc cm, Acc fillv,
                              U nd, std::int64_t n) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const int C = l.channels;
  const std::int64_t x = s / C, c = s - x * C;
  const Acc* w = reinterpret_cast<const Acc*>(l.taps);
  const Acc* wa = w + l.tap_count;
  const bool constant = l.border == BorderMode::constant;
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    Sums<Acc> sums;
    for (std::int64_t t = 0; t < l.tap_count; ++t) {
      const std::int32_t* at = l.tap_at + 3 * t;
      const std::byte* plane = l.planes[at[0]];
      const std::int64_t row = y - l.ry + at[1], image_row = l.y0 + row;
      const std::int64_t xm = map_index(x - l.rx + at[2], l.width, l.border);
      Acc v = cv, m = cm;
      if (plane && xm >= 0 && !(constant && (image_row < 0 || image_row >= l.image_height)))
        value_weight(
            reinterpret_cast<const T*>(plane + row * std::int64_t(l.in_stride))[xm * C + c], hole,
            v, m);
      sums.tap(t == 0, w[t], wa[t], v, m, l.negative);
    }
    const T* own = reinterpret_cast<const T*>(l.own + static_cast<std::size_t>(y) * l.in_stride);
    finish_sample<U, Acc>(l.out + static_cast<std::size_t>(y) * l.out_stride, s, sums, l.negative,
                          l.fill || !hole(own[s]), l.min_weight_need, fillv, nd);
  }
}

template <class Acc>
void volume_launch(const VolumeNormalizedLaunch& l, cudaStream_t stream) {
  const std::int64_t n = l.width * l.channels, pw = (l.width + 2 * l.rx) * l.channels;
  const std::int64_t R = l.out_rows + 2 * l.ry;
  const Padding<Acc> pad(l.border_value, l.nodata);
  const Acc cv = pad.cv, cm = pad.cm, fillv = pad.fillv;
  const auto blocks = [](std::int64_t k) {
    return static_cast<unsigned>((k + kThreads - 1) / kThreads);
  };
  dispatch_type(l.in_type, [&](auto t) {
    using T = decltype(t);
    const Holes<T> hole = holes_of<T>(l.nodata);
    if (l.tap_at) {
      dispatch_type(l.out_type, [&](auto u) {
        using U = decltype(u);
        volume_direct<T, U, Acc><<<dim3(blocks(n), grid_rows(l.out_rows)), kThreads, 0, stream>>>(
            l, hole, cv, cm, fillv, kernels::masked::nodata_of<U>(l.nodata), n);
        OOC_KERNEL_TRY(cudaGetLastError());
      });
      return;
    }
    volume_z_pass<T, Acc>
        <<<dim3(blocks(pw), grid_rows(R)), kThreads, 0, stream>>>(l, hole, cv, cm, R, pw);
    OOC_KERNEL_TRY(cudaGetLastError());
    volume_row_pass<Acc>
        <<<dim3(blocks(n), grid_rows(R)), kThreads, 0, stream>>>(l, cv, cm, R, pw, n);
    OOC_KERNEL_TRY(cudaGetLastError());
    dispatch_type(l.out_type, [&](auto u) {
      using U = decltype(u);
      const U nd = kernels::masked::nodata_of<U>(l.nodata);
      volume_column_pass<T, U, Acc>
          <<<dim3(blocks(n), grid_rows(l.out_rows)), kThreads, 0, stream>>>(l, hole, fillv, nd, R,
                                                                            pw, n);
      OOC_KERNEL_TRY(cudaGetLastError());
    });
  });
}

template <class T, class Acc>
__global__ void split(NormalizedSplit p, Holes<T> hole) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= p.row_samples) return;
  for (std::int64_t j = blockIdx.y; j < p.rows; j += gridDim.y) {
    const std::int64_t image_row = p.first_row + j;
    if (p.constant_border && (image_row < 0 || image_row >= p.image_height)) continue;
    Acc v, m;
    value_weight(reinterpret_cast<const T*>(p.in + static_cast<std::size_t>(j) * p.in_stride)[s],
                 hole, v, m);
    const std::size_t at = static_cast<std::size_t>(j) * p.pitch;
    reinterpret_cast<Acc*>(p.v + at)[s] = v;
    reinterpret_cast<Acc*>(p.m + at)[s] = m;
  }
}

template <class U, class Acc>
__global__ void finish(NormalizedFinish f, Acc fillv, U nd, U step) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= f.row_samples) return;
  for (std::int64_t y = blockIdx.y; y < f.rows; y += gridDim.y) {
    const std::size_t at = static_cast<std::size_t>(y) * f.pitch;
    Sums<Acc> t;  // a: the weights min-weight weighs
    t.n = reinterpret_cast<const Acc*>(f.num + at)[s];
    t.d = reinterpret_cast<const Acc*>(f.den + at)[s];
    t.a = reinterpret_cast<const Acc*>(f.weights + at)[s];
    const bool own = f.fill || reinterpret_cast<const Acc*>(f.own + at)[s] != Acc(0);
    std::byte* row = f.out + static_cast<std::size_t>(y) * f.out_stride;
    if (f.fft) {
      const bool valid = own && static_cast<double>(t.a) > f.tolerance &&
                         static_cast<double>(t.a) >= f.min_weight_need &&
                         fabs(static_cast<double>(t.d)) > f.tolerance;
      const U d = valid ? store_as<U, Acc>(div(t.n, t.d)) : nd;
      reinterpret_cast<U*>(row)[s] = valid && d == nd ? step : d;
    } else {
      finish_sample<U, Acc>(row, s, t, true, own, f.min_weight_need, fillv, nd);
    }
  }
}

template <class Acc>
void split_as(const NormalizedSplit& p, cudaStream_t stream) {
  const unsigned gx = static_cast<unsigned>((p.row_samples + kThreads - 1) / kThreads);
  dispatch_type(p.in_type, [&](auto t) {
    using T = decltype(t);
    split<T, Acc><<<dim3(gx, grid_rows(p.rows)), kThreads, 0, stream>>>(p, holes_of<T>(p.nodata));
    OOC_KERNEL_TRY(cudaGetLastError());
  });
}

template <class Acc>
void finish_as(const NormalizedFinish& f, cudaStream_t stream) {
  const unsigned gx = static_cast<unsigned>((f.row_samples + kThreads - 1) / kThreads);
  const Acc fillv = Padding<Acc>(0, f.nodata).fillv;
  dispatch_type(f.out_type, [&](auto u) {
    using U = decltype(u);
    const U nd = kernels::masked::nodata_of<U>(f.nodata);
    finish<U, Acc><<<dim3(gx, grid_rows(f.rows)), kThreads, 0, stream>>>(
        f, fillv, nd, kernels::masked::off_nodata(nd));
    OOC_KERNEL_TRY(cudaGetLastError());
  });
}

}  // namespace

void normalized_split_async(const NormalizedSplit& s, cudaStream_t stream) {
  if (s.f64)
    split_as<double>(s, stream);
  else
    split_as<float>(s, stream);
}

void normalized_finish_async(const NormalizedFinish& f, cudaStream_t stream) {
  if (f.f64)
    finish_as<double>(f, stream);
  else
    finish_as<float>(f, stream);
}

std::size_t volume_normalized_cuda_scratch(std::int64_t rows, std::int64_t ry, std::int64_t rx,
                                           std::int64_t width, int channels, bool f64) {
  const auto R = static_cast<std::size_t>(rows + 2 * ry);
  const auto n = static_cast<std::size_t>(width * channels),
             pw = static_cast<std::size_t>((width + 2 * rx) * channels);
  return 3 * R * (pw + n) * (f64 ? 8 : 4);
}

void volume_normalized_async(const VolumeNormalizedLaunch& l, cudaStream_t stream) {
  if (l.f64)
    volume_launch<double>(l, stream);
  else
    volume_launch<float>(l, stream);
}

std::size_t normalized_cuda_scratch(std::int64_t rows, std::int64_t ry, std::int64_t row_samples,
                                    bool f64) {
  return 3 * static_cast<std::size_t>((rows + 2 * ry) * row_samples) * (f64 ? 8 : 4);
}

void normalized_async(const NormalizedLaunch& l, cudaStream_t stream) {
  if (l.f64)
    launch<double>(l, stream);
  else
    launch<float>(l, stream);
}

}  // namespace ooc::cuda
