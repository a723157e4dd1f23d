// Footprints (see ooc/ops/rank.hpp): a 0/1 mask read from a .npy file, and the windows of the
// morphology family built from a size or a footprint (window.hpp), for the operations and for
// their stages.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "io/npy.hpp"
#include "ooc/error.hpp"
#include "ops/morphology/window.hpp"

namespace ooc {

std::int64_t Footprint::count() const noexcept {
  std::int64_t n = 0;
  for (std::uint8_t v : mask) n += v != 0;
  return n;
}

Footprint load_footprint(const std::string& path) {
  constexpr std::int64_t kMaxSide = 4095;
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::usage, "footprint '" + path + "' " + what +
                                       "; a footprint is a 2-D (volumes: 3-D) .npy of bool or "
                                       "integers, 0 and 1, of odd sides (numpy.save('f.npy', "
                                       "mask))");
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw bad("cannot be read (no such file?)");
  if (!S_ISREG(st.st_mode)) throw bad("is not a regular file");
  if (st.st_size > (std::int64_t{1} << 28)) throw bad("is too large");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string bytes = text.str();
  if (!in && !in.eof()) throw bad("cannot be read");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  NpyArray a;
  try {
    a = parse_npy_array(u, bytes.size(), path);
  } catch (const Error& e) {
    throw bad(std::string("is not a .npy file (") + e.what() + ")");
  }
  if (a.dims.size() != 2 && a.dims.size() != 3)
    throw bad("has shape " + a.shape + ", not 2-D or 3-D");
  const char kind = a.kind.empty() ? '?' : a.kind[0];
  if (kind != 'b' && kind != 'u' && kind != 'i') throw bad("holds '" + a.kind + "' samples");
  const std::size_t width = a.kind.size() == 2 ? std::size_t(a.kind[1] - '0') : 0;
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw bad("holds '" + a.kind + "' samples");
  Footprint f;
  const bool planes = a.dims.size() == 3;
  f.depth = planes ? a.dims[0] : 1;
  f.axes = planes ? 3 : 2;
  f.height = a.dims[planes ? 1 : 0];
  f.width = a.dims[planes ? 2 : 1];
  f.name = path;
  const std::string sides = (planes ? std::to_string(f.depth) + " x " : std::string()) +
                            std::to_string(f.height) + " x " + std::to_string(f.width);
  if (f.depth < 1 || f.height < 1 || f.width < 1 || f.depth % 2 == 0 || f.height % 2 == 0 ||
      f.width % 2 == 0)
    throw bad("is " + sides + ": every side must be odd (the centre is the origin)");
  if (f.depth > kMaxSide || f.height > kMaxSide || f.width > kMaxSide)
    throw bad("is larger than " + std::to_string(kMaxSide) + " on a side");
  const std::size_t count = static_cast<std::size_t>(f.depth * f.height * f.width);
  if (bytes.size() < a.data_offset + count * width) throw bad("is truncated");
  f.mask.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    // The value in its byte order ('<', '>', '|' for single bytes, '=' the native one: little).
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < width; ++k) {
      const std::size_t at = a.order == '>' ? k : width - 1 - k;
      v = (v << 8) | u[a.data_offset + i * width + at];
    }
    if (v > 1) throw bad("holds a value other than 0 and 1 (at sample " + std::to_string(i) + ")");
    const bool one = v == 1;
    // Fortran order: element (d, r, q) is at (q * height + r) * depth + d.
    const auto D = static_cast<std::size_t>(f.depth), H = static_cast<std::size_t>(f.height),
               W = static_cast<std::size_t>(f.width);
    const std::size_t at = a.fortran ? ((i % D) * H + (i / D) % H) * W + i / (D * H) : i;
    f.mask[at] = one ? 1 : 0;
  }
  if (f.count() == 0) throw bad("has no 1: the window would be empty");
  return f;
}

namespace detail::morphology {
namespace {

// FNV-1a of the mask: a resumed run's fingerprint notices another footprint of the same name.
std::string digest_of(const std::vector<std::uint8_t>& mask) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint8_t v : mask) h = (h ^ v) * 1099511628211ull;
  char t[24];
  std::snprintf(t, sizeof t, "%016llx", static_cast<unsigned long long>(h));
  return t;
}

}  // namespace

std::vector<Run> runs_of(const Window& w) {
  std::vector<Run> r;
  const std::int64_t Nx = w.cols();
  for (std::int64_t k = 0; k < w.rows(); ++k)
    for (std::int64_t q = 0; q < Nx;) {
      if (!(*w.mask)[static_cast<std::size_t>(k * Nx + q)]) {
        ++q;
        continue;
      }
      const std::int64_t a = q;
      while (q < Nx && (*w.mask)[static_cast<std::size_t>(k * Nx + q)]) ++q;
      r.push_back({k, a, q - a});
    }
  return r;
}

std::string window_text(const Window& w) {
  return (w.mask ? "footprint " + w.footprint + " of " : std::string()) + std::to_string(w.rows()) +
         "x" + std::to_string(w.cols());
}

Window window(const MorphParams& p, bool max, bool dilation) {
  Window w;
  w.max = max;
  w.border = p.border;
  w.border_value = p.border_value;
  if (p.footprint.empty()) {
    w.y = extent(p.height, dilation);
    w.x = extent(p.width, dilation);
    return w;
  }
  const Footprint& f = p.footprint;
  if (f.axes == 3)
    throw Error(ErrorKind::usage, "footprint '" + f.name + "' is 3-D (" + std::to_string(f.depth) +
                                      " planes): a 3-D footprint filters a volume in 3-D");
  w.y = extent(f.height, false);
  w.x = extent(f.width, false);
  if (f.count() == f.height * f.width) return w;  // all ones: the rectangle's fast paths
  std::vector<std::uint8_t> m = f.mask;
  if (dilation) std::reverse(m.begin(), m.end());
  w.footprint = (f.name.empty() ? std::string("(mask)") : f.name) + " [" + digest_of(m) + "]";
  w.mask = std::make_shared<const std::vector<std::uint8_t>>(std::move(m));
  return w;
}

// The window of a rank or morphology stage: size=, or footprint= (exactly one of them).
std::tuple<std::int64_t, std::int64_t, Footprint> window_of(const StageArgs& a) {
  if (a.has("size") == a.has("footprint"))
    throw Error(
        ErrorKind::usage,
        a.at() + (a.has("size") ? ": give size or footprint, not both"
                                : ": size is required (size=N or HxW), or footprint=FILE.npy"));
  if (a.has("size")) {
    const StageSize hw = a.size("size");
    return {hw.h, hw.w, Footprint{}};
  }
  try {
    Footprint f = load_footprint(a.text("footprint"));
    return {f.height, f.width, std::move(f)};
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, a.at() + ": " + e.what());
  }
}

void check_footprint_axes(const StageContext& c, const Footprint& f) {
  if (f.axes == 3 && !c.volume())
    throw Error(ErrorKind::usage, c.args.at() + ": footprint '" + f.name + "' is 3-D (" +
                                      std::to_string(f.depth) +
                                      " planes), not 2-D: a 3-D footprint filters a volume in 3-D");
}

// size or footprint: "none" is no default, the builder asks for one of the two.
StageParam size_param() {
  using Kind = StageParam::Kind;
  return computed(
      other_param(
          "size", Kind::size, std::nullopt,
          "window N x N, or H x W as HxW (scipy's size; even sizes too); this or footprint"),
      "none");
}

StageParam footprint_param() {
  using Kind = StageParam::Kind;
  return computed(
      other_param("footprint", Kind::text, std::nullopt,
                  "FILE.npy: a 2-D (volumes: 3-D) 0/1 array of odd sides, the window's shape "
                  "(scipy's footprint; origin at the centre)"),
      "none");
}

}  // namespace detail::morphology
}  // namespace ooc
