// The selection networks of the rank filters (kernels/cpu/rank_network.hpp): every rank of every
// window size up to 128 samples against a sort, on random data with ties, on every lane; the
// 0-1 principle exhaustively for small windows; NaN in a lane gives NaN in that lane only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

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

}  // namespace
}  // namespace ooc
