// OOC_TRACE=FILE: phase marks on stderr, "ooc-trace SECONDS WHAT", seconds from the first mark
// (main's start), for finding where a run's start and end go; the engine writes each GPU band's
// timeline to FILE.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace ooc::detail {

// OOC_TRACE's value, or nullptr when it is unset or empty.
inline const char* trace_path() {
  const char* p = std::getenv("OOC_TRACE");
  return p && *p ? p : nullptr;
}

inline void trace_mark(const char* what) {
  static const bool on = trace_path() != nullptr;
  static const auto t0 = std::chrono::steady_clock::now();
  if (on)
    std::fprintf(stderr, "ooc-trace %.4f %s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 what);
}

}  // namespace ooc::detail
