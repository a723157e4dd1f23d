// Raw and .npy outputs, written with pwrite (or O_DIRECT) into a temporary file renamed at the
// end, the disk started on each stretch as it is written (write-back); and null:, which discards.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "direct.hpp"
#include "formats.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "output_file.hpp"

namespace ooc {
namespace {

// Starts the disk writing each stretch of output just written, from a thread of its own, and
// never waits for it: the output then reaches the disk while later bands compute instead of all
// at the final sync, and the write stage never waits on the disk's queue (sync_file_range may
// block when it is full). Stopping abandons what is queued: a run that does not sync must not
// wait for the disk.
class Writeback {
 public:
  explicit Writeback(int fd) : fd_(fd) {}
  ~Writeback() { stop(); }
  Writeback(const Writeback&) = delete;
  Writeback& operator=(const Writeback&) = delete;

  void wrote(std::size_t offset, std::size_t bytes) {
    if (bytes_ > 0 && offset != from_ + bytes_) post();
    if (bytes_ == 0) from_ = offset;
    bytes_ += bytes;
    if (bytes_ >= kStretch) post();
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  static constexpr std::size_t kStretch = std::size_t{32} << 20;

  void post() {
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(from_, bytes_);
    }
    bytes_ = 0;
    wake_.notify_one();
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }

  void run() {
    for (;;) {
      std::pair<std::size_t, std::size_t> r;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        r = queue_.front();
        queue_.pop_front();
      }
      // Errors surface where they always did: at the final sync or close.
      ::sync_file_range(fd_, static_cast<off_t>(r.first), static_cast<off_t>(r.second),
                        SYNC_FILE_RANGE_WRITE);
    }
  }

  int fd_;
  std::size_t from_ = 0, bytes_ = 0;  // the stretch written since the last post
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<std::size_t, std::size_t>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

class FileSink final : public Sink {
 public:
  FileSink(const std::string& path, const ImageSpec& spec, const std::string& input_path,
           std::string header, const SinkOptions& o)
      : file_(path, input_path, o.mode, lock_offset(header.size(), spec, o.row_begin),
              lock_offset(header.size(), spec, o.row_end > 0 ? o.row_end : spec.stacked_rows()),
              o.keep_on_signal, o.no_locks),
        spec_(spec),
        header_(std::move(header)) {
    const std::size_t total = header_.size() + spec.total_bytes();
    if (o.mode == OutputMode::resume) {
      struct stat st {};
      if (::fstat(file_.fd(), &st) != 0 || static_cast<std::size_t>(st.st_size) != total)
        throw Error(ErrorKind::usage, "'" + file_.partial() + "' is not " + std::to_string(total) +
                                          " bytes long, as this output must be: it is not the "
                                          "run to resume; run without --resume");
      return;
    }
    // A full disk fails here, before any work, not halfway through: the free space is checked
    // now. The blocks are not reserved (posix_fallocate): on ext4 writing into reserved
    // (unwritten) extents costs up to 4x a plain write, and the writes would then set the pace.
    // A part checks its own rows (and, with the first, the header).
    const std::size_t begin = o.mode == OutputMode::shared && o.row_begin > 0
                                  ? lock_offset(header_.size(), spec, o.row_begin)
                                  : 0;
    const std::size_t end =
        o.mode == OutputMode::shared
            ? lock_offset(header_.size(), spec, o.row_end > 0 ? o.row_end : spec.stacked_rows())
            : total;
    check_space(path, end - begin);
    // Every part sizes the shared file to the whole image: the same size whoever comes first. A
    // file of another size belongs to another job: sizing it would cut off (or shift) its rows.
    struct stat st {};
    if (o.mode == OutputMode::shared && ::fstat(file_.fd(), &st) == 0 && st.st_size != 0 &&
        static_cast<std::size_t>(st.st_size) != total)
      throw Error(ErrorKind::usage,
                  "'" + file_.partial() + "' is " + std::to_string(st.st_size) +
                      " bytes, but this part's output is " + std::to_string(total) +
                      ": it holds the rows of parts of another image; finish or remove those "
                      "parts (rm '" +
                      file_.partial() + "'*), or name another output");
    if (::fstat(file_.fd(), &st) == 0 && static_cast<std::size_t>(st.st_size) != total &&
        ::ftruncate(file_.fd(), static_cast<off_t>(total)) != 0) {
      if (errno == EFBIG || errno == EINVAL)
        throw Error(ErrorKind::io, "output '" + path + "' (" + std::to_string(total) +
                                       " bytes) is larger than this file system or the file size "
                                       "limit (ulimit -f) allows: write elsewhere");
      throw Error(ErrorKind::io,
                  system_message("cannot size output", file_.partial(), errno) + full_hint(errno));
    }
    if (!header_.empty())
      write_all(reinterpret_cast<const std::byte*>(header_.data()), header_.size(), 0);
    start_direct(o, total);
  }

  const ImageSpec& spec() const noexcept override { return spec_; }
  std::string describe() const override {
    return (header_.empty() ? "raw '" : "npy '") + file_.path() + "' " + spec_.describe();
  }

  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                  std::size_t stride) override {
    const std::size_t row = spec_.row_bytes();
    const std::size_t base = header_.size();
    if (writer_) {
      if (stride == row) {
        writer_->write(data, row * static_cast<std::size_t>(n), base + y0 * row);
      } else {
        for (std::int64_t y = 0; y < n; ++y)
          writer_->write(data + y * stride, row, base + (y0 + y) * row);
      }
      return;
    }
    if (stride == row) {
      write_all(data, row * static_cast<std::size_t>(n), base + y0 * row);
    } else {
      for (std::int64_t y = 0; y < n; ++y) write_all(data + y * stride, row, base + (y0 + y) * row);
    }
    writeback_.wrote(base + y0 * row, row * static_cast<std::size_t>(n));
  }

  // A part's rows are done; the output is finished by whoever checks every part (--finish).
  void commit() override {
    if (writer_) writer_->flush();
    writeback_.stop();
    file_.shared() ? file_.keep() : file_.commit();
  }
  void keep() override {
    if (writer_) writer_->flush();
    writeback_.stop();
    file_.keep();
  }
  // Direct writes still in a buffer or in flight are not on disk yet.
  std::int64_t durable_end(std::int64_t first, std::int64_t written_end) const override {
    if (!writer_) return written_end;
    const std::uint64_t at = writer_->durable_offset();
    if (at <= header_.size()) return first;
    const auto rows = static_cast<std::int64_t>((at - header_.size()) / spec_.row_bytes());
    return std::clamp(rows, first, written_end);
  }
  std::string io_method() const override {
    return (writer_ ? "direct" : "buffered") + (io_note_.empty() ? "" : " (" + io_note_ + ")");
  }
  std::size_t buffer_bytes() const override { return writer_ ? writer_->buffer_bytes() : 0; }
  // pwrite puts rows at their offsets; O_DIRECT's writer gathers them in order.
  bool any_order() const override { return !writer_; }

 private:
  static off_t lock_offset(std::size_t header, const ImageSpec& spec, std::int64_t row) {
    return static_cast<off_t>(header + static_cast<std::size_t>(row) * spec.row_bytes());
  }

  // Refuses an output the file system has no room for. Not a reservation: a disk that fills
  // while the run goes on still fails its write, with the same advice.
  void check_space(const std::string& path, std::size_t needed) const {
    struct statvfs vfs {};
    if (::fstatvfs(file_.fd(), &vfs) != 0) return;
    const std::uint64_t avail = std::uint64_t(vfs.f_bavail) * vfs.f_frsize;
    if (needed > avail)
      throw Error(ErrorKind::io, "not enough space for output '" + path + "' (" +
                                     std::to_string(needed) + " bytes needed, " +
                                     std::to_string(avail) +
                                     " available): free some space or write elsewhere");
  }

  // O_DIRECT writes where `o.io` asks for them (auto: an output larger than the threshold),
  // through a second descriptor on the temporary; the file system may refuse (a note, then the
  // page cache as before).
  void start_direct(const SinkOptions& o, std::size_t total) {
    if (o.io != "auto" && o.io != "mmap" && o.io != "direct")
      throw Error(ErrorKind::usage, "--io takes auto, mmap or direct, got '" + o.io + "'");
    if (o.io == "mmap") return;
    if (o.io == "auto" &&
        total <= (o.io_auto_bytes > 0 ? o.io_auto_bytes : direct::memory_budget()))
      return;
    const int dfd = direct::reopen_direct(file_.fd(), O_WRONLY);
    if (dfd < 0) {
      const int err = errno;
      io_note_ = "O_DIRECT refused: " + std::string(std::strerror(err));
      std::fprintf(stderr,
                   "ooc: note: '%s': the file system refuses direct I/O (%s): writing through "
                   "the page cache (--io mmap)\n",
                   file_.path().c_str(), std::strerror(err));
      return;
    }
    // Enough buffers that the write stage seldom waits for the disk while the next bands are
    // read (4 buffers left a cold copy well behind dd's; tools/bench/direct_io_bench.py): an
    // eighth of the job's memory, 4 to 32 requests; the planner counts them (buffer_bytes).
    const std::size_t mem = o.mem_limit > 0 ? o.mem_limit : std::size_t{1} << 30;
    const int buffers =
        static_cast<int>(std::clamp<std::size_t>(mem / 8 / direct::kRequest, 4, 32));
    writer_ = std::make_unique<direct::Writer>(file_.fd(), dfd, file_.partial(), 4, buffers);
  }

  void write_all(const std::byte* p, std::size_t bytes, std::size_t offset) {
    while (bytes > 0) {
      const ssize_t w = ::pwrite(file_.fd(), p, bytes, static_cast<off_t>(offset));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : ENOSPC;
        throw Error(ErrorKind::io,
                    system_message("cannot write output", file_.partial(), err) + full_hint(err));
      }
      p += w;
      bytes -= static_cast<std::size_t>(w);
      offset += static_cast<std::size_t>(w);
    }
  }

  // Before file_, so destroyed after it: closing its O_DIRECT descriptor drops this process's
  // POSIX locks on the file, which must hold until the temporary is closed (or removed).
  std::unique_ptr<direct::Writer> writer_;
  OutputFile file_;
  ImageSpec spec_;
  std::string header_;               // written before the rows (.npy), or empty (raw)
  Writeback writeback_{file_.fd()};  // after file_: stopped before the file closes
  std::string io_note_;              // why not direct (a refusal), or empty
};

class NullSink final : public Sink {
 public:
  explicit NullSink(const ImageSpec& spec) : spec_(spec) {}
  const ImageSpec& spec() const noexcept override { return spec_; }
  std::string describe() const override { return "null (discarded) " + spec_.describe(); }
  std::string io_method() const override { return "none"; }
  void write_rows(std::int64_t, std::int64_t, const std::byte*, std::size_t) override {}
  void commit() override {}
  void keep() override {}
  bool any_order() const override { return true; }

 private:
  ImageSpec spec_;
};

}  // namespace

std::string full_hint(int err) {
  if (err == EFBIG)
    return ": larger than the file size limit (ulimit -f) or the file system allows; write "
           "elsewhere or raise the limit";
  if (err == ENOSPC || err == EDQUOT) return ": free some space or write elsewhere";
  return {};
}

std::unique_ptr<Sink> create_file_sink(const std::string& path, const ImageSpec& spec,
                                       const std::string& input_path, std::string header,
                                       const SinkOptions& options) {
  return std::make_unique<FileSink>(path, spec, input_path, std::move(header), options);
}

std::unique_ptr<Sink> create_null_sink(const ImageSpec& spec) {
  return std::make_unique<NullSink>(spec);
}

}  // namespace ooc
