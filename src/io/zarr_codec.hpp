// Zarr v2 chunk codecs and array metadata, shared by the Zarr reader and writer: the numcodecs
// compressors zarr-python writes (blosc, zstd, zlib, gzip, none), the .zarray document, and the
// dtype strings ("<f4", "|u1", ">u2") mapped onto ooc's sample types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ooc/image.hpp"

namespace ooc::zarr {

// A numcodecs compressor as .zarray's "compressor" describes it.
struct Codec {
  std::string id = "blosc";  // blosc, zstd, zlib, gzip, or none (.zarray: null)
  // blosc: the inner compressor (lz4, lz4hc, blosclz, zstd, zlib, snappy) and its shuffle
  // (0 none, 1 byte, 2 bit; -1: numcodecs' AUTOSHUFFLE, bit for 1-byte items, else byte).
  std::string cname = "lz4";
  int shuffle = 1;
  int blocksize = 0;
  int level = 5;  // blosc clevel 0-9, zstd 1-22, zlib/gzip 0-9
};

// --compress NAME (blosc, blosc-zstd, zstd, zlib, gzip, none) with --level (-1: the codec's
// default, as numcodecs has it). Throws a usage Error naming the accepted values.
Codec codec_from_option(const std::string& name, int level);

// The .zarray "compressor" value for `c` (JSON text; "null" for none), and back. parse throws
// an input Error naming `where` for an unknown or malformed compressor.
std::string codec_json(const Codec& c);

// Compresses `n` bytes of samples `item_bytes` wide (blosc shuffles by it) into `out`, whose
// storage is reused from call to call. Thread-safe.
void compress(const Codec& c, const std::byte* data, std::size_t n, std::size_t item_bytes,
              std::vector<std::byte>& out);
inline std::vector<std::byte> compress(const Codec& c, const std::byte* data, std::size_t n,
                                       std::size_t item_bytes) {
  std::vector<std::byte> out;
  compress(c, data, n, item_bytes, out);
  return out;
}
// Decompresses a chunk into exactly `n` bytes at dst; throws an input Error naming `where` when
// the data is corrupt or does not decode to n bytes. Thread-safe.
void decompress(const Codec& c, const std::byte* data, std::size_t size, std::byte* dst,
                std::size_t n, const std::string& where);

// A Zarr v2 array's metadata (.zarray), as far as ooc can read it: C order, no filters, 2-D
// (y, x), 3-D (y, x, c) with c <= 4, or with leading axes of length 1 (OME's t, c, z).
struct ArrayMeta {
  std::vector<std::int64_t> shape, chunks;
  SampleType type = SampleType::f32;
  bool big_endian = false;
  Codec codec;
  std::optional<double> fill;   // none: missing chunks are an error (fill_value null)
  std::string fill_json = "0";  // as written back
  std::string dimension_separator = ".";
  // Which axis holds the rows (the columns follow it) and which the channels (-1: none): right
  // after the columns (y, x, c), or before the rows (c, y, x: NGFF's order). Other axes have
  // length 1 (OME's t, z). Set by whoever reads the shape (parse_array_json leaves 0 and -1).
  int y_axis = 0;
  int c_axis = -1;
  // A volume's planes (-1: none, or of length 1): right before the rows, (z, y, x).
  int z_axis = -1;
  // Zarr 3 (zarr.json). With sharding, `chunks` is the inner chunk and `shard` the shard (the
  // array's own chunk grid), whose index of (offset, size) pairs sits at the shard's end (or
  // start), optionally followed by its CRC-32C.
  int version = 2;
  std::vector<std::int64_t> shard;
  bool index_at_end = true, index_crc = false;
  bool v3_default_keys = true;  // "c/0/1" (default encoding); false: "0.1" (the v2 encoding)
  std::vector<std::string> dimension_names;  // Zarr 3's, where given (all axes named)
};

// Parses a Zarr 3 array's zarr.json: data_type, chunk_grid (regular), chunk_key_encoding, the
// codecs ooc reads (bytes, blosc, zstd, gzip; sharding_indexed around them), fill_value. Throws
// an input Error naming `where` and what it cannot read (transpose, other codecs, irregular
// grids).
ArrayMeta parse_v3_array_json(const std::string& text, const std::string& where);

// CRC-32C (Castagnoli), as Zarr 3's crc32c codec computes it.
std::uint32_t crc32c(const std::byte* p, std::size_t n);

// "<f4", "|u1", ... for a sample type, little endian.
std::string dtype_string(SampleType t);

// The .zarray JSON of `m` (zarr_format 2, order C, filters null).
std::string array_json(const ArrayMeta& m);

// Parses .zarray text. Throws an input Error naming `where` and the offending field for what ooc
// cannot read (F order, filters, an unknown codec or dtype, a shape or chunk shape that lies).
ArrayMeta parse_array_json(const std::string& text, const std::string& where);

// The key of chunk (row r, column c, channel chunk k) for the array's axes and separator:
// "r.c", "r.c.k", "k.r.c", or "0.0.0.r.c" with leading axes of length 1; for Zarr 3 "c/r/c"
// (default encoding), and with sharding the key of the shard holding the chunk. z: the chunk's
// index along the volume's z axis.
std::string chunk_key(const ArrayMeta& m, std::int64_t r, std::int64_t c, std::int64_t k = 0,
                      std::int64_t z = 0);

}  // namespace ooc::zarr
