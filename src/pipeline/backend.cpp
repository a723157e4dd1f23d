// Picking the backend: the CPU, or CUDA devices (--device, --devices).
#include <sstream>

#include "../../kernels/cpu/separable.hpp"
#include "ooc/error.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {

std::string Backend::describe() const {
  if (!cuda) return std::string("cpu (") + cpu::separable_isa() + ")";
  std::string s = "cuda:";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(devices[i]);
  }
  return s + " (" + cuda_device_name(devices.empty() ? 0 : devices[0]) + ")";
}

Backend select_backend(const std::string& device, const std::string& devices,
                       const std::vector<const Operation*>& ops) {
  if (device != "auto" && device != "cpu" && device != "cuda")
    throw Error(ErrorKind::usage, "--device takes auto, cpu or cuda, got '" + device + "'");
  std::vector<int> list;  // empty: all
  if (devices != "all") {
    std::istringstream in(devices);
    for (std::string tok; std::getline(in, tok, ',');) {
      try {
        std::size_t pos = 0;
        list.push_back(std::stoi(tok, &pos));
        if (pos != tok.size()) throw std::invalid_argument(tok);
      } catch (const std::exception&) {
        throw Error(ErrorKind::usage,
                    "--devices takes all or a list like 0,1; got '" + devices + "'");
      }
    }
  }
  Backend b;
  const int count = device == "cpu" ? 0 : cuda_device_count();
  bool every_op_on_gpu = true;
  for (const Operation* op : ops) every_op_on_gpu = every_op_on_gpu && op->has_cuda();
  b.cuda = device == "cuda" || (device == "auto" && count > 0 && every_op_on_gpu);
  if (!b.cuda) return b;
  if (count == 0)
    throw Error(ErrorKind::device,
                "--device cuda: no usable CUDA device (driver missing, no GPU, or no CUDA in this "
                "build); use --device cpu or auto");
  if (!every_op_on_gpu)
    throw Error(ErrorKind::device,
                "--device cuda: this operation has no CUDA version; use --device cpu or auto");
  if (list.empty())
    for (int d = 0; d < count; ++d) list.push_back(d);
  for (int d : list)
    if (d < 0 || d >= count)
      throw Error(ErrorKind::device,
                  "--devices: device " + std::to_string(d) + " does not exist; this machine has " +
                      std::to_string(count) + " (0 to " + std::to_string(count - 1) + ")");
  b.devices = list;
  return b;
}

}  // namespace ooc
