// The CUDA toolkit's large libraries (cuFFT, cuBLAS) are loaded with dlopen where an operation
// first needs them, not linked: loading them costs every process of the tools tens of
// milliseconds (cuFFT) to half a second and 160 MiB (cuBLAS with cuBLASLt), --help and CPU runs
// included. Each library's table of the functions called is in a *_dl.hpp beside its user.
#pragma once

#include <string>

namespace ooc::cuda_library {

// Loads SONAME (libcufft.so.12, ...) for WHAT (the operation that needs it, for the message):
// where the loader finds it (LD_LIBRARY_PATH, the program's run path, ld.so.cache), as a linked
// library would be found, else in the toolkit's folder the build found. Stays loaded. Throws
// Error (device kind) with the loader's reason where it cannot be loaded.
void* open(const std::string& soname, const char* what);

// SYMBOL of LIB; throws Error (device kind) where the library lacks it.
void* symbol(void* lib, const std::string& soname, const char* name);

template <class F>
void bind(F& f, void* lib, const std::string& soname, const char* name) {
  f = reinterpret_cast<F>(symbol(lib, soname, name));
}

}  // namespace ooc::cuda_library
