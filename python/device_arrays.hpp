// Arrays in CUDA device memory (CuPy's, or any object with __cuda_array_interface__) as ooc's
// images: the array functions hand them to ooc::run_on_device, which runs the operation's CUDA
// kernels where the samples lie, with no copy to or from the host, as dask-image hands CuPy
// blocks to cupyx.scipy.ndimage.
#pragma once

#include <vector>

#include "keywords.hpp"
#include "ooc/pipeline.hpp"

namespace ooc::python {

// Whether `a` is a device array: it has __cuda_array_interface__ (a NumPy array never has).
bool is_device_array(const py::handle& a);

// `stages` under `settings` over the device array `input` into the device array `output` (given,
// of the input's shape; its dtype the output type), on the input's GPU and in the stream it names
// (the interface's "stream": CuPy's current stream), waited for. `o`: the array functions'
// keywords (volume, planes, precision...). Returns {"seconds", "bands", "device",
// "device_bytes", "operation"}.
py::dict run_device_stages(const py::object& input, const py::object& output,
                           const std::vector<ooc::StageCall>& stages,
                           const ooc::PipelineSettings& settings, const py::dict& o);

}  // namespace ooc::python
