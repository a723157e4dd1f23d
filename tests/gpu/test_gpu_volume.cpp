// The CUDA kernels of a volume's stages called directly on buffers in device memory, against host
// loops written as the CPU's: projections along z (project.cu; the CLI reaches them only once the
// engine's GPU slots hold every plane), the sum of a 3-D kernel's planes (conv3d.cu) and the 3-D
// gradient magnitude's root (pointwise.cu). Bytes must be equal: NaN, -0, infinities included.
// Skips, with the reason, where no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#if defined(OOC_HAVE_CUDA)
#include <cuda_runtime.h>

#include "kernels/cuda/convolution/conv3d.cuh"
#include "kernels/cuda/point/pointwise.cuh"
#include "kernels/cuda/point/project.cuh"
#endif

#include "gpu_support.hpp"
#include "ooc/detail/sample_type.hpp"

namespace ooc {
namespace {

#if defined(OOC_HAVE_CUDA)
// A device copy of `host`, freed at the end of the scope.
struct Device {
  std::byte* p = nullptr;
  explicit Device(std::size_t n, const void* host = nullptr) {
    EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess);
    if (host)
      EXPECT_EQ(cudaMemcpy(p, host, n, cudaMemcpyHostToDevice), cudaSuccess);
    else
      EXPECT_EQ(cudaMemset(p, 0x5a, n), cudaSuccess);  // poison
  }
  ~Device() { cudaFree(p); }
  std::vector<std::byte> get(std::size_t n) const {
    std::vector<std::byte> h(n);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

// project.cpp's pick: a NaN wins, -0 below +0.
template <bool Max, class T>
T pick(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == a) return std::signbit(b) != Max ? b : a;
  }
  if constexpr (Max)
    return (b > a || b != b) ? b : a;
  else
    return (b < a || b != b) ? b : a;
}

// Samples with -0 and +0, infinities and (nan) NaNs among them.
template <class T>
std::vector<T> samples(std::size_t n, std::mt19937& rng, bool nan = true) {
  std::vector<T> v(n);
  std::uniform_int_distribution<int> u(0, 250);
  for (auto& x : v) x = static_cast<T>(u(rng)) / (std::is_floating_point_v<T> ? T(7) : T(1));
  if constexpr (std::is_floating_point_v<T>) {
    for (std::size_t i = 0; i < n; i += 37) v[i] = -T(0);
    for (std::size_t i = 5; i < n; i += 41) v[i] = T(0);
    for (std::size_t i = 11; nan && i < n; i += 97) v[i] = std::numeric_limits<T>::quiet_NaN();
    for (std::size_t i = 13; i < n; i += 131) v[i] = std::numeric_limits<T>::infinity();
  }
  return v;
}

template <SampleType t>
void check_projections(std::int64_t planes) {
  using T = sample_cpp_t<t>;
  std::mt19937 rng(static_cast<unsigned>(planes));
  const std::int64_t rows = 5, width = 67, stride = width + 3;  // rows padded: strides apart
  const std::size_t plane = static_cast<std::size_t>(rows * stride);
  const std::vector<T> in = samples<T>(plane * static_cast<std::size_t>(planes), rng);
  Device d_in(in.size() * sizeof(T), in.data());
  for (int kind = 0; kind < 4; ++kind)
    for (SampleType out_type : {SampleType::f32, SampleType::f64}) {
      if (kind < 2 && out_type == SampleType::f64) continue;  // extremes keep the type
      const bool f64 = out_type == SampleType::f64;
      const std::size_t o = kind < 2 ? sizeof(T) : (f64 ? 8 : 4);
      Device d_out(static_cast<std::size_t>(rows * width) * o);
      cuda::ProjectLaunch l;
      l.kind = kind;
      l.in = d_in.p;
      l.plane_step = plane * sizeof(T);
      l.in_stride = static_cast<std::size_t>(stride) * sizeof(T);
      l.planes = planes;
      l.in_type = t;
      l.out_type = kind < 2 ? l.in_type : out_type;
      l.samples = width;
      l.rows = rows;
      l.out = d_out.p;
      l.out_stride = static_cast<std::size_t>(width) * o;
      cuda::project_async(l, nullptr);
      const std::vector<std::byte> got = d_out.get(static_cast<std::size_t>(rows * width) * o);
      std::vector<std::byte> want(got.size());
      for (std::int64_t y = 0; y < rows; ++y)
        for (std::int64_t i = 0; i < width; ++i) {
          auto at = [&](std::int64_t k) { return in[k * plane + y * stride + i]; };
          const std::size_t j = static_cast<std::size_t>(y * width + i);
          if (kind < 2) {
            T r = at(0);
            for (std::int64_t k = 1; k < planes; ++k)
              r = kind == 0 ? pick<true>(r, at(k)) : pick<false>(r, at(k));
            std::memcpy(want.data() + j * o, &r, o);
            continue;
          }
          double acc = 0.0;
          for (std::int64_t k = 0; k < planes; ++k) acc += at(k);
          const double v = kind == 3 ? acc * (1.0 / static_cast<double>(planes)) : acc;
          if (f64) {
            std::memcpy(want.data() + j * 8, &v, 8);
          } else {
            const float f = static_cast<float>(v);
            std::memcpy(want.data() + j * 4, &f, 4);
          }
        }
      EXPECT_TRUE(got == want) << "kind " << kind << " planes " << planes << " type "
                               << name(l.in_type) << " to " << name(l.out_type);
    }
}

TEST(GpuVolume, ProjectionsEqualTheCpuLoops) {
  OOC_REQUIRE_GPU();
  for (std::int64_t planes : {1, 2, 7, 200}) {
    check_projections<SampleType::u8>(planes);
    check_projections<SampleType::u16>(planes);
    check_projections<SampleType::f32>(planes);
    check_projections<SampleType::f64>(planes);
  }
}

// conv3d.cpp adds a plane's convolution into the sum, and combine.cpp's magnitude3_row rounds
// every operation (volatile: no contraction into FMAs here either). Infinities, no NaNs.
TEST(GpuVolume, PlaneSumsAndMagnitudeRoundAsTheCpu) {
  OOC_REQUIRE_GPU();
  std::mt19937 rng(7);
  const std::int64_t rows = 9, n = 301;
  const std::size_t count = static_cast<std::size_t>(rows * n);
  // No NaNs: the GPU's arithmetic gives its canonical NaN where the CPU's keeps an operand's.
  std::vector<float> a = samples<float>(count, rng, false), b = samples<float>(count, rng, false),
                     c = samples<float>(count, rng, false);
  for (std::size_t i = 0; i < count; ++i) b[i] = b[i] * 1e-3f - 0.1f, c[i] = std::sqrt(c[i]);
  Device da(count * 4, a.data()), db(count * 4, b.data()), dc(count * 4, c.data());
  cuda::accumulate_async(da.p, db.p, static_cast<std::size_t>(n) * 4, rows, n, false, nullptr);
  std::vector<float> want(count);
  for (std::size_t i = 0; i < count; ++i) {
    volatile float s = a[i];
    s = s + b[i];
    want[i] = s;
  }
  std::vector<std::byte> got = da.get(count * 4);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), count * 4), 0) << "accumulate";
  Device dm(count * 4);
  cuda::magnitude3_async(da.p, db.p, dc.p, static_cast<std::size_t>(n) * 4, dm.p,
                         static_cast<std::size_t>(n) * 4, SampleType::f32, rows, n, false, nullptr);
  for (std::size_t i = 0; i < count; ++i) {
    volatile float p = want[i] * want[i];
    volatile float q = b[i] * b[i];
    volatile float r = c[i] * c[i];
    volatile float s = p + q;
    volatile float t = s + r;
    want[i] = std::sqrt(static_cast<float>(t));
  }
  got = dm.get(count * 4);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), count * 4), 0) << "magnitude";
}
#endif

}  // namespace
}  // namespace ooc
