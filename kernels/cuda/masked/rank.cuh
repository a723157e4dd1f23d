// Masked rank filters on the GPU (issue 48, nodata): the rule of kernels/cpu/masked/masked.hpp,
// one thread an output: a window's valid samples (the border rule by index, the constant
// counting where it is no hole), the one of rank r (n - 1) / (count - 1) among its n valid
// samples, nodata where none or where the output's own sample is a hole. Windows of up to
// kMaskedRankMaxSamples are gathered and selected by counting; larger ones by the value's key a
// bit at a time (radix select), reading the window once per bit. Selections only move samples:
// the CPU's bytes, but for which of a -0 and a +0 on the rank's place comes out.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ooc/border.hpp"
#include "ooc/image.hpp"

namespace ooc::cuda {

// The largest window (samples of the footprint) selected by counting.
inline constexpr std::int64_t kMaskedRankMaxSamples = 64;

// The planes a window reaches at most (a volume's 3-D window of up to 63 planes).
inline constexpr int kMaskedRankMaxPlanes = 63;

struct MaskedRankLaunch {
  // The window's planes, first to last: the device address of the band's first output row in
  // each (rows in_stride apart, the band's halo rows above and below it; rows of the constant
  // border outside the image are not staged), null for a plane of the constant border outside
  // the volume; `own`, the output's plane. An image has one plane, its own.
  const std::byte* planes[kMaskedRankMaxPlanes] = {};
  const std::byte* own = nullptr;
  std::size_t in_stride = 0;
  std::int64_t y0 = 0, image_height = 0, out_rows = 0, width = 0;  // y0: output row 0's image row
  int channels = 1;
  SampleType type = SampleType::f32;  // the output's too
  std::byte* out = nullptr;
  std::size_t out_stride = 0;
  BorderMode border = BorderMode::reflect;
  double cval = 0, nodata = 0;
  // The window around (y, x) in each of its d planes: rows y - top .. + h - 1, columns
  // x - left .. + w - 1, where mask (device memory, d x h x w; null: all) is 1; rank among its
  // count samples.
  std::int64_t d = 1, top = 0, left = 0, h = 1, w = 1, rank = 0, count = 1;
  const std::uint8_t* mask = nullptr;
  std::int64_t front = 0;  // the window's first plane is z - front (the host's, to fill planes)
};

void masked_rank_async(const MaskedRankLaunch& l, cudaStream_t stream);

}  // namespace ooc::cuda
