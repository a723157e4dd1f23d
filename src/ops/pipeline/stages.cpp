// The stage registry (stage_registry.hpp): the families of stages in `oocrun --list` order, the
// parameter helpers and the context every builder shares.
#include <cmath>
#include <cstdio>

#include "ooc/error.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace detail {

StageParam number_param(std::string name, std::string fallback, double min, bool open,
                        std::string help, double max) {
  StageParam p;
  p.name = std::move(name);
  p.kind = StageParam::Kind::number;
  p.fallback = std::move(fallback);
  p.min = min;
  p.max = max;
  p.min_open = open;
  p.help = std::move(help);
  return p;
}

StageParam integer_param(std::string name, std::string fallback, double min, double max,
                         std::string help) {
  StageParam p =
      number_param(std::move(name), std::move(fallback), min, false, std::move(help), max);
  p.kind = StageParam::Kind::integer;
  return p;
}

StageParam other_param(std::string name, StageParam::Kind kind, std::string fallback,
                       std::string help) {
  StageParam p;
  p.name = std::move(name);
  p.kind = kind;
  p.fallback = std::move(fallback);
  p.help = std::move(help);
  return p;
}

bool StageArgs::has(const std::string& key) const {
  for (const auto& [k, v] : c_.args)
    if (k == key) return true;
  return false;
}

std::string StageArgs::text(const std::string& key) const {
  for (const auto& [k, v] : c_.args)
    if (k == key) return v;
  for (const StageParam& p : d_.params)
    if (p.name == key) return p.fallback;
  return "";
}

std::vector<double> StageArgs::taps(const std::string& key) const {
  return parse_taps(text(key), at_);
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
  return separable(input, SeparableFilter{t, t}, to);
}

std::int64_t gaussian_radius(double sigma) {
  // 1e-9: a sigma of k/3 typed in decimal (3 x 0.3333333333333334 is just over 1) is radius k.
  return static_cast<std::int64_t>(std::ceil(3.0 * sigma - 1e-9));
}

std::string exact_number(double v) {
  char s[64];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

const std::vector<StageEntry>& stage_registry() {
  static const std::vector<StageEntry> all = [] {
    std::vector<StageEntry> r;
    for (auto family : {filter_stages, combine_stages, point_stages, minmax_stages,
                        morphology_stages, rank_stages, equalize_stages})
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
