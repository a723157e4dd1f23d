// The table of provisional labels (label_table.hpp): a vector, moved into a mapped file that grows
// by doubling once the vector would pass its budget.
#include "ops/labels/label_table.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ooc/error.hpp"

namespace ooc::detail {

LabelTable::LabelTable(std::size_t memory_bytes, std::string dir)
    : memory_bytes_(memory_bytes), dir_(std::move(dir)) {}

LabelTable::~LabelTable() {
  clear();
}

void LabelTable::clear() {
  if (fd_ >= 0) {
    ::munmap(data_, capacity_ * sizeof(std::uint64_t));
    ::close(fd_);
    fd_ = -1;
  }
  std::vector<std::uint64_t>().swap(memory_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

void LabelTable::resize(std::uint64_t n) {
  if (n <= capacity_) {
    size_ = n;
    return;
  }
  const std::uint64_t want = std::max<std::uint64_t>({n, capacity_ * 2, std::uint64_t{1} << 14});
  const std::size_t bytes = want * sizeof(std::uint64_t);
  if (fd_ < 0 && bytes <= memory_bytes_) {
    memory_.resize(want);
    data_ = memory_.data();
    capacity_ = want;
    size_ = n;
    return;
  }
  if (fd_ < 0) {
    // The scratch file: unlinked as soon as it exists, so nothing is left behind however the run
    // ends; its pages go to the file system when memory is short.
    std::string dir = dir_;
    if (dir.empty()) {
      const char* t = std::getenv("TMPDIR");
      dir = t && *t ? t : "/tmp";
    }
    std::string path = dir + "/ooc-labels-XXXXXX";
    fd_ = ::mkstemp(path.data());
    if (fd_ < 0)
      throw Error(ErrorKind::io,
                  system_message("cannot make the label table's scratch file (set TMPDIR to a "
                                 "writable folder)",
                                 path, errno));
    ::unlink(path.c_str());
    if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) {
      const int e = errno;
      clear();
      throw Error(ErrorKind::io,
                  system_message("cannot size the label table's scratch file in", dir, e));
    }
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      clear();
      throw Error(ErrorKind::io,
                  system_message("cannot map the label table's scratch file in", dir, e));
    }
    auto* q = static_cast<std::uint64_t*>(p);
    std::copy_n(memory_.data(), std::min<std::uint64_t>(size_, memory_.size()), q);
    std::vector<std::uint64_t>().swap(memory_);
    data_ = q;
  } else {
    if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0)
      throw Error(ErrorKind::io, system_message("cannot grow the label table's scratch file to " +
                                                    std::to_string(bytes) + " bytes",
                                                dir_.empty() ? "$TMPDIR" : dir_, errno));
    void* p = ::mremap(data_, capacity_ * sizeof(std::uint64_t), bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED)
      throw Error(ErrorKind::io, system_message("cannot map the label table's scratch file",
                                                dir_.empty() ? "$TMPDIR" : dir_, errno));
    data_ = static_cast<std::uint64_t*>(p);
  }
  capacity_ = want;
  size_ = n;
}

namespace {

// FNV-1a over the words, a word at a time: a damaged or foreign file, not an adversary.
std::uint64_t mix(std::uint64_t h, const std::uint64_t* w, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) h = (h ^ w[i]) * 0x100000001b3ULL;
  return h;
}
constexpr std::uint64_t kSeed = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;  // words a read or write

}  // namespace

std::uint64_t save_words(const std::string& path, const std::vector<Words>& arrays) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(ErrorKind::io, system_message("cannot write", tmp, errno));
  std::uint64_t h = kSeed;
  bool ok = true;
  for (const Words& a : arrays) {
    h = mix(h, a.first, a.second);
    ok = ok && std::fwrite(a.first, sizeof(std::uint64_t), a.second, f) == a.second;
  }
  ok = std::fflush(f) == 0 && ok;
  const int err = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = ok ? errno : err;
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::io,
                system_message("cannot write the label table for a resume", path, e) +
                    ": free some space beside the output");
  }
  return h;
}

bool load_words(const std::string& path, const std::vector<Words>& arrays, std::uint64_t check) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  std::uint64_t h = kSeed;
  bool ok = true;
  for (const Words& a : arrays)
    for (std::uint64_t at = 0; ok && at < a.second; at += kChunk) {
      const std::uint64_t n = std::min(kChunk, a.second - at);
      ok = std::fread(a.first + at, sizeof(std::uint64_t), n, f) == n;
      if (ok) h = mix(h, a.first + at, n);
    }
  std::uint64_t extra = 0;
  ok = ok && std::fread(&extra, 1, 1, f) == 0;
  std::fclose(f);
  return ok && h == check;
}

}  // namespace ooc::detail
