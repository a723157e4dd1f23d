// The Zarr reader's metadata: the store a path names (a Zarr 2 or 3 array, or an OME-Zarr group
// and one of its levels), its multiscales, where the image lies among the array's axes, and the
// description (oocinfo) and identity (--resume) of a store.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "formats.hpp"
#include "io/digest.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "zarr_store.hpp"

namespace ooc {
namespace zarr_read {
namespace {

using nlohmann::json;

// Metadata documents are a few hundred bytes; anything much larger is not metadata.
constexpr std::uint64_t kMaxMetaBytes = 16u << 20;

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

// The OME-Zarr multiscales of a group's .zattrs: datasets in order, and the axis names (empty
// where the version gives none).
struct Multiscales {
  std::vector<std::string> paths;
  std::vector<std::vector<double>> scales;  // per dataset; empty where none is given
  std::vector<std::string> axes;
  std::vector<std::string> units;  // per axis; empty where none is given
  std::vector<double> scale;       // the multiscale's own scale, applied after a dataset's
};

// Every "scale" transformation of a coordinateTransformations list, multiplied together.
std::vector<double> scale_of(const json& list) {
  std::vector<double> scale;
  if (!list.is_array()) return scale;
  for (const json& t : list) {
    if (!t.is_object() || t.value("type", std::string()) != "scale" || !t.contains("scale") ||
        !t["scale"].is_array())
      continue;
    std::vector<double> s;
    for (const json& v : t["scale"])
      if (v.is_number()) s.push_back(v.get<double>());
    if (scale.empty()) {
      scale = s;
    } else if (s.size() == scale.size()) {
      for (std::size_t i = 0; i < s.size(); ++i) scale[i] *= s[i];
    }
  }
  return scale;
}

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
    out.scales.push_back(d.contains("coordinateTransformations")
                             ? scale_of(d["coordinateTransformations"])
                             : std::vector<double>{});
  }
  if (m.contains("coordinateTransformations")) out.scale = scale_of(m["coordinateTransformations"]);
  if (m.contains("axes") && m["axes"].is_array())
    for (const json& a : m["axes"]) {
      if (a.is_string())
        out.axes.push_back(a.get<std::string>());
      else if (a.is_object() && a.contains("name") && a["name"].is_string())
        out.axes.push_back(a["name"].get<std::string>());
      else
        fail("'" + attrs + "': an axis of multiscales[0] has no name");
      out.units.push_back(a.is_object() && a.contains("unit") && a["unit"].is_string()
                              ? a["unit"].get<std::string>()
                              : std::string());
    }
  return out;
}

// The voxel size level `level` of the multiscales says: its scale (and the multiscale's) along
// the axes named z, y and x, in their length units; unknown where y or x has no length unit.
VoxelSize voxel_of(const Multiscales& ms, int level) {
  VoxelSize v;
  if (level < 0 || level >= static_cast<int>(ms.scales.size())) return v;
  const std::vector<double>& scale = ms.scales[static_cast<std::size_t>(level)];
  if (scale.size() != ms.axes.size() || ms.units.size() != ms.axes.size()) return v;
  if (!ms.scale.empty() && ms.scale.size() != scale.size()) return v;
  auto size = [&](const char* axis) {
    for (std::size_t i = 0; i < ms.axes.size(); ++i)
      if (ms.axes[i] == axis) {
        const double s = scale[i] * (ms.scale.empty() ? 1.0 : ms.scale[i]);
        const double um = micrometres_per(ms.units[i]);
        return std::isfinite(s) && s > 0 ? s * um : 0.0;
      }
    return 0.0;
  };
  v.x = size("x");
  v.y = size("y");
  v.z = size("z");
  if (!v.known()) return {};
  v.origin = "OME-Zarr scale of level " + std::to_string(level);
  return v;
}

}  // namespace

// Where the planes, rows, columns and channels of the array lie (sets meta.z_axis, meta.y_axis and
// meta.c_axis), and the image: a volume where a z axis right before the rows has more than one
// plane, or is named with no axis but channels beside the image's.
ImageSpec image_of(zarr::ArrayMeta& m, const std::vector<std::string>& axes,
                   const std::string& where) {
  const auto& s = m.shape;
  const int n = static_cast<int>(s.size());
  const std::string shape = list_text(s);
  const std::string layouts =
      ": ooc reads (y, x), (c, y, x) and (y, x, c) with c <= 4 channels, volumes (z, y, x), "
      "(c, z, y, x) and (z, y, x, c), and such arrays with other axes of length 1 (OME's t)";
  int y = -1, c = -1, z = -1;
  int iy = -1, ix = -1, ic = -1, iz = -1;
  if (static_cast<int>(axes.size()) == n)
    for (int i = 0; i < n; ++i) {
      if (axes[i] == "y") iy = i;
      if (axes[i] == "x") ix = i;
      if (axes[i] == "c") ic = i;
      if (axes[i] == "z") iz = i;
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
    // A named z of one plane is a volume's where nothing but channels is beside it ((z, y, x) and
    // (c, z, y, x), as ooc writes a volume of one plane); under OME's t it stays a plane.
    const bool only_zyx = n == 3 + (c >= 0 ? 1 : 0) && (c < 0 || c < iz);
    if (iz >= 0 && (s[iz] > 1 || (iz == iy - 1 && only_zyx))) {
      if (iz != iy - 1)
        fail(where + " has z at axis " + std::to_string(iz) + ", not right before y (axis " +
             std::to_string(iy) + ")" + layouts);
      z = iz;
    }
  } else {
    // Without axis names: axes of length 1 before the image go, then (y, x), (y, x, c) with
    // c <= 4 or (c, y, x); (z, y, x) where neither end could be channels, and of 4 axes
    // (c, z, y, x) with c <= 4 first, else (z, y, x, c).
    if (n < 2) fail(where + " has " + std::to_string(n) + " dimension(s), not an image" + layouts);
    int lead = 0;
    while (n - lead > 3 && s[lead] == 1) ++lead;
    if (n - lead > 4)
      fail(where + " has shape " + shape + ", more than 4 axes of length over 1" + layouts);
    y = lead;
    if (n - lead == 4) {
      if (s[lead] <= 4) {
        c = lead, z = lead + 1, y = lead + 2;
      } else if (s[n - 1] <= 4) {
        z = lead, y = lead + 1, c = n - 1;
      } else {
        fail(where + " has shape " + shape + ": 4 axes of which neither the first nor the last " +
             "could be channels" + layouts);
      }
    } else if (n - lead == 3) {
      if (s[n - 1] <= 4) {
        c = n - 1;
      } else if (s[lead] == 1) {
        y = lead + 1;
      } else if (s[lead] <= 4) {
        c = lead;
        y = lead + 1;
      } else {
        z = lead;
        y = lead + 1;
      }
    }
    if (z >= 0 && s[z] == 1) z = -1;
  }
  for (int i = 0; i < n; ++i)
    if (i != y && i != y + 1 && i != c && i != z && s[i] != 1)
      fail(where + " has shape " + shape + ": axis " + std::to_string(i) +
           (axes.size() == s.size() ? " ('" + axes[static_cast<std::size_t>(i)] + "')" : "") +
           " has " + std::to_string(s[i]) + " entries, not 1" + layouts);
  m.y_axis = y;
  m.c_axis = c;
  m.z_axis = z;
  const std::int64_t channels = c >= 0 ? s[c] : 1;
  const std::int64_t depth = z >= 0 ? s[z] : 1;
  if (s[y] == 0 || s[y + 1] == 0 || channels == 0)
    fail(where + " has shape " + shape + ": it is empty");
  if (channels > 4)
    fail(where + " has " + std::to_string(channels) + " channels (shape " + shape + ")" + layouts);
  const unsigned __int128 total = static_cast<unsigned __int128>(s[y]) *
                                  static_cast<unsigned __int128>(s[y + 1]) *
                                  static_cast<unsigned __int128>(depth) *
                                  static_cast<unsigned __int128>(channels) * sample_bytes(m.type);
  if (total > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max()))
    fail(where + " has shape " + shape + ", larger than 2^63 bytes");
  ImageSpec spec{s[y + 1], s[y], static_cast<int>(channels), m.type};
  if (z >= 0) {
    spec.depth = depth;
    spec.stack = true;
  }
  validate(spec);
  return spec;
}

namespace {

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
  st.voxel = voxel_of(ms, st.level);
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
          st.voxel = voxel_of(*ms, st.level);
          axes = ms->axes;
        }
    }
  } catch (const Error&) {
    // The group around the array is not what was named: its damage is not this array's.
  }
}

}  // namespace

[[noreturn]] void fail(const std::string& what) {
  throw Error(ErrorKind::input, what);
}

bool under(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root.back() == '/' || path[root.size()] == '/'));
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

}  // namespace zarr_read

using nlohmann::json;
using zarr_read::codec_name, zarr_read::fail, zarr_read::is_dir, zarr_read::is_file,
    zarr_read::kMaxMetaBytes, zarr_read::list_text, zarr_read::read_json,
    zarr_read::read_multiscales, zarr_read::read_text, zarr_read::open_store, zarr_read::Store;
namespace fs = std::filesystem;

bool is_zarr_store(const std::string& path) {
  return is_dir(path) &&
         (is_file(path + "/.zarray") || is_file(path + "/.zgroup") || is_file(path + "/zarr.json"));
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
                              const std::vector<double>& scale,
                              const std::vector<std::string>& group_axes) {
    const bool v3 = !is_file(dir + "/.zarray") && is_file(dir + "/zarr.json");
    const std::string file = dir + (v3 ? "/zarr.json" : "/.zarray");
    const std::string text = read_text(file, kMaxMetaBytes);
    const std::string where = "Zarr metadata '" + file + "'";
    auto m = v3 ? zarr::parse_v3_array_json(text, where) : zarr::parse_array_json(text, where);
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
    // A volume's planes, where the array is an image ooc reads.
    try {
      const ImageSpec sp =
          zarr_read::image_of(m, group_axes.empty() ? m.dimension_names : group_axes, where);
      if (sp.depth > 1) s += ", depth " + std::to_string(sp.depth);
    } catch (const Error&) {
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
    array_line(path, "array: ", {}, {});
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
      array_line(path + "/" + ms->paths[i], head, ms->scales[i], ms->axes);
    } catch (const Error& e) {
      lines.push_back(head + "unreadable: " + e.what());
    }
  }
  return lines;
}

}  // namespace ooc
