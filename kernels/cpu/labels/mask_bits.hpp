// Rows of samples as one bit a sample, set where the sample is foreground (!= 0, as the label
// stage counts it): the GPU's label input (CudaBand::in_bits), an eighth of a u8 mask's bytes to
// copy in. 32-bit words, bit x % 32 of word x / 32 for sample x, the bits past a row's end clear.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/labels/runs.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/image.hpp"

namespace ooc::kernels {

// Bytes of a row of `samples` samples as bits: whole 32-bit words.
inline std::size_t mask_bits_row_bytes(std::int64_t samples) {
  return static_cast<std::size_t>((samples + 31) / 32) * sizeof(std::uint32_t);
}

template <class T>
void mask_bits_row(const T* row, std::int64_t samples, std::uint32_t* words) {
  std::int64_t x = 0;
  for (; x + 64 <= samples; x += 64) {
    const std::uint64_t m = foreground_bits(row + x);
    words[x / 32] = static_cast<std::uint32_t>(m);
    words[x / 32 + 1] = static_cast<std::uint32_t>(m >> 32);
  }
  if (x < samples) {
    const std::uint64_t m = foreground_bits(row + x, static_cast<int>(samples - x));
    words[x / 32] = static_cast<std::uint32_t>(m);
    if (samples - x > 32) words[x / 32 + 1] = static_cast<std::uint32_t>(m >> 32);
  }
}

// `count` rows of `samples` samples of `type`, `row_bytes` apart at `rows`, as bits at `out`,
// rows `out_row` bytes apart (at least mask_bits_row_bytes(samples), a multiple of 4).
inline void mask_bits_rows(const std::byte* rows, std::int64_t count, std::size_t row_bytes,
                           std::int64_t samples, SampleType type, std::byte* out,
                           std::size_t out_row) {
  auto each_row = [&](auto zero) {
    using T = decltype(zero);
    for (std::int64_t r = 0; r < count; ++r)
      mask_bits_row(reinterpret_cast<const T*>(rows + static_cast<std::size_t>(r) * row_bytes),
                    samples,
                    reinterpret_cast<std::uint32_t*>(out + static_cast<std::size_t>(r) * out_row));
  };
  if (type == SampleType::u64)  // label images as input: dispatch_type takes filters' types only
    each_row(std::uint64_t{});
  else
    dispatch_type(type, each_row);
}

}  // namespace ooc::kernels
