// The GPU entry points of a build without the CUDA toolkit: no devices, and a clear message.
#include "ooc/device.hpp"
#include "ooc/error.hpp"
#include "staging.hpp"

namespace ooc {

namespace {
Error no_cuda() {
  return Error(ErrorKind::device,
               "--device cuda: this build has no CUDA backend (nvcc was not found when it was "
               "configured); rebuild with the CUDA toolkit or use --device cpu");
}
}  // namespace

int cuda_device_count() noexcept {
  return 0;
}
std::string cuda_device_name(int) {
  return {};
}
std::vector<DeviceInfo> cuda_devices() noexcept {
  return {};
}

namespace detail {
std::int64_t cuda_max_band_rows(const std::vector<int>&, int, std::int64_t,
                                const std::function<std::size_t(std::int64_t)>&, const CudaStart*) {
  throw no_cuda();
}
std::shared_ptr<CudaStart> CudaStart::begin(const std::vector<int>&) {
  throw no_cuda();
}
std::unique_ptr<CudaSlot> CudaSlot::make(int, int, const SlotSizes&) {
  throw no_cuda();
}
}  // namespace detail

}  // namespace ooc
