// Sample types, image geometry checks, border and error helpers.
#include "ooc/image.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "ooc/border.hpp"
#include "ooc/error.hpp"

namespace ooc {

std::string system_message(const std::string& what, const std::string& path, int err) {
  return what + " '" + path + "': " + std::strerror(err);
}

std::size_t sample_bytes(SampleType t) noexcept {
  switch (t) {
    case SampleType::u8:
      return 1;
    case SampleType::u16:
    case SampleType::i16:
      return 2;
    case SampleType::u32:
    case SampleType::i32:
    case SampleType::f32:
      return 4;
    case SampleType::f64:
    case SampleType::u64:
      return 8;
  }
  return 0;
}

bool is_integer(SampleType t) noexcept {
  return t != SampleType::f32 && t != SampleType::f64;
}

std::string_view name(SampleType t) noexcept {
  switch (t) {
    case SampleType::u8:
      return "u8";
    case SampleType::u16:
      return "u16";
    case SampleType::i16:
      return "i16";
    case SampleType::u32:
      return "u32";
    case SampleType::i32:
      return "i32";
    case SampleType::f32:
      return "f32";
    case SampleType::f64:
      return "f64";
    case SampleType::u64:
      return "u64";
  }
  return "?";
}

SampleType parse_sample_type(std::string_view text) {
  struct Alias {
    std::string_view a, b;
    SampleType t;
  };
  static constexpr Alias aliases[] = {
      {"u8", "uint8", SampleType::u8},    {"u16", "uint16", SampleType::u16},
      {"i16", "int16", SampleType::i16},  {"u32", "uint32", SampleType::u32},
      {"i32", "int32", SampleType::i32},  {"f32", "float32", SampleType::f32},
      {"f64", "float64", SampleType::f64}};
  for (const auto& al : aliases)
    if (text == al.a || text == al.b) return al.t;
  if (text == "u64" || text == "uint64")
    throw Error(ErrorKind::usage,
                "u64 is the labels' type (label label-type=u64), not a "
                "filter's: use one of u8, u16, i16, u32, i32, f32, f64");
  throw Error(ErrorKind::usage, "unknown sample type '" + std::string(text) +
                                    "': use one of u8, u16, i16, u32, i32, f32, f64");
}

double lowest_value(SampleType t) noexcept {
  switch (t) {
    case SampleType::u8:
    case SampleType::u16:
    case SampleType::u32:
      return 0;
    case SampleType::i16:
      return std::numeric_limits<std::int16_t>::lowest();
    case SampleType::i32:
      return std::numeric_limits<std::int32_t>::lowest();
    case SampleType::f32:
      return std::numeric_limits<float>::lowest();
    case SampleType::f64:
      return std::numeric_limits<double>::lowest();
    case SampleType::u64:
      return 0;
  }
  return 0;
}

double highest_value(SampleType t) noexcept {
  switch (t) {
    case SampleType::u8:
      return std::numeric_limits<std::uint8_t>::max();
    case SampleType::u16:
      return std::numeric_limits<std::uint16_t>::max();
    case SampleType::i16:
      return std::numeric_limits<std::int16_t>::max();
    case SampleType::u32:
      return std::numeric_limits<std::uint32_t>::max();
    case SampleType::i32:
      return std::numeric_limits<std::int32_t>::max();
    case SampleType::f32:
      return std::numeric_limits<float>::max();
    case SampleType::f64:
      return std::numeric_limits<double>::max();
    case SampleType::u64:
      return static_cast<double>(std::numeric_limits<std::uint64_t>::max());
  }
  return 0;
}

void refuse_u64_samples() {
  throw Error(ErrorKind::usage,
              "u64 samples are labels (label label-type=u64): no filter reads or makes them; "
              "filter the image the labels came from, or convert the labels to u32 first");
}

std::string ImageSpec::describe() const {
  return (volume() ? std::to_string(depth) + (depth == 1 ? " plane of " : " planes of ")
                   : std::string()) +
         std::to_string(width) + " x " + std::to_string(height) + " x " + std::to_string(channels) +
         " " + std::string(name(type));
}

void validate(const ImageSpec& s) {
  if (s.width <= 0)
    throw Error(ErrorKind::usage, "image width must be positive, got " + std::to_string(s.width));
  if (s.height <= 0)
    throw Error(ErrorKind::usage, "image height must be positive, got " + std::to_string(s.height));
  if (s.depth <= 0)
    throw Error(ErrorKind::usage, "image depth must be positive, got " + std::to_string(s.depth));
  if (s.channels < 1 || s.channels > 4)
    throw Error(ErrorKind::usage, "channels must be 1 to 4, got " + std::to_string(s.channels));
  // width * height * channels * bytes must fit in 63 bits: check step by step.
  const auto limit = static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max());
  const unsigned __int128 total = static_cast<unsigned __int128>(s.width) *
                                  static_cast<unsigned __int128>(s.height) *
                                  static_cast<unsigned __int128>(s.depth) *
                                  static_cast<unsigned __int128>(s.channels) * sample_bytes(s.type);
  if (total > limit)
    throw Error(ErrorKind::usage, "image " + s.describe() + " is larger than 2^63 bytes");
}

std::string_view name(BorderMode m) noexcept {
  switch (m) {
    case BorderMode::reflect:
      return "reflect";
    case BorderMode::mirror:
      return "mirror";
    case BorderMode::nearest:
      return "nearest";
    case BorderMode::wrap:
      return "wrap";
    case BorderMode::constant:
      return "constant";
  }
  return "?";
}

BorderMode parse_border_mode(std::string_view text) {
  for (BorderMode m : {BorderMode::reflect, BorderMode::mirror, BorderMode::nearest,
                       BorderMode::wrap, BorderMode::constant})
    if (text == name(m)) return m;
  throw Error(ErrorKind::usage, "unknown border mode '" + std::string(text) +
                                    "': use reflect, mirror, nearest, wrap or constant");
}

}  // namespace ooc
