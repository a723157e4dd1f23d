// Loads the libcublas of the toolkit built against (its major version) on the first product on a
// GPU (cublas_dl.hpp).
#include "cublas_dl.hpp"

#include <string>

#include "ops/cuda_library.hpp"

namespace ooc::cublas {
namespace {

Api load() {
  using cuda_library::bind;
  const std::string so = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = cuda_library::open(so, "the matrix products");
  Api a;
  bind(a.create, lib, so, "cublasCreate_v2");
  bind(a.destroy, lib, so, "cublasDestroy_v2");
  bind(a.set_stream, lib, so, "cublasSetStream_v2");
  bind(a.set_workspace, lib, so, "cublasSetWorkspace_v2");
  bind(a.sgemv, lib, so, "cublasSgemv_v2");
  bind(a.dgemv, lib, so, "cublasDgemv_v2");
  bind(a.sgemm, lib, so, "cublasSgemm_v2");
  bind(a.dgemm, lib, so, "cublasDgemm_v2");
  bind(a.status_name, lib, so, "cublasGetStatusName");
  return a;
}

}  // namespace

const Api& api() {
  static const Api a = load();  // a failure throws, and the next call tries again
  return a;
}

}  // namespace ooc::cublas
