// CPU kernels of the matrix products (A^T (A X), A X, A^T X) on one leaf: a block of consecutive
// rows of A. Every sum runs in a fixed order (T over the columns of A in order, Y over the leaf's
// rows in order), whatever the threads, so a leaf's result is the same bits on every run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ooc/image.hpp"

namespace ooc::kernels {

struct LeafArgs {
  const std::byte* const* rows = nullptr;  // the leaf's rows of A
  std::int64_t rows_n = 0;                 // rows in the leaf
  std::int64_t cols = 0;                   // N
  SampleType a_type = SampleType::f32;     // f32 or f64
  int k = 1;                               // columns of X
  int kp = 1;                              // X, T and Y rows hold kp >= k values (padded, zeros)
  bool f32 = false;                        // products in float; otherwise in double
  // The accumulator type (double, or float when f32): X is N x kp (for A X), T is rows_n x kp.
  const void* x = nullptr;
  void* t = nullptr;
  double* y = nullptr;        // N x kp: A^T T, widened to double
  void* y_scratch = nullptr;  // N x kp floats when f32 (the products before widening)
};

// Pads k to the values of a 32-byte vector of the accumulator (1 stays 1: that case has kernels of
// its own).
inline int atax_padded_k(int k, bool f32) {
  if (k == 1) return 1;
  const int w = f32 ? 8 : 4;
  return (k + w - 1) / w * w;
}
// Picked at run time for the instruction set (separable.cpp).
// T = A_leaf X. Splits the rows over TBB threads.
void atax_leaf_t(const LeafArgs& args);
// Y = A_leaf^T T. Splits the columns over TBB threads.
void atax_leaf_y(const LeafArgs& args);
// k == 1: T = A_leaf x and Y = A_leaf^T T in one pass over the rows, on the calling thread (the
// same bits as the two calls above); for leaves computed side by side.
void atax_leaf_fused(const LeafArgs& args);

}  // namespace ooc::kernels
