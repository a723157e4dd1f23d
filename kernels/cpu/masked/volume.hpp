// A volume's masked filters in 3-D (issue 48, nodata): normalized convolution, sum(k x m) /
// sum(k m) over each 3-D window's valid samples, of a separable filter (z pass, row pass, column
// pass over x m, m and |k| m) or of a 3-D kernel (the direct sum), and rank filters over a 3-D
// window's valid samples (a box or a footprint). A band is CpuBand's: 2 plane_halo + 1 planes of
// out_rows + 2 halo rows each. Every output is computed by the same sums in the same order
// whatever the band, plane or thread, so the bytes never depend on the plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/convolution/band_args.hpp"

namespace ooc::kernels::masked {

struct VolumeNormalizedArgs : BandArgs {
  std::int64_t plane_halo = 0, halo = 0;  // the band's (at least rz and ry)
  // Separable: z_taps (2 rz + 1), col_taps (2 ry + 1), row_taps (2 rx + 1), correlation order;
  // z_abs: the magnitudes of the z taps as min-weight weighs them (null: |z_taps|; taps folded
  // over the volume's planes fold their magnitudes apart). 3-D: taps3d (2 rz + 1 planes of 2 ry + 1
  // rows of 2 rx + 1, correlation order) and no per-axis taps.
  const double* z_taps = nullptr;
  const double* z_abs = nullptr;
  const double* col_taps = nullptr;
  const double* row_taps = nullptr;
  const double* taps3d = nullptr;
  std::int64_t rz = 0, ry = 0, rx = 0;
  double nodata = 0;      // NaN: NaN only
  double min_weight = 0;  // the least fraction of total_abs on valid samples
  double total_abs = 1;   // the sum of the kernel's |taps| before any folding
  bool fill = false;
  bool f64 = false;
};

// Filters one band (over TBB threads); `scratch` holds the band's sums between the passes.
void volume_normalized_band(const VolumeNormalizedArgs& args, std::vector<std::byte>& scratch);
// The bytes of `scratch` for a band, and of one thread's rows.
std::size_t volume_normalized_band_bytes(const VolumeNormalizedArgs& args);
std::size_t volume_normalized_thread_bytes(const VolumeNormalizedArgs& args);

// A rank filter over a 3-D window's valid samples: of n valid samples the one of rank
// r (n - 1) / (count - 1), r being scipy's among the window's count samples (masked.hpp's rule);
// nodata where none is valid or the output's own sample is a hole.
struct VolumeRankArgs {
  std::int64_t width = 0;
  int channels = 1;
  SampleType type = SampleType::f32;
  BorderMode border = BorderMode::reflect;
  double cval = 0, nodata = 0;
  // The window around (z, y, x): planes z - front .. z - front + d - 1, rows y - top .. , columns
  // x - left .., the samples where mask (d x h x w) is 1 (null: all).
  std::int64_t front = 0, d = 1, top = 0, h = 1, left = 0, w = 1;
  const std::uint8_t* mask = nullptr;
  std::int64_t rank = 0, count = 1;
  const std::byte* const* rows = nullptr;
  std::int64_t plane_halo = 0, halo = 0, out_rows = 0;
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  // The output holds the unmasked filter's samples already (right wherever a window has no
  // hole): only windows with a hole are computed again.
  bool unmasked_done = false;
};
void volume_rank_band(const VolumeRankArgs& args, std::vector<std::byte>& scratch);
std::size_t volume_rank_band_bytes(const VolumeRankArgs& args);

}  // namespace ooc::kernels::masked
