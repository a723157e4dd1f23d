// cuBLAS for the products on a GPU, loaded on first use (ops/cuda_library.hpp says why). Include
// this instead of <cublas_v2.h>: the cuBLAS names used are redefined to call through the loaded
// library's table, so the calls (and the error messages that quote them) read as cuBLAS's own.
#pragma once

#include <cublas_v2.h>

namespace ooc::cublas {

// The functions of libcublas that the products call.
struct Api {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasDestroy_v2) destroy;
  decltype(&::cublasSetStream_v2) set_stream;
  decltype(&::cublasSetWorkspace_v2) set_workspace;
  decltype(&::cublasSgemv_v2) sgemv;
  decltype(&::cublasDgemv_v2) dgemv;
  decltype(&::cublasSgemm_v2) sgemm;
  decltype(&::cublasDgemm_v2) dgemm;
  decltype(&::cublasGetStatusName) status_name;
};

// The table; the first call loads the library (once, thread-safe). Throws Error (device kind)
// where it cannot be loaded.
const Api& api();

}  // namespace ooc::cublas

#undef cublasCreate
#undef cublasDestroy
#undef cublasSetStream
#undef cublasSetWorkspace
#undef cublasSgemv
#undef cublasDgemv
#undef cublasSgemm
#undef cublasDgemm
#define cublasCreate ::ooc::cublas::api().create
#define cublasDestroy ::ooc::cublas::api().destroy
#define cublasSetStream ::ooc::cublas::api().set_stream
#define cublasSetWorkspace ::ooc::cublas::api().set_workspace
#define cublasSgemv ::ooc::cublas::api().sgemv
#define cublasDgemv ::ooc::cublas::api().dgemv
#define cublasSgemm ::ooc::cublas::api().sgemm
#define cublasDgemm ::ooc::cublas::api().dgemm
#define cublasGetStatusName ::ooc::cublas::api().status_name
