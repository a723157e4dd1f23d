// ooc_gpu_ops_peers: ooc's CUDA kernels of the 2-D convolution and of histogram equalization
// against NPP's on the same band already in device memory (kernel time only, CUDA events, median
// of --repeats), with the results compared. One CSV row per case on stdout:
//   case,type,K,ours_ms,npp_ms,npp_over_ours,ours_gpix_s,max_diff,note
// 2-D: our conv2d_band_async (nearest border, which NPP calls replicate) against
// nppiFilterBorder_32f_C1R / nppiFilterBorder32f_8u_C1R with the same random non-separable taps,
// K = 3, 7, 15, 31, 63, 129. Histogram: our histogram_async against nppiHistogramEven (u8: 256
// bins, u16: 65536). LUT: our apply_lut_async against nppiLUTPalette (8u, 16u).
// Usage: ooc_gpu_ops_peers [--width 16384] [--rows 1024] [--repeats 10]
// Built only where NPP is found (see CMakeLists.txt). Exit codes: 0 ok, 1 failure, 5 no GPU.
#include <cuda_runtime.h>
#include <nppi_color_conversion.h>
#include <nppi_filtering_functions.h>
#include <nppi_statistics_functions.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "kernels/cuda/convolution/conv2d.cuh"
#include "kernels/cuda/histogram/equalize.cuh"
#include "npp_support.hpp"
#include "ooc/error.hpp"

namespace {

using ooc::SampleType;
using ooc::cuda::DeviceBuffer;

struct Timer {
  cudaEvent_t a{}, b{};
  Timer() {
    OOC_CUDA_TRY(cudaEventCreate(&a));
    OOC_CUDA_TRY(cudaEventCreate(&b));
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  template <class F>
  double median_ms(cudaStream_t s, int repeats, F&& enqueue) {
    enqueue();  // warm-up: first-launch costs are not the kernel's
    OOC_CUDA_TRY(cudaStreamSynchronize(s));
    std::vector<double> ms;
    for (int i = 0; i < repeats; ++i) {
      OOC_CUDA_TRY(cudaEventRecord(a, s));
      enqueue();
      OOC_CUDA_TRY(cudaEventRecord(b, s));
      OOC_CUDA_TRY(cudaEventSynchronize(b));
      float t = 0;
      OOC_CUDA_TRY(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
  }
};

template <class T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer d(0, v.size() * sizeof(T));
  OOC_CUDA_TRY(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <class T>
std::vector<T> download(const DeviceBuffer& d, std::size_t n) {
  std::vector<T> v(n);
  OOC_CUDA_TRY(cudaMemcpy(v.data(), d.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

void row(const char* what, const char* type, int k, double ours, double npp, double pixels,
         double diff, const std::string& note) {
  std::printf("%s,%s,%d,%.4f,%.4f,%.2f,%.2f,%.3g,%s\n", what, type, k, ours, npp, npp / ours,
              pixels / (ours * 1e-3) / 1e9, diff, note.c_str());
  std::fflush(stdout);
}

// One K x K case of the 2-D convolution, f32 or u8 in and out, W x rows outputs.
template <class T>
void conv2d_case(int k, int width, int rows, int repeats, cudaStream_t s, std::mt19937& rng) {
  const int r = k / 2, in_rows = rows + 2 * r;
  std::uniform_real_distribution<float> value(1.0f, 200.0f), tap(0.1f, 1.0f);
  std::vector<T> in(static_cast<std::size_t>(width) * in_rows);
  for (auto& v : in) v = static_cast<T>(value(rng));
  std::vector<float> taps(static_cast<std::size_t>(k) * k);
  double sum = 0;
  for (auto& t : taps) sum += (t = tap(rng));  // random: not separable, nothing special-cased
  for (auto& t : taps) t = static_cast<float>(t / sum);
  // NPP applies its kernel reversed (convolution); ours takes correlation order.
  std::vector<float> reversed(taps.rbegin(), taps.rend());
  const DeviceBuffer d_in = upload(in), d_taps = upload(taps), d_rev = upload(reversed);
  const std::size_t out_bytes = sizeof(T) * static_cast<std::size_t>(width) * rows;
  DeviceBuffer d_ours(0, out_bytes), d_npp(0, out_bytes);
  constexpr SampleType st = sizeof(T) == 1 ? SampleType::u8 : SampleType::f32;

  ooc::cuda::Conv2dLaunch a;
  a.in = d_in.data();
  a.in_stride = sizeof(T) * width;
  a.out = d_ours.data();
  a.out_stride = sizeof(T) * width;
  a.width = width;
  a.in_type = a.out_type = st;
  a.out_rows = rows;
  a.rx = a.ry = r;
  a.taps = d_taps.data();
  a.border = ooc::BorderMode::nearest;
  a.first_row = 0;
  a.image_height = in_rows;  // the halo rows are real rows, as in a band of a larger image
  Timer timer;
  const double ours = timer.median_ms(s, repeats, [&] { ooc::cuda::conv2d_band_async(a, s); });

  const NppStreamContext ctx = ooc::bench::npp_context(s);
  const int step = static_cast<int>(sizeof(T)) * width;
  const NppiSize src_size{width, in_rows}, roi{width, rows}, ksize{k, k};
  const NppiPoint offset{0, r}, anchor{r, r};
  const auto* rev = reinterpret_cast<const Npp32f*>(d_rev.data());
  // NPP's pSrc is the first pixel of the ROI (oSrcOffset says where that is in the source): the
  // halo rows above it are read through it.
  const std::byte* roi_src = d_in.data() + static_cast<std::size_t>(r) * step;
  const double npp = timer.median_ms(s, repeats, [&] {
    if constexpr (sizeof(T) == 1) {
      OOC_NPP_TRY(nppiFilterBorder32f_8u_C1R_Ctx(reinterpret_cast<const Npp8u*>(roi_src), step,
                                                 src_size, offset,
                                                 reinterpret_cast<Npp8u*>(d_npp.data()), step, roi,
                                                 rev, ksize, anchor, NPP_BORDER_REPLICATE, ctx));
    } else {
      OOC_NPP_TRY(nppiFilterBorder_32f_C1R_Ctx(reinterpret_cast<const Npp32f*>(roi_src), step,
                                               src_size, offset,
                                               reinterpret_cast<Npp32f*>(d_npp.data()), step, roi,
                                               rev, ksize, anchor, NPP_BORDER_REPLICATE, ctx));
    }
  });
  const auto o = download<T>(d_ours, out_bytes / sizeof(T));
  const auto n = download<T>(d_npp, out_bytes / sizeof(T));
  double diff = 0;
  for (std::size_t i = 0; i < o.size(); ++i)
    diff = std::max(diff, std::fabs(double(o[i]) - double(n[i])));
  row("conv2d", sizeof(T) == 1 ? "u8" : "f32", k, ours, npp, double(width) * rows, diff,
      sizeof(T) == 1 ? "nppiFilterBorder32f_8u_C1R_Ctx" : "nppiFilterBorder_32f_C1R_Ctx");
}

// Histogram and LUT of one W x rows band, u8 or u16.
template <class T>
void equalize_case(int width, int rows, int repeats, cudaStream_t s, std::mt19937& rng) {
  constexpr int bins = sizeof(T) == 1 ? 256 : 65536;
  constexpr SampleType st = sizeof(T) == 1 ? SampleType::u8 : SampleType::u16;
  const char* tname = sizeof(T) == 1 ? "u8" : "u16";
  std::uniform_int_distribution<int> value(0, bins - 1);
  std::vector<T> in(static_cast<std::size_t>(width) * rows);
  for (auto& v : in) v = static_cast<T>(value(rng));
  const DeviceBuffer d_in = upload(in);
  const std::size_t stride = sizeof(T) * width;
  Timer timer;
  const NppStreamContext ctx = ooc::bench::npp_context(s);
  const NppiSize roi{width, rows};

  DeviceBuffer d_counts(0, sizeof(std::uint64_t) * bins);
  const double ours = timer.median_ms(s, repeats, [&] {
    OOC_CUDA_TRY(cudaMemsetAsync(d_counts.data(), 0, d_counts.size(), s));
    ooc::cuda::histogram_async(d_in.data(), stride, rows, width, 1, st,
                               reinterpret_cast<std::uint64_t*>(d_counts.data()), s);
  });
  std::size_t scratch = 0;
  if constexpr (sizeof(T) == 1)
    OOC_NPP_TRY(nppiHistogramEvenGetBufferSize_8u_C1R_Ctx(roi, bins + 1, &scratch, ctx));
  else
    OOC_NPP_TRY(nppiHistogramEvenGetBufferSize_16u_C1R_Ctx(roi, bins + 1, &scratch, ctx));
  DeviceBuffer d_scratch(0, std::max<std::size_t>(scratch, 1)), d_hist(0, sizeof(Npp32s) * bins);
  const double npp = timer.median_ms(s, repeats, [&] {
    auto* hist = reinterpret_cast<Npp32s*>(d_hist.data());
    auto* buf = reinterpret_cast<Npp8u*>(d_scratch.data());
    if constexpr (sizeof(T) == 1)
      OOC_NPP_TRY(nppiHistogramEven_8u_C1R_Ctx(reinterpret_cast<const Npp8u*>(d_in.data()),
                                               static_cast<int>(stride), roi, hist, bins + 1, 0,
                                               bins, buf, ctx));
    else
      OOC_NPP_TRY(nppiHistogramEven_16u_C1R_Ctx(reinterpret_cast<const Npp16u*>(d_in.data()),
                                                static_cast<int>(stride), roi, hist, bins + 1, 0,
                                                bins, buf, ctx));
  });
  const auto ours_h = download<std::uint64_t>(d_counts, bins);
  const auto npp_h = download<Npp32s>(d_hist, bins);
  double diff = 0;
  for (int b = 0; b < bins; ++b)
    diff = std::max(diff, std::fabs(double(ours_h[b]) - double(npp_h[b])));
  row("histogram", tname, bins, ours, npp, double(width) * rows, diff,
      "nppiHistogramEven (levels = bins + 1)");

  // A random table: the lookups touch every entry, the way an equalization LUT does.
  std::vector<std::uint16_t> lut(bins);
  std::vector<T> table(bins);
  for (int b = 0; b < bins; ++b) table[b] = static_cast<T>(lut[b] = static_cast<T>(value(rng)));
  const DeviceBuffer d_lut = upload(lut), d_table = upload(table);
  DeviceBuffer d_ours(0, stride * rows), d_npp(0, stride * rows);
  const double ours_lut = timer.median_ms(s, repeats, [&] {
    ooc::cuda::apply_lut_async(d_in.data(), stride, d_ours.data(), stride, rows, width, 1, st,
                               reinterpret_cast<const std::uint16_t*>(d_lut.data()), s);
  });
  const double npp_lut = timer.median_ms(s, repeats, [&] {
    if constexpr (sizeof(T) == 1)
      OOC_NPP_TRY(nppiLUTPalette_8u_C1R_Ctx(
          reinterpret_cast<const Npp8u*>(d_in.data()), static_cast<int>(stride),
          reinterpret_cast<Npp8u*>(d_npp.data()), static_cast<int>(stride), roi,
          reinterpret_cast<const Npp8u*>(d_table.data()), 8, ctx));
    else
      OOC_NPP_TRY(nppiLUTPalette_16u_C1R_Ctx(
          reinterpret_cast<const Npp16u*>(d_in.data()), static_cast<int>(stride),
          reinterpret_cast<Npp16u*>(d_npp.data()), static_cast<int>(stride), roi,
          reinterpret_cast<const Npp16u*>(d_table.data()), 16, ctx));
  });
  const auto o = download<T>(d_ours, in.size()), n = download<T>(d_npp, in.size());
  diff = 0;
  for (std::size_t i = 0; i < o.size(); ++i)
    diff = std::max(diff, std::fabs(double(o[i]) - double(n[i])));
  row("lut", tname, bins, ours_lut, npp_lut, double(width) * rows, diff, "nppiLUTPalette");
}

int arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int width = arg(argc, argv, "--width", 16384), rows = arg(argc, argv, "--rows", 1024);
  const int repeats = std::max(1, arg(argc, argv, "--repeats", 10));
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "ooc_gpu_ops_peers: no CUDA device\n");
    return 5;
  }
  try {
    cudaStream_t s{};
    OOC_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::mt19937 rng(7);
    std::printf("case,type,K,ours_ms,npp_ms,npp_over_ours,ours_gpix_s,max_diff,note\n");
    for (int k : {3, 7, 15, 31, 63, 129}) {
      conv2d_case<float>(k, width, rows, k > 31 ? 3 : repeats, s, rng);
      conv2d_case<std::uint8_t>(k, width, rows, k > 31 ? 3 : repeats, s, rng);
    }
    equalize_case<std::uint8_t>(width, rows, repeats, s, rng);
    equalize_case<std::uint16_t>(width, rows, repeats, s, rng);
    cudaStreamDestroy(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ooc_gpu_ops_peers: %s\n", e.what());
    return 1;
  }
  return 0;
}
