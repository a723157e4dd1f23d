// libFuzzer target for pipelines: the input picks an image (type, channels, shape, samples), one to
// four stages from the declarations with parameters inside their declared ranges (kept small so a
// case runs in milliseconds), the border and the precision; the pipeline runs on the CPU over
// memory twice, with different bands and threads, and both outputs must be the same bytes (bytes
// never depend on the plan; only a NaN's payload may). A crash, a sanitizer report, an exception
// other than ooc::Error, or two different outputs is a finding. Stages added to a family are fuzzed
// without touching this file.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/job.hpp"
#include "ooc/memory.hpp"
#include "ooc/pipeline.hpp"

namespace {

// Reads the fuzzer's bytes as choices; zeros once they run out.
class Bytes {
 public:
  Bytes(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  unsigned byte() { return i_ < n_ ? d_[i_++] : 0u; }
  unsigned pick(unsigned n) { return n ? byte() % n : 0u; }
  const std::uint8_t* rest(std::size_t& left) const {
    left = n_ - std::min(i_, n_);
    return d_ + std::min(i_, n_);
  }

 private:
  const std::uint8_t* d_;
  std::size_t n_, i_ = 0;
};

constexpr ooc::SampleType kTypes[] = {
    ooc::SampleType::u8,  ooc::SampleType::u16, ooc::SampleType::i16, ooc::SampleType::u32,
    ooc::SampleType::i32, ooc::SampleType::f32, ooc::SampleType::f64};
constexpr const char* kTypeNames[] = {"u8", "u16", "i16", "u32", "i32", "f32", "f64"};

// A value for `p` within its declared range, small where the range is open above.
std::string value_of(const ooc::StageParam& p, Bytes& b) {
  using Kind = ooc::StageParam::Kind;
  switch (p.kind) {
    case Kind::integer: {
      const double lo = std::isfinite(p.min) ? p.min : -4;
      const double hi = std::min(std::isfinite(p.max) ? p.max : lo + 6, lo + 6);
      return std::to_string(static_cast<long long>(lo + b.pick(unsigned(hi - lo) + 1)));
    }
    case Kind::number: {
      const double lo = std::isfinite(p.min) ? p.min : -3;
      const double hi = std::isfinite(p.max) ? std::min(p.max, lo + 4) : lo + 4;
      double v = lo + (hi - lo) * (b.byte() / 255.0);
      if (p.min_open && v <= p.min) v = p.min + 0.25;
      char text[32];
      std::snprintf(text, sizeof text, "%.3f", v);
      return text;
    }
    case Kind::taps: {
      const unsigned n = 1 + 2 * b.pick(3);
      std::string t;
      for (unsigned i = 0; i < n; ++i) {
        if (i) t += ',';
        t += std::to_string(int(b.pick(7)) - 2);
      }
      return t == "0" ? "1" : t;
    }
    case Kind::type:
      return kTypeNames[b.pick(7)];
    case Kind::size:
      return b.pick(2) ? std::to_string(1 + b.pick(5))
                       : std::to_string(1 + b.pick(5)) + "x" + std::to_string(1 + b.pick(5));
    case Kind::text:
      return "";  // a file name (a kernel): not fuzzed here
  }
  return "";
}

// The same bytes, except that a NaN may be another NaN: where several NaNs of the input meet in
// a window, which one's payload a minimum or a sum passes on depends on the order of the
// operations, which follows the bands.
template <class T>
bool same_or_both_nan(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  for (std::size_t i = 0; i + sizeof(T) <= a.size(); i += sizeof(T)) {
    if (std::memcmp(a.data() + i, b.data() + i, sizeof(T)) == 0) continue;
    T x, y;
    std::memcpy(&x, a.data() + i, sizeof(T));
    std::memcpy(&y, b.data() + i, sizeof(T));
    if (!(std::isnan(x) && std::isnan(y))) return false;
  }
  return true;
}

bool same(ooc::SampleType t, const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  if (a.size() != b.size()) return false;
  if (t == ooc::SampleType::f32) return same_or_both_nan<float>(a, b);
  if (t == ooc::SampleType::f64) return same_or_both_nan<double>(a, b);
  return a == b;
}

std::vector<std::byte> run(const ooc::ImageSpec& in, std::vector<std::byte>& input,
                           const std::vector<ooc::StageCall>& calls,
                           const ooc::PipelineSettings& settings, int threads,
                           std::int64_t band_rows) {
  ooc::EngineOptions po;
  po.threads = threads;
  po.band_rows = band_rows;
  ooc::PipelinePlan plan(in, calls, settings, po);
  const ooc::ImageSpec out = plan.output();
  std::vector<std::byte> output(out.total_bytes(), std::byte{0xA5});  // poisoned
  ooc::JobOptions jo;
  jo.pipeline = po;
  jo.device = "cpu";
  ooc::Job job(std::make_unique<ooc::MemorySource>(ooc::MemoryImage::dense(in, input.data())),
               std::make_unique<ooc::MemorySink>(ooc::MemoryImage::dense(out, output.data())), jo);
  job.start(plan.operations());
  ooc::run_pipeline(job, plan);
  job.commit();
  return output;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes b(data, size);
  const unsigned t = b.pick(7);
  ooc::ImageSpec in;
  in.type = kTypes[t];
  in.channels = 1 + int(b.pick(4));
  in.width = 1 + b.pick(40);
  in.height = 1 + b.pick(40);
  const auto& decls = ooc::stage_declarations();
  std::vector<ooc::StageCall> calls;
  // Each argument as written, parsed in the run below: (call, parameter, text).
  std::vector<std::tuple<std::size_t, std::string, std::string>> texts;
  const unsigned stages = 1 + b.pick(4);
  for (unsigned s = 0; s < stages; ++s) {
    const ooc::StageDecl& d = decls[b.pick(unsigned(decls.size()))];
    ooc::StageCall c{d.name, {}};
    std::vector<std::pair<std::string, std::string>> mine;
    bool ok = true;
    for (const ooc::StageParam& p : d.params) {
      // The default, often; a window's size always (its alternative is a footprint file).
      if (!p.required() && p.kind != ooc::StageParam::Kind::size && b.pick(2)) continue;
      const std::string v = value_of(p, b);
      if (v.empty()) {
        ok = ok && !p.required();
        continue;
      }
      mine.emplace_back(p.name, v);
    }
    if (!ok) continue;
    for (auto& [k, v] : mine) texts.emplace_back(calls.size(), k, v);
    calls.push_back(std::move(c));
  }
  if (calls.empty()) return 0;
  ooc::PipelineSettings settings;
  constexpr ooc::BorderMode borders[] = {ooc::BorderMode::reflect, ooc::BorderMode::constant,
                                         ooc::BorderMode::nearest, ooc::BorderMode::mirror,
                                         ooc::BorderMode::wrap};
  settings.border = borders[b.pick(5)];
  settings.border_value = double(int(b.pick(9)) - 4);
  constexpr ooc::Precision precisions[] = {ooc::Precision::automatic, ooc::Precision::automatic,
                                           ooc::Precision::f32, ooc::Precision::f64};
  settings.precision = precisions[b.pick(4)];
  if (b.pick(4) == 0) settings.out_type = kTypes[b.pick(7)];
  // The samples: the rest of the input, repeated; floats read from bytes may be NaN or Inf.
  std::vector<std::byte> input(in.total_bytes());
  std::size_t left = 0;
  const std::uint8_t* rest = b.rest(left);
  for (std::size_t i = 0; i < input.size(); ++i)
    input[i] = std::byte(left ? rest[i % left] : std::uint8_t(i * 37 + 11));
  try {
    // The arguments are parsed and checked as the parser does a written pipeline.
    for (const auto& [i, k, v] : texts)
      calls[i].args.emplace_back(
          k, ooc::parse_stage_value(ooc::stage_parameter(calls[i].name, k), v, k));
    const std::int64_t band_rows = 1 + b.pick(5);
    const std::vector<std::byte> one = run(in, input, calls, settings, 1, 0);
    const std::vector<std::byte> two = run(in, input, calls, settings, 3, band_rows);
    const ooc::SampleType out_type = ooc::PipelinePlan(in, calls, settings).output().type;
    if (!same(out_type, one, two)) {
      std::string text;
      for (const ooc::StageCall& c : calls) text += (text.empty() ? "" : " ! ") + c.text();
      std::fprintf(stderr,
                   "different bytes with %lld-row bands: '%s' on %s, border %s %g, precision "
                   "%d, out type %s\n",
                   static_cast<long long>(band_rows), text.c_str(), in.describe().c_str(),
                   std::string(ooc::name(settings.border)).c_str(), settings.border_value,
                   static_cast<int>(settings.precision),
                   settings.out_type ? std::string(ooc::name(*settings.out_type)).c_str() : "-");
      if (const char* dir = std::getenv("OOC_FUZZ_DUMP")) {  // the image and both outputs
        const std::vector<std::byte>* what[] = {&input, &one, &two};
        const char* names[] = {"/input.raw", "/one.raw", "/two.raw"};
        for (int i = 0; i < 3; ++i)
          if (FILE* f = std::fopen((std::string(dir) + names[i]).c_str(), "wb")) {
            std::fwrite(what[i]->data(), 1, what[i]->size(), f);
            std::fclose(f);
          }
      }
      std::abort();
    }
  } catch (const ooc::Error& e) {
    // A refused pipeline (a stage that does not take this type) is an answer, not a finding.
    if (std::getenv("OOC_FUZZ_VERBOSE")) std::fprintf(stderr, "refused: %s\n", e.what());
    return 0;
  }
  if (std::getenv("OOC_FUZZ_VERBOSE")) std::fprintf(stderr, "ran\n");
  return 0;
}
