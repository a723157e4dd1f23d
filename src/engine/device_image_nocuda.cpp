// run_on_device (ooc/device_image.hpp) in a build without CUDA: no device memory to filter.
#include "ooc/device_image.hpp"
#include "ooc/error.hpp"

namespace ooc {

int cuda_device_of(const void*) noexcept {
  return -1;
}

DeviceRunStats run_on_device(const Operation&, const DeviceImage&, const DeviceImage&, int, void*) {
  throw Error(ErrorKind::device,
              "this build of ooc has no CUDA backend, so it cannot filter an array in device "
              "memory (a CuPy array): give a NumPy array (cupy.asnumpy), or use a build with CUDA");
}

}  // namespace ooc
