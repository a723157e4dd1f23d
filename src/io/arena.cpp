// RowArena: the memory a slot's input rows live in until the band is done; Source's defaults.
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "ooc/io.hpp"

namespace ooc {

// Kept out of io.hpp: a Source's author needs take() and keep(), not how the blocks are reused.
struct RowArena::State {
  std::vector<std::byte> buffer;
  std::vector<std::vector<std::byte>> spare;  // outgrown blocks still holding this band's rows
  std::size_t used = 0;
  std::size_t band_bytes = 0;
  std::vector<std::shared_ptr<const void>> regions;
};

RowArena::RowArena() = default;
RowArena::~RowArena() = default;
RowArena::RowArena(RowArena&&) noexcept = default;
RowArena& RowArena::operator=(RowArena&&) noexcept = default;

// Made at first use, so that an arena nobody fills (and a moved-from one) costs nothing.
RowArena::State& RowArena::state() {
  if (!state_) state_ = std::make_unique<State>();
  return *state_;
}

std::byte* RowArena::take(std::size_t bytes) {
  State& s = state();
  s.band_bytes += bytes;
  if (s.used + bytes > s.buffer.size()) {
    // Rows handed out earlier in this band must stay where they are: park the block until
    // release(), which then sizes one block for the whole band, so later bands allocate nothing.
    if (s.used != 0) s.spare.push_back(std::move(s.buffer));
    s.buffer = std::vector<std::byte>(bytes);
    s.used = 0;
  }
  std::byte* p = s.buffer.data() + s.used;
  s.used += bytes;
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
  state().regions.push_back(std::move(mapping));
}

void RowArena::release() {
  if (!state_) return;  // nothing taken or kept
  State& s = *state_;
  s.regions.clear();
  if (!s.spare.empty()) {
    s.spare.clear();
    s.buffer = std::vector<std::byte>(s.band_bytes);
  }
  s.used = 0;
  s.band_bytes = 0;
}

}  // namespace ooc
