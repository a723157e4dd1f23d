// Rank filters that know holes (issue 48): median, percentile, rank, minimum, maximum and the
// openings and closings made of them count only a window's valid samples
// (kernels/cpu/masked/masked.hpp says which of them a rank takes). Built by the stages where the
// pipeline has a nodata value; on the GPU too (kernels/cuda/masked/rank.cu).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "io/digest.hpp"
#include "kernels/cpu/masked/masked.hpp"
#include "kernels/cpu/masked/pool.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/masked.hpp"
#include "ops/morphology/window.hpp"

namespace ooc::detail {
namespace {

// The unmasked filter's kernel first (its sample is the masked one's wherever a window has no
// hole), then the windows with holes again over their valid samples; the 3 x 3 and 5 x 5 float
// medians in one pass instead (kernels::masked::rank_band_fused).
class MaskedRankKernel final : public CpuKernel {
 public:
  MaskedRankKernel(const kernels::masked::RankArgs& a, std::shared_ptr<const MaskedWindow> w,
                   std::unique_ptr<CpuKernel> fast)
      : base_(a), w_(std::move(w)), fast_(std::move(fast)) {}
  void start(int slot) override { fast_->start(slot); }
  void stop(int slot) override { fast_->stop(slot); }
  void run(const CpuBand& b) override {
    kernels::masked::RankArgs a = base_;
    a.mask = w_->mask.empty() ? nullptr : w_->mask.data();
    a.rows = b.rows;
    a.halo = b.halo;
    a.out_rows = b.band.rows;
    a.width = b.in.width;
    a.out = b.out.data;
    a.out_stride = b.out.row_stride;
    if (!kernels::masked::rank_band_fused(a)) fast_->run(b);  // else one pass does every output
    auto map = pool_.take();
    kernels::masked::rank_band(a, *map);
  }

 private:
  kernels::masked::RankArgs base_;
  std::shared_ptr<const MaskedWindow> w_;
  std::unique_ptr<CpuKernel> fast_;
  kernels::masked::BufferPool<std::vector<std::uint8_t>> pool_;
};

class MaskedRank final : public Operation {
 public:
  MaskedRank(const ImageSpec& in, MaskedWindow w, std::int64_t rank, std::int64_t count,
             const PipelineSettings& s, std::string what, std::unique_ptr<Operation> fast)
      : in_(in),
        w_(std::make_shared<const MaskedWindow>(std::move(w))),
        what_(std::move(what)),
        fast_(std::move(fast)) {
    a_.channels = in.channels;
    a_.type = in.type;
    a_.border = s.border;
    a_.cval = s.border_value;
    a_.nodata = *s.nodata;
    a_.top = w_->top;
    a_.h = w_->h;
    a_.left = w_->left;
    a_.w = w_->w;
    a_.rank = rank;
    a_.count = count;
  }
  std::string describe() const override {
    return what_ + " of the valid samples of " + w_->text + ", border " +
           std::string(name(a_.border)) + ", nodata " + nodata_text(a_.nodata);
  }
  std::string fingerprint() const override {
    return describe() + ", values " +
           Digest()
               .add(a_.cval)
               .add(std::string(w_->mask.begin(), w_->mask.end()))
               .add(double(a_.rank))
               .add(double(a_.count))
               .add(double(a_.top))
               .add(double(a_.left))
               .hex();
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override {
    return std::max({a_.top, a_.h - 1 - a_.top, fast_->halo()});
  }
  BorderMode border() const override { return a_.border; }
  std::size_t cpu_scratch_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return kernels::masked::rank_scratch_bytes(band_rows, halo(), cols, a_.channels, a_.h, a_.w) +
           fast_->cpu_scratch_bytes(band_rows, cols);
  }
  std::size_t cpu_band_bytes(std::int64_t band_rows, std::int64_t cols) const override {
    return fast_->cpu_band_bytes(band_rows, cols);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<MaskedRankKernel>(a_, w_, fast_->make_cpu());
  }
  Cost cost() const override { return fast_->cost(); }
  // On the GPU (kernels/cuda/masked/rank.cu), any window: a selection, so the CPU's values. Of a -0
  // and a +0 on the rank's place the CPU's networks and the GPU's count may leave either, so the
  // zeros of a run that starts on the CPU may differ in sign from run to run; keeping float data
  // off the CPU while CUDA starts made a masked median's whole run 1.9-2.4x the unmasked one's on
  // the GPU (the start no longer hidden), so it takes the CPU's bands.
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_masked_rank_cuda(devices, a_, w_->mask, in_);
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  ImageSpec in_;
  std::shared_ptr<const MaskedWindow> w_;
  std::string what_;
  std::unique_ptr<Operation> fast_;  // the unmasked filter
  kernels::masked::RankArgs a_;
};

// The window scipy places (morphology::window): a footprint's ones, or every sample.
MaskedWindow masked_window(const morphology::Window& w) {
  MaskedWindow m;
  m.top = w.y.left;
  m.h = w.rows();
  m.left = w.x.left;
  m.w = w.cols();
  if (w.mask) m.mask = *w.mask;
  m.text = morphology::window_text(w);
  return m;
}

// A minimum (max false) or maximum: the ranks 0 and count - 1 of the valid samples.
std::unique_ptr<Operation> masked_extreme(const StageContext& c, const MorphParams& p, bool max,
                                          bool dilation) {
  const std::int64_t count =
      p.footprint.empty() ? p.height * p.width : std::int64_t(p.footprint.count());
  const morphology::Window w = morphology::window(p, max, dilation);
  return std::make_unique<MaskedRank>(c.in, masked_window(w), max ? count - 1 : 0, count,
                                      c.settings, max ? "maximum" : "minimum",
                                      morphology::make_minmax(c.in, w));
}

}  // namespace

std::unique_ptr<Operation> make_masked_rank(const StageContext& c, const MorphParams& p,
                                            std::int64_t rank, const std::string& what) {
  const std::int64_t count =
      p.footprint.empty() ? p.height * p.width : std::int64_t(p.footprint.count());
  RankParams r;
  r.height = p.height;
  r.width = p.width;
  r.rank = rank;
  r.border = p.border;
  r.border_value = p.border_value;
  r.footprint = p.footprint;
  return std::make_unique<MaskedRank>(c.in, masked_window(morphology::window(p, false, false)),
                                      rank, count, c.settings, what, make_rank(c.in, r));
}

void mask_morphology(std::vector<StageEntry>& stages) {
  for (StageEntry& e : stages) {
    const std::string n = e.decl.name;
    if (n != "minimum" && n != "maximum" && n != "opening" && n != "closing") continue;
    e.decl.masked = true;
    e.build = [n, unmasked = std::move(e.build)](const StageContext& c) {
      if (!c.settings.nodata) return unmasked(c);
      MorphParams p;
      std::tie(p.height, p.width, p.footprint) = morphology::window_of(c.args);
      morphology::check_footprint_axes(c, p.footprint);
      const std::int64_t depth = morphology::box_depth(c, p.height);  // DxHxW on an image refused
      p.border = c.settings.border;
      p.border_value = c.settings.border_value;
      // In 3-D on a volume (masked_rank3d.cpp), else in 2-D.
      const auto extreme = [&](bool max, bool dilation) {
        return c.volume() ? masked_extreme3d(c, p, depth, max, dilation)
                          : masked_extreme(c, p, max, dilation);
      };
      if (n == "minimum" || n == "maximum") return BuiltStage{extreme(n == "maximum", false)};
      // grey_opening: the erosion, then the dilation of its output; grey_closing the other way
      // (as make_morphology). A rank filter keeps the input's spec, so both read c.in.
      BuiltStage b;
      const bool opening = n == "opening";
      b.before.push_back(extreme(!opening, !opening));
      b.op = extreme(opening, opening);
      return b;
    };
  }
}

std::vector<StageEntry> masked_morphology_stages() {
  std::vector<StageEntry> s = morphology_stages();
  mask_morphology(s);
  return s;
}

}  // namespace ooc::detail
