// Synthetic images: procedural, deterministic content of any size, so that a user can measure the
// pipeline on a huge image without a disk (input "synth:PATTERN"), and tests get non-trivial data.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "ooc/detail/hash.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "synthetic.hpp"

namespace ooc {
namespace {

constexpr int kMaxLowRank = 4096;  // per sample R hashes: beyond this generation crawls
constexpr const char* kLowRankTypes =
    "the low-rank pattern makes a real matrix (values about -1 to 1): use --type f32 or f64";

// gaussian-spots: a dark background with blurred spots, like a fluorescence image. The image is
// cut into cells of kSpotCell x kSpotCell pixels and every cell holds one spot, so that any
// image of a few cells has spots and the share of non-zero pixels (about a tenth) does not
// depend on its size: a README example checked with ooccheck then compares real values, not
// zeros. The centre lies in the middle half of its cell and 3 sigma stays below a quarter cell,
// so a spot never leaves its cell: spots do not overlap, and a row meets one row of cells.
constexpr std::int64_t kSpotCell = 64;
constexpr double kSpotMinSigma = 2.5;
constexpr double kSpotMaxSigma = 5;
static_assert(3 * kSpotMaxSigma < kSpotCell / 4, "a spot must stay inside its cell");

template <class T>
void fill_spots_row(std::uint64_t seed, std::int64_t y, std::int64_t width, int channels, T* dst) {
  const std::int64_t n = width * channels;
  std::fill(dst, dst + n, T{0});
  const double top = std::is_floating_point_v<T> ? 1.0 : double(std::numeric_limits<T>::max());
  const std::int64_t gy = y / kSpotCell;
  const std::int64_t cells_across = (width + kSpotCell - 1) / kSpotCell;
  for (std::int64_t gx = 0; gx < cells_across; ++gx) {
    const std::uint64_t h =
        mix(mix(seed ^ 0x5bd1e995u) + static_cast<std::uint64_t>(gy) * 0x9e3779b97f4a7c15ULL +
            static_cast<std::uint64_t>(gx));
    const double cx = (double(gx) + 0.25 + 0.5 * unit(mix(h + 1))) * kSpotCell;
    const double cy = (double(gy) + 0.25 + 0.5 * unit(mix(h + 2))) * kSpotCell;
    const double sigma = kSpotMinSigma + unit(mix(h + 3)) * (kSpotMaxSigma - kSpotMinSigma);
    const double amp = 0.3 + 0.7 * unit(mix(h + 4));
    const double dy = double(y) - cy;
    if (std::abs(dy) > 3 * sigma) continue;
    const auto x0 = std::max<std::int64_t>(0, static_cast<std::int64_t>(cx - 3 * sigma));
    const auto x1 = std::min<std::int64_t>(width - 1, static_cast<std::int64_t>(cx + 3 * sigma));
    for (std::int64_t x = x0; x <= x1; ++x) {
      const double dx = double(x) - cx, r2 = dx * dx + dy * dy;
      if (r2 > 9 * sigma * sigma) continue;  // a round spot, not the square around it
      const double g = amp * std::exp(-r2 / (2 * sigma * sigma));
      for (int c = 0; c < channels; ++c) {
        const double scaled = std::min(top, g * top * (1.0 - 0.2 * c));
        dst[x * channels + c] =
            static_cast<T>(std::is_floating_point_v<T> ? scaled : std::floor(scaled));
      }
    }
  }
}

// low-rank: a real matrix of known structure, for A^T (A X) and friends (oocatax). With R =
// params.rank and s = params.noise,
//   A[r, c] = (1 / sqrt(R)) * sum_{i < R} u_i(r) * v_i(c) + s * e(r, c)
// where u, v and e are independent uniform values in [-1, 1), each from its own hash:
//   key(w, j) = mix(mix(seed * G + w) + j)          (G = 0x9e3779b97f4a7c15)
//   u_i(r)    = 2 unit(mix(key(1, i) ^ r * K)) - 1  (K = 0xd1b54a32d192ed03)
//   v_i(c)    = 2 unit(mix(key(2, i) ^ c * K)) - 1
//   e(r, c)   = 2 unit(mix(key(3, r) ^ c * K)) - 1
// (all arithmetic modulo 2^64; c counts samples along the row, so several channels make a
// width x channels matrix). The rank-R part has entries of standard deviation 1/3 whatever R; its
// singular values grow like sqrt(M N / 9): A^T A has R large eigenvalues over a noise floor.
// Evaluated in double, stored rounded to the float type; integer types are refused (see
// make_synthetic_source).
constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kOdd = 0xd1b54a32d192ed03ULL;

inline double signed_unit(std::uint64_t h) noexcept {
  return 2.0 * unit(h) - 1.0;
}

constexpr std::uint64_t low_rank_key(std::uint64_t seed, std::uint64_t which, std::uint64_t j) {
  return mix(mix(seed * kGolden + which) + j);
}

template <class T>
void fill_low_rank_row(const PatternParams& params, std::uint64_t seed, std::int64_t y,
                       std::int64_t width, int channels, T* dst) {
  const int rank = params.rank;
  // Per row: the R values u_i(y) and the R column keys (the per-element work is then R hashes).
  thread_local std::vector<double> u;
  thread_local std::vector<std::uint64_t> vkey;
  u.resize(static_cast<std::size_t>(rank));
  vkey.resize(static_cast<std::size_t>(rank));
  const auto r = static_cast<std::uint64_t>(y);
  for (int i = 0; i < rank; ++i) {
    const auto q = static_cast<std::size_t>(i);
    u[q] = signed_unit(mix(low_rank_key(seed, 1, q) ^ (r * kOdd)));
    vkey[q] = low_rank_key(seed, 2, q);
  }
  const std::uint64_t ekey = low_rank_key(seed, 3, r);
  const double scale = 1.0 / std::sqrt(static_cast<double>(rank));
  const double s = params.noise;
  const std::int64_t n = width * channels;
  for (std::int64_t c = 0; c < n; ++c) {
    const std::uint64_t ck = static_cast<std::uint64_t>(c) * kOdd;
    double sum = 0;
    for (std::size_t i = 0; i < u.size(); ++i) sum += u[i] * signed_unit(mix(vkey[i] ^ ck));
    dst[c] = static_cast<T>(scale * sum + s * signed_unit(mix(ekey ^ ck)));
  }
}

template <class T>
void fill_row(Pattern pattern, const PatternParams& params, std::uint64_t seed, std::int64_t y,
              std::int64_t width, int channels, T* dst, std::int64_t z) {
  // A volume's planes past the first: other spots and other noise (plane 0 is the 2-D image).
  if (z != 0) seed = mix(seed ^ mix(static_cast<std::uint64_t>(z) * kGolden));
  if (pattern == Pattern::gaussian_spots) return fill_spots_row(seed, y, width, channels, dst);
  if (pattern == Pattern::low_rank) {
    if constexpr (std::is_floating_point_v<T>) {
      return fill_low_rank_row(params, seed, y, width, channels, dst);
    } else {
      throw Error(ErrorKind::usage, kLowRankTypes);
    }
  }
  const std::uint64_t row_key = mix(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(y));
  constexpr bool kFloat = std::is_floating_point_v<T>;
  const double lo = kFloat ? 0.0 : static_cast<double>(std::numeric_limits<T>::lowest());
  const double span = kFloat ? 1.0 : static_cast<double>(std::numeric_limits<T>::max()) - lo + 1.0;
  const std::int64_t n = width * channels;
  for (std::int64_t i = 0; i < n; ++i) {
    const double noise =
        unit(mix(row_key ^ (static_cast<std::uint64_t>(i) * 0xd1b54a32d192ed03ULL)));
    double u = noise;
    if (pattern != Pattern::noise) {
      const std::int64_t x = i / channels;
      const int c = static_cast<int>(i % channels);
      double base;
      if (pattern == Pattern::gradient || pattern == Pattern::low_contrast) {
        const double t = (0.37 * x + 0.61 * y + 0.53 * z + 97.0 * c) / 1024.0;
        base = t - std::floor(t);
      } else {
        base = (((x >> 6) + (y >> 6) + (z >> 3) + c) & 1) ? 0.75 : 0.05;
      }
      // low-contrast: a tenth of the range around the middle, what equalization is for.
      u = pattern == Pattern::low_contrast ? 0.45 + 0.1 * (0.6 * base + 0.4 * noise)
                                           : 0.8 * base + 0.2 * noise;
    }
    double v = lo + u * span;
    if constexpr (!kFloat) v = std::floor(v);
    dst[i] = static_cast<T>(v);
  }
}

class SyntheticSource final : public Source {
 public:
  SyntheticSource(Pattern pattern, const PatternParams& params, std::string pattern_name,
                  const RawHints& hints, std::uint64_t seed)
      : pattern_(pattern), params_(params), pattern_name_(std::move(pattern_name)), seed_(seed) {
    if (hints.width <= 0 || hints.height <= 0)
      throw Error(ErrorKind::usage, "a synthetic input needs --width and --height");
    if (pattern == Pattern::low_rank && is_integer(hints.type))
      throw Error(ErrorKind::usage,
                  std::string(kLowRankTypes) + ", not " + std::string(name(hints.type)));
    spec_ = ImageSpec{hints.width, hints.height, hints.channels, hints.type,
                      hints.depth > 0 ? hints.depth : 1};
    validate(spec_);
  }

  const ImageSpec& spec() const noexcept override { return spec_; }
  std::string describe() const override {
    return "synthetic " + pattern_name_ + " (seed " + std::to_string(seed_) + ") " +
           spec_.describe();
  }

  const std::byte* rows(std::int64_t y0, std::int64_t n, RowArena& arena) override {
    const std::size_t row = spec_.row_bytes();
    std::byte* out = arena.take(row * static_cast<std::size_t>(n));
    tbb::parallel_for(std::int64_t{0}, n, [&](std::int64_t y) {
      // A volume's stacked row r is row r % height of plane r / height; low-rank's matrix
      // is the planes' rows one after the other.
      const std::int64_t r = y0 + y;
      const bool matrix = pattern_ == Pattern::low_rank;
      fill_synthetic_row(pattern_, seed_, matrix ? r : r % spec_.height, spec_.width,
                         spec_.channels, spec_.type, out + y * row, params_,
                         matrix ? 0 : r / spec_.height);
    });
    return out;
  }

 private:
  Pattern pattern_;
  PatternParams params_;
  std::string pattern_name_;
  std::uint64_t seed_;
  ImageSpec spec_;
};

// "low-rank", "low-rank:R" or "low-rank:R:S".
PatternParams parse_low_rank(const std::string& name) {
  PatternParams p;
  const std::string usage = "synthetic pattern '" + name +
                            "': write low-rank, low-rank:R or low-rank:R:S with a rank R from 1 "
                            "to " +
                            std::to_string(kMaxLowRank) + " and a noise S >= 0";
  std::size_t at = std::string("low-rank").size();
  auto field = [&]() -> std::string {
    if (at >= name.size()) return {};
    if (name[at] != ':') throw Error(ErrorKind::usage, usage);
    const std::size_t end = std::min(name.find(':', at + 1), name.size());
    std::string f = name.substr(at + 1, end - at - 1);
    at = end;
    if (f.empty()) throw Error(ErrorKind::usage, usage);
    return f;
  };
  if (const std::string r = field(); !r.empty()) {
    char* end = nullptr;
    const long long v = std::strtoll(r.c_str(), &end, 10);
    if (end != r.c_str() + r.size() || v < 1 || v > kMaxLowRank)
      throw Error(ErrorKind::usage, usage);
    p.rank = static_cast<int>(v);
  }
  if (const std::string n = field(); !n.empty()) {
    char* end = nullptr;
    const double v = std::strtod(n.c_str(), &end);
    if (end != n.c_str() + n.size() || !std::isfinite(v) || v < 0)
      throw Error(ErrorKind::usage, usage);
    p.noise = v;
  }
  if (at < name.size()) throw Error(ErrorKind::usage, usage);
  return p;
}

}  // namespace

Pattern parse_pattern(const std::string& name, PatternParams* params) {
  if (params != nullptr) *params = PatternParams{};
  if (name == "noise" || name.empty()) return Pattern::noise;
  if (name == "gradient") return Pattern::gradient;
  if (name == "checker") return Pattern::checker;
  if (name == "gaussian-spots") return Pattern::gaussian_spots;
  if (name == "low-contrast") return Pattern::low_contrast;
  if (name == "low-rank" || name.rfind("low-rank:", 0) == 0) {
    const PatternParams p = parse_low_rank(name);
    if (params != nullptr) *params = p;
    return Pattern::low_rank;
  }
  throw Error(
      ErrorKind::usage,
      "unknown synthetic pattern '" + name +
          "': use noise, gradient, checker, gaussian-spots, low-contrast or low-rank[:R[:S]]");
}

std::string low_rank_pattern(int rank, double noise) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "low-rank:%d:%.17g", rank, noise);
  return buf;
}

void fill_synthetic_row(Pattern pattern, std::uint64_t seed, std::int64_t y, std::int64_t width,
                        int channels, SampleType type, std::byte* dst, const PatternParams& params,
                        std::int64_t z) {
  switch (type) {
    case SampleType::u8:
      return fill_row(pattern, params, seed, y, width, channels,
                      reinterpret_cast<std::uint8_t*>(dst), z);
    case SampleType::u16:
      return fill_row(pattern, params, seed, y, width, channels,
                      reinterpret_cast<std::uint16_t*>(dst), z);
    case SampleType::i16:
      return fill_row(pattern, params, seed, y, width, channels,
                      reinterpret_cast<std::int16_t*>(dst), z);
    case SampleType::u32:
      return fill_row(pattern, params, seed, y, width, channels,
                      reinterpret_cast<std::uint32_t*>(dst), z);
    case SampleType::i32:
      return fill_row(pattern, params, seed, y, width, channels,
                      reinterpret_cast<std::int32_t*>(dst), z);
    case SampleType::f32:
      return fill_row(pattern, params, seed, y, width, channels, reinterpret_cast<float*>(dst), z);
    case SampleType::f64:
      return fill_row(pattern, params, seed, y, width, channels, reinterpret_cast<double*>(dst), z);
    case SampleType::u64:
      refuse_u64_samples();
  }
}

std::unique_ptr<Source> make_synthetic_source(const std::string& pattern, const RawHints& hints,
                                              std::uint64_t seed) {
  const std::string name = pattern.empty() ? "noise" : pattern;
  PatternParams params;
  const Pattern p = parse_pattern(name, &params);
  return std::make_unique<SyntheticSource>(p, params, name, hints, seed);
}

}  // namespace ooc
