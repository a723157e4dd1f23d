// CUDA rank filters of u8, u16 and i16 rectangles of any size (up to 65535 samples) by sliding
// histograms: the algorithm is rank_histogram.hpp's run_task, shared with its CPU emulation; this
// file gives it its counts. Coarse counts live in shared memory, bin-major with a block's 64
// threads side by side, so that a warp's 32 threads always hit 32 distinct banks whatever their
// bins; 16-bit fine counts live in global memory (the scratch), a thread's 65536 counts packed
// two to a word and updated by fire-and-forget atomic adds, so that the updates do not wait on
// memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "check.cuh"
#include "ooc/detail/sample_type.hpp"
#include "rank.cuh"
#include "rank_histogram.hpp"

namespace ooc::cuda {
namespace {

namespace rh = rank_hist;

struct SharedCounts {
  std::uint16_t* coarse_;  // this block's [bin][thread]
  unsigned* fine_;         // this thread's kFineWords words (16-bit types)
  int lane_;
  __device__ unsigned coarse(int bin) const { return coarse_[bin * rh::kThreads + lane_]; }
  __device__ void coarse_add(int bin, int d) {
    std::uint16_t& v = coarse_[bin * rh::kThreads + lane_];
    v = static_cast<std::uint16_t>(v + d);
  }
  __device__ void fine_add(unsigned key, int d) {
    // The other half of the word never carries or borrows: counts stay in 0 .. 65535.
    atomicAdd(fine_ + (key >> 1), static_cast<unsigned>(d) << (16 * (key & 1)));
  }
  __device__ void fine_words(int word, unsigned (&w)[4]) const {
    // Volatile: from L2, where this thread's atomic adds went (program order orders them).
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(fine_ + word));
  }
};

template <class T>
__global__ void __launch_bounds__(rh::kThreads)
    rank_histogram_kernel(rh::Params p, rh::Tasks tasks, unsigned* fine) {
  __shared__ std::uint16_t coarse[rh::kCoarseBins * rh::kThreads];
  const int lane = static_cast<int>(threadIdx.x);
  // Each thread touches its own bins only: no barrier anywhere.
  for (int b = 0; b < rh::kCoarseBins; ++b) coarse[b * rh::kThreads + lane] = 0;
  SharedCounts h{coarse, nullptr, lane};
  if constexpr (rh::Key<T>::wide)
    h.fine_ = fine + (static_cast<std::size_t>(blockIdx.x) * rh::kThreads + lane) * rh::kFineWords;
  for (std::int64_t task = blockIdx.x; task < tasks.count(); task += gridDim.x)
    rh::run_task<T>(p, tasks, task, lane, h);
}

template <class T>
void launch(const RankLaunch& l, std::byte* scratch, cudaStream_t stream) {
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
  p.border = l.border;
  p.cval_key = rh::constant_key<T>(l.border_value);
  p.out = l.out;
  p.out_stride = l.out_stride;
  p.out_rows = l.out_rows;
  constexpr bool wide = rh::Key<T>::wide;
  const rh::Tasks tasks = rh::plan_tasks(l.width, l.channels, l.out_rows, l.rows,
                                         wide ? rh::kFineBlocks : rh::kTargetBlocks);
  const std::int64_t blocks =
      wide ? std::min<std::int64_t>(tasks.count(), rh::kFineBlocks) : tasks.count();
  unsigned* fine = nullptr;
  if constexpr (wide) {
    // Zero the blocks' fine counts; each task leaves them zero for the next.
    fine = reinterpret_cast<unsigned*>(scratch);
    OOC_KERNEL_TRY(cudaMemsetAsync(
        fine, 0, static_cast<std::size_t>(blocks) * rh::kThreads * rh::kFineWords * 4, stream));
  }
  rank_histogram_kernel<T>
      <<<static_cast<unsigned>(blocks), rh::kThreads, 0, stream>>>(p, tasks, fine);
}

}  // namespace

std::size_t rank_histogram_scratch_bytes(SampleType t) {
  if (t != SampleType::u16 && t != SampleType::i16) return 0;
  return static_cast<std::size_t>(rh::kFineBlocks) * rh::kThreads * rh::kFineWords * 4;
}

void rank_histogram_band_async(const RankLaunch& l, std::byte* scratch, cudaStream_t stream) {
  if (l.out_rows <= 0 || l.width <= 0) return;
  switch (l.type) {
    case SampleType::u8:
      launch<std::uint8_t>(l, scratch, stream);
      break;
    case SampleType::u16:
      launch<std::uint16_t>(l, scratch, stream);
      break;
    case SampleType::i16:
      launch<std::int16_t>(l, scratch, stream);
      break;
    default:
      return;
  }
  OOC_KERNEL_TRY(cudaGetLastError());
}

}  // namespace ooc::cuda
