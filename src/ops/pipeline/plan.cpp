// The plan of a pipeline's passes (ooc/pipeline.hpp): each stage built from its declaration, a
// pass for each reduction and one that writes, and the run of every pass on a job.
#include <cstdio>
#include <optional>

#include "chain_impl.hpp"
#include "kernels/cpu/masked/convert.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/pipeline.hpp"
#include "ops/masked.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {

using detail::ChainGeometry;

struct PipelinePlan::Impl {
  ImageSpec input;
  PipelineSettings settings;
  EngineOptions options;
  std::vector<std::unique_ptr<Operation>> owned;
  struct Stage {
    Operation* op;
    HistogramOp* histogram = nullptr;  // equalize: the reduction, and its table in `op`
    LutOp* lut = nullptr;
    Operation* reduce = nullptr;  // another reduction (label), and what readies `op` after it
    std::function<void(const std::function<void(std::vector<std::uint64_t>&)>&)> end_reduce = {};
    std::function<std::uint64_t()> components = {};
    std::function<std::vector<std::uint64_t>(const std::string&)> save_reduce = {};
    std::function<void(const std::vector<std::uint64_t>&, const std::string&)> restore_reduce = {};
    Operation* reduction() const { return histogram ? histogram : reduce; }
  };
  std::vector<Stage> stages;
  std::vector<Operation*> passes;     // in `owned`
  std::vector<std::size_t> pass_end;  // stages [0, pass_end[i]) run in pass i (+ a histogram)
  std::vector<PipelinePlan::Histogram> histograms;  // of each pass but the last, once ended
  std::string text;
  std::optional<double> output_nodata;  // the value the output's holes have (output_nodata())

  Operation* keep(std::unique_ptr<Operation> op) {
    owned.push_back(std::move(op));
    return owned.back().get();
  }

  // The operation of a call on an input of `in` (after the z passes it pushes to `stages`
  // first); `out`: a convert fused into a filter stage.
  Stage build(const ImageSpec& in, const StageCall& c, std::size_t index,
              std::optional<SampleType> out = {}) {
    const detail::StageEntry& e = *detail::find_stage(c.name);
    const std::string at = detail::stage_at(index, c.name);
    check_stage_call(c, at);
    if (in.volume() && !settings.planes && !e.decl.volume)
      throw Error(ErrorKind::usage, at +
                                        " has no 3-D version yet: add --planes to filter each of "
                                        "the volume's " +
                                        std::to_string(in.depth) + " planes in 2-D");
    const detail::StageArgs args(c, e.decl, at);
    detail::BuiltStage b = e.build(detail::StageContext{in, args, settings, options, out, index});
    for (auto& op : b.before) stages.push_back(Stage{keep(std::move(op))});
    Stage s{nullptr, b.histogram.get(), b.lut};
    if (b.histogram) keep(std::move(b.histogram));
    if (b.reduce) s.reduce = keep(std::move(b.reduce));
    s.end_reduce = std::move(b.end_reduce);
    s.components = std::move(b.components);
    s.save_reduce = std::move(b.save_reduce);
    s.restore_reduce = std::move(b.restore_reduce);
    s.op = keep(std::move(b.op));
    return s;
  }

  ChainGeometry geometry(std::size_t count, Operation* last) const {
    ChainGeometry g;
    g.border = settings.border;
    g.height = input.height;
    g.depth = input.depth;
    ImageSpec in = input;
    for (std::size_t k = 0; k < count; ++k) {
      g.stages.push_back({stages[k].op, in, stages[k].op->halo(), stages[k].op->plane_halo()});
      in = *stages[k].op->output();
    }
    if (last) g.stages.push_back({last, in, last->halo(), last->plane_halo()});
    return g;
  }
};

PipelinePlan::PipelinePlan(const ImageSpec& input, const std::vector<StageCall>& calls,
                           const PipelineSettings& settings, const EngineOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.input = input;
  m.settings = settings;
  m.options = options;
  if (calls.empty()) throw Error(ErrorKind::usage, "the pipeline has no stage");
  auto convert_type = [](const StageCall& c) -> std::optional<SampleType> {
    if (c.name != "convert") return std::nullopt;
    if (const StageValue* v = c.get("type")) return std::get<SampleType>(*v);
    return std::nullopt;
  };
  // The working type as oocconv picks it: where f32 cannot hold what is read or written (the
  // input, the output, a convert's type), every intermediate is f64, so that a one-stage
  // pipeline gives oocconv's bytes.
  if (m.settings.precision == Precision::automatic) {
    bool wide =
        accumulates_in_f64(input.type, settings.out_type.value_or(input.type), settings.precision);
    for (const StageCall& c : calls)
      if (const auto t = convert_type(c))
        wide = wide || accumulates_in_f64(*t, *t, settings.precision);
    if (wide) m.settings.precision = Precision::f64;
  }
  // Holes (docs/design.md, "Nodata"): every stage must know them, or its values would mix holes
  // into samples. With --nodata the first stage that does not is refused; an input's tag alone
  // does not stop a pipeline that ran before it was read: that one runs as before.
  if (m.settings.nodata) {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const StageDecl& d = detail::find_stage(calls[i].name)->decl;
      // convert and equalize take samples one by one (their histogram: of every plane), so
      // they know a volume's holes in 3-D, as the linear and rank stages do (masked_in_3d); the
      // compound stages plane by plane only.
      const bool in_3d = (d.volume && d.sets_type) || detail::masked_in_3d(d.name);
      if (d.masked && (in_3d || !(input.volume() && !settings.planes))) {
        if (d.takes_convert && i + 1 < calls.size() && convert_type(calls[i + 1])) ++i;
        continue;
      }
      if (!settings.nodata_given) {
        m.settings.nodata.reset();
        break;
      }
      throw Error(ErrorKind::usage,
                  detail::stage_at(i, calls[i].name) +
                      (d.masked ? " knows holes in 2-D only: add --planes"
                                : " does not know holes (--nodata) yet; the stages that do: "
                                  "gaussian, uniform, correlate1d, separable, convolve, median, "
                                  "percentile, rank, minimum, maximum, opening, closing, equalize, "
                                  "convert") +
                      "; or --nodata none");
    }
  }
  ImageSpec in = input;
  std::optional<SampleType> set_type;  // what the last stage that sets the type gives
  // Each stage writes its holes as its output type's nodata value (-9999 into u8: 0), which the
  // next stage reads as holes (kernels/cpu/masked/convert.hpp); none where the input has no hole.
  const bool tracks =
      m.settings.nodata && kernels::masked::holds_in(input.type, *m.settings.nodata);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    m.text += (i ? " ! " : "") + calls[i].text();
    // A filter computes straight into the type of a convert that follows it, or of --out-type
    // when it is the last stage: the same rounding of the same value, one pass over the band less.
    std::optional<SampleType> fused;
    bool fuses_next = false;
    const bool takes = detail::find_stage(calls[i].name)->decl.takes_convert;
    if (takes && i + 1 < calls.size()) {
      fused = convert_type(calls[i + 1]);
      fuses_next = fused.has_value();
    } else if (takes && i + 1 == calls.size()) {
      fused = settings.out_type;
    }
    m.stages.push_back(m.build(in, calls[i], i, fused));
    // Its second pass relabels each band as the first labelled it: the band's own rows, no halo.
    if (m.stages.back().reduce && i + 1 < calls.size())
      throw Error(ErrorKind::usage, detail::stage_at(i, calls[i].name) +
                                        " must be the pipeline's last stage (its labels come "
                                        "from a pass of their own); run the later stages on "
                                        "its output");
    in = *m.stages.back().op->output();
    if (tracks) m.settings.nodata = kernels::masked::nodata_in(in.type, *m.settings.nodata);
    if (fuses_next) m.text += " ! " + calls[++i].text();
    if (fuses_next || detail::find_stage(calls[i].name)->decl.sets_type) set_type = in.type;
  }
  // The output's type: --out-type, else the last convert's or equalize's, else the input's.
  const SampleType want = settings.out_type.value_or(set_type.value_or(input.type));
  if (in.type != want && m.settings.nodata) {  // holes to the type's nodata value
    m.stages.push_back(Impl::Stage{m.keep(detail::make_masked_convert(
        in, want, *m.settings.nodata, "convert type=" + std::string(name(want))))});
    if (tracks) m.settings.nodata = kernels::masked::nodata_in(want, *m.settings.nodata);
  } else if (in.type != want) {
    kernels::PointParams p;
    p.kind = kernels::PointKind::convert;
    m.stages.push_back(Impl::Stage{
        m.keep(detail::make_point(in, p, want, "convert type=" + std::string(name(want))))});
  }
  if (tracks) m.output_nodata = m.settings.nodata;
  // A pass ends at each reduction: its prefix and the histogram; the last pass runs everything.
  for (std::size_t k = 0; k < m.stages.size(); ++k) {
    if (!m.stages[k].reduction()) continue;
    m.pass_end.push_back(k);
    m.passes.push_back(
        m.keep(detail::make_chain(m.geometry(k, m.stages[k].reduction()), std::nullopt,
                                  m.text + (m.stages[k].histogram ? " (histogram " : " (pass ") +
                                      std::to_string(m.passes.size() + 1) + ")")));
  }
  m.pass_end.push_back(m.stages.size());
  // A pass of one stage is that stage's operation (oocconv's filter, say): the same bytes as a
  // chain of one, with nothing around it.
  if (m.stages.size() == 1 && !m.stages[0].reduction())
    m.passes.push_back(m.stages[0].op);
  else
    m.passes.push_back(m.keep(detail::make_chain(m.geometry(m.stages.size(), nullptr),
                                                 *m.stages.back().op->output(), m.text)));
}

PipelinePlan::~PipelinePlan() = default;

int PipelinePlan::passes() const noexcept {
  return static_cast<int>(impl_->passes.size());
}

Operation& PipelinePlan::pass(int i) {
  return *impl_->passes.at(static_cast<std::size_t>(i));
}

std::vector<const Operation*> PipelinePlan::operations() const {
  std::vector<const Operation*> ops;
  for (const Operation* p : impl_->passes) ops.push_back(p);
  return ops;
}

void PipelinePlan::end_pass(int i, const std::function<void(std::vector<std::uint64_t>&)>& sum) {
  Impl& m = *impl_;
  const Impl::Stage& s = m.stages.at(m.pass_end.at(static_cast<std::size_t>(i)));
  if (s.end_reduce) s.end_reduce(sum);
  if (!s.histogram) return;
  std::vector<std::uint64_t> counts = s.histogram->counts();
  if (sum) sum(counts);
  s.lut->set_lut(equalization_lut(counts, s.histogram->bins(), s.histogram->channels()));
  m.histograms.resize(std::max(m.histograms.size(), static_cast<std::size_t>(i) + 1));
  m.histograms[static_cast<std::size_t>(i)] = {std::move(counts), s.histogram->bins(),
                                               s.histogram->channels()};
}

std::vector<std::uint64_t> PipelinePlan::reduced_state(int i, const std::string& path) const {
  const Impl& m = *impl_;
  const Impl::Stage& s = m.stages.at(m.pass_end.at(static_cast<std::size_t>(i)));
  if (s.save_reduce) return s.save_reduce(path);
  const Histogram* h = histogram(i);
  return h ? h->counts : std::vector<std::uint64_t>{};
}

void PipelinePlan::restore_pass(int i, std::vector<std::uint64_t> counts, const std::string& path) {
  Impl& m = *impl_;
  const Impl::Stage& s = m.stages.at(m.pass_end.at(static_cast<std::size_t>(i)));
  if (s.restore_reduce) return s.restore_reduce(counts, path);
  if (!s.histogram) return;
  if (counts.size() != s.histogram->counts().size())
    throw Error(ErrorKind::input, "the saved histogram has " + std::to_string(counts.size()) +
                                      " counts, this pipeline's " +
                                      std::to_string(s.histogram->counts().size()));
  s.lut->set_lut(equalization_lut(counts, s.histogram->bins(), s.histogram->channels()));
  m.histograms.resize(std::max(m.histograms.size(), static_cast<std::size_t>(i) + 1));
  m.histograms[static_cast<std::size_t>(i)] = {std::move(counts), s.histogram->bins(),
                                               s.histogram->channels()};
}

const PipelinePlan::Histogram* PipelinePlan::histogram(int i) const {
  const auto& h = impl_->histograms;
  return i >= 0 && static_cast<std::size_t>(i) < h.size() && h[static_cast<std::size_t>(i)].bins
             ? &h[static_cast<std::size_t>(i)]
             : nullptr;
}

std::optional<std::uint64_t> PipelinePlan::components() const {
  for (const Impl::Stage& s : impl_->stages)
    if (s.components) return s.components();
  return std::nullopt;
}

std::optional<double> PipelinePlan::output_nodata() const {
  return impl_->output_nodata;
}

ImageSpec PipelinePlan::output() const {
  return *impl_->passes.back()->output();
}

std::string PipelinePlan::describe() const {
  return impl_->text;
}

std::vector<std::string> PipelinePlan::stage_descriptions() const {
  std::vector<std::string> d;
  for (const Impl::Stage& s : impl_->stages) d.push_back(s.op->describe());
  return d;
}

RunStats run_pipeline(Job& job, PipelinePlan& plan, const ProgressFn& progress,
                      const std::function<void(std::vector<std::uint64_t>&)>& sum,
                      std::vector<RunStats>* each) {
  const int passes = plan.passes();
  const std::int64_t rows = job.row_end() - job.row_begin();
  RunStats total;
  for (int i = 0; i < passes; ++i) {
    // A pass whose reductions the interrupted run saved is not run again: its rows may be
    // written already, and the histogram needs every one of them. Each part keeps its own
    // (label's tables differ from part to part).
    const std::string state =
        i + 1 < passes ? job.state_path("pass-" + std::to_string(i) +
                                        (job.is_part() ? ".rows-" + std::to_string(job.row_begin())
                                                       : std::string()))
                       : "";
    // A run that does not resume makes its own: an earlier run's (of another input, perhaps)
    // must not be taken if this one stops before saving and is resumed.
    if (!state.empty() && !job.options().resume) std::remove(state.c_str());
    if (!state.empty() && job.options().resume) {
      if (std::optional<std::vector<std::uint64_t>> saved = job.load_state(state)) {
        plan.restore_pass(i, std::move(*saved), state);
        if (each) each->push_back(RunStats{});
        continue;
      }
      if (job.resumed_from() > job.row_begin())
        throw Error(ErrorKind::usage, "cannot resume: what the interrupted run's pass " +
                                          std::to_string(i + 1) + " reduced is not saved ('" +
                                          state +
                                          "' is missing); run without "
                                          "--resume");
    }
    const RunStats st = job.run(plan.pass(i), [&](std::int64_t d, std::int64_t) {
      if (progress) progress(i * rows + d, passes * rows);
    });
    if (each) each->push_back(st);
    if (i == 0) {
      total = st;
    } else {
      total.seconds += st.seconds;
      total.setup_seconds += st.setup_seconds;
      total.read_seconds += st.read_seconds;
      total.compute_seconds += st.compute_seconds;
      total.write_seconds += st.write_seconds;
      total.pack_seconds += st.pack_seconds;
      total.h2d_seconds += st.h2d_seconds;
      total.kernel_seconds += st.kernel_seconds;
      total.d2h_seconds += st.d2h_seconds;
      total.cpu_bands += st.cpu_bands;
      total.bytes_written = st.bytes_written;
      total.rows_done = st.rows_done;
      total.stopped = st.stopped;
    }
    if (st.stopped) break;
    if (i + 1 < passes) {
      plan.end_pass(i, sum);
      if (!state.empty())
        if (std::vector<std::uint64_t> v = plan.reduced_state(i, state); !v.empty())
          job.save_state(state, v);
    }
  }
  return total;
}

std::string PipelinePlan::fingerprint() const {
  const Impl& m = *impl_;
  return m.passes.back()->fingerprint() + "; border " + std::string(name(m.settings.border)) + " " +
         detail::exact_number(m.settings.border_value);
}

}  // namespace ooc
