// The CUDA matrix products (cuBLAS per leaf, the leaf tree on the device) through the engine's GPU
// staging, against direct float64 sums, with the same bits for every band height and slot count.
// Skips, with the reason, where no CUDA device is usable (CI has none).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "gpu_support.hpp"
#include "ooc/engine.hpp"
#include "ooc/ops/atax.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

struct Result {
  std::vector<double> y;  // atax/atx: N x k; ax: M x k
};

Result run_product(const ImageSpec& s, const std::vector<std::byte>& a, ProductKind kind,
                   const std::vector<double>& x, int k, bool f32, std::int64_t band_rows,
                   int slots) {
  ProductParams p;
  p.kind = kind;
  p.k = k;
  p.f32 = f32;
  p.x = x;
  p.leaf_rows = 8;
  auto op = make_matrix_product(s, p);
  EngineOptions o;
  o.band_rows = band_rows;
  o.slots = slots;
  const Backend backend = select_backend("cuda", "all", {op.get()});
  test::MemorySource src(s, a);
  Result r;
  if (kind == ProductKind::ax) {
    test::MemorySink sink(*op->output());
    Engine engine(src, backend, plan_bands(s, {op.get()}, backend, o));
    engine.run(*op, &sink);
    for (std::int64_t i = 0; i < s.height * k; ++i)
      r.y.push_back(f32 ? test::get(sink.data, SampleType::f32, static_cast<std::size_t>(i))
                        : test::get(sink.data, SampleType::f64, static_cast<std::size_t>(i)));
    EXPECT_EQ(sink.writes, std::vector<int>(static_cast<std::size_t>(s.height), 1));
  } else {
    Engine engine(src, backend, plan_bands(s, {op.get()}, backend, o));
    engine.run(*op, nullptr);
    r.y = op->result();
  }
  return r;
}

TEST(GpuAtax, MatchesFloat64SumsAndIsDeterministic) {
  OOC_REQUIRE_GPU();
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g;
  for (SampleType t : {SampleType::f32, SampleType::f64})
    for (int k : {1, 3, 64})
      for (ProductKind kind : {ProductKind::atax, ProductKind::ax, ProductKind::atx})
        for (bool f32 : {false, true}) {
          const ImageSpec s{203, 157, 1, t};  // 157 columns, 203 rows: no tile divides them
          const auto a = test::random_image(s, 5 + k);
          const std::int64_t xr = kind == ProductKind::atx ? s.height : s.width;
          std::vector<double> x(static_cast<std::size_t>(xr) * k);
          for (double& v : x) v = g(rng);
          // The float64 reference, and the same on |A| and |X| for the error scale.
          const std::int64_t M = s.height, N = s.width;
          auto A = [&](std::int64_t r, std::int64_t c) {
            return test::get(a, t, static_cast<std::size_t>(r * N + c));
          };
          std::vector<double> tm(static_cast<std::size_t>(M) * k, 0.0), ref, scale;
          if (kind != ProductKind::atx)
            for (std::int64_t r = 0; r < M; ++r)
              for (int j = 0; j < k; ++j)
                for (std::int64_t c = 0; c < N; ++c) tm[r * k + j] += A(r, c) * x[c * k + j];
          if (kind == ProductKind::ax) {
            ref = tm;
          } else {
            const std::vector<double>& rhs = kind == ProductKind::atx ? x : tm;
            ref.assign(static_cast<std::size_t>(N) * k, 0.0);
            for (std::int64_t r = 0; r < M; ++r)
              for (std::int64_t c = 0; c < N; ++c)
                for (int j = 0; j < k; ++j) ref[c * k + j] += A(r, c) * rhs[r * k + j];
          }
          double peak = 0;
          for (double v : ref) peak = std::max(peak, std::abs(v));
          const double tol = (f32 ? 2e-5 : 1e-12) * peak;
          std::set<std::vector<double>> results;
          for (auto [band_rows, slots] :
               {std::pair{8, 1}, std::pair{16, 3}, std::pair{64, 2}, std::pair{1000, 1}}) {
            const Result got = run_product(s, a, kind, x, k, f32, band_rows, slots);
            ASSERT_EQ(got.y.size(), ref.size());
            for (std::size_t i = 0; i < ref.size(); ++i)
              ASSERT_NEAR(got.y[i], ref[i], tol)
                  << name(kind) << " " << ooc::name(t) << " k=" << k << " f32=" << f32
                  << " band_rows=" << band_rows << " at " << i;
            results.insert(got.y);
          }
          EXPECT_EQ(results.size(), 1u) << name(kind) << " k=" << k << " f32=" << f32;
        }
}

}  // namespace
}  // namespace ooc
