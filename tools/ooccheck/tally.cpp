// What the checkers of ooccheck share (check.hpp): tokens and the sample of bands picked, samples
// read as doubles and stored as oocconv stores them, the report, OUT opened against IN, the band
// slots of the border rule, and the memory the reference may take.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "check.hpp"
#include "ooc/detail/hash.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/engine.hpp"

namespace ooc::check {

std::vector<std::string> line_tokens(std::string line) {
  line.erase(std::min(line.find('#'), line.size()));
  return split_tokens(
      line, [](char c) { return c == ',' || std::isspace(static_cast<unsigned char>(c)); });
}

// Floyd's algorithm on splitmix64, so that a seed picks the same indices in every build.
std::vector<std::int64_t> pick_sample(std::int64_t n, std::int64_t sample, std::uint64_t seed) {
  std::vector<std::int64_t> picked;
  if (sample <= 0 || sample >= n) {
    for (std::int64_t i = 0; i < n; ++i) picked.push_back(i);
    return picked;
  }
  std::uint64_t state = seed;
  auto next = [&state] { return ooc::mix(state += 0x9e3779b97f4a7c15ULL); };
  std::set<std::int64_t> chosen;
  for (std::int64_t j = n - sample; j < n; ++j) {
    const auto t = static_cast<std::int64_t>(
        (static_cast<unsigned __int128>(next()) * static_cast<std::uint64_t>(j + 1)) >> 64);
    chosen.insert(chosen.count(t) ? j : t);
  }
  picked.assign(chosen.begin(), chosen.end());
  return picked;
}

std::string bytes_text(double bytes) {
  if (bytes < 0x1p50) return ooc::format_bytes(bytes);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2g bytes", bytes);
  return buf;
}

std::size_t usable_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  std::size_t bytes = pages > 0 && page > 0
                          ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                          : std::size_t{16} << 30;
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    bytes = std::min(bytes, static_cast<std::size_t>(limit.rlim_cur));
  return bytes;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// The value oocconv stores for an exact result v in an output of type t. nearbyint, not round:
// ties go to even, as in the kernels (default rounding mode).
double as_stored(double v, SampleType t) {
  switch (t) {
    case SampleType::f32:
      return static_cast<double>(static_cast<float>(v));
    case SampleType::f64:
      return v;
    default:
      if (std::isnan(v)) return 0;  // there is no integer NaN
      return std::nearbyint(std::clamp(v, ooc::lowest_value(t), ooc::highest_value(t)));
  }
}

std::vector<std::int64_t> pick_bands(std::int64_t first, std::int64_t end, std::int64_t sample,
                                     std::uint64_t seed) {
  const std::int64_t bands = (end - first + kBandRows - 1) / kBandRows;
  std::vector<std::int64_t> picked = ooc::check::pick_sample(bands, sample, seed);
  for (std::int64_t& b : picked) b = first + b * kBandRows;
  return picked;
}

std::string where(std::int64_t index, const ooc::ImageSpec& s) {
  const std::int64_t n = s.row_samples();
  std::string w = " at row " + std::to_string(index / n) + " sample " + std::to_string(index % n);
  if (s.channels > 1)
    w += " (x " + std::to_string(index % n / s.channels) + ", channel " +
         std::to_string(index % s.channels) + ")";
  return w;
}

int report(const std::string& what, const std::string& rule, const Tally& t, double range,
           const ooc::ImageSpec& s, const char* name_a, const char* name_b) {
  const double rms = t.count ? std::sqrt(t.sum_sq / double(t.count)) : 0.0;
  const double psnr =
      rms > 0 ? 20 * std::log10(range / rms) : std::numeric_limits<double>::infinity();
  std::printf("%s: max abs error %.6g", what.c_str(), t.max_abs);
  if (t.worst.index >= 0)
    std::printf("%s (%s %.9g, %s %.9g, tolerance %.6g)", where(t.worst.index, s).c_str(), name_a,
                t.worst.a, name_b, t.worst.b, t.worst.tolerance);
  std::printf(", RMS %.6g, PSNR %.2f dB, %lld over tolerance, %lld NaN mismatches\n", rms, psnr,
              (long long)t.over, (long long)t.nan_mismatch);
  std::printf("worst error / its tolerance: %.6g", t.max_ratio);
  if (t.worst_ratio.index >= 0)
    std::printf("%s (%s %.9g, %s %.9g, |error| %.6g, tolerance %.6g)",
                where(t.worst_ratio.index, s).c_str(), name_a, t.worst_ratio.a, name_b,
                t.worst_ratio.b, std::abs(t.worst_ratio.a - t.worst_ratio.b),
                t.worst_ratio.tolerance);
  std::printf("\ntolerance: %s\n", rule.c_str());
  const bool ok = t.over == 0 && t.nan_mismatch == 0;
  if (ok) {
    std::printf("OK: within tolerance\n");
  } else {
    std::printf("FAIL: %lld samples over their tolerance, %lld NaN mismatches\n", (long long)t.over,
                (long long)t.nan_mismatch);
  }
  return ok ? 0 : 1;
}

std::string band_summary(std::size_t picked, std::int64_t first, std::int64_t end,
                         std::int64_t sample, std::uint64_t seed) {
  const std::int64_t bands = (end - first + kBandRows - 1) / kBandRows;
  std::string s = std::to_string(picked) + " of " + std::to_string(bands) + " bands of " +
                  std::to_string(kBandRows) + " rows";
  if (sample > 0 && static_cast<std::int64_t>(picked) < bands)
    s += " (--sample " + std::to_string(sample) + ", seed " + std::to_string(seed) + ")";
  return s;
}

void refuse_volume(const ooc::ImageSpec& s, const std::string& path) {
  if (s.volume())
    throw Error(
        ErrorKind::usage,
        "'" + path + "' is a volume (" + s.describe() +
            "): ooccheck's references are 2-D; --compare compares volumes sample by sample");
}

std::unique_ptr<ooc::Source> open_output(const std::string& path, const ooc::Source& in,
                                         const std::string& in_path,
                                         std::optional<SampleType> out_type, const char* tool) {
  const ooc::ImageSpec& is = in.spec();
  const std::string in_desc = "input '" + in_path + "' is " + is.describe();
  ooc::RawHints h;
  const bool raw = path.rfind("synth:", 0) != 0 && ooc::detect_format(path) == "raw";
  if (raw) {
    h.width = is.width;
    h.channels = is.channels;
  }
  h.type = out_type.value_or(is.type);
  h.type_given = out_type.has_value();
  std::unique_ptr<ooc::Source> out;
  try {
    out = ooc::open_source(path, h);
  } catch (const Error& e) {
    if (!raw) throw;
    throw Error(e.kind(), std::string(e.what()) + " (output '" + path + "' read as raw " +
                              std::string(ooc::name(h.type)) + " rows of the input's width; " +
                              in_desc + ")");
  }
  const ooc::ImageSpec& os = out->spec();
  if (os.width != is.width || os.height != is.height || os.channels != is.channels)
    throw Error(ErrorKind::input,
                "output '" + path + "' is " + os.describe() + " but " + in_desc + ": " + tool +
                    " keeps width, height and channels, so OUT cannot be the result of IN; check "
                    "the order (OUT first) and the input options" +
                    (raw ? std::string("; a raw OUT is read as --out-type (default: IN's type)")
                         : std::string()));
  return out;
}

}  // namespace ooc::check
