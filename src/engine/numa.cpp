// NUMA placement of the GPUs' pinned staging memory (numa.hpp): sysfs reads and mbind, by system
// call (the policy constant is the kernel's ABI), without linking libnuma.
#include "numa.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

namespace ooc::detail {

int numa_node_count(const std::string& sysfs_root) {
  std::error_code ec;
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(sysfs_root + "/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
        std::all_of(name.begin() + 4, name.end(), [](unsigned char c) { return std::isdigit(c); }))
      ++n;
  }
  return std::max(n, 1);
}

int pci_numa_node(const std::string& bus_id, const std::string& sysfs_root) {
  std::string id = bus_id;
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::ifstream f(sysfs_root + "/bus/pci/devices/" + id + "/numa_node");
  int node = -1;
  if (!(f >> node)) return -1;
  return node >= 0 ? node : -1;
}

int staging_node(const std::string& bus_id, const std::string& sysfs_root) {
  if (numa_node_count(sysfs_root) < 2) return -1;
  return pci_numa_node(bus_id, sysfs_root);
}

bool prefer_node(void* p, std::size_t bytes, int node) {
#if defined(__linux__) && defined(SYS_mbind)
  if (node < 0 || node >= 1024 || bytes == 0) return false;
  constexpr int kMpolPreferred = 1;  // linux/mempolicy.h
  unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {};
  mask[static_cast<std::size_t>(node) / (8 * sizeof(unsigned long))] |=
      1UL << (static_cast<std::size_t>(node) % (8 * sizeof(unsigned long)));
  return ::syscall(SYS_mbind, p, bytes, kMpolPreferred, mask, 1024UL, 0U) == 0;
#else
  (void)p;
  (void)bytes;
  (void)node;
  return false;
#endif
}

}  // namespace ooc::detail
