// The Zarr reader's chunk files: a chunk (or a shard, and a chunk inside it through the shard's
// index) read as stored, through paths checked to stay inside the store: a store is data from
// elsewhere, and a link in it must not make ooc read (and write out) a file it points to.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "formats.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "zarr_store.hpp"

namespace ooc::zarr_read {
namespace {

// n bytes at `offset` of fd into out (fewer where the file ends first).
void pread_into(int fd, std::uint64_t offset, std::size_t n, std::vector<std::byte>& out,
                const std::string& file) {
  out.resize(n);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out.data() + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(read_error_kind(errno), system_message("cannot read", file, errno));
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  out.resize(done);
}

// No encoder makes a chunk much larger than its samples (blosc adds 16 bytes, zstd and zlib a few
// per block): a stored chunk larger than this is not one of the array's.
std::uint64_t max_stored(std::size_t chunk_bytes) {
  return chunk_bytes + chunk_bytes / 8 + 4096;
}

}  // namespace

int open_chunk(const Store& s, const std::string& file, const std::string& where, struct stat& st) {
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return -1;
    throw Error(read_error_kind(errno), system_message("cannot read", file, errno));
  }
  std::string target = file;
  if (S_ISLNK(st.st_mode) || s.meta.dimension_separator == "/") {
    char buf[PATH_MAX];
    if (!::realpath(file.c_str(), buf)) {
      if (errno == ENOENT) fail(where + " is a link to nothing (dangling)");
      throw Error(read_error_kind(errno), system_message("cannot resolve", file, errno));
    }
    target = buf;
    if (!under(target, s.root))
      fail(where + " leads to '" + target + "', outside the store '" + s.root +
           "': ooc refuses links out of a store");
    if (::stat(target.c_str(), &st) != 0)
      throw Error(read_error_kind(errno), system_message("cannot read", file, errno));
  }
  // Opening a device or a FIFO could block or have effects: only files are opened.
  if (S_ISDIR(st.st_mode)) fail(where + " is a directory, not a chunk file");
  if (!S_ISREG(st.st_mode)) fail(where + " is not a regular file");
  const int fd = ::open(target.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) throw Error(read_error_kind(errno), system_message("cannot open", file, errno));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(where + " is not a regular file");
  }
  return fd;
}

bool read_chunk(const Store& s, std::size_t chunk_bytes, const std::string& file,
                const std::string& where, std::vector<std::byte>& out) {
  struct stat st {};
  const int fd = open_chunk(s, file, where, st);
  if (fd < 0) return false;
  try {
    if (static_cast<std::uint64_t>(st.st_size) > max_stored(chunk_bytes))
      fail(where + " is " + std::to_string(st.st_size) + " bytes, more than a chunk of " +
           std::to_string(chunk_bytes) + " bytes encodes to: it is not this array's chunk");
    pread_into(fd, 0, static_cast<std::size_t>(st.st_size), out, file);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return true;
}

// Zarr 3 sharding: inner chunk (cy, cx, ck) out of the shard file that holds it, through the
// shard's index (checked against its CRC-32C where the array has one); false where the shard
// or the chunk in it is absent (fill_value).
bool read_from_shard(const Store& s, std::size_t chunk_bytes, const std::string& file,
                     const std::string& where, std::int64_t cy, std::int64_t cx, std::int64_t ck,
                     std::int64_t cz, std::vector<std::byte>& out) {
  const zarr::ArrayMeta& m = s.meta;
  std::size_t count = 1, at = 0;
  for (std::size_t i = 0; i < m.shape.size(); ++i) {
    const std::int64_t per = m.shard[i] / m.chunks[i];
    const int a = static_cast<int>(i);
    const std::int64_t idx = a == m.y_axis       ? cy
                             : a == m.y_axis + 1 ? cx
                             : a == m.c_axis     ? ck
                             : a == m.z_axis     ? cz
                                                 : 0;
    at = at * static_cast<std::size_t>(per) + static_cast<std::size_t>(idx % per);
    count *= static_cast<std::size_t>(per);
  }
  if (count > (std::size_t{1} << 24))
    fail(where + ": a shard of " + std::to_string(count) + " chunks is more than ooc reads");
  struct stat st {};
  const int fd = open_chunk(s, file, where, st);
  if (fd < 0) return false;
  try {
    const std::uint64_t index_bytes = count * 16 + (m.index_crc ? 4 : 0);
    const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
    if (size < index_bytes) fail(where + " is shorter than its shard index: truncated");
    thread_local std::vector<std::byte> index;
    pread_into(fd, m.index_at_end ? size - index_bytes : 0, index_bytes, index, file);
    if (index.size() != index_bytes) fail(where + ": its shard index cannot be read whole");
    if (m.index_crc) {
      std::uint32_t crc = 0;
      std::memcpy(&crc, index.data() + count * 16, 4);
      if (zarr::crc32c(index.data(), count * 16) != crc)
        fail(where + ": its shard index fails its CRC-32C (damaged)");
    }
    std::uint64_t off = 0, len = 0;
    std::memcpy(&off, index.data() + at * 16, 8);
    std::memcpy(&len, index.data() + at * 16 + 8, 8);
    if (off == ~std::uint64_t{0} && len == ~std::uint64_t{0}) {
      ::close(fd);
      return false;
    }
    if (len > max_stored(chunk_bytes) || off > size || len > size - off)
      fail(where + ": its shard index points outside the file (chunk " + std::to_string(at) +
           " at " + std::to_string(off) + ", " + std::to_string(len) + " bytes)");
    pread_into(fd, off, static_cast<std::size_t>(len), out, file);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return true;
}

}  // namespace ooc::zarr_read
