// The ranges of the count options (--threads, --band-rows, --slots) and the one message that
// refuses a value outside them, written once for every front end: the tools' validators
// (options.cpp) and the Python module's keywords (threads=, band_rows=, slots=).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "ooc/pipeline.hpp"

namespace ooc::cli {

struct CountRange {
  long long lo, hi;
};
inline constexpr CountRange kThreadsRange{1, ooc::kMaxThreads};
inline constexpr CountRange kBandRowsRange{1, std::numeric_limits<std::int64_t>::max()};
inline constexpr CountRange kSlotsRange{1, 1 << 16};

// "must be a whole number from 1 to 1024, got '0'" (`given` as the user wrote it).
inline std::string count_problem(const CountRange& r, const std::string& given) {
  return "must be a whole number from " + std::to_string(r.lo) + " to " + std::to_string(r.hi) +
         ", got '" + given + "'";
}

}  // namespace ooc::cli
