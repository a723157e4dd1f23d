// BandPlan::CpuShare, the CUDA backend's share of a pass's bands for the CPU: how it spreads them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ooc/engine.hpp"

namespace ooc {
namespace {

// A CPU share of a/b takes a bands of every b, spread evenly: 1/k is every k-th band.
TEST(Engine, CpuSharesSpreadTheirBandsEvenly) {
  for (const auto& [cpu, of] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {0, 1}, {1, 2}, {1, 3}, {2, 3}, {3, 4}, {5, 6}, {4, 4}, {7, 1000}}) {
    const BandPlan::CpuShare share{cpu, of};
    std::int64_t taken = 0, run = 0, longest = 0;
    for (std::int64_t k = 0; k < 12 * of; ++k) {
      const bool t = share.takes(k);
      taken += t;
      run = t ? run + 1 : 0;
      longest = std::max(longest, run);
      if (cpu == 1) {
        EXPECT_EQ(t, k % of == of - 1) << cpu << "/" << of << " band " << k;
      }
      // Every window of `of` bands holds exactly `cpu` of them.
      if (k + 1 >= of) {
        std::int64_t in_window = 0;
        for (std::int64_t i = k + 1 - of; i <= k; ++i) in_window += share.takes(i);
        EXPECT_EQ(in_window, cpu) << cpu << "/" << of << " bands to " << k;
      }
    }
    EXPECT_EQ(taken, 12 * cpu) << cpu << "/" << of;
    // Never more CPU bands in a row than the share needs (the GPU's bands are spread between).
    EXPECT_LE(longest, cpu == of ? 12 * of : (of - 1) / (of - cpu)) << cpu << "/" << of;
  }
}

}  // namespace
}  // namespace ooc
