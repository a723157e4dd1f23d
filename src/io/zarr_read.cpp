// Reading Zarr v2 and v3 arrays and OME-Zarr groups band by band, (y, x), (y, x, c) or (c, y, x),
// and volumes (z, y, x), (c, z, y, x) or (z, y, x, c). A band asks for image rows (a volume's
// stacked rows, z x height + y); the rows of chunks that cover them are decoded in parallel (one
// TBB task per chunk) into the band's buffer, or, where a row of chunks reaches past the band (the
// next band's halo will want it again), into the decoded-chunk cache (chunk_cache.hpp), so that
// consecutive bands never decode one twice. A chunk of several planes is decoded whole into the
// cache (a slab: its planes' rows of that row of chunks), and the slabs of a plane of chunks are
// held (pinned) for the planes after the first that read them again, as many as the budget the
// job gives holds (prefetch: a quarter of --mem-limit), the top rows first. Where all fit, every
// chunk is decoded once; where only P of a plane's R rows of slabs do, the other rows' chunks are
// decoded once per plane they hold (the bands walk each plane's rows in order, so that a cache
// of the most recent would keep none the next plane reads first: the pins keep P of them).
// The store and its chunk files: zarr_store.hpp.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "formats.hpp"
#include "io/chunk_cache.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "ooc/limits.hpp"
#include "zarr_store.hpp"

namespace ooc {
namespace {

using zarr_read::fail;
using zarr_read::list_text;
using zarr_read::Store;

// A decoded chunk is held whole by the thread decoding it (and blosc stops at 2 GiB).
constexpr std::uint64_t kMaxChunkBytes = 2ull << 30;
// A row of chunks is decoded whole; several may be held at once.
constexpr std::uint64_t kMaxChunkRowBytes = 2ull << 30;
// Rows of chunks kept for the next band's halo, at most (and at least two).
constexpr std::uint64_t kCacheBytes = 16u << 20;
constexpr std::int64_t kMaxCachedRows = 1024;

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
    case SampleType::u64:
      return integer(std::uint64_t{});
  }
}

class ZarrSource final : public Source {
 public:
  ZarrSource(Store store, unsigned threads)
      : s_(std::move(store)), threads_(threads), cache_(s_.spec.row_bytes()) {
    const auto& m = s_.meta;
    const int y = m.y_axis;
    const std::string where = "Zarr array '" + s_.array_dir + "'";
    ch_ = m.chunks[y];
    cw_ = m.chunks[y + 1];
    cc_ = m.c_axis >= 0 ? m.chunks[static_cast<std::size_t>(m.c_axis)] : 1;
    dz_ = m.z_axis >= 0 ? m.chunks[static_cast<std::size_t>(m.z_axis)] : 1;
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
    zchunks_ = (s_.spec.depth + dz_ - 1) / dz_;
    // From one plane to the next in a chunk: the rows of a plane (and their channels, last).
    zstep_ = planar_ ? ch_ * cw_ : ch_ * cw_ * cc_;
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
      fail(where + " has chunks " + (dz_ > 1 ? std::to_string(dz_) + " planes deep and " : "") +
           std::to_string(ch_) + " rows high over an image " + std::to_string(s_.spec.width) +
           " wide: " + std::to_string(crow >> 20) +
           " MiB per row of chunks, too many to decode in bounded memory; rechunk it");
    keep_ = std::clamp<std::int64_t>(static_cast<std::int64_t>(kCacheBytes / crow), 2,
                                     std::max<std::int64_t>(1, std::min(down_, kMaxCachedRows)));
    if (dz_ > 1) keep_ = 1;  // the band's neighbour; pins (set by prefetch) keep the rest
    fill_.resize(sample_bytes(m.type));
    if (m.fill) fill_sample(m.type, *m.fill, m.fill_json, fill_.data(), where);
    const bool several = s_.spec.channels > 1 || cc_ > 1;
    std::string layout = std::string(m.version == 3 ? "zarr v3" : "zarr v2") + ", chunks " +
                         (several && planar_ ? std::to_string(cc_) + " x " : "") +
                         (m.z_axis >= 0 ? std::to_string(dz_) + " x " : "") + std::to_string(ch_) +
                         " x " + std::to_string(cw_) +
                         (several && !planar_ ? " x " + std::to_string(cc_) : "");
    if (several && planar_) layout += " (channels first)";
    if (!m.shard.empty())
      layout += " in shards of " +
                (m.z_axis >= 0 ? std::to_string(m.shard[static_cast<std::size_t>(m.z_axis)]) + " x "
                               : "") +
                std::to_string(m.shard[y]) + " x " + std::to_string(m.shard[y + 1]);
    layout += " (" + std::to_string(across_ * down_ * kchunks_ * zchunks_) + "), " +
              zarr_read::codec_name(m.codec);
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
    metadata_.voxel = s_.voxel;
  }

  const ImageSpec& spec() const noexcept override { return s_.spec; }
  const Metadata& metadata() const noexcept override { return metadata_; }

  // Slabs: the rows of them `max_bytes` holds are pinned (before the job plans its bands, which
  // count what buffer_bytes then says).
  void prefetch(std::int64_t /*y0*/, std::size_t max_bytes) override {
    if (dz_ > 1)
      pin_rows_ = std::min<std::int64_t>(
          down_,
          static_cast<std::int64_t>(max_bytes / std::max<std::uint64_t>(chunk_row_bytes(0), 1)));
  }
  std::string describe() const override { return "zarr '" + s_.path + "' " + s_.spec.describe(); }
  std::string layout() const override { return layout_; }
  bool parallel_reads() const override { return false; }

  // The rows of chunks kept for the next band, those each reader adds while it reads (as many,
  // and the first, partly above its band), and per thread a decoded and a stored chunk. Slabs:
  // those kept, and those of each reader's band.
  std::size_t buffer_bytes(std::int64_t band_rows, int readers) const override {
    if (dz_ > 1) {
      const std::uint64_t band =
          std::uint64_t((std::max<std::int64_t>(band_rows, 1) + ch_ - 1) / ch_ + 1);
      const std::uint64_t rows =
          pin_rows_ + keep_ +
          std::uint64_t(std::max(readers, 1)) * std::min<std::uint64_t>(down_, band);
      return static_cast<std::size_t>(rows * chunk_row_bytes(0) +
                                      std::uint64_t(threads_) * 2 * chunk_bytes_);
    }
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

  // Stacked rows: each plane's part apart (the engine's bands never cross planes).
  void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) override {
    const std::int64_t h = s_.spec.height;
    while (n > 0) {
      const std::int64_t z = y0 / h, y = y0 % h, m = std::min(n, h - y);
      read_plane(z, y, m, dst);
      dst += static_cast<std::size_t>(m) * s_.spec.row_bytes();
      y0 += m;
      n -= m;
    }
  }

 private:
  // Rows [y0, y0 + n) of plane z. Rows of chunks wholly inside the request and not under the next
  // band's halo decode straight into dst; the others go through the cache (or come from it), as
  // slabs do always. A row of chunks another reader is decoding is waited for, not decoded twice.
  void read_plane(std::int64_t z, std::int64_t y0, std::int64_t n, std::byte* dst) {
    const std::size_t row = s_.spec.row_bytes();
    const bool slab = dz_ > 1;
    const std::int64_t cz = z / dz_, base = z * s_.spec.height;
    const std::int64_t cy0 = y0 / ch_, cy1 = (y0 + n - 1) / ch_;
    std::int64_t tail = 0;
    if (!slab) {
      std::lock_guard lock(mutex_);
      // The rows the previous request reached past this one's start are the halo consecutive
      // bands share: the rows of chunks under it are the ones worth keeping (before the second
      // request shows it, up to keep_ of them).
      const std::int64_t ys = base + y0;
      if (ys > last_y0_ && ys < last_end_)
        tail_ = std::max(tail_, std::min(keep_, (last_end_ - ys + ch_ - 1) / ch_ + 1));
      last_y0_ = ys;
      last_end_ = ys + n;
      tail = tail_ > 0 ? tail_ : keep_;
    }
    std::vector<ChunkCache::Ptr> mine;  // the rows of chunks this call decodes
    std::vector<ChunkCache::Ptr> used;  // the cached ones it copies from
    for (std::int64_t cy = cy0; cy <= cy1; ++cy) {
      if (slab) {
        std::lock_guard lock(mutex_);
        if (const auto it = pinned_.find(cz * down_ + cy); it != pinned_.end()) {
          used.push_back(it->second);
          continue;
        }
      }
      const std::int64_t top = cy * ch_, bottom = top + rows_in(cy);
      const bool inside = !slab && top >= y0 && bottom <= y0 + n && cy <= cy1 - tail;
      auto [e, fresh] =
          cache_.claim(cz * down_ + cy, slab ? -1 : base + top, planes_in(cz) * rows_in(cy), 1,
                       inside ? dst + static_cast<std::size_t>(top - y0) * row : nullptr);
      if (fresh) mine.push_back(e);
      if (!e->direct) used.push_back(std::move(e));
    }
    std::exception_ptr error;
    try {
      const std::int64_t per_row = across_ * kchunks_;
      const std::int64_t tasks = static_cast<std::int64_t>(mine.size()) * per_row;
      // Isolated: a thread waiting here for its tasks must not pick up another band's read,
      // which could wait for a row of chunks this very call is decoding.
      tbb::this_task_arena::isolate([&] {
        tbb::parallel_for(
            tbb::blocked_range<std::int64_t>(0, tasks, 1),
            [&](const tbb::blocked_range<std::int64_t>& r) {
              for (std::int64_t t = r.begin(); t < r.end(); ++t) {
                const ChunkCache::Entry& g = *mine[static_cast<std::size_t>(t / per_row)];
                const std::int64_t k = t % per_row;
                decode_chunk(g.key / down_, g.key % down_, k % across_, k / across_, g.rows);
              }
            });
      });
    } catch (...) {
      error = std::current_exception();
    }
    for (const auto& e : mine) cache_.done(e, 1, error);
    mine.clear();
    for (const auto& e : used) cache_.wait(*e);
    if (!error)
      for (const auto& e : used)
        if (e->error) error = e->error;
    if (error) std::rethrow_exception(error);
    if (slab && pin_rows_ > 0) {
      // The pins follow the plane of slabs being read; the one before is done with.
      std::lock_guard lock(mutex_);
      if (cz != pinned_cz_) pinned_.clear();
      pinned_cz_ = cz;
      for (const auto& e : used)
        if (e->key % down_ < pin_rows_ && e->key / down_ == cz) pinned_.emplace(e->key, e);
    }
    for (const auto& e : used) {
      if (!slab) {
        cache_.copy_out(*e, base + y0, n, dst);
        continue;
      }
      // Plane z's rows of the slab (its planes one after the other) inside the request.
      const std::int64_t cy = e->key % down_, top = cy * ch_, rows = rows_in(cy);
      const std::int64_t lo = std::max(top, y0), hi = std::min(top + rows, y0 + n);
      std::memcpy(dst + static_cast<std::size_t>(lo - y0) * row,
                  e->rows + static_cast<std::size_t>((z - cz * dz_) * rows + lo - top) * row,
                  static_cast<std::size_t>(hi - lo) * row);
    }
    used.clear();
    // The rows of chunks the next band reads again, or keep_ of them until that is known.
    if (!slab) {
      std::lock_guard lock(mutex_);
      tail = tail_ > 0 ? tail_ : keep_;
    } else {
      tail = keep_;
    }
    cache_.trim(static_cast<std::uint64_t>(tail) * chunk_row_bytes(0));
  }

  std::int64_t rows_in(std::int64_t cy) const { return std::min(ch_, s_.spec.height - cy * ch_); }
  std::int64_t planes_in(std::int64_t cz) const { return std::min(dz_, s_.spec.depth - cz * dz_); }
  // A row of chunks of the first plane of chunks (a slab: of all its planes).
  std::uint64_t chunk_row_bytes(std::int64_t cy) const {
    return std::uint64_t(planes_in(0) * rows_in(cy)) * s_.spec.row_bytes();
  }

  // Chunk (cz, cy, cx, ck) into `rows`: the image rows of chunk row cy (row_bytes apart) of each
  // plane the chunk holds, one plane after the other.
  void decode_chunk(std::int64_t cz, std::int64_t cy, std::int64_t cx, std::int64_t ck,
                    std::byte* rows) const {
    const ImageSpec& sp = s_.spec;
    const std::size_t sb = sample_bytes(sp.type), pixel = sp.pixel_bytes(), row = sp.row_bytes();
    const std::int64_t x0 = cx * cw_, x1 = std::min(sp.width, x0 + cw_);
    const std::int64_t k0 = ck * cc_, k1 = std::min<std::int64_t>(sp.channels, k0 + cc_);
    const std::int64_t nrows = rows_in(cy), planes = planes_in(cz);
    const std::string key = zarr::chunk_key(s_.meta, cy, cx, ck, cz);
    const std::string file = s_.array_dir + "/" + key;
    const std::string where = "Zarr chunk '" + file + "'";
    thread_local std::vector<std::byte> stored, chunk;
    const bool stored_found =
        s_.meta.shard.empty()
            ? zarr_read::read_chunk(s_, chunk_bytes_, file, where, stored)
            : zarr_read::read_from_shard(s_, chunk_bytes_, file, where, cy, cx, ck, cz, stored);
    if (!stored_found) {
      if (!s_.meta.fill)
        fail(where +
             " is missing and the array has no fill_value (null): the store is "
             "incomplete");
      for (std::int64_t r = 0; r < planes * nrows; ++r) {
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
    const std::size_t plane = static_cast<std::size_t>(
        planar_ ? channel_step_ * (cc_ - 1) + zstep_ * planes : zstep_ * planes);
    if (s_.meta.big_endian && sb > 1) reverse_bytes(chunk.data(), plane, sb);
    if (planar_) {
      // A plane per channel: each channel's rows go to its place in the interleaved pixels.
      for (std::int64_t k = k0; k < k1; ++k)
        for (std::int64_t pr = 0; pr < planes * nrows; ++pr) {
          const std::int64_t p = pr / nrows, r = pr % nrows;
          const std::byte* src =
              chunk.data() +
              static_cast<std::size_t>((k - k0) * channel_step_ + p * zstep_ + r * cw_) * sb;
          std::byte* out = rows + static_cast<std::size_t>(pr) * row +
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
    for (std::int64_t pr = 0; pr < planes * nrows && !planar_; ++pr) {
      const std::int64_t p = pr / nrows, r = pr % nrows;
      const std::byte* src = chunk.data() + static_cast<std::size_t>(p * zstep_) * sb +
                             static_cast<std::size_t>(r) * chunk_row;
      std::byte* out = rows + static_cast<std::size_t>(pr) * row +
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

  Store s_;
  Metadata metadata_;  // the voxel size alone: a store carries no TIFF tags
  unsigned threads_;
  std::int64_t ch_ = 1, cw_ = 1, cc_ = 1;
  std::int64_t dz_ = 1, zchunks_ = 1, zstep_ = 1;  // chunks along z, and planes apart in one
  bool planar_ = false;            // channels first: a plane per channel in each chunk
  std::int64_t channel_step_ = 1;  // samples from one channel's plane to the next
  std::int64_t across_ = 1, down_ = 1, kchunks_ = 1;
  std::size_t chunk_bytes_ = 0;
  std::int64_t keep_ = 1;
  std::int64_t pin_rows_ = 0;  // slabs: rows of a plane of them held for the planes after
  // Guarded by mutex_: the pinned slabs (decoded) of plane of slabs pinned_cz_.
  std::map<std::int64_t, ChunkCache::Ptr> pinned_;
  std::int64_t pinned_cz_ = -1;
  // Guarded by mutex_: the rows of chunks the next band reads again (0: not known yet), and
  // the last request.
  std::int64_t tail_ = 0, last_y0_ = -1, last_end_ = -1;
  std::vector<std::byte> fill_;
  std::string layout_;
  std::mutex mutex_;
  ChunkCache cache_;
};

}  // namespace

std::unique_ptr<Source> open_zarr_source(const std::string& path, const RawHints& hints) {
  if (hints.page != 0 || !hints.pages.empty())
    throw Error(ErrorKind::usage, std::string(hints.page != 0 ? "--page" : "--pages") +
                                      " applies to TIFF input; '" + path + "' is Zarr");
  Store st = zarr_read::open_store(path, hints.zarr_level);
  check_hints(hints, st.spec, "the .zarray of '" + st.array_dir + "', which says");
  const unsigned threads =
      static_cast<unsigned>(hints.threads > 0 ? hints.threads : default_threads());
  return std::make_unique<ZarrSource>(std::move(st), threads);
}

}  // namespace ooc
