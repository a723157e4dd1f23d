// The selection networks of the rank filters (kernels/cpu/rank_network.hpp): every rank of every
// window size up to 128 samples against a sort, on random data with ties, on every lane; the
// 0-1 principle exhaustively for small windows; NaN in a lane gives NaN in that lane only. And the
// 3-D rank filters' rows (rank3d.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/cpu/morphology/rank3d.hpp"
#include "kernels/cpu/morphology/rank_network.hpp"

namespace ooc {
namespace {

// Runs `net` on one window of n samples (given as Ny rows of Nx) in every lane, lane t's window
// shifted by t columns: rows[r][t + j] for j < Nx.
template <class T>
std::vector<T> run_lanes(const kernels::SelectionNetwork& net,
                         const std::vector<std::vector<T>>& rows, int Ny, int Nx) {
  std::vector<const T*> r;
  for (const auto& row : rows) r.push_back(row.data());
  std::vector<T> out(kernels::kLanes25<T>);
  kernels::select_row_network<T>(net, r.data(), Ny, Nx, kernels::kLanes25<T>, out.data(), 1);
  return out;
}

TEST(RankNetwork, EveryRankOfEverySizeMatchesASort) {
  std::mt19937 gen(7);
  for (int n = 1; n <= kernels::kMaxNetworkSamples; ++n) {
    // A row of n samples (Ny = 1), each lane its own shifted window; few distinct values: ties.
    std::uniform_int_distribution<int> value(0, n < 8 ? 3 : 40);
    for (int k = 0; k < n; k += (n > 40 ? 7 : 1)) {
      const kernels::SelectionNetwork net = kernels::make_selection_network(n, k);
      std::vector<std::vector<float>> rows(1);
      for (int j = 0; j < n + kernels::kLanes25<float>; ++j)
        rows[0].push_back(static_cast<float>(value(gen)));
      const std::vector<float> got = run_lanes<float>(net, rows, 1, n);
      for (int t = 0; t < kernels::kLanes25<float>; ++t) {
        std::vector<float> w(rows[0].begin() + t, rows[0].begin() + t + n);
        std::nth_element(w.begin(), w.begin() + k, w.end());
        ASSERT_EQ(got[t], w[k]) << "n " << n << " k " << k << " lane " << t;
      }
    }
  }
}

TEST(RankNetwork, ZeroOnePrincipleForSmallWindows) {
  for (int n = 1; n <= 14; ++n)
    for (int k = 0; k < n; ++k) {
      const kernels::SelectionNetwork net = kernels::make_selection_network(n, k);
      for (std::uint32_t bits = 0; bits < (1u << n); ++bits) {
        std::vector<int> v(n);
        int ones = 0;
        for (int i = 0; i < n; ++i) ones += v[i] = (bits >> i) & 1;
        for (const auto& [a, b] : net.pairs)
          if (v[a] > v[b]) std::swap(v[a], v[b]);
        ASSERT_EQ(v[net.out], n - ones <= k ? 1 : 0) << "n " << n << " k " << k << " bits " << bits;
      }
    }
}

TEST(RankNetwork, TwoDimensionalWindowsAndNan) {
  // A 7 x 7 window of doubles, rows of their own; a NaN in lane 2's window only.
  const int Ny = 7, Nx = 7, L = kernels::kLanes25<double>;
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> value(-5, 5);
  std::vector<std::vector<double>> rows(Ny, std::vector<double>(Nx + L));
  for (auto& row : rows)
    for (double& x : row) x = value(gen);
  rows[3][2] = std::numeric_limits<double>::quiet_NaN();  // in the windows of lanes 0, 1, 2
  const kernels::SelectionNetwork net = kernels::make_selection_network(Ny * Nx, 24);
  const std::vector<double> got = run_lanes<double>(net, rows, Ny, Nx);
  for (int t = 0; t < L; ++t) {
    std::vector<double> w;
    for (int r = 0; r < Ny; ++r)
      for (int j = 0; j < Nx; ++j) w.push_back(rows[r][t + j]);
    if (t <= 2) {
      EXPECT_TRUE(std::isnan(got[t])) << "lane " << t;
      continue;
    }
    std::nth_element(w.begin(), w.begin() + 24, w.end());
    EXPECT_EQ(got[t], w[24]) << "lane " << t;
  }
}

// The 3-D rank filters' rows (kernels/cpu/morphology/rank3d.hpp): the shared-column road of a box
// (Rank3dPlan, in this CPU's build and the baseline one) gives the bytes of the plain network (its
// windows passed as one column of wires, as a footprint's are) and of a sort, for every sample
// type's order (NaN, -0 and +0 included), channels, widths and ranks.
}  // namespace
namespace kernels::baseline {
void rank3d_row_shared(const Rank3dArgs& a, const Rank3dPlan& p, std::byte* scratch);
}
namespace {

template <class T>
bool key_less(T a, T b) {  // NaN the largest, -0 below +0: the networks' order
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return false;
    if (b != b) return true;
    if (a == b) return std::signbit(a) && !std::signbit(b);
  }
  return a < b;
}

template <class T>
void check_rank3d(SampleType type, int R, int Cn, int k, int W, int C, bool special,
                  std::mt19937& gen) {
  int out_wire = 0;
  const int n = R * Cn;
  const auto net = kernels::rank_network(n, k, &out_wire);
  std::uniform_int_distribution<int> value(0, special ? 6 : 1000);
  std::vector<std::vector<T>> rows(static_cast<std::size_t>(R),
                                   std::vector<T>(static_cast<std::size_t>((W + Cn - 1) * C)));
  for (auto& row : rows)
    for (auto& v : row) {
      const int x = value(gen);
      if constexpr (std::is_floating_point_v<T>)
        v = !special                    ? T(x) / 7
            : x == 0                    ? T(-0.0)
            : x == 1                    ? T(0.0)
            : x == 2 && value(gen) == 0 ? std::numeric_limits<T>::quiet_NaN()
                                        : T(x - 3);
      else
        v = T(x);
    }
  std::vector<const std::byte*> box, wires;
  for (const auto& row : rows) box.push_back(reinterpret_cast<const std::byte*>(row.data()));
  for (const auto& row : rows)
    for (int j = 0; j < Cn; ++j)
      wires.push_back(reinterpret_cast<const std::byte*>(row.data() + j * C));
  std::vector<std::byte> scratch(kernels::rank3d_scratch_bytes(n));
  const std::size_t bytes = static_cast<std::size_t>(W * C) * sizeof(T);
  std::vector<T> shared(static_cast<std::size_t>(W * C)), plain(shared), base(shared);
  kernels::Rank3dArgs a;
  a.rows = box.data(), a.window_rows = R, a.cols = Cn, a.samples = W * C, a.channels = C;
  a.type = type, a.out_wire = out_wire, a.network = &net;
  a.out = reinterpret_cast<std::byte*>(shared.data());
  kernels::rank3d_row(a, scratch.data());
  const kernels::Rank3dPlan* plan = kernels::rank3d_plan(a);
  ASSERT_TRUE(plan != nullptr || W < 2);
  if (plan) {
    a.out = reinterpret_cast<std::byte*>(base.data());
    kernels::baseline::rank3d_row_shared(a, *plan, scratch.data());
    EXPECT_EQ(std::memcmp(base.data(), shared.data(), bytes), 0) << R << "x" << Cn << " k " << k;
  }
  a.rows = wires.data(), a.window_rows = n, a.cols = 1;
  a.out = reinterpret_cast<std::byte*>(plain.data());
  kernels::rank3d_row(a, scratch.data());
  EXPECT_EQ(std::memcmp(plain.data(), shared.data(), bytes), 0)
      << R << "x" << Cn << " k " << k << " W " << W << " C " << C;
  if (special) return;
  for (int s = 0; s < W * C; ++s) {
    std::vector<T> v;
    for (const auto& row : rows)
      for (int j = 0; j < Cn; ++j) v.push_back(row[static_cast<std::size_t>(s + j * C)]);
    std::nth_element(v.begin(), v.begin() + k, v.end(), key_less<T>);
    ASSERT_EQ(v[static_cast<std::size_t>(k)], shared[static_cast<std::size_t>(s)]) << s;
  }
}

TEST(Rank3d, SharedColumnsGiveThePlainNetworksBytes) {
  std::mt19937 gen(11);
  const int shapes[][2] = {{25, 5}, {9, 3}, {1, 3}, {3, 2}, {15, 3}, {5, 5}, {16, 9}, {12, 7}};
  for (const auto& [R, Cn] : shapes) {
    const int n = R * Cn;
    for (int k : {0, n / 3, n / 2, n - 1})
      for (int W : {1, 2, 7, 130})
        for (int C : {1, 3}) {
          check_rank3d<std::uint16_t>(SampleType::u16, R, Cn, k, W, C, false, gen);
          if (C > 1) continue;
          check_rank3d<std::uint8_t>(SampleType::u8, R, Cn, k, W, C, false, gen);
          check_rank3d<std::int16_t>(SampleType::i16, R, Cn, k, W, C, false, gen);
          check_rank3d<float>(SampleType::f32, R, Cn, k, W, C, true, gen);
          check_rank3d<double>(SampleType::f64, R, Cn, k, W, C, true, gen);
          check_rank3d<float>(SampleType::f32, R, Cn, k, W, C, false, gen);
        }
  }
}

}  // namespace
}  // namespace ooc
