// Matrix products over row bands (see atax.hpp): the operation, its CPU kernel (leaves through the
// vectorized leaf kernels, summed as the fixed tree) and the in-order merge of the bands' partials.
// The CUDA kernel is made in atax_cuda.cpp.
#include "ooc/ops/atax.hpp"

#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/linalg/atax.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"

namespace ooc {
namespace {

using Clock = std::chrono::steady_clock;

// The largest power of two below n (n >= 2): the left subtree of n leaves.
std::int64_t left_leaves(std::int64_t n) {
  return std::int64_t{1} << (63 - std::countl_zero(static_cast<std::uint64_t>(n - 1)));
}

void add_into(double* dst, const double* src, std::size_t n) {
  tbb::parallel_for(std::size_t{0}, (n + 4095) / 4096, [&](std::size_t b) {
    const std::size_t e = std::min(n, (b + 1) * 4096);
    for (std::size_t i = b * 4096; i < e; ++i) dst[i] += src[i];
  });
}

// The search for NaN and Inf in A (NonFiniteA), shared by the bands' CPU kernels.
struct NonFiniteSearch {
  bool on = false;  // X is finite in the products' type: a product that is not points at A
  std::atomic<std::int64_t> rows{0};  // rows of A the CPU kernels covered
  std::atomic<std::int64_t> count{0};
  std::atomic<std::uint64_t> first{std::numeric_limits<std::uint64_t>::max()};  // row * N + col
};

template <class T>
bool any_nonfinite(const T* v, std::int64_t n) {
  bool bad = false;
  for (std::int64_t i = 0; i < n; ++i) bad |= !std::isfinite(v[i]);
  return bad;
}

class ProductCpu final : public CpuKernel {
 public:
  ProductCpu(const ImageSpec& a, const ProductParams& p, int kp, std::int64_t leaf,
             const std::vector<double>& x, const std::vector<float>& x32,
             std::atomic<std::int64_t>& read_ns, std::atomic<std::int64_t>& compute_ns,
             NonFiniteSearch& nonfinite)
      : a_(a),
        p_(p),
        kp_(kp),
        leaf_(leaf),
        x_(x),
        x32_(x32),
        read_ns_(read_ns),
        compute_ns_(compute_ns),
        nonfinite_(nonfinite) {}

  void run(const CpuBand& b) override {
    const auto t0 = Clock::now();
    touch(b);
    const auto t1 = Clock::now();
    const std::int64_t leaves = (b.band.rows + leaf_ - 1) / leaf_;
    auto* y = reinterpret_cast<double*>(b.partial);
    tree(b, 0, leaves, y);
    nonfinite_.rows += b.band.rows;
    read_ns_ += std::chrono::nanoseconds(t1 - t0).count();
    compute_ns_ += std::chrono::nanoseconds(Clock::now() - t1).count();
  }

 private:
  // Reads every page of the band's mapped rows once, so that the file's share of the time is
  // measured apart from the products' (the products then find the pages in memory).
  void touch(const CpuBand& b) const {
    const std::size_t row = a_.row_bytes();
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t r) {
      const volatile std::byte* p = b.rows[b.halo + r];
      std::byte sink{};
      for (std::size_t i = 0; i < row; i += 4096) sink ^= p[i];
      sink ^= p[row - 1];
      (void)sink;
    });
  }

  // y = the leaves [l0, l0 + n) of the band summed as the fixed tree.
  void tree(const CpuBand& b, std::int64_t l0, std::int64_t n, double* y) const {
    if (n == 1) return leaf(b, l0, y);
    const std::int64_t m = left_leaves(n);
    if (!y) {  // ax: no sums
      tbb::parallel_invoke([&] { tree(b, l0, m, nullptr); },
                           [&] { tree(b, l0 + m, n - m, nullptr); });
      return;
    }
    std::vector<double> right(static_cast<std::size_t>(a_.width) * kp_);
    tbb::parallel_invoke([&] { tree(b, l0, m, y); }, [&] { tree(b, l0 + m, n - m, right.data()); });
    add_into(y, right.data(), right.size());
  }

  void leaf(const CpuBand& b, std::int64_t l, double* y) const {
    const std::int64_t r0 = l * leaf_, rows = std::min(leaf_, b.band.rows - r0);
    kernels::LeafArgs args;
    args.rows = b.rows + b.halo + r0;
    args.rows_n = rows;
    args.cols = a_.width;
    args.a_type = a_.type;
    args.k = p_.k;
    args.kp = kp_;
    args.f32 = p_.f32;
    args.y = y;
    const std::size_t acc = p_.f32 ? sizeof(float) : sizeof(double);
    std::vector<std::byte> t;
    if (p_.kind == ProductKind::atx) {
      // T is X's rows of the leaf.
      const std::size_t at = static_cast<std::size_t>(b.band.y0 + r0) * kp_;
      // Read only by atax_leaf_y.
      args.t = p_.f32 ? static_cast<void*>(const_cast<float*>(x32_.data() + at))
                      : static_cast<void*>(const_cast<double*>(x_.data() + at));
    } else {
      args.x = p_.f32 ? static_cast<const void*>(x32_.data()) : x_.data();
      t.resize(static_cast<std::size_t>(rows) * kp_ * acc);
      args.t = t.data();
      // One column: a single pass, as the leaf's rows are still in cache (leaves of a band and
      // bands in flight keep the threads busy).
      if (kp_ == 1 && p_.kind == ProductKind::atax) {
        kernels::atax_leaf_fused(args);
        return search_t(b, r0, rows, t.data());
      }
      kernels::atax_leaf_t(args);
      search_t(b, r0, rows, t.data());
    }
    if (p_.kind == ProductKind::ax) return store_t(b, r0, rows, t.data());
    kernels::atax_leaf_y(args);
    if (p_.kind == ProductKind::atx) search_y(b, r0, rows, y);
  }

  // Row r of T = A X is finite unless row r of A holds NaN or Inf (or the products overflow): a
  // scan of T (k values a row) finds the rows of A worth searching.
  void search_t(const CpuBand& b, std::int64_t r0, std::int64_t rows, const std::byte* t) const {
    if (!nonfinite_.on) return;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::size_t at = static_cast<std::size_t>(r) * kp_;
      const bool bad = p_.f32 ? any_nonfinite(reinterpret_cast<const float*>(t) + at, p_.k)
                              : any_nonfinite(reinterpret_cast<const double*>(t) + at, p_.k);
      if (bad) search_row(b, r0 + r);
    }
  }

  // atx: T is X's rows, so only the leaf's y (N x k) tells whether its rows of A are finite.
  void search_y(const CpuBand& b, std::int64_t r0, std::int64_t rows, const double* y) const {
    if (!nonfinite_.on) return;
    bool bad = false;
    for (std::int64_t c = 0; c < a_.width && !bad; ++c)
      bad = any_nonfinite(y + static_cast<std::size_t>(c) * kp_, p_.k);
    if (bad)
      for (std::int64_t r = 0; r < rows; ++r) search_row(b, r0 + r);
  }

  // Counts the NaN and Inf of the band's row r and keeps the first one of A seen so far.
  void search_row(const CpuBand& b, std::int64_t r) const {
    const std::byte* row = b.rows[b.halo + r];
    std::int64_t count = 0, first = -1;
    for (std::int64_t c = 0; c < a_.width; ++c) {
      double v;
      if (a_.type == SampleType::f32) {
        float f;
        std::memcpy(&f, row + c * sizeof(float), sizeof f);
        v = f;
      } else {
        std::memcpy(&v, row + c * sizeof(double), sizeof v);
      }
      if (std::isfinite(v)) continue;
      if (count++ == 0) first = c;
    }
    if (count == 0) return;  // the products overflowed: y's count tells
    nonfinite_.count += count;
    const std::uint64_t at =
        static_cast<std::uint64_t>(b.band.y0 + r) * static_cast<std::uint64_t>(a_.width) +
        static_cast<std::uint64_t>(first);
    std::uint64_t seen = nonfinite_.first.load();
    while (at < seen && !nonfinite_.first.compare_exchange_weak(seen, at)) {
    }
  }

  // ax: the leaf's rows of T are its rows of the output (k values, double or float).
  void store_t(const CpuBand& b, std::int64_t r0, std::int64_t rows, const std::byte* t) const {
    const std::size_t acc = p_.f32 ? sizeof(float) : sizeof(double);
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(b.out.row(r0 + r), t + static_cast<std::size_t>(r) * kp_ * acc,
                  static_cast<std::size_t>(p_.k) * acc);
  }

  ImageSpec a_;
  const ProductParams& p_;
  int kp_;
  std::int64_t leaf_;
  const std::vector<double>& x_;
  const std::vector<float>& x32_;
  std::atomic<std::int64_t>& read_ns_;
  std::atomic<std::int64_t>& compute_ns_;
  NonFiniteSearch& nonfinite_;
};

class Product final : public MatrixProductOp {
 public:
  Product(const ImageSpec& a, ProductParams p)
      : a_(a), p_(std::move(p)), kp_(kernels::atax_padded_k(p_.k, p_.f32)) {
    leaf_ = p_.leaf_rows > 0 ? p_.leaf_rows : default_leaf_rows(a_);
    const std::int64_t rows_x = product_x_rows(a_, p_.kind);
    x_.assign(static_cast<std::size_t>(rows_x) * kp_, 0.0);
    for (std::int64_t i = 0; i < rows_x; ++i)
      for (int j = 0; j < p_.k; ++j)
        x_[static_cast<std::size_t>(i) * kp_ + j] = p_.x[static_cast<std::size_t>(i) * p_.k + j];
    if (p_.f32) x32_.assign(x_.begin(), x_.end());
    // In the products' type: a double X beyond float's range is Inf in float products.
    nonfinite_.on = p_.f32 ? !any_nonfinite(x32_.data(), std::int64_t(x32_.size()))
                           : !any_nonfinite(x_.data(), std::int64_t(x_.size()));
  }
  std::string describe() const override {
    const std::string what = p_.kind == ProductKind::atax ? "A^T (A X)"
                             : p_.kind == ProductKind::ax ? "A X"
                                                          : "A^T X";
    return what + ", X of " + std::to_string(p_.k) + " column(s), products in " +
           (p_.f32 ? "float" : "double") + ", leaves of " + std::to_string(leaf_) + " rows";
  }
  std::optional<ImageSpec> output() const override {
    if (p_.kind != ProductKind::ax) return std::nullopt;
    return ImageSpec{p_.k, a_.height, 1, p_.f32 ? SampleType::f32 : SampleType::f64};
  }
  std::size_t partial_bytes() const override {
    if (p_.kind == ProductKind::ax) return 0;
    return static_cast<std::size_t>(a_.width) * kp_ * sizeof(double);
  }
  std::int64_t fit_band_rows(std::int64_t rows, std::int64_t span) const override {
    if (rows >= span) return rows;
    std::int64_t fit = leaf_;
    while (fit * 2 <= rows) fit *= 2;
    // A leaf taller than the job is one band of all its rows: the same single leaf.
    return std::min(fit, span);
  }
  void merge(const std::byte* partial, const Band& band) override {
    const std::int64_t leaves = (band.rows + leaf_ - 1) / leaf_;
    const auto* p = reinterpret_cast<const double*>(partial);
    stack_.push_back({leaves, std::vector<double>(p, p + partial_bytes() / sizeof(double))});
    // Equal neighbours are the two halves of one subtree.
    while (stack_.size() >= 2 && stack_[stack_.size() - 2].leaves == stack_.back().leaves) {
      Sum right = std::move(stack_.back());
      stack_.pop_back();
      add_into(stack_.back().y.data(), right.y.data(), right.y.size());
      stack_.back().leaves *= 2;
    }
  }
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t) const override {
    const std::size_t acc = p_.f32 ? sizeof(float) : sizeof(double);
    const std::int64_t leaves = (band_rows + leaf_ - 1) / leaf_;
    const std::size_t depth = static_cast<std::size_t>(std::bit_width(std::uint64_t(leaves)));
    return static_cast<std::size_t>(std::min(leaf_, band_rows)) * kp_ * acc +
           (p_.kind == ProductKind::ax ? 0 : depth * partial_bytes());
  }
  std::size_t cuda_scratch_bytes(std::int64_t band_rows) const override {
#if defined(OOC_HAVE_CUDA)
    return product_cuda_scratch(a_, p_, kp_, leaf_, band_rows);
#else
    (void)band_rows;
    return 0;
#endif
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<ProductCpu>(a_, p_, kp_, leaf_, x_, x32_, read_ns_, compute_ns_,
                                        nonfinite_);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::product;
    c.columns = p_.k;
    return c;
  }
  bool has_cuda() const override {
    return kCudaBuilt;
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_product_cuda(devices, a_, p_, kp_, leaf_, x_);
#else
    (void)devices;
    return nullptr;
#endif
  }
  std::int64_t leaf_rows() const override {
    return leaf_;
  }
  void set_leaf_rows(std::int64_t rows) override {
    if (rows < 1 || (rows & (rows - 1)) != 0)
      throw Error(ErrorKind::usage,
                  "leaves of " + std::to_string(rows) + " rows: a leaf is a power of two of rows");
    leaf_ = rows;
  }
  std::vector<double> result() const override {
    if (p_.kind == ProductKind::ax) return {};
    std::vector<double> y(static_cast<std::size_t>(a_.width) * p_.k, 0.0);
    if (stack_.empty()) return y;
    // What is left are the complete subtrees, largest first, and the last band: fold them from
    // the right, as the tree over all leaves does.
    std::vector<double> acc = stack_.back().y;
    for (std::size_t i = stack_.size() - 1; i-- > 0;) {
      const std::vector<double>& l = stack_[i].y;
      for (std::size_t e = 0; e < acc.size(); ++e) acc[e] = l[e] + acc[e];
    }
    for (std::int64_t c = 0; c < a_.width; ++c)
      for (int j = 0; j < p_.k; ++j)
        y[static_cast<std::size_t>(c) * p_.k + j] = acc[static_cast<std::size_t>(c) * kp_ + j];
    return y;
  }
  double cpu_read_seconds() const override {
    return 1e-9 * double(read_ns_.load());
  }
  double cpu_compute_seconds() const override {
    return 1e-9 * double(compute_ns_.load());
  }
  NonFiniteA a_nonfinite() const override {
    NonFiniteA r;
    r.searched = nonfinite_.on && nonfinite_.rows.load() == a_.height;
    r.count = nonfinite_.count.load();
    if (r.count > 0) {
      const std::uint64_t at = nonfinite_.first.load();
      r.row = static_cast<std::int64_t>(at / static_cast<std::uint64_t>(a_.width));
      r.col = static_cast<std::int64_t>(at % static_cast<std::uint64_t>(a_.width));
    }
    return r;
  }

 private:
  struct Sum {
    std::int64_t leaves;
    std::vector<double> y;
  };
  ImageSpec a_;
  ProductParams p_;
  int kp_;
  std::int64_t leaf_ = 1;
  std::vector<double> x_;  // rows x kp, zero padded
  std::vector<float> x32_;
  std::vector<Sum> stack_;
  mutable std::atomic<std::int64_t> read_ns_{0}, compute_ns_{0};
  mutable NonFiniteSearch nonfinite_;
};

}  // namespace

ProductKind parse_product_kind(const std::string& text) {
  if (text == "atax") return ProductKind::atax;
  if (text == "ax") return ProductKind::ax;
  if (text == "atx") return ProductKind::atx;
  throw Error(ErrorKind::usage, "unknown product '" + text + "': use atax, ax or atx");
}

const char* name(ProductKind kind) noexcept {
  switch (kind) {
    case ProductKind::ax:
      return "ax";
    case ProductKind::atx:
      return "atx";
    case ProductKind::atax:
      break;
  }
  return "atax";
}

std::int64_t default_leaf_rows(const ImageSpec& a) {
  std::int64_t leaf = 1;
  while (leaf < a.height &&
         static_cast<std::size_t>(leaf) * a.row_bytes() < (std::size_t{16} << 20))
    leaf *= 2;
  return leaf;
}

std::int64_t product_x_rows(const ImageSpec& a, ProductKind kind) {
  return kind == ProductKind::atx ? a.height : a.width;
}

std::unique_ptr<MatrixProductOp> make_matrix_product(const ImageSpec& a, ProductParams params) {
  if (a.channels != 1 || (a.type != SampleType::f32 && a.type != SampleType::f64))
    throw Error(ErrorKind::usage,
                "A must have one channel of f32 or f64, this one is " + a.describe() +
                    ": convert it first, e.g. oocconv A A32.raw --taps 1 --out-type f32");
  if (params.k < 1 || params.k > 4096)
    throw Error(ErrorKind::usage,
                "X has " + std::to_string(params.k) + " columns: 1 to 4096 are supported");
  if (params.leaf_rows < 0 || (params.leaf_rows & (params.leaf_rows - 1)) != 0 ||
      params.leaf_rows > (std::int64_t{1} << 40))
    throw Error(ErrorKind::usage, "--leaf-rows " + std::to_string(params.leaf_rows) +
                                      " is not a power of two (1, 2, 4, ...)");
  const std::int64_t rows = product_x_rows(a, params.kind);
  const std::size_t want = static_cast<std::size_t>(rows) * static_cast<std::size_t>(params.k);
  if (params.x.size() != want)
    throw Error(
        ErrorKind::usage,
        std::string("X has ") + std::to_string(params.x.size() / params.k) + " rows, but " +
            name(params.kind) + " of a " + std::to_string(a.height) + " x " +
            std::to_string(a.width) + " matrix needs " + std::to_string(rows) +
            (params.kind == ProductKind::atx ? " (one per row of A)" : " (one per column of A)"));
  return std::make_unique<Product>(a, std::move(params));
}

}  // namespace ooc
