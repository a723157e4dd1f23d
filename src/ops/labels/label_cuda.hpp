// The label stage's CUDA kernels (label_cuda.cpp, built with CUDA only) and what they share with
// the stage's merge in label.cpp. Pass 1 labels each band on the GPU (kernels/cuda/labels) with
// the numbers the CPU gives it, and brings back the labels of the rows the merge joins (the first
// and last, or every row for a volume in 3-D and for measurements), which the merge turns into
// runs as the CPU's kernel makes them; pass 2 labels the band again and writes it through the
// band's slice of the merged table.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ooc/engine.hpp"

namespace ooc::detail {

// A GPU band's labels on the host, once its slot's stream is done.
struct LabelCudaRows {
  std::int64_t band = -1;  // the band's index
  // Every row of the band (all_rows), else its first row then its last (one row for a band of
  // one): width u32 each, 0 for the background.
  const std::uint32_t* labels = nullptr;
};

// Shared by the stage (label.cpp) and its CUDA kernels. The slots' entries are set by the read
// stage (run_async) and read by the merge of the write stage: a lock between them.
struct LabelCudaShared {
  std::int64_t width = 0;
  bool diagonal = false;
  bool all_rows = false;
  bool wide = false;  // u64 labels (else u32)
  // Pass 2: writes `band`'s slice of the merged table (its provisional labels' final numbers,
  // u32 or u64 entries as `wide`) to `to`, which holds `capacity` entries, and returns its length
  // (only that, where `to` is null).
  std::function<std::uint64_t(const Band& band, void* to, std::uint64_t capacity)> table_slice;

  void set(int slot, const LabelCudaRows& r) {
    std::lock_guard<std::mutex> lock(m_);
    slots_[slot] = r;
  }
  LabelCudaRows get(int slot) const {
    std::lock_guard<std::mutex> lock(m_);
    const auto i = slots_.find(slot);
    return i == slots_.end() ? LabelCudaRows{} : i->second;
  }

 private:
  mutable std::mutex m_;
  std::map<int, LabelCudaRows> slots_;
};

// The partial's first word for a band labelled on the GPU: this bit with the slot's number (the
// second word is the band's count of components, written by the GPU).
inline constexpr std::uint64_t kLabelGpuBand = std::uint64_t{1} << 63;

// Device scratch of a slot for bands of `rows` rows of `width` samples: the labelling's, a table
// slice (u64 entries where `wide`, else u32).
std::size_t label_cuda_scratch(std::int64_t rows, std::int64_t width, bool wide);

std::unique_ptr<CudaKernel> make_label_scan_cuda(std::shared_ptr<LabelCudaShared> shared);
std::unique_ptr<CudaKernel> make_label_apply_cuda(std::shared_ptr<LabelCudaShared> shared);

}  // namespace ooc::detail
