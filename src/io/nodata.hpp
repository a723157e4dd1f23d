// An output's nodata value (issue 48): --nodata where given (SinkOptions::nodata), else the
// input's GDAL_NODATA tag carried in the output's metadata. The TIFF writer records it as
// GDAL_NODATA on every level, the Zarr writer as fill_value, and both pyramids average only the
// valid samples of each block (pyramid.hpp).
#pragma once

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "ooc/io.hpp"

namespace ooc::detail {

// GDAL_NODATA's text as GDAL reads it: a number or nan (any case, a sign allowed); none
// otherwise (an empty tag, text that is no number, an infinity: no sample is a hole then).
inline std::optional<double> gdal_nodata_value(const std::string& text) {
  const std::size_t a = text.find_first_not_of(" \t"), b = text.find_last_not_of(" \t\n");
  if (a == std::string::npos) return std::nullopt;
  std::string t = text.substr(a, b - a + 1);
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!t.empty() && (t[0] == '+' || t[0] == '-') && t.substr(1) == "nan") t.erase(0, 1);
  if (t == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  double v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size() || std::isinf(v)) return std::nullopt;
  return v;
}

// The tag's text for a value: "nan", or the shortest exact digits GDAL reads back.
inline std::string gdal_nodata_text(double v) {
  if (std::isnan(v)) return "nan";
  char s[32];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

// The nodata value an output records, and its pyramid leaves out.
inline std::optional<double> output_nodata(const SinkOptions& o) {
  if (o.nodata_given) return o.nodata;
  return gdal_nodata_value(o.metadata.geo.gdal_nodata);
}

// `o` with --nodata turned into the tag it records (none: no tag, nothing is a hole), for the
// writers that keep their options (a TIFF's parts file) and read the value back from the tag.
inline SinkOptions with_nodata_tag(SinkOptions o) {
  if (o.nodata_given)
    o.metadata.geo.gdal_nodata = o.nodata ? gdal_nodata_text(*o.nodata) : std::string();
  o.nodata_given = false;
  o.nodata.reset();
  return o;
}

}  // namespace ooc::detail
