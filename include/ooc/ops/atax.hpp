// Matrix products over a matrix file larger than memory, in one streaming pass over its rows:
// y = A^T (A X) (the normal-equations product), y = A X and y = A^T X, where A is an image of one
// channel (width = columns N, height = rows M, f32 or f64) and X has k columns.
//
// Determinism: rows are grouped into leaves of leaf_rows() consecutive rows, a number fixed by A's
// shape alone. Each leaf's A_l^T (A_l X) is computed in a fixed order, and the leaves are summed as
// a fixed binary tree (the left subtree covers the largest power of two of leaves). Bands are a
// power of two of leaves (fit_band_rows), so a band is a subtree: the result has the same bits for
// every band height, slot count and thread count (on one machine and backend). The default leaf
// depends on A's shape alone unless the memory limit cannot hold a band of one such leaf and its
// scratch: then the tool lowers it (set_leaf_rows) to what fits, which changes the last bits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ooc/engine.hpp"

namespace ooc {

enum class ProductKind { atax, ax, atx };
ProductKind parse_product_kind(const std::string& text);  // throws a usage Error
const char* name(ProductKind kind) noexcept;

struct ProductParams {
  ProductKind kind = ProductKind::atax;
  int k = 1;              // columns of X
  bool f32 = false;       // products in float (sums of leaves still in double); default double
  std::vector<double> x;  // row-major: N x k (atax, ax) or M x k (atx)
  // Rows of a leaf, a power of two; 0: default_leaf_rows(A). Another leaf size changes the order
  // of the sums, and so the last bits of y.
  std::int64_t leaf_rows = 0;
};

// The smallest power of two whose rows hold 16 MiB of A (each leaf's partial is added once in the
// tree, so the additions stay small beside the products), at most the power of two that covers
// A's rows (a taller leaf would only ask the planner for memory no band uses).
std::int64_t default_leaf_rows(const ImageSpec& a);

// NaN and Inf in A, as the CPU kernel finds them: the rows of T = A X (atax, ax) or a leaf's
// A^T X (atx) that are not finite are searched, so a finite A costs a scan of T only.
struct NonFiniteA {
  // Every row searched: false when some band ran on a GPU, or when X itself is not finite in the
  // products' type (then every product is, and the search would find nothing to point at).
  bool searched = false;
  std::int64_t count = 0;
  std::int64_t row = -1, col = -1;  // the first one, by row then column, from 0
};

// Rows of X the product needs: N for atax and ax, M for atx.
std::int64_t product_x_rows(const ImageSpec& a, ProductKind kind);

class MatrixProductOp : public Operation {
 public:
  // The leaf of the summation tree (see above).
  virtual std::int64_t leaf_rows() const = 0;
  // Leaves of `rows` rows (a power of two) from now on: before the job starts, for a leaf that
  // fits the memory limit.
  virtual void set_leaf_rows(std::int64_t rows) = 0;
  // atax and atx: y (N x k, row-major) of the bands merged so far; empty for ax, whose y is the
  // operation's output image (M rows of k values).
  virtual std::vector<double> result() const = 0;
  // CPU backend: seconds spent touching the band's pages (reading the file) and in the products,
  // summed over bands.
  virtual double cpu_read_seconds() const = 0;
  virtual double cpu_compute_seconds() const = 0;
  // After the pass: the NaN and Inf values of A (see NonFiniteA).
  virtual NonFiniteA a_nonfinite() const = 0;
};

// Throws a usage Error naming the problem (A not one channel of f32/f64, X of the wrong size, k
// out of range).
std::unique_ptr<MatrixProductOp> make_matrix_product(const ImageSpec& a, ProductParams params);

}  // namespace ooc
