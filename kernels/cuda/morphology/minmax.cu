// CUDA kernels of the minimum/maximum filters: a pass along x into the slot's scratch, then one
// along y. Along each axis a window of up to van_herk::kScanMax samples is scanned (in the CPU's
// order: minmax_van_herk.hpp's window(); each output written once, coalesced); a longer one runs
// van Herk /
// Gil-Werman (minmax_van_herk.hpp: about 3 comparisons and 3 loads of the input per output
// whatever N, each output stored twice and read back once), so that the cost no longer grows with
// the window. Both combine as the CPU does (kernels/cpu/morphology/minmax.hpp), so the bytes are
// the CPU's.
//
// What it should cost: both passes are bound by memory. An output of the van
// Herk y pass reads its ~3 inputs through L1 (threads on adjacent columns: coalesced), writes
// its suffix and reads it back from L1/L2 and writes the result; DRAM sees about one read of the
// x pass's rows and one write of the output. The x pass's units are N samples apart on a row, so
// a warp's load touches up to 32 lines, each reused by the next N loads from L1. Together about
// 4 band-sized DRAM transfers (input, the scratch written and read, output) for any N, against
// the scan's ~N comparisons an output, which at N = 101 made it compute-bound: at 4.8 TB/s of
// device memory 16 GiB of u16 at size 101 should take ~20-30 ms of kernels, not seconds (the
// kernels' time does not grow with the window: docs/performance.md, minimum and maximum).
// A footprint runs output by output over its runs, or by two passes per distinct length of its
// runs, as minmax_van_herk.hpp's by_lengths chooses.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "minmax.cuh"
#include "minmax_van_herk.hpp"
#include "ooc/detail/sample_type.hpp"

namespace ooc::cuda {
namespace {

using van_herk::constant_of;
using van_herk::pick;  // as kernels/cpu/morphology/minmax.hpp's: a NaN anywhere in the window gives
                       // NaN

// mid row k, sample (q, c) = pick over columns [q - lx, q + rx] of input row k.
template <bool Max, class T>
__global__ void rows_kernel(MinMaxLaunch l, std::int64_t m, T cval) {
  const std::int64_t S = l.width * l.channels;
  for (std::int64_t k = blockIdx.y; k < m; k += gridDim.y) {
    const std::int64_t image_row = l.first_row + k;
    const bool constant_row =
        l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height);
    const T* in = reinterpret_cast<const T*>(l.in + k * l.in_stride);
    T* mid = reinterpret_cast<T*>(l.mid + k * S * std::int64_t(sizeof(T)));
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < S;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      if (constant_row) {
        mid[i] = cval;
        continue;
      }
      const std::int64_t q = i / l.channels, c = i % l.channels;
      mid[i] = van_herk::window<Max, T>(q, l.lx + l.rx + 1, [&](std::int64_t j) {
        const std::int64_t s = map_index(j - l.lx, l.width, l.border);
        return s < 0 ? cval : __ldg(in + s * l.channels + c);
      });
    }
  }
}

template <bool Max, class T>
__global__ void cols_kernel(MinMaxLaunch l) {
  const std::int64_t S = l.width * l.channels, N = l.ly + l.ry + 1;
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    T* out = reinterpret_cast<T*>(l.out + y * l.out_stride);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < S;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const T* mid = reinterpret_cast<const T*>(l.mid) + i;
      out[i] = van_herk::window<Max, T>(y, N, [&](std::int64_t k) { return __ldg(mid + k * S); });
    }
  }
}

// A footprint: each output picks over its runs' windowed extremes (van_herk::footprint_output).
template <bool Max, class T>
__global__ void footprint_kernel(MinMaxLaunch l, T cval) {
  const std::int64_t S = l.width * l.channels;
  const auto* runs = static_cast<const van_herk::RowRun*>(l.runs);
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    T* out = reinterpret_cast<T*>(l.out + y * l.out_stride);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < S;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const std::int64_t q = i / l.channels, c = i % l.channels;
      const bool inside = q - l.lx >= 0 && q + l.rx < l.width;  // no column needs the border
      out[i] = van_herk::footprint_output<Max, T>(q, runs, l.run_count, [&](int k, std::int64_t j) {
        const std::int64_t image_row = l.first_row + y + k;
        if (l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height))
          return cval;
        const T* in = reinterpret_cast<const T*>(l.in + (y + k) * l.in_stride);
        const std::int64_t s = inside ? j - l.lx : map_index(j - l.lx, l.width, l.border);
        return s < 0 ? cval : __ldg(in + s * l.channels + c);
      });
    }
  }
}

// A footprint by lengths, first pass: mid row k, padded column p (image column p - lx), channel c
// = the extreme of padded columns [p, p + L) of input row k, for p in [0, n), rows n * C apart.
template <bool Max, class T>
__global__ void footprint_rows_kernel(MinMaxLaunch l, std::int64_t m, std::int64_t L,
                                      std::int64_t n, T cval) {
  const std::int64_t C = l.channels;
  const bool units = van_herk::by_units(L);
  const std::int64_t items = (units ? (n + L - 1) / L : n) * C;
  for (std::int64_t k = blockIdx.y; k < m; k += gridDim.y) {
    const std::int64_t image_row = l.first_row + k;
    const bool constant_row =
        l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height);
    const T* in = reinterpret_cast<const T*>(l.in + k * l.in_stride);
    T* mid = reinterpret_cast<T*>(l.mid) + k * n * C;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < items;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const std::int64_t t = i / C, c = i % C;
      T* o = mid + c;
      const T* src = in + c;
      auto load = [&](std::int64_t j) {
        const std::int64_t s = map_index(j - l.lx, l.width, l.border);
        return s < 0 ? cval : __ldg(src + s * C);
      };
      if (constant_row) {  // the CPU pads the row with the constant: every extreme is it
        for (std::int64_t q = units ? t * L : t; q < n && q < (units ? t * L + L : t + 1); ++q)
          o[q * C] = cval;
      } else if (units) {
        van_herk::unit<Max, T>(
            t, L, n, load, [&](std::int64_t q, T v) { o[q * C] = v; },
            [&](std::int64_t q) { return o[q * C]; });
      } else {
        o[t * C] = van_herk::window<Max, T>(t, L, load);
      }
    }
  }
}

// A footprint by lengths, second pass: each output picks over runs [first, first + count) (one
// length L), from mid (L > 1, rows n * C apart) or the input (L = 1), after what the passes of the
// shorter lengths left in it (fresh: from the pick's identity).
template <bool Max, class T>
__global__ void footprint_pick_kernel(MinMaxLaunch l, int first, int count, std::int64_t n,
                                      bool fresh, T cval) {
  const std::int64_t S = l.width * l.channels, C = l.channels;
  const auto* runs = static_cast<const van_herk::RowRun*>(l.runs) + first;
  for (std::int64_t y = blockIdx.y; y < l.out_rows; y += gridDim.y) {
    T* out = reinterpret_cast<T*>(l.out + y * l.out_stride);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < S;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const std::int64_t x = i / C, c = i % C;
      T o = fresh ? van_herk::identity<Max, T>() : out[i];
      for (int j = 0; j < count; ++j) {
        const van_herk::RowRun r = runs[j];
        const std::int64_t k = y + r.row;
        T v;
        if (r.len > 1) {
          v = __ldg(reinterpret_cast<const T*>(l.mid) + (k * n + x + r.col) * C + c);
        } else {
          const std::int64_t image_row = l.first_row + k;
          const std::int64_t s = map_index(x + r.col - l.lx, l.width, l.border);
          const bool constant_row =
              l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height);
          v = constant_row || s < 0
                  ? cval
                  : __ldg(reinterpret_cast<const T*>(l.in + k * l.in_stride) + s * C + c);
        }
        o = pick<Max>(o, v);
      }
      out[i] = o;
    }
  }
}

// Van Herk along x: thread (unit t, channel c) of mid row k, for units of N = lx + rx + 1 outputs
// (the CPU's blocks of its padded row, from column -lx).
template <bool Max, class T>
__global__ void rows_van_herk_kernel(MinMaxLaunch l, std::int64_t m, T cval) {
  const std::int64_t N = l.lx + l.rx + 1, W = l.width, C = l.channels;
  const std::int64_t units = (W + N - 1) / N, S = W * C;
  for (std::int64_t k = blockIdx.y; k < m; k += gridDim.y) {
    const std::int64_t image_row = l.first_row + k;
    const bool constant_row =
        l.border == BorderMode::constant && (image_row < 0 || image_row >= l.image_height);
    const T* in = reinterpret_cast<const T*>(l.in + k * l.in_stride);
    T* mid = reinterpret_cast<T*>(l.mid + k * S * std::int64_t(sizeof(T)));
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < units * C;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const std::int64_t t = i / C, c = i % C;
      T* o = mid + c;
      if (constant_row) {
        for (std::int64_t q = t * N; q < W && q < t * N + N; ++q) o[q * C] = cval;
        continue;
      }
      const T* src = in + c;
      van_herk::unit<Max, T>(
          t, N, W,
          [&](std::int64_t j) {
            const std::int64_t s = map_index(j - l.lx, W, l.border);
            return s < 0 ? cval : __ldg(src + s * C);
          },
          [&](std::int64_t q, T v) { o[q * C] = v; }, [&](std::int64_t q) { return o[q * C]; });
    }
  }
}

// Van Herk along y: thread (sample column i, unit t of output rows), mid rows in the CPU's blocks
// of Ny from the band's first.
template <bool Max, class T>
__global__ void cols_van_herk_kernel(MinMaxLaunch l) {
  const std::int64_t S = l.width * l.channels, N = l.ly + l.ry + 1;
  const std::int64_t units = (l.out_rows + N - 1) / N;
  for (std::int64_t t = blockIdx.y; t < units; t += gridDim.y) {
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < S;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const T* mid = reinterpret_cast<const T*>(l.mid) + i;
      std::byte* out = l.out + i * std::int64_t(sizeof(T));
      auto at = [&](std::int64_t y) { return reinterpret_cast<T*>(out + y * l.out_stride); };
      van_herk::unit<Max, T>(
          t, N, l.out_rows, [&](std::int64_t k) { return __ldg(mid + k * S); },
          [&](std::int64_t y, T v) { *at(y) = v; }, [&](std::int64_t y) { return *at(y); });
    }
  }
}

// p - q with the NaN the CPU's (x86, SSE/AVX) subtraction gives, not the GPU's canonical one: the
// first NaN operand, made quiet, else for inf - inf the negative default NaN, so that a top-hat's
// bytes are the CPU's also where the image holds NaNs.
template <class T>
__device__ __forceinline__ T x86_difference(T p, T q) {
  const T r = p - q;
  if (r == r) return r;
  constexpr bool single = sizeof(T) == 4;
  using U = std::conditional_t<single, std::uint32_t, std::uint64_t>;
  constexpr U quiet = single ? U(0x00400000u) : U(0x0008000000000000ull);
  constexpr U indefinite = single ? U(0xFFC00000u) : U(0xFFF8000000000000ull);
  U bits = indefinite;
  if (p != p) {
    memcpy(&bits, &p, sizeof bits);
    bits |= quiet;
  } else if (q != q) {
    memcpy(&bits, &q, sizeof bits);
    bits |= quiet;
  }
  T v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

template <class T>
__global__ void difference_kernel(const std::byte* x, std::size_t xs, const std::byte* o,
                                  std::size_t os, std::byte* out, std::size_t ds, std::int64_t rows,
                                  std::int64_t n, int sign) {
  for (std::int64_t y = blockIdx.y; y < rows; y += gridDim.y) {
    const T* a = reinterpret_cast<const T*>(x + y * xs);
    const T* b = reinterpret_cast<const T*>(o + y * os);
    T* d = reinterpret_cast<T*>(out + y * ds);
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const T p = sign > 0 ? a[i] : b[i], q = sign > 0 ? b[i] : a[i];
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        d[i] = static_cast<T>(static_cast<U>(static_cast<U>(p) - static_cast<U>(q)));
      } else {
        d[i] = x86_difference(p, q);
      }
    }
  }
}

dim3 grid_for(std::int64_t rows, std::int64_t n) {
  const std::int64_t bx =
      std::min<std::int64_t>((n + MinMaxPolicy::kThreads - 1) / MinMaxPolicy::kThreads, 64);
  const std::int64_t by = std::min<std::int64_t>(rows, MinMaxPolicy::kMaxBlocksY);
  return dim3(static_cast<unsigned>(std::max<std::int64_t>(bx, 1)),
              static_cast<unsigned>(std::max<std::int64_t>(by, 1)));
}

template <bool Max, class T>
void launch(const MinMaxLaunch& l, T cval, cudaStream_t stream) {
  const std::int64_t m = l.out_rows + l.ly + l.ry, S = l.width * l.channels;
  const std::int64_t nx = l.lx + l.rx + 1, ny = l.ly + l.ry + 1;
  const int threads = MinMaxPolicy::kThreads;
  if (l.runs != nullptr) {
    const auto* runs = static_cast<const van_herk::RowRun*>(l.host_runs);
    if (!l.by_lengths) {
      footprint_kernel<Max, T><<<grid_for(l.out_rows, S), threads, 0, stream>>>(l, cval);
      return;
    }
    const std::int64_t padded = l.width + nx - 1;
    for (int first = 0; first < l.run_count;) {
      const std::int64_t L = runs[first].len;
      int count = 0;
      while (first + count < l.run_count && runs[first + count].len == L) ++count;
      const std::int64_t n = padded - L + 1;
      if (L > 1) {
        const std::int64_t items = van_herk::by_units(L) ? (n + L - 1) / L : n;
        footprint_rows_kernel<Max, T>
            <<<grid_for(m, items * l.channels), threads, 0, stream>>>(l, m, L, n, cval);
      }
      footprint_pick_kernel<Max, T>
          <<<grid_for(l.out_rows, S), threads, 0, stream>>>(l, first, count, n, first == 0, cval);
      first += count;
    }
    return;
  }
  if (van_herk::by_units(nx))
    rows_van_herk_kernel<Max, T>
        <<<grid_for(m, (l.width + nx - 1) / nx * l.channels), threads, 0, stream>>>(l, m, cval);
  else
    rows_kernel<Max, T><<<grid_for(m, S), threads, 0, stream>>>(l, m, cval);
  if (van_herk::by_units(ny))
    cols_van_herk_kernel<Max, T>
        <<<grid_for((l.out_rows + ny - 1) / ny, S), threads, 0, stream>>>(l);
  else
    cols_kernel<Max, T><<<grid_for(l.out_rows, S), threads, 0, stream>>>(l);
}

}  // namespace

void minmax_band_async(const MinMaxLaunch& l, cudaStream_t stream) {
  if (l.out_rows <= 0 || l.width * l.channels <= 0) return;
  dispatch_type(l.type, [&](auto t) {
    using T = decltype(t);
    const T cval = constant_of<T>(l.border_value);
    if (l.max)
      launch<true, T>(l, cval, stream);
    else
      launch<false, T>(l, cval, stream);
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

void tophat_difference_async(const std::byte* x, std::size_t x_stride, const std::byte* o,
                             std::size_t o_stride, std::byte* out, std::size_t out_stride,
                             std::int64_t rows, std::int64_t row_samples, SampleType type, int sign,
                             cudaStream_t stream) {
  if (rows <= 0 || row_samples <= 0) return;
  dispatch_type(type, [&](auto t) {
    difference_kernel<decltype(t)>
        <<<grid_for(rows, row_samples), MinMaxPolicy::kThreads, 0, stream>>>(
            x, x_stride, o, o_stride, out, out_stride, rows, row_samples, sign);
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
