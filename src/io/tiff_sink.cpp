// The TIFF sink: striped or tiled, compressed in parallel, appended in order; a range writer's
// blocks for outputs in parts and resumed runs, and keep() for --resume.
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
#include "tiff_ome.hpp"
#include "tiff_sink.hpp"

namespace ooc {
namespace detail {

TiffSink::TiffSink(const std::string& path, const ImageSpec& spec, const std::string& input_path,
                   const SinkOptions& o, bool assemble)
    : path_(path), temp_(temporary_for(path)), settings_(settings_text(spec, o)), mode_(o.mode) {
  plan_.spec = spec;
  plan_.compression = compression_code(o.compress);
  compress_name_ = o.compress;
  predictor_ = resolved_predictor(o, spec.type);
  plan_.predictor = predictor_code(predictor_);
  plan_.metadata = o.metadata;
  nodata_ = gdal_nodata_value(o.metadata.geo.gdal_nodata);  // the levels leave holes out
  cog_ = o.cog;
  if (ome_name(path)) {
    if (cog_)
      throw Error(ErrorKind::usage,
                  "--cog writes a GeoTIFF, and '" + path +
                      "' names an OME-TIFF (whose pyramid is SubIFDs): drop --cog or name the "
                      "output .tif");
    plan_.metadata.description = ome_xml(spec, path, output_voxel(o));
  }
  // A COG without overviews (--cog --levels 0) is valid; the front ends turn a --cog without
  // --levels into -1 (automatic levels).
  levels_count_ = o.pyramid_levels < 0 ? pyramid_auto_levels(spec) : o.pyramid_levels;
  if (levels_count_ > 0) {
    const ImageSpec above = pyramid_level(spec, levels_count_ - 1);
    if (above.width == 1 && above.height == 1)
      throw Error(ErrorKind::usage, "--levels " + std::to_string(levels_count_) +
                                        " is too many for a " + std::to_string(spec.width) + " x " +
                                        std::to_string(spec.height) + " image: level " +
                                        std::to_string(levels_count_ - 1) + " is already 1 x 1");
  }
  // Directories we place ourselves: a pyramid, or a COG (IFDs before the data).
  own_layout_ = levels_count_ > 0 || cog_;
  if (spec.volume() && cog_)
    throw Error(ErrorKind::usage, "--cog writes a 2-D GeoTIFF, and the output is a volume (" +
                                      spec.describe() +
                                      "): drop --cog (--pyramid gives each plane its levels)");
  if (!TIFFIsCODECConfigured(static_cast<std::uint16_t>(plan_.compression)))
    throw Error(ErrorKind::usage,
                "this libtiff cannot write " + o.compress + ": pick another --compress");
  plan_.level = o.level;
  if (o.level != -1) {
    const int top = plan_.compression == COMPRESSION_ADOBE_DEFLATE ? 9
                    : plan_.compression == COMPRESSION_ZSTD        ? 22
                                                                   : 0;
    if (top == 0)
      throw Error(ErrorKind::usage, "--level applies to --compress deflate (1-9) and zstd (1-22)");
    if (o.level < 1 || o.level > top)
      throw Error(ErrorKind::usage, "--level for " + o.compress + " is 1 to " +
                                        std::to_string(top) + ", got " + std::to_string(o.level));
  }
  if (spec.width > 0xffffffffLL || spec.height > 0xffffffffLL)
    throw Error(ErrorKind::usage,
                "a TIFF image is at most 4294967295 pixels on a side; write "
                "raw or .npy instead");
  if (o.tile < 0 || o.tile % 16 != 0)
    throw Error(ErrorKind::usage, "--tile must be a positive multiple of 16 (TIFF's rule), got " +
                                      std::to_string(o.tile));
  // A pyramid is tiled: 512, as GDAL's COG and libvips' pyramids default to.
  const std::int64_t tile = tile_side(o);
  plan_.tiled = tile > 0;
  if (plan_.tiled) {
    plan_.chunk_w = plan_.chunk_h = tile;
  } else {
    plan_.chunk_w = spec.width;
    plan_.chunk_h = strip_rows(spec);
  }
  plan_.across = (spec.width + plan_.chunk_w - 1) / plan_.chunk_w;
  plan_.down = (spec.height + plan_.chunk_h - 1) / plan_.chunk_h;

  // The largest the file could get: LZW can grow incompressible data by half, the others
  // barely; plus the offset tables and the tags.
  const double growth = plan_.compression == COMPRESSION_LZW        ? 1.5
                        : plan_.compression == COMPRESSION_PACKBITS ? 1.01
                        : plan_.compression == COMPRESSION_NONE     ? 1.0
                                                                    : 1.001;
  double blocks = double(plan_.across * plan_.down) * double(spec.depth);
  std::uint64_t padded =
      plan_.chunk_bytes(0) * static_cast<std::uint64_t>(plan_.across * plan_.down * spec.depth);
  // Each level's plan: the same tiles, codec and tags, its own size.
  // An ImageJ description cannot say that there are levels, and readers that trust it (tifffile)
  // would not look for them.
  if (levels_count_ > 0 && plan_.metadata.description.rfind("ImageJ=", 0) == 0)
    plan_.metadata.description.clear();
  levels_.resize(static_cast<std::size_t>(levels_count_) + 1);
  double level_rows_bytes = 0;
  for (int k = 0; k <= levels_count_; ++k) {
    Level& l = levels_[static_cast<std::size_t>(k)];
    l.plan = plan_;
    l.plan.spec = pyramid_level(spec, k);
    // A shape description goes on every level, rewritten to its shape: tifffile reads a
    // shaped series' SubIFDs only when each has one. Other text describes level 0 alone.
    const std::string& d = l.plan.metadata.description;
    if (k > 0 && d.rfind("{\"shape\":", 0) != 0 && d.rfind("shape=(", 0) != 0)
      l.plan.metadata.description.clear();
    l.plan.across = (l.plan.spec.width + l.plan.chunk_w - 1) / l.plan.chunk_w;
    l.plan.down = (l.plan.spec.height + l.plan.chunk_h - 1) / l.plan.chunk_h;
    if (!own_layout_) continue;
    // A volume's levels keep every plane: each page has its own SubIFDs.
    const auto tiles = static_cast<std::size_t>(l.plan.across * l.plan.down * spec.depth);
    l.offsets.assign(tiles, 0);
    l.counts.assign(tiles, 0);
    if (k == 0) continue;
    blocks += double(tiles);
    padded += l.plan.chunk_bytes(0) * tiles;
    // A row of tiles gathered, and the builder's pending row.
    level_rows_bytes +=
        double(l.plan.chunk_h + 2) * double(l.plan.spec.row_bytes()) + 16.0 * double(tiles);
  }
  if (spec.volume() && levels_count_ > 0)
    level_rows_bytes += double(VolumePyramidBuilder::held_bytes(spec, levels_count_, false));
  const double worst = double(plan_.tiled ? padded : spec.total_bytes()) * growth + blocks * 64 +
                       16 * (1 << 20) + double(o.metadata.description.size()) +
                       double(geo_bytes(o.metadata.geo));
  // Memory: the batch of rows gathered for compression (at least one row of blocks), the
  // compressed blocks of one batch, and per thread a block being assembled and the codec's
  // buffers. Checked against --mem-limit before anything is allocated or created.
  const std::size_t limit = o.mem_limit > 0 ? o.mem_limit : default_mem_limit();
  const std::uint64_t threads =
      static_cast<std::uint64_t>(o.threads > 0 ? o.threads : default_threads());
  const bool encoded = plan_.compression != COMPRESSION_NONE || plan_.tiled;
  const double block_row = double(plan_.chunk_bytes(0)) * double(plan_.tiled ? plan_.across : 1);
  const double per_thread = encoded ? 3.0 * double(plan_.chunk_bytes(0)) : 0.0;
  const double kept = encoded ? 1.0 + growth : 1.0;
  const double least = block_row * kept + double(threads) * per_thread + level_rows_bytes * kept;
  if (least > double(limit) / 2) {
    const std::string what = plan_.tiled
                                 ? "--tile " + std::to_string(o.tile) + " makes one row of tiles " +
                                       std::to_string(plan_.chunk_h) + " x " +
                                       std::to_string(plan_.chunk_w * plan_.across) + " pixels"
                                 : "a row of strips of this image";
    throw Error(ErrorKind::usage, what + " (the image is " + std::to_string(spec.width) + " x " +
                                      std::to_string(spec.height) + "), and writing it needs " +
                                      format_bytes(least) + " with " + std::to_string(threads) +
                                      " threads, more than half of --mem-limit " +
                                      format_bytes(double(limit)) +
                                      ": use a smaller --tile or raise --mem-limit");
  }
  const std::int64_t want_rows =
      (4 * static_cast<std::int64_t>(threads) + plan_.across - 1) / plan_.across;
  const double budget = std::max(block_row, std::min(double(kBatchBytes), double(limit) / 8));
  const std::int64_t fit = static_cast<std::int64_t>(budget / block_row);
  batch_rows_ = std::min(plan_.chunk_h * std::max<std::int64_t>(1, std::min(want_rows, fit)),
                         plan_.down * plan_.chunk_h);
  buffer_bytes_ = static_cast<std::size_t>(double(batch_rows_) * double(spec.row_bytes()) * kept +
                                           double(threads) * per_thread + level_rows_bytes * kept);

  if (o.bigtiff == "yes" || o.bigtiff == "auto") {
    bigtiff_ = o.bigtiff == "yes" || worst >= double(kFourGiB);
  } else if (o.bigtiff == "no") {
    if (plan_.compression == COMPRESSION_NONE && worst >= double(kFourGiB))
      throw Error(ErrorKind::usage, "output '" + path +
                                        "' needs more than 4 GiB, past what a classic TIFF "
                                        "holds: use --bigtiff auto or yes");
  } else {
    throw Error(ErrorKind::usage, "--bigtiff takes auto, yes or no, got '" + o.bigtiff + "'");
  }

  install_tiff_handlers();
  if (spec.volume() && own_layout_ && o.mode != OutputMode::fresh)
    throw Error(ErrorKind::usage,
                "TIFF output '" + path + "' is a volume (" + spec.describe() +
                    ") with levels, which are made in one run: parts and --resume are not "
                    "supported for them; drop --pyramid/--levels, or write OME-Zarr");
  if (o.mode != OutputMode::fresh) {
    open_range(o, input_path);
    return;
  }
  file_ =
      std::make_unique<OutputFile>(path, input_path, OutputMode::fresh, 0, 0, false, o.no_locks);
  fd_ = file_->fd();
  // A fresh run replaces what an earlier stopped run of this output kept (it holds the
  // temporary's lock now, and the job refused to start while parts are being made).
  if (!assemble) remove_part_files(temp_);
  if (own_layout_) {
    start_own_layout();
    batch_.resize(static_cast<std::size_t>(batch_rows_) * spec.row_bytes());
    return;
  }
  tif_ = TIFFClientOpen(file_->partial().c_str(), bigtiff_ ? "w8" : "w", this, &TiffSink::read,
                        &TiffSink::write, &TiffSink::seek, &TiffSink::close, &TiffSink::size,
                        nullptr, nullptr);
  if (!tif_) {
    discard();
    throw failure("cannot start TIFF output");
  }
  set_tags(tif_, plan_);
  // In the file only: the encoders' in-memory handles never write a directory.
  write_geo_tags(tif_, plan_.metadata.geo, spec.type);
  batch_.resize(static_cast<std::size_t>(batch_rows_) * spec.row_bytes());
}

void TiffSink::keep() {
  if (plan_.spec.volume() && own_layout_)
    throw Error(ErrorKind::usage, describe() +
                                      " cannot be resumed: a TIFF volume's levels are made in "
                                      "one run (drop --pyramid/--levels, or write OME-Zarr)");
  if (range_) {
    end_range(true);
    kept_path_ = data_path_.empty() ? settings_path(temp_) : data_path_;
    done_ = true;
    return;
  }
  flush_batch(true);
  const std::int64_t blocks_end = done_end_;  // the edge below moves done_end_ past the blocks
  if (batch_end_ > batch_y0_) write_edge(0, batch_y0_, batch_end_, batch_.data());
  for (int k = 1; k <= levels_count_; ++k) flush_partial(k);
  std::vector<IndexRecord> records;
  std::uint64_t end = 0;
  if (own_layout_) {
    end = levels_[0].fd < 0 ? levels_[0].end : header_bytes_;
    for (std::size_t k = 0; k < levels_.size(); ++k) {
      Level& l = levels_[k];
      std::uint64_t base = 0;
      if (l.fd >= 0) {
        copy_spill(static_cast<int>(k), l.end, end);
        base = end;
        end += l.end;
      }
      for (std::size_t i = 0; i < l.counts.size(); ++i)
        if (l.counts[i] > 0)
          records.push_back(
              {kIndexMagic, static_cast<std::uint32_t>(k), i, l.offsets[i] + base, l.counts[i]});
    }
  } else if (plan_.spec.volume()) {
    // Its pages' blocks as emit_block placed them (pages before this one have their directories
    // written, which the blocks file keeps as unused bytes).
    records = written_blocks_;
    end = end_;
    cancelled_ = true;
    TIFFCleanup(tif_);
    tif_ = nullptr;
  } else {
    const std::int64_t rows_done = (blocks_end + plan_.chunk_h - 1) / plan_.chunk_h;
    for (std::int64_t i = 0; i < rows_done * plan_.across; ++i) {
      const auto index = static_cast<std::uint32_t>(i);
      records.push_back({kIndexMagic, 0, static_cast<std::uint64_t>(i),
                         TIFFGetStrileOffset(tif_, index), TIFFGetStrileByteCount(tif_, index)});
    }
    end = end_;
    // No directory: the file is only blocks now.
    cancelled_ = true;
    TIFFCleanup(tif_);
    tif_ = nullptr;
  }
  if (::ftruncate(fd_, static_cast<off_t>(end)) != 0)
    throw Error(ErrorKind::io,
                system_message("cannot keep", file_->partial(), errno) + full_hint(errno));
  claim_settings(temp_, settings_);
  const std::string stem = range_stem(temp_, 0, batch_end_);
  write_file_atomic(stem + kIndexSuffix, records.data(), records.size() * sizeof(IndexRecord));
  fd_ = -1;
  file_->keep();
  if (::rename(file_->partial().c_str(), (stem + kBlocksSuffix).c_str()) != 0)
    throw Error(ErrorKind::io, system_message("cannot keep", file_->partial(), errno));
  kept_path_ = stem + kBlocksSuffix;
  done_ = true;
}

}  // namespace detail

std::unique_ptr<Sink> create_tiff_sink(const std::string& path, const ImageSpec& spec,
                                       const std::string& input_path, const SinkOptions& options) {
  // --nodata as the tag: the parts' settings and their join read it from there.
  return std::make_unique<detail::TiffSink>(path, spec, input_path,
                                            detail::with_nodata_tag(options));
}

}  // namespace ooc
