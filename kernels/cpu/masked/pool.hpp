// Scratch buffers reused from band to band by the masked kernels: a band's buffers are too large
// to allocate each time (fresh pages fault in one by one), and a thread_local would be shared with
// another band that a thread runs while it waits in the kernel's own parallel loops.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace ooc::kernels::masked {

template <class B>
class BufferPool {
 public:
  // A set of buffers no other band holds, handed back by the Lease's end.
  class Lease {
   public:
    Lease(BufferPool& p, std::unique_ptr<B> b) : pool_(p), b_(std::move(b)) {}
    ~Lease() { pool_.give(std::move(b_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    B& operator*() { return *b_; }
    B* operator->() { return b_.get(); }

   private:
    BufferPool& pool_;
    std::unique_ptr<B> b_;
  };

  Lease take() {
    std::lock_guard<std::mutex> lock(m_);
    if (free_.empty()) return Lease(*this, std::make_unique<B>());
    std::unique_ptr<B> b = std::move(free_.back());
    free_.pop_back();
    return Lease(*this, std::move(b));
  }

 private:
  void give(std::unique_ptr<B> b) {
    std::lock_guard<std::mutex> lock(m_);
    free_.push_back(std::move(b));
  }
  std::mutex m_;
  std::vector<std::unique_ptr<B>> free_;
};

}  // namespace ooc::kernels::masked
