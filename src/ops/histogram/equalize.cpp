// Histogram equalization (see equalize.hpp): the histogram and lookup-table operations and their
// CPU kernels; the CUDA kernels are made in equalize_cuda.cpp.
#include "ooc/ops/equalize.hpp"

#include <tbb/combinable.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstring>

#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace {

template <class T>
void count_rows(const CpuBand& b, std::int64_t bins, std::uint64_t* partial) {
  const int C = b.in.channels;
  const std::int64_t n = b.in.width;
  tbb::combinable<std::vector<std::uint64_t>> local(
      [&] { return std::vector<std::uint64_t>(static_cast<std::size_t>(bins * C), 0); });
  tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
    const T* row = reinterpret_cast<const T*>(b.rows[b.halo + y]);
    std::uint64_t* h = local.local().data();
    for (std::int64_t x = 0; x < n; ++x)
      for (int c = 0; c < C; ++c) ++h[c * bins + row[x * C + c]];
  });
  local.combine_each([&](const std::vector<std::uint64_t>& h) {
    for (std::size_t i = 0; i < h.size(); ++i) partial[i] += h[i];
  });
}

class HistogramCpu final : public CpuKernel {
 public:
  explicit HistogramCpu(std::int64_t bins) : bins_(bins) {}
  void run(const CpuBand& b) override {
    auto* partial = reinterpret_cast<std::uint64_t*>(b.partial);
    if (b.in.type == SampleType::u8)
      count_rows<std::uint8_t>(b, bins_, partial);
    else
      count_rows<std::uint16_t>(b, bins_, partial);
  }

 private:
  std::int64_t bins_;
};

class Histogram final : public HistogramOp {
 public:
  // hole: the nodata value's bin, left out of the counts (-1: none), so that the table spreads
  // the valid samples only (docs/design.md, "Nodata").
  explicit Histogram(const ImageSpec& in, std::int64_t hole = -1)
      : in_(in),
        bins_(static_cast<std::int64_t>(bins_of(in.type))),
        counts_(static_cast<std::size_t>(bins_ * in.channels), 0),
        hole_(hole) {}
  std::string describe() const override {
    return "histogram (" + std::to_string(bins_) + " bins x " + std::to_string(in_.channels) +
           " channel(s)" + (hole_ >= 0 ? ", nodata " + std::to_string(hole_) + " left out" : "") +
           ")";
  }
  std::optional<ImageSpec> output() const override { return std::nullopt; }
  std::size_t partial_bytes() const override { return counts_.size() * sizeof(std::uint64_t); }
  void merge(const std::byte* partial, const Band&) override {
    const auto* p = reinterpret_cast<const std::uint64_t*>(partial);
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += p[i];
    if (hole_ >= 0)
      for (int c = 0; c < in_.channels; ++c)
        counts_[static_cast<std::size_t>(c * bins_ + hole_)] = 0;
  }
  std::size_t cpu_scratch_bytes(std::int64_t, std::int64_t) const override {
    return partial_bytes();
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<HistogramCpu>(bins_);
  }
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }  // integer counts and lookups
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    return make_histogram_cuda(devices, bins_);
#else
    (void)devices;
    return nullptr;
#endif
  }
  std::int64_t bins() const override {
    return bins_;
  }
  int channels() const override {
    return in_.channels;
  }
  const std::vector<std::uint64_t>& counts() const override {
    return counts_;
  }

 private:
  ImageSpec in_;
  std::int64_t bins_;
  std::vector<std::uint64_t> counts_;
  std::int64_t hole_;
};

template <class T>
void map_rows(const CpuBand& b, std::int64_t bins, const std::vector<std::uint16_t>& lut) {
  const int C = b.in.channels;
  const std::int64_t n = b.in.width;
  tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
    const T* src = reinterpret_cast<const T*>(b.rows[b.halo + y]);
    T* dst = reinterpret_cast<T*>(b.out.row(y));
    for (std::int64_t x = 0; x < n; ++x)
      for (int c = 0; c < C; ++c)
        dst[x * C + c] = static_cast<T>(lut[static_cast<std::size_t>(c * bins + src[x * C + c])]);
  });
}

class LutCpu final : public CpuKernel {
 public:
  LutCpu(std::int64_t bins, std::vector<std::uint16_t> lut) : bins_(bins), lut_(std::move(lut)) {}
  void run(const CpuBand& b) override {
    if (b.in.type == SampleType::u8)
      map_rows<std::uint8_t>(b, bins_, lut_);
    else
      map_rows<std::uint16_t>(b, bins_, lut_);
  }

 private:
  std::int64_t bins_;
  std::vector<std::uint16_t> lut_;
  std::int64_t hole_;
};

class Lut final : public LutOp {
 public:
  // hole: the nodata value, mapped to itself (-1: none).
  explicit Lut(const ImageSpec& in, std::int64_t hole = -1)
      : in_(in), bins_(static_cast<std::int64_t>(HistogramOp::bins_of(in.type))), hole_(hole) {}
  std::string describe() const override {
    return hole_ < 0 ? "equalization lookup table"
                     : "equalization lookup table, nodata " + std::to_string(hole_) + " kept";
  }
  std::optional<ImageSpec> output() const override { return in_; }
  std::optional<std::int64_t> column_halo() const override { return 0; }
  void set_lut(std::vector<std::uint16_t> lut) override {
    if (lut.size() != static_cast<std::size_t>(bins_ * in_.channels))
      throw Error(ErrorKind::usage, "lookup table of the wrong size");
    lut_ = std::move(lut);
    if (hole_ >= 0)
      for (int c = 0; c < in_.channels; ++c)
        lut_[static_cast<std::size_t>(c * bins_ + hole_)] = static_cast<std::uint16_t>(hole_);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    check();
    return std::make_unique<LutCpu>(bins_, lut_);
  }
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }  // integer counts and lookups
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
#if defined(OOC_HAVE_CUDA)
    check();
    return make_lut_cuda(devices, bins_, lut_);
#else
    (void)devices;
    return nullptr;
#endif
  }

 private:
  void check() const {
    if (lut_.empty()) throw Error(ErrorKind::usage, "the lookup table was not set");
  }
  ImageSpec in_;
  std::int64_t bins_;
  std::vector<std::uint16_t> lut_;
  std::int64_t hole_;
};

}  // namespace

std::size_t HistogramOp::bins_of(SampleType t) {
  if (t == SampleType::u8) return 256;
  if (t == SampleType::u16) return 65536;
  throw Error(ErrorKind::usage,
              "histogram equalization takes u8 or u16 images, this one is " + std::string(name(t)) +
                  ": scale its values onto 0-65535 and convert it first, e.g. for values in [0, M] "
                  "oocrun IN OUT 'scale mul=S ! convert type=u16' with S = 65535 / M (values are "
                  "rounded and saturated)");
}

std::unique_ptr<HistogramOp> make_histogram(const ImageSpec& input) {
  return std::make_unique<Histogram>(input);
}

std::unique_ptr<LutOp> make_lut(const ImageSpec& input) {
  return std::make_unique<Lut>(input);
}

std::vector<std::uint16_t> equalization_lut(const std::vector<std::uint64_t>& counts,
                                            std::int64_t bins, int channels) {
  std::vector<std::uint16_t> lut(static_cast<std::size_t>(bins * channels), 0);
  for (int c = 0; c < channels; ++c) {
    const std::uint64_t* h = counts.data() + c * bins;
    std::uint16_t* l = lut.data() + c * bins;
    std::uint64_t total = 0;
    for (std::int64_t v = 0; v < bins; ++v) total += h[v];
    if (total == 0) continue;
    std::int64_t i = 0;
    while (h[i] == 0) ++i;
    if (h[i] == total) {  // one value: returned unchanged
      for (std::int64_t v = 0; v < bins; ++v) l[v] = static_cast<std::uint16_t>(v);
      continue;
    }
    // In float, as OpenCV: the same table, bit for bit, for u8.
    const float scale = (static_cast<float>(bins) - 1.f) / static_cast<float>(total - h[i]);
    std::uint64_t sum = 0;
    l[i] = 0;
    for (++i; i < bins; ++i) {
      sum += h[i];
      const float v = static_cast<float>(sum) * scale;
      l[i] = static_cast<std::uint16_t>(
          std::clamp(std::nearbyint(v), 0.0f, static_cast<float>(bins - 1)));
    }
  }
  return lut;
}

namespace detail {

std::vector<StageEntry> equalize_stages() {
  StageEntry e{
      {"equalize",
       "histogram equalization of u8/u16 (as ooceq, cv2.equalizeHist per channel; other types: "
       "convert first): a histogram pass, then the table",
       {}},
      [](const StageContext& c) {
        if (c.in.type != SampleType::u8 && c.in.type != SampleType::u16)
          throw Error(ErrorKind::usage,
                      c.args.at() + ": equalize takes u8 or u16 samples, and its input is " +
                          std::string(name(c.in.type)) +
                          (c.index == 0 ? std::string(" (the image)") : " (the previous stage's)") +
                          ": put 'convert type=u8' or 'convert type=u16' before it, scaling the "
                          "values onto that range first (scale mul=... add=...)");
        // Nodata: its bin out of the histogram, mapped to itself (NaN or a value no sample of
        // the type holds: no hole).
        std::int64_t hole = -1;
        if (const auto nd = c.settings.nodata; nd && *nd == std::trunc(*nd) && *nd >= 0 &&
                                               *nd < double(HistogramOp::bins_of(c.in.type)))
          hole = static_cast<std::int64_t>(*nd);
        BuiltStage b;
        b.histogram = std::make_unique<Histogram>(c.in, hole);
        auto lut = std::make_unique<Lut>(c.in, hole);
        b.lut = lut.get();
        b.op = std::move(lut);
        return b;
      }};
  e.decl.reduction = true;
  e.decl.sets_type = true;  // the equalized image is the output, not the pipeline's input type
  e.decl.volume = true;     // one histogram of every plane
  e.decl.masked = true;     // nodata left out of the histogram, mapped to itself
  return {e};
}

}  // namespace detail
}  // namespace ooc
