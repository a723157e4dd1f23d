// libFuzzer target for the Zarr v2 reader. The input up to the first NUL is a .zarray (and, after
// a \x01 byte, an OME-Zarr group's .zattrs around the array, its dataset "0"); the rest is the
// bytes of the chunk files "0.0", "0.0.0" and "0/0" (every key layout of chunk (0, 0)). The store
// is opened, read whole and in bands of 3 rows, and described as oocinfo does. Any crash, sanitizer
// report or exception other than ooc::Error is a finding.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "io/formats.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"

namespace {

// Stores whose image or chunks claim more are opened (metadata checks run) but not read, so that
// the fuzzer spends its time on parsing and decoding rather than on allocating.
constexpr std::uint64_t kMaxReadBytes = 16u << 20;
constexpr std::uint64_t kMaxChunks = 4096;

// A group directory holding the array "0".
const std::string& group() {
  static const std::string dir = [] {
    char name[] = "/tmp/ooc-fuzz-zarr-XXXXXX";
    const std::string d = ::mkdtemp(name) ? name : "/tmp/ooc-fuzz-zarr";
    ::mkdir((d + "/0").c_str(), 0700);
    ::mkdir((d + "/0/0").c_str(), 0700);
    std::ofstream(d + "/.zgroup") << "{\"zarr_format\": 2}";
    return d;
  }();
  return dir;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = bytes.find('\0');
  const std::string meta_text = bytes.substr(0, cut);
  const std::size_t cut2 = meta_text.find('\x01');
  const std::string zarray = meta_text.substr(0, cut2);
  const std::string chunk = cut == std::string::npos ? std::string() : bytes.substr(cut + 1);
  const std::string& dir = group();
  const std::string array = dir + "/0";
  write(array + "/.zarray", zarray);
  for (const char* key : {"/0.0", "/0.0.0", "/0/0"}) write(array + key, chunk);
  const bool ome = cut2 != std::string::npos;
  if (ome)
    write(dir + "/.zattrs", meta_text.substr(cut2 + 1));
  else
    ::unlink((dir + "/.zattrs").c_str());
  const std::string path = ome ? dir : array;
  try {
    const auto meta = ooc::zarr::parse_array_json(zarray, "fuzz .zarray");
    // Each chunk costs a file lookup: a store of millions of 1 x 1 chunks is slow, not wrong.
    std::uint64_t chunk_bytes = ooc::sample_bytes(meta.type), chunks = 1;
    for (std::size_t i = 0; i < meta.chunks.size(); ++i) {
      const std::int64_t c = meta.chunks[i];
      chunk_bytes = c > 0 && chunk_bytes <= kMaxReadBytes ? chunk_bytes * std::uint64_t(c) : ~0ull;
      const std::uint64_t n = c > 0 ? std::uint64_t(meta.shape[i] / c + 1) : ~0ull;
      chunks = chunks <= kMaxChunks && n <= kMaxChunks ? chunks * n : ~0ull;
    }
    (void)ooc::describe_zarr_store(path);
    ooc::RawHints hints;
    hints.format = "zarr";
    hints.threads = 2;
    auto source = ooc::open_source(path, hints);
    (void)source->layout();
    const ooc::ImageSpec& s = source->spec();
    if (s.total_bytes() > kMaxReadBytes || chunk_bytes > kMaxReadBytes || chunks > kMaxChunks)
      return 0;
    std::vector<std::byte> all(s.total_bytes());
    source->read_rows(0, s.height, all.data());
    ooc::RowArena arena;
    for (std::int64_t y = 0; y < s.height; y += 3) {
      source->rows(y, std::min<std::int64_t>(3, s.height - y), arena);
      arena.release();
    }
  } catch (const ooc::Error&) {
  }
  return 0;
}
