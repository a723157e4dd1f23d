// Where a GPU's pinned staging memory goes on a host with several NUMA nodes: on the node its PCIe
// root hangs off, so that the pack into the slot and the GPU's copies out of it do not cross the
// inter-socket link. The topology is read from sysfs (a root other than /sys for the tests' fake
// trees); a host of one node, or one that does not say, places nothing.
#pragma once

#include <cstddef>
#include <string>

namespace ooc::detail {

// Nodes under ROOT/devices/system/node (node0, node1, ...); 1 where none is listed.
int numa_node_count(const std::string& sysfs_root = "/sys");

// The node of the PCI device BUS_ID ("0000:3B:00.0", any case) from
// ROOT/bus/pci/devices/BUS_ID/numa_node; -1 where unknown (no file, or the kernel's -1).
int pci_numa_node(const std::string& bus_id, const std::string& sysfs_root = "/sys");

// The node a GPU's pinned buffers should be placed on: pci_numa_node of its bus id on a host of
// several nodes, else -1 (no placement).
int staging_node(const std::string& bus_id, const std::string& sysfs_root = "/sys");

// Asks the kernel to place the pages of [p, p + bytes), not yet touched, on `node` (mbind with
// MPOL_PREFERRED: memory elsewhere when the node is full, rather than failing). False where it
// refused; a hint, never an error.
bool prefer_node(void* p, std::size_t bytes, int node);

}  // namespace ooc::detail
