// libFuzzer target for one file reader (OOC_FUZZ_FORMAT: "tiff" or "npy"): the input bytes become
// a file, which is opened and read whole through both read paths. Any crash, sanitizer report or
// exception other than ooc::Error (the clean "bad input" answer) is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/io.hpp"

namespace {

// Images claiming more than this are opened (header and layout checks run) but not read, so
// that the fuzzer spends its time on parsing and decoding rather than on allocating.
constexpr std::size_t kMaxReadBytes = 16u << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("ooc-fuzz", 0);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) return 0;
  if (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  ooc::RawHints hints;
  hints.format = OOC_FUZZ_FORMAT;
  try {
    auto source = ooc::open_source(path, hints);
    const ooc::ImageSpec& s = source->spec();
    if (s.total_bytes() > kMaxReadBytes) return 0;
    std::vector<std::byte> all(s.total_bytes());
    source->read_rows(0, s.height, all.data());
    // Bands of 3 rows through the serial path, as the pipeline reads them.
    ooc::RowArena arena;
    for (std::int64_t y = 0; y < s.height; y += 3) {
      source->rows(y, std::min<std::int64_t>(3, s.height - y), arena);
      arena.release();
    }
  } catch (const ooc::Error&) {
  }
  return 0;
}
