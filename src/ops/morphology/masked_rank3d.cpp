// Rank filters of a volume in 3-D that know holes (issue 48): median, percentile, rank, minimum,
// maximum, opening and closing over the valid samples of a 3-D box or footprint
// (kernels/cpu/masked/volume.hpp; masked.hpp's rank rule). Where an unmasked 3-D filter exists
// for the window it runs first, and only the windows with a hole are selected again. On the GPU
// (kernels/cuda/masked/rank.cu) every window is selected from its valid samples: the CPU's values.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/digest.hpp"
#include "kernels/cpu/masked/pool.hpp"
#include "kernels/cpu/masked/volume.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"
#include "ops/morphology/window.hpp"

namespace ooc::detail {
namespace {

class MaskedRank3dKernel final : public CpuKernel {
 public:
  MaskedRank3dKernel(const kernels::masked::VolumeRankArgs& a,
                     std::shared_ptr<const std::vector<std::uint8_t>> mask,
                     std::unique_ptr<CpuKernel> fast)
      : base_(a), mask_(std::move(mask)), fast_(std::move(fast)) {}
  void start(int slot) override {
    if (fast_) fast_->start(slot);
  }
  void stop(int slot) override {
    if (fast_) fast_->stop(slot);
  }
  void run(const CpuBand& b) override {
    if (fast_) fast_->run(b);
    kernels::masked::VolumeRankArgs a = base_;
    a.mask = mask_->empty() ? nullptr : mask_->data();
    a.width = b.in.width;
    a.rows = b.rows;
    a.halo = b.halo;
    a.plane_halo = b.plane_halo;
    a.out_rows = b.band.rows;
    a.out = b.out.data;
    a.out_stride = b.out.row_stride;
    a.unmasked_done = fast_ != nullptr;
    auto scratch = pool_.take();
    kernels::masked::volume_rank_band(a, *scratch);
  }

 private:
  kernels::masked::VolumeRankArgs base_;
  std::shared_ptr<const std::vector<std::uint8_t>> mask_;
  std::unique_ptr<CpuKernel> fast_;
  kernels::masked::BufferPool<std::vector<std::byte>> pool_;
};

class MaskedRank3d final : public Operation {
 public:
  MaskedRank3d(const StageContext& c, const MaskedWindow3d& w, std::int64_t rank,
               std::int64_t count, std::string what, std::unique_ptr<Operation> fast)
      : in_(c.in),
        text_(w.xy.text),
        mask_(std::make_shared<const std::vector<std::uint8_t>>(w.xy.mask)),
        what_(std::move(what)),
        fast_(std::move(fast)) {
    a_.channels = c.in.channels;
    a_.type = c.in.type;
    a_.border = c.settings.border;
    a_.cval = c.settings.border_value;
    a_.nodata = *c.settings.nodata;
    a_.front = w.front;
    a_.d = w.d;
    a_.top = w.xy.top;
    a_.h = w.xy.h;
    a_.left = w.xy.left;
    a_.w = w.xy.w;
    a_.rank = rank;
    a_.count = count;
  }
  std::string describe() const override {
    return what_ + " of the valid samples of " + text_ + " in 3-D, border " +
           std::string(name(a_.border)) + ", nodata " + nodata_text(a_.nodata);
  }
  std::string fingerprint() const override {
    return describe() + ", values " +
           Digest()
               .add(a_.cval)
               .add(std::string(mask_->begin(), mask_->end()))
               .add(std::vector<double>{double(a_.rank), double(a_.count), double(a_.front),
                                        double(a_.d), double(a_.top), double(a_.h), double(a_.left),
                                        double(a_.w)})
               .hex();
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override {
    return std::max({a_.top, a_.h - 1 - a_.top, fast_ ? fast_->halo() : 0});
  }
  std::int64_t plane_halo() const override {
    return std::max({a_.front, a_.d - 1 - a_.front, fast_ ? fast_->plane_halo() : 0});
  }
  BorderMode border() const override { return a_.border; }
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return fast_ ? fast_->cpu_scratch_bytes(band_rows, cols) : 0;
  }
  std::size_t cpu_band_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    kernels::masked::VolumeRankArgs a = a_;
    a.out_rows = band_rows;
    a.width = cols;
    return kernels::masked::volume_rank_band_bytes(a) +
           (fast_ ? fast_->cpu_band_bytes(band_rows, cols) : 0);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<MaskedRank3dKernel>(a_, mask_, fast_ ? fast_->make_cpu() : nullptr);
  }
  Cost cost() const override {
    if (fast_) return fast_->cost();
    Cost c;
    c.kind = Cost::Kind::rank3d;
    return c;
  }
  // Of a -0 and a +0 on the rank's place the two may leave either (masked_rank.cpp says why the
  // CPU still takes bands while CUDA starts).
  bool has_cuda() const override { return kCudaBuilt && a_.d <= kMaskedRank3dCudaMaxPlanes; }
  bool cpu_gives_cuda_bits() const override { return true; }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_masked_rank3d_cuda(devices, a_, *mask_, in_);
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  ImageSpec in_;
  std::string text_;
  std::shared_ptr<const std::vector<std::uint8_t>> mask_;
  std::string what_;
  std::unique_ptr<Operation> fast_;
  kernels::masked::VolumeRankArgs a_;
};

// The window of a box (depth x p's rows x columns) or of p's 3-D footprint, placed as scipy
// places it; `dilation`: grey_dilation's (even sides one earlier, the footprint mirrored).
MaskedWindow3d window3d(const MorphParams& p, std::int64_t depth, bool dilation) {
  using morphology::extent;
  MaskedWindow3d w;
  const Footprint& f = p.footprint;
  const std::int64_t d = f.empty() ? depth : f.depth, h = f.empty() ? p.height : f.height,
                     wd = f.empty() ? p.width : f.width;
  w.d = d;
  w.front = extent(d, dilation).left;
  w.xy.h = h;
  w.xy.top = extent(h, dilation).left;
  w.xy.w = wd;
  w.xy.left = extent(wd, dilation).left;
  const std::string box = std::to_string(d) + "x" + std::to_string(h) + "x" + std::to_string(wd);
  if (f.empty()) {
    w.xy.text = box;
  } else {
    w.xy.mask = f.mask;
    if (dilation) std::reverse(w.xy.mask.begin(), w.xy.mask.end());
    w.xy.text = "footprint " + f.name + " of " + box;
  }
  return w;
}

std::int64_t count_of(const MaskedWindow3d& w) {
  if (w.xy.mask.empty()) return w.d * w.xy.h * w.xy.w;
  return static_cast<std::int64_t>(std::count(w.xy.mask.begin(), w.xy.mask.end(), 1));
}

// The unmasked 3-D rank filter of window w (null where its placement is not w's: a dilation's
// even box).
std::unique_ptr<Operation> unmasked_of(const StageContext& c, const MaskedWindow3d& w,
                                       std::int64_t rank) {
  const BorderMode b = c.settings.border;
  const double cval = c.settings.border_value;
  if (!w.xy.mask.empty()) {
    Footprint f;
    f.depth = w.d;
    f.height = w.xy.h;
    f.width = w.xy.w;
    f.axes = 3;
    f.mask = w.xy.mask;
    f.name = w.xy.text;
    return morphology::make_rank3d(c.in, f, rank, b, cval);
  }
  const morphology::Extent z = morphology::extent(w.d, false),
                           y = morphology::extent(w.xy.h, false),
                           x = morphology::extent(w.xy.w, false);
  if (z.left != w.front || y.left != w.xy.top || x.left != w.xy.left) return nullptr;
  return morphology::make_rank3d(c.in, w.d, w.xy.h, w.xy.w, rank, b, cval);
}

}  // namespace

std::unique_ptr<Operation> make_masked_rank3d(const StageContext& c, MaskedWindow3d w,
                                              std::int64_t rank, std::int64_t count,
                                              const std::string& what,
                                              std::unique_ptr<Operation> unmasked) {
  return std::make_unique<MaskedRank3d>(c, w, rank, count, what, std::move(unmasked));
}

std::unique_ptr<Operation> make_masked_rank_volume(const StageContext& c, const MorphParams& p,
                                                   std::int64_t depth, std::int64_t rank,
                                                   const std::string& what) {
  const MaskedWindow3d w = window3d(p, depth, false);
  return make_masked_rank3d(c, w, rank, count_of(w), what, unmasked_of(c, w, rank));
}

// A volume's masked minimum (max false) or maximum in 3-D.
std::unique_ptr<Operation> masked_extreme3d(const StageContext& c, const MorphParams& p,
                                            std::int64_t depth, bool max, bool dilation) {
  const MaskedWindow3d w = window3d(p, depth, dilation);
  const std::int64_t count = count_of(w), rank = max ? count - 1 : 0;
  return make_masked_rank3d(c, w, rank, count, max ? "maximum" : "minimum",
                            unmasked_of(c, w, rank));
}

}  // namespace ooc::detail
