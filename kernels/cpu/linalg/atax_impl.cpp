// The vectorized leaf kernels of the matrix products (see atax.hpp). Compiled once per instruction
// set (OOC_ISA names the namespace; atax.cpp picks one at run time). Each output value is one
// sequential chain of fused multiply-adds, so how rows and columns are grouped into registers,
// vectors or threads never changes its bits.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "atax.hpp"

#ifndef OOC_ISA
#error "OOC_ISA must name the instruction-set namespace"
#endif

namespace ooc::kernels::OOC_ISA {
namespace {

typedef double vd __attribute__((vector_size(32)));
typedef float vf __attribute__((vector_size(32)));
typedef float vf4 __attribute__((vector_size(16)));
typedef double vd8 __attribute__((vector_size(64)));

template <class Acc>
struct Vec;
template <>
struct Vec<double> {
  using type = vd;
  static constexpr int W = 4;
};
template <>
struct Vec<float> {
  using type = vf;
  static constexpr int W = 8;
};

// W values of A (type T) at p as a vector of Acc.
template <class Acc, class T>
inline typename Vec<Acc>::type load_as(const T* p) {
  if constexpr (std::is_same_v<Acc, T>) {
    typename Vec<Acc>::type v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else if constexpr (std::is_same_v<Acc, double>) {
    vf4 f;
    std::memcpy(&f, p, sizeof f);
    return __builtin_convertvector(f, vd);
  } else {
    vd8 d;
    std::memcpy(&d, p, sizeof d);
    return __builtin_convertvector(d, vf);
  }
}

template <class Acc>
inline void store(Acc* p, typename Vec<Acc>::type v) {
  std::memcpy(p, &v, sizeof v);
}

template <class T>
const T* row_of(const LeafArgs& a, std::int64_t r) {
  return reinterpret_cast<const T*>(a.rows[r]);
}

// t = a . x over n values: four vector chains, then a fixed reduction.
template <class T, class Acc>
Acc dot(const T* a, const Acc* x, std::int64_t n) {
  using V = typename Vec<Acc>::type;
  constexpr int W = Vec<Acc>::W;
  V s0{}, s1{}, s2{}, s3{};
  std::int64_t c = 0;
  for (; c + 4 * W <= n; c += 4 * W) {
    s0 += load_as<Acc>(a + c) * load_as<Acc>(x + c);
    s1 += load_as<Acc>(a + c + W) * load_as<Acc>(x + c + W);
    s2 += load_as<Acc>(a + c + 2 * W) * load_as<Acc>(x + c + 2 * W);
    s3 += load_as<Acc>(a + c + 3 * W) * load_as<Acc>(x + c + 3 * W);
  }
  for (; c + W <= n; c += W) s0 += load_as<Acc>(a + c) * load_as<Acc>(x + c);
  Acc tail = 0;
  for (; c < n; ++c) tail += static_cast<Acc>(a[c]) * x[c];
  const V s = (s0 + s1) + (s2 + s3);
  Acc r = 0;
  for (int i = 0; i < W; ++i) r += s[i];
  return r + tail;
}

// T[r, j..] += A[r, c0..c1) X[c0..c1), j..]: NR rows x NJ vectors of T held in registers.
template <int NR, int NJ, class T, class Acc>
void t_block(const LeafArgs& a, std::int64_t r, int j, std::int64_t c0, std::int64_t c1) {
  using V = typename Vec<Acc>::type;
  constexpr int W = Vec<Acc>::W;
  const Acc* X = static_cast<const Acc*>(a.x);
  Acc* Tm = static_cast<Acc*>(a.t);
  const T* ar[NR];
  V acc[NR][NJ];
  for (int i = 0; i < NR; ++i) {
    ar[i] = row_of<T>(a, r + i);
    for (int q = 0; q < NJ; ++q) acc[i][q] = load_as<Acc>(Tm + (r + i) * a.kp + j + q * W);
  }
  for (std::int64_t c = c0; c < c1; ++c) {
    V xv[NJ];
    for (int q = 0; q < NJ; ++q) xv[q] = load_as<Acc>(X + c * a.kp + j + q * W);
    for (int i = 0; i < NR; ++i) {
      const Acc s = static_cast<Acc>(ar[i][c]);
      for (int q = 0; q < NJ; ++q) acc[i][q] += s * xv[q];
    }
  }
  for (int i = 0; i < NR; ++i)
    for (int q = 0; q < NJ; ++q) store(Tm + (r + i) * a.kp + j + q * W, acc[i][q]);
}

template <int NR, class T, class Acc>
void t_rows_j(const LeafArgs& a, std::int64_t r, std::int64_t c0, std::int64_t c1) {
  constexpr int W = Vec<Acc>::W;
  int j = 0;
  for (; j + 2 * W <= a.kp; j += 2 * W) t_block<NR, 2, T, Acc>(a, r, j, c0, c1);
  if (j < a.kp) t_block<NR, 1, T, Acc>(a, r, j, c0, c1);
}

// Rows [r0, r1) of T, k > 1: columns in tiles so that the tile of X stays in cache while every
// row group passes over it; T carries the running sum from tile to tile (the order stays c).
template <class T, class Acc>
void t_rows(const LeafArgs& a, std::int64_t r0, std::int64_t r1) {
  constexpr std::int64_t kTile = 256;
  Acc* Tm = static_cast<Acc*>(a.t);
  std::fill(Tm + r0 * a.kp, Tm + r1 * a.kp, Acc{0});
  for (std::int64_t c0 = 0; c0 < a.cols; c0 += kTile) {
    const std::int64_t c1 = std::min(a.cols, c0 + kTile);
    std::int64_t r = r0;
    for (; r + 4 <= r1; r += 4) t_rows_j<4, T, Acc>(a, r, c0, c1);
    for (; r < r1; ++r) t_rows_j<1, T, Acc>(a, r, c0, c1);
  }
}

// Y[c..c+NC, j..] = sum over the leaf's rows, in order, of A[r, c..] T[r, j..].
template <int NC, int NJ, class T, class Acc>
void y_block(const LeafArgs& a, std::int64_t c, int j) {
  using V = typename Vec<Acc>::type;
  constexpr int W = Vec<Acc>::W;
  const Acc* Tm = static_cast<const Acc*>(a.t);
  V acc[NC][NJ] = {};
  for (std::int64_t r = 0; r < a.rows_n; ++r) {
    const T* ar = row_of<T>(a, r) + c;
    V tv[NJ];
    for (int q = 0; q < NJ; ++q) tv[q] = load_as<Acc>(Tm + r * a.kp + j + q * W);
    for (int i = 0; i < NC; ++i) {
      const Acc s = static_cast<Acc>(ar[i]);
      for (int q = 0; q < NJ; ++q) acc[i][q] += s * tv[q];
    }
  }
  for (int i = 0; i < NC; ++i)
    for (int q = 0; q < NJ; ++q)
      for (int l = 0; l < W; ++l) a.y[(c + i) * a.kp + j + q * W + l] = acc[i][q][l];
}

template <int NC, class T, class Acc>
void y_cols_j(const LeafArgs& a, std::int64_t c) {
  constexpr int W = Vec<Acc>::W;
  int j = 0;
  for (; j + 2 * W <= a.kp; j += 2 * W) y_block<NC, 2, T, Acc>(a, c, j);
  if (j < a.kp) y_block<NC, 1, T, Acc>(a, c, j);
}

// k == 1: y[c] (+)= sum over rows [r0, r1) of A[r, c] t[r], vectorized over the columns. With
// `resume`, the chains go on from y's values (exact for float chains: y holds them widened).
template <class T, class Acc>
void y_cols_1(const LeafArgs& a, std::int64_t c0, std::int64_t c1, std::int64_t r0, std::int64_t r1,
              bool resume) {
  using V = typename Vec<Acc>::type;
  constexpr int W = Vec<Acc>::W;
  const Acc* t = static_cast<const Acc*>(a.t);
  std::int64_t c = c0;
  for (; c + 4 * W <= c1; c += 4 * W) {
    V s0{}, s1{}, s2{}, s3{};
    if (resume)
      for (int l = 0; l < W; ++l) {
        s0[l] = static_cast<Acc>(a.y[c + l]);
        s1[l] = static_cast<Acc>(a.y[c + W + l]);
        s2[l] = static_cast<Acc>(a.y[c + 2 * W + l]);
        s3[l] = static_cast<Acc>(a.y[c + 3 * W + l]);
      }
    for (std::int64_t r = r0; r < r1; ++r) {
      const T* ar = row_of<T>(a, r) + c;
      const Acc tr = t[r];
      s0 += load_as<Acc>(ar) * tr;
      s1 += load_as<Acc>(ar + W) * tr;
      s2 += load_as<Acc>(ar + 2 * W) * tr;
      s3 += load_as<Acc>(ar + 3 * W) * tr;
    }
    for (int l = 0; l < W; ++l) {
      a.y[c + l] = s0[l];
      a.y[c + W + l] = s1[l];
      a.y[c + 2 * W + l] = s2[l];
      a.y[c + 3 * W + l] = s3[l];
    }
  }
  for (; c < c1; ++c) {
    Acc s = resume ? static_cast<Acc>(a.y[c]) : Acc{0};
    for (std::int64_t r = r0; r < r1; ++r) s += static_cast<Acc>(row_of<T>(a, r)[c]) * t[r];
    a.y[c] = s;
  }
}

// k == 1, T and Y in one pass: a few rows at a time (a quarter of L2), their t, then their share
// of y while the rows are still in cache. The chains are the two-pass kernels' chains, so the
// bits are the same; A crosses the memory bus once instead of twice.
template <class T, class Acc>
void leaf_fused_1(const LeafArgs& a) {
  const std::int64_t rows =
      std::clamp<std::int64_t>((256 << 10) / (a.cols * std::int64_t{sizeof(T)}), 1, 64);
  Acc* t = static_cast<Acc*>(a.t);
  for (std::int64_t r0 = 0; r0 < a.rows_n; r0 += rows) {
    const std::int64_t r1 = std::min(a.rows_n, r0 + rows);
    for (std::int64_t r = r0; r < r1; ++r)
      t[r] = dot<T, Acc>(row_of<T>(a, r), static_cast<const Acc*>(a.x), a.cols);
    y_cols_1<T, Acc>(a, 0, a.cols, r0, r1, r0 > 0);
  }
}

template <class T, class Acc>
void leaf_t(const LeafArgs& a) {
  constexpr std::int64_t kRows = 16;  // rows per task
  const std::int64_t tasks = (a.rows_n + kRows - 1) / kRows;
  tbb::parallel_for(std::int64_t{0}, tasks, [&](std::int64_t i) {
    const std::int64_t r0 = i * kRows, r1 = std::min(a.rows_n, r0 + kRows);
    if (a.kp == 1) {
      Acc* t = static_cast<Acc*>(a.t);
      for (std::int64_t r = r0; r < r1; ++r)
        t[r] = dot<T, Acc>(row_of<T>(a, r), static_cast<const Acc*>(a.x), a.cols);
    } else {
      t_rows<T, Acc>(a, r0, r1);
    }
  });
}

template <class T, class Acc>
void leaf_y(const LeafArgs& a) {
  // Column blocks of a fixed size: each column's chain is the same whatever thread runs it.
  const std::int64_t block = a.kp == 1 ? 512 : 32;
  const std::int64_t tasks = (a.cols + block - 1) / block;
  tbb::parallel_for(std::int64_t{0}, tasks, [&](std::int64_t i) {
    const std::int64_t c0 = i * block, c1 = std::min(a.cols, c0 + block);
    if (a.kp == 1) return y_cols_1<T, Acc>(a, c0, c1, 0, a.rows_n, false);
    std::int64_t c = c0;
    for (; c + 4 <= c1; c += 4) y_cols_j<4, T, Acc>(a, c);
    for (; c < c1; ++c) y_cols_j<1, T, Acc>(a, c);
  });
}

template <class F>
void dispatch(const LeafArgs& a, F&& f) {
  const bool a32 = a.a_type == SampleType::f32;
  if (a.f32)
    a32 ? f(float{}, float{}) : f(double{}, float{});
  else
    a32 ? f(float{}, double{}) : f(double{}, double{});
}

}  // namespace

void atax_leaf_t(const LeafArgs& a) {
  dispatch(a, [&](auto t, auto acc) { leaf_t<decltype(t), decltype(acc)>(a); });
}

void atax_leaf_y(const LeafArgs& a) {
  dispatch(a, [&](auto t, auto acc) { leaf_y<decltype(t), decltype(acc)>(a); });
}

void atax_leaf_fused(const LeafArgs& a) {
  dispatch(a, [&](auto t, auto acc) { leaf_fused_1<decltype(t), decltype(acc)>(a); });
}

}  // namespace ooc::kernels::OOC_ISA
