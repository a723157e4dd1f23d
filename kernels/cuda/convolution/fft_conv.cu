// The FFT convolution's helper kernels (fft_conv.cuh): grid-stride loops over a tile row's
// planes, 64-bit offsets, any width and channel count; the border rule by index mapping, as the
// direct kernels do it.
#include <cuda_runtime.h>

#include "fft_conv.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "ooc/detail/sample_type.hpp"

namespace ooc::cuda {
namespace {

using P = FftConvPolicy;

unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + P::kThreads - 1) / P::kThreads;
  return static_cast<unsigned>(b < P::kMaxBlocksX ? (b > 0 ? b : 1) : P::kMaxBlocksX);
}

// Plane element (i, j) = input at image row ty - ry + i, column tx w - rx + j, channel c; zero
// from image row height + ry on (no output inside the image reads those: the CPU's rule).
template <class T, class Acc>
__global__ void pack(FftTileRow r, Acc cval) {
  const std::int64_t per_plane = r.n * r.m;
  const std::int64_t ry = (r.K - 1) / 2, rx = (r.L - 1) / 2;
  const int C = r.channels;
  Acc* planes = static_cast<Acc*>(r.planes_data);
  const auto* in = static_cast<const std::byte*>(r.in);
  for (std::int64_t p = blockIdx.y; p < r.planes; p += gridDim.y) {
    const std::int64_t tx = p / C;
    const int c = static_cast<int>(p - tx * C);
    for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         k < per_plane; k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const std::int64_t i = k / r.m, j = k - i * r.m;
      const std::int64_t image_row = r.ty - ry + i;
      Acc v = cval;
      if (image_row >= r.height + ry) {
        v = Acc(0);
      } else if (!(r.border == BorderMode::constant &&
                   (r.outside || image_row < 0 || image_row >= r.height))) {
        const std::int64_t x = map_index(tx * r.w - rx + j, r.width, r.border);
        if (x >= 0) {
          const T* row = reinterpret_cast<const T*>(in + (image_row - r.first_row) * r.in_stride);
          v = load_as<T, Acc>(row + x * C + c);
        }
      }
      planes[(p * r.n + i) * r.pitch + j] = v;
    }
  }
}

// Output (y, x) of plane p = element (y - ty + K - 1, x - tx w + L - 1), for the rows in the band.
template <class Acc>
__global__ void unpack(FftTileRow r) {
  const std::int64_t per_plane = r.h * r.w;
  const int C = r.channels;
  const Acc* planes = static_cast<const Acc*>(r.planes_data);
  for (std::int64_t p = blockIdx.y; p < r.planes; p += gridDim.y) {
    const std::int64_t tx = p / C;
    const int c = static_cast<int>(p - tx * C);
    for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         k < per_plane; k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const std::int64_t a = k / r.w, b = k - a * r.w;
      const std::int64_t y = r.ty + a, x = tx * r.w + b;
      if (y < r.y0 || y >= r.y0 + r.out_rows || x >= r.width) continue;
      const Acc v = planes[(p * r.n + a + r.K - 1) * r.pitch + b + r.L - 1];
      store_any(r.out_type, static_cast<std::byte*>(r.out) + (y - r.y0) * r.out_stride, x * C + c,
                v);
    }
  }
}

template <class Acc>
__global__ void multiply(Acc* spectra, const Acc* kernel, std::int64_t planes,
                         std::int64_t points) {
  for (std::int64_t p = blockIdx.y; p < planes; p += gridDim.y)
    for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         k < points; k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      Acc* z = spectra + 2 * (p * points + k);
      const Acc re = z[0], im = z[1], kr = kernel[2 * k], ki = kernel[2 * k + 1];
      z[0] = re * kr - im * ki;
      z[1] = re * ki + im * kr;
    }
}

}  // namespace

void fft_pack_async(const FftTileRow& r, cudaStream_t stream) {
  const dim3 grid(blocks_for(r.n * r.m), grid_rows(r.planes));
  dispatch_type(r.in_type, [&](auto t) {
    using T = decltype(t);
    if (r.f64) {
      pack<T, double><<<grid, P::kThreads, 0, stream>>>(r, r.border_value);
    } else {
      pack<T, float><<<grid, P::kThreads, 0, stream>>>(r, static_cast<float>(r.border_value));
    }
  });
  OOC_KERNEL_TRY(cudaGetLastError());
}

void fft_multiply_async(void* spectra, const void* kernel_spectrum, std::int64_t planes,
                        std::int64_t points, bool f64, cudaStream_t stream) {
  const dim3 grid(blocks_for(points), grid_rows(planes));
  if (f64) {
    multiply<double><<<grid, P::kThreads, 0, stream>>>(
        static_cast<double*>(spectra), static_cast<const double*>(kernel_spectrum), planes, points);
  } else {
    multiply<float><<<grid, P::kThreads, 0, stream>>>(
        static_cast<float*>(spectra), static_cast<const float*>(kernel_spectrum), planes, points);
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

void fft_unpack_async(const FftTileRow& r, cudaStream_t stream) {
  const dim3 grid(blocks_for(r.h * r.w), grid_rows(r.planes));
  if (r.f64) {
    unpack<double><<<grid, P::kThreads, 0, stream>>>(r);
  } else {
    unpack<float><<<grid, P::kThreads, 0, stream>>>(r);
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
