// OME-XML for the TIFF writer: the ImageDescription of an output named .ome.tif, one interleaved
// plane whose pyramid levels are the first page's SubIFDs.
#include <cctype>
#include <string>

#include "tiff_ome.hpp"

namespace ooc::detail {

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

std::string ome_xml(const ImageSpec& s, const std::string& path) {
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
  }
  std::string name = path.substr(path.rfind('/') + 1);
  const std::size_t dot = name.find(".ome.");
  if (dot != std::string::npos) name.resize(dot);
  const std::string c = std::to_string(s.channels);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<OME xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\" "
         "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
         "xsi:schemaLocation=\"http://www.openmicroscopy.org/Schemas/OME/2016-06 "
         "http://www.openmicroscopy.org/Schemas/OME/2016-06/ome.xsd\" Creator=\"ooc\">"
         "<Image ID=\"Image:0\" Name=\"" +
         xml_escape(name) + "\"><Pixels ID=\"Pixels:0\" DimensionOrder=\"XYCZT\" Type=\"" + type +
         "\" SizeX=\"" + std::to_string(s.width) + "\" SizeY=\"" + std::to_string(s.height) +
         "\" SizeC=\"" + c +
         "\" SizeZ=\"1\" SizeT=\"1\" Interleaved=\"true\" BigEndian=\"false\">"
         "<Channel ID=\"Channel:0:0\" SamplesPerPixel=\"" +
         c + "\"/><TiffData IFD=\"0\" PlaneCount=\"1\"/></Pixels></Image></OME>";
}

}  // namespace ooc::detail
