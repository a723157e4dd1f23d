// The CUDA entry points of a build without the CUDA toolkit: no devices, and a clear message.
#include "ooc/device.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/separable.hpp"

namespace ooc {

std::unique_ptr<Operation> make_separable_cuda(const ImageSpec&, const SeparableParams&,
                                               const PipelineOptions&, const std::vector<int>&) {
  throw Error(ErrorKind::device,
              "--device cuda: this build has no CUDA backend (nvcc was not found when it was "
              "configured); rebuild with the CUDA toolkit or use --device cpu");
}

int cuda_device_count() noexcept {
  return 0;
}

std::string cuda_device_name(int) {
  return {};
}

std::vector<DeviceInfo> cuda_devices() noexcept {
  return {};
}

}  // namespace ooc
