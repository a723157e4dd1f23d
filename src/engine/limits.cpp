// The defaults a job takes from what it may use, not from the whole node: the memory limit of its
// cgroup (v1 or v2, the tightest of the cgroup and its parents) and Slurm's allocation, and the
// CPUs of its affinity mask and CPU quota (as Slurm, systemd or taskset set them). Each says where
// it came from, for --stats and oocinfo.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "ooc/detail/size_text.hpp"
#include "ooc/limits.hpp"
#include "text_file.hpp"

namespace ooc {
namespace {

using detail::first_line;

// A byte count from a cgroup file; 0 for "max", absent or unreadable (no limit).
std::uint64_t limit_from(const std::string& path) {
  const std::string text = first_line(path);
  if (text.empty() || text == "max") return 0;
  try {
    std::size_t pos = 0;
    const unsigned long long v = std::stoull(text, &pos);
    // cgroup v1 writes "no limit" as a huge page-rounded number.
    return v >= (std::uint64_t{1} << 62) ? 0 : v;
  } catch (const std::exception&) {
    return 0;
  }
}

// The cgroup of this process for a v1 controller ("memory"), or the v2 one ("" controller list).
std::string cgroup_path(const std::string& proc, const std::string& controller) {
  std::ifstream in(proc + "/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string list = line.substr(a + 1, b - a - 1);
    bool match = controller.empty() ? (line.compare(0, a, "0") == 0 && list.empty()) : false;
    std::istringstream names(list);
    for (std::string n; !match && std::getline(names, n, ',');) match = n == controller;
    if (match) return line.substr(b + 1);
  }
  return {};
}

// The tightest limit in `file` from the cgroup directory up to the hierarchy's root.
std::uint64_t tightest(const std::string& root, std::string path, const std::string& file,
                       std::string& where) {
  std::uint64_t best = 0;
  for (;;) {
    const std::string dir = root + (path == "/" ? "" : path);
    if (const std::uint64_t v = limit_from(dir + "/" + file); v > 0 && (best == 0 || v < best)) {
      best = v;
      where = dir + "/" + file;
    }
    if (path.empty() || path == "/") break;
    const auto slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return best;
}

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20, kGiB = std::uint64_t{1} << 30;

// A whole number from the environment; 0 where unset or not digits only. A default is no place to
// refuse a run over a launcher's odd variable: the next source, or the workstation rule, applies.
std::uint64_t env_count(const Environment& env, const char* name) {
  const char* s = env(name);
  if (s == nullptr || *s < '0' || *s > '9') return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  // Beyond 2^40 (MiB: an exbibyte) is no allocation, and would overflow in bytes.
  return *end == '\0' && errno == 0 && v < (std::uint64_t{1} << 40) ? v : 0;
}

// The most tasks of this step on a node: srun's "2(x3),1" (SLURM_STEP_TASKS_PER_NODE), or an MPI
// launcher's local size. They share the node's allocation (its cgroup, SLURM_MEM_PER_NODE), so
// each takes its part. The most on any node, as a step's node index is not its job's SLURM_NODEID.
int tasks_on_node(const Environment& env, std::string& name) {
  int most = 1;
  if (const char* s = env("SLURM_STEP_TASKS_PER_NODE")) {
    std::istringstream in(s);
    for (std::string item; std::getline(in, item, ',');) {
      const int n = std::atoi(item.c_str());
      if (n > most && n <= 1 << 20) most = n, name = "SLURM_STEP_TASKS_PER_NODE";
    }
  }
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const std::uint64_t n = env_count(env, v);
    if (n > std::uint64_t(most) && n <= 1 << 20) most = static_cast<int>(n), name = v;
  }
  return most;
}

// The job's memory allocation, this process's share, into m.allocation(_from): the tightest of a
// cgroup limit below physical memory and Slurm's variables (MiB). `affinity`: the cores of the
// affinity mask, for SLURM_MEM_PER_CPU where Slurm gives no count.
void read_allocation(MachineLimits& m, std::uint64_t cgroup, std::uint64_t physical, int affinity,
                     const Environment& env) {
  std::string tasks_name;
  const int tasks = tasks_on_node(env, tasks_name);
  const auto offer = [&](std::uint64_t bytes, std::string from, bool per_node) {
    if (bytes == 0) return;
    if (per_node && tasks > 1) {
      bytes /= std::uint64_t(tasks);
      from += " / " + std::to_string(tasks) + " tasks on the node (" + tasks_name + ")";
    }
    if (m.allocation == 0 || bytes < m.allocation) m.allocation = bytes, m.allocation_from = from;
  };
  if (cgroup > 0 && (physical == 0 || cgroup < physical))
    offer(cgroup, m.memory_from + " (" + format_bytes(double(cgroup)) + ")", true);
  if (const std::uint64_t node = env_count(env, "SLURM_MEM_PER_NODE"))
    offer(node * kMiB, "SLURM_MEM_PER_NODE " + std::to_string(node) + " MiB", true);
  if (const std::uint64_t cpu = env_count(env, "SLURM_MEM_PER_CPU")) {
    const char* name = "SLURM_CPUS_ON_NODE";
    std::uint64_t cores = env_count(env, name);
    const bool per_node = cores > 0;
    if (cores == 0) cores = env_count(env, name = "SLURM_CPUS_PER_TASK");
    if (cores == 0) cores = std::uint64_t(affinity), name = "the CPU affinity mask";
    if (cores > 0 && cores <= 1 << 20)
      offer(cpu * kMiB * cores,
            "SLURM_MEM_PER_CPU " + std::to_string(cpu) + " MiB x " + std::to_string(cores) +
                " cores (" + name + ")",
            per_node);
  }
}

}  // namespace

MachineLimits machine_limits(const std::string& proc, const std::string& cgroup_root,
                             const Environment& env) {
  MachineLimits m;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  m.memory = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
  m.memory_from = "physical memory";
  std::string where;
  std::uint64_t cg = 0;
  if (const std::string v2 = cgroup_path(proc, ""); !v2.empty())
    cg = tightest(cgroup_root, v2, "memory.max", where);
  if (cg == 0) {
    if (const std::string v1 = cgroup_path(proc, "memory"); !v1.empty())
      cg = tightest(cgroup_root + "/memory", v1, "memory.limit_in_bytes", where);
  }
  const std::uint64_t physical = m.memory;
  if (cg > 0 && (m.memory == 0 || cg < m.memory)) {
    m.memory = cg;
    m.memory_from = "cgroup limit " + where;
  }

  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  m.cpus = static_cast<int>(std::max(1L, online));
  m.cpus_from = "all " + std::to_string(m.cpus) + " cores";
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const int affinity = ::sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : 0;
  if (affinity > 0 && affinity < m.cpus) {
    m.cpus = affinity;
    m.cpus_from = "the CPU affinity mask (" + std::to_string(m.cpus) + " of " +
                  std::to_string(online) + " cores)";
  }
  // A CPU quota (cgroup v2 cpu.max "QUOTA PERIOD", v1 cfs_quota_us / cfs_period_us) allows
  // QUOTA/PERIOD cores' worth of time: more threads than that only take turns.
  double quota = 0;
  std::string quota_file;
  if (const std::string v2 = cgroup_path(proc, ""); !v2.empty()) {
    quota_file = cgroup_root + (v2 == "/" ? "" : v2) + "/cpu.max";
    std::istringstream in(first_line(quota_file));
    std::string q, p;
    if (in >> q >> p && q != "max")
      quota = std::atof(q.c_str()) / std::max(1.0, std::atof(p.c_str()));
  } else if (const std::string v1 = cgroup_path(proc, "cpu"); !v1.empty()) {
    const std::string dir = cgroup_root + "/cpu" + (v1 == "/" ? "" : v1);
    quota_file = dir + "/cpu.cfs_quota_us";
    const double q = std::atof(first_line(quota_file).c_str());
    const double p = std::atof(first_line(dir + "/cpu.cfs_period_us").c_str());
    if (q > 0 && p > 0) quota = q / p;
  }
  if (quota > 0 && std::ceil(quota) < m.cpus) {
    m.cpus = std::max(1, static_cast<int>(std::ceil(quota)));
    m.cpus_from = "the cgroup CPU quota " + quota_file;
  }
  read_allocation(m, cg, physical, affinity,
                  env ? env : Environment([](const char* name) { return std::getenv(name); }));
  return m;
}

const MachineLimits& machine_limits_cached() {
  static const MachineLimits m = machine_limits();
  return m;
}

DefaultBudget default_budget(const MachineLimits& m) {
  if (m.allocation == 0) {
    // A workstation: the RAM is shared with whatever else runs there, so the default stays small.
    if (m.memory == 0) return {kGiB, "1 GiB, the memory being unknown"};
    return {std::min<std::size_t>(kGiB, m.memory / 4),
            "the smaller of 1 GiB and a quarter of " + format_bytes(double(m.memory)) + " (" +
                m.memory_from + "), no allocation known"};
  }
  // Half of the allocation: the other half holds what --mem-limit does not count, which the
  // allocation's enforcer (the cgroup, Slurm) charges all the same: the program's code and
  // libraries, an interpreter or MPI runtime, the sinks' files in the page cache. No floor above
  // that: a budget too small for the job is refused with the memory it needs, while one beyond the
  // allocation is killed without a word. At most 64 GiB: a larger ring buys no speed (the bands
  // stream through it) and only takes memory from the page cache the reads go through.
  const std::uint64_t half = m.allocation / 2;
  if (half > 64 * kGiB)
    return {std::size_t(64 * kGiB),
            "64 GiB, the most a default takes (half of " + m.allocation_from + " is more)"};
  return {std::size_t(half), "half of " + m.allocation_from};
}

const DefaultBudget& default_budget() {
  static const DefaultBudget b = default_budget(machine_limits_cached());
  return b;
}

std::size_t default_mem_limit() {
  return default_budget().bytes;
}

int default_threads() {
  return machine_limits_cached().cpus;
}

}  // namespace ooc
