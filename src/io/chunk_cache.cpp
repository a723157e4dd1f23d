// The cache of decoded rows of chunks shared by the TIFF and Zarr readers (see chunk_cache.hpp).
#include "io/chunk_cache.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace ooc {

ChunkCache::Claim ChunkCache::claim(std::int64_t key, std::int64_t top, std::int64_t count,
                                    std::int64_t parts, std::byte* direct) {
  std::lock_guard lock(mutex_);
  ++tick_;
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second->used = tick_;
    return {it->second, false};
  }
  auto e = std::make_shared<Entry>();
  e->key = key;
  e->top = top;
  e->count = count;
  e->left = parts;
  e->used = tick_;
  pending_ += parts;
  if (direct) {
    e->rows = direct;
    e->direct = true;
    return {std::move(e), true};
  }
  const std::size_t bytes = static_cast<std::size_t>(count) * row_bytes_;
  // Not zeroed: every byte is decoded or filled before anyone reads it.
  e->owned.reset(new std::byte[bytes]);
  e->rows = e->owned.get();
  bytes_ += bytes;
  entries_.emplace(key, e);
  return {std::move(e), true};
}

void ChunkCache::done(const Ptr& e, std::int64_t parts, std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (error && !e->error) {
    e->error = error;
    if (auto it = entries_.find(e->key); it != entries_.end() && it->second == e) {
      bytes_ -= static_cast<std::uint64_t>(e->count) * row_bytes_;
      entries_.erase(it);
    }
  }
  e->left -= parts;
  pending_ -= parts;
  if (e->left == 0 || pending_ == 0) decoded_.notify_all();
}

void ChunkCache::wait(const Entry& e, const std::function<bool()>& help) {
  const auto ready = [&] { return e.left == 0; };
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (ready()) return;
      if (!help) {
        decoded_.wait(lock, ready);
        return;
      }
    }
    if (help()) continue;
    // Nothing queued: the last parts are being decoded by other threads.
    std::unique_lock lock(mutex_);
    decoded_.wait_for(lock, std::chrono::milliseconds(2), ready);
  }
}

void ChunkCache::trim(std::uint64_t budget) {
  std::lock_guard lock(mutex_);
  while (bytes_ > budget) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second->left == 0 && it->second.use_count() == 1 &&
          (oldest == entries_.end() || it->second->used < oldest->second->used))
        oldest = it;
    if (oldest == entries_.end()) return;
    bytes_ -= static_cast<std::uint64_t>(oldest->second->count) * row_bytes_;
    entries_.erase(oldest);
  }
}

void ChunkCache::drain() {
  std::unique_lock lock(mutex_);
  decoded_.wait(lock, [&] { return pending_ == 0; });
}

void ChunkCache::copy_out(const Entry& e, std::int64_t y0, std::int64_t n, std::byte* dst) const {
  const std::int64_t a = std::max(e.top, y0), b = std::min(e.top + e.count, y0 + n);
  if (a >= b) return;
  std::memcpy(dst + static_cast<std::size_t>(a - y0) * row_bytes_,
              e.rows + static_cast<std::size_t>(a - e.top) * row_bytes_,
              static_cast<std::size_t>(b - a) * row_bytes_);
}

}  // namespace ooc
