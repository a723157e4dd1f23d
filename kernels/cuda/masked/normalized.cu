// Normalized convolution's CUDA kernels (normalized.cuh): one thread a sample, a row pass into the
// scratch's three planes and a column pass that divides and stores; for convolve's 2-D sums, the
// split of a band into x m and m and the finish after the convolutions of both.
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
    Acc sn = 0, sd = 0, sa = 0;
    for (std::int64_t k = 0; k < L; ++k) {
      const std::int64_t q = map_index(x - l.rx + k, l.width, l.border);
      Acc v = cv, m = cm;
      if (q >= 0) {
        const T t = src[q * C + c];
        const bool h = hole(t);
        v = h ? Acc(0) : static_cast<Acc>(t);
        m = h ? Acc(0) : Acc(1);
      }
      if (k == 0) {
        sn = mul(w[0], v);
        sd = mul(w[0], m);
        sa = mul(wa[0], m);
      } else {
        sn = fma(w[k], v, sn);
        sd = fma(w[k], m, sd);
        sa = fma(wa[k], m, sa);
      }
    }
    num[at] = sn;
    den[at] = sd;
    wab[at] = sa;
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
    Acc sn = mul(wc[0], num[y * n + s]), sd = mul(wc[0], den[y * n + s]);
    Acc sa = l.negative ? mul(wca[0], wab[y * n + s]) : Acc(0);
    for (std::int64_t k = 1; k < K; ++k) {
      const std::size_t at = static_cast<std::size_t>((y + k) * n + s);
      sn = fma(wc[k], num[at], sn);
      sd = fma(wc[k], den[at], sd);
      if (l.negative) sa = fma(wca[k], wab[at], sa);
    }
    const Acc aw = l.negative ? sa : sd;
    const T* own =
        reinterpret_cast<const T*>(l.in + static_cast<std::size_t>(y + l.ry) * l.in_stride);
    const bool valid = (l.fill || !hole(own[s])) && aw > Acc(0) &&
                       static_cast<double>(aw) >= l.min_weight_need && sd != Acc(0);
    put<U, Acc>(l.out + static_cast<std::size_t>(y) * l.out_stride, s, valid ? div(sn, sd) : fillv,
                fillv, nd);
  }
}

template <class Acc>
void launch(const NormalizedLaunch& l, cudaStream_t stream) {
  const std::int64_t n = l.width * l.channels, rows = l.out_rows + 2 * l.ry;
  const bool cval_ok = !(std::isnan(l.border_value) || l.border_value == l.nodata);
  const Acc cv = cval_ok ? static_cast<Acc>(l.border_value) : Acc(0);
  const Acc cm = cval_ok ? Acc(1) : Acc(0);
  const Acc fillv =
      std::isnan(l.nodata) ? std::numeric_limits<Acc>::quiet_NaN() : static_cast<Acc>(l.nodata);
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

template <class T, class Acc>
__global__ void split(NormalizedSplit p, Holes<T> hole) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= p.row_samples) return;
  for (std::int64_t j = blockIdx.y; j < p.rows; j += gridDim.y) {
    const std::int64_t image_row = p.first_row + j;
    if (p.constant_border && (image_row < 0 || image_row >= p.image_height)) continue;
    const T t = reinterpret_cast<const T*>(p.in + static_cast<std::size_t>(j) * p.in_stride)[s];
    const bool h = hole(t);
    const std::size_t at = static_cast<std::size_t>(j) * p.pitch;
    reinterpret_cast<Acc*>(p.v + at)[s] = h ? Acc(0) : static_cast<Acc>(t);
    reinterpret_cast<Acc*>(p.m + at)[s] = h ? Acc(0) : Acc(1);
  }
}

template <class U, class Acc>
__global__ void finish(NormalizedFinish f, Acc fillv, U nd, U step) {
  const std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= f.row_samples) return;
  for (std::int64_t y = blockIdx.y; y < f.rows; y += gridDim.y) {
    const std::size_t at = static_cast<std::size_t>(y) * f.pitch;
    const Acc sn = reinterpret_cast<const Acc*>(f.num + at)[s];
    const Acc sd = reinterpret_cast<const Acc*>(f.den + at)[s];
    const Acc aw = reinterpret_cast<const Acc*>(f.weights + at)[s];
    const bool own = f.fill || reinterpret_cast<const Acc*>(f.own + at)[s] != Acc(0);
    std::byte* row = f.out + static_cast<std::size_t>(y) * f.out_stride;
    if (f.fft) {
      const bool valid = own && static_cast<double>(aw) > f.tolerance &&
                         static_cast<double>(aw) >= f.min_weight_need &&
                         fabs(static_cast<double>(sd)) > f.tolerance;
      const U d = valid ? store_as<U, Acc>(div(sn, sd)) : nd;
      reinterpret_cast<U*>(row)[s] = valid && d == nd ? step : d;
    } else {
      const bool valid =
          own && aw > Acc(0) && static_cast<double>(aw) >= f.min_weight_need && sd != Acc(0);
      put<U, Acc>(row, s, valid ? div(sn, sd) : fillv, fillv, nd);
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
  const Acc fillv =
      std::isnan(f.nodata) ? std::numeric_limits<Acc>::quiet_NaN() : static_cast<Acc>(f.nodata);
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
