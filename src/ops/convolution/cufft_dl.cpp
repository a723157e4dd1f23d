// Loads the libcufft of the toolkit built against (its major version) on the first convolution by
// FFT on a GPU (cufft_dl.hpp).
#include "cufft_dl.hpp"

#include <string>

#include "ops/cuda_library.hpp"

namespace ooc::cufft {
namespace {

Api load() {
  using cuda_library::bind;
  const std::string so = "libcufft.so." + std::to_string(CUFFT_VER_MAJOR);
  void* lib = cuda_library::open(so, "convolutions by FFT");
  Api a;
  bind(a.create, lib, so, "cufftCreate");
  bind(a.destroy, lib, so, "cufftDestroy");
  bind(a.set_auto_allocation, lib, so, "cufftSetAutoAllocation");
  bind(a.estimate_many, lib, so, "cufftEstimateMany");
  bind(a.make_plan_many, lib, so, "cufftMakePlanMany");
  bind(a.set_stream, lib, so, "cufftSetStream");
  bind(a.set_work_area, lib, so, "cufftSetWorkArea");
  bind(a.exec_r2c, lib, so, "cufftExecR2C");
  bind(a.exec_c2r, lib, so, "cufftExecC2R");
  bind(a.exec_d2z, lib, so, "cufftExecD2Z");
  bind(a.exec_z2d, lib, so, "cufftExecZ2D");
  return a;
}

}  // namespace

const Api& api() {
  static const Api a = load();  // a failure throws, and the next call tries again
  return a;
}

}  // namespace ooc::cufft
