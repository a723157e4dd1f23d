// The stage registry (stage_registry.hpp): the families of stages in `oocrun --list` order, the
// parameter helpers and the context every builder shares.
#include <cmath>
#include <cstdio>

#include "ooc/error.hpp"
#include "ops/convolution/fold_taps.hpp"
#include "ops/masked.hpp"
#include "ops/pipeline/chain_impl.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace detail {

StageParam number_param(std::string name, std::optional<double> fallback, double min, bool open,
                        std::string help, double max) {
  StageParam p;
  p.name = std::move(name);
  p.kind = StageParam::Kind::number;
  if (fallback) p.fallback = *fallback;
  p.min = min;
  p.max = max;
  p.min_open = open;
  p.help = std::move(help);
  return p;
}

StageParam integer_param(std::string name, std::optional<std::int64_t> fallback, double min,
                         double max, std::string help) {
  StageParam p = number_param(std::move(name), std::nullopt, min, false, std::move(help), max);
  p.kind = StageParam::Kind::integer;
  if (fallback) p.fallback = *fallback;
  return p;
}

StageParam other_param(std::string name, StageParam::Kind kind, std::optional<StageValue> fallback,
                       std::string help) {
  StageParam p;
  p.name = std::move(name);
  p.kind = kind;
  p.fallback = std::move(fallback);
  p.help = std::move(help);
  return p;
}

StageParam computed(StageParam p, std::string how) {
  p.computed = std::move(how);
  return p;
}

const StageValue& StageArgs::value(const std::string& key) const {
  if (const StageValue* v = c_.get(key)) return *v;
  for (const StageParam& p : d_.params)
    if (p.name == key && p.fallback) return *p.fallback;
  throw Error(ErrorKind::usage, at_ + ": " + key + " is required");
}

double StageArgs::number(const std::string& key) const {
  const StageValue& v = value(key);
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}

std::int64_t StageArgs::integer(const std::string& key) const {
  const StageValue& v = value(key);
  if (const double* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  return std::get<std::int64_t>(v);
}

const std::vector<double>& StageArgs::taps(const std::string& key) const {
  return std::get<std::vector<double>>(value(key));
}

SampleType StageArgs::type(const std::string& key) const {
  return std::get<SampleType>(value(key));
}

StageSize StageArgs::size(const std::string& key) const {
  const StageValue& v = value(key);
  if (const std::int64_t* n = std::get_if<std::int64_t>(&v)) return StageSize{*n, *n};
  return std::get<StageSize>(v);
}

std::vector<double> StageArgs::numbers(const std::string& key) const {
  const StageValue& v = value(key);
  if (const auto* list = std::get_if<std::vector<double>>(&v)) return *list;
  return {number(key)};
}

std::string StageArgs::text(const std::string& key) const {
  const StageValue& v = value(key);
  if (const std::string* s = std::get_if<std::string>(&v)) return *s;
  return format_stage_value(v);
}

const std::string& StageArgs::call_text() const {
  if (text_.empty()) text_ = c_.text();
  return text_;
}

std::unique_ptr<Operation> StageContext::separable(const ImageSpec& input, SeparableFilter f,
                                                   std::optional<SampleType> to,
                                                   ConvMethod method) const {
  SeparableParams p;
  p.filter = std::move(f);
  p.border = settings.border;
  p.border_value = settings.border_value;
  p.out_type = to.value_or(acc());
  p.precision = settings.precision;
  p.method = method;
  return make_separable(input, p, options);
}

std::unique_ptr<Operation> StageContext::gaussian(const ImageSpec& input, double sigma,
                                                  std::optional<std::int64_t> radius,
                                                  std::optional<SampleType> to) const {
  const std::int64_t r = radius ? *radius : gaussian_radius(sigma);
  auto t = gaussian_taps(r, sigma);
  if (!input.volume() || settings.planes) return separable(input, SeparableFilter{t, t}, to);
  // A volume's: the z pass (taps past the planes folded onto them), then the 2-D passes.
  std::vector<double> z = fold_taps(t, input.depth, settings.border);
  const auto before = static_cast<std::int64_t>(z.size() / 2);
  std::vector<std::unique_ptr<Operation>> ops;
  ops.push_back(make_zpass(input, kernels::ZPassKind::sum,
                           std::vector<double>(z.rbegin(), z.rend()), before, acc(),
                           settings.border, settings.border_value));
  ops.push_back(separable(*ops.back()->output(), SeparableFilter{t, t}, to));
  return make_owning_chain(std::move(ops), input, settings.border);
}

std::unique_ptr<Operation> StageContext::gaussian_axes(const ImageSpec& input, double sz, double sy,
                                                       double sx) const {
  if (sy == sx && (sz == sx || !input.volume() || settings.planes)) return gaussian(input, sx);
  auto taps = [](double s) {
    return s == 0 ? std::vector<double>{1.0} : gaussian_taps(gaussian_radius(s), s);
  };
  const SeparableFilter xy{taps(sx), taps(sy)};
  if (!input.volume() || settings.planes) return separable(input, xy);
  std::vector<double> z = fold_taps(taps(sz), input.depth, settings.border);
  const auto before = static_cast<std::int64_t>(z.size() / 2);
  std::vector<std::unique_ptr<Operation>> ops;
  ops.push_back(make_zpass(input, kernels::ZPassKind::sum,
                           std::vector<double>(z.rbegin(), z.rend()), before, acc(),
                           settings.border, settings.border_value));
  ops.push_back(separable(*ops.back()->output(), xy));
  return make_owning_chain(std::move(ops), input, settings.border);
}

void StageContext::no_volume() const {
  throw Error(ErrorKind::usage, args.at() + " has no 3-D version of '" + args.call_text() +
                                    "' yet: add --planes to filter each plane in 2-D");
}

std::string exact_number(double v) {
  char s[64];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

const std::vector<StageEntry>& stage_registry() {
  static const std::vector<StageEntry> all = [] {
    std::vector<StageEntry> r;
    for (auto family :
         {separable_stages, conv2d_stages, combine_stages, point_stages, minmax_stages,
          masked_morphology_stages, rank_stages, equalize_stages, project_stages, label_stages})
      for (StageEntry& e : family()) r.push_back(std::move(e));
    return r;
  }();
  return all;
}

const StageEntry* find_stage(const std::string& name) {
  for (const StageEntry& e : stage_registry())
    if (e.decl.name == name) return &e;
  return nullptr;
}

}  // namespace detail

const std::vector<StageDecl>& stage_declarations() {
  static const std::vector<StageDecl> decls = [] {
    std::vector<StageDecl> d;
    for (const detail::StageEntry& e : detail::stage_registry()) d.push_back(e.decl);
    return d;
  }();
  return decls;
}

}  // namespace ooc
