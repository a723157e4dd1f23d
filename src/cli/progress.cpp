// The progress report on stderr: a bar on a terminal, a line every few seconds in batch logs.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "main.hpp"
#include "options.hpp"
#include "report.hpp"

namespace ooc::cli {

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

Progress::Progress(const ProgressCli& p, std::size_t total_bytes, const char* prog)
    : mode_(p.none                 ? Mode::none
            : p.log_seconds > 0    ? Mode::log
            : p.bar                ? Mode::bar
            : p.quiet              ? Mode::none
            : stderr_is_terminal() ? Mode::bar
                                   : Mode::log),
      log_seconds_(p.log_seconds > 0 ? p.log_seconds : kLogSeconds),
      total_bytes_(total_bytes),
      prog_(prog),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::update(std::int64_t done, std::int64_t total) {
  if (mode_ == Mode::none || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  const auto every = mode_ == Mode::bar ? std::chrono::milliseconds(200)
                                        : std::chrono::milliseconds(1000 * log_seconds_);
  if ((done < total || mode_ == Mode::log) && now - last_ < every) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = static_cast<double>(done) / static_cast<double>(total);
  const double mbps = elapsed > 0 ? frac * static_cast<double>(total_bytes_) / elapsed / 1e6 : 0;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
  if (mode_ == Mode::log) {
    const long e = std::lround(eta);
    std::fprintf(stderr, "%s: %5.1f%% %lld/%lld rows, %.2f GB/s, ETA %ldm%02lds\n", prog_,
                 100 * frac, static_cast<long long>(done), static_cast<long long>(total),
                 mbps / 1e3, e / 60, e % 60);
    std::fflush(stderr);
    return;
  }
  constexpr int kWidth = 30;
  char bar[kWidth + 1];
  const int filled = static_cast<int>(frac * kWidth);
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\r[%s] %5.1f%%  %8.1f MB/s  ETA %6.0f s ", bar, 100 * frac, mbps, eta);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

}  // namespace ooc::cli
