// A CPU band cut into tiles across the row (BandPlan::tile_cols): each tile is filtered by the
// operation's kernel as an image of its own, with the operation's column halo on each cut side,
// on a thread of its own, and only its columns far enough from a cut are kept. The kernels'
// scratch then follows the tile's width, not the image's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/engine.hpp"

namespace ooc::detail {

class TileRunner {
 public:
  // Tiles of `tile_cols` output columns of an image of `in`, each with `column_halo` columns of
  // context; `out` the output's pixel bytes. Kernel slots from `first_slot` on, one per thread.
  TileRunner(const ImageSpec& in, std::size_t out_pixel_bytes, std::int64_t tile_cols,
             std::int64_t column_halo, BorderMode border, int first_slot);
  ~TileRunner();
  std::int64_t tiles() const noexcept;
  // Runs `kernel` over every tile of `band` (its whole-width rows and output), in parallel.
  void run(CpuKernel& kernel, const CpuBand& band);

 private:
  struct Scratch;
  std::unique_ptr<Scratch> take();
  void give(std::unique_ptr<Scratch> s);

  ImageSpec in_;
  std::size_t out_pixel_ = 0;
  std::int64_t tile_cols_ = 0, halo_ = 0;
  BorderMode border_;
  int first_slot_ = 0;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Scratch>> free_;
};

}  // namespace ooc::detail
