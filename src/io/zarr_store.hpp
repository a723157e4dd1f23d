// Private to the Zarr reader (zarr_store.cpp, zarr_chunk_files.cpp, zarr_read.cpp): the store a
// path names (the array, its level of an OME-Zarr group, its metadata) and the reading of its
// chunk and shard files, checked to stay inside the store.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/zarr_codec.hpp"
#include "ooc/image.hpp"

namespace ooc::zarr_read {

[[noreturn]] void fail(const std::string& what);

// Whether `path` is `root` or lies below it (both real paths).
bool under(const std::string& path, const std::string& root);

// "[1, 2, 3]"
std::string list_text(const std::vector<std::int64_t>& v);
// The codec as the layout line names it ("blosc zstd shuffle level 5").
std::string codec_name(const zarr::Codec& c);

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
  VoxelSize voxel;  // what the OME-Zarr scale of the level says (unknown: a bare array)
};

// Where the planes, rows, columns and channels of array m lie (sets its z_axis, y_axis and
// c_axis), given its axis names (empty: none), and the image it holds; an input Error naming
// `where` for an array ooc cannot read.
ImageSpec image_of(zarr::ArrayMeta& m, const std::vector<std::string>& axes,
                   const std::string& where);

// The store `path` names, its array at OME-Zarr level `level` (-1: the group's first, or a bare
// array), with the array's metadata read and its image found.
Store open_store(const std::string& path, int level);

// A chunk (or shard) file of store s opened for reading; -1 where there is no such file (a chunk
// never written, all fill_value). A file reached through a link that leads out of the store, or a
// directory or a device where the chunk should be, is refused.
int open_chunk(const Store& s, const std::string& file, const std::string& where, struct stat& st);

// The stored bytes of a chunk file into `out`; false where there is none. A file larger than any
// encoding of a chunk of `chunk_bytes` is refused.
bool read_chunk(const Store& s, std::size_t chunk_bytes, const std::string& file,
                const std::string& where, std::vector<std::byte>& out);

// Zarr 3 sharding: inner chunk (cy, cx, ck; cz along a volume's z) out of the shard file that holds
// it, through the shard's index (checked against its CRC-32C where the array has one); false where
// the shard or the chunk in it is absent (fill_value).
bool read_from_shard(const Store& s, std::size_t chunk_bytes, const std::string& file,
                     const std::string& where, std::int64_t cy, std::int64_t cx, std::int64_t ck,
                     std::int64_t cz, std::vector<std::byte>& out);

}  // namespace ooc::zarr_read
