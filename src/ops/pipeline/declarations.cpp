// The stages' declarations as the program reads them (ooc/pipeline.hpp): lookup by name, `oocrun
// --list`, and parameters' values, parsed once from what a user wrote, checked against their
// declaration, and written back as text only for people (messages, --list, descriptions).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/pipeline.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace {

using Kind = StageParam::Kind;

std::string format_number(double v) {
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

std::string one_range_text(const StageParam& p) {
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

std::string range_text(const StageParam& p) {
  if (!p.per_axis) return one_range_text(p);
  if (p.kind == Kind::integer) return one_range_text(p) + ", or one per axis: HxW or DxHxW";
  return one_range_text(p) + ", or one per axis: a,b or a,b,c (each from 0 to " +
         format_number(p.max) + ")";
}

bool in_range(const StageParam& p, double v) {
  return std::isfinite(v) && v >= p.min && v <= p.max && !(p.min_open && v == p.min);
}

// A window side: a whole number from `min` (at least 1) to `max`, as written (no sign, no
// exponent); 0 where it is not one.
std::int64_t window_side(const std::string& t, double min = 1, double max = 1 << 20) {
  if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) return 0;
  const std::int64_t v = std::stoll(t);
  return double(v) >= std::max(min, 1.0) && double(v) <= max ? v : 0;
}

// "N", "HxW" or "DxHxW" (a volume's), each side as window_side takes it; none where malformed.
std::optional<StageSize> parse_sides(const std::string& t, double min, double max) {
  std::vector<std::int64_t> v;
  std::size_t from = 0;
  for (;;) {
    const std::size_t x = t.find('x', from);
    v.push_back(window_side(t.substr(from, x == std::string::npos ? x : x - from), min, max));
    if (v.back() == 0 || v.size() > 3) return std::nullopt;
    if (x == std::string::npos) break;
    from = x + 1;
  }
  if (v.size() == 1) return StageSize{v[0], v[0]};
  if (v.size() == 2) return StageSize{v[0], v[1]};
  return StageSize{v[1], v[2], v[0]};
}

bool sides_in_range(const StageSize& s, double min, double max) {
  auto in = [&](std::int64_t v) { return double(v) >= std::max(min, 1.0) && double(v) <= max; };
  return in(s.h) && in(s.w) && (s.d == 0 || in(s.d));
}

// One value of a number's list per axis: from 0 (an axis left alone) to the largest.
bool axis_number_ok(const StageParam& p, double v) {
  return std::isfinite(v) && v >= 0 && v <= p.max;
}

constexpr const char* kSizeRule =
    "N or HxW (a volume's also DxHxW), whole numbers from 1 to 1048576";

const StageDecl* find_decl(const std::string& name) {
  for (const StageDecl& d : stage_declarations())
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace

std::string detail::stage_names() {
  std::string names;
  for (const StageDecl& x : stage_declarations()) names += (names.empty() ? "" : ", ") + x.name;
  return names;
}

const StageDecl& stage_declaration(const std::string& name) {
  if (const StageDecl* d = find_decl(name)) return *d;
  throw Error(ErrorKind::usage,
              "unknown stage '" + name + "'; the stages are " + detail::stage_names());
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
      o << " " << (p.required() ? "" : "[") << p.name << "="
        << (p.kind == Kind::taps ? "a,b,c" : "V") << (p.required() ? "" : "]");
    o << "\n    " << d.help << "\n";
    for (const StageParam& p : d.params) {
      o << "    " << p.name << ": " << p.help;
      if (p.kind == Kind::number || p.kind == Kind::integer) o << "; " << range_text(p);
      o << (p.required() ? "; required" : "; default " + p.fallback_text()) << "\n";
    }
  }
  return o.str();
}

StageValue parse_stage_value(const StageParam& p, const std::string& text, const std::string& as) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::usage, as + " must be " + what + ", got '" + text + "'");
  };
  if (p.per_axis && p.kind == Kind::integer && text.find('x') != std::string::npos) {
    const auto s = parse_sides(text, p.min, p.max);
    if (!s) throw bad(range_text(p));
    return *s;
  }
  if (p.per_axis && p.kind == Kind::number && text.find(',') != std::string::npos) {
    std::vector<double> v;
    std::size_t from = 0;
    for (;;) {
      const std::size_t comma = text.find(',', from);
      const std::string word = text.substr(from, comma == std::string::npos ? comma : comma - from);
      std::size_t used = 0;
      double x = -1;
      try {
        x = std::stod(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (word.empty() || used != word.size() || !axis_number_ok(p, x)) throw bad(range_text(p));
      v.push_back(x);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    return v;
  }
  switch (p.kind) {
    case Kind::number:
    case Kind::integer: {
      double v = 0;
      std::size_t used = 0;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        throw bad(range_text(p));
      }
      if (used != text.size() || !in_range(p, v)) throw bad(range_text(p));
      if (p.kind == Kind::number) return v;
      if (v != std::floor(v)) throw bad(range_text(p));
      return static_cast<std::int64_t>(v);
    }
    case Kind::taps:
      try {
        return parse_taps(text, as);
      } catch (const Error& e) {
        throw Error(ErrorKind::usage, e.what());
      }
    case Kind::type:
      try {
        return parse_sample_type(text);
      } catch (const Error&) {
        throw bad("one of u8 u16 i16 u32 i32 f32 f64");
      }
    case Kind::text:
      if (text.empty()) throw bad("given");
      return text;
    case Kind::size: {
      const auto s = parse_sides(text, 1, 1 << 20);
      if (!s) throw bad(kSizeRule);
      return *s;
    }
  }
  throw bad("a known kind of value");
}

void check_stage_value(const StageParam& p, const StageValue& v, const std::string& as) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::usage,
                 as + " must be " + what + ", got '" + format_stage_value(v) + "'");
  };
  switch (p.kind) {
    case Kind::number:
    case Kind::integer: {
      if (const auto* list = std::get_if<std::vector<double>>(&v);
          list && p.per_axis && p.kind == Kind::number) {
        if (list->size() < 2) throw bad(range_text(p));
        for (double x : *list)
          if (!axis_number_ok(p, x)) throw bad(range_text(p));
        return;
      }
      if (const auto* s = std::get_if<StageSize>(&v); s && p.per_axis && p.kind == Kind::integer) {
        if (!sides_in_range(*s, p.min, p.max)) throw bad(range_text(p));
        return;
      }
      double x = 0;
      if (const double* d = std::get_if<double>(&v))
        x = *d;
      else if (const std::int64_t* i = std::get_if<std::int64_t>(&v))
        x = static_cast<double>(*i);
      else
        throw bad(range_text(p));
      if (!in_range(p, x) || (p.kind == Kind::integer && x != std::floor(x)))
        throw bad(range_text(p));
      return;
    }
    case Kind::taps: {
      const auto* t = std::get_if<std::vector<double>>(&v);
      if (!t || t->empty() || t->size() % 2 == 0) throw bad("an odd count of taps");
      for (double x : *t)
        if (!std::isfinite(x)) throw bad("finite taps");
      return;
    }
    case Kind::type:
      if (!std::holds_alternative<SampleType>(v)) throw bad("one of u8 u16 i16 u32 i32 f32 f64");
      return;
    case Kind::text:
      if (std::holds_alternative<Kernel2d>(v)) return;
      if (const auto* s = std::get_if<std::string>(&v); !s || s->empty()) throw bad("given");
      return;
    case Kind::size: {
      const auto* s = std::get_if<StageSize>(&v);
      if (!s || !sides_in_range(*s, 1, 1 << 20)) throw bad(kSizeRule);
      return;
    }
  }
}

std::string format_stage_value(const StageValue& v) {
  struct Format {
    std::string operator()(double d) const {
      char s[64];
      const auto r = std::to_chars(s, s + sizeof s, d);
      return std::string(s, r.ptr);
    }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(const std::vector<double>& t) const {
      std::string s;
      for (double d : t) {
        if (!s.empty()) s.push_back(',');
        s.append((*this)(d));
      }
      return s;
    }
    std::string operator()(SampleType t) const { return std::string(name(t)); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const StageSize& s) const {
      const std::string hw =
          s.h == s.w ? std::to_string(s.h) : std::to_string(s.h) + "x" + std::to_string(s.w);
      if (s.d == 0) return hw;
      return std::to_string(s.d) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w);
    }
    std::string operator()(const Kernel2d& k) const {
      return k.name.empty() ? std::to_string(k.rows) + "x" + std::to_string(k.cols) + " kernel"
                            : k.name;
    }
  };
  return std::visit(Format{}, v);
}

namespace {

// A parameter in a call's template: `size=N|HxW`, `taps=a,b,c`, `sigma=S`; optional ones in [].
std::string placeholder(const StageParam& p) {
  std::string v;
  switch (p.kind) {
    case Kind::taps:
      v = "a,b,c";
      break;
    case Kind::size:
      v = "N|HxW|DxHxW";
      break;
    case Kind::type:
      v = "T";
      break;
    case Kind::integer:
      v = p.name == "size"
              ? (p.per_axis ? "N|HxW|DxHxW" : "N")
              : std::string(1,
                            static_cast<char>(std::toupper(static_cast<unsigned char>(p.name[0]))));
      break;
    default: {
      const std::string l(1,
                          static_cast<char>(std::toupper(static_cast<unsigned char>(p.name[0]))));
      v = p.per_axis ? l + "|" + l + "y," + l + "x|" + l + "z," + l + "y," + l + "x" : l;
    }
  }
  std::string t = p.required() ? "" : "[";
  t.append(p.name).append("=").append(v);
  if (!p.required()) t.push_back(']');
  return t;
}

// A table cell's text: its bars escaped.
std::string escape_bars(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string stage_table() {
  std::string t = "| stage | what it computes |\n| --- | --- |\n";
  for (const StageDecl& d : stage_declarations()) {
    std::string call = d.name;
    for (const StageParam& p : d.params) call.append(" ").append(placeholder(p));
    t.append("| `").append(escape_bars(call)).append("` | ").append(escape_bars(d.help));
    t.append(" |\n");
  }
  return t;
}

void check_stage_call(const StageCall& call, const std::string& at) {
  for (const auto& [key, v] : call.args) {
    const StageParam* p = nullptr;
    for (const StageParam& q : stage_declaration(call.name).params)
      if (q.name == key) p = &q;
    if (!p) throw Error(ErrorKind::usage, at + ": no parameter '" + key + "'");
    check_stage_value(*p, v, at + ": " + key);
  }
}

std::string StageParam::fallback_text() const {
  return fallback ? format_stage_value(*fallback) : computed;
}

StageCall& StageCall::set(const std::string& key, StageValue v) {
  for (auto& [k, old] : args)
    if (k == key) {
      old = std::move(v);
      return *this;
    }
  args.emplace_back(key, std::move(v));
  return *this;
}

const StageValue* StageCall::get(const std::string& key) const {
  for (const auto& [k, v] : args)
    if (k == key) return &v;
  return nullptr;
}

std::string StageCall::text() const {
  std::string t = name;
  for (const auto& [k, v] : args) t += " " + k + "=" + format_stage_value(v);
  return t;
}

}  // namespace ooc
