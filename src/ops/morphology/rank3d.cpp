// A volume's median, percentile and rank filters of a D x H x W box (the rank stages on a volume):
// each band's input rows padded once by the border rule across the row, then every output row's
// window (D planes x H rows x W columns, as scipy places it) through the rank network of
// kernels/cpu/morphology/rank3d.hpp.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <vector>

#include "kernels/cpu/morphology/border_constant.hpp"
#include "kernels/cpu/morphology/rank3d.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/pipeline/chain_impl.hpp"
#include "pad_rows.hpp"
#include "window.hpp"

namespace ooc::detail::morphology {
namespace {

struct Box {
  Extent z, y, x;
  std::int64_t samples() const {
    return (z.left + z.right + 1) * (y.left + y.right + 1) * (x.left + x.right + 1);
  }
};

class Rank3dKernel final : public CpuKernel {
 public:
  Rank3dKernel(Box box, std::int64_t rank, BorderMode border, double cval)
      : box_(box),
        rank_(rank),
        border_(border),
        cval_(cval),
        network_(kernels::rank_network(static_cast<int>(box.samples()), static_cast<int>(rank),
                                       &out_wire_)),
        scratch_([n = box.samples()] {
          return std::vector<std::byte>(kernels::rank3d_scratch_bytes(n));
        }) {}

  void run(const CpuBand& b) override {
    const std::int64_t W = b.in.width, C = b.in.channels, count = b.band.rows + 2 * b.halo;
    const std::int64_t planes = 2 * b.plane_halo + 1, Wp = W + box_.x.left + box_.x.right;
    const std::size_t px = b.in.pixel_bytes(), padded_row = static_cast<std::size_t>(Wp) * px;
    // Every input row of the band padded across the row (a null row: the constant), in a buffer
    // handed from band to band.
    ScratchBuffer buf = pool_.take(static_cast<std::size_t>(planes * count) * padded_row);
    std::byte* const padded_rows = buf.data();
    pad_band_rows(b, box_.x.left, box_.x.right, border_, cval_, padded_rows, padded_row);
    const std::int64_t Nz = box_.z.left + box_.z.right + 1, Ny = box_.y.left + box_.y.right + 1;
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      std::vector<const std::byte*> rows(static_cast<std::size_t>(Nz * Ny));
      for (std::int64_t dz = 0; dz < Nz; ++dz)
        for (std::int64_t dy = 0; dy < Ny; ++dy) {
          const std::int64_t plane = b.plane_halo - box_.z.left + dz;
          const std::int64_t row = b.halo - box_.y.left + y + dy;
          rows[static_cast<std::size_t>(dz * Ny + dy)] =
              padded_rows + static_cast<std::size_t>(plane * count + row) * padded_row;
        }
      kernels::Rank3dArgs a;
      a.rows = rows.data();
      a.window_rows = Nz * Ny;
      a.cols = box_.x.left + box_.x.right + 1;
      a.samples = W * C;
      a.channels = static_cast<int>(C);
      a.type = b.in.type;
      a.out_wire = out_wire_;
      a.network = &network_;
      a.out = b.out.row(y);
      kernels::rank3d_row(a, scratch_.local().data());
    });
    pool_.give(std::move(buf));
  }

 private:
  Box box_;
  std::int64_t rank_;
  BorderMode border_;
  double cval_;
  int out_wire_ = 0;  // before network_: rank_network sets it
  std::vector<std::pair<int, int>> network_;
  tbb::enumerable_thread_specific<std::vector<std::byte>> scratch_;
  BufferPool pool_;
};

class Rank3d final : public Operation {
 public:
  Rank3d(const ImageSpec& in, Box box, std::int64_t rank, BorderMode border, double cval)
      : in_(in), box_(box), rank_(rank), border_(border), cval_(cval) {}
  std::string describe() const override {
    auto n = [](const Extent& e) { return std::to_string(e.left + e.right + 1); };
    return "rank " + std::to_string(rank_) + " of " + n(box_.z) + "x" + n(box_.y) + "x" +
           n(box_.x) + " (3-D, " + method() + ")";
  }
  std::string fingerprint() const override {
    return describe() + " " + std::string(name(border_)) + " " + exact_number(cval_);
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return std::max(box_.y.left, box_.y.right); }
  std::int64_t plane_halo() const override { return std::max(box_.z.left, box_.z.right); }
  std::optional<std::int64_t> column_halo() const override {
    return std::max(box_.x.left, box_.x.right);
  }
  BorderMode border() const override { return border_; }
  std::size_t cpu_scratch_bytes(std::int64_t, std::int64_t) const override {
    return kernels::rank3d_scratch_bytes(box_.samples());
  }
  // The band's rows padded across the row.
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    const std::int64_t planes = 2 * plane_halo() + 1, count = rows + 2 * halo();
    return static_cast<std::size_t>(planes * count) *
           static_cast<std::size_t>(cols + box_.x.left + box_.x.right) * in_.pixel_bytes();
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<Rank3dKernel>(box_, rank_, border_, cval_);
  }
  bool has_cuda() const override {
    return kCudaBuilt && box_.samples() <= kRank3dCudaMaxSamples &&
           box_.z.left + box_.z.right + 1 <= kRank3dCudaMaxPlanes;
  }
  bool cpu_gives_cuda_bits() const override { return true; }  // selections, no arithmetic
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>&) const override {
#if defined(OOC_HAVE_CUDA)
    const Rank3dCudaBox box{box_.z.left + box_.z.right + 1,
                            box_.y.left + box_.y.right + 1,
                            box_.x.left + box_.x.right + 1,
                            box_.z.left,
                            box_.y.left,
                            box_.x.left,
                            rank_};
    return make_rank3d_cuda(box, border_, cval_);
#else
    return nullptr;
#endif
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::rank3d;
    c.window_samples = static_cast<double>(box_.samples());
    c.key_bits = 8.0 * static_cast<double>(sample_bytes(in_.type));
    c.window_rows = static_cast<double>(box_.y.left + box_.y.right + 1);
    c.window_cols = static_cast<double>(box_.x.left + box_.x.right + 1);
    return c;
  }

 private:
  // The road the kernel takes (kernels::rank3d_plan decides), with its compare-exchanges.
  std::string method() const {
    int out = 0;
    const auto network =
        kernels::rank_network(static_cast<int>(box_.samples()), static_cast<int>(rank_), &out);
    kernels::Rank3dArgs a;
    a.window_rows = (box_.z.left + box_.z.right + 1) * (box_.y.left + box_.y.right + 1);
    a.cols = box_.x.left + box_.x.right + 1;
    a.samples = in_.width * in_.channels;
    a.channels = static_cast<int>(in_.channels);
    a.type = in_.type;
    a.out_wire = out;
    a.network = &network;
    const kernels::Rank3dPlan* p = kernels::rank3d_plan(a);
    if (!p) return "a network of " + std::to_string(network.size()) + " exchanges";
    return "columns of " + std::to_string(p->rows) + " samples sorted (" +
           std::to_string(p->sort.size()) + " exchanges) and shared by neighbouring windows, " +
           std::to_string(p->cols - 1) + " merged (" + std::to_string(p->merge.size()) +
           " exchanges), then a two-list selection with the window's own column";
  }
  ImageSpec in_;
  Box box_;
  std::int64_t rank_;
  BorderMode border_;
  double cval_;
};

}  // namespace

std::unique_ptr<Operation> make_rank3d(const ImageSpec& in, std::int64_t depth, std::int64_t height,
                                       std::int64_t width, std::int64_t rank, BorderMode border,
                                       double cval) {
  const Box box{extent(depth, false), extent(height, false), extent(width, false)};
  if (box.samples() > kernels::kMaxRank3dSamples)
    throw Error(ErrorKind::usage,
                "a 3-D rank window of " + std::to_string(depth) + "x" + std::to_string(height) +
                    "x" + std::to_string(width) + " holds " + std::to_string(box.samples()) +
                    " samples, more than the " + std::to_string(kernels::kMaxRank3dSamples) +
                    " a 3-D rank filter takes: use a smaller window, or --planes for 2-D");
  return std::make_unique<Rank3d>(in, box, rank, border, cval);
}

}  // namespace ooc::detail::morphology
