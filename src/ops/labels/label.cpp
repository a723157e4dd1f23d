// The label stage: connected components of the non-zero samples of its input (an image in 2-D, a
// volume in 3-D), numbered as scipy.ndimage.label numbers them (raster order of each component's
// first sample), in two passes over the bands in bounded memory:
//   pass 1 (a reduction): each band labels its rows on its own (kernels/cpu/labels/runs.hpp); the
//     merge, serial in band order, gives the band's components the next provisional labels (so
//     they are in raster order too) and joins, in a union-find table (label_table.hpp), those
//     that touch the row above or, in a volume, the plane before; then each root gets its number.
//   pass 2: each band labels its rows again and writes every run through the table.
// In parts (MPI ranks, or processes of --part/--rows), each part runs both passes over its rows;
// between them the parts join the components that cross their cuts, fold their measurements and
// agree on the numbering (label_parts.hpp).
// Only a band's runs cross from its kernel to its merge (through its slot), and the merge keeps
// the last row (an image) or the current and previous planes' runs (a volume). On the CUDA backend
// each band is labelled on the GPU with the CPU's numbers (label_cuda.hpp) and the merge makes the
// runs it joins from the labels of the rows it needs, so the table and the bytes are the same.
// With a regions table or a minimum size, each band's kernel also measures its components (area,
// box, sums of the coordinates and, with an intensity image read band by band beside the input,
// the sums, extremes and squared deviations of its samples: kernels/cpu/labels/regions.hpp); the
// merge copies them to a provisional label's entries (more tables), folded into the roots before
// they are numbered. What the passes share, the merge and the finish: label_state.hpp; here the
// kernels, the two passes' operations and the stage's declaration.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "kernels/cpu/labels/runs.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/labels/label_state.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace {

using detail::labels::LabelState;
using kernels::BandRuns;
using kernels::kIntensity;
using kernels::kShape;

void label_band(const CpuBand& b, BandRuns& r, bool diagonal) {
  r.clear();
  dispatch_type(b.in.type, [&](auto zero) {
    using T = decltype(zero);
    for (std::int64_t y = 0; y < b.band.rows; ++y)
      kernels::append_row_runs(reinterpret_cast<const T*>(b.rows[b.halo + y]), b.in.width, r);
  });
  kernels::label_runs(r, diagonal);
}

// Runs of a band at most: every other sample a run (x0, x1, label) and a start per row.
std::size_t runs_bytes(std::int64_t rows, std::int64_t cols) {
  return static_cast<std::size_t>(rows) *
         (static_cast<std::size_t>((cols + 1) / 2) * 3 * sizeof(std::uint32_t) +
          sizeof(std::uint64_t));
}

// A band's runs hold indices and columns in 32 bits.
std::int64_t fit_rows(std::int64_t rows, std::int64_t width) {
  return std::max<std::int64_t>(
      1, std::min(rows, ((std::int64_t{1} << 31) - 1) / std::max<std::int64_t>(1, width)));
}

class ScanCpu final : public CpuKernel {
 public:
  explicit ScanCpu(std::shared_ptr<LabelState> s) : s_(std::move(s)) {}
  void start(int slot) override {
    if (static_cast<std::size_t>(slot) >= s_->slot_runs.size()) {
      s_->slot_runs.resize(static_cast<std::size_t>(slot) + 1);
      s_->slot_measures.resize(static_cast<std::size_t>(slot) + 1);
    }
  }
  void run(const CpuBand& b) override {
    const auto slot = static_cast<std::size_t>(b.slot);
    BandRuns& r = s_->slot_runs.at(slot);
    label_band(b, r, s_->conn.diagonal);
    if (s_->measure) s_->measure_band(b.band, r, s_->slot_measures.at(slot));
    // The slot, and no count: the merge takes the slot's runs (a GPU band's partial differs).
    auto* partial = reinterpret_cast<std::uint64_t*>(b.partial);
    partial[0] = static_cast<std::uint64_t>(b.slot);
    partial[1] = 0;
  }

 private:
  std::shared_ptr<LabelState> s_;
};

class LabelOpBase : public Operation {
 public:
  explicit LabelOpBase(std::shared_ptr<LabelState> s) : s_(std::move(s)) {}
  std::string describe() const override {
    return "label connectivity=" + std::to_string(s_->conn.n) +
           (s_->min_size ? " min-size=" + std::to_string(s_->min_size) : "") +
           (s_->wide ? " (u64)" : " (u32)");
  }
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    return runs_bytes(rows, cols) + measures_bytes(rows, cols);
  }
  std::int64_t fit_band_rows(std::int64_t rows, std::int64_t) const override {
    return fit_rows(rows, s_->in.width);
  }
  bool has_cuda() const override { return kCudaBuilt; }
  bool output_is_labels() const override { return true; }
  // Both number a band's components alike (the GPU's partial says which labelled it): the CPU
  // may take the first bands while CUDA starts.
  bool cpu_gives_cuda_bits() const override { return true; }
  // The GPU's kernels read only the foreground: its rows go in as bits, an eighth of a u8 mask.
  bool cuda_input_bits() const override { return true; }
  // Pass 1 (no output) or pass 2 (the labels).
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>&) const override {
#if defined(OOC_HAVE_CUDA)
    return output() ? detail::make_label_apply_cuda(s_->cuda)
                    : detail::make_label_scan_cuda(s_->cuda);
#else
    return nullptr;
#endif
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
#if defined(OOC_HAVE_CUDA)
    return detail::label_cuda_scratch(rows, s_->in.width, s_->wide);
#else
    (void)rows;
    return 0;
#endif
  }
  // Each pass labels every band again, on either backend: measured on blob masks, about 0.6 ns a
  // sample a thread on the CPU and 0.045 ns for the GPU's kernels. The model adds the GPU's start
  // and copies, which bound it (pass 2's u32 labels coming back: performance.md), so a label
  // stage alone stays on the CPU of a many-core host, and rides along behind costlier stages.
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::given;
    c.cpu_ns = 0.6;
    c.cuda_ns = 0.045;
    return c;
  }

 protected:
  std::shared_ptr<LabelState> s_;

 private:
  // A band's measurements at most (a component every other sample) and its intensity rows.
  std::size_t measures_bytes(std::int64_t rows, std::int64_t cols) const {
    if (!s_->measure) return 0;
    const auto n = static_cast<std::size_t>(rows) * static_cast<std::size_t>((cols + 1) / 2);
    std::size_t bytes = n * kShape * sizeof(std::uint64_t);
    if (s_->intensity)
      bytes += n * kIntensity * sizeof(double) +
               static_cast<std::size_t>(rows) * (s_->intensity->spec().row_bytes() + 8);
    return bytes;
  }
};

class Scan final : public LabelOpBase {
 public:
  using LabelOpBase::LabelOpBase;
  std::string describe() const override { return LabelOpBase::describe() + ", pass 1"; }
  std::optional<ImageSpec> output() const override { return std::nullopt; }
  // The slot holding the band's runs (the CPU), or kLabelGpuBand with the slot and the count.
  std::size_t partial_bytes() const override { return 2 * sizeof(std::uint64_t); }
  void merge(const std::byte* partial, const Band& band) override {
    std::uint64_t w[2];
    std::memcpy(w, partial, sizeof w);
    if (w[0] & detail::kLabelGpuBand)
      return s_->merge_gpu(static_cast<int>(w[0] & ~detail::kLabelGpuBand), w[1], band);
    const auto slot = static_cast<std::size_t>(w[0]);
    s_->merge(s_->slot_runs.at(slot), &s_->slot_measures.at(slot), band);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override { return std::make_unique<ScanCpu>(s_); }
};

class ApplyCpu final : public CpuKernel {
  // The band's labels as L: each sample written once, the gap before a run, then the run.
  template <class L>
  void write(const CpuBand& b, const BandRuns& r, std::uint64_t off) const {
    const std::uint64_t* t = s_->table.data();
    for (std::int64_t y = 0; y < b.band.rows; ++y) {
      auto* out = reinterpret_cast<L*>(b.out.row(y));
      const auto u = static_cast<std::size_t>(y);
      std::uint32_t x = 0;
      for (std::uint64_t k = r.row_start[u]; k < r.row_start[u + 1]; ++k) {
        std::fill(out + x, out + r.x0[k], L{0});
        std::fill(out + r.x0[k], out + r.x1[k], static_cast<L>(t[off + r.label[k] - 1]));
        x = r.x1[k];
      }
      std::fill(out + x, out + b.in.width, L{0});
    }
  }

 public:
  explicit ApplyCpu(std::shared_ptr<LabelState> s) : s_(std::move(s)) {}
  void start(int slot) override {
    if (static_cast<std::size_t>(slot) >= runs_.size())
      runs_.resize(static_cast<std::size_t>(slot) + 1);
  }
  void run(const CpuBand& b) override {
    const LabelState& s = *s_;
    BandRuns& r = runs_.at(static_cast<std::size_t>(b.slot));
    label_band(b, r, s.conn.diagonal);
    const std::size_t i = s.band_of(b.band);
    const std::uint64_t off = s.band_offset[i];
    const std::uint64_t end = i + 1 < s.band_offset.size() ? s.band_offset[i + 1] : s.next;
    if (end - off != r.count)
      throw Error(ErrorKind::usage, "label: band " + std::to_string(i) +
                                        " has other components than in pass 1 (a different band "
                                        "plan between the passes)");
    if (s.wide)
      write<std::uint64_t>(b, r, off);
    else
      write<std::uint32_t>(b, r, off);
  }

 private:
  std::shared_ptr<LabelState> s_;
  std::vector<BandRuns> runs_;
};

class Apply final : public LabelOpBase {
 public:
  using LabelOpBase::LabelOpBase;
  std::string describe() const override { return LabelOpBase::describe() + ", pass 2"; }
  std::optional<ImageSpec> output() const override {
    ImageSpec o = s_->in;
    o.type = s_->wide ? SampleType::u64 : SampleType::u32;
    o.channels = 1;
    return o;
  }
  std::unique_ptr<CpuKernel> make_cpu() const override { return std::make_unique<ApplyCpu>(s_); }
};

}  // namespace

namespace detail {

std::vector<StageEntry> label_stages() {
  StageEntry e{
      {"label",
       "connected components of the non-zero samples, numbered as scipy.ndimage.label (raster "
       "order of first samples), u32 or u64: a pass labelling and joining the bands, then one "
       "writing",
       {computed(integer_param("connectivity", std::nullopt, 4, 26,
                               "4 or 8 on an image; 6, 18 or 26 on a volume (4 or 8 under "
                               "--planes: each plane apart, numbers going on); auto: 4 or 6, "
                               "scipy's default structure"),
                 "auto"),
        other_param("label-type", StageParam::Kind::text, std::string("auto"),
                    "the labels' type: u32, u64, or auto: u32 unless the image is large enough "
                    "to hold more components than u32 numbers (then u64); u32 is refused after "
                    "the first pass when the count does not fit"),
        integer_param("min-size", 0, 0, 9.0e18,
                      "components of fewer samples are dropped (0) and the rest numbered on, as "
                      "skimage's remove_small_objects then label"),
        computed(other_param("regions", StageParam::Kind::text, std::nullopt,
                             "also write a CSV of each label's area, bbox and centroid "
                             "(skimage.measure.regionprops_table's columns), after the first "
                             "pass"),
                 "none"),
        computed(other_param("intensity", StageParam::Kind::text, std::nullopt,
                             "with regions=: an image of the input's size (one channel, any "
                             "type) whose sum, mean, min, max and std over each label go to the "
                             "table too, read band by band"),
                 "none"),
        computed(other_param("faces", StageParam::Kind::text, std::nullopt,
                             "parts as separate processes (ooclabel --part/--rows sets it): "
                             "the files' prefix where each part keeps its first and last rows' "
                             "components for the others"),
                 "none")}},
      [](const StageContext& c) {
        const bool three_d = c.volume();
        if (c.in.channels != 1)
          throw Error(ErrorKind::usage, c.args.at() +
                                            ": label takes one channel, and its input "
                                            "has " +
                                            std::to_string(c.in.channels) +
                                            ": label each channel apart, or combine them first");
        const std::string type = c.args.text("label-type");
        if (type != "u32" && type != "u64" && type != "auto")
          throw Error(ErrorKind::usage, c.args.at() + ": label-type=" + type +
                                            " is not a label type: use u32, u64 or auto");
        const int conn = detail::label_connectivity(
            c.args.has("connectivity")
                ? std::optional<int>(static_cast<int>(c.args.integer("connectivity")))
                : std::nullopt,
            c.in, three_d, c.args.at());
        if (c.in.width > std::numeric_limits<std::uint32_t>::max())
          throw Error(ErrorKind::usage, c.args.at() + ": rows wider than 2^32 samples");
        const std::size_t budget = c.options.mem_limit ? c.options.mem_limit : default_mem_limit();
        auto s = std::make_shared<LabelState>(c.in, conn, budget / 8);
        // The output's type is known before the first pass (the output is made then): auto
        // takes u64 where the image could hold more components than u32 numbers.
        s->wide = type == "u64" ||
                  (type == "auto" && detail::most_components(c.in, conn, three_d) > s->max_label);
        s->min_size = static_cast<std::uint64_t>(c.args.integer("min-size"));
        if (c.args.has("regions")) s->regions = c.args.text("regions");
        if (c.args.has("faces")) s->faces = c.args.text("faces");
        s->measure = s->min_size > 0 || !s->regions.empty();
        if (c.args.has("intensity")) s->intensity = detail::open_intensity(c, s->regions.empty());
        s->cuda->width = c.in.width;
        s->cuda->diagonal = s->conn.diagonal;
        s->cuda->all_rows = s->conn.across || s->measure;
        s->cuda->wide = s->wide;
        LabelState* state = s.get();  // owns the shared part: no cycle
        s->cuda->table_slice = [state](const Band& band, void* to, std::uint64_t n) {
          return state->table_slice(band, to, n);
        };
        BuiltStage b(std::make_unique<Apply>(s));
        b.reduce = std::make_unique<Scan>(s);
        b.end_reduce = [s](const detail::LabelSumFn& sum) { s->finish(sum); };
        b.components = [s] { return s->count; };
        b.save_reduce = [s](const std::string& path) { return s->save(path); };
        b.restore_reduce = [s](const std::vector<std::uint64_t>& w, const std::string& path) {
          s->restore(w, path);
        };
        return b;
      }};
  e.decl.reduction = true;
  e.decl.sets_type = true;
  e.decl.volume = true;
  return {e};
}

}  // namespace detail
}  // namespace ooc
