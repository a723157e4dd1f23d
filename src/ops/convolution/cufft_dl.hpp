// cuFFT for the 2-D convolution by FFT on a GPU, loaded on first use (ops/cuda_library.hpp says
// why). Include this instead of <cufft.h>: the cuFFT names used are redefined to call through the
// loaded library's table, so the calls (and the error messages that quote them) read as cuFFT's
// own.
#pragma once

#include <cufft.h>

namespace ooc::cufft {

// The functions of libcufft that the convolution calls.
struct Api {
  decltype(&::cufftCreate) create;
  decltype(&::cufftDestroy) destroy;
  decltype(&::cufftSetAutoAllocation) set_auto_allocation;
  decltype(&::cufftEstimateMany) estimate_many;
  decltype(&::cufftMakePlanMany) make_plan_many;
  decltype(&::cufftSetStream) set_stream;
  decltype(&::cufftSetWorkArea) set_work_area;
  decltype(&::cufftExecR2C) exec_r2c;
  decltype(&::cufftExecC2R) exec_c2r;
  decltype(&::cufftExecD2Z) exec_d2z;
  decltype(&::cufftExecZ2D) exec_z2d;
};

// The table; the first call loads the library (once, thread-safe). Throws Error (device kind)
// where it cannot be loaded.
const Api& api();

}  // namespace ooc::cufft

#define cufftCreate ::ooc::cufft::api().create
#define cufftDestroy ::ooc::cufft::api().destroy
#define cufftSetAutoAllocation ::ooc::cufft::api().set_auto_allocation
#define cufftEstimateMany ::ooc::cufft::api().estimate_many
#define cufftMakePlanMany ::ooc::cufft::api().make_plan_many
#define cufftSetStream ::ooc::cufft::api().set_stream
#define cufftSetWorkArea ::ooc::cufft::api().set_work_area
#define cufftExecR2C ::ooc::cufft::api().exec_r2c
#define cufftExecC2R ::ooc::cufft::api().exec_c2r
#define cufftExecD2Z ::ooc::cufft::api().exec_d2z
#define cufftExecZ2D ::ooc::cufft::api().exec_z2d
