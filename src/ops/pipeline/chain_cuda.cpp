// The CUDA side of pipelines: a band runs through every stage in the slot's stream, its
// intermediates in the slot's device scratch (one copy in and one copy out per band); the rows a
// stage reads outside the image are copied from the previous stage's rows by the border rule.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "chain_impl.hpp"
#include "cuda/check.hpp"
#include "kernels/cuda/point/pointwise.cuh"
#include "ops/convolution/band_fill.hpp"

namespace ooc::detail {
namespace {

class PointCudaKernel final : public CudaKernel {
 public:
  PointCudaKernel(const kernels::PointParams& p, SampleType in, SampleType out)
      : p_(p), in_(in), out_(out) {}
  void run_async(const CudaBand& b) override {
    cuda::point_async(b.in + static_cast<std::size_t>(b.halo) * b.in_stride, b.in_stride, in_,
                      b.out, b.out_stride, out_, b.band.rows, b.in_spec.row_samples(), p_,
                      static_cast<cudaStream_t>(b.stream));
  }

 private:
  kernels::PointParams p_;
  SampleType in_, out_;
};

// A band of `b` for a sub-operation of halo h <= b.halo, writing `out` with `scratch`. A volume's
// band: the middle 2 ph + 1 of its planes, through `table` (which must outlive the launch).
CudaBand sub_band(const CudaBand& b, const Operation& op, std::byte* out, std::size_t out_stride,
                  std::byte* scratch, std::vector<const std::byte*>& table) {
  CudaBand s = with_halo(b, op.halo());
  if (b.plane_halo > 0) {
    const std::int64_t ph = op.plane_halo();
    table.resize(static_cast<std::size_t>(2 * ph + 1));
    for (std::int64_t k = 0; k <= 2 * ph; ++k)
      table[static_cast<std::size_t>(k)] = cuda_plane(b, b.plane_halo - ph + k, op.border());
    s.plane_halo = ph;
    s.plane_in = table.data();
  }
  s.out = out;
  s.out_stride = out_stride;
  s.partial = nullptr;
  s.scratch = scratch;
  return s;
}

class CombineCudaKernel final : public CudaKernel {
 public:
  CombineCudaKernel(const std::vector<int>& devices, kernels::CombineKind kind, double amount,
                    const Operation* g1, const Operation* g2, SampleType in, bool f64,
                    SampleType out)
      : kind_(kind), amount_(amount), g1_(g1), g2_(g2), in_(in), out_(out), f64_(f64) {
    k1_ = g1->make_cuda(devices);
    if (g2) k2_ = g2->make_cuda(devices);
  }
  void start(const CudaSlotInfo& slot) override {
    k1_->start(slot);
    if (k2_) k2_->start(slot);
  }
  void stop(const CudaSlotInfo& slot) override {
    k1_->stop(slot);
    if (k2_) k2_->stop(slot);
  }
  void run_async(const CudaBand& b) override {
    const std::int64_t rows = b.band.rows, n = b.in_spec.row_samples();
    const std::size_t pitch = align_up(static_cast<std::size_t>(n) * (f64_ ? 8 : 4));
    std::byte* t1 = b.scratch;
    std::byte* t2 = t1 + pitch * static_cast<std::size_t>(rows);
    std::byte* sub = t2 + pitch * static_cast<std::size_t>(rows);
    k1_->run_async(sub_band(b, *g1_, t1, pitch, sub, table1_));
    if (k2_) k2_->run_async(sub_band(b, *g2_, t2, pitch, sub, table2_));
    const bool reads_x =
        kind_ == kernels::CombineKind::subtract || kind_ == kernels::CombineKind::unsharp;
    // x: the band's own plane, the middle one of a volume's (never the constant border's).
    const std::byte* x = b.plane_halo > 0 ? cuda_plane(b, b.plane_halo, g1_->border())
                                          : b.in + static_cast<std::size_t>(b.halo) * b.in_stride;
    cuda::combine_async(kind_, reads_x ? x : nullptr, b.in_stride, in_, t1, k2_ ? t2 : nullptr,
                        pitch, b.out, b.out_stride, out_, rows, n, amount_, f64_,
                        static_cast<cudaStream_t>(b.stream));
  }

 private:
  kernels::CombineKind kind_;
  double amount_;
  const Operation *g1_, *g2_;
  SampleType in_, out_;
  bool f64_;
  std::unique_ptr<CudaKernel> k1_, k2_;
  std::vector<const std::byte*> table1_, table2_;  // the sub-bands' planes (one band at a time)
};

// Device scratch of a chain: for each stage but the last, a buffer of the next stage's input
// rows (its output rows, with the next halo around them) in each plane the later stages read
// (one but in a volume's 3-D chain), then the stages' own scratch.
struct ChainLayout {
  std::vector<std::size_t> pitch, offset, plane;
  std::size_t stage_scratch_offset = 0, total = 0;
  ChainLayout(const ChainGeometry& g, std::int64_t band_rows) {
    const std::size_t n = g.stages.size();
    std::size_t at = 0, most = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t out_rows = g.max_out_rows(k, band_rows);
      most = std::max(most, align_up(g.stages[k].op->cuda_scratch_bytes(out_rows)));
      if (k + 1 == n) break;
      const std::size_t p = align_up(g.stages[k + 1].in.row_bytes());
      pitch.push_back(p);
      offset.push_back(at);
      plane.push_back(p * static_cast<std::size_t>(g.max_in_rows(k + 1, band_rows)));
      at += plane.back() * static_cast<std::size_t>(g.max_out_planes(k));
    }
    stage_scratch_offset = at;
    total = at + most;
  }
};

class ChainCudaKernel final : public CudaKernel {
 public:
  ChainCudaKernel(const std::vector<int>& devices, const ChainGeometry& g)
      : g_(g), grid_(on_grid(g)) {
    for (const auto& s : g_.stages) kernels_.push_back(s.op->make_cuda(devices));
  }
  void start(const CudaSlotInfo& slot) override {
    for (auto& k : kernels_) k->start(slot);
  }
  void stop(const CudaSlotInfo& slot) override {
    for (auto& k : kernels_) k->stop(slot);
  }
  void run_async(const CudaBand& b) override {
    const ChainGeometry& g = b.halo == g_.halo() ? g_ : grid_;
    if (g.plane_halo() > 0 || g.projects()) return run_planes(b, g);
    const std::size_t n = g.stages.size();
    const std::int64_t y0 = b.band.y0, y1 = y0 + b.band.rows;
    const auto r = g.ranges(y0, y1);
    // The layout for this band's height: offsets only grow with it and with the halos, so the
    // scratch sized for the planned band height and the whole halos holds it.
    const ChainLayout layout(g, b.band.rows);
    const auto stream = static_cast<cudaStream_t>(b.stream);
    for (std::size_t k = 0; k < n; ++k) {
      const ChainStage& s = g.stages[k];
      const std::int64_t a = r[k].first, e = r[k].second, h = s.halo;
      CudaBand sb = b;
      // Its plane and stacked row too, as the CPU's chain gives them (label finds a band by it).
      sb.band = Band{b.band.index, a, e - a, b.band.z, b.band.stacked_y0 + (a - y0)};
      sb.halo = h;
      sb.first_row = a - h;
      sb.in_spec = s.in;
      sb.scratch = b.scratch + layout.stage_scratch_offset;
      sb.partial = nullptr;
      if (k == 0) {
        sb.in = b.in + static_cast<std::size_t>((a - h) - b.first_row) * b.in_stride;
        sb.in_stride = b.in_stride;
      } else {
        // Stage k's input: the buffer stage k-1 wrote, rows [a - h, e + h) of its image.
        std::byte* base = b.scratch + layout.offset[k - 1];
        const std::size_t pitch = layout.pitch[k - 1];
        fill_border_rows(base, pitch, a - h, e + h, r[k - 1], s.in.row_bytes(), stream);
        sb.in = base;
        sb.in_stride = pitch;
      }
      if (k + 1 == n) {
        sb.out = b.out;
        sb.out_stride = b.out_stride;
        sb.partial = b.partial;
      } else {
        // Stage k writes its rows into the next stage's input buffer at their place.
        const std::int64_t next_first = r[k + 1].first - g.stages[k + 1].halo;
        sb.out = b.scratch + layout.offset[k] +
                 static_cast<std::size_t>(a - next_first) * layout.pitch[k];
        sb.out_stride = layout.pitch[k];
      }
      kernels_[k]->run_async(sb);
    }
  }

 private:
  // A volume's band, as the CPU's run_planes (chain.cpp): stage k computes, over the rows the
  // later stages read, each plane of its output they read; those planes lie one after the other
  // in its buffer, in plane order, and a stage with planes of context gets its window's planes
  // through CudaBand::plane_in (the border rule in z applied to plane numbers).
  void run_planes(const CudaBand& b, const ChainGeometry& g) {
    const std::size_t n = g.stages.size();
    const std::int64_t y0 = b.band.y0, y1 = y0 + b.band.rows, D = g.depth;
    const auto r = g.ranges(y0, y1);
    std::vector<std::vector<std::int64_t>> planes(n);
    planes[n - 1] = {b.band.z};
    for (std::size_t k = n - 1; k > 0; --k) {
      std::vector<std::int64_t>& want = planes[k - 1];
      if (g.stages[k].op->projects()) {  // a projection reads every plane
        for (std::int64_t q = 0; q < D; ++q) want.push_back(q);
        continue;
      }
      const std::int64_t ph = g.stages[k].plane_halo;
      for (const std::int64_t p : planes[k])
        for (std::int64_t d = -ph; d <= ph; ++d)
          if (const std::int64_t q = map_border(p + d, D, g.border); q >= 0) want.push_back(q);
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
    }
    const ChainLayout layout(g, b.band.rows);
    const auto stream = static_cast<cudaStream_t>(b.stream);
    const std::int64_t engine_rows = b.band.rows + 2 * b.halo;
    for (std::size_t k = 0; k < n; ++k) {
      const ChainStage& s = g.stages[k];
      const std::int64_t a = r[k].first, e = r[k].second, h = s.halo, ph = s.plane_halo;
      // Row a - h of plane q of stage k's input, and the distance between its rows.
      std::size_t stride = b.in_stride;
      auto input = [&](std::int64_t q) -> const std::byte* {
        if (k == 0) {  // the band's window: the engine's planes, or those of a chain's stage
          if (g.projects() && !b.plane_in)  // the engine's: every plane, in order
            return b.in +
                   static_cast<std::size_t>(q * engine_rows + a - h - b.first_row) * b.in_stride;
          for (std::int64_t j = 0; j <= 2 * b.plane_halo; ++j) {
            if (map_border(b.band.z - b.plane_halo + j, D, g.border) != q) continue;
            const std::byte* first = b.plane_in ? b.plane_in[j] - b.halo * b.in_stride
                                                : b.in + j * engine_rows * b.in_stride;
            return first + (a - h - b.first_row) * b.in_stride;
          }
          throw std::logic_error("CUDA chain: a plane outside the band's window");
        }
        const auto& before = planes[k - 1];
        const auto at = std::lower_bound(before.begin(), before.end(), q) - before.begin();
        return b.scratch + layout.offset[k - 1] +
               static_cast<std::size_t>(at) * layout.plane[k - 1];
      };
      if (k > 0) {
        stride = layout.pitch[k - 1];
        for (const std::int64_t q : planes[k - 1])
          fill_border_rows(const_cast<std::byte*>(input(q)), stride, a - h, e + h, r[k - 1],
                           s.in.row_bytes(), stream);
      }
      for (std::size_t i = 0; i < planes[k].size(); ++i) {
        const std::int64_t p = planes[k][i];
        CudaBand sb = b;
        sb.band = Band{b.band.index, a, e - a, p, p * g.height + a};
        sb.halo = h;
        sb.first_row = a - h;
        sb.in_spec = s.in;
        sb.in_stride = stride;
        sb.scratch = b.scratch + layout.stage_scratch_offset;
        sb.partial = nullptr;
        sb.plane_halo = ph;
        sb.plane_in = nullptr;
        sb.in = input(p);
        if (s.op->projects()) {  // every plane of its input (CudaBand::plane_in, one a plane)
          table_.resize(static_cast<std::size_t>(D));
          for (std::int64_t q = 0; q < D; ++q)
            table_[static_cast<std::size_t>(q)] = input(q) + static_cast<std::size_t>(h) * stride;
          sb.plane_in = table_.data();
        } else if (ph > 0) {
          table_.resize(static_cast<std::size_t>(2 * ph + 1));
          for (std::int64_t d = -ph; d <= ph; ++d) {
            const std::int64_t q = map_border(p + d, D, g.border);
            table_[static_cast<std::size_t>(d + ph)] =
                q < 0 ? nullptr : input(q) + static_cast<std::size_t>(h) * stride;
          }
          sb.plane_in = table_.data();
        }
        if (k + 1 == n) {
          sb.out = b.out;
          sb.out_stride = b.out_stride;
          sb.partial = b.partial;
        } else {
          const std::int64_t next_first = r[k + 1].first - g.stages[k + 1].halo;
          sb.out = b.scratch + layout.offset[k] + i * layout.plane[k] +
                   static_cast<std::size_t>(a - next_first) * layout.pitch[k];
          sb.out_stride = layout.pitch[k];
        }
        kernels_[k]->run_async(sb);
      }
    }
  }

  // Rows [first, last) of a buffer whose row `first` is at `base`: those outside the computed
  // rows `done` (the image's, or the border's) come from the rows the border rule names. The
  // constant border's rows stay unset: the kernels know them.
  void fill_border_rows(std::byte* base, std::size_t pitch, std::int64_t first, std::int64_t last,
                        std::pair<std::int64_t, std::int64_t> done, std::size_t row_bytes,
                        cudaStream_t stream) const {
    if (g_.border == BorderMode::wrap || g_.border == BorderMode::constant) return;
    // All of them in one launch: a copy a row was a runtime call each, 2 x halo of them for
    // every plane of a volume on the GPU (each plane a band with both edges).
    cuda::RowCopies c;
    for (std::int64_t row = first; row < last; ++row) {
      if (row >= 0 && row < g_.height) continue;
      const std::int64_t m = map_border(row, g_.height, g_.border);
      if (m < done.first || m >= done.second) continue;  // not read (never happens)
      c.dst[c.count] = static_cast<std::int32_t>(row - first);
      c.src[c.count] = static_cast<std::int32_t>(m - first);
      if (++c.count == cuda::RowCopies::kMax) {
        cuda::copy_rows_async(base, pitch, row_bytes, c, stream);
        c.count = 0;
      }
    }
    cuda::copy_rows_async(base, pitch, row_bytes, c, stream);
  }

  ChainGeometry g_, grid_;  // grid_: bands on the last stage's row grid (on_grid)
  std::vector<std::unique_ptr<CudaKernel>> kernels_;
  std::vector<const std::byte*> table_;  // a stage's window of planes (read during its launch)
};

}  // namespace

std::unique_ptr<CudaKernel> make_chain_cuda(const std::vector<int>& devices,
                                            const ChainGeometry& g) {
  return std::make_unique<ChainCudaKernel>(devices, g);
}

std::size_t chain_cuda_scratch(const ChainGeometry& g, std::int64_t band_rows) {
  return ChainLayout(g, band_rows).total;
}

std::unique_ptr<CudaKernel> make_point_cuda(const kernels::PointParams& p, SampleType in,
                                            SampleType out) {
  return std::make_unique<PointCudaKernel>(p, in, out);
}

std::unique_ptr<CudaKernel> make_combine_cuda(const std::vector<int>& devices,
                                              kernels::CombineKind kind, double amount,
                                              const Operation* g1, const Operation* g2,
                                              std::int64_t, SampleType in, bool f64,
                                              SampleType out) {
  return std::make_unique<CombineCudaKernel>(devices, kind, amount, g1, g2, in, f64, out);
}

std::size_t combine_cuda_scratch(const Operation* g1, const Operation* g2, std::int64_t band_rows,
                                 std::int64_t row_samples, bool f64) {
  const std::size_t pitch = align_up(static_cast<std::size_t>(row_samples) * (f64 ? 8 : 4));
  return 2 * pitch * static_cast<std::size_t>(band_rows) +
         std::max(g1->cuda_scratch_bytes(band_rows), g2 ? g2->cuda_scratch_bytes(band_rows) : 0);
}

}  // namespace ooc::detail
