// What this process may use (memory, cores), and the defaults a job takes from it: a library user
// sizes a job (EngineOptions::mem_limit, ::threads) from these, as the tools do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace ooc {

// An environment to read: a variable's value, or null where it is unset (std::getenv's contract).
// Tests pass their own; empty means this process's.
using Environment = std::function<const char*(const char*)>;

// What this process may use, and where each figure came from ("cgroup limit /sys/fs/cgroup/...",
// "the CPU affinity mask (4 of 64 cores)"): the defaults below follow the job's limits, not the
// node's. `proc`, `cgroup_root` and `env` are for tests.
struct MachineLimits {
  std::uint64_t memory = 0;  // bytes: physical memory, or the tightest cgroup limit (v1 or v2)
  std::string memory_from;
  int cpus = 1;  // cores: online, or the affinity mask, or the cgroup CPU quota, the fewest
  std::string cpus_from;
  // This process's share of the job's memory allocation, where one is known (0: none, as on a
  // workstation): the tightest of a cgroup limit below physical memory, SLURM_MEM_PER_NODE and
  // SLURM_MEM_PER_CPU times the job's cores, a node's figure divided among the step's tasks on
  // it. `allocation_from` says which ("SLURM_MEM_PER_CPU 4096 MiB x 8 cores (SLURM_CPUS_ON_NODE)").
  std::uint64_t allocation = 0;
  std::string allocation_from;
};
MachineLimits machine_limits(const std::string& proc = "/proc",
                             const std::string& cgroup_root = "/sys/fs/cgroup",
                             const Environment& env = {});
const MachineLimits& machine_limits_cached();  // this process's, read once

// The default --mem-limit and where it came from, for --stats and oocinfo ("half of
// SLURM_MEM_PER_NODE 2048 MiB"). With an allocation: half of it, at most 64 GiB; without one (a
// workstation): the smaller of 1 GiB and a quarter of RAM.
struct DefaultBudget {
  std::size_t bytes = 0;
  std::string from;
};
DefaultBudget default_budget(const MachineLimits& limits);
const DefaultBudget& default_budget();  // this process's: default_budget(machine_limits_cached())

// Default for --mem-limit: default_budget().bytes.
std::size_t default_mem_limit();
// Default for --threads: machine_limits().cpus.
int default_threads();

}  // namespace ooc
