// How the input's --type and --channels become hints, written once for every front end: the
// tools' Input group (options.cpp) and the Python module's keywords.
#pragma once

#include <optional>
#include <string>

#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc::cli {

// `type` and `channels` as given (none: not given). A type not given is the tool's default; what
// was not given yields to a file's header, what was given must agree with it.
inline void set_sample_hints(RawHints& hints, const std::optional<std::string>& type,
                             const std::string& default_type, std::optional<int> channels) {
  hints.type = parse_sample_type(type.value_or(default_type));
  hints.type_given = type.has_value();
  if (channels) hints.channels = *channels;
  hints.channels_given = channels.has_value();
}

}  // namespace ooc::cli
