// The fused operation of a pass (chain_impl.hpp): a band runs through every stage of the pass,
// each stage's intermediate rows in aligned scratch, on the CPU (its CUDA twin: chain_cuda.cpp).
#include "ooc/pipeline.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "chain_impl.hpp"
#include "io/digest.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/ops/rank.hpp"
#include "ops/cuda_kernels.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace detail {

std::int64_t ChainGeometry::halo() const noexcept {
  std::int64_t h = 0;
  for (const ChainStage& s : stages) h += s.halo;
  return h;
}

bool ChainGeometry::projects() const noexcept {
  for (const ChainStage& s : stages)
    if (s.op->projects()) return true;
  return false;
}

std::int64_t ChainGeometry::plane_halo() const noexcept {
  std::int64_t h = 0;
  for (const ChainStage& s : stages) h += s.plane_halo;
  return h;
}

std::int64_t ChainGeometry::max_out_planes(std::size_t k) const noexcept {
  for (std::size_t j = k + 1; j < stages.size(); ++j)
    if (stages[j].op->projects()) return depth;  // every plane, for a projection after k
  std::int64_t later = 0;
  for (std::size_t j = k + 1; j < stages.size(); ++j) later += stages[j].plane_halo;
  return std::min(depth, 2 * later + 1);
}

ChainGeometry on_grid(const ChainGeometry& g) {
  ChainGeometry c = g;
  c.stages.back().halo = c.stages.back().op->grid_halo();
  return c;
}

std::vector<std::pair<std::int64_t, std::int64_t>> ChainGeometry::ranges(std::int64_t y0,
                                                                         std::int64_t y1) const {
  const std::size_t n = stages.size();
  std::vector<std::pair<std::int64_t, std::int64_t>> r(n);
  r[n - 1] = {y0, y1};
  for (std::size_t k = n - 1; k > 0; --k) {
    const std::int64_t a = r[k].first - stages[k].halo, b = r[k].second + stages[k].halo;
    if (border == BorderMode::wrap) {
      r[k - 1] = {a, b};
      continue;
    }
    // The image rows stage k reads: those inside, and where the border rule sends the others.
    std::int64_t lo = std::max<std::int64_t>(a, 0), hi = std::min(b, height);
    if (lo >= hi) lo = height, hi = 0;
    auto add = [&](std::int64_t row) {
      const std::int64_t m = map_border(row, height, border);
      if (m < 0) return;
      lo = std::min(lo, m);
      hi = std::max(hi, m + 1);
    };
    for (std::int64_t row = a; row < std::min<std::int64_t>(b, 0); ++row) add(row);
    for (std::int64_t row = std::max(a, height); row < b; ++row) add(row);
    if (lo >= hi) lo = hi = std::clamp<std::int64_t>(a, 0, height);  // constant rows only
    r[k - 1] = {lo, hi};
  }
  return r;
}

std::int64_t ChainGeometry::max_out_rows(std::size_t k, std::int64_t band_rows) const noexcept {
  std::int64_t later = 0;
  for (std::size_t j = k + 1; j < stages.size(); ++j) later += stages[j].halo;
  return band_rows + 2 * later;
}

std::int64_t ChainGeometry::max_in_rows(std::size_t k, std::int64_t band_rows) const noexcept {
  return max_out_rows(k, band_rows) + 2 * stages[k].halo;
}

#if !defined(OOC_HAVE_CUDA)
// A build without CUDA: Operation::has_cuda() says no, so these are never called.
std::unique_ptr<CudaKernel> make_chain_cuda(const std::vector<int>&, const ChainGeometry&) {
  return nullptr;
}
std::size_t chain_cuda_scratch(const ChainGeometry&, std::int64_t) {
  return 0;
}
std::unique_ptr<CudaKernel> make_point_cuda(const kernels::PointParams&, SampleType, SampleType) {
  return nullptr;
}
std::unique_ptr<CudaKernel> make_combine_cuda(const std::vector<int>&, kernels::CombineKind, double,
                                              const Operation*, const Operation*, std::int64_t,
                                              SampleType, bool, SampleType) {
  return nullptr;
}
std::size_t combine_cuda_scratch(const Operation*, const Operation*, std::int64_t, std::int64_t,
                                 bool) {
  return 0;
}
#endif

}  // namespace detail

namespace {

using detail::ChainGeometry;

using detail::BufferPool;

// --- the fused pass -------------------------------------------------------------------------

class ChainKernel final : public CpuKernel {
 public:
  explicit ChainKernel(const ChainGeometry& g) : g_(g), grid_(detail::on_grid(g)) {
    for (const auto& s : g_.stages) kernels_.push_back(s.op->make_cpu());
  }
  void start(int slot) override {
    for (auto& k : kernels_) k->start(slot);
  }
  void stop(int slot) override {
    for (auto& k : kernels_) k->stop(slot);
  }
  void run(const CpuBand& b) override {
    const ChainGeometry& g = b.halo == g_.halo() ? g_ : grid_;
    if (g.plane_halo() > 0 || g.projects()) return run_planes(b, g);
    const std::size_t n = g.stages.size();
    const std::int64_t y0 = b.band.y0, y1 = y0 + b.band.rows;
    const auto r = g.ranges(y0, y1);
    // One buffer for every intermediate of this band.
    std::vector<std::size_t> offset(n, 0);
    std::size_t total = 0;
    for (std::size_t k = 0; k + 1 < n; ++k) {
      offset[k] = total;
      total += detail::scratch_align_up(static_cast<std::size_t>(r[k].second - r[k].first) *
                                        out_spec(k, b.in.width).row_bytes());
    }
    detail::ScratchBuffer buf = pool_.take(total);
    std::vector<const std::byte*> rows;
    for (std::size_t k = 0; k < n; ++k) {
      const detail::ChainStage& s = g.stages[k];
      const std::int64_t a = r[k].first, e = r[k].second, h = s.halo;
      CpuBand sb;
      sb.band = Band{b.band.index, a, e - a, b.band.z, b.band.stacked_y0 + (a - y0)};
      sb.slot = b.slot;
      sb.halo = h;
      sb.in = s.in;
      sb.in.width = b.in.width;  // a tile's
      if (k == 0) {
        sb.rows = b.rows + ((a - h) - (y0 - b.halo));
      } else {
        const ImageSpec prev = out_spec(k - 1, b.in.width);
        const std::byte* base = buf.data() + offset[k - 1];
        rows.assign(static_cast<std::size_t>(e - a + 2 * h), nullptr);
        for (std::int64_t row = a - h; row < e + h; ++row) {
          const auto m = g.source_row(row);
          if (m)
            rows[static_cast<std::size_t>(row - (a - h))] =
                base + static_cast<std::size_t>(*m - r[k - 1].first) * prev.row_bytes();
        }
        sb.rows = rows.data();
      }
      if (k + 1 == n) {
        sb.out = b.out;
        sb.partial = b.partial;
      } else {
        const ImageSpec o = out_spec(k, b.in.width);
        sb.out =
            BandView{buf.data() + offset[k], o.row_bytes(), e - a, o.width, o.channels, o.type};
      }
      kernels_[k]->run(sb);
    }
    pool_.give(std::move(buf));
  }

  // A volume's band through stages with planes of context. Stage k computes the planes of its
  // output the later stages read (S[k]), each over the rows they read (ranges); planes beyond the
  // volume come from the border rule on the stage's output, as rows do, so each stage applies the
  // rule to its own input. Every plane a stage reads lies in the engine's window of planes
  // (z +- the chain's plane halo, through the rule): the rule's folds map a window onto itself.
  void run_planes(const CpuBand& b, const ChainGeometry& g) {
    const std::size_t n = g.stages.size();
    const std::int64_t y0 = b.band.y0, y1 = y0 + b.band.rows, D = g.depth;
    const auto r = g.ranges(y0, y1);
    std::vector<std::vector<std::int64_t>> planes(n);
    planes[n - 1] = {b.band.z};
    // A projection reads every plane (the stages after it, one); the engine then gives them all,
    // in order.
    const bool projects = g.projects();
    for (std::size_t k = n - 1; k > 0; --k) {
      std::vector<std::int64_t>& want = planes[k - 1];
      const std::int64_t ph = g.stages[k].plane_halo;
      if (g.stages[k].op->projects()) {
        for (std::int64_t q = 0; q < D; ++q) want.push_back(q);
        continue;
      }
      for (const std::int64_t p : planes[k])
        for (std::int64_t d = -ph; d <= ph; ++d)
          if (const std::int64_t q = map_border(p + d, D, g.border); q >= 0) want.push_back(q);
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
    }
    const std::int64_t engine_rows = b.band.rows + 2 * b.halo;
    auto window_plane = [&](std::int64_t q) -> std::int64_t {  // the engine's plane holding q
      if (projects) return q;
      for (std::int64_t j = 0; j <= 2 * b.plane_halo; ++j)
        if (map_border(b.band.z - b.plane_halo + j, D, g.border) == q) return j;
      throw std::logic_error("chain: a plane outside the engine's window");
    };
    std::vector<std::size_t> offset(n, 0), plane_bytes(n, 0);
    std::size_t total = 0;
    for (std::size_t k = 0; k + 1 < n; ++k) {
      offset[k] = total;
      plane_bytes[k] = detail::scratch_align_up(static_cast<std::size_t>(r[k].second - r[k].first) *
                                                out_spec(k, b.in.width).row_bytes());
      total += plane_bytes[k] * planes[k].size();
    }
    detail::ScratchBuffer buf = pool_.take(total);
    std::vector<const std::byte*> rows;
    for (std::size_t k = 0; k < n; ++k) {
      const detail::ChainStage& s = g.stages[k];
      const std::int64_t a = r[k].first, e = r[k].second, h = s.halo, ph = s.plane_halo;
      const std::int64_t count = e - a + 2 * h;
      // The planes stage k reads for output plane p: p +- ph through the border rule, or every
      // one for a projection.
      const bool all = s.op->projects();
      const std::int64_t window = all ? D : 2 * ph + 1;
      for (std::size_t i = 0; i < planes[k].size(); ++i) {
        const std::int64_t p = planes[k][i];
        rows.assign(static_cast<std::size_t>(count * window), nullptr);
        for (std::int64_t d = -ph; d < window - ph; ++d) {
          const std::int64_t q = all ? d : map_border(p + d, D, g.border);
          if (q < 0) continue;  // a plane of the constant border: null rows
          const std::byte** to = rows.data() + (d + ph) * count;
          if (k == 0) {
            const std::byte* const* from =
                b.rows + window_plane(q) * engine_rows + ((a - h) - (y0 - b.halo));
            std::copy(from, from + count, to);
            continue;
          }
          const auto& before = planes[k - 1];
          const std::size_t at = static_cast<std::size_t>(
              std::lower_bound(before.begin(), before.end(), q) - before.begin());
          const ImageSpec prev = out_spec(k - 1, b.in.width);
          const std::byte* base = buf.data() + offset[k - 1] + at * plane_bytes[k - 1];
          for (std::int64_t row = a - h; row < e + h; ++row)
            if (const auto m = g.source_row(row))
              to[row - (a - h)] =
                  base + static_cast<std::size_t>(*m - r[k - 1].first) * prev.row_bytes();
        }
        CpuBand sb;
        sb.band = Band{b.band.index, a, e - a, p, p * g.height + a};
        sb.slot = b.slot;
        sb.halo = h;
        sb.plane_halo = ph;
        sb.in = s.in;
        sb.in.width = b.in.width;  // a tile's
        sb.rows = rows.data();
        if (k + 1 == n) {
          sb.out = b.out;
          sb.partial = b.partial;
        } else {
          const ImageSpec o = out_spec(k, b.in.width);
          sb.out = BandView{buf.data() + offset[k] + i * plane_bytes[k],
                            o.row_bytes(),
                            e - a,
                            o.width,
                            o.channels,
                            o.type};
        }
        kernels_[k]->run(sb);
      }
    }
    pool_.give(std::move(buf));
  }

 private:
  // Stage k's output, for a band (or tile) `width` columns wide.
  ImageSpec out_spec(std::size_t k, std::int64_t width) const {
    ImageSpec s = g_.stages[k + 1].in;
    s.width = width;
    return s;
  }
  ChainGeometry g_, grid_;  // grid_: bands on the last stage's row grid (detail::on_grid)
  std::vector<std::unique_ptr<CpuKernel>> kernels_;
  BufferPool pool_;
};

}  // namespace

namespace detail {
std::unique_ptr<CpuKernel> make_chain_cpu(const ChainGeometry& g) {
  return std::make_unique<ChainKernel>(g);
}
}  // namespace detail

namespace {

class Chain final : public Operation {
 public:
  Chain(ChainGeometry g, std::optional<ImageSpec> out, std::string what,
        std::vector<std::unique_ptr<Operation>> owned = {})
      : owned_(std::move(owned)), g_(std::move(g)), out_(out), what_(std::move(what)) {}
  std::string describe() const override { return what_; }
  std::string fingerprint() const override {
    std::string f;
    for (const auto& s : g_.stages) f += (f.empty() ? "" : " ! ") + s.op->fingerprint();
    return f;
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return g_.halo(); }
  std::int64_t plane_halo() const override { return g_.plane_halo(); }
  bool projects() const override { return g_.projects(); }
  bool output_is_labels() const override { return last().output_is_labels(); }
  BorderMode border() const override { return g_.border; }
  std::size_t partial_bytes() const override { return last().partial_bytes(); }
  void merge(const std::byte* partial, const Band& band) override {
    g_.stages.back().op->merge(partial, band);
  }
  // Every stage filters the tile as an image: the chain's output depends on columns as far as
  // the stages' reaches added up.
  std::optional<std::int64_t> column_halo() const override {
    std::int64_t h = 0;
    for (const auto& s : g_.stages) {
      const auto c = s.op->column_halo();
      if (!c) return std::nullopt;
      h += *c;
    }
    return h;
  }
  // Every stage's own scratch: each stage's kernel keeps its buffers from band to band (pools,
  // a thread's rows), so they add up rather than take turns.
  std::size_t cpu_scratch_bytes(std::int64_t rows, std::int64_t cols) const override {
    std::size_t stages = 0;
    for (std::size_t k = 0; k < g_.stages.size(); ++k)
      stages += g_.stages[k].op->cpu_scratch_bytes(g_.max_out_rows(k, rows), cols);
    return stages;
  }
  // The intermediates of a band (one buffer a band being computed), and the stages' own.
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    std::size_t inter = 0;
    for (std::size_t k = 0; k < g_.stages.size(); ++k) {
      const std::int64_t out_rows = g_.max_out_rows(k, rows);
      if (k + 1 < g_.stages.size())
        inter += detail::scratch_align_up(static_cast<std::size_t>(out_rows) *
                                          static_cast<std::size_t>(cols) *
                                          g_.stages[k + 1].in.pixel_bytes()) *
                 static_cast<std::size_t>(g_.max_out_planes(k));
      inter += g_.stages[k].op->cpu_band_bytes(out_rows, cols);
    }
    return inter;
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return detail::chain_cuda_scratch(g_, rows);
  }
  std::int64_t fit_band_rows(std::int64_t rows, std::int64_t span) const override {
    return last().fit_band_rows(rows, span);
  }
  // The engine's band is the last stage's: on its row grid, that stage needs only its grid_halo().
  std::int64_t row_grid() const override { return last().row_grid(); }
  std::int64_t grid_halo() const override { return detail::on_grid(g_).halo(); }
  std::unique_ptr<CpuKernel> make_cpu() const override { return std::make_unique<ChainKernel>(g_); }
  bool has_cuda() const override {
    for (const auto& s : g_.stages)
      if (!s.op->has_cuda()) return false;
    return kCudaBuilt;
  }
  bool cpu_gives_cuda_bits() const override {
    for (const auto& s : g_.stages)
      if (!s.op->cpu_gives_cuda_bits()) return false;
    return true;
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    return detail::make_chain_cuda(devices, g_);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::fused;
    for (const auto& s : g_.stages) c.stages.push_back(s.op->cost());
    return c;
  }

 private:
  const Operation& last() const { return *g_.stages.back().op; }
  std::vector<std::unique_ptr<Operation>> owned_;  // the stages, where the chain owns them
  ChainGeometry g_;
  std::optional<ImageSpec> out_;
  std::string what_;
};

}  // namespace

namespace detail {

std::unique_ptr<Operation> make_chain(ChainGeometry g, std::optional<ImageSpec> out,
                                      std::string what) {
  return std::make_unique<Chain>(std::move(g), out, std::move(what));
}

std::unique_ptr<Operation> make_owning_chain(std::vector<std::unique_ptr<Operation>> ops,
                                             const ImageSpec& in, BorderMode border) {
  ChainGeometry g;
  g.border = border;
  g.height = in.height;
  g.depth = in.depth;
  ImageSpec at = in;
  std::string what;
  for (const auto& op : ops) {
    g.stages.push_back({op.get(), at, op->halo(), op->plane_halo()});
    at = *op->output();
    what += (what.empty() ? "" : " ! ") + op->describe();
  }
  return std::make_unique<Chain>(std::move(g), at, std::move(what), std::move(ops));
}

}  // namespace detail

}  // namespace ooc
