// The pipeline parser and the declarations' lookup (ooc/pipeline.hpp): stage calls from text a
// user wrote, each value parsed for its parameter; `oocrun --list` from the declarations.
#include <sstream>

#include "chain_impl.hpp"
#include "ooc/error.hpp"
#include "ooc/pipeline.hpp"
#include "ops/stage_registry.hpp"

namespace ooc {
namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\n") - a + 1);
}

}  // namespace

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
    const detail::StageEntry* e = detail::find_stage(c.name);
    const StageDecl* d = e ? &e->decl : nullptr;
    if (!d) {
      throw Error(ErrorKind::usage, "stage " + std::to_string(i + 1) + ": unknown stage '" +
                                        c.name + "'; the stages are " + detail::stage_names() +
                                        " (oocrun --list says what each takes)");
    }
    const std::string at = detail::stage_at(i, c.name);
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
      c.args.emplace_back(key, parse_stage_value(*p, word.substr(eq + 1), at + ": " + p->name));
    }
    for (const StageParam& p : d->params) {
      bool given = false;
      for (const auto& [k, v] : c.args) given = given || k == p.name;
      if (!given && p.required())
        throw Error(ErrorKind::usage,
                    at + ": " + p.name + " is required (" + p.name + "=V: " + p.help + ")");
    }
    calls.push_back(std::move(c));
  }
  return calls;
}

}  // namespace ooc
