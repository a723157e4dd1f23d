// The cost model's estimate of a whole run for --device auto (select_backend in backend.cpp); the
// per-sample model itself is public (ooc/cost.hpp), both in cost_model.cpp.
#pragma once

#include <cstddef>
#include <vector>

#include "ooc/cost.hpp"
#include "ooc/pipeline.hpp"

namespace ooc::detail {

struct RunEstimate {
  double cpu = 0, cuda = 0;  // seconds, the GPUs' with their start-up
  double cuda_start = 0;     // the start-up's share
};

// Every pass of `ops` over `work` on `threads` CPU threads, and on `gpus` devices: the CPU's ns per
// sample over its threads; on the GPUs the start-up, then per pass the slower of the copies and
// the kernels, both shared by the GPUs.
RunEstimate estimate_seconds(const std::vector<const Operation*>& ops, const Workload& work,
                             int threads, std::size_t gpus);

}  // namespace ooc::detail
