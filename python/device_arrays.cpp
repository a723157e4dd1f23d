// Device arrays (device_arrays.hpp): __cuda_array_interface__ read as ooc's image in device
// memory, and a pipeline's single pass run there by ooc::run_on_device.
#include "device_arrays.hpp"

#include "arrays.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "ooc/device_image.hpp"

namespace ooc::python {

namespace {

// An array's interface read as an image on a device, and the stream its producer works in.
struct DeviceArray {
  ooc::DeviceImage image;
  int device = -1;
  void* stream = nullptr;
  bool readonly = false;
};

ooc::SampleType device_type(const std::string& typestr, const char* what) {
  const char order = typestr.empty() ? '?' : typestr[0];
  const int size = typestr.size() > 2 ? std::atoi(typestr.c_str() + 2) : 0;
  if (order == '>' && size > 1)
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) + " is big-endian (" + typestr +
                                                "): give it in the machine's byte order");
  return sample_type_of(typestr.size() > 1 ? typestr[1] : '?', size, typestr);
}

// The layout rules of layout_of (arrays.cpp) for a device array: (H, W), (H, W, C), (Z, H, W)
// with `volume`, (Z, H, W, C); each row's samples one after the other (the kernels read rows).
DeviceArray device_array(const py::handle& a, const char* what, bool volume) {
  const py::dict cai = a.attr("__cuda_array_interface__");
  if (cai.contains("mask") && !cai["mask"].is_none())
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) + " is masked: ooc takes no mask");
  const auto shape = cai["shape"].cast<std::vector<std::int64_t>>();
  const ooc::SampleType type = device_type(cai["typestr"].cast<std::string>(), what);
  const auto item = static_cast<std::int64_t>(ooc::sample_bytes(type));
  const auto ndim = static_cast<int>(shape.size());
  std::vector<std::int64_t> strides(shape.size(), item);
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    strides = cai["strides"].cast<std::vector<std::int64_t>>();
  } else {
    for (int i = ndim - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  }
  DeviceArray d;
  ooc::ImageSpec& s = d.image.spec;
  s = image_spec_of(shape, type, volume, what);  // as layout_of: a (1, H, W) volume's depth 1
  const int z = volume ? 1 : 0;
  const bool interleaved = ndim == z + 3;
  const bool rows_whole = (!interleaved || strides[z + 2] == item || s.channels == 1) &&
                          (strides[z + 1] == item * s.channels || s.width == 1) &&
                          (strides[z] >= item * s.channels * s.width || s.height == 1) &&
                          (!volume || strides[0] >= strides[z] * s.height || s.depth == 1);
  if (!rows_whole)
    throw ooc::Error(ooc::ErrorKind::usage, std::string(what) +
                                                " is a strided view whose rows are not whole: give "
                                                "cupy.ascontiguousarray of it");
  const py::tuple data = cai["data"];
  d.image.data = reinterpret_cast<std::byte*>(data[0].cast<std::uintptr_t>());
  d.readonly = data[1].cast<bool>();
  d.image.row_stride =
      static_cast<std::size_t>(s.height == 1 ? item * s.row_samples() : strides[z]);
  d.image.plane_stride =
      volume ? static_cast<std::size_t>(s.depth == 1 ? d.image.row_stride * s.height : strides[0])
             : 0;
  if (ooc::cuda_device_count() == 0)
    throw ooc::Error(ooc::ErrorKind::device,
                     std::string(what) +
                         " is in device memory, and this build or this machine has no CUDA: give "
                         "a NumPy array (cupy.asnumpy)");
  d.device = ooc::cuda_device_of(d.image.data);
  if (d.device < 0)
    throw ooc::Error(ooc::ErrorKind::usage,
                     std::string(what) +
                         " says it is in device memory (__cuda_array_interface__), but CUDA "
                         "does not know its address as a device's");
  // The interface's stream: 1 and 2 are CUDA's own handles for the legacy and the per-thread
  // default streams, others a stream of the producer's; absent, the default stream.
  if (cai.contains("stream") && !cai["stream"].is_none())
    d.stream = reinterpret_cast<void*>(cai["stream"].cast<std::uintptr_t>());
  return d;
}

}  // namespace

bool is_device_array(const py::handle& a) {
  return py::hasattr(a, "__cuda_array_interface__");
}

py::dict run_device_stages(const py::object& input, const py::object& output,
                           const std::vector<ooc::StageCall>& stages,
                           const ooc::PipelineSettings& settings, const py::dict& o) {
  if (get<std::string>(o, "device", "auto") == "cpu")
    throw ooc::Error(ooc::ErrorKind::usage,
                     "device='cpu' takes a NumPy array; this one is in device memory: give "
                     "cupy.asnumpy(array), or leave device out");
  if (output.is_none() || !is_device_array(output))
    throw ooc::Error(ooc::ErrorKind::usage,
                     "the input is in device memory, the output is not: give a device array "
                     "(cupy.empty) or none as the output");
  const bool volume = get<bool>(o, "volume", false);
  const DeviceArray in = device_array(input, "input", volume);
  const DeviceArray out = device_array(output, "output", volume);
  if (out.readonly) throw ooc::Error(ooc::ErrorKind::usage, "output is read-only");
  if (in.device != out.device)
    throw ooc::Error(ooc::ErrorKind::usage,
                     "the input is on GPU " + std::to_string(in.device) + ", the output on GPU " +
                         std::to_string(out.device) + ": give both on one device");
  ooc::PipelineSettings s = settings;
  s.out_type = out.image.spec.type;
  ooc::PipelinePlan plan(in.image.spec, stages, s, run_options(o).pipeline);
  if (plan.passes() != 1)
    throw ooc::Error(ooc::ErrorKind::usage,
                     "'" + plan.describe() +
                         "' reads the image more than once (a reduction: equalize): on a device "
                         "array it is not run; give a NumPy array (cupy.asnumpy)");
  ooc::DeviceRunStats st;
  {
    py::gil_scoped_release release;
    st = ooc::run_on_device(plan.pass(0), in.image, out.image, in.device, in.stream);
  }
  return py::dict(py::arg("seconds") = st.seconds, py::arg("bands") = st.bands,
                  py::arg("device") = in.device, py::arg("device_bytes") = st.device_bytes,
                  py::arg("operation") = plan.describe());
}

}  // namespace ooc::python
