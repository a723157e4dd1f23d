// A volume's rank filter over a 3-D footprint (scipy.ndimage's footprint= in 3-D): the median,
// percentile and rank stages, and the minimum and maximum of the morphology stages (rank 0 and
// the last: a pruned network of n - 1 exchanges). Each band's rows are padded by the border rule
// across the row, as rank3d.cpp does, and each of the footprint's ones is a wire of the rank
// network of kernels/cpu/morphology/rank3d.hpp (a window row of one column).
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

#if defined(OOC_HAVE_CUDA)
// rank3d_cuda.cpp: the footprint's runs of ones on the devices, the rank selected there.
std::unique_ptr<CudaKernel> make_footprint3d_cuda(const std::vector<int>& devices,
                                                  const Rank3dCudaBox& box,
                                                  const std::vector<std::uint8_t>& mask,
                                                  BorderMode border, double cval);
#endif

namespace {

// A one of the footprint: its plane, row and column in the footprint's box.
struct Tap {
  std::int64_t z, y, x;
};

class Footprint3dKernel final : public CpuKernel {
 public:
  Footprint3dKernel(std::vector<Tap> taps, std::int64_t rz, std::int64_t ry, std::int64_t rx,
                    std::int64_t rank, BorderMode border, double cval)
      : taps_(std::move(taps)),
        rz_(rz),
        ry_(ry),
        rx_(rx),
        border_(border),
        cval_(cval),
        network_(kernels::rank_network(static_cast<int>(taps_.size()), static_cast<int>(rank),
                                       &out_wire_)),
        scratch_([n = static_cast<std::int64_t>(taps_.size())] {
          return std::vector<std::byte>(kernels::rank3d_scratch_bytes(n));
        }) {}

  void run(const CpuBand& b) override {
    const std::int64_t W = b.in.width, C = b.in.channels, count = b.band.rows + 2 * b.halo;
    const std::int64_t planes = 2 * b.plane_halo + 1, Wp = W + 2 * rx_;
    const std::size_t px = b.in.pixel_bytes(), padded_row = static_cast<std::size_t>(Wp) * px;
    ScratchBuffer buf = pool_.take(static_cast<std::size_t>(planes * count) * padded_row);
    std::byte* const padded_rows = buf.data();
    pad_band_rows(b, rx_, rx_, border_, cval_, padded_rows, padded_row);
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      std::vector<const std::byte*> wires(taps_.size());
      for (std::size_t i = 0; i < taps_.size(); ++i) {
        const Tap& t = taps_[i];
        const std::int64_t plane = b.plane_halo - rz_ + t.z, row = b.halo - ry_ + y + t.y;
        wires[i] = padded_rows + static_cast<std::size_t>(plane * count + row) * padded_row +
                   static_cast<std::size_t>(t.x) * px;
      }
      kernels::Rank3dArgs a;
      a.rows = wires.data();
      a.window_rows = static_cast<std::int64_t>(wires.size());
      a.cols = 1;
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
  std::vector<Tap> taps_;
  std::int64_t rz_, ry_, rx_;
  BorderMode border_;
  double cval_;
  int out_wire_ = 0;  // before network_: rank_network sets it
  std::vector<std::pair<int, int>> network_;
  tbb::enumerable_thread_specific<std::vector<std::byte>> scratch_;
  BufferPool pool_;
};

class Footprint3d final : public Operation {
 public:
  Footprint3d(const ImageSpec& in, const Footprint& f, std::int64_t rank, BorderMode border,
              double cval, std::string digest)
      : in_(in),
        rz_(f.depth / 2),
        ry_(f.height / 2),
        rx_(f.width / 2),
        rank_(rank),
        border_(border),
        cval_(cval),
        what_("rank " + std::to_string(rank) + " of footprint " + f.name + " of " +
              std::to_string(f.depth) + "x" + std::to_string(f.height) + "x" +
              std::to_string(f.width) + " (3-D, " + std::to_string(f.count()) + " samples)"),
        digest_(std::move(digest)),
        depth_(f.depth),
        height_(f.height),
        width_(f.width),
        mask_(f.mask) {
    for (std::int64_t z = 0; z < f.depth; ++z)
      for (std::int64_t y = 0; y < f.height; ++y)
        for (std::int64_t x = 0; x < f.width; ++x)
          if (f.mask[static_cast<std::size_t>((z * f.height + y) * f.width + x)])
            taps_.push_back({z, y, x});
  }
  std::string describe() const override { return what_; }
  std::string fingerprint() const override {
    return what_ + " [" + digest_ + "] " + std::string(name(border_)) + " " + exact_number(cval_);
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return ry_; }
  std::int64_t plane_halo() const override { return rz_; }
  std::optional<std::int64_t> column_halo() const override { return rx_; }
  BorderMode border() const override { return border_; }
  std::size_t cpu_scratch_bytes(std::int64_t, std::int64_t) const override {
    return kernels::rank3d_scratch_bytes(static_cast<std::int64_t>(taps_.size()));
  }
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    return static_cast<std::size_t>((2 * rz_ + 1) * (rows + 2 * ry_)) *
           static_cast<std::size_t>(cols + 2 * rx_) * in_.pixel_bytes();
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<Footprint3dKernel>(taps_, rz_, ry_, rx_, rank_, border_, cval_);
  }
  bool has_cuda() const override { return kCudaBuilt && depth_ <= kRank3dCudaMaxPlanes; }
  bool cpu_gives_cuda_bits() const override { return true; }  // selections, no arithmetic
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_footprint3d_cuda(devices, {depth_, height_, width_, rz_, ry_, rx_, rank_}, mask_,
                                 border_, cval_);
#else
    (void)devices;
    return nullptr;
#endif
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::rank3d;
    c.window_samples = static_cast<double>(taps_.size());
    c.footprint_runs = 1;  // the GPU's radix select
    c.key_bits = 8.0 * static_cast<double>(sample_bytes(in_.type));
    c.window_rows = static_cast<double>(2 * ry_ + 1);
    c.window_cols = static_cast<double>(2 * rx_ + 1);
    return c;
  }

 private:
  ImageSpec in_;
  std::int64_t rz_, ry_, rx_, rank_;
  BorderMode border_;
  double cval_;
  std::string what_, digest_;
  std::int64_t depth_, height_, width_;
  std::vector<std::uint8_t> mask_;  // the CUDA kernel's runs
  std::vector<Tap> taps_;
};

// FNV-1a of the mask: a resumed run's fingerprint notices another footprint of the same name.
std::string digest_of(const std::vector<std::uint8_t>& mask) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint8_t v : mask) h = (h ^ v) * 1099511628211ull;
  return std::to_string(h);
}

}  // namespace

std::unique_ptr<Operation> make_rank3d(const ImageSpec& in, const Footprint& f, std::int64_t rank,
                                       BorderMode border, double cval) {
  if (f.axes != 3)
    throw Error(ErrorKind::usage,
                "footprint '" + f.name +
                    "' is 2-D: a volume takes a 3-D footprint (planes x rows x columns, as "
                    "scipy's), or add --planes to filter each plane in 2-D");
  // All ones: the box's filter (its CUDA kernel, its cheaper padding).
  if (f.count() == f.depth * f.height * f.width)
    return make_rank3d(in, f.depth, f.height, f.width, rank, border, cval);
  if (f.count() > kernels::kMaxRank3dSamples)
    throw Error(ErrorKind::usage,
                "footprint '" + f.name + "' holds " + std::to_string(f.count()) +
                    " ones, more than the " + std::to_string(kernels::kMaxRank3dSamples) +
                    " a 3-D rank, minimum or maximum filter takes: use a smaller footprint, or "
                    "--planes for 2-D");
  return std::make_unique<Footprint3d>(in, f, rank, border, cval, digest_of(f.mask));
}

}  // namespace ooc::detail::morphology
