// The CUDA kernel object of the matrix products: each leaf of a band is two cuBLAS calls (GEMM, or
// GEMV for one column) on the staged rows, and the leaves are summed on the device as the fixed
// tree of atax.hpp (a binary counter of subtrees, folded from the right at the band's end). Every
// GEMM of a leaf has the same shape and runs on a handle with its own fixed workspace, which is
// what cuBLAS needs to give the same bits on every run. cuBLAS is loaded on first use
// (cublas_dl.hpp).
#include <cuda_runtime.h>

#include <bit>
#include <vector>

#include "cublas_dl.hpp"
#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "kernels/cuda/linalg/atax.cuh"
#include "ooc/error.hpp"
#include "ooc/ops/atax.hpp"
#include "ops/cuda_kernels.hpp"

namespace ooc {
namespace {

void cublas_try(cublasStatus_t s, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::string msg = std::string("cuBLAS error ") + cublasGetStatusName(s) + " in " + call;
  if (s == CUBLAS_STATUS_ALLOC_FAILED || s == CUBLAS_STATUS_NOT_INITIALIZED)
    msg += ": the GPU is out of memory or cuBLAS cannot start; lower --mem-limit or --slots";
  throw Error(ErrorKind::device, msg);
}
#define OOC_CUBLAS_TRY(expr) cublas_try((expr), #expr)

// cuBLAS's GEMV (unit strides) and GEMM with alpha 1 and beta 0, on matrices of float (f32) or
// double given as bytes: the products below are written once for both precisions. A failure
// names the cuBLAS call.
template <class S>
const S* as(const std::byte* p) {
  return reinterpret_cast<const S*>(p);
}
template <class S>
S* as(std::byte* p) {
  return reinterpret_cast<S*>(p);
}
void gemv(bool f32, cublasHandle_t h, cublasOperation_t op, int m, int n, const std::byte* a,
          int lda, const std::byte* x, std::byte* y) {
  const float onef = 1, zerof = 0;
  const double one = 1, zero = 0;
  if (f32)
    OOC_CUBLAS_TRY(cublasSgemv(h, op, m, n, &onef, as<float>(a), lda, as<float>(x), 1, &zerof,
                               as<float>(y), 1));
  else
    OOC_CUBLAS_TRY(cublasDgemv(h, op, m, n, &one, as<double>(a), lda, as<double>(x), 1, &zero,
                               as<double>(y), 1));
}
void gemm(bool f32, cublasHandle_t h, cublasOperation_t opa, cublasOperation_t opb, int m, int n,
          int k, const std::byte* a, int lda, const std::byte* b, int ldb, std::byte* c, int ldc) {
  const float onef = 1, zerof = 0;
  const double one = 1, zero = 0;
  if (f32)
    OOC_CUBLAS_TRY(cublasSgemm(h, opa, opb, m, n, k, &onef, as<float>(a), lda, as<float>(b), ldb,
                               &zerof, as<float>(c), ldc));
  else
    OOC_CUBLAS_TRY(cublasDgemm(h, opa, opb, m, n, k, &one, as<double>(a), lda, as<double>(b), ldb,
                               &zero, as<double>(c), ldc));
}

constexpr std::size_t kWorkspace = std::size_t{32} << 20;

// Scratch of one slot: [converted leaf][T][float leaf sums][tree stack entries 1..depth].
struct Layout {
  std::size_t convert = 0, t = 0, y32 = 0, stack = 0, entry = 0;
  std::size_t depth = 0;
  std::size_t total() const { return convert + t + y32 + depth * entry; }
};

std::size_t align(std::size_t n) {
  return (n + 255) / 256 * 256;
}

Layout layout(const ImageSpec& a, const ProductParams& p, int kp, std::int64_t leaf,
              std::int64_t band_rows) {
  Layout l;
  const std::size_t acc = p.f32 ? sizeof(float) : sizeof(double);
  const std::int64_t rows = std::min(leaf, band_rows);
  const SampleType acc_type = p.f32 ? SampleType::f32 : SampleType::f64;
  if (a.type != acc_type)
    l.convert = align(static_cast<std::size_t>(rows) * static_cast<std::size_t>(a.width) * acc);
  l.t = align(static_cast<std::size_t>(rows) * kp * acc);
  if (p.kind != ProductKind::ax) {
    l.entry = align(static_cast<std::size_t>(a.width) * kp * sizeof(double));
    if (p.f32) l.y32 = align(static_cast<std::size_t>(a.width) * kp * sizeof(float));
    const std::int64_t leaves = (band_rows + leaf - 1) / leaf;
    l.depth = static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(leaves)));
  }
  return l;
}

class ProductCuda final : public CudaKernel {
 public:
  ProductCuda(const std::vector<int>& devices, const ImageSpec& a, const ProductParams& p, int kp,
              std::int64_t leaf, const std::vector<double>& x)
      : ProductCuda(devices, a, p, kp, leaf, host_x(p, x)) {
    // cuBLAS's first handle loads the library and its first calls load their kernels: tens of
    // milliseconds that belong to the setup, not to the first bands.
    for (int d : devices) warm_up(d);
  }

  ~ProductCuda() override {
    for (Handle& h : handles_)
      if (h.handle) {
        cudaSetDevice(h.device);
        cublasDestroy(h.handle);
      }
  }

  // One handle per slot, bound to its stream: a handle is not safe to share between threads, and
  // a fixed workspace of its own keeps cuBLAS's choice of algorithm, and so the bits, the same.
  void start(const CudaSlotInfo& slot) override {
    const auto i = static_cast<std::size_t>(slot.slot);
    if (handles_.size() <= i) handles_.resize(i + 1);
    Handle& h = handles_[i];
    h.device = slot.device;
    h.workspace = cuda::DeviceBuffer(slot.device, kWorkspace);
    OOC_CUBLAS_TRY(cublasCreate(&h.handle));
    OOC_CUBLAS_TRY(cublasSetStream(h.handle, static_cast<cudaStream_t>(slot.stream)));
    OOC_CUBLAS_TRY(cublasSetWorkspace(h.handle, h.workspace.data(), kWorkspace));
  }
  void stop(const CudaSlotInfo& slot) override {
    const auto i = static_cast<std::size_t>(slot.slot);
    if (i >= handles_.size()) return;
    Handle& h = handles_[i];
    if (h.handle) cublasDestroy(h.handle);
    h = Handle{};
  }

  void run_async(const CudaBand& b) override {
    const auto s = static_cast<cudaStream_t>(b.stream);
    cublasHandle_t h = handles_[static_cast<std::size_t>(b.slot)].handle;
    const Layout l = layout(a_, p_, kp_, leaf_, b.band.rows);
    std::byte* convert = b.scratch;
    std::byte* t_buf = convert + l.convert;
    auto* y32 = reinterpret_cast<float*>(t_buf + l.t);
    std::byte* stack_at = t_buf + l.t + l.y32;
    const std::size_t n_y = static_cast<std::size_t>(a_.width) * kp_;
    if (l.depth > 0) OOC_CUDA_TRY(cudaMemsetAsync(stack_at, 0, l.depth * l.entry, s));
    // Entry 0 is the band's partial (zeroed by the engine); entry i > 0 lives in the scratch.
    auto entry = [&](std::size_t i) {
      return i == 0 ? reinterpret_cast<double*>(b.partial)
                    : reinterpret_cast<double*>(stack_at + (i - 1) * l.entry);
    };
    std::vector<std::int64_t> sizes;  // leaves under each stack entry
    const std::int64_t leaves = (b.band.rows + leaf_ - 1) / leaf_;
    for (std::int64_t i = 0; i < leaves; ++i) {
      const std::int64_t r0 = i * leaf_, rows = std::min(leaf_, b.band.rows - r0);
      const std::size_t top = sizes.size();
      leaf(b, h, s, r0, rows, convert, t_buf, y32, l.depth > 0 ? entry(top) : nullptr);
      if (l.depth == 0) continue;
      sizes.push_back(1);
      while (sizes.size() >= 2 && sizes[sizes.size() - 2] == sizes.back()) {
        cuda::add_async(entry(sizes.size() - 2), entry(sizes.size() - 1), n_y, s);
        sizes.pop_back();
        sizes.back() *= 2;
      }
    }
    for (std::size_t i = sizes.size(); i-- > 1;) cuda::add_async(entry(i - 1), entry(i), n_y, s);
  }

 private:
  ProductCuda(const std::vector<int>& devices, const ImageSpec& a, const ProductParams& p, int kp,
              std::int64_t leaf, const std::vector<std::byte>& x)
      : a_(a), p_{p.kind, p.k, p.f32, {}}, kp_(kp), leaf_(leaf), x_(devices, x.data(), x.size()) {}

  struct Handle {
    cublasHandle_t handle = nullptr;
    int device = 0;
    cuda::DeviceBuffer workspace;
  };

  // X padded to kp columns, in the type of the products.
  static std::vector<std::byte> host_x(const ProductParams& p, const std::vector<double>& x) {
    std::vector<std::byte> bytes(x.size() * (p.f32 ? sizeof(float) : sizeof(double)));
    if (p.f32) {
      auto* f = reinterpret_cast<float*>(bytes.data());
      for (std::size_t i = 0; i < x.size(); ++i) f[i] = static_cast<float>(x[i]);
    } else {
      std::memcpy(bytes.data(), x.data(), bytes.size());
    }
    return bytes;
  }

  void warm_up(int device) {
    OOC_CUDA_TRY(cudaSetDevice(device));
    cublasHandle_t h = nullptr;
    OOC_CUBLAS_TRY(cublasCreate(&h));
    struct Destroy {
      cublasHandle_t h;
      ~Destroy() { cublasDestroy(h); }
    } destroy{h};
    const std::size_t acc = p_.f32 ? sizeof(float) : sizeof(double);
    const int n = 64, m = 8, k = p_.k;
    cuda::DeviceBuffer a(device, std::size_t(n) * m * acc), x(device, std::size_t(n) * kp_ * acc),
        t(device, std::size_t(m) * kp_ * acc), y(device, std::size_t(n) * kp_ * acc);
    OOC_CUDA_TRY(cudaMemset(a.data(), 0, a.size()));
    OOC_CUDA_TRY(cudaMemset(x.data(), 0, x.size()));
    OOC_CUDA_TRY(cudaMemset(t.data(), 0, t.size()));
    gemm_t(h, n, m, k, a.data(), n, x.data(), t.data(), kp_);
    gemm_y(h, n, m, k, a.data(), n, t.data(), kp_, y.data());
    OOC_CUDA_TRY(cudaDeviceSynchronize());
  }

  // The leaf's rows [r0, r0 + rows) of the band: T = A_l X (into the output for ax), then
  // y = A_l^T T. cuBLAS is column-major: a row-major A_l is the column-major N x rows matrix Ac.
  void leaf(const CudaBand& b, cublasHandle_t h, cudaStream_t s, std::int64_t r0, std::int64_t rows,
            std::byte* convert, std::byte* t_buf, float* y32, double* y) const {
    const SampleType acc_type = p_.f32 ? SampleType::f32 : SampleType::f64;
    const std::size_t acc = p_.f32 ? sizeof(float) : sizeof(double);
    const int n = static_cast<int>(a_.width), m = static_cast<int>(rows), k = p_.k;
    const std::byte* a = b.in + static_cast<std::size_t>(r0) * b.in_stride;
    int lda = static_cast<int>(b.in_stride / sample_bytes(a_.type));
    if (a_.type != acc_type) {
      cuda::convert_rows_async(a, b.in_stride, a_.type, convert, acc_type, rows, a_.width, s);
      a = convert;
      lda = n;
    }
    const std::byte* x = x_.on(b.device);
    // T: the output rows (ax), X's rows of the leaf (atx), or scratch.
    std::byte* t = t_buf;
    int ldt = kp_;
    if (p_.kind == ProductKind::ax) {
      t = b.out + static_cast<std::size_t>(r0) * b.out_stride;
      ldt = k;
    } else if (p_.kind == ProductKind::atx) {
      t = const_cast<std::byte*>(x) + static_cast<std::size_t>(b.band.y0 + r0) * kp_ * acc;
    }
    if (p_.kind != ProductKind::atx) gemm_t(h, n, m, k, a, lda, x, t, ldt);
    if (p_.kind == ProductKind::ax) return;
    if (p_.f32) {
      gemm_y(h, n, m, k, a, lda, t, ldt, reinterpret_cast<std::byte*>(y32));
      cuda::widen_async(y32, y, static_cast<std::size_t>(n) * kp_, s);
    } else {
      gemm_y(h, n, m, k, a, lda, t, ldt, reinterpret_cast<std::byte*>(y));
    }
  }

  // Tc (k x m, ld ldt) = Xc (k x n, ld kp) Ac (n x m, ld lda).
  void gemm_t(cublasHandle_t h, int n, int m, int k, const std::byte* a, int lda,
              const std::byte* x, std::byte* t, int ldt) const {
    if (k == 1)
      gemv(p_.f32, h, CUBLAS_OP_T, n, m, a, lda, x, t);
    else
      gemm(p_.f32, h, CUBLAS_OP_N, CUBLAS_OP_N, k, m, n, x, kp_, a, lda, t, ldt);
  }

  // Yc (k x n, ld kp) = Tc (k x m, ld ldt) Ac^T (m x n).
  void gemm_y(cublasHandle_t h, int n, int m, int k, const std::byte* a, int lda,
              const std::byte* t, int ldt, std::byte* y) const {
    if (k == 1)
      gemv(p_.f32, h, CUBLAS_OP_N, n, m, a, lda, t, y);
    else
      gemm(p_.f32, h, CUBLAS_OP_N, CUBLAS_OP_T, k, n, m, t, ldt, a, lda, y, kp_);
  }

  ImageSpec a_;
  ProductParams p_;
  int kp_;
  std::int64_t leaf_;
  cuda::Replicated x_;
  std::vector<Handle> handles_;  // by slot (start, stop)
};

}  // namespace

std::unique_ptr<CudaKernel> make_product_cuda(const std::vector<int>& devices, const ImageSpec& a,
                                              const ProductParams& p, int kp, std::int64_t leaf,
                                              const std::vector<double>& x_padded) {
  return std::make_unique<ProductCuda>(devices, a, p, kp, leaf, x_padded);
}

std::size_t product_cuda_scratch(const ImageSpec& a, const ProductParams& p, int kp,
                                 std::int64_t leaf, std::int64_t band_rows) {
  return layout(a, p, kp, leaf, band_rows).total();
}

}  // namespace ooc
