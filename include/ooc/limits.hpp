// What this process may use (memory, cores), and the defaults a job takes from it: a library user
// sizes a job (EngineOptions::mem_limit, ::threads) from these, as the tools do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ooc {

// What this process may use, and where each figure came from ("cgroup limit /sys/fs/cgroup/...",
// "the CPU affinity mask (4 of 64 cores)"): the defaults below follow the job's limits, not the
// node's. `proc` and `cgroup_root` are for tests.
struct MachineLimits {
  std::uint64_t memory = 0;  // bytes: physical memory, or the tightest cgroup limit (v1 or v2)
  std::string memory_from;
  int cpus = 1;  // cores: online, or the affinity mask, or the cgroup CPU quota, the fewest
  std::string cpus_from;
};
MachineLimits machine_limits(const std::string& proc = "/proc",
                             const std::string& cgroup_root = "/sys/fs/cgroup");
const MachineLimits& machine_limits_cached();  // this process's, read once

// Default for --mem-limit: the smaller of 1 GiB and a quarter of machine_limits().memory.
std::size_t default_mem_limit();
// Default for --threads: machine_limits().cpus.
int default_threads();

}  // namespace ooc
