// RowArena: the memory a slot's input rows live in until the band is done; Source's defaults.
#include <cstring>

#include "ooc/io.hpp"

namespace ooc {

RowArena::RowArena() = default;
RowArena::~RowArena() = default;
RowArena::RowArena(RowArena&&) noexcept = default;
RowArena& RowArena::operator=(RowArena&&) noexcept = default;

std::byte* RowArena::take(std::size_t bytes) {
  band_bytes_ += bytes;
  if (used_ + bytes > buffer_.size()) {
    // Rows handed out earlier in this band must stay where they are: park the block until
    // release(), which then sizes one block for the whole band, so later bands allocate nothing.
    if (used_ != 0) spare_.push_back(std::move(buffer_));
    buffer_ = std::vector<std::byte>(bytes);
    used_ = 0;
  }
  std::byte* p = buffer_.data() + used_;
  used_ += bytes;
  return p;
}

const Metadata& Source::metadata() const noexcept {
  static const Metadata none;
  return none;
}

void Source::read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) {
  RowArena arena;
  const std::byte* p = rows(y0, n, arena);
  std::memcpy(dst, p, static_cast<std::size_t>(n) * spec().row_bytes());
}

void RowArena::keep(std::shared_ptr<const void> mapping) {
  regions_.push_back(std::move(mapping));
}

void RowArena::release() {
  regions_.clear();
  if (!spare_.empty()) {
    spare_.clear();
    buffer_ = std::vector<std::byte>(band_bytes_);
  }
  used_ = 0;
  band_bytes_ = 0;
}

}  // namespace ooc
