// Reduced-resolution levels of an image built from its rows as they stream: level k+1 is the
// 2 x 2 mean of level k (sums in float64, integers rounded half to even; an odd last row or
// column is averaged with itself). Memory: one pending row per level. Shared by the Zarr and
// TIFF writers, and by the step that joins the parts of a pyramid written in parts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "ooc/image.hpp"

namespace ooc {

// The geometry of level k (level 0 is `base`): each side halved, rounded up.
ImageSpec pyramid_level(const ImageSpec& base, int k);
// How many levels below level 0 until the smaller side is under `min_side` (at least 1 when the
// image is larger than that, 0 otherwise).
int pyramid_auto_levels(const ImageSpec& base, std::int64_t min_side = 256);

// Row r of level k (spec `upper` is level k - 1) from rows 2r and 2r + 1 of level k - 1 (`b`
// nullptr: 2r is the image's last row, averaged with itself), written to dst.
void pyramid_reduce_row(const ImageSpec& upper, const std::byte* a, const std::byte* b,
                        std::byte* dst);

// Takes the rows of level 0 that one writer covers, [begin, end) of the image, in order, and
// emits every row of levels 1..levels that those rows alone determine. Where the range starts
// at an odd row of some level, that row's partner lies before the range: the row is emitted at
// its level but makes nothing below it (whoever joins the parts does that). Likewise at the end,
// unless the range ends at the image's bottom, where an odd last row is averaged with itself.
class PyramidBuilder {
 public:
  // emit(level, row, data): row `row` of level `level` (>= 1), valid during the call.
  using Emit = std::function<void(int level, std::int64_t row, const std::byte* data)>;
  PyramidBuilder(const ImageSpec& base, int levels, std::int64_t begin, std::int64_t end,
                 Emit emit);
  // Rows [y, y + n) of level 0, `stride` bytes apart; y continues where the last call ended.
  void push(std::int64_t y, std::int64_t n, const std::byte* data, std::size_t stride);
  // The first row of level k this writer makes (level 0: begin) and the end of what it makes
  // when it covers [begin, end) entirely.
  std::int64_t first_row(int k) const noexcept { return first_[k]; }
  std::int64_t end_row(int k) const noexcept { return end_[k]; }
  int levels() const noexcept { return levels_; }

 private:
  void feed(int k, std::int64_t row, const std::byte* data);  // a row of level k
  ImageSpec base_;
  int levels_;
  std::vector<ImageSpec> specs_;
  std::vector<std::int64_t> first_, end_;
  std::vector<std::vector<std::byte>> pending_;  // level k's even row awaiting its partner
  std::vector<std::int64_t> pending_row_;        // its index (-1: none)
  std::vector<std::vector<std::byte>> out_;      // scratch for a reduced row of level k
  std::vector<std::byte> scratch_;               // level 1 rows of a push, reduced in parallel
  bool at_bottom_;
  Emit emit_;
};

}  // namespace ooc
