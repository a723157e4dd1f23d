// Pipelines (see ooc/ops/chain.hpp): the stage declarations and their parser, the point and
// combining operations, and the fused operation that runs a band through every stage of a pass.
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
#include "cuda_kernels.hpp"
#include "io/digest.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/ops/rank.hpp"

namespace ooc {
namespace {

using Kind = StageParam::Kind;
constexpr double kInf = std::numeric_limits<double>::infinity();

StageParam number(std::string name, std::string fallback, double min, bool open, std::string help,
                  double max = kInf) {
  StageParam p;
  p.name = std::move(name);
  p.kind = Kind::number;
  p.fallback = std::move(fallback);
  p.min = min;
  p.max = max;
  p.min_open = open;
  p.help = std::move(help);
  return p;
}
StageParam integer(std::string name, std::string fallback, double min, double max,
                   std::string help) {
  StageParam p = number(std::move(name), std::move(fallback), min, false, std::move(help), max);
  p.kind = Kind::integer;
  return p;
}
StageParam other(std::string name, Kind kind, std::string fallback, std::string help) {
  StageParam p;
  p.name = std::move(name);
  p.kind = kind;
  p.fallback = std::move(fallback);
  p.help = std::move(help);
  return p;
}

// Radii beyond this are refused: 2R+1 taps and the halos of bands stay far from overflow.
constexpr double kMaxRadius = 1 << 20;

}  // namespace

const std::vector<StageDecl>& stage_declarations() {
  static const std::vector<StageDecl> decls = [] {
    // 3 sigma, the default radius, stays within the largest radius.
    constexpr double kMaxSigma = kMaxRadius / 3;
    const StageParam sigma = number("sigma", "", 0, true, "Gaussian sigma, pixels", kMaxSigma);
    const StageParam radius =
        integer("radius", "auto", 0, kMaxRadius, "taps 2R+1 (default ceil(3 sigma))");
    std::vector<StageDecl> d;
    d.push_back({"gaussian",
                 "Gaussian filter (scipy.ndimage.gaussian_filter, truncate 3)",
                 {sigma, radius}});
    d.push_back({"uniform",
                 "mean over an N x N window (scipy.ndimage.uniform_filter)",
                 {integer("size", "", 1, 2 * kMaxRadius + 1, "window side N, odd")}});
    d.push_back({"correlate1d",
                 "1-D correlation along one axis (scipy.ndimage.correlate1d)",
                 {other("taps", Kind::taps, "", "weights a,b,c (an odd count)"),
                  integer("axis", "1", 0, 1, "0: along columns (y), 1: along rows (x)")}});
    d.push_back({"separable",
                 "row taps along x, then column taps along y (scipy.ndimage.convolve1d)",
                 {other("row", Kind::taps, "1", "taps along x, convolution order"),
                  other("col", Kind::taps, "1", "taps along y, convolution order")}});
    d.push_back({"convolve",
                 "2-D convolution (scipy.ndimage.convolve)",
                 {other("kernel", Kind::text, "",
                        "FILE (text or .npy), box:N, gaussian2d:S, laplace, sobel-x, sobel-y"),
                  other("method", Kind::text, "auto",
                        "auto (a cost model), direct or fft (overlap-save tiles)")}});
    d.push_back({"gradient-magnitude",
                 "hypot of scipy.ndimage.sobel along x and along y (each smoothed along x "
                 "first: under --border constant with a value other than 0 the y derivative's "
                 "edge rows pad the smoothed rows, where scipy pads the derivative's)",
                 {}});
    d.push_back({"dog",
                 "difference of Gaussians: gaussian(sigma1) - gaussian(sigma2)",
                 {number("sigma1", "", 0, true, "sigma of the first Gaussian", kMaxSigma),
                  number("sigma2", "", 0, true, "sigma of the second Gaussian", kMaxSigma)}});
    d.push_back({"unsharp",
                 "unsharp mask: x + amount (x - gaussian(sigma))",
                 {sigma, number("amount", "1", -kInf, false, "weight of the detail")}});
    d.push_back({"subtract-background",
                 "x - gaussian(sigma): removes what varies slower than sigma",
                 {sigma}});
    d.push_back(
        {"scale",
         "mul x + add",
         {number("mul", "1", -kInf, false, "factor"), number("add", "0", -kInf, false, "offset")}});
    d.push_back({"abs", "absolute value", {}});
    d.push_back({"clamp",
                 "values below min become min, above max become max",
                 {number("min", "", -kInf, false, "lower bound"),
                  number("max", "", -kInf, false, "upper bound")}});
    d.push_back({"threshold",
                 "1 where x > value, else 0",
                 {number("value", "", -kInf, false, "threshold")}});
    d.push_back({"convert",
                 "to another sample type, rounding half to even and saturating",
                 {other("type", Kind::type, "", "u8 u16 i16 u32 i32 f32 f64")}});
    // size or footprint: "none" is no default, the builder asks for one of the two.
    const StageParam window =
        other("size", Kind::size, "none",
              "window N x N, or H x W as HxW (scipy's size; even sizes too); this or footprint");
    const StageParam footprint =
        other("footprint", Kind::text, "none",
              "FILE.npy: a 2-D 0/1 array of odd sides, the window's shape (scipy's footprint; "
              "origin at the centre)");
    d.push_back(
        {"minimum", "minimum over the window (scipy.ndimage.minimum_filter)", {window, footprint}});
    d.push_back(
        {"maximum", "maximum over the window (scipy.ndimage.maximum_filter)", {window, footprint}});
    d.push_back(
        {"opening", "maximum of the minimum (scipy.ndimage.grey_opening)", {window, footprint}});
    d.push_back(
        {"closing", "minimum of the maximum (scipy.ndimage.grey_closing)", {window, footprint}});
    d.push_back({"white-tophat", "x - opening (scipy.ndimage.white_tophat)", {window, footprint}});
    d.push_back({"black-tophat", "closing - x (scipy.ndimage.black_tophat)", {window, footprint}});
    d.push_back(
        {"median",
         "median of the window (scipy.ndimage.median_filter; CUDA for windows of up to 49 samples)",
         {window, footprint}});
    d.push_back(
        {"percentile",
         "percentile of the window (scipy.ndimage.percentile_filter; CUDA up to 49 samples)",
         {window, footprint,
          number("q", "", -100, false, "percentile (negative: from 100 down)", 100)}});
    d.push_back({"rank",
                 "the sample of this rank in the window, 0 the smallest (scipy.ndimage.rank_filter;"
                 " CUDA up to 49 samples)",
                 {window, footprint,
                  integer("index", "", -kMaxRadius * kMaxRadius, kMaxRadius * kMaxRadius,
                          "rank; negative: from the largest (-1)")}});
    StageDecl eq{"equalize",
                 "histogram equalization of u8/u16 (as ooceq, cv2.equalizeHist per channel): a "
                 "histogram pass, then the table",
                 {}};
    eq.reduction = true;
    d.push_back(eq);
    return d;
  }();
  return decls;
}

namespace {

const StageDecl* find_decl(const std::string& name) {
  for (const StageDecl& d : stage_declarations())
    if (d.name == name) return &d;
  return nullptr;
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

// Checks a value against its declaration; throws naming the stage and the parameter.
void check_value(const StageParam& p, const std::string& value, const std::string& at) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::usage,
                 at + ": " + p.name + " must be " + what + ", got '" + value + "'");
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
        (void)parse_taps(value, at + " " + p.name);
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
      std::string names;
      for (const StageDecl& x : stage_declarations()) names += (names.empty() ? "" : ", ") + x.name;
      throw Error(ErrorKind::usage, "stage " + std::to_string(i + 1) + ": unknown stage '" +
                                        c.name + "'; the stages are " + names +
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

SampleType acc_type(Precision p) {
  return p == Precision::f64 ? SampleType::f64 : SampleType::f32;
}

using detail::BufferPool;

// --- point operations -----------------------------------------------------------------------

std::string exact(double v) {
  char s[64];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

class PointKernel final : public CpuKernel {
 public:
  PointKernel(kernels::PointParams p, SampleType out) : p_(p), out_(out) {}
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples();
    tbb::parallel_for(std::int64_t{0}, b.band.rows, [&](std::int64_t y) {
      const std::byte* src = b.rows[b.halo + y];
      std::byte* dst = b.out.row(y);
      dispatch_type(b.in.type, [&](auto in) {
        dispatch_type(out_, [&](auto out) {
          kernels::point_row<decltype(in), decltype(out)>(src, dst, n, p_);
        });
      });
    });
  }

 private:
  kernels::PointParams p_;
  SampleType out_;
};

class PointOp final : public Operation {
 public:
  PointOp(const ImageSpec& in, kernels::PointParams p, SampleType out, std::string what)
      : in_(in), out_{in.width, in.height, in.channels, out}, p_(p), what_(std::move(what)) {}
  std::string describe() const override { return what_; }
  std::string fingerprint() const override {
    return what_ + " (" + exact(p_.a) + ", " + exact(p_.b) + ") to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<PointKernel>(p_, out_.type);
  }
  bool has_cuda() const override { return kCudaBuilt; }
  bool cpu_gives_cuda_bits() const override { return true; }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>&) const override {
    return detail::make_point_cuda(p_, in_.type, out_.type);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::pointwise;
    return c;
  }

 private:
  ImageSpec in_, out_;
  kernels::PointParams p_;
  std::string what_;
};

// --- a stage's input combined with its filtered copies ------------------------------------------

// A band of `b` for a sub-operation of halo h <= b.halo.
CpuBand sub_band(const CpuBand& b, std::int64_t h, const BandView& out) {
  CpuBand s = b;
  s.rows = b.rows + (b.halo - h);
  s.halo = h;
  s.out = out;
  s.partial = nullptr;
  return s;
}

class CombineKernel final : public CpuKernel {
 public:
  CombineKernel(kernels::CombineKind kind, double amount, const Operation* g1, const Operation* g2,
                bool f64, SampleType out)
      : kind_(kind), amount_(amount), g1_(g1), g2_(g2), f64_(f64), out_(out) {
    k1_ = g1->make_cpu();
    if (g2) k2_ = g2->make_cpu();
  }
  void start(int slot) override {
    k1_->start(slot);
    if (k2_) k2_->start(slot);
  }
  void stop(int slot) override {
    k1_->stop(slot);
    if (k2_) k2_->stop(slot);
  }
  void run(const CpuBand& b) override {
    const std::int64_t n = b.in.row_samples(), rows = b.band.rows;
    const std::size_t acc = f64_ ? 8 : 4, row_bytes = static_cast<std::size_t>(n) * acc;
    std::vector<std::byte> buf = pool_.take(2 * row_bytes * static_cast<std::size_t>(rows));
    const SampleType at = f64_ ? SampleType::f64 : SampleType::f32;
    BandView v1{buf.data(), row_bytes, rows, b.in.width, b.in.channels, at};
    BandView v2{buf.data() + row_bytes * rows, row_bytes, rows, b.in.width, b.in.channels, at};
    k1_->run(sub_band(b, g1_->halo(), v1));
    if (k2_) k2_->run(sub_band(b, g2_->halo(), v2));
    const bool reads_x =
        kind_ == kernels::CombineKind::subtract || kind_ == kernels::CombineKind::unsharp;
    tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t y) {
      const std::byte* x = reads_x ? b.rows[b.halo + y] : nullptr;
      dispatch_type(b.in.type, [&](auto in) {
        dispatch_type(out_, [&](auto out) {
          using In = decltype(in);
          using Out = decltype(out);
          if (f64_)
            kernels::combine_row<In, double, Out>(
                kind_, x, reinterpret_cast<const double*>(v1.row(y)),
                k2_ ? reinterpret_cast<const double*>(v2.row(y)) : nullptr, b.out.row(y), n,
                amount_);
          else
            kernels::combine_row<In, float, Out>(
                kind_, x, reinterpret_cast<const float*>(v1.row(y)),
                k2_ ? reinterpret_cast<const float*>(v2.row(y)) : nullptr, b.out.row(y), n,
                amount_);
        });
      });
    });
    pool_.give(std::move(buf));
  }

 private:
  kernels::CombineKind kind_;
  double amount_;
  const Operation *g1_, *g2_;
  bool f64_;
  SampleType out_;
  std::unique_ptr<CpuKernel> k1_, k2_;
  BufferPool pool_;
};

class CombineOp final : public Operation {
 public:
  // out: the accumulator's type, or that of a convert fused into the stage.
  CombineOp(const ImageSpec& in, kernels::CombineKind kind, double amount,
            std::unique_ptr<Operation> g1, std::unique_ptr<Operation> g2, BorderMode border,
            bool f64, SampleType out, std::string what)
      : in_(in),
        out_{in.width, in.height, in.channels, out},
        kind_(kind),
        amount_(amount),
        g1_(std::move(g1)),
        g2_(std::move(g2)),
        border_(border),
        f64_(f64),
        what_(std::move(what)) {}
  std::string describe() const override { return what_; }
  std::string fingerprint() const override {
    return what_ + " (" + exact(amount_) + ": " + g1_->fingerprint() +
           (g2_ ? "; " + g2_->fingerprint() : "") + ") to " + std::string(name(out_.type));
  }
  std::optional<ImageSpec> output() const override { return out_; }
  std::int64_t halo() const override {
    return std::max(g1_->halo(), g2_ ? g2_->halo() : std::int64_t{0});
  }
  BorderMode border() const override { return border_; }
  std::size_t cpu_scratch_bytes(std::int64_t rows) const override {
    return 2 * static_cast<std::size_t>(rows) * static_cast<std::size_t>(in_.row_samples()) *
               (f64_ ? 8 : 4) +
           std::max(g1_->cpu_scratch_bytes(rows), g2_ ? g2_->cpu_scratch_bytes(rows) : 0);
  }
  std::size_t cuda_scratch_bytes(std::int64_t rows) const override {
    return detail::combine_cuda_scratch(g1_.get(), g2_.get(), rows, in_.row_samples(), f64_);
  }
  std::unique_ptr<CpuKernel> make_cpu() const override {
    return std::make_unique<CombineKernel>(kind_, amount_, g1_.get(), g2_.get(), f64_, out_.type);
  }
  bool has_cuda() const override { return kCudaBuilt && g1_->has_cuda(); }
  bool cpu_gives_cuda_bits() const override {
    return g1_->cpu_gives_cuda_bits() && (!g2_ || g2_->cpu_gives_cuda_bits());
  }
  std::unique_ptr<CudaKernel> make_cuda(const std::vector<int>& devices) const override {
    return detail::make_combine_cuda(devices, kind_, amount_, g1_.get(), g2_.get(), halo(),
                                     in_.type, f64_, out_.type);
  }
  Cost cost() const override {
    Cost c;
    c.kind = Cost::Kind::combine;
    c.stages.push_back(g1_->cost());
    if (g2_) c.stages.push_back(g2_->cost());
    return c;
  }

 private:
  ImageSpec in_, out_;
  kernels::CombineKind kind_;
  double amount_;
  std::unique_ptr<Operation> g1_, g2_;
  BorderMode border_;
  bool f64_;
  std::string what_;
};

// --- the fused pass -------------------------------------------------------------------------

class ChainKernel final : public CpuKernel {
 public:
  explicit ChainKernel(const ChainGeometry& g) : g_(g) {
    for (const auto& s : g_.stages) kernels_.push_back(s.op->make_cpu());
  }
  void start(int slot) override {
    for (auto& k : kernels_) k->start(slot);
  }
  void stop(int slot) override {
    for (auto& k : kernels_) k->stop(slot);
  }
  void run(const CpuBand& b) override {
    const std::size_t n = g_.stages.size();
    const std::int64_t y0 = b.band.y0, y1 = y0 + b.band.rows;
    const auto r = g_.ranges(y0, y1);
    // One buffer for every intermediate of this band.
    std::vector<std::size_t> offset(n, 0);
    std::size_t total = 0;
    for (std::size_t k = 0; k + 1 < n; ++k) {
      offset[k] = total;
      total += static_cast<std::size_t>(r[k].second - r[k].first) * out_spec(k).row_bytes();
    }
    std::vector<std::byte> buf = pool_.take(total);
    std::vector<const std::byte*> rows;
    for (std::size_t k = 0; k < n; ++k) {
      const detail::ChainStage& s = g_.stages[k];
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
          const auto m = g_.source_row(row);
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
  ChainGeometry g_;
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
        inter += static_cast<std::size_t>(out_rows) * g_.stages[k + 1].in.row_bytes();
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

// --- building the stages --------------------------------------------------------------------

class Args {
 public:
  Args(const StageCall& c, const StageDecl& d, std::string at) : c_(c), d_(d), at_(std::move(at)) {}
  bool has(const std::string& key) const {
    for (const auto& [k, v] : c_.args)
      if (k == key) return true;
    return false;
  }
  std::string text(const std::string& key) const {
    for (const auto& [k, v] : c_.args)
      if (k == key) return v;
    for (const StageParam& p : d_.params)
      if (p.name == key) return p.fallback;
    return "";
  }
  double number(const std::string& key) const { return std::stod(text(key)); }
  std::vector<double> taps(const std::string& key) const { return parse_taps(text(key), at_); }
  const std::string& at() const { return at_; }

 private:
  const StageCall& c_;
  const StageDecl& d_;
  std::string at_;
};

// The window of a rank or morphology stage: size=, or footprint= (exactly one of them).
std::tuple<std::int64_t, std::int64_t, Footprint> window_of(const Args& a) {
  if (a.has("size") == a.has("footprint"))
    throw Error(
        ErrorKind::usage,
        a.at() + (a.has("size") ? ": give size or footprint, not both"
                                : ": size is required (size=N or HxW), or footprint=FILE.npy"));
  if (a.has("size")) {
    const auto hw = *parse_window(a.text("size"));
    return {hw.first, hw.second, Footprint{}};
  }
  try {
    Footprint f = load_footprint(a.text("footprint"));
    return {f.height, f.width, std::move(f)};
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, a.at() + ": " + e.what());
  }
}

std::int64_t gaussian_radius(double sigma) {
  // 1e-9: a sigma of k/3 typed in decimal (3 x 0.3333333333333334 is just over 1) is radius k.
  return static_cast<std::int64_t>(std::ceil(3.0 * sigma - 1e-9));
}

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

  std::unique_ptr<Operation> separable(const ImageSpec& in, SeparableFilter f,
                                       std::optional<SampleType> out = {}) const {
    SeparableParams p;
    p.filter = std::move(f);
    p.border = settings.border;
    p.border_value = settings.border_value;
    p.out_type = out.value_or(acc_type(settings.precision));
    p.precision = settings.precision;
    return make_separable(in, p, options);
  }
  std::unique_ptr<Operation> gaussian(const ImageSpec& in, double sigma,
                                      std::optional<std::int64_t> radius = {},
                                      std::optional<SampleType> out = {}) const {
    const std::int64_t r = radius ? *radius : gaussian_radius(sigma);
    auto t = gaussian_taps(r, sigma);
    return separable(in, SeparableFilter{t, t}, out);
  }

  // The filters and combinations: a convert after them is fused into their output stage (the
  // same rounding of the same value, one pass over the band less).
  static bool takes_convert(const std::string& n) {
    return n == "gaussian" || n == "uniform" || n == "correlate1d" || n == "separable" ||
           n == "convolve" || n == "gradient-magnitude" || n == "dog" || n == "unsharp" ||
           n == "subtract-background";
  }

  // The operation of one stage on an input of `in`; its output's type follows the declarations,
  // or is `out` (a fused convert) for the stages takes_convert() names.
  Stage build(const ImageSpec& in, const StageCall& c, std::size_t index,
              std::optional<SampleType> out = {}) {
    const StageDecl& d = *find_decl(c.name);
    const Args a(c, d, where(index, c.name));
    const bool f64 = settings.precision == Precision::f64;
    const SampleType acc = acc_type(settings.precision);
    const SampleType to = out.value_or(acc);
    const std::string& n = c.name;
    auto point = [&](kernels::PointKind k, double pa, double pb, SampleType out) {
      kernels::PointParams p;
      p.kind = k;
      p.a = pa;
      p.b = pb;
      return Stage{keep(std::make_unique<PointOp>(in, p, out, c.text()))};
    };
    if (n == "gaussian") {
      std::optional<std::int64_t> r;
      if (a.has("radius")) r = static_cast<std::int64_t>(a.number("radius"));
      return Stage{keep(gaussian(in, a.number("sigma"), r, to))};
    }
    if (n == "uniform") {
      const auto size = static_cast<std::int64_t>(a.number("size"));
      if (size % 2 == 0)
        throw Error(ErrorKind::usage,
                    a.at() + ": size must be odd (2R+1), got " + std::to_string(size));
      auto t = box_taps(size / 2);
      return Stage{keep(separable(in, SeparableFilter{t, t}, to))};
    }
    if (n == "correlate1d") {
      const auto t = correlation_taps(a.taps("taps"));  // correlation to convolution order
      const bool x = a.number("axis") == 1;
      return Stage{
          keep(separable(in, x ? SeparableFilter{t, {1.0}} : SeparableFilter{{1.0}, t}, to))};
    }
    if (n == "separable")
      return Stage{keep(separable(in, SeparableFilter{a.taps("row"), a.taps("col")}, to))};
    if (n == "convolve") {
      Conv2dParams p;
      p.kernel = parse_kernel(a.text("kernel"),
                              options.mem_limit ? options.mem_limit : default_mem_limit());
      p.border = settings.border;
      p.border_value = settings.border_value;
      p.out_type = to;
      p.precision = settings.precision;
      try {
        p.method = parse_conv_method(a.text("method"));
      } catch (const Error&) {
        throw Error(ErrorKind::usage, a.at() + ": method must be auto, direct or fft, got '" +
                                          a.text("method") + "'");
      }
      return Stage{keep(make_conv2d(in, p, options))};
    }
    if (n == "gradient-magnitude") {
      // scipy.ndimage.sobel: correlate [-1, 0, 1] along the axis, [1, 2, 1] across it.
      const std::vector<double> d1{1.0, 0.0, -1.0}, s1{1.0, 2.0, 1.0};
      return Stage{keep(std::make_unique<CombineOp>(
          in, kernels::CombineKind::magnitude, 0.0, separable(in, SeparableFilter{d1, s1}),
          separable(in, SeparableFilter{s1, d1}), settings.border, f64, to, c.text()))};
    }
    if (n == "dog")
      return Stage{keep(std::make_unique<CombineOp>(
          in, kernels::CombineKind::difference, 0.0, gaussian(in, a.number("sigma1")),
          gaussian(in, a.number("sigma2")), settings.border, f64, to, c.text()))};
    if (n == "unsharp")
      return Stage{keep(std::make_unique<CombineOp>(
          in, kernels::CombineKind::unsharp, a.number("amount"), gaussian(in, a.number("sigma")),
          nullptr, settings.border, f64, to, c.text()))};
    if (n == "subtract-background")
      return Stage{keep(std::make_unique<CombineOp>(in, kernels::CombineKind::subtract, 0.0,
                                                    gaussian(in, a.number("sigma")), nullptr,
                                                    settings.border, f64, to, c.text()))};
    if (n == "scale")
      return point(kernels::PointKind::scale, a.number("mul"), a.number("add"), acc);
    if (n == "abs") return point(kernels::PointKind::abs, 0, 0, acc);
    if (n == "clamp") {
      if (a.number("min") > a.number("max"))
        throw Error(ErrorKind::usage,
                    a.at() + ": min " + a.text("min") + " is above max " + a.text("max"));
      return point(kernels::PointKind::clamp, a.number("min"), a.number("max"), acc);
    }
    if (n == "threshold") return point(kernels::PointKind::threshold, a.number("value"), 0, acc);
    if (n == "convert")
      return point(kernels::PointKind::convert, 0, 0, parse_sample_type(a.text("type")));
    for (const auto& [name_, kind] :
         {std::pair<const char*, MorphKind>{"minimum", MorphKind::minimum},
          {"maximum", MorphKind::maximum},
          {"opening", MorphKind::opening},
          {"closing", MorphKind::closing},
          {"white-tophat", MorphKind::white_tophat},
          {"black-tophat", MorphKind::black_tophat}})
      if (n == name_) {
        MorphParams p;
        p.kind = kind;
        std::tie(p.height, p.width, p.footprint) = window_of(a);
        p.border = settings.border;
        p.border_value = settings.border_value;
        return Stage{keep(make_morphology(in, p))};
      }
    if (n == "median" || n == "percentile" || n == "rank") {
      RankParams p;
      std::tie(p.height, p.width, p.footprint) = window_of(a);
      p.border = settings.border;
      p.border_value = settings.border_value;
      const std::int64_t count = p.footprint.empty() ? p.height * p.width : p.footprint.count();
      if (n == "median") p.rank = count / 2;
      if (n == "percentile") p.rank = rank_of_percentile(a.number("q"), count);
      if (n == "rank") {
        p.rank = static_cast<std::int64_t>(a.number("index"));
        if (p.rank < 0) p.rank += count;
        if (p.rank < 0 || p.rank >= count)
          throw Error(ErrorKind::usage, a.at() + ": index " + a.text("index") +
                                            " is outside the window's " + std::to_string(count) +
                                            " samples");
      }
      return Stage{keep(make_rank(in, p))};
    }
    if (n == "equalize") {
      if (in.type != SampleType::u8 && in.type != SampleType::u16)
        throw Error(ErrorKind::usage,
                    a.at() + ": equalize takes u8 or u16 samples, and its input is " +
                        std::string(name(in.type)) +
                        (index == 0 ? std::string(" (the image)") : " (the previous stage's)") +
                        ": put 'convert type=u8' or 'convert type=u16' before it, scaling the "
                        "values onto that range first (scale mul=... add=...)");
      auto h = make_histogram(in);
      auto l = make_lut(in);
      Stage s{nullptr, h.get(), l.get()};
      keep(std::move(h));
      s.op = keep(std::move(l));
      return s;
    }
    throw Error(ErrorKind::usage, a.at() + ": not built");  // a declaration without a builder
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
  ImageSpec in = input;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    m.text += (i ? " ! " : "") + calls[i].text();
    std::optional<SampleType> fused;
    if (i + 1 < calls.size() && calls[i + 1].name == "convert" &&
        Impl::takes_convert(calls[i].name)) {
      for (const auto& [k, v] : calls[i + 1].args)
        if (k == "type") fused = parse_sample_type(v);
    }
    m.stages.push_back(m.build(in, calls[i], i, fused));
    in = *m.stages.back().op->output();
    if (fused) m.text += " ! " + calls[++i].text();
  }
  // The output's type: --out-type, else a last convert's, else the input's.
  const bool last_converts = calls.back().name == "convert";
  const SampleType want =
      settings.out_type ? *settings.out_type : (last_converts ? in.type : input.type);
  if (in.type != want) {
    kernels::PointParams p;
    p.kind = kernels::PointKind::convert;
    m.stages.push_back(Impl::Stage{
        m.keep(std::make_unique<PointOp>(in, p, want, "convert type=" + std::string(name(want))))});
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
         exact(m.settings.border_value);
}

}  // namespace ooc
