// NumPy .npy headers: parsing (any version, either byte order, C order only) and writing.
#include <cstring>
#include <string>
#include <vector>

#include "npy.hpp"
#include "ooc/error.hpp"

namespace ooc {
namespace {

// The value text after 'key': in the header dict, up to the next top-level comma or brace.
std::string dict_value(const std::string& dict, const std::string& key, const std::string& path) {
  std::size_t k = dict.find("'" + key + "'");
  if (k == std::string::npos) k = dict.find("\"" + key + "\"");
  if (k == std::string::npos)
    throw Error(ErrorKind::input, "'" + path + "': .npy header has no '" + key + "'");
  std::size_t i = dict.find(':', k);
  if (i == std::string::npos)
    throw Error(ErrorKind::input, "'" + path + "': malformed .npy header near '" + key + "'");
  ++i;
  while (i < dict.size() && dict[i] == ' ') ++i;
  int depth = 0;
  std::size_t j = i;
  for (; j < dict.size(); ++j) {
    const char c = dict[j];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string v = dict.substr(i, j - i);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

// "(20, 30)", "(20, 30, 3)", "(20, 30,)": non-negative integers, nothing else.
std::vector<std::int64_t> parse_shape(const std::string& shape, const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::input, "'" + path + "': .npy shape " + shape + " " + why);
  };
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    throw bad("is not a tuple of integers");
  std::vector<std::int64_t> dims;
  const std::string inner = shape.substr(1, shape.size() - 2);
  std::size_t i = 0;
  while (i < inner.size()) {
    while (i < inner.size() && inner[i] == ' ') ++i;
    if (i == inner.size()) break;
    std::size_t j = i;
    while (j < inner.size() && inner[j] >= '0' && inner[j] <= '9') ++j;
    if (j == i)
      throw bad(inner[i] == '-' ? "has a negative dimension" : "is not a tuple of integers");
    // Longer than 18 digits could overflow: no image is that large anyway.
    if (j - i > 18) throw bad("is too large");
    dims.push_back(std::stoll(inner.substr(i, j - i)));
    while (j < inner.size() && inner[j] == ' ') ++j;
    if (j < inner.size() && inner[j] != ',') throw bad("is not a tuple of integers");
    i = j + 1;
  }
  return dims;
}

}  // namespace

NpyArray parse_npy_array(const unsigned char* p, std::size_t n, const std::string& path) {
  if (n < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0)
    throw Error(ErrorKind::input, "'" + path + "' is not a .npy file (no NUMPY magic)");
  const int major = p[6];
  std::size_t header_len = 0, prefix = 0;
  if (major == 1) {
    header_len = p[8] | (p[9] << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) throw Error(ErrorKind::input, "'" + path + "': truncated .npy header");
    header_len = p[8] | (p[9] << 8) | (std::size_t(p[10]) << 16) | (std::size_t(p[11]) << 24);
    prefix = 12;
  } else {
    throw Error(ErrorKind::input,
                "'" + path + "': .npy version " + std::to_string(major) + " is not supported");
  }
  if (prefix + header_len > n)
    throw Error(ErrorKind::input, "'" + path + "': truncated .npy header");
  std::string dict(reinterpret_cast<const char*>(p + prefix), header_len);
  while (!dict.empty() && (dict.back() == ' ' || dict.back() == '\n' || dict.back() == '\0'))
    dict.pop_back();
  if (dict.empty() || dict.front() != '{' || dict.back() != '}')
    throw Error(ErrorKind::input, "'" + path +
                                      "': malformed .npy header (not a {...} dictionary): the "
                                      "file is damaged or not written by NumPy");

  NpyArray out;
  out.data_offset = prefix + header_len;
  std::string descr = dict_value(dict, "descr", path);
  if (descr.size() < 2) throw Error(ErrorKind::input, "'" + path + "': bad .npy descr " + descr);
  descr = descr.substr(1, descr.size() - 2);  // strip quotes
  out.order = descr.empty() ? '?' : descr[0];
  out.kind = descr.size() > 1 ? descr.substr(1) : "";
  out.fortran = dict_value(dict, "fortran_order", path) != "False";
  out.shape = dict_value(dict, "shape", path);
  out.dims = parse_shape(out.shape, path);
  return out;
}

NpyLayout parse_npy_header(const unsigned char* p, std::size_t n, const std::string& path,
                           bool volume) {
  const NpyArray a = parse_npy_array(p, n, path);
  const std::string descr = std::string(1, a.order) + a.kind;
  NpyLayout out;
  out.data_offset = a.data_offset;
  struct Map {
    const char* kind;
    SampleType type;
  };
  static constexpr Map maps[] = {{"u1", SampleType::u8},  {"u2", SampleType::u16},
                                 {"i2", SampleType::i16}, {"u4", SampleType::u32},
                                 {"i4", SampleType::i32}, {"f4", SampleType::f32},
                                 {"f8", SampleType::f64}};
  bool found = false;
  for (const auto& m : maps)
    if (a.kind == m.kind) out.spec.type = m.type, found = true;
  if (!found || (a.order != '<' && a.order != '>' && a.order != '|' && a.order != '='))
    throw Error(ErrorKind::input, "'" + path + "': .npy dtype '" + descr +
                                      "' is not supported: use u1, u2, i2, u4, i4, f4 or f8");
  out.big_endian = a.order == '>' && sample_bytes(out.spec.type) > 1;
  if (a.fortran)
    throw Error(ErrorKind::input, "'" + path +
                                      "' is in Fortran order: save it with "
                                      "numpy.ascontiguousarray (C order)");
  const std::string& shape = a.shape;
  const std::vector<std::int64_t>& dims = a.dims;
  const auto channels_axis = [](std::int64_t d) { return d >= 1 && d <= 4; };
  if (dims.size() == 2) {
    out.spec.height = dims[0], out.spec.width = dims[1], out.spec.channels = 1;
  } else if (dims.size() == 3 && channels_axis(dims[2]) && !volume) {
    out.spec.height = dims[0], out.spec.width = dims[1];
    out.spec.channels = static_cast<int>(dims[2]);
  } else if (dims.size() == 3) {
    out.spec.depth = dims[0], out.spec.height = dims[1], out.spec.width = dims[2];
    out.spec.stack = true;
  } else if (dims.size() == 4 && channels_axis(dims[3])) {
    out.spec.depth = dims[0], out.spec.height = dims[1], out.spec.width = dims[2];
    out.spec.channels = static_cast<int>(dims[3]);
    out.spec.stack = true;
  } else {
    throw Error(ErrorKind::input, "'" + path + "': .npy shape " + shape +
                                      " is not an image: use (height, width), (height, width, "
                                      "channels) with 1 to 4 channels, or a volume (planes, "
                                      "height, width[, channels])");
  }
  try {
    validate(out.spec);
  } catch (const Error& e) {
    throw Error(ErrorKind::input, "'" + path + "': .npy shape " + shape + ": " + e.what());
  }
  return out;
}

std::string npy_header(const ImageSpec& spec) {
  static constexpr const char* kDescr[] = {"|u1", "<u2", "<i2", "<u4", "<i4", "<f4", "<f8", "<u8"};
  std::vector<std::int64_t> dims{spec.height, spec.width};
  if (spec.volume()) dims.insert(dims.begin(), spec.depth);
  if (spec.channels > 1) dims.push_back(spec.channels);
  return npy_array_header(kDescr[static_cast<int>(spec.type)], dims);
}

std::string npy_array_header(const std::string& descr, const std::vector<std::int64_t>& dims) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < dims.size(); ++i) dict += (i ? ", " : "") + std::to_string(dims[i]);
  dict += dims.size() == 1 ? ",), }" : "), }";
  // Pad with spaces and end with a newline so that the data starts on a multiple of 64 bytes.
  const bool v2 = dict.size() + 11 + 64 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  std::size_t total = prefix + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const std::size_t len = dict.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + dict;
}

}  // namespace ooc
