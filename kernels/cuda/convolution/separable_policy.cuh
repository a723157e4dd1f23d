// Launch constants of the separable kernels: one policy struct per kernel family (CUB's style, no
// literals in the kernels). The kernels and the dispatch take them as template parameters, so a
// benchmark can build several tunings side by side in one program; the default arguments are
// the library's tuning (tools/bench/tune_kernels.sh chose them; docs/design.md, "Separable kernels
// on the GPU").
#pragma once

#include <cstddef>
#include <utility>

namespace ooc::cuda::separable {

// The generic kernels (any radius, float or double accumulation: separable_generic.cuh).
template <int RowThreads = 256, int RowTile = 2048, int ColThreads = 128, int Run = 16>
struct GenericPolicy {
  static constexpr int kRowThreads = RowThreads;
  static constexpr int kRowTile = RowTile;  // output samples per block (whole pixels of it)
  static constexpr int kColThreads = ColThreads;
  static constexpr int kRun = Run;  // output rows per thread in the column pass
};

// The tile kernels specialized on the radius (separable_specialized.cuh): the fused kernel, its
// one-channel f32 "quad" form and the two-pass path's row kernel. The parameters come in the
// order of a tools/bench/tune_kernels.sh setting.
template <int Threads = 256, int TileSamples = 128, int FusedRows = 32, int FusedRun = 8,
          int MinBlocks = 4, int LoadBatch = 6, int MinBlocksU8 = 5, int LoadBatchU8 = 3,
          int FusedRunU8 = 16, int QuadMinBlocks = 5>
struct TilePolicy {
  static constexpr int kThreads = Threads;  // fused and row kernels
  // A tile's output width in samples (rounded down to a multiple of channels x kRowJob).
  static constexpr int kTileSamples = TileSamples;
  static constexpr int kRowJob = 8;             // row outputs of one thread from one window
  static constexpr int kFusedRows = FusedRows;  // output rows of a fused tile
  // Column outputs of one thread in the fused kernel: 8 for f32 and u16 (two column jobs per
  // thread; 2-4% faster than 16 at radius 1-3), 16 for u8 (3% faster there), measured side by
  // side with tools/bench/tune_kernels.sh (docs/design.md, "Separable kernels on the GPU").
  static constexpr int fused_run(std::size_t sample_bytes) {
    return sample_bytes == 1 ? FusedRunU8 : FusedRun;
  }
  static constexpr int kRowRows = 32;  // rows of a row-kernel tile (a warp's lanes)
  // Fused and row kernels: 4 resident blocks of 256 threads allow at most 64 registers, 5 at
  // most 51. Global loads in flight per thread when filling a tile: with f32 and u16 samples
  // all of a thread's tile rows at radius <= 8, one round trip to DRAM. u8 tiles hold few
  // 16-byte vectors, so a fifth resident block gains more there (tools/bench/tune_kernels.sh;
  // docs/design.md).
  static constexpr int min_blocks(std::size_t sample_bytes) {
    return sample_bytes == 1 ? MinBlocksU8 : MinBlocks;
  }
  static constexpr int load_batch(std::size_t sample_bytes) {
    return sample_bytes == 1 ? LoadBatchU8 : LoadBatch;
  }
  // Resident blocks of the quad kernel: 5 (at most 48 registers) where the shared memory allows 5,
  // that is up to radius 4, else 4.
  static constexpr int quad_min_blocks(int R) { return R <= 4 ? QuadMinBlocks : 4; }
  static constexpr int kFusedMaxRadius = 8;
  static constexpr int kMaxChannels = kTileSamples / kRowJob;

  static_assert(FusedRows % FusedRun == 0 && FusedRows % FusedRunU8 == 0,
                "a fused tile's rows are whole column runs");
  static_assert(kRowRows == 32, "the row kernel gives each lane of a warp one row");
};

// The column kernel of the two-pass path (separable_specialized.cuh).
template <int Threads = 128, int Run = 16, int MinBlocks = 4, int MinBlocksLarge = 3>
struct ColumnPolicy {
  static constexpr int kColumnThreads = Threads;
  static constexpr int kColumnRun = Run;  // column outputs of one thread in the column kernel
  // Resident blocks per SM: 4 allow at most 128 registers; 3 at radius >= 32, at most 168.
  static constexpr int kColumnMinBlocks = MinBlocks;
  static constexpr int kColumnMinBlocksLarge = MinBlocksLarge;
};

// Radii with specialized kernels. Only the exact radius: padding taps with zeros would change
// results with Inf or NaN samples (0 * Inf = NaN).
template <int... R>
using RadiusList = std::integer_sequence<int, R...>;
using FastRadii = RadiusList<1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64>;

// Everything the dispatch (separable_dispatch.cuh) launches with: a policy per family and the
// radii that get specialized kernels. SeparablePolicy<> is the library's.
template <class TileT = TilePolicy<>, class RadiiT = FastRadii, class ColumnT = ColumnPolicy<>,
          class GenericT = GenericPolicy<>>
struct SeparablePolicy {
  using Tile = TileT;
  using Radii = RadiiT;
  using Column = ColumnT;
  using Generic = GenericT;
};

}  // namespace ooc::cuda::separable
