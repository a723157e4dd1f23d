// The Zarr writer's files: chunk rows (Zarr 2) and rows of shards (Zarr 3) packed, compressed in
// parallel and written so that each file appears only complete, and the small file and directory
// helpers the store's bookkeeping uses.
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "io/formats.hpp"
#include "io/pyramid.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "zarr_writer.hpp"

namespace ooc::zarr_write {
namespace {

void write_all_fd(int fd, const void* p, std::size_t n, const std::string& path) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      io_fail("cannot write", path, errno);
    }
    c += w;
    n -= static_cast<std::size_t>(w);
  }
}

int remove_entry(const char* p, const struct stat*, int flag, struct FTW*) {
  return flag == FTW_DP ? ::rmdir(p) : ::unlink(p);
}

// The planes of a chunk: `deep` planes (the chunk's depth), `planes` of them in the image,
// `stride` bytes apart in the rows given.
struct Slab {
  std::int64_t deep = 1, planes = 1;
  std::size_t stride = 0;
};

// Each thread's chunk and its compressed bytes, kept from chunk to chunk: fresh buffers of a
// chunk's size cost a mapping, a page fault every 4 KiB and an unmapping each, several times
// the packing and compressing.
struct ChunkScratch {
  std::vector<std::byte> chunk, packed;
};
ChunkScratch& chunk_scratch() {
  thread_local ChunkScratch s;
  return s;
}

// A padded chunk of level k (full size, Zarr's edge chunks; padding is the fill value 0) at
// rows [y0, y0 + n) of `rows` (row_bytes apart, pixels interleaved; each of the slab's planes),
// columns from x0, channel `channel` (the plane of a (c, y, x) array), compressed: the calling
// thread's buffer, valid until its next chunk.
const std::vector<std::byte>& packed_chunk(const StoreInfo& info, const ImageSpec& s,
                                           const std::byte* rows, std::int64_t n, std::int64_t x0,
                                           int channel, const Slab& slab) {
  const std::int64_t ch = info.chunk, w = std::min(ch, s.width - x0);
  const std::size_t px = s.pixel_bytes(), rb = s.row_bytes(), sb = sample_bytes(s.type);
  ChunkScratch& scratch = chunk_scratch();
  std::vector<std::byte>& chunk = scratch.chunk;
  chunk.resize(static_cast<std::size_t>(slab.deep * ch * ch) * sb);
  if (w < ch || n < ch || slab.planes < slab.deep)
    std::fill(chunk.begin(), chunk.end(), std::byte{0});
  for (std::int64_t i = 0; i < slab.planes * n; ++i) {
    const std::int64_t z = i / n, r = i % n;
    std::byte* dst = chunk.data() + static_cast<std::size_t>((z * ch + r) * ch) * sb;
    const std::byte* src = rows + static_cast<std::size_t>(z) * slab.stride +
                           static_cast<std::size_t>(r) * rb + static_cast<std::size_t>(x0) * px +
                           static_cast<std::size_t>(channel) * sb;
    if (s.channels == 1) {
      std::memcpy(dst, src, static_cast<std::size_t>(w) * sb);
      continue;
    }
    for (std::int64_t x = 0; x < w; ++x)
      std::memcpy(dst + static_cast<std::size_t>(x) * sb, src + static_cast<std::size_t>(x) * px,
                  sb);
  }
  if (info.codec.id == "none") return chunk;
  zarr::compress(info.codec, chunk.data(), chunk.size(), sb, scratch.packed);
  return scratch.packed;
}

// Makes the directories of a chunk file's key under `dir` ("0/1/2": dir/0 and dir/0/1).
void make_key_dirs(const std::string& dir, const std::string& key) {
  for (std::size_t at = key.find('/'); at != std::string::npos; at = key.find('/', at + 1))
    make_dir(dir + "/" + key.substr(0, at));
}

}  // namespace

[[noreturn]] void io_fail(const std::string& what, const std::string& path, int err) {
  throw Error(ErrorKind::io, what + " '" + path + "': " + std::strerror(err) + full_hint(err));
}

// `path` appears only complete: written under a name of this process beside it, then renamed.
void write_file_atomic(const std::string& path, const void* data, std::size_t n) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) io_fail("cannot create", tmp, errno);
  try {
    write_all_fd(fd, data, n, tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_fail("cannot write", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_fail("cannot rename into", path, err);
  }
}

void make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return;
  io_fail("cannot create directory", dir, errno);
}

std::string read_text(const std::string& path) {
  std::string s;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t r;
  while ((r = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<std::size_t>(r));
  ::close(fd);
  return s;
}

// Removes a directory tree of ours (links are removed, never followed).
void remove_tree(const std::string& dir) noexcept {
  ::nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Unit row `ur` of level k (a chunk row, or a row of shards), from its rows (contiguous,
// row_bytes apart, the unit row's first row first), compressed in parallel.
void write_unit_row(const std::string& store, const StoreInfo& info, int k, std::int64_t ur,
                    const std::byte* rows) {
  const ImageSpec s = info.level_spec(k);
  const zarr::ArrayMeta meta = level_meta(info, k);
  const std::int64_t ch = info.chunk, unit = info.unit();
  // A volume's unit row: row r of slab z, its planes unit rows apart.
  const std::int64_t z = ur / info.units_down(k);
  ur %= info.units_down(k);
  Slab slab;
  slab.deep = info.planes_deep(k);
  slab.planes = std::min(slab.deep, s.depth - z * slab.deep);
  slab.stride = static_cast<std::size_t>(unit) * s.row_bytes();
  const std::int64_t n = std::min(unit, s.height - ur * unit), cols = ceil_div(s.width, unit);
  const std::size_t rb = s.row_bytes();
  const std::string level_dir = store + "/" + std::to_string(k);
  // A plane per channel (one for an image of one channel).
  const int planes = s.channels;
  for (int c = 0; c < planes; ++c) make_key_dirs(level_dir, unit_key(info, meta, ur, 0, c, z));
  const auto put = [&](std::int64_t j, int c, const std::vector<std::byte>& bytes) {
    write_file_atomic(level_dir + "/" + unit_key(info, meta, ur, j, c, z), bytes.data(),
                      bytes.size());
  };
  if (info.version == 2) {
    tbb::parallel_for(std::int64_t{0}, cols * planes, [&](std::int64_t i) {
      const std::int64_t j = i % cols;
      const int c = static_cast<int>(i / cols);
      put(j, c, packed_chunk(info, s, rows, n, j * ch, c, slab));
    });
    return;
  }
  // Zarr 3: each shard holds (shard / chunk)^2 inner chunks in C order, then their index
  // (offset, size; all ones for a chunk wholly outside the image) and its CRC-32C.
  const std::int64_t per = unit / ch;
  const std::int64_t inner_rows = ceil_div(n, ch), inner_cols = ceil_div(s.width, ch);
  const std::int64_t inner = inner_rows * inner_cols;
  std::vector<std::vector<std::byte>> packed(static_cast<std::size_t>(inner * planes));
  tbb::parallel_for(std::int64_t{0}, inner * planes, [&](std::int64_t i) {
    const std::int64_t r = (i % inner) / inner_cols, c = i % inner_cols;
    packed[static_cast<std::size_t>(i)] =
        packed_chunk(info, s, rows + static_cast<std::size_t>(r * ch) * rb,
                     std::min(ch, n - r * ch), c * ch, static_cast<int>(i / inner), slab);
  });
  tbb::parallel_for(std::int64_t{0}, cols * planes, [&](std::int64_t i) {
    const std::int64_t j = i % cols;
    const int plane = static_cast<int>(i / cols);
    std::vector<std::byte> shard;
    std::vector<std::uint64_t> index(static_cast<std::size_t>(per * per) * 2, ~std::uint64_t{0});
    for (std::int64_t r = 0; r < per; ++r)
      for (std::int64_t c = 0; c < per; ++c) {
        const std::int64_t gr = r, gc = j * per + c;
        if (gr >= inner_rows || gc >= inner_cols) continue;
        const auto& z = packed[static_cast<std::size_t>(plane * inner + gr * inner_cols + gc)];
        const std::size_t at = static_cast<std::size_t>(r * per + c) * 2;
        index[at] = shard.size();
        index[at + 1] = z.size();
        shard.insert(shard.end(), z.begin(), z.end());
      }
    // Little endian, as the index codec says (this machine's order: x86-64 and arm64 Linux).
    const auto* ib = reinterpret_cast<const std::byte*>(index.data());
    const std::size_t ibytes = index.size() * sizeof(std::uint64_t);
    shard.insert(shard.end(), ib, ib + ibytes);
    const std::uint32_t crc = zarr::crc32c(ib, ibytes);
    const auto* cb = reinterpret_cast<const std::byte*>(&crc);
    shard.insert(shard.end(), cb, cb + sizeof crc);
    put(j, plane, shard);
  });
}

}  // namespace ooc::zarr_write
