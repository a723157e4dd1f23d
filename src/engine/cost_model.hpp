// The cost model's estimate of a whole run for --device auto (select_backend in backend.cpp); the
// per-sample model itself is public (ooc/cost.hpp), both in cost_model.cpp.
#pragma once

#include <cstddef>
#include <vector>

#include "ooc/cost.hpp"
#include "ooc/engine.hpp"

namespace ooc::detail {

struct RunEstimate {
  double cpu = 0, cuda = 0;  // seconds, the GPUs' with their start-up
  double cuda_start = 0;     // the start-up's share
  std::size_t gpus = 1;      // how many of the GPUs give `cuda`
};

// Every pass of `ops` over `work` on `threads` CPU threads, and on up to `gpus` devices: the CPU's
// ns per sample over its threads; on n GPUs the start-up (more for each GPU after the first), then
// per pass the slower of the copies (bound by the host, whatever n) and the kernels (divided by
// n). `cuda` is the best n's time, the fewest GPUs giving it.
RunEstimate estimate_seconds(const std::vector<const Operation*>& ops, const Workload& work,
                             int threads, std::size_t gpus);
// The start-up on `gpus` devices, and the GPUs' part of the estimate on exactly `gpus` devices,
// start-up included.
double cuda_start_seconds(std::size_t gpus);
double cuda_seconds(const std::vector<const Operation*>& ops, const Workload& work,
                    std::size_t gpus);

}  // namespace ooc::detail
