// Joining a Zarr store that one writer or several parts made in OUT.partial: the chunk rows
// and level rows they left at their boundaries, the check that every chunk is there, the
// metadata, and the rename into place. Apart from the sink, since --finish joins a store no
// sink of this process wrote; the store's lock and refusals are here for both.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/formats.hpp"
#include "io/output_file.hpp"
#include "io/pyramid.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "zarr_writer.hpp"

namespace ooc {
namespace zarr_write {

int lock_writers(const std::string& temp, std::int64_t begin, std::int64_t end, bool no_locks,
                 bool* locked) {
  const std::string file = temp + "/" + kWriters;
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) io_fail("cannot open", file, errno);
  *locked = try_lock(fd, file, no_locks, static_cast<off_t>(begin), static_cast<off_t>(end));
  return fd;
}

Error busy_store(const std::string& output, const std::string& temp, int fd) {
  const pid_t pid = lock_holder(fd);
  return Error(ErrorKind::io, "output '" + output + "' is being written by another process" +
                                  (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "") +
                                  ", which holds '" + temp +
                                  "': wait for it to finish or write elsewhere");
}

std::string strip_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

void refuse_existing(const std::string& target) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0)
    throw Error(ErrorKind::usage, "output '" + target +
                                      "' exists: ooc does not replace a Zarr store (other arrays "
                                      "may live in it); remove it (rm -r) or name another");
}

}  // namespace zarr_write

namespace {

using nlohmann::json;
using zarr_write::attrs_json, zarr_write::busy_store, zarr_write::ceil_div, zarr_write::io_fail,
    zarr_write::is_dir, zarr_write::kEdgePrefix, zarr_write::kSlabPrefix, zarr_write::kSourcePrefix,
    zarr_write::kStoreInfo, zarr_write::kWriters, zarr_write::level_meta, zarr_write::lock_writers,
    zarr_write::read_text, zarr_write::refuse_existing, zarr_write::StoreInfo,
    zarr_write::strip_slashes, zarr_write::unit_key, zarr_write::v3_array_json,
    zarr_write::write_file_atomic, zarr_write::write_unit_row;

std::vector<LevelEdge> list_edges(const std::string& temp) {
  std::vector<LevelEdge> edges;
  if (DIR* d = ::opendir(temp.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.find(".tmp-") != std::string::npos) continue;
      LevelEdge g;
      g.source = n.rfind(kSourcePrefix, 0) == 0;
      const std::string prefix = g.source ? kSourcePrefix : kEdgePrefix;
      if (n.rfind(prefix, 0) != 0) continue;
      long long lo = 0, hi = 0;
      int level = 0;
      if (std::sscanf(n.c_str() + prefix.size(), "%d-%lld-%lld", &level, &lo, &hi) != 3) continue;
      g.level = level, g.lo = lo, g.hi = hi, g.path = temp + "/" + n;
      edges.push_back(g);
    }
    ::closedir(d);
  }
  return edges;
}

// The slab files stopped runs left (the rows of their slabs are in the chunks now).
void remove_slab_files(const std::string& temp) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(temp.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind(kSlabPrefix, 0) == 0) names.push_back(e->d_name);
    ::closedir(d);
  }
  for (const std::string& n : names) ::unlink((temp + "/" + n).c_str());
}

}  // namespace

bool is_zarr_temporary(const std::string& temporary) {
  struct stat st {};
  return is_dir(temporary) && ::lstat((temporary + "/" + kStoreInfo).c_str(), &st) == 0 &&
         S_ISREG(st.st_mode);
}

void finish_zarr_store(const std::string& output, const std::string& temp) {
  const std::string target = strip_slashes(output);
  const std::string info_path = temp + "/" + kStoreInfo;
  const StoreInfo info = StoreInfo::from_json(read_text(info_path), info_path);
  refuse_existing(target);
  bool locked = false;
  const int fd = lock_writers(temp, 0, 0, true, &locked);
  if (!locked) {
    Error e = busy_store(target, temp, fd);
    ::close(fd);
    throw e;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  // Chunk rows that straddle writers' boundaries, level by level: the rows the writers left,
  // and the rows no writer could make (their two source rows came from two writers).
  const std::vector<LevelEdge> edges = list_edges(temp);
  const std::int64_t ch = info.unit();
  join_pyramid_edges(
      info.levels,
      [&](int k) {
        // A volume's (of planes whole numbers of unit rows, as its parts need): a tall plane.
        ImageSpec s = info.level_spec(k);
        s.height = s.stacked_rows();
        s.depth = 1;
        s.stack = false;
        return s;
      },
      [&](int) { return ch; }, edges, temp,
      [&](int k, std::int64_t cr, const std::byte* rows) {
        write_unit_row(temp, info, k, cr, rows);
      },
      [&](int k, std::int64_t cr, std::int64_t r0, std::int64_t r1) {
        // Left over from a run killed after it wrote this chunk row whole: nothing to do.
        struct stat st {};
        const std::int64_t down = info.units_down(k);
        const std::string first = temp + "/" + std::to_string(k) + "/" +
                                  unit_key(info, level_meta(info, k), cr % down, 0, 0, cr / down);
        if (::stat(first.c_str(), &st) == 0) return;
        throw Error(ErrorKind::input,
                    "output '" + target + "' is not complete: rows " + std::to_string(r0) + ":" +
                        std::to_string(r1) + " of level " + std::to_string(k) +
                        " were not written. Run the parts that cover them (with --resume), "
                        "then --finish again",
                    true);
      },
      info.nodata);

  // Every chunk of every level must be there now.
  for (int k = 0; k <= info.levels; ++k) {
    const ImageSpec s = info.level_spec(k);
    const zarr::ArrayMeta meta = level_meta(info, k);
    const std::int64_t rows = ceil_div(s.height, ch), cols = ceil_div(s.width, ch);
    const std::int64_t plane = rows * cols * s.channels;
    // A slab of planes_deep planes a chunk.
    for (std::int64_t i = 0; i < plane * ceil_div(s.depth, info.planes_deep(k)); ++i) {
      const std::int64_t r = i / cols % rows, c = i % cols;
      const std::string p = temp + "/" + std::to_string(k) + "/" +
                            unit_key(info, meta, r, c, i % plane / (rows * cols), i / plane);
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        throw Error(ErrorKind::input,
                    "output '" + target + "' is not complete: chunk '" + p + "' is missing (rows " +
                        std::to_string(r * ch << k) + ":" +
                        std::to_string(std::min(info.spec.height, (r + 1) * ch << k)) +
                        " of the image). Run the parts that cover them (with --resume), then "
                        "--finish again",
                    true);
    }
    const std::string z = info.version == 3 ? v3_array_json(info, k) : zarr::array_json(meta);
    write_file_atomic(
        temp + "/" + std::to_string(k) + (info.version == 3 ? "/zarr.json" : "/.zarray"), z.data(),
        z.size());
  }
  if (info.version == 3) {
    // NGFF 0.5: the multiscales under the group's attributes, in "ome".
    json ms = json::parse(attrs_json(info))["multiscales"];
    for (auto& m : ms) m.erase("version");
    const json group = {{"zarr_format", 3},
                        {"node_type", "group"},
                        {"attributes", {{"ome", {{"version", "0.5"}, {"multiscales", ms}}}}}};
    const std::string g = group.dump(4) + "\n";
    write_file_atomic(temp + "/zarr.json", g.data(), g.size());
  } else {
    const std::string group = "{\n    \"zarr_format\": 2\n}\n";
    write_file_atomic(temp + "/.zgroup", group.data(), group.size());
    const std::string attrs = attrs_json(info);
    write_file_atomic(temp + "/.zattrs", attrs.data(), attrs.size());
  }
  for (const LevelEdge& e : edges) ::unlink(e.path.c_str());
  remove_slab_files(temp);
  ::unlink(info_path.c_str());
  ::unlink((temp + "/" + kWriters).c_str());
  // Never over another store that appeared meanwhile.
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    // Put the bookkeeping back, so that --finish can run again once the way is clear.
    const std::string text = info.to_json();
    write_file_atomic(info_path, text.data(), text.size());
    if (err == EEXIST) refuse_existing(target);
    io_fail("cannot rename the finished store into", target, err);
  }
}

}  // namespace ooc
