// OOC_TRACE (any value): phase marks on stderr, "ooc-trace SECONDS WHAT", seconds from the first
// mark (main's start), for finding where a run's start and end go.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace ooc::detail {

inline void trace_mark(const char* what) {
  static const bool on = std::getenv("OOC_TRACE") != nullptr;
  static const auto t0 = std::chrono::steady_clock::now();
  if (on)
    std::fprintf(stderr, "ooc-trace %.4f %s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 what);
}

}  // namespace ooc::detail
