// The TiffSink's own layouts, where libtiff cannot place the directories: a pyramid's levels as
// SubIFDs of the first page (of every page for a volume), and a Cloud-Optimized GeoTIFF
// (directories first). Spilled tiles are copied into place and the directories written by us at
// commit.
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
#include "tiff_sink.hpp"

namespace ooc::detail {

void TiffSink::start_own_layout() {
  header_bytes_ = bigtiff_ ? 16 : 8;
  std::byte h[16] = {};
  h[0] = h[1] = std::byte{'I'};
  h[2] = std::byte{static_cast<unsigned char>(bigtiff_ ? 43 : 42)};
  if (bigtiff_) h[4] = std::byte{8};
  write_all(fd_, h, header_bytes_, 0, file_->partial());
  for (std::size_t k = 0; k < levels_.size(); ++k) {
    Level& l = levels_[k];
    if (k > 0) l.rows.resize(static_cast<std::size_t>(l.plan.chunk_h) * l.plan.spec.row_bytes());
    if (k == 0 && !cog_) {
      l.end = header_bytes_;
      continue;
    }
    std::string name = file_->partial() + ".level" + std::to_string(k) + ".XXXXXX";
    const int fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0)
      throw Error(ErrorKind::io,
                  system_message("cannot create a spill file for the pyramid", name, errno) +
                      full_hint(errno));
    // Unlinked at once: it goes with the process, however the process ends.
    ::unlink(name.c_str());
    l.fd = fd;
  }
}

void TiffSink::add_level_row(int k, std::int64_t r, const std::byte* row) {
  Level& l = levels_[static_cast<std::size_t>(k)];
  const std::size_t bytes = l.plan.spec.row_bytes();
  // Row r's row of tiles g (numbered across a volume's planes), and its first and end rows.
  const std::int64_t h = l.plan.spec.height, ch = l.plan.chunk_h;
  const auto tile_row = [&](std::int64_t y) { return y / h * l.plan.down + y % h / ch; };
  const std::int64_t g = tile_row(r), top = r / h * h + r % h / ch * ch;
  if (l.lo >= 0 && tile_row(l.lo) != g) flush_partial(k);
  if (l.lo < 0) l.lo = r;
  std::memcpy(l.rows.data() + static_cast<std::size_t>(r - top) * bytes, row, bytes);
  l.hi = r + 1;
  if (l.hi == std::min(top + ch, (r / h + 1) * h)) {
    if (l.lo == top)
      flush({{g, l.rows.data()}}, k);
    else
      flush_partial(k);
    l.lo = l.hi = -1;
  }
}

void TiffSink::put_block(int k, std::uint32_t index, const std::byte* p, std::size_t bytes) {
  Level& l = levels_[static_cast<std::size_t>(k)];
  write_all(l.fd >= 0 ? l.fd : fd_, p, bytes, l.end,
            l.fd >= 0 ? file_->partial() + ".level" + std::to_string(k) : file_->partial());
  l.offsets[index] = l.end;
  l.counts[index] = bytes;
  l.end += bytes;
}

void TiffSink::copy_spill(int k, std::uint64_t len, std::uint64_t at) {
  const int src = levels_[static_cast<std::size_t>(k)].fd;
  const std::string name = file_->partial() + ".level" + std::to_string(k);
  std::uint64_t done = 0;
  bool kernel = true;
  std::vector<std::byte> buf;
  while (done < len) {
    if (kernel) {
      loff_t in = static_cast<loff_t>(done), out = static_cast<loff_t>(at + done);
      const ssize_t n = ::copy_file_range(src, &in, fd_, &out, len - done, 0);
      if (n > 0) {
        done += static_cast<std::uint64_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
        throw Error(ErrorKind::io, system_message("cannot copy the pyramid's tiles into",
                                                  file_->partial(), errno) +
                                       full_hint(errno));
      kernel = false;  // not supported here: read and write instead
      buf.resize(std::size_t{1} << 20);
    }
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), len - done));
    const ssize_t r = ::pread(src, buf.data(), want, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw Error(ErrorKind::io, system_message("cannot read back", name, r < 0 ? errno : EIO));
    write_all(fd_, buf.data(), static_cast<std::size_t>(r), at + done, file_->partial());
    done += static_cast<std::uint64_t>(r);
  }
}

void TiffSink::finish_own_layout() {
  const bool big = bigtiff_;
  const std::size_t count = levels_.size();
  // A volume has a page a plane, each with its own SubIFDs (OME-TIFF's rule); its blocks are
  // numbered across the planes, level by level.
  const auto pages = static_cast<std::size_t>(plan_.spec.depth);
  for (const Level& l : levels_)
    for (const std::uint64_t c : l.counts)
      if (c == 0)
        throw Error(ErrorKind::io, "output '" + path_ + "' is incomplete: rows are missing");
  // Directory tags of level k on the first page and on the others (the description is the
  // first page's alone, as libtiff's pages have it).
  std::vector<std::vector<IfdEntry>> tags(count), later(count);
  for (std::size_t k = 0; k < count; ++k) {
    const GeoTags geo = level_geo(plan_.metadata.geo, static_cast<int>(k));
    tags[k] = directory_tags(levels_[k].plan, geo, big, k > 0);
    if (pages == 1) continue;
    TiffPlan rest = levels_[k].plan;
    rest.metadata.description.clear();
    later[k] = directory_tags(rest, geo, big, k > 0);
  }
  const std::uint16_t offset_type = big ? kTypeLong8 : kTypeLong;
  const auto entries = [&](std::size_t p, std::size_t k, std::uint64_t base,
                           const std::vector<std::uint64_t>& subifds) {
    std::vector<IfdEntry> e = p == 0 ? tags[k] : later[k];
    const std::size_t n = levels_[k].offsets.size() / pages;
    const auto first = static_cast<std::ptrdiff_t>(p * n), last = first + std::ptrdiff_t(n);
    std::vector<std::uint64_t> offsets(levels_[k].offsets.begin() + first,
                                       levels_[k].offsets.begin() + last);
    for (std::uint64_t& o : offsets) o += base;
    e.push_back(array_entry(kTagTileOffsets, offset_type, offsets));
    e.push_back(array_entry(kTagTileByteCounts, offset_type,
                            std::vector<std::uint64_t>(levels_[k].counts.begin() + first,
                                                       levels_[k].counts.begin() + last)));
    if (k == 0 && !cog_ && count > 1)
      e.push_back(array_entry(kTagSubIfds, big ? kTypeIfd8 : kTypeIfd, subifds));
    return e;
  };
  const std::vector<std::uint64_t> none(count - 1, 0);
  // Directory (page p, level k) is number p * count + k.
  std::vector<std::uint64_t> base(count, 0), ifd_at(pages * count, 0), size(pages * count, 0);
  for (std::size_t p = 0; p < pages; ++p)
    for (std::size_t k = 0; k < count; ++k)
      size[p * count + k] = ifd_bytes(entries(p, k, 0, none), big);
  std::string ghost;
  std::uint64_t pos;
  if (cog_) {
    const std::string md =
        "LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\nKNOWN_INCOMPATIBLE_EDITION=NO\n";
    char head[64];
    std::snprintf(head, sizeof head, "GDAL_STRUCTURAL_METADATA_SIZE=%06zu bytes\n", md.size());
    ghost = head + md;
    pos = header_bytes_ + ghost.size();
    pos += pos & 1;
    for (std::size_t k = 0; k < count; ++k) {
      ifd_at[k] = pos;
      pos += size[k];
    }
    for (std::size_t k = count; k-- > 0;) {
      base[k] = pos;
      pos += levels_[k].end;
    }
  } else {
    pos = levels_[0].end;  // level 0's offsets are already the file's
    for (std::size_t k = 1; k < count; ++k) {
      base[k] = pos;
      pos += levels_[k].end;
    }
    pos += pos & 1;
    for (std::size_t d = 0; d < pages * count; ++d) {
      ifd_at[d] = pos;
      pos += size[d];
    }
  }
  if (!big && pos >= kFourGiB)
    throw Error(ErrorKind::io, "output '" + path_ +
                                   "' passed 4 GiB, past what a classic TIFF holds: use "
                                   "--bigtiff auto or yes");
  for (std::size_t k = 0; k < count; ++k)
    if (levels_[k].fd >= 0) copy_spill(static_cast<int>(k), levels_[k].end, base[k]);
  for (std::size_t p = 0; p < pages; ++p) {
    const auto at = ifd_at.begin() + static_cast<std::ptrdiff_t>(p * count);
    const std::vector<std::uint64_t> subifds(at + 1, at + static_cast<std::ptrdiff_t>(count));
    for (std::size_t k = 0; k < count; ++k) {
      // COG: the overviews chain from level 0; pages chain from page to page.
      const std::uint64_t next = cog_ && k + 1 < count              ? ifd_at[k + 1]
                                 : !cog_ && k == 0 && p + 1 < pages ? ifd_at[(p + 1) * count]
                                                                    : 0;
      const std::vector<std::byte> image =
          ifd_image(entries(p, k, base[k], subifds), big, ifd_at[p * count + k], next);
      write_all(fd_, image.data(), image.size(), ifd_at[p * count + k], file_->partial());
    }
  }
  if (!ghost.empty()) write_all(fd_, ghost.data(), ghost.size(), header_bytes_, file_->partial());
  std::byte first[8];
  if (big)
    store(first, ifd_at[0]);
  else
    store(first, static_cast<std::uint32_t>(ifd_at[0]));
  write_all(fd_, first, big ? 8 : 4, big ? 8 : 4, file_->partial());
  for (Level& l : levels_)
    if (l.fd >= 0) {
      ::close(l.fd);
      l.fd = -1;
    }
}

}  // namespace ooc::detail
