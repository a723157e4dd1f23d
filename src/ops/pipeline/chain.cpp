// Pipelines (see ooc/ops/chain.hpp): the parser of stage calls (the declarations are the
// families', stage_registry.hpp), the fused operation that runs a band through every stage of a
// pass, and the plan of passes.
#include "ooc/ops/chain.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
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
namespace {

using Kind = StageParam::Kind;

const StageDecl* find_decl(const std::string& name) {
  for (const StageDecl& d : stage_declarations())
    if (d.name == name) return &d;
  return nullptr;
}

std::string stage_names() {
  std::string names;
  for (const StageDecl& x : stage_declarations()) names += (names.empty() ? "" : ", ") + x.name;
  return names;
}

std::string format_number(double v) {
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

std::string range_text(const StageParam& p) {
  if (p.kind == Kind::integer) {
    if (std::isinf(p.max)) return "an integer >= " + format_number(p.min);
    return "an integer from " + format_number(p.min) + " to " + format_number(p.max);
  }
  if (std::isinf(p.min) && std::isinf(p.max)) return "a finite number";
  if (std::isinf(p.max))
    return std::string("a number ") + (p.min_open ? "> " : ">= ") + format_number(p.min);
  return std::string("a number ") + (p.min_open ? "above " : "from ") + format_number(p.min) +
         " to " + format_number(p.max);
}

std::string where(std::size_t index, const std::string& name) {
  return "stage " + std::to_string(index + 1) + " (" + name + ")";
}

}  // namespace

void check_stage_value(const StageParam& p, const std::string& value, const std::string& as) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::usage, as + " must be " + what + ", got '" + value + "'");
  };
  switch (p.kind) {
    case Kind::number:
    case Kind::integer: {
      double v = 0;
      std::size_t used = 0;
      try {
        v = std::stod(value, &used);
      } catch (const std::exception&) {
        throw bad(range_text(p));
      }
      if (used != value.size() || !std::isfinite(v)) throw bad(range_text(p));
      if (p.kind == Kind::integer && v != std::floor(v)) throw bad(range_text(p));
      if (v < p.min || v > p.max || (p.min_open && v == p.min)) throw bad(range_text(p));
      break;
    }
    case Kind::taps:
      try {
        (void)parse_taps(value, as);
      } catch (const Error& e) {
        throw Error(ErrorKind::usage, e.what());
      }
      break;
    case Kind::type:
      try {
        (void)parse_sample_type(value);
      } catch (const Error&) {
        throw bad("one of u8 u16 i16 u32 i32 f32 f64");
      }
      break;
    case Kind::text:
      if (value.empty()) throw bad("given");
      break;
    case Kind::size:
      if (!parse_window(value)) throw bad("N or HxW, whole numbers from 1 to 1048576");
      break;
  }
}

namespace {

// Checks a value against its declaration; throws naming the stage and the parameter.
void check_value(const StageParam& p, const std::string& value, const std::string& at) {
  check_stage_value(p, value, at + ": " + p.name);
}

}  // namespace

std::optional<std::pair<std::int64_t, std::int64_t>> parse_window(const std::string& text) {
  const std::size_t x = text.find('x');
  auto whole = [](const std::string& t) -> std::int64_t {
    if (t.empty() || t.size() > 8 || t.find_first_not_of("0123456789") != std::string::npos)
      return 0;
    const std::int64_t v = std::stoll(t);
    return v >= 1 && v <= (1 << 20) ? v : 0;
  };
  const std::int64_t h = whole(text.substr(0, x));
  const std::int64_t w = x == std::string::npos ? h : whole(text.substr(x + 1));
  if (h == 0 || w == 0) return std::nullopt;
  return std::make_pair(h, w);
}

namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\n") - a + 1);
}

}  // namespace

std::string StageCall::text() const {
  std::string t = name;
  for (const auto& [k, v] : args) t += " " + k + "=" + v;
  return t;
}

const StageDecl& stage_declaration(const std::string& name) {
  if (const StageDecl* d = find_decl(name)) return *d;
  throw Error(ErrorKind::usage, "unknown stage '" + name + "'; the stages are " + stage_names());
}

const StageParam& stage_parameter(const std::string& stage, const std::string& param) {
  for (const StageParam& p : stage_declaration(stage).params)
    if (p.name == param) return p;
  throw Error(ErrorKind::usage, "stage " + stage + " has no parameter '" + param + "'");
}

std::string stage_list() {
  std::ostringstream o;
  for (const StageDecl& d : stage_declarations()) {
    o << d.name;
    for (const StageParam& p : d.params)
      o << " " << (p.fallback.empty() ? "" : "[") << p.name << "="
        << (p.kind == Kind::taps ? "a,b,c" : "V") << (p.fallback.empty() ? "" : "]");
    o << "\n    " << d.help << "\n";
    for (const StageParam& p : d.params) {
      o << "    " << p.name << ": " << p.help;
      if (p.kind == Kind::number || p.kind == Kind::integer) o << "; " << range_text(p);
      o << (p.fallback.empty() ? "; required" : "; default " + p.fallback) << "\n";
    }
  }
  return o.str();
}

std::vector<StageCall> parse_pipeline(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) text += (text.empty() ? "" : " ") + w;
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (;;) {
    const std::size_t bang = text.find('!', from);
    parts.push_back(
        trim(text.substr(from, bang == std::string::npos ? std::string::npos : bang - from)));
    if (bang == std::string::npos) break;
    from = bang + 1;
  }
  if (parts.size() == 1 && parts[0].empty())
    throw Error(ErrorKind::usage,
                "no pipeline given: name at least one stage, e.g. 'gaussian sigma=2' (oocrun "
                "--list shows every stage)");
  std::vector<StageCall> calls;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty())
      throw Error(ErrorKind::usage,
                  "stage " + std::to_string(i + 1) +
                      " is empty: a '!' at the start or the end, or two in a row; stages are "
                      "separated by single '!'");
    std::istringstream s(parts[i]);
    StageCall c;
    s >> c.name;
    const StageDecl* d = find_decl(c.name);
    if (!d) {
      throw Error(ErrorKind::usage, "stage " + std::to_string(i + 1) + ": unknown stage '" +
                                        c.name + "'; the stages are " + stage_names() +
                                        " (oocrun --list says what each takes)");
    }
    const std::string at = where(i, c.name);
    for (std::string word; s >> word;) {
      const std::size_t eq = word.find('=');
      const std::string key = word.substr(0, eq);
      const StageParam* p = nullptr;
      for (const StageParam& q : d->params)
        if (q.name == key) p = &q;
      if (!p) {
        std::string names;
        for (const StageParam& q : d->params) names += (names.empty() ? "" : ", ") + q.name;
        throw Error(ErrorKind::usage, at + ": no parameter '" + key + "'; " +
                                          (names.empty() ? "it takes none" : "it takes " + names));
      }
      if (eq == std::string::npos || eq + 1 == word.size())
        throw Error(ErrorKind::usage, at + ": " + key + " needs a value: write " + key + "=V");
      for (const auto& [k, v] : c.args)
        if (k == key) throw Error(ErrorKind::usage, at + ": " + key + " is given twice");
      const std::string value = word.substr(eq + 1);
      check_value(*p, value, at);
      c.args.emplace_back(key, value);
    }
    for (const StageParam& p : d->params) {
      bool given = false;
      for (const auto& [k, v] : c.args) given = given || k == p.name;
      if (!given && p.fallback.empty())
        throw Error(ErrorKind::usage,
                    at + ": " + p.name + " is required (" + p.name + "=V: " + p.help + ")");
    }
    calls.push_back(std::move(c));
  }
  return calls;
}

namespace detail {

std::int64_t ChainGeometry::halo() const noexcept {
  std::int64_t h = 0;
  for (const ChainStage& s : stages) h += s.halo;
  return h;
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
    const std::size_t n = g.stages.size();
    const std::int64_t y0 = b.band.y0, y1 = y0 + b.band.rows;
    const auto r = g.ranges(y0, y1);
    // One buffer for every intermediate of this band.
    std::vector<std::size_t> offset(n, 0);
    std::size_t total = 0;
    for (std::size_t k = 0; k + 1 < n; ++k) {
      offset[k] = total;
      total += detail::scratch_align_up(static_cast<std::size_t>(r[k].second - r[k].first) *
                                        out_spec(k).row_bytes());
    }
    detail::ScratchBuffer buf = pool_.take(total);
    std::vector<const std::byte*> rows;
    for (std::size_t k = 0; k < n; ++k) {
      const detail::ChainStage& s = g.stages[k];
      const std::int64_t a = r[k].first, e = r[k].second, h = s.halo;
      CpuBand sb;
      sb.band = Band{b.band.index, a, e - a};
      sb.slot = b.slot;
      sb.halo = h;
      sb.in = s.in;
      if (k == 0) {
        sb.rows = b.rows + ((a - h) - (y0 - b.halo));
      } else {
        const ImageSpec& prev = out_spec(k - 1);
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
        const ImageSpec& o = out_spec(k);
        sb.out =
            BandView{buf.data() + offset[k], o.row_bytes(), e - a, o.width, o.channels, o.type};
      }
      kernels_[k]->run(sb);
    }
    pool_.give(std::move(buf));
  }

 private:
  ImageSpec out_spec(std::size_t k) const { return g_.stages[k + 1].in; }
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
  Chain(ChainGeometry g, std::optional<ImageSpec> out, std::string what)
      : g_(std::move(g)), out_(out), what_(std::move(what)) {}
  std::string describe() const override { return what_; }
  std::string fingerprint() const override {
    std::string f;
    for (const auto& s : g_.stages) f += (f.empty() ? "" : " ! ") + s.op->fingerprint();
    return f;
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override { return g_.halo(); }
  BorderMode border() const override { return g_.border; }
  std::size_t partial_bytes() const override { return last().partial_bytes(); }
  void merge(const std::byte* partial, const Band& band) override {
    g_.stages.back().op->merge(partial, band);
  }
  std::size_t cpu_scratch_bytes(std::int64_t rows) const override {
    std::size_t inter = 0, most = 0;
    for (std::size_t k = 0; k < g_.stages.size(); ++k) {
      const std::int64_t out_rows = g_.max_out_rows(k, rows);
      if (k + 1 < g_.stages.size())
        inter += detail::scratch_align_up(static_cast<std::size_t>(out_rows) *
                                          g_.stages[k + 1].in.row_bytes());
      most = std::max(most, g_.stages[k].op->cpu_scratch_bytes(out_rows));
    }
    return inter + most;
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
  ChainGeometry g_;
  std::optional<ImageSpec> out_;
  std::string what_;
};

}  // namespace

struct PipelinePlan::Impl {
  ImageSpec input;
  PipelineSettings settings;
  PipelineOptions options;
  std::vector<std::unique_ptr<Operation>> owned;
  struct Stage {
    Operation* op;
    HistogramOp* histogram = nullptr;  // equalize: the reduction, and its table in `op`
    LutOp* lut = nullptr;
  };
  std::vector<Stage> stages;
  std::vector<std::unique_ptr<Operation>> passes;
  std::vector<std::size_t> pass_end;  // stages [0, pass_end[i]) run in pass i (+ a histogram)
  std::vector<PipelinePlan::Histogram> histograms;  // of each pass but the last, once ended
  std::string text;

  Operation* keep(std::unique_ptr<Operation> op) {
    owned.push_back(std::move(op));
    return owned.back().get();
  }

  // The operation of a call on an input of `in`; `out`: a convert fused into a filter stage.
  Stage build(const ImageSpec& in, const StageCall& c, std::size_t index,
              std::optional<SampleType> out = {}) {
    const detail::StageEntry& e = *detail::find_stage(c.name);
    const detail::StageArgs args(c, e.decl, where(index, c.name));
    detail::BuiltStage b = e.build(detail::StageContext{in, args, settings, options, out, index});
    Stage s{nullptr, b.histogram.get(), b.lut};
    if (b.histogram) keep(std::move(b.histogram));
    s.op = keep(std::move(b.op));
    return s;
  }

  ChainGeometry geometry(std::size_t count, Operation* last) const {
    ChainGeometry g;
    g.border = settings.border;
    g.height = input.height;
    ImageSpec in = input;
    for (std::size_t k = 0; k < count; ++k) {
      g.stages.push_back({stages[k].op, in, stages[k].op->halo()});
      in = *stages[k].op->output();
    }
    if (last) g.stages.push_back({last, in, last->halo()});
    return g;
  }
};

PipelinePlan::PipelinePlan(const ImageSpec& input, const std::vector<StageCall>& calls,
                           const PipelineSettings& settings, const PipelineOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.input = input;
  m.settings = settings;
  m.options = options;
  if (calls.empty()) throw Error(ErrorKind::usage, "the pipeline has no stage");
  auto convert_type = [](const StageCall& c) -> std::optional<SampleType> {
    if (c.name != "convert") return std::nullopt;
    for (const auto& [k, v] : c.args)
      if (k == "type") return parse_sample_type(v);
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
  ImageSpec in = input;
  std::optional<SampleType> set_type;  // what the last stage that sets the type gives
  for (std::size_t i = 0; i < calls.size(); ++i) {
    m.text += (i ? " ! " : "") + calls[i].text();
    std::optional<SampleType> fused;
    if (i + 1 < calls.size() && detail::find_stage(calls[i].name)->decl.takes_convert)
      fused = convert_type(calls[i + 1]);
    m.stages.push_back(m.build(in, calls[i], i, fused));
    in = *m.stages.back().op->output();
    if (fused) m.text += " ! " + calls[++i].text();
    if (fused || detail::find_stage(calls[i].name)->decl.sets_type) set_type = in.type;
  }
  // The output's type: --out-type, else the last convert's or equalize's, else the input's.
  const SampleType want = settings.out_type.value_or(set_type.value_or(input.type));
  if (in.type != want) {
    kernels::PointParams p;
    p.kind = kernels::PointKind::convert;
    m.stages.push_back(Impl::Stage{
        m.keep(detail::make_point(in, p, want, "convert type=" + std::string(name(want))))});
  }
  // A pass ends at each reduction: its prefix and the histogram; the last pass runs everything.
  for (std::size_t k = 0; k < m.stages.size(); ++k) {
    if (!m.stages[k].histogram) continue;
    m.pass_end.push_back(k);
    m.passes.push_back(std::make_unique<Chain>(
        m.geometry(k, m.stages[k].histogram), std::nullopt,
        m.text + " (histogram " + std::to_string(m.passes.size() + 1) + ")"));
  }
  m.pass_end.push_back(m.stages.size());
  m.passes.push_back(std::make_unique<Chain>(m.geometry(m.stages.size(), nullptr),
                                             *m.stages.back().op->output(), m.text));
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
  for (const auto& p : impl_->passes) ops.push_back(p.get());
  return ops;
}

void PipelinePlan::end_pass(int i, const std::function<void(std::vector<std::uint64_t>&)>& sum) {
  Impl& m = *impl_;
  const Impl::Stage& s = m.stages.at(m.pass_end.at(static_cast<std::size_t>(i)));
  if (!s.histogram) return;
  std::vector<std::uint64_t> counts = s.histogram->counts();
  if (sum) sum(counts);
  s.lut->set_lut(equalization_lut(counts, s.histogram->bins(), s.histogram->channels()));
  m.histograms.resize(std::max(m.histograms.size(), static_cast<std::size_t>(i) + 1));
  m.histograms[static_cast<std::size_t>(i)] = {std::move(counts), s.histogram->bins(),
                                               s.histogram->channels()};
}

void PipelinePlan::restore_pass(int i, std::vector<std::uint64_t> counts) {
  Impl& m = *impl_;
  const Impl::Stage& s = m.stages.at(m.pass_end.at(static_cast<std::size_t>(i)));
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
    // written already, and the histogram needs every one of them.
    const std::string state = i + 1 < passes ? job.state_path("pass-" + std::to_string(i)) : "";
    if (!state.empty() && job.options().resume) {
      if (std::optional<std::vector<std::uint64_t>> saved = job.load_state(state)) {
        plan.restore_pass(i, std::move(*saved));
        if (each) each->push_back(RunStats{});
        continue;
      }
      if (job.resumed_from() > job.row_begin())
        throw Error(ErrorKind::usage, "cannot resume: the interrupted run's histogram ('" + state +
                                          "') is missing; run without --resume");
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
      total.bytes_written = st.bytes_written;
      total.rows_done = st.rows_done;
      total.stopped = st.stopped;
    }
    if (st.stopped) break;
    if (i + 1 < passes) {
      plan.end_pass(i, sum);
      if (!state.empty())
        if (const PipelinePlan::Histogram* h = plan.histogram(i)) job.save_state(state, h->counts);
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
