// The Zarr writer's metadata: the settings every writer of one store shares (kept in the store
// until it is joined), each level's array document (Zarr 2's .zarray, Zarr 3's zarr.json with its
// sharding codecs), the chunk keys, and the group's NGFF multiscales.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "io/pyramid.hpp"
#include "io/zarr_codec.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "zarr_writer.hpp"

namespace ooc::zarr_write {
namespace {

using nlohmann::json;

// Zarr 3's data_type: the kind of name(t) spelled out, then its bits ("uint8", "int16", "float32").
std::string v3_data_type(SampleType t) {
  const std::string_view n = name(t);
  const char* kind = n[0] == 'u' ? "uint" : n[0] == 'i' ? "int" : "float";
  return kind + std::string(n.substr(1));
}

// The codecs inside a shard: the samples little endian, then the compressor.
json v3_codecs(const StoreInfo& info) {
  json codecs = json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}});
  const zarr::Codec& c = info.codec;
  if (c.id == "blosc") {
    codecs.push_back({{"name", "blosc"},
                      {"configuration",
                       {{"cname", c.cname},
                        {"clevel", c.level},
                        {"shuffle", c.shuffle == 2   ? "bitshuffle"
                                    : c.shuffle == 0 ? "noshuffle"
                                                     : "shuffle"},
                        {"typesize", sample_bytes(info.spec.type)},
                        {"blocksize", c.blocksize}}}});
  } else if (c.id == "zstd") {
    codecs.push_back(
        {{"name", "zstd"}, {"configuration", {{"level", c.level}, {"checksum", false}}}});
  } else if (c.id == "gzip") {
    codecs.push_back({{"name", "gzip"}, {"configuration", {{"level", c.level}}}});
  }
  return codecs;
}

}  // namespace

// A nodata value as fill_value's JSON: "NaN" (a string, as Zarr writes it), an integer for an
// integer type, else the exact number.
std::string fill_json(double v, SampleType type) {
  if (std::isnan(v)) return "\"NaN\"";
  if (is_integer(type)) return std::to_string(static_cast<long long>(v));
  return json(v).dump();
}

std::string StoreInfo::to_json() const {
  json j;
  j["width"] = spec.width;
  j["height"] = spec.height;
  j["channels"] = spec.channels;
  j["type"] = zarr::dtype_string(spec.type);
  j["chunk"] = chunk;
  j["codec"] = json::parse(zarr::codec_json(codec));
  j["levels"] = levels;
  j["name"] = name;
  j["version"] = version;
  j["shard"] = shard;
  // Only a volume's: a plane's store keeps the settings it always had.
  if (spec.volume()) {
    j["depth"] = spec.depth;
    j["stack"] = spec.stack;
    if (chunk_z != 1) j["chunk_z"] = chunk_z;
    if (pyramid_z) j["pyramid_z"] = true;
  }
  // Only a known one's, likewise.
  if (voxel.known()) j["voxel"] = {voxel.z, voxel.y, voxel.x};
  if (nodata) j["nodata"] = json::parse(fill_json(*nodata, spec.type));
  return j.dump() + "\n";
}

StoreInfo StoreInfo::from_json(const std::string& text, const std::string& where) {
  StoreInfo s;
  try {
    const json j = json::parse(text);
    s.spec.width = j.at("width").get<std::int64_t>();
    s.spec.height = j.at("height").get<std::int64_t>();
    s.spec.channels = j.at("channels").get<int>();
    // The dtype and codec parse through .zarray's own reader.
    json a;
    a["zarr_format"] = 2;
    a["shape"] = {1, 1};
    a["chunks"] = {1, 1};
    a["dtype"] = j.at("type");
    a["compressor"] = j.at("codec");
    const zarr::ArrayMeta m = zarr::parse_array_json(a.dump(), where);
    s.spec.type = m.type;
    s.codec = m.codec;
    s.chunk = j.at("chunk").get<std::int64_t>();
    s.levels = j.at("levels").get<int>();
    s.name = j.at("name").get<std::string>();
    s.version = j.at("version").get<int>();
    s.shard = j.at("shard").get<std::int64_t>();
    if (j.contains("depth")) {
      s.spec.depth = j.at("depth").get<std::int64_t>();
      s.spec.stack = j.at("stack").get<bool>();
      s.chunk_z = j.value("chunk_z", std::int64_t{1});
      s.pyramid_z = j.value("pyramid_z", false);
    }
    if (j.contains("nodata"))
      s.nodata = j["nodata"].is_string() ? std::numeric_limits<double>::quiet_NaN()
                                         : j["nodata"].get<double>();
    if (j.contains("voxel")) {
      const auto v = j.at("voxel").get<std::vector<double>>();
      if (v.size() != 3 || !(v[1] > 0) || !(v[2] > 0) || !(v[0] >= 0))
        throw std::runtime_error("voxel");
      s.voxel.z = v[0], s.voxel.y = v[1], s.voxel.x = v[2];
    }
    validate(s.spec);
    if (s.chunk <= 0 || s.levels < 0 || s.levels > 40 || (s.version != 2 && s.version != 3) ||
        (s.version == 3 && (s.shard <= 0 || s.shard % s.chunk != 0)) || s.chunk_z < 1)
      throw std::runtime_error("range");
  } catch (const Error&) {
    throw;
  } catch (const std::exception&) {
    throw Error(ErrorKind::input, where + " is damaged: remove '" +
                                      where.substr(0, where.rfind('/')) + "' and run again");
  }
  return s;
}

std::int64_t StoreInfo::units_down(int k) const {
  return ceil_div(level_spec(k).height, unit());
}

std::int64_t StoreInfo::planes_deep(int k) const {
  return std::min(chunk_z, level_spec(k).depth);
}

zarr::ArrayMeta level_meta(const StoreInfo& info, int k) {
  const ImageSpec s = info.level_spec(k);
  zarr::ArrayMeta m;
  m.shape = {s.height, s.width};
  m.chunks = {info.chunk, info.chunk};
  if (info.spec.volume()) {
    // (z, y, x), chunks planes_deep planes deep.
    m.shape.insert(m.shape.begin(), s.depth);
    m.chunks.insert(m.chunks.begin(), info.planes_deep(k));
    m.z_axis = 0;
    m.y_axis = 1;
  }
  if (s.channels > 1) {
    // NGFF orders axes by type, the channel before space: (c, [z,] y, x), a plane per chunk.
    m.shape.insert(m.shape.begin(), s.channels);
    m.chunks.insert(m.chunks.begin(), 1);
    m.c_axis = 0;
    m.y_axis += 1;
    if (m.z_axis >= 0) m.z_axis += 1;
  }
  m.type = s.type;
  m.codec = info.codec;
  m.fill = info.nodata.value_or(0);
  m.fill_json = info.nodata ? fill_json(*info.nodata, s.type) : "0";
  // ome-zarr-py and NGFF 0.4's examples nest chunks in directories, one per chunk row.
  m.dimension_separator = "/";
  return m;
}

std::string v3_array_json(const StoreInfo& info, int k) {
  const ImageSpec s = info.level_spec(k);
  json shape = {s.height, s.width}, outer = {info.shard, info.shard},
       inner = {info.chunk, info.chunk}, names = {"y", "x"};
  if (info.spec.volume()) {
    shape.insert(shape.begin(), s.depth);
    outer.insert(outer.begin(), info.planes_deep(k));
    inner.insert(inner.begin(), info.planes_deep(k));
    names.insert(names.begin(), "z");
  }
  if (s.channels > 1) {
    shape.insert(shape.begin(), s.channels);
    outer.insert(outer.begin(), 1);
    inner.insert(inner.begin(), 1);
    names.insert(names.begin(), "c");
  }
  json sharding = {{"name", "sharding_indexed"},
                   {"configuration",
                    {{"chunk_shape", inner},
                     {"codecs", v3_codecs(info)},
                     {"index_codecs",
                      json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                   {{"name", "crc32c"}}})},
                     {"index_location", "end"}}}};
  json j = {{"zarr_format", 3},
            {"node_type", "array"},
            {"shape", shape},
            {"data_type", v3_data_type(s.type)},
            {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", outer}}}}},
            {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
            {"fill_value", json::parse(info.nodata ? fill_json(*info.nodata, s.type) : "0")},
            {"codecs", json::array({sharding})},
            {"dimension_names", names},
            {"attributes", json::object()}};
  return j.dump(4) + "\n";
}

// The file of unit (chunk or shard) row r, column c, channel k of a level, relative to the level.
std::string unit_key(const StoreInfo& info, const zarr::ArrayMeta& meta, std::int64_t r,
                     std::int64_t c, std::int64_t k, std::int64_t z) {
  if (info.version == 2) return zarr::chunk_key(meta, r, c, k, z);
  return "c/" + (info.spec.channels > 1 ? std::to_string(k) + "/" : std::string()) +
         (info.spec.volume() ? std::to_string(z) + "/" : std::string()) + std::to_string(r) + "/" +
         std::to_string(c);
}

std::string edge_name(int k, std::int64_t lo, std::int64_t hi, bool source) {
  return std::string(source ? kSourcePrefix : kEdgePrefix) + std::to_string(k) + "-" +
         std::to_string(lo) + "-" + std::to_string(hi);
}

std::string attrs_json(const StoreInfo& info) {
  // Space axes in micrometres where the voxel's size is known (z only where it says z's); else
  // scales count pixels of level 0 and no axis has a unit, as before sizes were carried.
  const VoxelSize& v = info.voxel;
  const bool sized = v.known(), z_sized = sized && v.z > 0;
  auto space = [](const char* name, bool unit) {
    json a = {{"name", name}, {"type", "space"}};
    if (unit) a["unit"] = "micrometer";
    return a;
  };
  json axes = json::array({space("y", sized), space("x", sized)});
  if (info.spec.volume()) axes.insert(axes.begin(), space("z", z_sized));
  if (info.spec.channels > 1) axes.insert(axes.begin(), json{{"name", "c"}, {"type", "channel"}});
  json datasets = json::array();
  for (int k = 0; k <= info.levels; ++k) {
    const double f = static_cast<double>(std::int64_t{1} << k);
    json scale = sized ? json::array({v.y * f, v.x * f}) : json::array({f, f});
    // Levels keep every plane, or halve z too.
    const double fz = info.pyramid_z ? f : 1.0;
    if (info.spec.volume()) scale.insert(scale.begin(), z_sized ? v.z * fz : fz);
    if (info.spec.channels > 1) scale.insert(scale.begin(), 1.0);
    datasets.push_back(
        {{"path", std::to_string(k)},
         {"coordinateTransformations", json::array({{{"type", "scale"}, {"scale", scale}}})}});
  }
  json ms = {{"version", "0.4"},
             {"name", info.name},
             {"axes", axes},
             {"datasets", datasets},
             {"type", "mean"},
             {"metadata",
              {{"description", "2 x 2 means; odd last rows and columns averaged with themselves"},
               {"method", "ooc"}}}};
  if (info.pyramid_z)
    ms["metadata"]["description"] =
        "2 x 2 x 2 means; odd last planes, rows and columns averaged with themselves";
  json j = {{"multiscales", json::array({ms})}};
  return j.dump(4) + "\n";
}

}  // namespace ooc::zarr_write
