// Tiles across the row (tiles.hpp). A tile's input is the band's own rows from the tile's first
// column of context on (no copy), except under the wrap rule at the image's edges, where the
// columns past the edge are those of the other side and are gathered into a buffer. Every output
// column kept is at least the operation's column halo away from a cut the kernel treated as an
// image edge, so it is computed from the same inputs in the same order as without tiles.
#include "tiles.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace ooc::detail {

struct TileRunner::Scratch {
  std::vector<const std::byte*> rows;
  std::vector<std::byte> in;  // gathered columns (wrap)
  std::unique_ptr<std::byte[]> out;
  std::size_t out_bytes = 0;
};

TileRunner::TileRunner(const ImageSpec& in, std::size_t out_pixel_bytes, std::int64_t tile_cols,
                       std::int64_t column_halo, BorderMode border, int first_slot)
    : in_(in),
      out_pixel_(out_pixel_bytes),
      tile_cols_(std::max<std::int64_t>(1, tile_cols)),
      halo_(column_halo),
      border_(border),
      first_slot_(first_slot) {}

TileRunner::~TileRunner() = default;

std::int64_t TileRunner::tiles() const noexcept {
  return (in_.width + tile_cols_ - 1) / tile_cols_;
}

std::unique_ptr<TileRunner::Scratch> TileRunner::take() {
  std::lock_guard lock(mutex_);
  if (free_.empty()) return std::make_unique<Scratch>();
  auto s = std::move(free_.back());
  free_.pop_back();
  return s;
}

void TileRunner::give(std::unique_ptr<Scratch> s) {
  std::lock_guard lock(mutex_);
  free_.push_back(std::move(s));
}

void TileRunner::run(CpuKernel& kernel, const CpuBand& band) {
  const std::int64_t W = in_.width,
                     rows_in = (band.band.rows + 2 * band.halo) * (2 * band.plane_halo + 1);
  const std::size_t px = in_.pixel_bytes();
  tbb::parallel_for(std::int64_t{0}, tiles(), [&](std::int64_t t) {
    const std::int64_t x0 = t * tile_cols_, x1 = std::min(W, x0 + tile_cols_);
    std::int64_t lo = x0 - halo_, hi = x1 + halo_;
    const bool gather = border_ == BorderMode::wrap && (lo < 0 || hi > W);
    if (!gather) lo = std::max<std::int64_t>(0, lo), hi = std::min(W, hi);
    const std::int64_t w = hi - lo;
    auto s = take();
    s->rows.assign(static_cast<std::size_t>(rows_in), nullptr);
    if (gather) s->in.resize(static_cast<std::size_t>(rows_in * w) * px);
    for (std::int64_t r = 0; r < rows_in; ++r) {
      const std::byte* src = band.rows[r];
      if (src == nullptr) continue;  // a row of the constant border stays one
      if (!gather) {
        s->rows[static_cast<std::size_t>(r)] = src + static_cast<std::size_t>(lo) * px;
        continue;
      }
      std::byte* d = s->in.data() + static_cast<std::size_t>(r * w) * px;
      for (std::int64_t x = lo; x < hi;) {  // runs of columns up to the next edge
        const std::int64_t m = ((x % W) + W) % W, n = std::min(hi - x, W - m);
        std::memcpy(d + static_cast<std::size_t>(x - lo) * px,
                    src + static_cast<std::size_t>(m) * px, static_cast<std::size_t>(n) * px);
        x += n;
      }
      s->rows[static_cast<std::size_t>(r)] = d;
    }
    CpuBand b = band;
    b.in.width = w;
    b.rows = s->rows.data();
    b.partial = nullptr;
    b.slot = first_slot_ + std::max(0, tbb::this_task_arena::current_thread_index());
    const std::size_t out_row = static_cast<std::size_t>(w) * out_pixel_;
    if (band.out.data != nullptr) {
      const std::size_t need = out_row * static_cast<std::size_t>(band.band.rows);
      if (s->out_bytes < need) {
        s->out.reset(new std::byte[need]);
        s->out_bytes = need;
      }
      b.out = BandView{s->out.get(), out_row, band.band.rows, w, band.out.channels, band.out.type};
    }
    // A kernel that runs TBB inside must not take another tile while it waits: that tile would
    // share its slot's state.
    tbb::this_task_arena::isolate([&] { kernel.run(b); });
    if (band.out.data != nullptr)
      for (std::int64_t y = 0; y < band.band.rows; ++y)
        std::memcpy(band.out.row(y) + static_cast<std::size_t>(x0) * out_pixel_,
                    s->out.get() + static_cast<std::size_t>(y) * out_row +
                        static_cast<std::size_t>(x0 - lo) * out_pixel_,
                    static_cast<std::size_t>(x1 - x0) * out_pixel_);
    give(std::move(s));
  });
}

}  // namespace ooc::detail
