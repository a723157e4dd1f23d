// Zarr v2 codecs (through libblosc, libzstd and zlib) and .zarray metadata: see zarr_codec.hpp.
#include "io/zarr_codec.hpp"

#include <blosc.h>
#include <zlib.h>
#include <zstd.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
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

void compress(const Codec& c, const std::byte* data, std::size_t n, std::size_t item_bytes,
              std::vector<std::byte>& out) {
  if (c.id == "none") {
    out.assign(data, data + n);
    return;
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
    return;
  }
  if (c.id == "zstd") {
    out.resize(ZSTD_compressBound(n));
    const std::size_t got = ZSTD_compress(out.data(), out.size(), data, n, c.level);
    if (ZSTD_isError(got))
      throw Error(ErrorKind::io,
                  std::string("zstd could not compress a chunk: ") + ZSTD_getErrorName(got));
    out.resize(got);
    return;
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
    case SampleType::u64:
      return "<u8";
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
  else if (k == "u8")
    t = SampleType::u64;  // labels (filters refuse them)
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

// fill_value: a number, "NaN", "Infinity" or "-Infinity", null (no fill: Zarr 2), and in Zarr
// 3 a boolean.
void parse_fill(const json& j, ArrayMeta& m, bool v3, const std::string& where) {
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
  } else if (v3 && f.is_boolean()) {
    m.fill = f.get<bool>() ? 1 : 0;
  } else if (v3 || !f.is_null()) {
    bad(where, "has fill_value " + f.dump() + ", which is not a number");
  }
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
  parse_fill(j, m, false, where);
  return m;
}

std::string chunk_key(const ArrayMeta& m, std::int64_t r, std::int64_t c, std::int64_t k,
                      std::int64_t z) {
  std::string key = m.version == 3 && m.v3_default_keys ? "c" + m.dimension_separator : "";
  // Without a channel axis set, an axis after x holds the channels (y, x, c).
  const int channel_axis = m.c_axis >= 0 ? m.c_axis : m.y_axis + 2;
  for (std::size_t i = 0; i < m.shape.size(); ++i) {
    const int a = static_cast<int>(i);
    std::int64_t v = a == m.y_axis       ? r
                     : a == m.y_axis + 1 ? c
                     : a == channel_axis ? k
                     : a == m.z_axis     ? z
                                         : 0;
    if (!m.shard.empty()) v /= m.shard[i] / m.chunks[i];
    if (i) key += m.dimension_separator;
    key += std::to_string(v);
  }
  return key;
}

std::uint32_t crc32c(const std::byte* p, std::size_t n) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i)
    c = table[(c ^ static_cast<std::uint8_t>(p[i])) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

namespace {

// The codecs of a Zarr 3 chunk (or of a shard's inner chunks): bytes, then at most one
// compressor.
void v3_codecs(const json& codecs, ArrayMeta& m, const std::string& where) {
  if (!codecs.is_array() || codecs.empty()) bad(where, "has no \"codecs\" list");
  bool seen_bytes = false;
  m.codec.id = "none";
  for (const json& c : codecs) {
    const std::string name = c.is_object() ? c.value("name", std::string()) : std::string();
    const json conf =
        c.is_object() && c.contains("configuration") ? c["configuration"] : json::object();
    if (name == "bytes") {
      seen_bytes = true;
      m.big_endian = conf.value("endian", std::string("little")) == "big";
    } else if (name == "blosc" && seen_bytes && m.codec.id == "none") {
      m.codec.id = "blosc";
      m.codec.cname = conf.value("cname", std::string("lz4"));
      m.codec.level = conf.value("clevel", 5);
      const std::string sh = conf.value("shuffle", std::string("noshuffle"));
      m.codec.shuffle = sh == "bitshuffle" ? 2 : sh == "shuffle" ? 1 : 0;
      m.codec.blocksize = conf.value("blocksize", 0);
      if (!known_blosc(m.codec.cname))
        bad(where, "uses blosc with cname '" + m.codec.cname + "', which libblosc lacks");
    } else if ((name == "zstd" || name == "gzip") && seen_bytes && m.codec.id == "none") {
      m.codec.id = name;
      m.codec.level = conf.value("level", 1);
    } else {
      bad(where, "uses the codec chain " + codecs.dump() +
                     ": ooc reads bytes followed by one of blosc, zstd or gzip");
    }
  }
  if (!seen_bytes) bad(where, "has no \"bytes\" codec");
}

}  // namespace

ArrayMeta parse_v3_array_json(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    bad(where, std::string("is not JSON (") + e.what() + ")");
  }
  if (!j.is_object() || j.value("zarr_format", 0) != 3 ||
      j.value("node_type", std::string()) != "array")
    bad(where, "is not a Zarr 3 array's metadata");
  ArrayMeta m;
  m.version = 3;
  try {
    m.shape = int_list(j, "shape", where);
    static const std::map<std::string, SampleType> types = {
        {"uint8", SampleType::u8},    {"uint16", SampleType::u16}, {"int16", SampleType::i16},
        {"uint32", SampleType::u32},  {"int32", SampleType::i32},  {"float32", SampleType::f32},
        {"float64", SampleType::f64}, {"uint64", SampleType::u64}};
    const std::string dt = j.value("data_type", std::string());
    const auto t = types.find(dt);
    if (t == types.end())
      bad(where, "has data_type '" + dt +
                     "': ooc reads uint8, uint16, int16, uint32, int32, "
                     "float32 and float64");
    m.type = t->second;
    const json& grid = j.at("chunk_grid");
    if (grid.value("name", std::string()) != "regular")
      bad(where, "has a chunk grid that is not regular");
    const json outer = grid.at("configuration").at("chunk_shape");
    std::vector<std::int64_t> chunks;
    for (const json& v : outer) chunks.push_back(v.get<std::int64_t>());
    m.chunks = chunks;
    const json& keys = j.at("chunk_key_encoding");
    const std::string enc = keys.value("name", std::string("default"));
    m.v3_default_keys = enc == "default";
    if (enc != "default" && enc != "v2") bad(where, "has chunk_key_encoding '" + enc + "'");
    m.dimension_separator = keys.contains("configuration")
                                ? keys["configuration"].value("separator", enc == "v2" ? "." : "/")
                                : (enc == "v2" ? "." : "/");
    if (m.dimension_separator != "." && m.dimension_separator != "/")
      bad(where, "has the key separator '" + m.dimension_separator + "'");
    const json& codecs = j.at("codecs");
    if (codecs.is_array() && codecs.size() == 1 &&
        codecs[0].value("name", std::string()) == "sharding_indexed") {
      const json& conf = codecs[0].at("configuration");
      m.shard = m.chunks;
      m.chunks.clear();
      for (const json& v : conf.at("chunk_shape")) m.chunks.push_back(v.get<std::int64_t>());
      v3_codecs(conf.at("codecs"), m, where);
      m.index_at_end = conf.value("index_location", std::string("end")) == "end";
      const json& ic = conf.at("index_codecs");
      for (const json& c : ic) {
        const std::string n = c.value("name", std::string());
        if (n == "crc32c")
          m.index_crc = true;
        else if (n != "bytes" ||
                 (c.contains("configuration") &&
                  c["configuration"].value("endian", std::string("little")) != "little"))
          bad(where, "has index codecs " + ic.dump() +
                         ": ooc reads a little-endian index, "
                         "with or without crc32c");
      }
    } else {
      v3_codecs(codecs, m, where);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    bad(where, std::string("is malformed (") + e.what() + ")");
  }
  if (m.chunks.size() != m.shape.size() || (!m.shard.empty() && m.shard.size() != m.shape.size()))
    bad(where, "gives chunk shapes of another rank than its shape");
  for (std::size_t i = 0; i < m.shape.size(); ++i) {
    if (m.shape[i] < 0 || m.chunks[i] <= 0) bad(where, "has a negative shape or empty chunks");
    if (!m.shard.empty() && (m.shard[i] <= 0 || m.shard[i] % m.chunks[i] != 0))
      bad(where, "has shards that are not whole numbers of inner chunks");
  }
  parse_fill(j, m, true, where);
  if (j.contains("dimension_names") && j["dimension_names"].is_array() &&
      j["dimension_names"].size() == m.shape.size()) {
    for (const json& n : j["dimension_names"])
      m.dimension_names.push_back(n.is_string() ? n.get<std::string>() : std::string());
  }
  return m;
}

}  // namespace ooc::zarr
