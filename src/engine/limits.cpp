// The defaults a job takes from what it may use, not from the whole node: the memory limit of its
// cgroup (v1 or v2, the tightest of the cgroup and its parents) and the CPUs of its affinity mask
// and CPU quota (as Slurm, systemd or taskset set them). Each says where it came from, for oocinfo.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace

MachineLimits machine_limits(const std::string& proc, const std::string& cgroup_root) {
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
  if (cg > 0 && (m.memory == 0 || cg < m.memory)) {
    m.memory = cg;
    m.memory_from = "cgroup limit " + where;
  }

  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  m.cpus = static_cast<int>(std::max(1L, online));
  m.cpus_from = "all " + std::to_string(m.cpus) + " cores";
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) > 0 &&
      CPU_COUNT(&mask) < m.cpus) {
    m.cpus = CPU_COUNT(&mask);
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
  return m;
}

const MachineLimits& machine_limits_cached() {
  static const MachineLimits m = machine_limits();
  return m;
}

std::size_t default_mem_limit() {
  const std::size_t gib = std::size_t{1} << 30;
  const std::uint64_t memory = machine_limits_cached().memory;
  return memory == 0 ? gib : std::min<std::size_t>(gib, memory / 4);
}

int default_threads() {
  return machine_limits_cached().cpus;
}

}  // namespace ooc
