// Writing OME-Zarr 0.4 stores (Zarr v2 arrays in a group; 0.5 on Zarr 3, sharded): level 0 and
// its 2 x 2 mean pyramid, (y, x) or (c, y, x) with a plane per chunk ((c,) z, y, x volumes: chunks
// --chunk-z planes deep, levels halving z too with --pyramid-z), chunk rows compressed in
// parallel as soon as the rows streaming in complete them, each chunk file written beside its
// name and renamed, so that it appears only complete.
//
// A store is made in OUT.partial (a directory) and renamed into place when complete. Several
// writers (parts, MPI ranks) fill one such directory without exchanging rows: each writes the
// chunk rows that lie wholly in its rows, at every level, and leaves the rows of chunk rows that
// straddle its boundaries in edge files (.ooc-edge-L<level>-<first>-<end>, raw rows), and each
// level's row whose partner (in the 2 x 2 mean) another writer makes in a source file
// (.ooc-source-L...). Joining the store (zarr_write_finish.cpp: the last writer of a whole-image
// run, or --finish) writes those chunk rows from the edges, computing the level rows whose source
// rows two writers made. A stopped run leaves its last rows the same way, so that --resume
// continues at the exact row.
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "io/formats.hpp"
#include "io/nodata.hpp"
#include "io/output_file.hpp"
#include "io/pyramid.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/detail/hash.hpp"
#include "ooc/detail/size_text.hpp"
#include "ooc/limits.hpp"
#include "zarr_writer.hpp"

namespace ooc {
namespace {

using zarr_write::busy_store, zarr_write::ceil_div, zarr_write::edge_name, zarr_write::io_fail,
    zarr_write::is_dir, zarr_write::kSlabPrefix, zarr_write::kStoreInfo, zarr_write::lock_writers,
    zarr_write::make_dir, zarr_write::read_text, zarr_write::refuse_existing,
    zarr_write::remove_tree, zarr_write::StoreInfo, zarr_write::strip_slashes,
    zarr_write::write_file_atomic, zarr_write::write_unit_row;

class ZarrSink final : public Sink {
 public:
  ZarrSink(const std::string& path, const ImageSpec& spec, const std::string& input_path,
           const SinkOptions& o)
      : target_(strip_slashes(path)),
        temp_(partial_path(target_)),
        mode_(o.mode),
        row_begin_(o.row_begin),
        row_end_(o.row_end > 0 ? o.row_end : spec.stacked_rows()) {
    info_.spec = spec;
    info_.voxel = output_voxel(o);
    // Holes (io/nodata.hpp): a fill_value only where the type holds the value.
    if (const std::optional<double> nd = detail::output_nodata(o)) {
      const bool fits = std::isnan(*nd)
                            ? !is_integer(spec.type)
                            : !is_integer(spec.type) ||
                                  (*nd == std::trunc(*nd) && *nd >= lowest_value(spec.type) &&
                                   *nd <= highest_value(spec.type));
      if (fits) info_.nodata = nd;
    }
    info_.chunk = o.chunk != 0 ? o.chunk : 512;
    if (info_.chunk < 1 || info_.chunk > 65536)
      throw Error(ErrorKind::usage,
                  "--chunk is 1 to 65536 pixels, got " + std::to_string(info_.chunk));
    info_.codec = zarr::codec_from_option(o.compress.empty() ? "blosc" : o.compress, o.level);
    info_.version = o.zarr_version;
    if (info_.version != 2 && info_.version != 3)
      throw Error(ErrorKind::usage,
                  "--zarr-version is 2 or 3, got " + std::to_string(info_.version));
    if (info_.version == 2 && o.shard != 0)
      throw Error(ErrorKind::usage, "--shard is for Zarr 3: add --zarr-version 3");
    if (info_.version == 3) {
      info_.shard = o.shard != 0 ? o.shard : 4 * info_.chunk;
      if (info_.shard < info_.chunk || info_.shard % info_.chunk != 0)
        throw Error(ErrorKind::usage, "--shard " + std::to_string(info_.shard) +
                                          " is not a positive multiple of --chunk " +
                                          std::to_string(info_.chunk));
      if (info_.codec.id == "zlib")
        throw Error(ErrorKind::usage,
                    "Zarr 3 has no zlib codec: use --compress gzip (or blosc, zstd, none)");
    }
    info_.levels = o.pyramid_levels < 0 ? pyramid_auto_levels(spec) : o.pyramid_levels;
    info_.chunk_z = o.chunk_z;
    info_.pyramid_z = o.pyramid_z && info_.levels > 0;
    if (o.chunk_z < 1 || o.chunk_z > 65536)
      throw Error(ErrorKind::usage,
                  "--chunk-z is 1 to 65536 planes, got " + std::to_string(o.chunk_z));
    if (!spec.volume() && (o.chunk_z != 1 || o.pyramid_z))
      throw Error(ErrorKind::usage, std::string(o.chunk_z != 1 ? "--chunk-z" : "--pyramid-z") +
                                        " is for volumes, and output '" + path + "' is a plane (" +
                                        spec.describe() + "): drop it" +
                                        (o.pyramid_z ? " (--pyramid halves y and x)" : ""));
    // A volume's chunk rows count rows within a plane; where planes are whole numbers of them, the
    // stacked rows' chunk rows are those of a tall plane, and parts and --resume work as for one.
    const bool whole = o.mode == OutputMode::fresh && o.row_begin == 0 &&
                       (o.row_end == 0 || o.row_end == spec.stacked_rows());
    if (spec.volume() && !whole && (info_.levels > 0 || spec.height % info_.unit() != 0))
      throw Error(
          ErrorKind::usage,
          "Zarr output '" + path + "' is a volume (" + spec.describe() +
              "): parts and --resume of a Zarr volume need " +
              (info_.levels > 0 ? "no pyramid (write the levels in a whole run)"
                                : "planes a whole number of chunk rows high (" +
                                      std::string(info_.version == 3 ? "--shard" : "--chunk") +
                                      " dividing " + std::to_string(spec.height) + ")"));
    // Parts and --resume write whole slabs: a chunk of several planes is made by one writer.
    const std::int64_t slab_rows = info_.planes_deep(0) * spec.height;
    if (spec.volume() && info_.planes_deep(0) > 1 && !whole &&
        (row_begin_ % slab_rows != 0 ||
         (row_end_ % slab_rows != 0 && row_end_ != spec.stacked_rows())))
      throw Error(ErrorKind::usage,
                  "--chunk-z " + std::to_string(info_.chunk_z) + ": each part of Zarr volume '" +
                      path + "' must start and end on a slab of " +
                      std::to_string(info_.planes_deep(0)) + " planes (rows multiples of " +
                      std::to_string(slab_rows) + "), not rows " + std::to_string(row_begin_) +
                      ":" + std::to_string(row_end_) +
                      ": give --rows on slabs, a number of parts that divides the " +
                      std::to_string(ceil_div(spec.depth, info_.planes_deep(0))) +
                      " slabs, or a --chunk-z that divides the planes of each part");
    if (info_.levels > 0 && pyramid_level(spec, info_.levels).height < 1)
      throw Error(ErrorKind::usage, "--levels " + std::to_string(info_.levels) + " is too many");
    // The slabs of chunk-z planes being filled (and the even planes of a pyramid halving z) are
    // held whole: they must fit beside the bands.
    const std::size_t limit = o.mem_limit > 0 ? o.mem_limit : default_mem_limit();
    const std::size_t held = slab_bytes() + pyramid_bytes();
    if ((info_.chunk_z > 1 || info_.pyramid_z) && held > limit / 2)
      throw Error(
          ErrorKind::usage,
          "Zarr output '" + path + "' (" + spec.describe() + ") holds " +
              (info_.chunk_z > 1 ? "slabs of --chunk-z " + std::to_string(info_.chunk_z) + " planes"
                                 : std::string("a plane a level for --pyramid-z")) +
              " while they fill, " + format_bytes(double(held)) +
              ", more than half of --mem-limit " + format_bytes(double(limit)) + ": use " +
              (info_.chunk_z > 1 ? "a smaller --chunk-z" : "--pyramid") + " or raise --mem-limit");
    const std::size_t chunk_bytes = static_cast<std::size_t>(info_.chunk * info_.chunk) *
                                    spec.pixel_bytes() *
                                    static_cast<std::size_t>(info_.planes_deep(0));
    if (info_.codec.id == "blosc" && chunk_bytes > (std::size_t{1} << 31) - 64)
      throw Error(ErrorKind::usage, "a chunk of " + std::to_string(chunk_bytes) +
                                        " bytes is over blosc's 2 GiB: use a smaller --chunk");
    const std::string base = target_.substr(target_.rfind('/') + 1);
    info_.name = base.substr(0, base.size() >= 5 ? base.size() - 5 : base.size());
    refuse_existing(target_);
    if (!input_path.empty()) {
      const std::string in = strip_slashes(input_path);
      if (in == temp_ || in.rfind(temp_ + "/", 0) == 0)
        throw Error(ErrorKind::usage, "the input lies inside the output's temporary '" + temp_ +
                                          "': move it or name another output");
    }
    open_store(o.no_locks);
    for (int k = 0; k <= info_.levels; ++k) {
      Level l;
      l.spec = info_.level_spec(k);
      l.deep = spec.volume() ? info_.planes_deep(k) : 1;
      const std::size_t size = static_cast<std::size_t>(info_.unit() * l.deep) * l.spec.row_bytes();
      if (l.deep > 1) {
        l.slab.resize(static_cast<std::size_t>(info_.units_down(k)));
        l.held.resize(l.slab.size());
        l.size = size;
      } else {
        l.buf = std::make_shared<std::vector<std::byte>>(size);
      }
      levels_.push_back(std::move(l));
    }
  }

  ~ZarrSink() override {
    try {
      wait_tasks();
    } catch (...) {  // the error that ended the run is on its way already
    }
    if (lock_fd_ >= 0) ::close(lock_fd_);
    // An error ended a single writer's run: its store goes, as a file output's temporary does.
    // Parts leave the shared directory to the others.
    if (!done_ && mode_ != OutputMode::shared && created_) remove_tree(temp_);
  }

  const ImageSpec& spec() const noexcept override { return info_.spec; }
  std::string describe() const override {
    std::string d = "zarr '" + target_ + "' " + info_.spec.describe() + ", chunks " +
                    std::to_string(info_.chunk) + ", " + info_.codec.id;
    if (info_.codec.id == "blosc") d += " " + info_.codec.cname;
    if (info_.chunk_z > 1) d += " x " + std::to_string(info_.chunk_z) + " planes";
    if (info_.levels > 0)
      d += ", " + std::to_string(info_.levels) + " levels below" +
           (info_.pyramid_z ? " (z too)" : "");
    if (info_.version == 3) d += ", zarr 3, shards " + std::to_string(info_.shard);
    return d;
  }

  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                  std::size_t stride) override {
    if (first_ < 0) first_ = y0;
    if (!builder_ && !info_.spec.volume()) {
      builder_ = std::make_unique<PyramidBuilder>(
          info_.spec, info_.levels, y0, row_end_,
          [this](int k, std::int64_t r, const std::byte* row) { add_row(k, r, row); },
          [this](int k, std::int64_t r, const std::byte* row) {
            // The join reduces it with the other writer's partner row.
            write_file_atomic(temp_ + "/" + edge_name(k, r, r + 1, true), row,
                              levels_[static_cast<std::size_t>(k)].spec.row_bytes());
          });
      builder_->set_nodata(info_.nodata);
    }
    if (written_ < 0 && levels_[0].deep > 1) load_slab(y0);
    for (std::int64_t i = 0; i < n; ++i)
      add_row(0, y0 + i, data + static_cast<std::size_t>(i) * stride);
    if (builder_) builder_->push(y0, n, data, stride);
    if (info_.spec.volume() && info_.levels > 0) {
      // A volume's levels are written in a whole run, its rows in order from the first.
      if (!volume_builder_)
        volume_builder_ = std::make_unique<VolumePyramidBuilder>(
            info_.spec, info_.levels, info_.pyramid_z,
            [this](int k, std::int64_t r, const std::byte* row) { add_row(k, r, row); });
      volume_builder_->push(y0, n, data, stride);
    }
    written_ = y0 + n;
  }

  void commit() override {
    drain();
    for (int k = 0; k <= info_.levels; ++k) flush_partial(k);
    ::close(lock_fd_);
    lock_fd_ = -1;
    done_ = true;
    if (mode_ != OutputMode::shared) finish_zarr_store(target_, temp_);
  }

  void keep() override {
    if (!resumable())
      throw Error(ErrorKind::usage, describe() +
                                        " cannot be resumed: a Zarr volume is written in one run "
                                        "(write .npy or raw to resume)");
    drain();
    for (int k = 0; k <= info_.levels; ++k) flush_partial(k);
    keep_slab();
    ::close(lock_fd_);
    lock_fd_ = -1;
    done_ = true;
  }

  std::size_t buffer_bytes() const override {
    // Each level's chunk row being filled (a slab's: one a unit row of the plane), and up to
    // kInFlight more being compressed; the even planes of a pyramid halving z.
    std::size_t b = slab_bytes() + pyramid_bytes();
    // A chunk and its compressed copy per compressing thread.
    const std::size_t chunk = static_cast<std::size_t>(info_.chunk * info_.chunk) *
                              info_.spec.pixel_bytes() *
                              static_cast<std::size_t>(info_.planes_deep(0));
    return b + 2 * chunk * static_cast<std::size_t>(std::max(1, threads_));
  }

  std::int64_t durable_end(std::int64_t first, std::int64_t written_end) const override {
    // Level rows are on disk chunk row by chunk row; with a pyramid, what a killed run leaves
    // is not tracked level by level: a rerun redoes the range.
    // Without one, whole chunk rows are, but for the last kInFlight, which may still be
    // compressing.
    if (info_.levels > 0 || !resumable()) return first;
    if (levels_[0].deep > 1) {
      // Whole slabs but the last begun, whose last chunk rows may still be compressing; a run
      // resumed inside a slab (first) has the rows before it in slab files.
      const std::int64_t slab = levels_[0].deep * info_.spec.height;
      return std::max(first, (written_end / slab - 1) * slab);
    }
    return std::max(first, (written_end / info_.unit() - kInFlight) * info_.unit());
  }

 private:
  struct Level {
    ImageSpec spec;
    std::shared_ptr<std::vector<std::byte>> buf;  // the chunk row being filled
    std::vector<std::shared_ptr<std::vector<std::byte>>> spare;
    std::int64_t lo = -1, hi = -1;
    // Chunks of several planes (deep > 1): each unit row of the plane fills a buffer of its
    // slab's planes (unit rows apart) until the slab's last plane completes it; rows held by each.
    std::int64_t deep = 1;
    std::vector<std::shared_ptr<std::vector<std::byte>>> slab;
    std::vector<std::int64_t> held;
    std::size_t size = 0;  // of a slab's buffer
  };

  // The chunk rows being filled and compressed, of every level.
  std::size_t slab_bytes() const {
    std::size_t b = 0;
    for (int k = 0; k <= info_.levels; ++k) {
      const ImageSpec s = info_.level_spec(k);
      const std::int64_t deep = s.volume() ? info_.planes_deep(k) : 1;
      const std::size_t unit = static_cast<std::size_t>(info_.unit() * deep) * s.row_bytes();
      const std::int64_t live = deep > 1 ? info_.units_down(k) : 1;
      b += unit * static_cast<std::size_t>(live + kInFlight);
    }
    return b;
  }

  std::size_t pyramid_bytes() const {
    return info_.spec.volume() && info_.pyramid_z
               ? VolumePyramidBuilder::held_bytes(info_.spec, info_.levels, true)
               : 0;
  }

  void open_store(bool no_locks) {
    struct stat st {};
    const bool exists = ::lstat(temp_.c_str(), &st) == 0;
    if (exists && !S_ISDIR(st.st_mode))
      throw Error(ErrorKind::usage, "'" + temp_ + "' is in the way of the output's temporary (" +
                                        (S_ISLNK(st.st_mode) ? "a link" : "not a directory") +
                                        "): remove it or name another output");
    if (exists && !is_zarr_temporary(temp_))
      throw Error(ErrorKind::usage, "'" + temp_ + "' is in the way of the output's temporary " +
                                        "(a directory ooc did not make): remove it or name "
                                        "another output");
    if (mode_ == OutputMode::resume && !exists)
      throw Error(ErrorKind::usage, "there is no '" + temp_ + "' to resume: run without --resume");
    if (mode_ == OutputMode::fresh && exists) {
      // A leftover of an interrupted run: replaced, unless someone is writing it.
      bool locked = false;
      const int fd = lock_writers(temp_, 0, 0, no_locks, &locked);
      if (!locked) {
        Error e = busy_store(target_, temp_, fd);
        ::close(fd);
        throw e;
      }
      ::close(fd);
      remove_tree(temp_);
    }
    // The directory appears with the settings every writer must share already in it (made
    // aside, then renamed), so that a writer that finds it can always read them.
    const std::string info_path = temp_ + "/" + kStoreInfo;
    const std::string text = info_.to_json();
    if (!is_dir(temp_)) {
      const std::size_t slash = temp_.rfind('/');
      const std::string parent = slash == std::string::npos ? "." : temp_.substr(0, slash + 1);
      struct stat pst {};
      if (::stat(parent.c_str(), &pst) != 0 || !S_ISDIR(pst.st_mode))
        throw Error(ErrorKind::usage, "the directory of output '" + target_ + "' ('" + parent +
                                          "') does not exist: create it or name another output");
      const std::string stage = temp_ + ".tmp-" + std::to_string(::getpid());
      remove_tree(stage);
      if (::mkdir(stage.c_str(), 0755) != 0)
        io_fail("cannot create the output's temporary", stage, errno);
      write_file_atomic(stage + "/" + kStoreInfo, text.data(), text.size());
      if (::renameat2(AT_FDCWD, stage.c_str(), AT_FDCWD, temp_.c_str(), RENAME_NOREPLACE) == 0) {
        created_ = true;
      } else {
        const int err = errno;
        remove_tree(stage);
        if (err != EEXIST && err != ENOTEMPTY)
          io_fail("cannot create the output's temporary", temp_, err);
        if (mode_ == OutputMode::fresh)
          throw Error(ErrorKind::io, "output '" + target_ +
                                         "' is being made by another process ('" + temp_ +
                                         "' appeared meanwhile): write elsewhere");
      }
    }
    if (!is_zarr_temporary(temp_))
      throw Error(ErrorKind::usage, "'" + temp_ + "' is not a directory ooc made: remove it");
    bool locked = false;
    const bool whole = mode_ != OutputMode::shared;
    lock_fd_ = lock_writers(temp_, whole ? 0 : row_begin_, whole ? 0 : row_end_, no_locks, &locked);
    if (!locked) throw busy_store(target_, temp_, lock_fd_);
    const std::string there = read_text(info_path);
    if (there != text)
      throw Error(ErrorKind::usage,
                  "'" + temp_ + "' is being made with other settings (" + there.substr(0, 200) +
                      "): run every part with the same image, --chunk, --compress, --level and "
                      "--levels, or remove '" +
                      temp_ + "' to start over");
    for (int k = 0; k <= info_.levels; ++k) make_dir(temp_ + "/" + std::to_string(k));
  }

  // A volume's rows are those of a tall plane where its planes are whole numbers of unit rows.
  bool resumable() const {
    return !info_.spec.volume() || (info_.levels == 0 && info_.spec.height % info_.unit() == 0);
  }

  // The unit row holding (stacked) row r of level k, counted over a volume's planes.
  std::int64_t unit_of(int k, std::int64_t r) const {
    const std::int64_t h = levels_[static_cast<std::size_t>(k)].spec.height;
    return r / h * info_.units_down(k) + r % h / info_.unit();
  }

  void add_row(int k, std::int64_t r, const std::byte* data) {
    Level& l = levels_[static_cast<std::size_t>(k)];
    if (l.deep > 1) return add_slab_row(k, r, data);
    const std::int64_t ch = info_.unit(), cr = unit_of(k, r), h = l.spec.height;
    // The unit row's first and end rows, stacked: within its plane.
    const std::int64_t top = r / h * h + r % h / ch * ch;
    const std::int64_t end = std::min(top + ch, r / h * h + h);
    const std::size_t rb = l.spec.row_bytes();
    if (l.lo >= 0 && unit_of(k, l.lo) != cr) flush_partial(k);
    if (l.lo < 0) l.lo = r;
    std::memcpy(l.buf->data() + static_cast<std::size_t>(r - top) * rb, data, rb);
    l.hi = r + 1;
    if (l.hi == end) {
      if (l.lo == top)
        write_async(k, cr, take_buffer(l, l.buf));
      else
        flush_partial(k);
      l.lo = l.hi = -1;
    }
  }

  // The full buffer `b` taken out, a spare in its place.
  std::shared_ptr<std::vector<std::byte>> take_buffer(Level& l,
                                                      std::shared_ptr<std::vector<std::byte>>& b) {
    std::shared_ptr<std::vector<std::byte>> full = std::move(b);
    if (!l.spare.empty()) {
      b = std::move(l.spare.back());
      l.spare.pop_back();
    } else {
      b = std::make_shared<std::vector<std::byte>>(full->size());
    }
    return full;
  }

  // Planes z0, z0 + 1, ... of a slab, (dz, y) of a unit row, land in its buffer at dz x unit + y
  // % unit; the slab's last plane completes the unit row's chunks as its rows arrive.
  struct SlabAt {
    std::int64_t slab, dz, u, top, end, last;  // last: the slab's last plane
  };
  SlabAt slab_at(const Level& l, std::int64_t r) const {
    const std::int64_t h = l.spec.height, z = r / h, y = r % h, unit = info_.unit();
    SlabAt a;
    a.slab = z / l.deep;
    a.dz = z % l.deep;
    a.u = y / unit;
    a.top = a.u * unit;
    a.end = std::min(a.top + unit, h);
    a.last = std::min((a.slab + 1) * l.deep, l.spec.depth) - 1;
    return a;
  }

  void add_slab_row(int k, std::int64_t r, const std::byte* data) {
    Level& l = levels_[static_cast<std::size_t>(k)];
    const SlabAt a = slab_at(l, r);
    const std::size_t rb = l.spec.row_bytes(), u = static_cast<std::size_t>(a.u);
    std::shared_ptr<std::vector<std::byte>>& b = l.slab[u];
    if (!b) {
      if (!l.spare.empty()) {
        b = std::move(l.spare.back());
        l.spare.pop_back();
      } else {
        b = std::make_shared<std::vector<std::byte>>(l.size);
      }
    }
    const std::int64_t at = a.dz * info_.unit() + r % l.spec.height - a.top;
    std::memcpy(b->data() + static_cast<std::size_t>(at) * rb, data, rb);
    ++l.held[u];
    if (r / l.spec.height != a.last || r % l.spec.height + 1 != a.end) return;
    // Every writer has the rows of its slabs from their first plane (parts start on slabs; a
    // resumed run reads the rows before it from slab files).
    if (l.held[u] != (a.last - a.slab * l.deep + 1) * (a.end - a.top))
      throw std::logic_error("a Zarr slab completed without all its rows");
    l.held[u] = 0;
    write_async(k, a.slab * info_.units_down(k) + a.u, std::move(b));
    b.reset();
  }

  // A stopped run leaves the rows of the slab it had begun, a file a unit row of the plane, for
  // the run that resumes at the next row (load_slab); no pyramid comes with parts or --resume.
  void keep_slab() {
    if (levels_[0].deep <= 1 || written_ < 0) return;
    Level& l = levels_[0];
    for (std::size_t u = 0; u < l.slab.size(); ++u) {
      if (l.held[u] == 0) continue;
      write_file_atomic(temp_ + "/" + slab_file(written_, static_cast<std::int64_t>(u)),
                        l.slab[u]->data(), slab_file_bytes(written_, static_cast<std::int64_t>(u)));
    }
  }

  std::string slab_file(std::int64_t end, std::int64_t u) const {
    return std::string(kSlabPrefix) + "0-" + std::to_string(end) + "-" + std::to_string(u);
  }

  // The bytes of unit row u's buffer that hold the slab's rows before stacked row `end` (its
  // planes unit rows apart), and those rows.
  std::size_t slab_file_bytes(std::int64_t end, std::int64_t u,
                              std::int64_t* rows = nullptr) const {
    const Level& l = levels_[0];
    const std::int64_t h = l.spec.height, unit = info_.unit(), z = end / h, y = end % h;
    const std::int64_t top = u * unit, n = std::min(top + unit, h) - top;
    const std::int64_t planes = z % l.deep, part = std::clamp<std::int64_t>(y - top, 0, n);
    if (rows) *rows = planes * n + part;
    if (planes * n + part == 0) return 0;
    return static_cast<std::size_t>((part > 0 ? planes * unit + part : (planes - 1) * unit + n)) *
           l.spec.row_bytes();
  }

  // A run resumed inside a slab: its rows before y0, left by the stopped run.
  void load_slab(std::int64_t y0) {
    Level& l = levels_[0];
    if (y0 % (l.deep * l.spec.height) == 0) return;
    for (std::size_t u = 0; u < l.slab.size(); ++u) {
      std::int64_t rows = 0;
      const std::size_t bytes = slab_file_bytes(y0, static_cast<std::int64_t>(u), &rows);
      const SlabAt a = slab_at(l, y0);
      // Made whole in the slab's last plane already.
      if (rows == 0 ||
          (y0 / l.spec.height == a.last &&
           static_cast<std::int64_t>(u) * info_.unit() + info_.unit() <= y0 % l.spec.height))
        continue;
      const std::string path = temp_ + "/" + slab_file(y0, static_cast<std::int64_t>(u));
      const std::string text = read_text(path);
      if (text.size() != bytes)
        throw Error(ErrorKind::input,
                    "cannot resume '" + target_ + "' at row " + std::to_string(y0) + ": '" + path +
                        "' is missing or damaged; remove '" + temp_ + "' and run without --resume");
      l.slab[u] = std::make_shared<std::vector<std::byte>>(l.size);
      std::memcpy(l.slab[u]->data(), text.data(), bytes);
      l.held[u] = rows;
    }
  }

  // A whole chunk row is compressed and written by tasks of its own while the rows of the next
  // bands come in: the write stage of the pipeline does not wait for the codec. At most
  // kInFlight chunk rows of each level are in flight (their buffers count in buffer_bytes()), so
  // a level's chunk row completing beside level 0's does not make the stage wait.
  void write_async(int k, std::int64_t cr, std::shared_ptr<std::vector<std::byte>> full) {
    if (in_flight_[static_cast<std::size_t>(k)] >= kInFlight) drain();
    ++in_flight_[static_cast<std::size_t>(k)];
    done_buffers_.emplace_back(k, full);
    // The tasks go to the arena of the thread that runs this (the engine's, of --threads
    // threads), which may have no thread of its own left when commit() waits from outside it:
    // with --threads 1, a wait outside would never see them run. Waiting inside it runs them.
    if (!arena_) arena_.emplace(tbb::task_arena::attach());
    tasks_->run([this, k, cr, full] {
      // Isolated: a thread waiting inside this task for its parallel loop must not take up a band
      // of the pipeline meanwhile, whose write stage would wait in drain() for this very task,
      // lower on the same stack: the run would hang for good, with every other thread asleep.
      tbb::this_task_arena::isolate([&] { write_unit_row(temp_, info_, k, cr, full->data()); });
    });
  }

  // Waits for the chunk rows in flight; rethrows a task's error.
  void drain() {
    wait_tasks();
    for (auto& [k, b] : done_buffers_) levels_[static_cast<std::size_t>(k)].spare.push_back(b);
    done_buffers_.clear();
    std::fill(in_flight_.begin(), in_flight_.end(), 0);
  }

  void wait_tasks() {
    if (arena_)
      arena_->execute([this] { tasks_->wait(); });
    else
      tasks_->wait();
  }

  // The rows held of a chunk row this writer does not make whole go to an edge file.
  void flush_partial(int k) {
    Level& l = levels_[static_cast<std::size_t>(k)];
    if (l.lo < 0) return;
    const std::size_t rb = l.spec.row_bytes();
    write_file_atomic(
        temp_ + "/" + edge_name(k, l.lo, l.hi),
        l.buf->data() + static_cast<std::size_t>(l.lo % l.spec.height % info_.unit()) * rb,
        static_cast<std::size_t>(l.hi - l.lo) * rb);
    l.lo = l.hi = -1;
  }

  StoreInfo info_;
  std::string target_, temp_;
  OutputMode mode_;
  std::int64_t row_begin_, row_end_;
  std::vector<Level> levels_;
  std::unique_ptr<PyramidBuilder> builder_;
  std::unique_ptr<VolumePyramidBuilder> volume_builder_;
  static constexpr int kInFlight = 2;
  // Behind a pointer: task_group's destructor may throw, a Sink's must not (it is waited first).
  std::unique_ptr<tbb::task_group> tasks_ = std::make_unique<tbb::task_group>();
  std::optional<tbb::task_arena> arena_;  // where tasks_ runs (see write_async)
  std::array<int, 64> in_flight_{};  // chunk rows in flight, by level (buffer_bytes counts them)
  std::vector<std::pair<int, std::shared_ptr<std::vector<std::byte>>>> done_buffers_;
  std::int64_t first_ = -1, written_ = -1;
  int lock_fd_ = -1;
  int threads_ = 0;
  bool created_ = false, done_ = false;
};

}  // namespace

std::unique_ptr<Sink> create_zarr_sink(const std::string& path, const ImageSpec& spec,
                                       const std::string& input_path, const SinkOptions& options) {
  return std::make_unique<ZarrSink>(path, spec, input_path, options);
}

}  // namespace ooc
