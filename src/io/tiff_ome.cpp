// OME-XML for the TIFF writer (the ImageDescription of an output named .ome.tif: one interleaved
// plane whose pyramid levels are the first page's SubIFDs, or a volume's planes one page each),
// and voxel sizes: --voxel-size's text, length units, and what a TIFF's description says.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "ooc/error.hpp"
#include "tiff_ome.hpp"

namespace ooc {
namespace {

// The shortest text that reads back as v.
std::string number_text(double v) {
  char s[64];
  const auto r = std::to_chars(s, s + sizeof s, v);
  return std::string(s, r.ptr);
}

}  // namespace

VoxelSize parse_voxel_size(const std::string& text, const std::string& what) {
  const std::string rule =
      what + " takes z,y,x (a volume) or y,x micrometres, each a number above 0";
  std::vector<double> v;
  std::size_t from = 0;
  for (;;) {
    const std::size_t comma = text.find(',', from);
    const std::string word =
        text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    double x = 0;
    const char* end = word.data() + word.size();
    const auto r = std::from_chars(word.data(), end, x);
    if (word.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(x) || x <= 0)
      throw Error(ErrorKind::usage, rule + ", got '" + text + "'");
    v.push_back(x);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (v.size() != 2 && v.size() != 3)
    throw Error(ErrorKind::usage,
                rule + ", got " + std::to_string(v.size()) + " value(s): '" + text + "'");
  VoxelSize s;
  if (v.size() == 3) s.z = v[0];
  s.y = v[v.size() - 2];
  s.x = v.back();
  s.origin = what;
  return s;
}

double micrometres_per(const std::string& unit) {
  // NGFF's names (UDUNITS-2), OME's symbols, ImageJ's words, each list apart by spaces; tifffile
  // writes ImageJ's micro sign as the escape \u00B5.
  static const std::pair<const char*, double> units[] = {
      {"micrometer um micron microns \xc2\xb5m \xce\xbcm \\u00B5m \\u00b5m", 1},
      {"nanometer nm", 1e-3},
      {"millimeter mm", 1e3},
      {"centimeter cm", 1e4},
      {"decimeter dm", 1e5},
      {"meter m", 1e6},
      {"kilometer km", 1e9},
      {"angstrom \xc3\x85 \xe2\x84\xab", 1e-4},
      {"picometer pm", 1e-6},
      {"femtometer fm", 1e-9},
      {"attometer am", 1e-12},
      {"zeptometer", 1e-15},
      {"yoctometer", 1e-18},
      {"hectometer", 1e8},
      {"megameter", 1e12},
      {"gigameter", 1e15},
      {"terameter", 1e18},
      {"petameter", 1e21},
      {"exameter", 1e24},
      {"zettameter", 1e27},
      {"yottameter", 1e30},
      {"inch in", 25400},
      {"foot ft", 304800},
      {"yard yd", 914400},
      {"mile mi", 1.609344e9},
      {"parsec", 3.0857e22}};
  if (unit.empty() || unit.find(' ') != std::string::npos) return 0;
  for (const auto& [names, um] : units) {
    const std::string list = std::string(" ") + names + " ";
    if (list.find(" " + unit + " ") != std::string::npos) return um;
  }
  return 0;
}

std::string describe_voxel(const VoxelSize& v) {
  if (!v.known()) return "not known";
  std::string s = (v.z > 0 ? number_text(v.z) + " x " : std::string()) + number_text(v.y) + " x " +
                  number_text(v.x) + " um (" + (v.z > 0 ? "z, y, x" : "y, x") + ")";
  return v.origin.empty() ? s : s + ", from " + v.origin;
}

namespace detail {

bool ome_name(const std::string& path) {
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string end : {".ome.tif", ".ome.tiff"})
    if (lower.size() > end.size() && lower.compare(lower.size() - end.size(), end.size(), end) == 0)
      return true;
  return false;
}

namespace {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string ome_xml(const ImageSpec& s, const std::string& path, const VoxelSize& voxel) {
  const char* type = "uint8";
  switch (s.type) {
    case SampleType::u8:
      type = "uint8";
      break;
    case SampleType::u16:
      type = "uint16";
      break;
    case SampleType::i16:
      type = "int16";
      break;
    case SampleType::u32:
      type = "uint32";
      break;
    case SampleType::i32:
      type = "int32";
      break;
    case SampleType::f32:
      type = "float";
      break;
    case SampleType::f64:
      type = "double";
      break;
    case SampleType::u64:
      type = "uint64";  // OME's name for 64-bit labels
      break;
  }
  std::string name = path.substr(path.rfind('/') + 1);
  const std::size_t dot = name.find(".ome.");
  if (dot != std::string::npos) name.resize(dot);
  const std::string c = std::to_string(s.channels);
  const std::string z = std::to_string(s.depth);
  std::string physical;
  if (voxel.known()) {
    // In micrometres, OME's default unit, named all the same.
    physical = " PhysicalSizeX=\"" + number_text(voxel.x) +
               "\" PhysicalSizeXUnit=\"\xc2\xb5m\" PhysicalSizeY=\"" + number_text(voxel.y) +
               "\" PhysicalSizeYUnit=\"\xc2\xb5m\"";
    if (s.volume() && voxel.z > 0)
      physical += " PhysicalSizeZ=\"" + number_text(voxel.z) + "\" PhysicalSizeZUnit=\"\xc2\xb5m\"";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<OME xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\" "
         "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
         "xsi:schemaLocation=\"http://www.openmicroscopy.org/Schemas/OME/2016-06 "
         "http://www.openmicroscopy.org/Schemas/OME/2016-06/ome.xsd\" Creator=\"ooc\">"
         "<Image ID=\"Image:0\" Name=\"" +
         xml_escape(name) + "\"><Pixels ID=\"Pixels:0\" DimensionOrder=\"XYCZT\" Type=\"" + type +
         "\" SizeX=\"" + std::to_string(s.width) + "\" SizeY=\"" + std::to_string(s.height) +
         "\" SizeC=\"" + c + "\" SizeZ=\"" + z +
         "\" SizeT=\"1\" Interleaved=\"true\" BigEndian=\"false\"" + physical +
         "><Channel ID=\"Channel:0:0\" SamplesPerPixel=\"" + c +
         "\"/><TiffData IFD=\"0\" PlaneCount=\"" + z + "\"/></Pixels></Image></OME>";
}

namespace {

// The value of attribute `name` in the tag text `tag` (empty where absent).
std::string attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=";
  const std::size_t at = tag.find(key);
  if (at == std::string::npos || at + key.size() >= tag.size()) return {};
  const char quote = tag[at + key.size()];
  if (quote != '"' && quote != '\'') return {};
  const std::size_t from = at + key.size() + 1, to = tag.find(quote, from);
  return to == std::string::npos ? std::string() : tag.substr(from, to - from);
}

double positive(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && std::isfinite(v) && v > 0 ? v : 0;
}

// OME-XML's first Pixels element: each PhysicalSize in its unit (default micrometres).
VoxelSize ome_voxel(const std::string& xml) {
  VoxelSize v;
  std::size_t at = 0;
  for (;;) {
    at = xml.find("Pixels", at);
    if (at == std::string::npos) return v;
    const bool opens = at > 0 && (xml[at - 1] == '<' || xml[at - 1] == ':') &&
                       at + 6 < xml.size() && std::isspace(static_cast<unsigned char>(xml[at + 6]));
    if (opens) break;
    at += 6;
  }
  const std::size_t close = xml.find('>', at);
  std::string tag = " ";  // (appended, not " " + ...: GCC 12 warns falsely of an overlap there)
  tag += xml.substr(at + 6, close == std::string::npos ? close : close - at - 6);
  auto size = [&](const char* axis) {
    const std::string unit = attribute(tag, std::string("PhysicalSize") + axis + "Unit");
    return positive(attribute(tag, std::string("PhysicalSize") + axis)) *
           (unit.empty() ? 1.0 : micrometres_per(unit));
  };
  v.x = size("X");
  v.y = size("Y");
  v.z = size("Z");
  if (v.known()) v.origin = "OME-XML";
  return v;
}

// The value of `key=` on a line of an ImageJ description (empty where absent).
std::string imagej_value(const std::string& text, const std::string& key) {
  const std::string k = "\n" + key + "=";
  const std::size_t at = text.find(k);
  if (at == std::string::npos) return {};
  const std::size_t from = at + k.size(), to = text.find('\n', from);
  return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

}  // namespace

VoxelSize tiff_voxel(const Metadata& m) {
  const std::string& d = m.description;
  if (d.find("<OME") != std::string::npos) return ome_voxel(d);
  if (d.rfind("ImageJ=", 0) != 0) return {};
  // ImageJ: the resolution is pixels per unit; without a length unit it is not calibrated.
  std::string unit = imagej_value(d, "unit");
  if (unit.empty()) unit = imagej_value(d, "xunit");
  const double um = micrometres_per(unit);
  VoxelSize v;
  if (um <= 0 || m.x_resolution <= 0 || m.y_resolution <= 0) return v;
  v.x = um / m.x_resolution;
  v.y = um / m.y_resolution;
  v.z = positive(imagej_value(d, "spacing")) * um;
  v.origin = "ImageJ";
  return v;
}

}  // namespace detail
}  // namespace ooc
