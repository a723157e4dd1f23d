// NUMA placement of the GPUs' pinned staging memory on fake sysfs trees: the node count, a GPU's
// node from its PCI bus id (any case, the kernel's -1, a missing file), no placement on a host of
// one node; and mbind's hint accepted for a real node of this machine.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/numa.hpp"
#include "scratch.hpp"

namespace {

namespace fs = std::filesystem;
using ooc::test::TempDir;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(Numa, TwoSocketsPlaceEachGpuOnItsNode) {
  TempDir t("numa");
  const std::string root = t.dir.string();
  for (const char* n : {"node0", "node1"})
    fs::create_directories(t.dir / "devices/system/node" / n);
  fs::create_directories(t.dir / "devices/system/node/possible_not_a_node");
  put(t.dir / "bus/pci/devices/0000:3b:00.0/numa_node", "0\n");
  put(t.dir / "bus/pci/devices/0000:d8:00.0/numa_node", "1\n");
  put(t.dir / "bus/pci/devices/0000:5e:00.0/numa_node", "-1\n");
  EXPECT_EQ(ooc::detail::numa_node_count(root), 2);
  EXPECT_EQ(ooc::detail::staging_node("0000:3B:00.0", root), 0);  // CUDA writes it in capitals
  EXPECT_EQ(ooc::detail::staging_node("0000:D8:00.0", root), 1);
  EXPECT_EQ(ooc::detail::staging_node("0000:5E:00.0", root), -1);  // the kernel does not know
  EXPECT_EQ(ooc::detail::staging_node("0000:AF:00.0", root), -1);  // no such device
}

TEST(Numa, OneNodeOrNoTreePlacesNothing) {
  TempDir t("numa");
  const std::string root = t.dir.string();
  fs::create_directories(t.dir / "devices/system/node/node0");
  put(t.dir / "bus/pci/devices/0000:3b:00.0/numa_node", "0\n");
  EXPECT_EQ(ooc::detail::numa_node_count(root), 1);
  EXPECT_EQ(ooc::detail::pci_numa_node("0000:3b:00.0", root), 0);
  EXPECT_EQ(ooc::detail::staging_node("0000:3b:00.0", root), -1);
  EXPECT_EQ(ooc::detail::numa_node_count(root + "/missing"), 1);
}

TEST(Numa, PreferringARealNodeIsAccepted) {
  const std::size_t n = 4 << 20;
  void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  EXPECT_TRUE(ooc::detail::prefer_node(m, n, 0));  // every Linux host has node 0
  EXPECT_FALSE(ooc::detail::prefer_node(m, n, -1));
  static_cast<volatile char*>(m)[0] = 1;  // touched after the policy: still usable memory
  ::munmap(m, n);
}

}  // namespace
