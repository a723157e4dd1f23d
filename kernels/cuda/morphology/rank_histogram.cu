// CUDA rank filters of u8, u16 and i16 rectangles and footprints of any size (up to 65535
// samples) by sliding histograms: the algorithm and the counts' layout are rank_histogram.hpp's
// (run_task, Counts), shared with its CPU emulation; this file gives each thread its region of the
// block's dynamic shared memory and launches one warp per block, as many blocks as there are tasks.
// The counts are bytes where the window has fewer than 256 samples: half the shared memory, twice
// the warps on an SM (16-bit samples: 17 KB a block, 13 blocks of an SM's 228 KB; 16-bit counts 34
// KB, 6).
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cuda/check.cuh"
#include "ooc/detail/sample_type.hpp"
#include "rank.cuh"
#include "rank_histogram.hpp"

namespace ooc::cuda {
namespace {

namespace rh = rank_hist;

template <class T, class C>
__global__ void __launch_bounds__(rh::kThreads)
    rank_histogram_kernel(rh::Params p, rh::Tasks tasks) {
  extern __shared__ unsigned counts[];
  const int lane = static_cast<int>(threadIdx.x);
  // Each thread touches its own region only: no barrier anywhere.
  const rh::Counts<C> h{counts + lane * rh::region_words<C>(rh::Key<T>::wide)};
  for (std::int64_t task = blockIdx.x; task < tasks.count(); task += gridDim.x)
    rh::run_task<T, C>(p, tasks, task, lane, h);
}

template <class T, class C>
void launch(const rh::Params& p, const rh::Tasks& tasks, cudaStream_t stream) {
  const std::size_t shared = std::size_t{4} * rh::kThreads * rh::region_words<C>(rh::Key<T>::wide);
  // Tasks beyond the grid are taken in turn by the blocks (a band of a huge width).
  const std::int64_t blocks = std::min<std::int64_t>(tasks.count(), std::int64_t{1} << 24);
  rank_histogram_kernel<T, C>
      <<<static_cast<unsigned>(blocks), rh::kThreads, shared, stream>>>(p, tasks);
}

template <class T>
void launch(const RankLaunch& l, cudaStream_t stream) {
  rh::Params p;
  p.in = l.in;
  p.in_stride = l.in_stride;
  p.first_row = l.first_row;
  p.image_height = l.image_height;
  p.width = l.width;
  p.channels = l.channels;
  p.rows = l.rows;
  p.cols = l.cols;
  p.left = l.left;
  p.rank = l.rank;
  if (l.footprint != nullptr) {
    p.runs = rh::table_runs(l.footprint);
    p.run_count = l.footprint_runs;
    p.spans = rh::table_spans(l.footprint, l.footprint_runs);
    p.span_count = l.footprint_spans;
  }
  p.border = l.border;
  p.cval_key = rh::constant_key<T>(l.border_value);
  p.out = l.out;
  p.out_stride = l.out_stride;
  p.out_rows = l.out_rows;
  const rh::Tasks tasks =
      rh::plan_tasks(l.width, l.channels, l.out_rows, l.rows, rh::kTargetBlocks);
  if (rh::byte_counts(l.count))
    launch<T, std::uint8_t>(p, tasks, stream);
  else
    launch<T, std::uint16_t>(p, tasks, stream);
}

}  // namespace

void rank_histogram_band_async(const RankLaunch& l, cudaStream_t stream) {
  if (l.out_rows <= 0 || l.width <= 0) return;
  switch (l.type) {
    case SampleType::u8:
      launch<std::uint8_t>(l, stream);
      break;
    case SampleType::u16:
      launch<std::uint16_t>(l, stream);
      break;
    case SampleType::i16:
      launch<std::int16_t>(l, stream);
      break;
    default:
      return;
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
