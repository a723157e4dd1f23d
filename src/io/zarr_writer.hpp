// Private to the Zarr writer (zarr_write_meta.cpp, zarr_write_chunks.cpp, zarr_write.cpp,
// zarr_write_finish.cpp): the settings every writer of one store shares, the metadata documents
// they become, the writing of a store's chunk (or shard) rows and its small files, and the
// store's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "io/pyramid.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "ooc/image.hpp"

namespace ooc::zarr_write {

// The writers' own files in a store being made.
inline constexpr const char* kStoreInfo = ".ooc-store.json";
inline constexpr const char* kWriters = ".ooc-writers";
inline constexpr const char* kEdgePrefix = ".ooc-edge-L";
inline constexpr const char* kSourcePrefix = ".ooc-source-L";
// A stopped run's rows of the chunk-z slab it had begun, one file a unit row of the plane.
inline constexpr const char* kSlabPrefix = ".ooc-slab-L";

// An I/O Error: "what 'path': reason", with a hint where the disk is full.
[[noreturn]] void io_fail(const std::string& what, const std::string& path, int err);

// What every writer of one store must agree on; kept in the store until it is joined.
struct StoreInfo {
  ImageSpec spec;
  std::int64_t chunk = 512;
  zarr::Codec codec;
  int levels = 0;
  std::string name;
  int version = 2;           // Zarr 2 (NGFF 0.4) or 3 (NGFF 0.5, sharded)
  std::int64_t shard = 0;    // Zarr 3: shards of shard x shard pixels (a multiple of chunk)
  VoxelSize voxel;           // level 0's, for the multiscales' scales (unknown: pixels)
  std::int64_t chunk_z = 1;  // a volume's chunks (and shards) are this many planes deep
  bool pyramid_z = false;    // a volume's levels halve z too
  // --nodata, or the input's tag (io/nodata.hpp), where the type holds it: each level's
  // fill_value, and what the levels' means leave out. None: fill_value 0.
  std::optional<double> nodata;

  // The rows of a plane a writer makes whole at a time: a chunk row, or a row of shards.
  std::int64_t unit() const { return version == 3 ? shard : chunk; }
  // Unit rows of a plane of level k: a volume's unit row g is row g % this of the slab (of
  // planes_deep(k) planes) g / this.
  std::int64_t units_down(int k) const;
  ImageSpec level_spec(int k) const { return pyramid_level(spec, k, pyramid_z); }
  // The planes of level k's chunks: chunk_z, or the level's depth where that is less.
  std::int64_t planes_deep(int k) const;

  std::string to_json() const;
  // Throws an input Error naming `where` when the text is not a StoreInfo.
  static StoreInfo from_json(const std::string& text, const std::string& where);
};

// Level k's array (Zarr 2's .zarray) of the store.
zarr::ArrayMeta level_meta(const StoreInfo& info, int k);

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Level k's zarr.json (Zarr 3): one chunk per shard of inner chunks, index at the end.
std::string v3_array_json(const StoreInfo& info, int k);

// The file of unit (chunk or shard) row r, column c, channel k of slab z (of planes_deep planes)
// of a level, relative to the level.
std::string unit_key(const StoreInfo& info, const zarr::ArrayMeta& meta, std::int64_t r,
                     std::int64_t c, std::int64_t k, std::int64_t z = 0);

// The name of an edge file (source: a source-rows file) of level k's rows [lo, hi).
std::string edge_name(int k, std::int64_t lo, std::int64_t hi, bool source = false);

// The group's .zattrs: NGFF 0.4 multiscales of the levels, axes [c,] [z,] y, x.
std::string attrs_json(const StoreInfo& info);

// `path` appears only complete: written under a name of this process beside it, then renamed.
void write_file_atomic(const std::string& path, const void* data, std::size_t n);
void make_dir(const std::string& dir);
// The whole file (empty where it cannot be opened).
std::string read_text(const std::string& path);
// Removes a directory tree of ours (links are removed, never followed).
void remove_tree(const std::string& dir) noexcept;
bool is_dir(const std::string& p);

// The store's lock and refusals, which the sink and the join share (zarr_write_finish.cpp).
// Takes the store's writers lock on rows [begin, end) (0, 0: all) and returns its descriptor;
// *locked is false when another writer holds any of them.
int lock_writers(const std::string& temp, std::int64_t begin, std::int64_t end, bool no_locks,
                 bool* locked);
// The Error for a store another process holds (fd: the writers lock it was refused).
Error busy_store(const std::string& output, const std::string& temp, int fd);
std::string strip_slashes(std::string p);
// Throws a usage Error where `target` exists: a Zarr store is never replaced.
void refuse_existing(const std::string& target);

// Unit row `ur` of level k (a chunk row, or a row of shards; of a volume, counted over its slabs
// as units_down says), from its rows (contiguous, row_bytes apart, the unit row's first row
// first; a slab's planes unit() rows apart), compressed in parallel.
void write_unit_row(const std::string& store, const StoreInfo& info, int k, std::int64_t ur,
                    const std::byte* rows);

}  // namespace ooc::zarr_write
