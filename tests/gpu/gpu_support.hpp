// What the GPU tests share: skipping, with the reason, where no CUDA device is usable.
#pragma once

#include <gtest/gtest.h>

#include "ooc/engine.hpp"

#define OOC_REQUIRE_GPU()                                                                \
  do {                                                                                   \
    if (::ooc::cuda_device_count() == 0)                                                 \
      GTEST_SKIP() << "no CUDA device (or no CUDA in this build): GPU tests run on the " \
                      "GPU machine";                                                     \
  } while (0)
