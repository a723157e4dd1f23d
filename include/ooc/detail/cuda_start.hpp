// The opaque handle a Backend carries from select_backend to the Engine: CUDA starting in the
// background. Not API; in ooc/detail because the public Backend holds it, while what it is stays
// the engine's (src/engine/staging.hpp).
#pragma once

#include <memory>

namespace ooc::detail {

class CudaStart;
using CudaStartHandle = std::shared_ptr<CudaStart>;

}  // namespace ooc::detail
