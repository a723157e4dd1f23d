// Reduced-resolution levels of an image built from its rows as they stream: level k+1 is the
// 2 x 2 mean of level k (sums in float64, integers rounded half to even; an odd last row or
// column is averaged with itself). Memory: one pending row per level. Shared by the Zarr and
// TIFF writers, and by the step that joins the parts of a pyramid written in parts. A volume's
// levels halve each plane, or (halve_z) are 2 x 2 x 2 means, an odd last plane with itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ooc/image.hpp"

namespace ooc {

// The geometry of level k (level 0 is `base`): each side halved, rounded up; a volume's depth too
// where halve_z says.
ImageSpec pyramid_level(const ImageSpec& base, int k, bool halve_z = false);
// How many levels below level 0 until the smaller side is under `min_side` (at least 1 when the
// image is larger than that, 0 otherwise).
int pyramid_auto_levels(const ImageSpec& base, std::int64_t min_side = 256);

// Row r of level k (spec `upper` is level k - 1) from rows 2r and 2r + 1 of level k - 1 (`b`
// nullptr: 2r is the image's last row, averaged with itself), written to dst. With a nodata value
// the mean is of the block's valid samples only (holes: the value, and NaN), rounded as without
// (a block without holes gives the same bytes), and nodata where the block has none.
void pyramid_reduce_row(const ImageSpec& upper, const std::byte* a, const std::byte* b,
                        std::byte* dst, std::optional<double> nodata = std::nullopt);
// Row r of plane p of a level halving z from rows 2r and 2r + 1 (a, b) of plane 2p and the same
// rows (c, d) of plane 2p + 1: the mean of the eight samples, rounded once as
// pyramid_reduce_row rounds (b and d nullptr: the plane's last row, averaged with itself).
void pyramid_reduce_row_z(const ImageSpec& upper, const std::byte* a, const std::byte* b,
                          const std::byte* c, const std::byte* d, std::byte* dst);

// Rows of a level that a writer could not make whole units of (a unit: the rows one chunk, strip
// or tile row holds), left in a file of raw rows [lo, hi) of level `level` for whoever joins the
// writers' work.
// A `source` edge holds rows of a level that the writer made inside whole unit rows, kept only
// because the level row below them is made from a row of another writer: they are read to reduce
// that row, never written again.
struct LevelEdge {
  int level = 0;
  std::int64_t lo = 0, hi = 0;
  std::string path;
  bool source = false;
};

// Joins what the writers of one pyramid left at their boundaries, level by level: the rows of
// the edge files, and the level rows whose two source rows two writers made (reduced here from
// the level above's joined rows and source edges). For every unit row these touch, write(k,
// unit_row, rows) gets its rows (contiguous) when all are there, and incomplete(k, unit_row, first,
// end) is called when not (it throws, or returns where a writer made that unit row whole after
// all). spec(k) is level k's geometry, unit_rows(k) its unit height; `temp` is named in the error
// about a damaged edge file.
void join_pyramid_edges(
    int levels, const std::function<ImageSpec(int)>& spec,
    const std::function<std::int64_t(int)>& unit_rows, const std::vector<LevelEdge>& edges,
    const std::string& temp, const std::function<void(int, std::int64_t, const std::byte*)>& write,
    const std::function<void(int, std::int64_t, std::int64_t, std::int64_t)>& incomplete,
    std::optional<double> nodata = std::nullopt);

// Takes the rows of level 0 that one writer covers, [begin, end) of the image, in order, and
// emits every row of levels 1..levels that those rows alone determine. Where the range starts
// at an odd row of some level, that row's partner lies before the range: the row is emitted at
// its level but makes nothing below it (whoever joins the parts does that). Likewise at the end,
// unless the range ends at the image's bottom, where an odd last row is averaged with itself.
// Such a row without its partner (at most one at each end of the range, per level above the
// last) goes to `orphan`, so that the writer can leave it for the join: whatever the unit height,
// the level row it makes with the other writer's row can then always be made.
class PyramidBuilder {
 public:
  // emit(level, row, data): row `row` of level `level` (>= 1), valid during the call; orphan
  // likewise, for rows of levels 0..levels-1.
  using Emit = std::function<void(int level, std::int64_t row, const std::byte* data)>;
  PyramidBuilder(const ImageSpec& base, int levels, std::int64_t begin, std::int64_t end, Emit emit,
                 Emit orphan = nullptr);
  // Rows [y, y + n) of level 0, `stride` bytes apart; y continues where the last call ended.
  void push(std::int64_t y, std::int64_t n, const std::byte* data, std::size_t stride);
  // The first row of level k this writer makes (level 0: begin) and the end of what it makes
  // when it covers [begin, end) entirely.
  std::int64_t first_row(int k) const noexcept { return first_[k]; }
  std::int64_t end_row(int k) const noexcept { return end_[k]; }
  int levels() const noexcept { return levels_; }
  // Levels of the valid samples' means (pyramid_reduce_row); before the first push.
  void set_nodata(std::optional<double> nodata) { nodata_ = nodata; }

 private:
  ImageSpec base_;
  int levels_;
  std::optional<double> nodata_;
  std::vector<ImageSpec> specs_;
  std::vector<std::int64_t> first_, end_;
  std::vector<std::vector<std::byte>> pending_;  // level k's even row awaiting its partner
  std::vector<std::int64_t> pending_row_;        // its index (-1: none)
  std::vector<std::vector<std::byte>> carried_;  // level k's pending row, taken by a push
  std::vector<std::vector<std::byte>> blocks_;   // level k rows of a push, reduced in parallel
  bool at_bottom_;
  Emit emit_, orphan_;
};

// The levels of a volume written whole, its stacked rows in order from the first: each plane's
// 2 x 2 means (every plane kept), or with halve_z the 2 x 2 x 2 means of planes 2p and 2p + 1 (an
// odd last plane averaged with itself, which is its 2 x 2 mean). Memory: halving z, a plane of
// each level but the last (the even plane awaiting its partner); a pending row per level.
class VolumePyramidBuilder {
 public:
  using Emit = PyramidBuilder::Emit;  // (level >= 1, stacked row of that level, data)
  VolumePyramidBuilder(const ImageSpec& base, int levels, bool halve_z, Emit emit);
  // Rows [y, y + n) of level 0 (stacked), `stride` bytes apart; y continues where the last ended.
  void push(std::int64_t y, std::int64_t n, const std::byte* data, std::size_t stride);
  // The memory it holds at most.
  static std::size_t held_bytes(const ImageSpec& base, int levels, bool halve_z);

 private:
  void push_level(int k, std::int64_t y, std::int64_t n, const std::byte* data, std::size_t stride);

  int levels_;
  bool halve_z_;
  std::vector<ImageSpec> specs_;
  std::vector<std::vector<std::byte>> even_;     // level k's even plane (halving z)
  std::vector<std::vector<std::byte>> pending_;  // level k's even row awaiting its partner
  std::vector<std::int64_t> pending_row_;        // its stacked index (-1: none)
  std::vector<std::vector<std::byte>> carried_, blocks_;
  Emit emit_;
};

}  // namespace ooc
