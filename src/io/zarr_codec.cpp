// Zarr v2 codecs (through libblosc, libzstd and zlib) and .zarray metadata: see zarr_codec.hpp.
#include "io/zarr_codec.hpp"

#include <blosc.h>
#include <zlib.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "ooc/error.hpp"

namespace ooc::zarr {
namespace {

using nlohmann::json;

const char* const kBloscNames[] = {"lz4", "lz4hc", "blosclz", "zstd", "zlib", "snappy"};

bool known_blosc(const std::string& n) {
  for (const char* k : kBloscNames)
    if (n == k) return true;
  return false;
}

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(ErrorKind::input, where + ": " + what);
}

}  // namespace

Codec codec_from_option(const std::string& name, int level) {
  Codec c;
  if (name == "blosc" || name == "blosc-lz4") {
    c.id = "blosc", c.cname = "lz4", c.level = level < 0 ? 5 : level;
  } else if (name == "blosc-zstd") {
    c.id = "blosc", c.cname = "zstd", c.level = level < 0 ? 5 : level;
  } else if (name == "zstd") {
    c.id = "zstd", c.level = level < 0 ? 1 : level;
  } else if (name == "zlib" || name == "gzip") {
    c.id = name, c.level = level < 0 ? 1 : level;
  } else if (name == "none") {
    c.id = "none", c.level = 0;
  } else {
    throw Error(ErrorKind::usage,
                "--compress for Zarr takes blosc, blosc-zstd, zstd, zlib, gzip or "
                "none, got '" +
                    name + "'");
  }
  const int hi = c.id == "zstd" ? 22 : 9;
  const int lo = c.id == "zstd" ? 1 : 0;
  if (c.id != "none" && (c.level < lo || c.level > hi))
    throw Error(ErrorKind::usage, "--level for " + name + " is " + std::to_string(lo) + " to " +
                                      std::to_string(hi) + ", got " + std::to_string(level));
  return c;
}

std::string codec_json(const Codec& c) {
  if (c.id == "none") return "null";
  json j;
  j["id"] = c.id;
  if (c.id == "blosc") {
    j["cname"] = c.cname;
    j["clevel"] = c.level;
    j["shuffle"] = c.shuffle;
    j["blocksize"] = c.blocksize;
  } else {
    j["level"] = c.level;
  }
  return j.dump();
}

std::vector<std::byte> compress(const Codec& c, const std::byte* data, std::size_t n,
                                std::size_t item_bytes) {
  std::vector<std::byte> out;
  if (c.id == "none") {
    out.assign(data, data + n);
    return out;
  }
  if (c.id == "blosc") {
    if (n > static_cast<std::size_t>(BLOSC_MAX_BUFFERSIZE))
      throw Error(ErrorKind::usage, "a Zarr chunk of " + std::to_string(n) +
                                        " bytes is over blosc's 2 GiB: use a smaller --chunk");
    int shuffle = c.shuffle;
    if (shuffle < 0) shuffle = item_bytes == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE;
    out.resize(n + BLOSC_MAX_OVERHEAD);
    // One internal thread: chunks are compressed in parallel by the caller.
    const int got = blosc_compress_ctx(c.level, shuffle, item_bytes, n, data, out.data(),
                                       out.size(), c.cname.c_str(), c.blocksize, 1);
    if (got <= 0) throw Error(ErrorKind::io, "blosc could not compress a chunk (" + c.cname + ")");
    out.resize(static_cast<std::size_t>(got));
    return out;
  }
  if (c.id == "zstd") {
    out.resize(ZSTD_compressBound(n));
    const std::size_t got = ZSTD_compress(out.data(), out.size(), data, n, c.level);
    if (ZSTD_isError(got))
      throw Error(ErrorKind::io,
                  std::string("zstd could not compress a chunk: ") + ZSTD_getErrorName(got));
    out.resize(got);
    return out;
  }
  // zlib (zlib header) or gzip (gzip header), as Python's zlib and gzip modules write them.
  z_stream z{};
  const int bits = c.id == "gzip" ? 15 + 16 : 15;
  if (deflateInit2(&z, c.level, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error(ErrorKind::io, "zlib could not start");
  out.resize(deflateBound(&z, n) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(data));
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const std::size_t got = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw Error(ErrorKind::io, "zlib could not compress a chunk");
  out.resize(got);
  return out;
}

void decompress(const Codec& c, const std::byte* data, std::size_t size, std::byte* dst,
                std::size_t n, const std::string& where) {
  if (c.id == "none") {
    if (size != n)
      bad(where, "holds " + std::to_string(size) + " bytes where the chunk has " +
                     std::to_string(n) + " (truncated or not this array's chunk)");
    std::memcpy(dst, data, n);
    return;
  }
  if (c.id == "blosc") {
    std::size_t nbytes = 0;
    if (size < BLOSC_MIN_HEADER_LENGTH || blosc_cbuffer_validate(data, size, &nbytes) != 0)
      bad(where, "is not a whole blosc buffer (truncated or damaged)");
    if (nbytes != n)
      bad(where, "decodes to " + std::to_string(nbytes) + " bytes where the chunk has " +
                     std::to_string(n));
    const int got = blosc_decompress_ctx(data, dst, n, 1);
    if (got < 0 || static_cast<std::size_t>(got) != n) bad(where, "does not decode (blosc)");
    return;
  }
  if (c.id == "zstd") {
    const std::size_t got = ZSTD_decompress(dst, n, data, size);
    if (ZSTD_isError(got))
      bad(where, std::string("does not decode (zstd: ") + ZSTD_getErrorName(got) + ")");
    if (got != n)
      bad(where,
          "decodes to " + std::to_string(got) + " bytes where the chunk has " + std::to_string(n));
    return;
  }
  if (c.id == "zlib" || c.id == "gzip") {
    z_stream z{};
    if (inflateInit2(&z, c.id == "gzip" ? 15 + 16 : 15) != Z_OK) bad(where, "zlib could not start");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(data));
    z.avail_in = static_cast<uInt>(size);
    z.next_out = reinterpret_cast<Bytef*>(dst);
    z.avail_out = static_cast<uInt>(n);
    const int rc = inflate(&z, Z_FINISH);
    const std::size_t got = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || got != n)
      bad(where, rc == Z_BUF_ERROR && got == n
                     ? "decodes to more bytes than the chunk has"
                     : "does not decode to the chunk's " + std::to_string(n) + " bytes (" + c.id +
                           ": truncated or damaged)");
    return;
  }
  bad(where, "unknown compressor '" + c.id + "'");
}

std::string dtype_string(SampleType t) {
  switch (t) {
    case SampleType::u8:
      return "|u1";
    case SampleType::u16:
      return "<u2";
    case SampleType::i16:
      return "<i2";
    case SampleType::u32:
      return "<u4";
    case SampleType::i32:
      return "<i4";
    case SampleType::f32:
      return "<f4";
    case SampleType::f64:
      return "<f8";
  }
  return "<f4";
}

namespace {

// "<f4" etc. to a sample type; false for what ooc has no type for.
bool parse_dtype(const std::string& s, SampleType& t, bool& big) {
  if (s.size() != 3 || (s[0] != '<' && s[0] != '>' && s[0] != '|')) return false;
  big = s[0] == '>';
  const std::string k = s.substr(1);
  if (k == "u1")
    t = SampleType::u8;
  else if (k == "u2")
    t = SampleType::u16;
  else if (k == "i2")
    t = SampleType::i16;
  else if (k == "u4")
    t = SampleType::u32;
  else if (k == "i4")
    t = SampleType::i32;
  else if (k == "f4")
    t = SampleType::f32;
  else if (k == "f8")
    t = SampleType::f64;
  else
    return false;
  if (s[0] == '|' && sample_bytes(t) != 1) return false;
  return true;
}

std::vector<std::int64_t> int_list(const json& j, const std::string& field,
                                   const std::string& where) {
  if (!j.contains(field) || !j[field].is_array()) bad(where, "has no \"" + field + "\" list");
  std::vector<std::int64_t> v;
  for (const json& e : j[field]) {
    if (!e.is_number_integer()) bad(where, "\"" + field + "\" holds a non-integer");
    v.push_back(e.get<std::int64_t>());
  }
  return v;
}

}  // namespace

std::string array_json(const ArrayMeta& m) {
  json j;
  j["zarr_format"] = 2;
  j["shape"] = m.shape;
  j["chunks"] = m.chunks;
  j["dtype"] = dtype_string(m.type);
  j["compressor"] = json::parse(codec_json(m.codec));
  j["fill_value"] = json::parse(m.fill_json);
  j["order"] = "C";
  j["filters"] = nullptr;
  if (m.dimension_separator != ".") j["dimension_separator"] = m.dimension_separator;
  return j.dump(4) + "\n";
}

ArrayMeta parse_array_json(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    bad(where, std::string("is not JSON (") + e.what() + ")");
  }
  if (!j.is_object()) bad(where, "is not a JSON object");
  if (!j.contains("zarr_format") || j["zarr_format"] != 2)
    bad(where, "is not Zarr version 2 metadata (zarr_format is not 2)");
  ArrayMeta m;
  m.shape = int_list(j, "shape", where);
  m.chunks = int_list(j, "chunks", where);
  if (m.shape.size() != m.chunks.size())
    bad(where, "gives " + std::to_string(m.shape.size()) + " dimensions in \"shape\" and " +
                   std::to_string(m.chunks.size()) + " in \"chunks\"");
  if (m.shape.empty()) bad(where, "describes a 0-dimensional array, not an image");
  for (std::size_t i = 0; i < m.shape.size(); ++i) {
    if (m.shape[i] < 0) bad(where, "has a negative \"shape\"");
    if (m.chunks[i] <= 0) bad(where, "has a chunk side of " + std::to_string(m.chunks[i]));
  }
  if (!j.contains("dtype") || !j["dtype"].is_string())
    bad(where, "has no \"dtype\" string (structured dtypes are not images)");
  const std::string dt = j["dtype"].get<std::string>();
  if (!parse_dtype(dt, m.type, m.big_endian))
    bad(where, "has dtype '" + dt + "': ooc reads u1, u2, i2, u4, i4, f4 and f8");
  if (j.value("order", std::string("C")) != "C")
    bad(where, "is in Fortran order: ooc reads C order (rewrite it with order='C')");
  if (j.contains("filters") && !j["filters"].is_null() &&
      !(j["filters"].is_array() && j["filters"].empty()))
    bad(where, "uses filters (" + j["filters"].dump() + "): ooc reads arrays without filters");
  if (j.contains("dimension_separator")) {
    const auto& s = j["dimension_separator"];
    if (!s.is_string() || (s != "." && s != "/"))
      bad(where, "has dimension_separator " + s.dump() + " (\".\" or \"/\")");
    m.dimension_separator = s.get<std::string>();
  }
  const json& c = j.contains("compressor") ? j["compressor"] : json(nullptr);
  if (c.is_null()) {
    m.codec.id = "none";
  } else {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string())
      bad(where, "has a \"compressor\" without an id");
    m.codec.id = c["id"].get<std::string>();
    try {
      if (m.codec.id == "blosc") {
        m.codec.cname = c.value("cname", std::string("lz4"));
        m.codec.level = c.value("clevel", 5);
        m.codec.shuffle = c.value("shuffle", 1);
        m.codec.blocksize = c.value("blocksize", 0);
        if (!known_blosc(m.codec.cname))
          bad(where, "uses blosc with cname '" + m.codec.cname + "', which libblosc lacks");
      } else if (m.codec.id == "zstd" || m.codec.id == "zlib" || m.codec.id == "gzip") {
        m.codec.level = c.value("level", 1);
      } else {
        bad(where, "uses compressor '" + m.codec.id +
                       "': ooc reads blosc, zstd, zlib, gzip or none (recompress with one)");
      }
    } catch (const nlohmann::json::exception&) {
      bad(where, "has a malformed \"compressor\" (" + c.dump() + ")");
    }
  }
  const json& f = j.contains("fill_value") ? j["fill_value"] : json(nullptr);
  m.fill_json = f.dump();
  if (f.is_number()) {
    m.fill = f.get<double>();
  } else if (f.is_string()) {
    const std::string s = f.get<std::string>();
    if (s == "NaN")
      m.fill = std::numeric_limits<double>::quiet_NaN();
    else if (s == "Infinity")
      m.fill = std::numeric_limits<double>::infinity();
    else if (s == "-Infinity")
      m.fill = -std::numeric_limits<double>::infinity();
    else
      bad(where, "has fill_value \"" + s + "\", which is not a number");
  } else if (!f.is_null()) {
    bad(where, "has fill_value " + f.dump() + ", which is not a number");
  }
  return m;
}

std::string chunk_key(const ArrayMeta& m, std::int64_t r, std::int64_t c, std::int64_t k) {
  std::string key;
  for (std::size_t i = 0; i < m.shape.size(); ++i) {
    const int a = static_cast<int>(i) - m.y_axis;
    const std::int64_t v = a == 0 ? r : a == 1 ? c : a == 2 ? k : 0;
    if (i) key += m.dimension_separator;
    key += std::to_string(v);
  }
  return key;
}

}  // namespace ooc::zarr
