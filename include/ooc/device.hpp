// What the machine offers oocconv: CUDA devices (none in a build without CUDA) and the CPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ooc {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  std::size_t memory_total = 0, memory_free = 0;
  int copy_engines = 0;
  std::string pci_bus_id;  // "0000:3b:00.0"
  std::string pcie_link;   // "32.0 GT/s PCIe x16" from sysfs, or empty
};

// Usable CUDA devices; empty without a driver, a device or CUDA in this build. Never throws.
std::vector<DeviceInfo> cuda_devices() noexcept;

}  // namespace ooc
