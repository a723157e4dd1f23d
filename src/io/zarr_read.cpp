// Reading Zarr v2 and v3 arrays and OME-Zarr groups band by band, (y, x), (y, x, c) or (c, y, x). A
// band asks for image rows; the rows of chunks that cover them are decoded in parallel (one TBB
// task per chunk) into the band's buffer, or, where a row of chunks reaches past the band (the next
// band's halo will want it again), into a small cache of decoded rows of chunks, so that
// consecutive bands never decode one twice. Chunk files are read through paths checked to stay
// inside the store: a store is data from elsewhere, and a link in it must not make ooc read (and
// write out) a file it points to.
#include <fcntl.h>
#include <sys/stat.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "formats.hpp"
#include "io/digest.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"

namespace ooc {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A decoded chunk is held whole by the thread decoding it (and blosc stops at 2 GiB).
constexpr std::uint64_t kMaxChunkBytes = 2ull << 30;
// A row of chunks is decoded whole; several may be held at once.
constexpr std::uint64_t kMaxChunkRowBytes = 2ull << 30;
// Metadata documents are a few hundred bytes; anything much larger is not metadata.
constexpr std::uint64_t kMaxMetaBytes = 16u << 20;
// Rows of chunks kept for the next band's halo, at most (and at least two).
constexpr std::uint64_t kCacheBytes = 16u << 20;
constexpr std::int64_t kMaxCachedRows = 1024;

[[noreturn]] void fail(const std::string& what) {
  throw Error(ErrorKind::input, what);
}

bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf))
    throw Error(read_error_kind(errno), system_message("cannot resolve", p, errno));
  return buf;
}

bool under(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root.back() == '/' || path[root.size()] == '/'));
}

// Reads a whole regular file of at most `limit` bytes.
std::string read_text(const std::string& path, std::uint64_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(read_error_kind(errno), system_message("cannot open", path, errno));
  struct stat st {};
  std::string text;
  try {
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) fail("'" + path + "' is not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > limit)
      fail("'" + path + "' is " + std::to_string(st.st_size) +
           " bytes, too large for Zarr "
           "metadata");
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t got =
          ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw Error(read_error_kind(errno), system_message("cannot read", path, errno));
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    text.resize(done);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

json read_json(const std::string& path) {
  const std::string text = read_text(path, kMaxMetaBytes);
  try {
    return json::parse(text);
  } catch (const std::exception& e) {
    fail("'" + path + "' is not JSON (" + e.what() + ")");
  }
}

std::string codec_name(const zarr::Codec& c) {
  if (c.id == "none") return "uncompressed";
  if (c.id != "blosc") return c.id + " level " + std::to_string(c.level);
  const char* shuffle = c.shuffle == 0   ? "noshuffle"
                        : c.shuffle == 1 ? "shuffle"
                        : c.shuffle == 2 ? "bitshuffle"
                                         : "autoshuffle";
  return "blosc " + c.cname + " " + shuffle + " level " + std::to_string(c.level);
}

std::string list_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The OME-Zarr multiscales of a group's .zattrs: datasets in order, and the axis names (empty
// where the version gives none).
struct Multiscales {
  std::vector<std::string> paths;
  std::vector<std::vector<double>> scales;  // per dataset; empty where none is given
  std::vector<std::string> axes;
};

std::optional<Multiscales> parse_multiscales(const json& j, const std::string& attrs);

// A group's multiscales: Zarr 2's .zattrs, or Zarr 3's zarr.json attributes (under "ome" in
// OME-Zarr 0.5).
std::optional<Multiscales> read_multiscales(const std::string& group) {
  if (is_file(group + "/zarr.json")) {
    const std::string meta = group + "/zarr.json";
    const json g = read_json(meta);
    if (!g.is_object() || !g.contains("attributes") || !g["attributes"].is_object())
      return std::nullopt;
    const json& a = g["attributes"];
    return parse_multiscales(a.contains("ome") && a["ome"].is_object() ? a["ome"] : a, meta);
  }
  const std::string attrs = group + "/.zattrs";
  if (!is_file(attrs)) return std::nullopt;
  return parse_multiscales(read_json(attrs), attrs);
}

std::optional<Multiscales> parse_multiscales(const json& j, const std::string& attrs) {
  if (!j.is_object() || !j.contains("multiscales")) return std::nullopt;
  const json& ms = j["multiscales"];
  if (!ms.is_array() || ms.empty() || !ms[0].is_object())
    fail("'" + attrs + "': \"multiscales\" is not a list of objects");
  const json& m = ms[0];
  Multiscales out;
  if (!m.contains("datasets") || !m["datasets"].is_array() || m["datasets"].empty())
    fail("'" + attrs + "': multiscales[0] has no \"datasets\" list");
  for (const json& d : m["datasets"]) {
    if (!d.is_object() || !d.contains("path") || !d["path"].is_string())
      fail("'" + attrs + "': a dataset of multiscales[0] has no \"path\" string");
    const std::string p = d["path"].get<std::string>();
    if (p.empty() || p.front() == '/' || p == ".." || p.find("../") != std::string::npos)
      fail("'" + attrs + "': dataset path '" + p + "' leaves the store");
    out.paths.push_back(p);
    std::vector<double> scale;
    if (d.contains("coordinateTransformations") && d["coordinateTransformations"].is_array())
      for (const json& t : d["coordinateTransformations"])
        if (t.is_object() && t.value("type", std::string()) == "scale" && t.contains("scale") &&
            t["scale"].is_array())
          for (const json& v : t["scale"])
            if (v.is_number()) scale.push_back(v.get<double>());
    out.scales.push_back(std::move(scale));
  }
  if (m.contains("axes") && m["axes"].is_array())
    for (const json& a : m["axes"]) {
      if (a.is_string())
        out.axes.push_back(a.get<std::string>());
      else if (a.is_object() && a.contains("name") && a["name"].is_string())
        out.axes.push_back(a["name"].get<std::string>());
      else
        fail("'" + attrs + "': an axis of multiscales[0] has no name");
    }
  return out;
}

// Where the rows, columns and channels of the array lie (sets meta.y_axis and meta.c_axis), and
// the image.
ImageSpec image_of(zarr::ArrayMeta& m, const std::vector<std::string>& axes,
                   const std::string& where) {
  const auto& s = m.shape;
  const int n = static_cast<int>(s.size());
  const std::string shape = list_text(s);
  const std::string layouts =
      ": ooc reads (y, x), (c, y, x) and (y, x, c) with c <= 4 channels, and such arrays with "
      "other axes of length 1 (OME's t, z)";
  int y = -1, c = -1;
  int iy = -1, ix = -1, ic = -1;
  if (static_cast<int>(axes.size()) == n)
    for (int i = 0; i < n; ++i) {
      if (axes[i] == "y") iy = i;
      if (axes[i] == "x") ix = i;
      if (axes[i] == "c") ic = i;
    }
  // OME's axis names where they say where y and x are; otherwise the shape alone.
  if (iy >= 0 && ix >= 0) {
    if (ix != iy + 1)
      fail(where + " has x at axis " + std::to_string(ix) + ", not right after y (axis " +
           std::to_string(iy) + ")" + layouts);
    y = iy;
    if (ic >= 0 && (ic < iy || ic == ix + 1)) c = ic;
    if (ix + 1 < n && c != ix + 1)
      fail(where + " has axes after x that are not channels (shape " + shape + ")" + layouts);
  } else {
    // Without axis names: axes of length 1 before the image go, then (y, x), (y, x, c) with
    // c <= 4 or (c, y, x).
    if (n < 2) fail(where + " has " + std::to_string(n) + " dimension(s), not an image" + layouts);
    int lead = 0;
    while (n - lead > 3 && s[lead] == 1) ++lead;
    if (n - lead > 3)
      fail(where + " has shape " + shape + ", more than 3 axes of length over 1" + layouts);
    y = lead;
    if (n - lead == 3) {
      if (s[n - 1] <= 4) {
        c = n - 1;
      } else if (s[lead] == 1) {
        y = lead + 1;
      } else if (s[lead] <= 4) {
        c = lead;
        y = lead + 1;
      } else {
        fail(where + " has shape " + shape + ", a volume, not an image" + layouts);
      }
    }
  }
  for (int i = 0; i < n; ++i)
    if (i != y && i != y + 1 && i != c && s[i] != 1)
      fail(where + " has shape " + shape + ": axis " + std::to_string(i) +
           (axes.size() == s.size() ? " ('" + axes[static_cast<std::size_t>(i)] + "')" : "") +
           " has " + std::to_string(s[i]) + " entries, not 1" + layouts);
  m.y_axis = y;
  m.c_axis = c;
  const std::int64_t channels = c >= 0 ? s[c] : 1;
  if (s[y] == 0 || s[y + 1] == 0 || channels == 0)
    fail(where + " has shape " + shape + ": it is empty");
  if (channels > 4)
    fail(where + " has " + std::to_string(channels) + " channels (shape " + shape + ")" + layouts);
  const unsigned __int128 total = static_cast<unsigned __int128>(s[y]) *
                                  static_cast<unsigned __int128>(s[y + 1]) *
                                  static_cast<unsigned __int128>(channels) * sample_bytes(m.type);
  if (total > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max()))
    fail(where + " has shape " + shape + ", larger than 2^63 bytes");
  ImageSpec spec{s[y + 1], s[y], static_cast<int>(channels), m.type};
  validate(spec);
  return spec;
}

// The store a path names: the array to read, and what describes it.
struct Store {
  std::string path;       // as the user named it
  std::string array_dir;  // the directory holding .zarray
  std::string root;       // real path chunk files must stay under
  zarr::ArrayMeta meta;
  ImageSpec spec;
  int levels = 0;  // datasets of the OME-Zarr group; 0: a bare array
  int level = 0;
  std::string level_path;
};

// The array of OME-Zarr group `path` at `level` (-1: 0), whose metadata file is `meta` (Zarr
// 2's .zarray, Zarr 3's zarr.json); returns the group's axis names.
std::vector<std::string> pick_level(Store& st, const Multiscales& ms, int level,
                                    const std::string& path, const char* meta) {
  st.levels = static_cast<int>(ms.paths.size());
  st.level = level < 0 ? 0 : level;
  if (st.level >= st.levels)
    throw Error(ErrorKind::usage, "OME-Zarr '" + path + "' has " + std::to_string(st.levels) +
                                      " level(s); --input-level " + std::to_string(st.level) +
                                      " does not exist (levels count from 0)");
  st.level_path = ms.paths[static_cast<std::size_t>(st.level)];
  st.array_dir = path + "/" + st.level_path;
  if (!is_file(st.array_dir + "/" + meta))
    fail("OME-Zarr '" + path + "': level " + std::to_string(st.level) + " ('" + st.level_path +
         "') has no " + meta);
  if (!under(real_path(st.array_dir), st.root))
    fail("OME-Zarr '" + path + "': level '" + st.level_path + "' lies outside the store");
  return ms.axes;
}

// An array inside an OME-Zarr group (store.zarr/2): its level and the group's axis names, where
// the directory above is a group (`group_file` says it: Zarr 2's .zgroup, Zarr 3's zarr.json).
void find_in_group(Store& st, const std::string& path, const char* group_file,
                   std::vector<std::string>& axes) {
  const std::string parent = path + "/..";
  if (!is_file(parent + group_file)) return;
  try {
    if (const auto ms = read_multiscales(parent)) {
      const std::string self = real_path(path);
      for (std::size_t i = 0; i < ms->paths.size(); ++i)
        if (is_dir(parent + "/" + ms->paths[i]) && real_path(parent + "/" + ms->paths[i]) == self) {
          st.levels = static_cast<int>(ms->paths.size());
          st.level = static_cast<int>(i);
          st.level_path = ms->paths[i];
          axes = ms->axes;
        }
    }
  } catch (const Error&) {
    // The group around the array is not what was named: its damage is not this array's.
  }
}

Store open_store(const std::string& path, int level) {
  Store st;
  st.path = path;
  if (!is_dir(path)) fail("Zarr input '" + path + "' is not a directory (a Zarr v2 store is one)");
  st.root = real_path(path);
  std::vector<std::string> axes;
  if (is_file(path + "/.zarray")) {
    if (level >= 0)
      throw Error(ErrorKind::usage,
                  "--input-level applies to OME-Zarr groups; '" + path +
                      "' is a Zarr array (name the group, or this array alone without it)");
    st.array_dir = path;
    find_in_group(st, path, "/.zgroup", axes);
  } else if (is_file(path + "/.zgroup")) {
    const auto ms = read_multiscales(path);
    if (!ms) {
      std::string arrays;
      std::error_code ec;
      int listed = 0;
      for (const auto& e : std::filesystem::directory_iterator(path, ec))
        if (listed < 5 && is_file(e.path().string() + "/.zarray")) {
          arrays += (listed++ ? ", '" : " (e.g. '") + e.path().string() + "'";
        }
      fail("Zarr group '" + path +
           "' has no OME-Zarr multiscales in its .zattrs: name one of its arrays" +
           (arrays.empty() ? std::string() : arrays + ")"));
    }
    axes = pick_level(st, *ms, level, path, ".zarray");
  } else if (is_file(path + "/zarr.json")) {
    const json node = read_json(path + "/zarr.json");
    const std::string type = node.is_object() ? node.value("node_type", std::string()) : "";
    if (type == "array") {
      if (level >= 0)
        throw Error(ErrorKind::usage,
                    "--input-level applies to OME-Zarr groups; '" + path + "' is a Zarr array");
      st.array_dir = path;
      find_in_group(st, path, "/zarr.json", axes);
    } else if (type == "group") {
      const auto ms = read_multiscales(path);
      if (!ms)
        fail("Zarr 3 group '" + path + "' has no OME-Zarr multiscales: name one of its arrays");
      axes = pick_level(st, *ms, level, path, "zarr.json");
    } else {
      fail("'" + path + "/zarr.json' is neither a Zarr 3 array nor a group");
    }
    const std::string meta = st.array_dir + "/zarr.json";
    st.meta =
        zarr::parse_v3_array_json(read_text(meta, kMaxMetaBytes), "Zarr metadata '" + meta + "'");
    if (axes.empty()) axes = st.meta.dimension_names;
    st.spec = image_of(st.meta, axes, "Zarr array '" + st.array_dir + "'");
    return st;
  } else {
    fail("input '" + path + "' is a directory without .zarray or .zgroup: not a Zarr v2 store");
  }
  const std::string zarray = st.array_dir + "/.zarray";
  st.meta =
      zarr::parse_array_json(read_text(zarray, kMaxMetaBytes), "Zarr metadata '" + zarray + "'");
  st.spec = image_of(st.meta, axes, "Zarr array '" + st.array_dir + "'");
  return st;
}

// One sample of `type` holding v; throws when v is not a value of the type.
void fill_sample(SampleType type, double v, const std::string& text, std::byte* out,
                 const std::string& where) {
  const auto integer = [&]<class T>(T) {
    if (!std::isfinite(v) || v != std::floor(v) ||
        v < static_cast<double>(std::numeric_limits<T>::lowest()) ||
        v > static_cast<double>(std::numeric_limits<T>::max()))
      fail(where + " has fill_value " + text + ", which is not a " + std::string(name(type)) +
           " value");
    const T t = static_cast<T>(v);
    std::memcpy(out, &t, sizeof t);
  };
  switch (type) {
    case SampleType::u8:
      return integer(std::uint8_t{});
    case SampleType::u16:
      return integer(std::uint16_t{});
    case SampleType::i16:
      return integer(std::int16_t{});
    case SampleType::u32:
      return integer(std::uint32_t{});
    case SampleType::i32:
      return integer(std::int32_t{});
    case SampleType::f32: {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, sizeof f);
      return;
    }
    case SampleType::f64:
      std::memcpy(out, &v, sizeof v);
      return;
  }
}

class ZarrSource final : public Source {
 public:
  ZarrSource(Store store, unsigned threads) : s_(std::move(store)), threads_(threads) {
    const auto& m = s_.meta;
    const int y = m.y_axis;
    const std::string where = "Zarr array '" + s_.array_dir + "'";
    ch_ = m.chunks[y];
    cw_ = m.chunks[y + 1];
    cc_ = m.c_axis >= 0 ? m.chunks[static_cast<std::size_t>(m.c_axis)] : 1;
    // Where a chunk's samples lie (in samples, C order): channels last interleave them, channels
    // first (NGFF's c, y, x) keep a plane per channel (the axes after c of the chunk apart).
    if (m.c_axis >= 0 && m.c_axis < y) {
      planar_ = true;
      for (std::size_t i = static_cast<std::size_t>(m.c_axis) + 1; i < m.chunks.size(); ++i)
        channel_step_ *= m.chunks[i];
    }
    across_ = (s_.spec.width + cw_ - 1) / cw_;
    down_ = (s_.spec.height + ch_ - 1) / ch_;
    kchunks_ = (s_.spec.channels + cc_ - 1) / cc_;
    // Edge chunks are whole on disk: the decoded size is the chunk shape's, leading axes too.
    unsigned __int128 bytes = sample_bytes(m.type);
    for (std::int64_t c : m.chunks) {
      bytes *= static_cast<unsigned __int128>(c);
      if (bytes > kMaxChunkBytes)
        fail(where + " has chunks " + list_text(m.chunks) + ", over " +
             std::to_string(kMaxChunkBytes >> 30) +
             " GiB each decoded: ooc refuses chunks that large; rechunk it smaller");
    }
    chunk_bytes_ = static_cast<std::size_t>(bytes);
    const std::uint64_t crow = chunk_row_bytes(0);
    if (crow > kMaxChunkRowBytes)
      fail(where + " has chunks " + std::to_string(ch_) + " rows high over an image " +
           std::to_string(s_.spec.width) + " wide: " + std::to_string(crow >> 20) +
           " MiB per row of chunks, too many to decode in bounded memory; rechunk it");
    keep_ = std::clamp<std::int64_t>(static_cast<std::int64_t>(kCacheBytes / crow), 2,
                                     std::max<std::int64_t>(1, std::min(down_, kMaxCachedRows)));
    fill_.resize(sample_bytes(m.type));
    if (m.fill) fill_sample(m.type, *m.fill, m.fill_json, fill_.data(), where);
    const bool several = s_.spec.channels > 1 || cc_ > 1;
    std::string layout = std::string(m.version == 3 ? "zarr v3" : "zarr v2") + ", chunks " +
                         (several && planar_ ? std::to_string(cc_) + " x " : "") +
                         std::to_string(ch_) + " x " + std::to_string(cw_) +
                         (several && !planar_ ? " x " + std::to_string(cc_) : "");
    if (several && planar_) layout += " (channels first)";
    if (!m.shard.empty())
      layout +=
          " in shards of " + std::to_string(m.shard[y]) + " x " + std::to_string(m.shard[y + 1]);
    layout += " (" + std::to_string(across_ * down_ * kchunks_) + "), " + codec_name(m.codec);
    layout += std::string(", ") + zarr::dtype_string(m.type).substr(1) +
              (sample_bytes(m.type) == 1 ? ""
               : m.big_endian            ? " big endian"
                                         : " little endian");
    layout += ", fill " + m.fill_json;
    if (m.dimension_separator != ".") layout += ", separator '" + m.dimension_separator + "'";
    if (s_.levels > 0)
      layout += ", level " + std::to_string(s_.level) + " ('" + s_.level_path + "') of " +
                std::to_string(s_.levels);
    layout_ = layout;
  }

  const ImageSpec& spec() const noexcept override { return s_.spec; }
  std::string describe() const override { return "zarr '" + s_.path + "' " + s_.spec.describe(); }
  std::string layout() const override { return layout_; }
  bool parallel_reads() const override { return false; }

  // The rows of chunks kept for the next band, those each reader adds while it reads (as many,
  // and the first, partly above its band), and per thread a decoded and a stored chunk.
  std::size_t buffer_bytes(std::int64_t /*band_rows*/, int readers) const override {
    const std::uint64_t rows = std::min<std::uint64_t>(
        down_, keep_ + std::uint64_t(std::max(readers, 1)) * std::uint64_t(keep_ + 1));
    return static_cast<std::size_t>(rows * chunk_row_bytes(0) +
                                    std::uint64_t(threads_) * 2 * chunk_bytes_);
  }

  const std::byte* rows(std::int64_t y0, std::int64_t n, RowArena& arena) override {
    std::byte* out = arena.take(static_cast<std::size_t>(n) * s_.spec.row_bytes());
    read_rows(y0, n, out);
    return out;
  }

  // Rows of chunks wholly inside the request and not under the next band's halo decode straight
  // into dst; the others go through the cache (or come from it). A row of chunks another reader
  // is decoding is waited for, not decoded twice.
  void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) override {
    const std::size_t row = s_.spec.row_bytes();
    const std::int64_t cy0 = y0 / ch_, cy1 = (y0 + n - 1) / ch_;
    struct Target {
      std::int64_t cy;
      std::byte* rows;
      std::shared_ptr<Entry> entry;  // null: straight into dst
    };
    std::vector<Target> mine;
    std::vector<std::shared_ptr<Entry>> used;
    {
      std::lock_guard lock(mutex_);
      ++tick_;
      // The rows the previous request reached past this one's start are the halo consecutive
      // bands share: the rows of chunks under it are the ones worth keeping (before the second
      // request shows it, up to keep_ of them).
      if (y0 > last_y0_ && y0 < last_end_)
        tail_ = std::max(tail_, std::min(keep_, (last_end_ - y0 + ch_ - 1) / ch_ + 1));
      last_y0_ = y0;
      last_end_ = y0 + n;
      const std::int64_t tail = tail_ > 0 ? tail_ : keep_;
      for (std::int64_t cy = cy0; cy <= cy1; ++cy) {
        if (auto it = cache_.find(cy); it != cache_.end()) {
          it->second->tick = tick_;
          used.push_back(it->second);
          continue;
        }
        const std::int64_t top = cy * ch_, bottom = top + rows_in(cy);
        if (top >= y0 && bottom <= y0 + n && cy <= cy1 - tail) {
          mine.push_back({cy, dst + static_cast<std::size_t>(top - y0) * row, nullptr});
          continue;
        }
        auto e = std::make_shared<Entry>();
        e->cy = cy;
        e->tick = tick_;
        // Not zeroed: every byte is decoded or filled before anyone reads it.
        e->data.reset(new std::byte[static_cast<std::size_t>(chunk_row_bytes(cy))]);
        cache_.emplace(cy, e);
        mine.push_back({cy, e->data.get(), e});
        used.push_back(e);
      }
    }
    std::exception_ptr error;
    try {
      const std::int64_t per_row = across_ * kchunks_;
      const std::int64_t tasks = static_cast<std::int64_t>(mine.size()) * per_row;
      // Isolated: a thread waiting here for its tasks must not pick up another band's read,
      // which could wait for a row of chunks this very call is decoding.
      tbb::this_task_arena::isolate([&] {
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, tasks, 1),
                          [&](const tbb::blocked_range<std::int64_t>& r) {
                            for (std::int64_t t = r.begin(); t < r.end(); ++t) {
                              const Target& g = mine[static_cast<std::size_t>(t / per_row)];
                              const std::int64_t k = t % per_row;
                              decode_chunk(g.cy, k % across_, k / across_, g.rows);
                            }
                          });
      });
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::unique_lock lock(mutex_);
      for (const Target& g : mine)
        if (g.entry) {
          g.entry->ready = true;
          g.entry->error = error;
          if (error) cache_.erase(g.cy);
        }
      ready_.notify_all();
      for (const auto& e : used) ready_.wait(lock, [&] { return e->ready; });
      if (!error)
        for (const auto& e : used)
          if (e->error) error = e->error;
    }
    if (error) std::rethrow_exception(error);
    for (const auto& e : used) {
      const std::int64_t top = e->cy * ch_, bottom = top + rows_in(e->cy);
      const std::int64_t a = std::max(top, y0), b = std::min(bottom, y0 + n);
      std::memcpy(dst + static_cast<std::size_t>(a - y0) * row,
                  e->data.get() + static_cast<std::size_t>(a - top) * row,
                  static_cast<std::size_t>(b - a) * row);
    }
    used.clear();
    std::lock_guard lock(mutex_);
    // The least recently used rows go first, the ones still held or decoding stay.
    while (static_cast<std::int64_t>(cache_.size()) > (tail_ > 0 ? tail_ : keep_)) {
      auto oldest = cache_.end();
      for (auto it = cache_.begin(); it != cache_.end(); ++it)
        if (it->second->ready && it->second.use_count() == 1 &&
            (oldest == cache_.end() || it->second->tick < oldest->second->tick))
          oldest = it;
      if (oldest == cache_.end()) break;
      cache_.erase(oldest);
    }
  }

 private:
  struct Entry {
    std::int64_t cy = 0;
    std::uint64_t tick = 0;
    std::unique_ptr<std::byte[]> data;  // the image rows of this row of chunks
    bool ready = false;                 // guarded by mutex_
    std::exception_ptr error;
  };

  std::int64_t rows_in(std::int64_t cy) const { return std::min(ch_, s_.spec.height - cy * ch_); }
  std::uint64_t chunk_row_bytes(std::int64_t cy) const {
    return std::uint64_t(rows_in(cy)) * s_.spec.row_bytes();
  }

  // Chunk (cy, cx, ck) into `rows`, the image rows of chunk row cy (row_bytes apart).
  void decode_chunk(std::int64_t cy, std::int64_t cx, std::int64_t ck, std::byte* rows) const {
    const ImageSpec& sp = s_.spec;
    const std::size_t sb = sample_bytes(sp.type), pixel = sp.pixel_bytes(), row = sp.row_bytes();
    const std::int64_t x0 = cx * cw_, x1 = std::min(sp.width, x0 + cw_);
    const std::int64_t k0 = ck * cc_, k1 = std::min<std::int64_t>(sp.channels, k0 + cc_);
    const std::int64_t nrows = rows_in(cy);
    const std::string key = zarr::chunk_key(s_.meta, cy, cx, ck);
    const std::string file = s_.array_dir + "/" + key;
    const std::string where = "Zarr chunk '" + file + "'";
    thread_local std::vector<std::byte> stored, chunk;
    const bool stored_found = s_.meta.shard.empty()
                                  ? read_chunk(file, where, stored)
                                  : read_from_shard(file, where, cy, cx, ck, stored);
    if (!stored_found) {
      if (!s_.meta.fill)
        fail(where +
             " is missing and the array has no fill_value (null): the store is "
             "incomplete");
      for (std::int64_t r = 0; r < nrows; ++r) {
        std::byte* out = rows + static_cast<std::size_t>(r) * row;
        for (std::int64_t x = x0; x < x1; ++x)
          for (std::int64_t k = k0; k < k1; ++k)
            std::memcpy(
                out + static_cast<std::size_t>(x) * pixel + static_cast<std::size_t>(k) * sb,
                fill_.data(), sb);
      }
      return;
    }
    if (chunk.size() < chunk_bytes_) chunk.resize(chunk_bytes_);
    zarr::decompress(s_.meta.codec, stored.data(), stored.size(), chunk.data(), chunk_bytes_,
                     where);
    // Only the first plane of leading axes holds image samples (they have length 1).
    const std::size_t plane =
        static_cast<std::size_t>(planar_ ? channel_step_ * (cc_ - 1) + ch_ * cw_ : ch_ * cw_ * cc_);
    if (s_.meta.big_endian && sb > 1) reverse_bytes(chunk.data(), plane, sb);
    if (planar_) {
      // A plane per channel: each channel's rows go to its place in the interleaved pixels.
      for (std::int64_t k = k0; k < k1; ++k)
        for (std::int64_t r = 0; r < nrows; ++r) {
          const std::byte* src =
              chunk.data() + static_cast<std::size_t>((k - k0) * channel_step_ + r * cw_) * sb;
          std::byte* out = rows + static_cast<std::size_t>(r) * row +
                           static_cast<std::size_t>(x0) * pixel + static_cast<std::size_t>(k) * sb;
          if (sp.channels == 1) {
            std::memcpy(out, src, static_cast<std::size_t>(x1 - x0) * sb);
            continue;
          }
          for (std::int64_t x = 0; x < x1 - x0; ++x)
            std::memcpy(out + static_cast<std::size_t>(x) * pixel,
                        src + static_cast<std::size_t>(x) * sb, sb);
        }
    }
    const std::size_t chunk_row = static_cast<std::size_t>(cw_ * cc_) * sb;
    for (std::int64_t r = 0; r < nrows && !planar_; ++r) {
      const std::byte* src = chunk.data() + static_cast<std::size_t>(r) * chunk_row;
      std::byte* out = rows + static_cast<std::size_t>(r) * row +
                       static_cast<std::size_t>(x0) * pixel + static_cast<std::size_t>(k0) * sb;
      if (cc_ == sp.channels) {
        std::memcpy(out, src, static_cast<std::size_t>(x1 - x0) * pixel);
      } else {
        const std::size_t n = static_cast<std::size_t>(k1 - k0) * sb, step = cc_ * sb;
        for (std::int64_t x = 0; x < x1 - x0; ++x)
          std::memcpy(out + static_cast<std::size_t>(x) * pixel, src + x * step, n);
      }
    }
    // A thread may have decoded a huge chunk once: do not keep that much for good.
    if (chunk.capacity() > (64u << 20)) std::vector<std::byte>().swap(chunk);
    if (stored.capacity() > (64u << 20)) std::vector<std::byte>().swap(stored);
  }

  // The stored bytes of a chunk file into `out`; false where there is no such file (a chunk
  // never written, all fill_value). A file reached through a link that leads out of the store,
  // a directory or a device where the chunk should be, or one larger than any encoding of the
  // chunk is refused.
  // A chunk (or shard) file opened for reading; -1 where there is no such file (a chunk never
  // written, all fill_value). A file reached through a link that leads out of the store, or a
  // directory or a device where the chunk should be, is refused.
  int open_chunk(const std::string& file, const std::string& where, struct stat& st) const {
    if (::lstat(file.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return -1;
      throw Error(read_error_kind(errno), system_message("cannot read", file, errno));
    }
    std::string target = file;
    if (S_ISLNK(st.st_mode) || s_.meta.dimension_separator == "/") {
      char buf[PATH_MAX];
      if (!::realpath(file.c_str(), buf)) {
        if (errno == ENOENT) fail(where + " is a link to nothing (dangling)");
        throw Error(read_error_kind(errno), system_message("cannot resolve", file, errno));
      }
      target = buf;
      if (!under(target, s_.root))
        fail(where + " leads to '" + target + "', outside the store '" + s_.root +
             "': ooc refuses links out of a store");
      if (::stat(target.c_str(), &st) != 0)
        throw Error(read_error_kind(errno), system_message("cannot read", file, errno));
    }
    // Opening a device or a FIFO could block or have effects: only files are opened.
    if (S_ISDIR(st.st_mode)) fail(where + " is a directory, not a chunk file");
    if (!S_ISREG(st.st_mode)) fail(where + " is not a regular file");
    const int fd = ::open(target.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) throw Error(read_error_kind(errno), system_message("cannot open", file, errno));
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      fail(where + " is not a regular file");
    }
    return fd;
  }

  // n bytes at `offset` of fd into out (fewer where the file ends first).
  static void pread_into(int fd, std::uint64_t offset, std::size_t n, std::vector<std::byte>& out,
                         const std::string& file) {
    out.resize(n);
    std::size_t done = 0;
    while (done < n) {
      const ssize_t got =
          ::pread(fd, out.data() + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw Error(read_error_kind(errno), system_message("cannot read", file, errno));
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    out.resize(done);
  }

  // The stored bytes of a chunk file into `out`; false where there is none.
  bool read_chunk(const std::string& file, const std::string& where,
                  std::vector<std::byte>& out) const {
    struct stat st {};
    const int fd = open_chunk(file, where, st);
    if (fd < 0) return false;
    try {
      // No encoder makes a chunk much larger than its samples (blosc adds 16 bytes, zstd and
      // zlib a few per block).
      const std::uint64_t limit = chunk_bytes_ + chunk_bytes_ / 8 + 4096;
      if (static_cast<std::uint64_t>(st.st_size) > limit)
        fail(where + " is " + std::to_string(st.st_size) + " bytes, more than a chunk of " +
             std::to_string(chunk_bytes_) + " bytes encodes to: it is not this array's chunk");
      pread_into(fd, 0, static_cast<std::size_t>(st.st_size), out, file);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return true;
  }

  // Zarr 3 sharding: inner chunk (cy, cx, ck) out of the shard file that holds it, through the
  // shard's index (checked against its CRC-32C where the array has one); false where the shard
  // or the chunk in it is absent (fill_value).
  bool read_from_shard(const std::string& file, const std::string& where, std::int64_t cy,
                       std::int64_t cx, std::int64_t ck, std::vector<std::byte>& out) const {
    const zarr::ArrayMeta& m = s_.meta;
    std::size_t count = 1, at = 0;
    for (std::size_t i = 0; i < m.shape.size(); ++i) {
      const std::int64_t per = m.shard[i] / m.chunks[i];
      const int a = static_cast<int>(i);
      const std::int64_t idx = a == m.y_axis ? cy : a == m.y_axis + 1 ? cx : a == m.c_axis ? ck : 0;
      at = at * static_cast<std::size_t>(per) + static_cast<std::size_t>(idx % per);
      count *= static_cast<std::size_t>(per);
    }
    if (count > (std::size_t{1} << 24))
      fail(where + ": a shard of " + std::to_string(count) + " chunks is more than ooc reads");
    struct stat st {};
    const int fd = open_chunk(file, where, st);
    if (fd < 0) return false;
    try {
      const std::uint64_t index_bytes = count * 16 + (m.index_crc ? 4 : 0);
      const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
      if (size < index_bytes) fail(where + " is shorter than its shard index: truncated");
      thread_local std::vector<std::byte> index;
      pread_into(fd, m.index_at_end ? size - index_bytes : 0, index_bytes, index, file);
      if (index.size() != index_bytes) fail(where + ": its shard index cannot be read whole");
      if (m.index_crc) {
        std::uint32_t crc = 0;
        std::memcpy(&crc, index.data() + count * 16, 4);
        if (zarr::crc32c(index.data(), count * 16) != crc)
          fail(where + ": its shard index fails its CRC-32C (damaged)");
      }
      std::uint64_t off = 0, len = 0;
      std::memcpy(&off, index.data() + at * 16, 8);
      std::memcpy(&len, index.data() + at * 16 + 8, 8);
      if (off == ~std::uint64_t{0} && len == ~std::uint64_t{0}) {
        ::close(fd);
        return false;
      }
      if (len > chunk_bytes_ + chunk_bytes_ / 8 + 4096 || off > size || len > size - off)
        fail(where + ": its shard index points outside the file (chunk " + std::to_string(at) +
             " at " + std::to_string(off) + ", " + std::to_string(len) + " bytes)");
      pread_into(fd, off, static_cast<std::size_t>(len), out, file);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return true;
  }

  Store s_;
  unsigned threads_;
  std::int64_t ch_ = 1, cw_ = 1, cc_ = 1;
  bool planar_ = false;            // channels first: a plane per channel in each chunk
  std::int64_t channel_step_ = 1;  // samples from one channel's plane to the next
  std::int64_t across_ = 1, down_ = 1, kchunks_ = 1;
  std::size_t chunk_bytes_ = 0;
  std::int64_t keep_ = 1;
  // Guarded by mutex_: the rows of chunks the next band reads again (0: not known yet), and
  // the last request.
  std::int64_t tail_ = 0, last_y0_ = -1, last_end_ = -1;
  std::vector<std::byte> fill_;
  std::string layout_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::map<std::int64_t, std::shared_ptr<Entry>> cache_;
  std::uint64_t tick_ = 0;
};

}  // namespace

bool is_zarr_store(const std::string& path) {
  return is_dir(path) &&
         (is_file(path + "/.zarray") || is_file(path + "/.zgroup") || is_file(path + "/zarr.json"));
}

std::unique_ptr<Source> open_zarr_source(const std::string& path, const RawHints& hints) {
  if (hints.page != 0)
    throw Error(ErrorKind::usage, "--page applies to TIFF input; '" + path + "' is Zarr");
  Store st = open_store(path, hints.zarr_level);
  check_hints(hints, st.spec, "the .zarray of '" + st.array_dir + "', which says");
  const unsigned threads =
      static_cast<unsigned>(hints.threads > 0 ? hints.threads : default_threads());
  return std::make_unique<ZarrSource>(std::move(st), threads);
}

std::string zarr_input_identity(const std::string& path, int level) {
  const Store st = open_store(path, level);
  // Every file of the array (chunks and metadata; chunks are usually replaced by a rename, which
  // a directory's times alone show only for its own entries), combined independently of the
  // order a directory lists them in.
  std::uint64_t files = 0, sum = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(st.array_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat fst {};
    if (::lstat(it->path().c_str(), &fst) != 0 || S_ISDIR(fst.st_mode)) continue;
    detail::Digest d;
    const std::string rel = it->path().string().substr(st.array_dir.size());
    d.add(rel);
    const std::int64_t fields[] = {fst.st_size,         fst.st_mtim.tv_sec,
                                   fst.st_mtim.tv_nsec, fst.st_ctim.tv_sec,
                                   fst.st_ctim.tv_nsec, static_cast<std::int64_t>(fst.st_ino)};
    d.add(fields, sizeof fields);
    sum += std::stoull(d.hex(), nullptr, 16);
    ++files;
  }
  if (ec)
    throw Error(read_error_kind(ec.value()),
                system_message("cannot list", st.array_dir, ec.value()));
  char text[40];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(sum));
  return "zarr " + path + " level " + std::to_string(st.level) + " array '" + st.array_dir +
         "' files " + std::to_string(files) + " digest " + text;
}

std::vector<std::string> describe_zarr_store(const std::string& path) {
  std::vector<std::string> lines;
  // A level is Zarr 2 (.zarray) or Zarr 3 (zarr.json), whatever its group is.
  const auto array_line = [&](const std::string& dir, const std::string& head,
                              const std::vector<double>& scale) {
    const bool v3 = !is_file(dir + "/.zarray") && is_file(dir + "/zarr.json");
    const std::string file = dir + (v3 ? "/zarr.json" : "/.zarray");
    const std::string text = read_text(file, kMaxMetaBytes);
    const std::string where = "Zarr metadata '" + file + "'";
    const auto m =
        v3 ? zarr::parse_v3_array_json(text, where) : zarr::parse_array_json(text, where);
    std::string s = head + (v3 ? "zarr 3, " : "") + "shape " + list_text(m.shape) + ", dtype " +
                    (sample_bytes(m.type) == 1 ? "|"
                     : m.big_endian            ? ">"
                                               : "<") +
                    zarr::dtype_string(m.type).substr(1) + ", chunks " + list_text(m.chunks) +
                    (m.shard.empty() ? "" : " in shards " + list_text(m.shard)) + ", " +
                    codec_name(m.codec) + ", fill " + m.fill_json;
    if (!m.dimension_names.empty()) {
      std::string names;
      for (const auto& n : m.dimension_names) names += (names.empty() ? "" : ", ") + n;
      s += ", axes (" + names + ")";
    }
    if (!scale.empty()) {
      s += ", scale [";
      for (std::size_t i = 0; i < scale.size(); ++i) {
        char b[32];
        std::snprintf(b, sizeof b, "%s%g", i ? ", " : "", scale[i]);
        s += b;
      }
      s += "]";
    }
    lines.push_back(s);
  };
  const bool v3 =
      !is_file(path + "/.zarray") && !is_file(path + "/.zgroup") && is_file(path + "/zarr.json");
  std::string node = "array";
  if (v3) {
    const json j = read_json(path + "/zarr.json");
    node = j.is_object() ? j.value("node_type", std::string()) : std::string();
  }
  if (is_file(path + "/.zarray") || (v3 && node == "array")) {
    array_line(path, "array: ", {});
    return lines;
  }
  const auto ms = read_multiscales(path);
  if (!ms)
    fail("Zarr '" + path + "' is not an array nor an OME-Zarr group (" +
         (v3 ? "its zarr.json is a " + (node.empty() ? "node of no type" : node) +
                   " without multiscales"
             : "no .zarray, and no multiscales in .zattrs") +
         ")");
  std::string axes;
  for (const auto& a : ms->axes) axes += (axes.empty() ? "" : ", ") + a;
  lines.push_back(std::string("OME-Zarr group") + (v3 ? " (zarr 3)" : "") + ", " +
                  std::to_string(ms->paths.size()) + " level(s)" +
                  (axes.empty() ? std::string() : ", axes (" + axes + ")"));
  // A damaged level is listed as such: the others are still worth seeing.
  for (std::size_t i = 0; i < ms->paths.size(); ++i) {
    const std::string head = "level " + std::to_string(i) + " '" + ms->paths[i] + "': ";
    try {
      array_line(path + "/" + ms->paths[i], head, ms->scales[i]);
    } catch (const Error& e) {
      lines.push_back(head + "unreadable: " + e.what());
    }
  }
  return lines;
}

}  // namespace ooc
