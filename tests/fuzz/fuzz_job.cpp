// libFuzzer target for what a resumed or finished job trusts besides the image: the journals and
// the job manifest beside a temporary (first half of the input: a journal, after the first NUL:
// the manifest), read by finish_output(); and a --kernel text, parsed and fingerprinted. Any
// crash, sanitizer report or exception other than ooc::Error is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ooc/error.hpp"
#include "ooc/job.hpp"
#include "ooc/ops/conv2d.hpp"

namespace {

const std::string& scratch() {
  static const std::string dir = [] {
    char name[] = "/tmp/ooc-fuzz-job-XXXXXX";
    return std::string(::mkdtemp(name) ? name : "/tmp");
  }();
  return dir;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = bytes.find('\0');
  const std::string out = scratch() + "/o.raw", temporary = out + ".partial";
  write(temporary, std::string(64, 'x'));
  write(temporary + ".part-0-of-2.journal", bytes.substr(0, cut));
  if (cut != std::string::npos) write(temporary + ".job", bytes.substr(cut + 1));
  try {
    ooc::finish_output(out);
  } catch (const ooc::Error&) {
  }
  ::unlink(out.c_str());
  ::unlink(temporary.c_str());
  ::unlink((temporary + ".part-0-of-2.journal").c_str());
  ::unlink((temporary + ".job").c_str());
  try {
    ooc::Conv2dParams p;
    const std::string kernel = scratch() + "/k.txt";
    write(kernel, bytes.substr(0, cut));
    p.kernel = ooc::parse_kernel(kernel, 1 << 20);
    const ooc::ImageSpec spec{64, 16, 1, ooc::SampleType::f32};
    (void)ooc::make_conv2d(spec, p)->fingerprint();
  } catch (const ooc::Error&) {
  }
  return 0;
}
