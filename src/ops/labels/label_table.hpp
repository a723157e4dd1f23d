// The label stage's table of provisional labels (one 64-bit entry each: a union-find parent, then
// the final label): in memory while small, in a mapped scratch file past a budget, so that an
// image of 10^9 components is labelled under --mem-limit (the page cache holds what fits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ooc::detail {

class LabelTable {
 public:
  // In memory up to `memory_bytes`, then in a file made (and unlinked at once) in `dir`, or in
  // $TMPDIR (else /tmp) where `dir` is empty.
  explicit LabelTable(std::size_t memory_bytes, std::string dir = {});
  ~LabelTable();
  LabelTable(const LabelTable&) = delete;
  LabelTable& operator=(const LabelTable&) = delete;

  // n entries, the first ones kept; new entries are unset. The pointer may move.
  void resize(std::uint64_t n);
  std::uint64_t* data() noexcept { return data_; }
  const std::uint64_t* data() const noexcept { return data_; }
  std::uint64_t size() const noexcept { return size_; }
  bool in_file() const noexcept { return fd_ >= 0; }
  void clear();  // back to no entries, in memory

 private:
  std::size_t memory_bytes_;
  std::string dir_;
  std::vector<std::uint64_t> memory_;
  int fd_ = -1;
  std::uint64_t* data_ = nullptr;
  std::uint64_t size_ = 0, capacity_ = 0;
};

// What pass 2 needs saved for a resume (the table, each band's offset and first row): arrays of
// 64-bit words one after the other in `path`, written beside it and renamed into place once
// whole. save_words returns a checksum of the words, which the caller keeps in the job's state
// file (written after, so that a state always names a whole file); load_words reads the arrays
// back into the places given (the sizes saved) and says false where the file is missing, short,
// longer, or its words differ from the checksum.
using Words = std::pair<std::uint64_t*, std::uint64_t>;
std::uint64_t save_words(const std::string& path, const std::vector<Words>& arrays);
bool load_words(const std::string& path, const std::vector<Words>& arrays, std::uint64_t check);

}  // namespace ooc::detail
