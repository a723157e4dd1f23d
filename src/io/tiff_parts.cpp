// The parts protocol of TIFF outputs (tiff_parts.hpp): the writers' settings, blocks, indexes and
// edge files beside the temporary, and finish_tiff_parts, which assembles the output from them.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "formats.hpp"
#include "io/pyramid.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"
#include "output_file.hpp"
#include "tiff_common.hpp"
#include "tiff_ifd.hpp"
#include "tiff_parts.hpp"
#include "tiff_parts_files.hpp"
#include "tiff_sink.hpp"

namespace ooc {
namespace detail {

std::int64_t tile_side(const SinkOptions& o) {
  return o.tile == 0 && (o.pyramid_levels != 0 || o.cog) ? 512 : o.tile;
}

std::int64_t strip_rows(const ImageSpec& spec) {
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(kStripBytes / spec.row_bytes()), 1,
                                  spec.height);
}

std::string temporary_for(const std::string& output) {
  struct stat st {};
  if (::lstat(output.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (::realpath(output.c_str(), resolved) != nullptr) return partial_path(resolved);
  }
  return partial_path(output);
}

std::string settings_path(const std::string& temp) {
  return temp + ".tiff-parts";
}

std::string range_stem(const std::string& temp, std::int64_t lo, std::int64_t hi) {
  return temp + ".rows-" + std::to_string(lo) + "-" + std::to_string(hi);
}

std::string edge_path(const std::string& temp, int k, std::int64_t lo, std::int64_t hi) {
  return temp + ".tiff-edge-L" + std::to_string(k) + "-" + std::to_string(lo) + "-" +
         std::to_string(hi);
}

namespace {

std::string hex(const std::string& text) {
  static const char* digits = "0123456789abcdef";
  std::string out = "x";  // never empty: a line always has a value to read
  for (const unsigned char c : text) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string unhex(const std::string& h) {
  std::string out;
  for (std::size_t i = 1; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

template <class T>
std::string list_text(const std::vector<T>& v) {
  std::ostringstream o;
  o << v.size();
  for (const T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      char b[40];
      std::snprintf(b, sizeof b, " %.17g", x);
      o << b;
    } else {
      o << " " << x;
    }
  }
  return o.str();
}

template <class T>
std::vector<T> read_list(std::istream& in) {
  std::size_t n = 0;
  in >> n;
  if (!in || n > (1u << 20)) throw std::runtime_error("bad list");
  std::vector<T> v(n);
  for (T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      std::string w;
      in >> w;
      x = std::strtod(w.c_str(), nullptr);
    } else {
      in >> x;
    }
  }
  return v;
}

}  // namespace

std::string settings_text(const ImageSpec& s, const SinkOptions& o) {
  const Metadata& m = o.metadata;
  const GeoTags& g = m.geo;
  char res[96];
  std::snprintf(res, sizeof res, "%.17g %.17g", m.x_resolution, m.y_resolution);
  std::ostringstream t;
  t << "ooc-tiff-parts 3\nimage " << s.width << " " << s.height << " " << s.depth << " "
    << s.channels << " " << static_cast<int>(s.type) << "\ncompress " << hex(o.compress) << " "
    << o.level << " " << resolved_predictor(o, s.type) << "\nlayout " << o.tile << " "
    << o.pyramid_levels << " " << (o.cog ? 1 : 0) << " " << hex(o.bigtiff) << "\nphotometric "
    << m.photometric << " " << list_text(m.extra_samples) << "\nresolution " << res << " "
    << m.resolution_unit << "\ndescription " << hex(m.description) << "\norientation "
    << m.orientation << "\ngeo " << list_text(g.model_pixel_scale) << " "
    << list_text(g.model_tiepoint) << " " << list_text(g.model_transformation) << " "
    << list_text(g.geo_key_directory) << " " << list_text(g.geo_double_params) << " "
    << hex(g.geo_ascii_params) << " " << hex(g.gdal_metadata) << " " << hex(g.gdal_nodata)
    << "\nend\n";
  return t.str();
}

namespace {

void parse_settings(const std::string& text, const std::string& path, ImageSpec& s,
                    SinkOptions& o) {
  try {
    std::istringstream in(text);
    std::string line, key, h;
    std::getline(in, line);
    // Version 2 (before volumes) had no depth.
    if (line != "ooc-tiff-parts 3" && line != "ooc-tiff-parts 2")
      throw std::runtime_error("not ours");
    int type = 0, cog = 0;
    in >> key >> s.width >> s.height;
    if (line.back() == '3') in >> s.depth;
    in >> s.channels >> type;
    s.type = static_cast<SampleType>(type);
    in >> key >> h >> o.level >> o.predictor;
    o.compress = unhex(h);
    in >> key >> o.tile >> o.pyramid_levels >> cog >> h;
    o.cog = cog != 0;
    o.bigtiff = unhex(h);
    Metadata& m = o.metadata;
    in >> key >> m.photometric;
    m.extra_samples = read_list<std::uint16_t>(in);
    std::string xr, yr;
    in >> key >> xr >> yr >> m.resolution_unit;
    m.x_resolution = std::strtod(xr.c_str(), nullptr);
    m.y_resolution = std::strtod(yr.c_str(), nullptr);
    in >> key >> h;
    m.description = unhex(h);
    in >> key >> m.orientation >> key;
    GeoTags& g = m.geo;
    g.model_pixel_scale = read_list<double>(in);
    g.model_tiepoint = read_list<double>(in);
    g.model_transformation = read_list<double>(in);
    g.geo_key_directory = read_list<std::uint16_t>(in);
    g.geo_double_params = read_list<double>(in);
    in >> h;
    g.geo_ascii_params = unhex(h);
    in >> h;
    g.gdal_metadata = unhex(h);
    in >> h;
    g.gdal_nodata = unhex(h);
    in >> key;
    if (!in || key != "end") throw std::runtime_error("cut short");
  } catch (const std::exception&) {
    throw Error(ErrorKind::input, "'" + path +
                                      "' (the settings of a TIFF made in parts) is damaged: "
                                      "remove '" +
                                      path.substr(0, path.size() - 11) + ".*' and run again");
  }
}

std::string read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw Error(ErrorKind::io, system_message("cannot read", path, errno));
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace

void write_all(int fd, const void* data, std::size_t len, std::uint64_t at,
               const std::string& name) {
  const auto* b = static_cast<const std::byte*>(data);
  for (std::size_t done = 0; done < len;) {
    const ssize_t w = ::pwrite(fd, b + done, len - done, static_cast<off_t>(at + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : ENOSPC;
      throw Error(ErrorKind::io, system_message("cannot write", name, err) + full_hint(err));
    }
    done += static_cast<std::size_t>(w);
  }
}

namespace {

void read_all(int fd, void* data, std::size_t len, std::uint64_t at, const std::string& name) {
  auto* b = static_cast<std::byte*>(data);
  for (std::size_t done = 0; done < len;) {
    const ssize_t r = ::pread(fd, b + done, len - done, static_cast<off_t>(at + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw Error(ErrorKind::io, system_message("cannot read", name, r < 0 ? errno : EIO));
    done += static_cast<std::size_t>(r);
  }
}

}  // namespace

void write_file_atomic(const std::string& path, const void* data, std::size_t len) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::io, system_message("cannot write", tmp, errno) + full_hint(errno));
  try {
    write_all(fd, data, len, 0, tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::io, system_message("cannot write", path, err));
  }
}

namespace {

// The writers' files beside `temp` (every TEMP.rows-*.tiff-*, TEMP.tiff-edge-*, and the
// settings when `settings`), full paths.
std::vector<std::string> part_files(const std::string& temp, bool settings) {
  const std::size_t slash = temp.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : temp.substr(0, slash + 1);
  const std::string stem = temp.substr(slash == std::string::npos ? 0 : slash + 1);
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind(stem + ".", 0) != 0) continue;
    const std::string rest = n.substr(stem.size());
    const bool ours =
        (rest.rfind(".rows-", 0) == 0 && (rest.find(kBlocksSuffix) != std::string::npos ||
                                          rest.find(kIndexSuffix) != std::string::npos)) ||
        rest.rfind(".tiff-edge-L", 0) == 0 || (settings && rest.rfind(".tiff-parts", 0) == 0);
    if (ours) out.push_back((slash == std::string::npos ? "" : dir) + n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void remove_part_files(const std::string& temp) {
  for (const std::string& p : part_files(temp, true)) ::unlink(p.c_str());
}

void claim_settings(const std::string& temp, const std::string& text) {
  const std::string path = settings_path(temp);
  for (int attempt = 0; attempt < 2; ++attempt) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      const std::string there = read_small_file(path);
      if (there != text)
        throw Error(ErrorKind::usage,
                    "the TIFF output beside '" + temp +
                        "' is being made in parts with other settings (image size, --tile, "
                        "--compress, --level, --predictor, --levels, --cog, --bigtiff or the "
                        "input's tags differ): run every part alike, or remove '" +
                        temp + ".*' to start over");
      return;
    }
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    write_file_atomic(tmp, text.data(), text.size());
    const int rc = ::link(tmp.c_str(), path.c_str());
    const int err = errno;
    ::unlink(tmp.c_str());
    if (rc == 0) return;
    if (err != EEXIST) throw Error(ErrorKind::io, system_message("cannot create", path, err));
  }
}

}  // namespace detail

using namespace detail;

std::int64_t tiff_row_alignment(const ImageSpec& spec, const SinkOptions& options) {
  const std::int64_t tile = tile_side(options);
  return tile > 0 ? tile : strip_rows(spec);
}

bool is_tiff_parts_temporary(const std::string& temporary) {
  struct stat st {};
  return ::lstat(settings_path(temporary).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void finish_tiff_parts(const std::string& output, const std::string& temp) {
  const std::string sp = settings_path(temp);
  ImageSpec spec;
  SinkOptions o;
  parse_settings(read_small_file(sp), sp, spec, o);
  // Every block the writers' indexes name whose bytes are there (first found wins: two writers
  // of one block wrote the same bytes).
  struct Place {
    int fd;
    std::uint64_t offset, size;
  };
  std::map<std::pair<int, std::uint64_t>, Place> blocks;
  std::vector<int> fds;
  std::vector<std::string> names;
  struct Closer {
    std::vector<int>& fds;
    ~Closer() {
      for (const int fd : fds) ::close(fd);
    }
  } closer{fds};
  const std::vector<std::string> files = part_files(temp, false);
  const std::string index_suffix = kIndexSuffix;
  for (const std::string& index : files) {
    if (index.size() < index_suffix.size() ||
        index.compare(index.size() - index_suffix.size(), index_suffix.size(), index_suffix) != 0)
      continue;
    const std::string data = index.substr(0, index.size() - index_suffix.size()) + kBlocksSuffix;
    const int fd = ::open(data.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;  // a stop that died before its blocks file was in place
    fds.push_back(fd);
    names.push_back(data);
    if (const pid_t pid = lock_holder(fd); pid > 0)
      throw Error(ErrorKind::io,
                  "output '" + output + "' is still being written: a part is running (pid " +
                      std::to_string(pid) + " holds '" + data +
                      "'); wait for every part to end, then --finish again",
                  true);
    struct stat st {};
    ::fstat(fd, &st);
    const std::string text = read_small_file(index);
    const std::size_t n = text.size() / sizeof(IndexRecord);  // a record cut short is ignored
    for (std::size_t i = 0; i < n; ++i) {
      IndexRecord r;
      std::memcpy(&r, text.data() + i * sizeof r, sizeof r);
      if (r.magic != kIndexMagic || r.level > 64 || r.size == 0 || r.offset + r.size < r.offset ||
          r.offset + r.size > static_cast<std::uint64_t>(st.st_size))
        continue;
      blocks.emplace(std::make_pair(static_cast<int>(r.level), r.index),
                     Place{fd, r.offset, r.size});
    }
  }
  SinkOptions so = o;
  so.mode = OutputMode::fresh;
  TiffSink sink(output, spec, "", so, true);
  const int levels = sink.level_count();
  const auto incomplete = [&](int k, std::int64_t r0, std::int64_t r1) {
    return Error(ErrorKind::input,
                 "output '" + output + "' is not complete: rows " + std::to_string(r0) + ":" +
                     std::to_string(r1) +
                     (k > 0 ? " of pyramid level " + std::to_string(k) : std::string()) +
                     " were not written. Run the parts that cover them (with --resume), then "
                     "--finish again",
                 true);
  };
  // A volume's rows of blocks (level 0 only: its levels are made in one run) are numbered across
  // its planes, as the sink numbers them.
  const TiffPlan& base = sink.level_plan(0);
  const std::int64_t H = spec.height, ch = base.chunk_h;
  const auto block_rows = [&](int k) {
    return k == 0 ? base.down * spec.depth : sink.level_plan(k).down;
  };
  const auto top = [&](std::int64_t g) { return g / base.down * H + g % base.down * ch; };
  const auto bottom = [&](std::int64_t g) {
    return std::min(top(g) + ch, (g / base.down + 1) * H);
  };
  const auto row_present = [&](int k, std::int64_t cy) {
    const TiffPlan& plan = sink.level_plan(k);
    for (std::int64_t cx = 0; cx < plan.across; ++cx)
      if (!blocks.count({k, static_cast<std::uint64_t>(cy * plan.across + cx)})) return false;
    return true;
  };

  // Rows of blocks that straddle writers' boundaries, level by level: from the rows the writers
  // left, and the level rows whose two source rows two writers made (as finish_zarr_store).
  std::vector<LevelEdge> edges;
  for (const std::string& f : files) {
    const std::size_t at = f.rfind(".tiff-edge-L");
    int level = 0;
    long long lo = 0, hi = 0;
    if (at == std::string::npos || f.find(".tmp-", at) != std::string::npos ||
        std::sscanf(f.c_str() + at + 12, "%d-%lld-%lld", &level, &lo, &hi) != 3)
      continue;
    edges.push_back({level, lo, hi, f});
  }
  std::map<std::pair<int, std::int64_t>, std::vector<std::vector<std::byte>>> made;
  if (spec.volume()) {
    // A row of blocks that writers left in edges: its rows gathered from them (a plane's rows
    // of blocks never straddle planes, so this is all a volume needs).
    const std::size_t rb = spec.row_bytes();
    std::vector<std::byte> rows;
    for (std::int64_t g = 0; g < block_rows(0); ++g) {
      if (row_present(0, g)) continue;
      const std::int64_t r0 = top(g), r1 = bottom(g);
      rows.assign(static_cast<std::size_t>(r1 - r0) * rb, std::byte{0});
      std::vector<bool> have(static_cast<std::size_t>(r1 - r0), false);
      for (const LevelEdge& e : edges) {
        if (e.level != 0 || e.hi <= r0 || e.lo >= r1) continue;
        const std::string text = read_small_file(e.path);
        if (text.size() != static_cast<std::size_t>(e.hi - e.lo) * rb)
          throw Error(ErrorKind::input, "'" + e.path + "' is damaged (its size is not its rows')",
                      true);
        for (std::int64_t r = std::max(r0, e.lo); r < std::min(r1, e.hi); ++r) {
          std::memcpy(rows.data() + static_cast<std::size_t>(r - r0) * rb,
                      text.data() + static_cast<std::size_t>(r - e.lo) * rb, rb);
          have[static_cast<std::size_t>(r - r0)] = true;
        }
      }
      if (std::find(have.begin(), have.end(), false) != have.end()) continue;  // reported below
      made[{0, g}] = sink.encode_row(0, g % base.down, rows.data());
    }
  } else {
    join_pyramid_edges(
        levels, [&](int k) { return sink.level_plan(k).spec; },
        [&](int k) { return sink.level_plan(k).chunk_h; }, edges, temp,
        [&](int k, std::int64_t cy, const std::byte* rows) {
          if (row_present(k, cy)) return;  // a writer made it whole after all (a rerun)
          made[{k, cy}] = sink.encode_row(k, cy, rows);
        },
        [&](int k, std::int64_t cy, std::int64_t r0, std::int64_t r1) {
          if (!row_present(k, cy)) throw incomplete(k, r0, r1);
        },
        sink.nodata());
  }

  // Every block, in the order one process appends them.
  std::vector<std::byte> buf;
  for (int k = 0; k <= levels; ++k) {
    const TiffPlan& plan = sink.level_plan(k);
    for (std::int64_t cy = 0; cy < block_rows(k); ++cy) {
      const auto m = made.find({k, cy});
      if (m == made.end() && !row_present(k, cy)) {
        if (k == 0) throw incomplete(0, top(cy), bottom(cy));
        const std::int64_t r0 = cy * plan.chunk_h;
        throw incomplete(k, r0, std::min(r0 + plan.chunk_h, plan.spec.height));
      }
      for (std::int64_t cx = 0; cx < plan.across; ++cx) {
        const auto index = static_cast<std::uint32_t>(cy * plan.across + cx);
        if (m != made.end()) {
          const std::vector<std::byte>& b = m->second[static_cast<std::size_t>(cx)];
          sink.emit_block(k, index, b.data(), b.size());
          continue;
        }
        const Place& at = blocks.at({k, index});
        buf.resize(at.size);
        const auto which = std::find(fds.begin(), fds.end(), at.fd) - fds.begin();
        read_all(at.fd, buf.data(), at.size, at.offset, names[static_cast<std::size_t>(which)]);
        sink.emit_block(k, index, buf.data(), buf.size());
      }
    }
  }
  sink.commit();
  remove_part_files(temp);
}

}  // namespace ooc
