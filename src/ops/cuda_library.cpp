// Loading the CUDA toolkit's libraries on first use (cuda_library.hpp).
#include "ops/cuda_library.hpp"

#include <dlfcn.h>

#include "ooc/error.hpp"

namespace ooc::cuda_library {

void* open(const std::string& soname, const char* what) {
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib) return lib;
  const std::string why = dlerror();
#ifdef OOC_CUDA_LIBRARY_DIR
  lib = dlopen((std::string(OOC_CUDA_LIBRARY_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib) return lib;
#endif
  throw Error(ErrorKind::device, std::string(what) + " on a GPU need " + soname +
                                     ", which cannot be loaded (" + why +
                                     "): add the CUDA toolkit's lib64 to LD_LIBRARY_PATH, or use "
                                     "--device cpu");
}

void* symbol(void* lib, const std::string& soname, const char* name) {
  void* f = dlsym(lib, name);
  if (!f) throw Error(ErrorKind::device, soname + " lacks " + name + ": a CUDA toolkit too old?");
  return f;
}

}  // namespace ooc::cuda_library
