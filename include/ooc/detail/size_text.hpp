// Sizes as text: the tools' size options and the messages that name a size. Not API, a front-end
// helper; in ooc/detail because every layer's messages and the tools share it, and only the
// public include root reaches them all (src/cli is above the layers that print sizes).
#pragma once

#include <cstddef>
#include <string>

namespace ooc {

// "512M", "4G", "1.5GiB", "100000" -> bytes; throws a usage Error.
std::size_t parse_size(const std::string& text, const std::string& option = "size");
std::string format_bytes(double bytes);  // "1.5 GiB"

}  // namespace ooc
