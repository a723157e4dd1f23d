// The keys of the rank filters of floats and 32-bit integers beyond the selection networks, shared
// by the CPU's ranked histograms (kernels/cpu/morphology/rank.cpp) and the GPU's radix select
// (kernels/cuda/morphology/rank.cu), so that both give the same bits: integers offset to unsigned,
// floats with their sign bit flipped (negative ones inverted whole), -0 as +0 and every NaN as the
// largest key; the value of a key is the inverse, so zeros come out +0.
//
// The radix select (the GPU's; its CPU emulation in the unit test): the rank's key is decided bit
// by bit from the top, counting per bit the window's samples that share the bits decided so far
// and have this bit 0; the rank falls among them or above. 32 passes over the window for 4-byte
// samples, 64 for f64: about 4 instructions a window sample a pass, ~0.0039 ns a window sample
// for 4-byte keys on a GPU issuing ~33 x 10^12 thread instructions a second (an estimate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__CUDACC__)
#define OOC_RANK_KEYS_HD __host__ __device__
#else
#define OOC_RANK_KEYS_HD
#endif

namespace ooc::kernels {

// The GPU's tile of keys: a block of 32 x 8 outputs and its window's halo, at most this much of a
// block's shared memory (sm_90 allows 227 KiB a block). Here so that a build without CUDA plans and
// costs the same windows.
constexpr int kRadixTileX = 32, kRadixTileY = 8;
constexpr std::size_t kMaxRadixTileBytes = 200 * 1024;
// The tile for a window of rows x cols and keys of `key_bytes` (4 or 8).
constexpr std::size_t radix_tile_bytes(std::int64_t rows, std::int64_t cols,
                                       std::size_t key_bytes) {
  return static_cast<std::size_t>((kRadixTileX + cols - 1) * (kRadixTileY + rows - 1)) * key_bytes;
}

template <class T>
struct RankKey {
  using type = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  static constexpr int bits = static_cast<int>(sizeof(type) * 8);
  static constexpr type top = type{1} << (bits - 1);
  static constexpr type nan = ~type{0};
  OOC_RANK_KEYS_HD static type of(T v) {
    if constexpr (std::is_floating_point_v<T>) {
      if (v != v) return nan;
      if (v == T(0)) v = T(0);
      type b;
      std::memcpy(&b, &v, sizeof b);
      return (b & top) ? ~b : (b | top);
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<type>(static_cast<type>(v) ^ top);
    } else {
      return static_cast<type>(v);
    }
  }
  OOC_RANK_KEYS_HD static T value(type k) {
    if constexpr (std::is_floating_point_v<T>) {
      if (k == nan) return std::numeric_limits<T>::quiet_NaN();
      const type b = (k & top) ? (k & ~top) : ~k;
      T v;
      std::memcpy(&v, &b, sizeof v);
      return v;
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(k ^ top);
    } else {
      return static_cast<T>(k);
    }
  }
};

// The key of rank `rank` (0: the smallest) among the keys each(f) passes to f, one call of f per
// window sample (each is called once a bit).
template <class K, class Each>
OOC_RANK_KEYS_HD K radix_select(int rank, const Each& each) {
  constexpr int bits = static_cast<int>(sizeof(K) * 8);
  K prefix = 0, decided = 0;
  for (int b = bits - 1; b >= 0; --b) {
    const K bit = K{1} << b;
    const K mask = decided | bit;
    int zeros = 0;  // samples sharing the decided bits, with bit b 0
    each([&](K k) { zeros += (k & mask) == prefix; });
    if (rank >= zeros) {
      rank -= zeros;
      prefix |= bit;
    }
    decided = mask;
  }
  return prefix;
}

}  // namespace ooc::kernels
