// The table of provisional labels (label_table.hpp): a vector, moved into a mapped file that grows
// by doubling once the vector would pass its budget.
#include "ops/labels/label_table.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

}  // namespace ooc::detail
