// Private to the TIFF writer: the sink that writes a TIFF output (tiff_sink.cpp; its pyramid and
// COG layouts in tiff_layout.cpp), also made by finish_tiff_parts to assemble an output in parts.
#pragma once

#include <tbb/enumerable_thread_specific.h>
#include <tiffio.h>

#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/nodata.hpp"
#include "io/pyramid.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "output_file.hpp"
#include "tiff_common.hpp"
#include "tiff_ifd.hpp"
#include "tiff_parts.hpp"
#include "tiff_parts_files.hpp"

namespace ooc::detail {

class TiffSink final : public Sink {
 public:
  // `assemble`: made by finish_tiff_parts, which hands it the writers' blocks (the writers' files
  // beside the temporary are then its input, not leftovers to clear).
  TiffSink(const std::string& path, const ImageSpec& spec, const std::string& input_path,
           const SinkOptions& o, bool assemble = false);

  ~TiffSink() override {
    discard();
    for (Level& l : levels_)
      if (l.fd >= 0) ::close(l.fd);
    if (data_fd_ >= 0) ::close(data_fd_);
    if (index_fd_ >= 0) ::close(index_fd_);
    // An error ended a resumed single run: what it and the runs before it kept goes with it, as
    // the job's journal does. Parts leave their files to --finish and --resume.
    if (range_ && !done_ && mode_ == OutputMode::resume) remove_part_files(temp_);
  }

  const ImageSpec& spec() const noexcept override { return plan_.spec; }
  std::size_t buffer_bytes() const override { return buffer_bytes_; }
  std::string describe() const override {
    std::string d =
        std::string(bigtiff_ ? "BigTIFF '" : "tiff '") + path_ + "' " + plan_.spec.describe();
    if (cog_)
      d += ", COG with " + std::to_string(levels_count_) + " overviews";
    else if (levels_count_ > 0)
      d += ", " + std::to_string(levels_count_) + " levels as SubIFDs";
    if (plan_.compression != COMPRESSION_NONE)
      d += ", " + compress_name_ + ", predictor " + predictor_;
    return d;
  }
  std::string predictor() const override { return predictor_; }

  // Uncompressed strips are appended straight from the band. Everything else is gathered, whole
  // rows of blocks at a time, in batch_, and compressed a batch at a time: a band may hold only a
  // block or two, and one batch keeps every core busy whatever the band height.
  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                  std::size_t stride) override {
    const std::size_t row = plan_.spec.row_bytes();
    if (range_) {
      write_range_rows(y0, n, data, stride);
      return;
    }
    if (own_layout_) {
      gather(n, data, stride);
      if (levels_count_ > 0 && plan_.spec.volume()) {
        // Each plane's levels, its stacked rows in order from the first.
        if (!volume_builder_)
          volume_builder_ = std::make_unique<VolumePyramidBuilder>(
              plan_.spec, levels_count_, false,
              [this](int k, std::int64_t r, const std::byte* p) { add_level_row(k, r, p); });
        volume_builder_->push(y0, n, data, stride);
      } else if (levels_count_ > 0) {
        if (!builder_) {
          builder_ = std::make_unique<PyramidBuilder>(
              plan_.spec, levels_count_, 0, plan_.spec.height,
              [this](int k, std::int64_t r, const std::byte* p) { add_level_row(k, r, p); });
          builder_->set_nodata(nodata_);
        }
        builder_->push(y0, n, data, stride);
      }
      return;
    }
    if (plan_.compression == COMPRESSION_NONE && !plan_.tiled && stride == row) {
      std::vector<std::pair<std::int64_t, const std::byte*>> ready;
      for (std::int64_t y = y0; y < y0 + n;) {
        const std::int64_t cy = block_of(y), top = block_top(cy);
        const std::int64_t rows = block_bottom(cy) - top;
        const std::int64_t take = std::min(top + rows - y, y0 + n - y);
        if (y == top && take == rows) {
          ready.emplace_back(cy, data + (y - y0) * stride);
        } else {
          // A strip split between bands: in order, after the strips before it.
          flush(ready);
          ready.clear();
          // Strips before it went straight to the file: the batch restarts at this strip.
          if (batch_end_ == batch_y0_) batch_y0_ = batch_end_ = top;
          gather(take, data + (y - y0) * stride, stride);
          flush_batch(true);
        }
        y += take;
      }
      flush(ready);
      return;
    }
    gather(n, data, stride);
  }

  void commit() override {
    if (range_) {
      end_range(false);
      // A resumed single run puts the output in place itself; parts leave that to --finish.
      if (mode_ == OutputMode::resume) finish_tiff_parts(path_, temp_);
      done_ = true;
      return;
    }
    flush_batch(true);
    if (own_layout_) {
      finish_own_layout();
      fd_ = -1;
      file_->commit();
      return;
    }
    if (!TIFFWriteDirectory(tif_)) throw failure("cannot finish output '" + path_ + "'");
    TIFFClose(tif_);
    tif_ = nullptr;
    // Trailing holes exist only in our bookkeeping until the file is given its full length.
    if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0)
      throw Error(ErrorKind::io, system_message("cannot finish output", file_->partial(), errno) +
                                     full_hint(errno));
    fd_ = -1;
    file_->commit();
  }

  // A stop for --resume. A writer of a range (a part, a resumed run) has its blocks in its own
  // files already; a single run's output turns into such files: its blocks stay where they are
  // (the temporary is renamed to a blocks file, the pyramid's spilled tiles appended to it) and
  // an index says where each lies. Rows of unfinished rows of blocks go to edge files.
  void keep() override;
  std::string kept_path() const override { return kept_path_; }

  // A volume's rows of blocks, plane after plane (a 2-D image: plan_.down of them): row of blocks
  // g is row g % down of plane g / down, whose page holds it. Rows of pyramid levels are by level.
  std::int64_t block_top(std::int64_t g) const {
    return g / plan_.down * plan_.spec.height + g % plan_.down * plan_.chunk_h;
  }
  std::int64_t block_bottom(std::int64_t g) const {
    return std::min(block_top(g) + plan_.chunk_h, (g / plan_.down + 1) * plan_.spec.height);
  }
  std::int64_t block_of(std::int64_t y) const {
    return y / plan_.spec.height * plan_.down + y % plan_.spec.height / plan_.chunk_h;
  }

  std::int64_t durable_end(std::int64_t first, std::int64_t written_end) const override {
    (void)written_end;
    // A single run's blocks have no index until keep(); a pyramid's level rows are not tracked
    // level by level (as for Zarr): a rerun after a kill redoes the range.
    if (!range_ || levels_count_ > 0) return first;
    return std::max(first, done_end_.load());
  }

  // For finish_tiff_parts: the levels' layouts, the codec, and the file's way of taking blocks.
  int level_count() const noexcept { return levels_count_; }
  // The GDAL_NODATA value the file records, which the levels' means leave out (none: no tag).
  std::optional<double> nodata() const noexcept { return nodata_; }
  const TiffPlan& level_plan(int k) const {
    return k == 0 ? plan_ : levels_[static_cast<std::size_t>(k)].plan;
  }
  std::vector<std::vector<std::byte>> encode_row(int level, std::int64_t cy,
                                                 const std::byte* rows) {
    const TiffPlan& plan = level_plan(level);
    std::vector<std::vector<std::byte>> out(static_cast<std::size_t>(plan.across));
    tbb::parallel_for(std::int64_t{0}, plan.across, [&](std::int64_t cx) {
      encode(plan, cy, cx, rows, out[static_cast<std::size_t>(cx)]);
    });
    return out;
  }
  // Block `index` of `level`, compressed, appended as a single run appends it.
  void emit_block(int level, std::uint32_t index, const std::byte* p, std::size_t bytes) {
    if (own_layout_) {
      put_block(level, index, p, bytes);
      return;
    }
    // A volume's blocks are numbered across its pages: block `index` is on page index / per.
    const std::uint32_t per = static_cast<std::uint32_t>(plan_.across * plan_.down);
    const std::uint32_t local = plan_.spec.volume() ? index % per : index;
    if (plan_.spec.volume()) start_page(index / per);
    const tmsize_t w = plan_.tiled ? TIFFWriteRawTile(tif_, local, const_cast<std::byte*>(p),
                                                      static_cast<tmsize_t>(bytes))
                                   : TIFFWriteRawStrip(tif_, local, const_cast<std::byte*>(p),
                                                       static_cast<tmsize_t>(bytes));
    if (w < 0) throw failure("cannot write output '" + path_ + "'");
    // Where each block of a volume went, for keep(): libtiff knows only the current page's.
    if (plan_.spec.volume())
      written_blocks_.push_back({kIndexMagic, 0, index, TIFFGetStrileOffset(tif_, local),
                                 TIFFGetStrileByteCount(tif_, local)});
  }

 private:
  // A writer of rows [row_begin, row_end) of an output made in parts, or of the rows a resumed
  // run has left: its blocks go to files of its own (TEMP.rows-A-B.tiff-blocks and -index).
  void open_range(const SinkOptions& o, const std::string& input_path) {
    range_ = true;
    row_begin_ = o.row_begin;
    row_end_ = o.row_end > 0 ? o.row_end : plan_.spec.stacked_rows();
    struct stat in {
    }, out{};
    if (!input_path.empty() && ::stat(input_path.c_str(), &in) == 0 &&
        ::stat(path_.c_str(), &out) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw Error(ErrorKind::usage, "output '" + path_ + "' is the input: name another output");
    claim_settings(temp_, settings_);
    batch_.resize(static_cast<std::size_t>(batch_rows_) * plan_.spec.row_bytes());
    for (Level& l : levels_)
      l.rows.resize(static_cast<std::size_t>(l.plan.chunk_h) * l.plan.spec.row_bytes());
    if (row_begin_ >= row_end_) return;  // nothing left to write: a resumed run only assembles
    const std::string stem = range_stem(temp_, row_begin_, row_end_);
    data_path_ = stem + kBlocksSuffix;
    index_path_ = stem + kIndexSuffix;
    data_fd_ = ::open(data_path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (data_fd_ < 0)
      throw Error(ErrorKind::io,
                  system_message("cannot create", data_path_, errno) + full_hint(errno));
    if (!ooc::try_lock(data_fd_, data_path_, o.no_locks)) {
      const pid_t pid = lock_holder(data_fd_);
      throw Error(ErrorKind::io, "rows " + std::to_string(row_begin_) + ":" +
                                     std::to_string(row_end_) + " of output '" + path_ +
                                     "' are being written by another process" +
                                     (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "") +
                                     ": wait for it to end, or write elsewhere");
    }
    // Its index first: a record never outlives the bytes it names.
    index_fd_ =
        ::open(index_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (index_fd_ < 0 || ::ftruncate(data_fd_, 0) != 0)
      throw Error(ErrorKind::io,
                  system_message("cannot create", index_path_, errno) + full_hint(errno));
  }

  // Rows of a range writer: rows before its first block boundary (a resumed run that starts
  // inside a row of blocks) are gathered as an edge; then whole rows of blocks, batched.
  void write_range_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                        std::size_t stride) {
    if (!started_) {
      started_ = true;
      // The first row of blocks that starts at or after y0 (a volume's are in its planes).
      const std::int64_t g = block_of(y0);
      head_end_ = block_top(g) == y0 ? y0 : block_bottom(g);
      batch_y0_ = batch_end_ = head_end_;
      done_end_ = y0;
      if (levels_count_ > 0) {
        builder_ = std::make_unique<PyramidBuilder>(
            plan_.spec, levels_count_, y0, row_end_,
            [this](int k, std::int64_t r, const std::byte* p) { add_level_row(k, r, p); });
        builder_->set_nodata(nodata_);
      }
    }
    std::int64_t i = 0;
    for (; i < n && y0 + i < head_end_; ++i)
      add_level_row(0, y0 + i, data + static_cast<std::size_t>(i) * stride);
    if (i < n) gather(n - i, data + static_cast<std::size_t>(i) * stride, stride);
    if (builder_) builder_->push(y0, n, data, stride);
  }

  // The end of a range writer's rows (commit) or a stop (keep): whole rows of blocks are
  // written, the rest kept as edges.
  void end_range(bool stop) {
    flush_batch(true);
    if (batch_end_ > batch_y0_) {
      write_edge(0, batch_y0_, batch_end_, batch_.data());
      batch_y0_ = batch_end_;
    }
    for (int k = 0; k <= levels_count_; ++k) flush_partial(k);
    for (int* fd : {&data_fd_, &index_fd_}) {
      if (*fd < 0) continue;
      const int rc = stop ? ::fsync(*fd) : 0;
      const int err = errno;
      ::close(*fd);
      *fd = -1;
      if (rc != 0) throw Error(ErrorKind::io, system_message("cannot flush", data_path_, err));
    }
  }

  void write_edge(int k, std::int64_t lo, std::int64_t hi, const std::byte* rows) {
    const std::size_t rb = level_plan(k).spec.row_bytes();
    write_file_atomic(edge_path(temp_, k, lo, hi), rows, static_cast<std::size_t>(hi - lo) * rb);
    if (k == 0) done_end_ = std::max(done_end_.load(), hi);
  }

  // The rows held of a row of blocks of level k that this writer does not make whole.
  void flush_partial(int k) {
    Level& l = levels_[static_cast<std::size_t>(k)];
    if (l.lo < 0) return;
    const std::size_t rb = l.plan.spec.row_bytes();
    const auto at = static_cast<std::size_t>(l.lo % l.plan.spec.height % l.plan.chunk_h);
    write_edge(k, l.lo, l.hi, l.rows.data() + at * rb);
    l.lo = l.hi = -1;
  }

  // Appends a compressed block to this writer's blocks file; its index record follows in
  // put_records once the blocks of a flush are written.
  void put_part_block(int level, std::uint32_t index, const std::byte* p, std::size_t bytes) {
    write_all(data_fd_, p, bytes, data_end_, data_path_);
    records_.push_back({kIndexMagic, static_cast<std::uint32_t>(level), index, data_end_, bytes});
    data_end_ += bytes;
  }

  void put_records() {
    if (records_.empty()) return;
    const std::size_t bytes = records_.size() * sizeof(IndexRecord);
    write_all(index_fd_, records_.data(), bytes, index_end_, index_path_);
    index_end_ += bytes;
    records_.clear();
  }

  // Appends the next n rows to batch_, compressing each batch as it fills.
  void gather(std::int64_t n, const std::byte* data, std::size_t stride) {
    const std::size_t row = plan_.spec.row_bytes();
    for (std::int64_t r = 0; r < n;) {
      const std::int64_t room = batch_rows_ - (batch_end_ - batch_y0_);
      const std::int64_t take = std::min(room, n - r);
      for (std::int64_t k = 0; k < take; ++k)
        std::memcpy(batch_.data() + (batch_end_ - batch_y0_ + k) * row, data + (r + k) * stride,
                    row);
      batch_end_ += take;
      r += take;
      flush_batch(false);
    }
  }

  // Compresses and appends the complete rows of blocks in batch_ once it is full (or, with
  // `now`, at once); rows of an unfinished row of blocks move to its front.
  void flush_batch(bool now) {
    const std::int64_t held = batch_end_ - batch_y0_;
    if (held == 0 || (!now && held < batch_rows_ && batch_end_ < plan_.spec.stacked_rows())) return;
    const std::size_t row = plan_.spec.row_bytes();
    std::vector<std::pair<std::int64_t, const std::byte*>> rows;
    std::int64_t done = batch_y0_;
    for (std::int64_t cy = block_of(batch_y0_);; ++cy) {
      const std::int64_t top = block_top(cy);
      const std::int64_t bottom = block_bottom(cy);
      if (top >= batch_end_ || bottom > batch_end_) break;
      rows.emplace_back(cy, batch_.data() + (top - batch_y0_) * row);
      done = bottom;
    }
    flush(rows);
    const std::int64_t left = batch_end_ - done;
    if (left > 0)
      std::memmove(batch_.data(), batch_.data() + (done - batch_y0_) * row,
                   static_cast<std::size_t>(left) * row);
    batch_y0_ = done;
  }

  // Encodes the chunks of the given chunk rows of level `level` in parallel, then appends them in
  // order. A volume's rows of blocks (level 0) go to their plane's page, started as they come.
  void flush(const std::vector<std::pair<std::int64_t, const std::byte*>>& rows, int level = 0) {
    if (rows.empty()) return;
    const TiffPlan& plan = level == 0 ? plan_ : levels_[static_cast<std::size_t>(level)].plan;
    const std::int64_t per_row = plan.across;
    const std::int64_t count = static_cast<std::int64_t>(rows.size()) * per_row;
    const bool raw_strips = plan.compression == COMPRESSION_NONE && !plan.tiled;
    // Kept from flush to flush (flushes are never concurrent: the write stage and the pyramid's
    // emits run in order): each block's buffer keeps its capacity, so the encoder appends into
    // pages already there instead of growing fresh ones a tile at a time.
    std::vector<std::vector<std::byte>>& blocks = blocks_;
    if (!raw_strips && blocks.size() < static_cast<std::size_t>(count))
      blocks.resize(static_cast<std::size_t>(count));
    if (!raw_strips)
      tbb::parallel_for(std::int64_t{0}, count, [&](std::int64_t k) {
        const auto& [cy, src] = rows[k / per_row];
        encode(plan, cy % plan.down, k % per_row, src, blocks[k]);
      });
    for (std::int64_t k = 0; k < count; ++k) {
      const auto& [g, src] = rows[k / per_row];
      const std::int64_t cy = g % plan.down;
      // A volume's blocks are numbered across its pages (emit_block finds the page).
      const auto index = static_cast<std::uint32_t>(g * plan.across + k % per_row);
      const std::byte* p = raw_strips ? src : blocks[k].data();
      const std::size_t bytes = raw_strips ? plan.chunk_bytes(cy) : blocks[k].size();
      if (range_)
        put_part_block(level, index, p, bytes);
      else
        emit_block(level, index, p, bytes);
    }
    if (range_) put_records();
    if (level == 0) done_end_ = std::max(done_end_.load(), block_bottom(rows.back().first));
  }

  // A volume's pages up to plane z's: each page before it is finished (its directory written)
  // and the next one started with the same layout and tags, the description on the first only.
  void start_page(std::int64_t z) {
    for (; page_ < z; ++page_) {
      if (!TIFFWriteDirectory(tif_))
        throw failure("cannot finish a page of output '" + path_ + "'");
      TiffPlan next = plan_;
      next.metadata.description.clear();
      set_tags(tif_, next);
    }
  }

  // Block cx of chunk row cy (image rows at src) into `out`: gathered into a whole block (tiles
  // padded with zeros at the edges), then compressed unless the output is uncompressed.
  void encode(const TiffPlan& plan, std::int64_t cy, std::int64_t cx, const std::byte* src,
              std::vector<std::byte>& out) {
    const std::size_t row = plan.spec.row_bytes(), pixel = plan.spec.pixel_bytes();
    const std::size_t bytes = plan.chunk_bytes(cy);
    thread_local std::vector<std::byte> block;
    std::byte* b;
    if (plan.tiled) {
      const std::int64_t x0 = cx * plan.chunk_w;
      const std::int64_t w = std::min(plan.chunk_w, plan.spec.width - x0);
      const std::int64_t h = std::min(plan.chunk_h, plan.spec.height - cy * plan.chunk_h);
      if (w == plan.chunk_w && h == plan.chunk_h)
        block.resize(bytes);  // every byte copied below
      else
        block.assign(bytes, std::byte{0});  // padded with zeros past the image's edge
      for (std::int64_t r = 0; r < h; ++r)
        std::memcpy(block.data() + r * plan.chunk_row_bytes(), src + r * row + x0 * pixel,
                    static_cast<std::size_t>(w) * pixel);
      b = block.data();
    } else {
      // The codec's predictor works in place: compress a copy, not the caller's rows.
      block.assign(src, src + bytes);
      b = block.data();
    }
    if (plan.compression == COMPRESSION_NONE) {
      out.assign(b, b + bytes);
      return;
    }
    // One encoder per thread for every level (a codec's state can take megabytes: zstd's): a
    // level's tiles have level 0's size and codec, and its indices are within level 0's.
    auto& encoder = encoders_.local();
    if (!encoder) encoder = std::make_unique<Encoder>(plan_);
    const auto index = static_cast<std::uint32_t>(cy * plan.across + cx);
    encoder->encode(plan.tiled, index, b, bytes, out);
  }

  // The header (its first directory's offset filled in at commit) and a spill file for each level
  // whose tiles cannot go straight to their place: every level of a COG (overviews come first),
  // the levels below the first page of a SubIFD pyramid.
  void start_own_layout();

  // Row r of level k from the pyramid builder (a volume's: stacked, plane after plane): a
  // complete row of tiles is compressed at once. A writer whose rows of level k begin inside a
  // row of tiles keeps that row's rows as an edge.
  void add_level_row(int k, std::int64_t r, const std::byte* row);

  void put_block(int k, std::uint32_t index, const std::byte* p, std::size_t bytes);

  // Copies a spill file's `len` bytes to offset `at` of the output, in the kernel where it can.
  void copy_spill(int k, std::uint64_t len, std::uint64_t at);

  // Places the spilled tiles and writes every directory. SubIFD pyramid: header, level 0's
  // tiles (already there), the levels' tiles, then the first page's directory and its SubIFDs.
  // COG: header, GDAL's structural metadata, every directory (level 0, then overviews from the
  // largest), then the tiles of the smallest overview first and level 0's last.
  void finish_own_layout();

  Error failure(const std::string& what) {
    if (io_errno_ != 0) {
      return Error(ErrorKind::io, system_message(what.c_str(), file_->partial(), io_errno_) +
                                      full_hint(io_errno_));
    }
    std::string why = take_tiff_error();
    if (why.find("Maximum TIFF file size exceeded") != std::string::npos)
      return Error(ErrorKind::io, "output '" + path_ +
                                      "' passed 4 GiB, past what a classic TIFF holds: use "
                                      "--bigtiff auto or yes");
    return Error(ErrorKind::io, what + ": " + why);
  }

  // I/O callbacks: positioned reads and writes on fd_, with the errno kept for the message.
  static tmsize_t read(thandle_t h, void* p, tmsize_t n) {
    auto* s = static_cast<TiffSink*>(h);
    const ssize_t r = ::pread(s->fd_, p, static_cast<std::size_t>(n), static_cast<off_t>(s->pos_));
    if (r < 0) return -1;
    s->pos_ += static_cast<std::uint64_t>(r);
    return r;
  }
  static tmsize_t write(thandle_t h, void* p, tmsize_t n) {
    auto* s = static_cast<TiffSink*>(h);
    if (s->cancelled_) return -1;
    const auto* b = static_cast<const std::byte*>(p);
    const auto len = static_cast<std::size_t>(n);
    // A zero block appended past everything written is left as a hole: it reads back as zeros.
    const bool hole = s->pos_ >= s->written_ && len >= 4096 && b[0] == std::byte{0} &&
                      std::memcmp(b, b + 1, len - 1) == 0;
    if (!hole) {
      std::size_t done = 0;
      while (done < len) {
        const ssize_t w =
            ::pwrite(s->fd_, b + done, len - done, static_cast<off_t>(s->pos_ + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          s->io_errno_ = w < 0 ? errno : ENOSPC;
          return -1;
        }
        done += static_cast<std::size_t>(w);
      }
      s->written_ = std::max(s->written_, s->pos_ + len);
    }
    s->pos_ += len;
    s->end_ = std::max(s->end_, s->pos_);
    return n;
  }
  static toff_t seek(thandle_t h, toff_t off, int whence) {
    auto* s = static_cast<TiffSink*>(h);
    s->pos_ = whence == SEEK_SET ? off : whence == SEEK_CUR ? s->pos_ + off : s->end_ + off;
    return s->pos_;
  }
  static int close(thandle_t) { return 0; }
  static toff_t size(thandle_t h) { return static_cast<TiffSink*>(h)->end_; }

  void discard() noexcept {
    if (tif_) {
      // Cleaning up flushes a directory: make every write fail, so nothing reaches the file.
      cancelled_ = true;
      TIFFCleanup(tif_);
      tif_ = nullptr;
    }
    fd_ = -1;
    if (file_) file_->discard();
  }

  std::string path_;
  std::unique_ptr<OutputFile> file_;
  TiffPlan plan_;
  bool bigtiff_ = false;
  int fd_ = -1;
  TIFF* tif_ = nullptr;
  std::uint64_t pos_ = 0, end_ = 0, written_ = 0;
  int io_errno_ = 0;
  bool cancelled_ = false;
  std::vector<std::byte> batch_;  // rows [batch_y0_, batch_end_) waiting to be compressed
  std::int64_t batch_rows_ = 0, batch_y0_ = 0, batch_end_ = 0;
  std::size_t buffer_bytes_ = 0;
  tbb::enumerable_thread_specific<std::unique_ptr<Encoder>> encoders_;
  std::vector<std::vector<std::byte>> blocks_;  // flush()'s encoded blocks, reused

  // A level of a pyramid (level 0 too, for its tile offsets): where its compressed tiles went.
  struct Level {
    TiffPlan plan;
    std::vector<std::byte> rows;    // the row of tiles being gathered (levels 1..)
    std::int64_t lo = -1, hi = -1;  // the rows of it held
    int fd = -1;                    // its spill file; -1: the output itself
    std::uint64_t end = 0;          // bytes written to the spill file (or the output's end)
    std::vector<std::uint64_t> offsets, counts;
  };
  bool cog_ = false, own_layout_ = false;
  std::int64_t page_ = 0;                  // a volume's page being written
  std::string compress_name_, predictor_;  // --compress, and the predictor it runs with
  std::string kept_path_;                  // keep()'s blocks file
  std::size_t header_bytes_ = 8;
  int levels_count_ = 0;
  std::vector<Level> levels_;
  std::unique_ptr<PyramidBuilder> builder_;
  std::unique_ptr<VolumePyramidBuilder> volume_builder_;
  std::optional<double> nodata_;

  // Outputs in parts and resumed runs (see tiff_parts.hpp).
  std::string temp_, settings_;
  OutputMode mode_ = OutputMode::fresh;
  bool range_ = false, started_ = false, done_ = false;
  std::int64_t row_begin_ = 0, row_end_ = 0, head_end_ = 0;
  // Level 0's rows whose blocks (or edge) are written: the journal's durable row. Read by the
  // progress callback, written by the write stage.
  std::atomic<std::int64_t> done_end_{0};
  std::string data_path_, index_path_;
  int data_fd_ = -1, index_fd_ = -1;
  std::uint64_t data_end_ = 0, index_end_ = 0;
  std::vector<IndexRecord> records_;
  std::vector<IndexRecord> written_blocks_;  // a single run's volume: every block written
};

}  // namespace ooc::detail
