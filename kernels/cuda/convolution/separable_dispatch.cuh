// Host side of the separable kernels: for a band already in device memory, picks the kernels
// (generic, two passes with specialized ones, or fused), their grid, block and shared memory, and
// enqueues them. Dispatch<Policy> takes a SeparablePolicy (separable_policy.cuh), so a benchmark
// can build other tunings beside the library's, which separable.cu instantiates.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "ooc/detail/sample_type.hpp"
#include "separable.cuh"
#include "separable_generic.cuh"
#include "separable_policy.cuh"
#include "separable_specialized.cuh"

namespace ooc::cuda::separable {

// f(T{}) for the sample types with specialized kernels.
template <class F>
bool with_fast_type(SampleType t, F&& f) {
  switch (t) {
    case SampleType::u8:
      f(std::uint8_t{});
      return true;
    case SampleType::u16:
      f(std::uint16_t{});
      return true;
    case SampleType::f32:
      f(float{});
      return true;
    default:
      return false;
  }
}
inline bool is_fast_type(SampleType t) {
  return with_fast_type(t, [](auto) {});
}

template <int R>
Taps<R> taps_of(const void* host) {
  Taps<R> t{};
  std::memcpy(t.w, host, sizeof t.w);
  return t;
}

inline std::size_t max_dynamic_smem() {
  int dev = 0, bytes = 0;
  OOC_KERNEL_TRY(cudaGetDevice(&dev));
  OOC_KERNEL_TRY(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return static_cast<std::size_t>(bytes);
}

// One-channel f32 takes the quad kernel.
inline bool quad_fused(const SeparableLaunch& a) {
  return a.in_type == SampleType::f32 && a.channels == 1;
}

template <class Kernel>
void allow_smem(Kernel k, std::size_t smem) {
  if (smem > 48 * 1024)
    OOC_KERNEL_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
}

template <class PolicyT>
struct Dispatch {
  using Tile = typename PolicyT::Tile;
  using Column = typename PolicyT::Column;
  using Generic = typename PolicyT::Generic;

  // Which kernels band_async would run for `a` on the current device.
  static SeparablePath path(const SeparableLaunch& a) {
    if (!specialized_ok(a)) return SeparablePath::generic;
    const std::size_t limit = max_dynamic_smem();
    if (fused_ok(a, limit)) return SeparablePath::fused;
    if (fast_row_ok(a, limit) || fast_column_ok(a)) return SeparablePath::two_pass;
    return SeparablePath::generic;
  }

  // Enqueues the row pass and the column pass on `stream`; returns at once.
  static void band_async(const SeparableLaunch& a, cudaStream_t stream) {
    if (a.f64) {
      launch_generic<double>(a, stream);
      return;
    }
    if (!specialized_ok(a)) {
      launch_generic<float>(a, stream);
      return;
    }
    const std::size_t limit = max_dynamic_smem();
    if (fused_ok(a, limit)) {
      launch_fused(a, stream);
      return;
    }
    if (fast_row_ok(a, limit)) {
      launch_fast_row(a, stream);
    } else {
      dispatch_type(a.in_type, [&](auto t) { launch_row<decltype(t), float>(a, stream); });
    }
    if (fast_column_ok(a)) {
      launch_fast_column(a, stream);
    } else {
      dispatch_type(a.out_type, [&](auto u) { launch_column<decltype(u), float>(a, stream); });
    }
  }

 private:
  // ----------------------------------------------------------------------------------------------
  // The generic kernels.

  template <class T, class Acc>
  static void launch_row(const SeparableLaunch& a, cudaStream_t s) {
    const std::int64_t n = a.width * a.channels;
    const std::int64_t rows = a.out_rows + 2 * a.ry;
    const Acc cval = static_cast<Acc>(a.border_value);
    const auto* w = static_cast<const Acc*>(a.row_taps);
    if (a.rx <= kRowTileMaxRadius) {
      const int tile = (Generic::kRowTile / a.channels) * a.channels;
      const dim3 grid(static_cast<unsigned>((n + tile - 1) / tile), grid_rows(rows));
      const std::size_t smem = (tile + 2 * a.rx * a.channels) * sizeof(Acc);
      row_pass_tiled<Generic, T, Acc><<<grid, Generic::kRowThreads, smem, s>>>(
          static_cast<const std::byte*>(a.in), a.in_stride, static_cast<std::byte*>(a.mid),
          a.mid_stride, a.width, a.channels, static_cast<int>(a.rx), w, a.border, cval, rows,
          a.first_row, a.image_height);
    } else {
      const dim3 grid(static_cast<unsigned>((n + Generic::kRowThreads - 1) / Generic::kRowThreads),
                      grid_rows(rows));
      row_pass_direct<T, Acc><<<grid, Generic::kRowThreads, 0, s>>>(
          static_cast<const std::byte*>(a.in), a.in_stride, static_cast<std::byte*>(a.mid),
          a.mid_stride, a.width, a.channels, a.rx, w, a.border, cval, rows, a.first_row,
          a.image_height);
    }
    OOC_KERNEL_TRY(cudaGetLastError());
  }

  template <class U, class Acc>
  static void launch_column(const SeparableLaunch& a, cudaStream_t s) {
    const std::int64_t n = a.width * a.channels;
    const dim3 grid(static_cast<unsigned>((n + Generic::kColThreads - 1) / Generic::kColThreads),
                    grid_rows((a.out_rows + Generic::kRun - 1) / Generic::kRun));
    column_pass<Generic, U, Acc><<<grid, Generic::kColThreads, 0, s>>>(
        static_cast<const std::byte*>(a.mid), a.mid_stride, static_cast<std::byte*>(a.out),
        a.out_stride, n, a.out_rows, static_cast<int>(a.ry), static_cast<const Acc*>(a.col_taps));
    OOC_KERNEL_TRY(cudaGetLastError());
  }

  template <class Acc>
  static void launch_generic(const SeparableLaunch& a, cudaStream_t s) {
    dispatch_type(a.in_type, [&](auto t) { launch_row<decltype(t), Acc>(a, s); });
    dispatch_type(a.out_type, [&](auto u) { launch_column<decltype(u), Acc>(a, s); });
  }

  // ----------------------------------------------------------------------------------------------
  // The kernels specialized on the radius.

  // f(std::integral_constant<int, R>{}) for r in the policy's radii; false when r has none.
  template <class F, int... R>
  static bool with_radius_impl(std::int64_t r, F&& f, std::integer_sequence<int, R...>) {
    bool done = false;
    ((r == R ? (f(std::integral_constant<int, R>{}), done = true) : false), ...);
    return done;
  }
  template <class F>
  static bool with_radius(std::int64_t r, F&& f) {
    return with_radius_impl(r, std::forward<F>(f), typename PolicyT::Radii{});
  }
  static bool is_fast_radius(std::int64_t r) {
    return with_radius(r, [](auto) {});
  }

  // Shared memory of the fused kernel (or the row kernel) for these arguments.
  static std::size_t fused_smem(const SeparableLaunch& a) {
    const int R = static_cast<int>(a.rx);
    if (quad_fused(a)) return QuadGeom<Tile>(R).smem_bytes();
    return TileShape::make<Tile>(a.channels, R, Tile::kFusedRows + 2 * R).smem_bytes();
  }
  static std::size_t row_smem(const SeparableLaunch& a) {
    return TileShape::make<Tile>(a.channels, static_cast<int>(a.rx), Tile::kRowRows).smem_bytes();
  }

  static bool specialized_ok(const SeparableLaunch& a) {
    return !a.generic && !a.f64 && a.row_taps_host != nullptr && a.col_taps_host != nullptr &&
           a.channels >= 1 && a.channels <= Tile::kMaxChannels;
  }
  static bool fast_row_ok(const SeparableLaunch& a, std::size_t smem_limit) {
    return specialized_ok(a) && is_fast_radius(a.rx) && is_fast_type(a.in_type) &&
           row_smem(a) <= smem_limit;
  }
  static bool fast_column_ok(const SeparableLaunch& a) {
    return specialized_ok(a) && is_fast_radius(a.ry) && is_fast_type(a.out_type);
  }
  static bool fused_ok(const SeparableLaunch& a, std::size_t smem_limit) {
    return specialized_ok(a) && a.rx == a.ry && a.rx <= Tile::kFusedMaxRadius &&
           is_fast_radius(a.rx) && a.in_type == a.out_type && is_fast_type(a.in_type) &&
           fused_smem(a) <= smem_limit;
  }

  static TileArgs tile_args(const SeparableLaunch& a, void* out, std::size_t out_stride,
                            std::int64_t rows) {
    TileArgs t{};
    t.in = static_cast<const std::byte*>(a.in);
    t.in_stride = a.in_stride;
    t.out = static_cast<std::byte*>(out);
    t.out_stride = out_stride;
    t.width = a.width;
    t.n = a.width * a.channels;
    t.C = a.channels;
    t.border = a.border;
    t.cval = static_cast<float>(a.border_value);
    t.rows = rows;
    t.first_row = a.first_row;
    t.height = a.image_height;
    t.tile_w = TileShape::make<Tile>(a.channels, 0, 1).tile_w;
    t.vec_rows = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 && a.in_stride % 16 == 0;
    return t;
  }

  // The launchers below pick the kernel in a function template on <T, R>, not in a lambda over
  // the radii nested in the lambda over the types. There T was decltype(tv), tv the outer
  // lambda's parameter, and cudafe++ writes it so into the host code; GCC 12 takes that
  // decltype, inside the inner lambda's `if constexpr (R <= ...)` in a class template's member,
  // as float& instead of float. The host code then took the other branch of
  // `if constexpr (std::is_same_v<T, float>)` than the device code and launched
  // fused_kernel<Tile, float, float, R, 1>, which has no device code: its host stub, never
  // registered, calls cudaLaunchKernel(nullptr, ...), cudaErrorInvalidDeviceFunction.
  static void launch_fused(const SeparableLaunch& a, cudaStream_t s) {
    with_fast_type(a.in_type, [&](auto tv) { launch_fused_typed<decltype(tv)>(a, s); });
    OOC_KERNEL_TRY(cudaGetLastError());
  }
  template <class T>
  static void launch_fused_typed(const SeparableLaunch& a, cudaStream_t s) {
    with_radius(a.rx, [&](auto rc) { launch_fused_at<T, decltype(rc)::value>(a, s); });
  }
  template <class T, int R>
  static void launch_fused_at(const SeparableLaunch& a, cudaStream_t s) {
    if constexpr (R <= Tile::kFusedMaxRadius) {
      const TileArgs t = tile_args(a, a.out, a.out_stride, a.out_rows);
      const std::size_t smem = fused_smem(a);
      const dim3 grid(static_cast<unsigned>((t.n + t.tile_w - 1) / t.tile_w),
                      grid_rows((a.out_rows + Tile::kFusedRows - 1) / Tile::kFusedRows));
      auto* k = &fused_kernel<Tile, T, T, R, 0>;
      if constexpr (std::is_same_v<T, float>) {
        if (quad_fused(a)) k = &fused_quad_kernel<Tile, R>;
      } else {
        if (a.channels == 1) k = &fused_kernel<Tile, T, T, R, 1>;
      }
      allow_smem(k, smem);
      k<<<grid, Tile::kThreads, smem, s>>>(t, taps_of<R>(a.row_taps_host),
                                           taps_of<R>(a.col_taps_host));
    }
  }

  static void launch_fast_row(const SeparableLaunch& a, cudaStream_t s) {
    with_fast_type(a.in_type, [&](auto tv) { launch_fast_row_typed<decltype(tv)>(a, s); });
    OOC_KERNEL_TRY(cudaGetLastError());
  }
  template <class T>
  static void launch_fast_row_typed(const SeparableLaunch& a, cudaStream_t s) {
    with_radius(a.rx, [&](auto rc) { launch_fast_row_at<T, decltype(rc)::value>(a, s); });
  }
  template <class T, int R>
  static void launch_fast_row_at(const SeparableLaunch& a, cudaStream_t s) {
    const std::int64_t rows = a.out_rows + 2 * a.ry;
    const TileArgs t = tile_args(a, a.mid, a.mid_stride, rows);
    const std::size_t smem = row_smem(a);
    const dim3 grid(static_cast<unsigned>((t.n + t.tile_w - 1) / t.tile_w),
                    grid_rows((rows + Tile::kRowRows - 1) / Tile::kRowRows));
    auto* k = a.channels == 1 ? &row_kernel<Tile, T, R, 1> : &row_kernel<Tile, T, R, 0>;
    allow_smem(k, smem);
    k<<<grid, Tile::kThreads, smem, s>>>(t, taps_of<R>(a.row_taps_host));
  }

  static void launch_fast_column(const SeparableLaunch& a, cudaStream_t s) {
    with_fast_type(a.out_type, [&](auto uv) { launch_fast_column_typed<decltype(uv)>(a, s); });
    OOC_KERNEL_TRY(cudaGetLastError());
  }
  template <class U>
  static void launch_fast_column_typed(const SeparableLaunch& a, cudaStream_t s) {
    with_radius(a.ry, [&](auto rc) { launch_fast_column_at<U, decltype(rc)::value>(a, s); });
  }
  template <class U, int R>
  static void launch_fast_column_at(const SeparableLaunch& a, cudaStream_t s) {
    const std::int64_t n = a.width * a.channels;
    const dim3 grid(
        static_cast<unsigned>((n + Column::kColumnThreads - 1) / Column::kColumnThreads),
        grid_rows((a.out_rows + Column::kColumnRun - 1) / Column::kColumnRun));
    column_kernel<Column, U, R><<<grid, Column::kColumnThreads, 0, s>>>(
        static_cast<const std::byte*>(a.mid), a.mid_stride, static_cast<std::byte*>(a.out),
        a.out_stride, n, a.out_rows, taps_of<R>(a.col_taps_host));
  }
};

}  // namespace ooc::cuda::separable
