// Raw files: a headerless row-major image, read through memory-mapped windows (one per band, so
// resident memory stays bounded) and written with pwrite into a temporary file renamed at the end.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "direct.hpp"
#include "formats.hpp"
#include "npy.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "output_file.hpp"

namespace bip = boost::interprocess;
namespace fs = std::filesystem;

namespace ooc {
namespace {

// Up to `count` widths near `width` whose rows tile `samples` exactly, for the error message.
std::string widths_that_fit(std::uint64_t samples, std::int64_t width, int count) {
  std::vector<std::uint64_t> divisors;
  for (std::uint64_t d = 1; d * d <= samples; ++d) {
    if (samples % d != 0) continue;
    divisors.push_back(d);
    if (d != samples / d) divisors.push_back(samples / d);
  }
  std::sort(divisors.begin(), divisors.end(), [&](std::uint64_t a, std::uint64_t b) {
    const auto da = a > std::uint64_t(width) ? a - width : width - a;
    const auto db = b > std::uint64_t(width) ? b - width : width - b;
    return da < db;
  });
  if (static_cast<int>(divisors.size()) > count) divisors.resize(count);
  std::sort(divisors.begin(), divisors.end());
  std::string out;
  for (auto d : divisors) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}

// A raw file, or the data part of a .npy file: rows are mapped (or pread) at their offset, or
// read with O_DIRECT (`direct`) into aligned buffers, the page cache left alone.
class RawSource final : public Source {
 public:
  RawSource(const std::string& path, int fd, FileLayout layout,
            std::unique_ptr<direct::Reader> direct, std::string io_note)
      : path_(path),
        fd_(fd),
        layout_(std::move(layout)),
        spec_(layout_.spec),
        direct_(std::move(direct)),
        io_note_(std::move(io_note)) {
    if (direct_) return;  // nothing mapped: a file cut short is a short read, not SIGBUS
    try {
      mapping_ = bip::file_mapping(path.c_str(), bip::read_only);
    } catch (const bip::interprocess_exception& e) {
      throw Error(read_error_kind(e.get_native_error()),
                  "cannot map input '" + path + "': " + e.what());
    }
    mapped_slot_ = register_mapped_input(path);
  }

  ~RawSource() override {
    unregister_mapped_input(mapped_slot_);
    if (fd_ >= 0) ::close(fd_);
  }
  RawSource(const RawSource&) = delete;
  RawSource& operator=(const RawSource&) = delete;

  const ImageSpec& spec() const noexcept override { return spec_; }
  std::string describe() const override {
    return layout_.format + " '" + path_ + "' " + spec_.describe();
  }
  std::string layout() const override { return layout_.layout; }
  const Metadata& metadata() const noexcept override { return layout_.metadata; }
  std::string io_method() const override {
    return (direct_ ? "direct" : "mmap") + (io_note_.empty() ? "" : " (" + io_note_ + ")");
  }
  std::size_t buffer_bytes(std::int64_t, int) const override {
    return direct_ ? direct_->buffer_bytes() : 0;
  }

  // pread: one copy from the page cache (or the disk) into the caller's buffer, no mapping.
  void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) override {
    const std::size_t bytes = static_cast<std::size_t>(n) * spec_.row_bytes();
    if (direct_) {
      direct_->read(layout_.offset + static_cast<std::size_t>(y0) * spec_.row_bytes(), bytes, dst);
      if (layout_.swap)
        reverse_bytes(dst, bytes / sample_bytes(spec_.type), sample_bytes(spec_.type));
      return;
    }
    std::byte* const first = dst;
    std::size_t left = bytes;
    auto offset =
        static_cast<off_t>(layout_.offset + static_cast<std::size_t>(y0) * spec_.row_bytes());
    while (left > 0) {
      const ssize_t r = ::pread(fd_, dst, left, offset);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw Error(ErrorKind::io, r < 0 ? system_message("cannot read input", path_, errno)
                                         : "input '" + path_ + "' became shorter while reading");
      dst += r;
      left -= static_cast<std::size_t>(r);
      offset += r;
    }
    if (layout_.swap)
      reverse_bytes(first, bytes / sample_bytes(spec_.type), sample_bytes(spec_.type));
  }

  // The disk starts reading max_bytes from row y0 on and this returns: a cold file comes in
  // while the job sets up, or while the band before is being read. (The page cache holds the
  // rows: nothing of ours.)
  void prefetch(std::int64_t y0, std::size_t max_bytes) override {
    // Direct I/O: read-ahead would fill the page cache this mode keeps clear.
    if (direct_ || fd_ < 0 || y0 < 0 || y0 >= spec_.height) return;
    const std::size_t at = layout_.offset + static_cast<std::size_t>(y0) * spec_.row_bytes();
    ::posix_fadvise(fd_, static_cast<off_t>(at), static_cast<off_t>(max_bytes),
                    POSIX_FADV_WILLNEED);
  }

  const std::byte* rows(std::int64_t y0, std::int64_t n, RowArena& arena) override {
    const std::size_t bytes = static_cast<std::size_t>(n) * spec_.row_bytes();
    if (direct_) {  // the band in requests side by side, straight into a pooled aligned buffer
      const std::byte* p = nullptr;
      auto held = direct_->read_pooled(
          layout_.offset + static_cast<std::size_t>(y0) * spec_.row_bytes(), bytes, &p);
      if (layout_.swap)
        reverse_bytes(const_cast<std::byte*>(p), bytes / sample_bytes(spec_.type),
                      sample_bytes(spec_.type));
      arena.keep(std::move(held));
      return p;
    }
    if (layout_.swap) {  // big endian: a swapped copy, not the mapping
      std::byte* out = arena.take(bytes);
      read_rows(y0, n, out);
      return out;
    }
    // Start reading the whole window now: a cold file is read ahead while earlier bands compute.
    return map(y0, bytes, arena, true);
  }

  // Only where the rows are in the page cache (a few pages sampled): a cold band reads faster by
  // pread, whose read-ahead makes large disk reads where page faults read 128 KiB at a time.
  // Where the window cannot be mapped (an address-space limit), pread needs no mapping.
  const std::byte* mapped_rows(std::int64_t y0, std::int64_t n, RowArena& arena) override {
    if (layout_.swap || direct_) return nullptr;
    const std::size_t bytes = static_cast<std::size_t>(n) * spec_.row_bytes();
    const std::byte* p = nullptr;
    try {
      p = map(y0, bytes, arena, false);
    } catch (const Error&) {
      return nullptr;
    }
    return resident(p, bytes) ? p : nullptr;
  }

 private:
  static bool resident(const std::byte* p, std::size_t bytes) {
    constexpr int kSamples = 8;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (int i = 0; i < kSamples; ++i) {
      const std::uintptr_t at = (reinterpret_cast<std::uintptr_t>(p) + bytes * i / kSamples);
      unsigned char in_core = 0;
      if (::mincore(reinterpret_cast<void*>(at / page * page), 1, &in_core) != 0 ||
          (in_core & 1) == 0)
        return false;
    }
    return true;
  }

  const std::byte* map(std::int64_t y0, std::size_t bytes, RowArena& arena, bool willneed) {
    bip::mapped_region region;
    try {
      region =
          bip::mapped_region(mapping_, bip::read_only,
                             static_cast<bip::offset_t>(
                                 layout_.offset + static_cast<std::size_t>(y0) * spec_.row_bytes()),
                             bytes);
    } catch (const bip::interprocess_exception& e) {
      throw Error(ErrorKind::io, "cannot map rows of input '" + path_ + "': " + e.what() +
                                     ": lower --mem-limit or raise the address-space limit");
    }
    if (willneed) region.advise(bip::mapped_region::advice_willneed);
    auto* p = static_cast<const std::byte*>(region.get_address());
    arena.keep(std::make_shared<bip::mapped_region>(std::move(region)));
    return p;
  }

  std::string path_;
  int fd_ = -1;
  FileLayout layout_;
  ImageSpec spec_;
  bip::file_mapping mapping_;
  int mapped_slot_ = -1;
  std::unique_ptr<direct::Reader> direct_;
  std::string io_note_;  // why not direct (a refusal), or empty
};

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
              lock_offset(header.size(), spec, o.row_end > 0 ? o.row_end : spec.height),
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
            ? lock_offset(header_.size(), spec, o.row_end > 0 ? o.row_end : spec.height)
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
    // read (with 4 x 8 MiB a cold 6 GiB copy took 10.6 s against dd's 6.6 s): an eighth of the
    // job's memory, 4 to 32 requests; the planner counts them (buffer_bytes).
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

 private:
  ImageSpec spec_;
};

}  // namespace

void reverse_bytes(std::byte* p, std::size_t samples, std::size_t width) {
  for (std::size_t i = 0; i < samples; ++i, p += width) std::reverse(p, p + width);
}

namespace {
// The --io choice of the input open_source is opening: tiff_read.cpp hands its uncompressed
// contiguous strips to make_mapped_source without the hints.
thread_local const RawHints* t_hints = nullptr;
struct HintsScope {
  explicit HintsScope(const RawHints& h) : saved(t_hints) { t_hints = &h; }
  ~HintsScope() { t_hints = saved; }
  const RawHints* saved;
};

// O_DIRECT for `path` when `io` asks for it (auto: a file mostly not in the page cache and larger
// than the threshold); null with *note set where the file system refuses it.
std::unique_ptr<direct::Reader> direct_reader(const std::string& path, int fd,
                                              const FileLayout& layout, const RawHints& hints,
                                              std::string* note) {
  if (hints.io != "auto" && hints.io != "mmap" && hints.io != "direct")
    throw Error(ErrorKind::usage, "--io takes auto, mmap or direct, got '" + hints.io + "'");
  if (hints.io == "mmap") return nullptr;
  const std::uint64_t bytes = layout.spec.total_bytes();
  if (hints.io == "auto") {
    const std::uint64_t threshold =
        hints.io_auto_bytes > 0 ? hints.io_auto_bytes : direct::memory_budget();
    // Cached data reads faster from the cache; a small file may as well stay cached.
    if (bytes <= threshold || direct::resident_fraction(fd, layout.offset, bytes) >= 0.1)
      return nullptr;
  }
  const int dfd = direct::open_direct(path, O_RDONLY);
  if (dfd < 0) {
    const int err = errno;
    *note = "O_DIRECT refused: " + std::string(std::strerror(err));
    std::fprintf(stderr,
                 "ooc: note: '%s': the file system refuses direct I/O (%s): reading through the "
                 "page cache (--io mmap)\n",
                 path.c_str(), std::strerror(err));
    return nullptr;
  }
  return std::make_unique<direct::Reader>(dfd, path);
}
}  // namespace

std::unique_ptr<Source> make_mapped_source(const std::string& path, int fd, FileLayout layout) {
  try {
    std::string note;
    std::unique_ptr<direct::Reader> d;
    if (t_hints) d = direct_reader(path, fd, layout, *t_hints, &note);
    return std::make_unique<RawSource>(path, fd, std::move(layout), std::move(d), note);
  } catch (...) {
    ::close(fd);
    throw;
  }
}

ErrorKind read_error_kind(int err) noexcept {
  return err == EMFILE || err == ENFILE || err == ENOMEM || err == EIO || err == ENOBUFS ||
                 err == EAGAIN
             ? ErrorKind::io
             : ErrorKind::input;
}

std::string full_hint(int err) {
  if (err == EFBIG)
    return ": larger than the file size limit (ulimit -f) or the file system allows; write "
           "elsewhere or raise the limit";
  if (err == ENOSPC || err == EDQUOT) return ": free some space or write elsewhere";
  return {};
}

void check_hints(const RawHints& hints, const ImageSpec& spec, const std::string& authority) {
  auto conflict = [&](const std::string& option, const std::string& given,
                      const std::string& header) {
    return Error(ErrorKind::usage, option + " " + given + " contradicts " + authority + " " +
                                       header + ": drop " + option);
  };
  if (hints.width > 0 && hints.width != spec.width)
    throw conflict("--width", std::to_string(hints.width), std::to_string(spec.width));
  if (hints.height > 0 && hints.height != spec.height)
    throw conflict("--height", std::to_string(hints.height), std::to_string(spec.height));
  if (hints.type_given && hints.type != spec.type)
    throw conflict("--type", std::string(name(hints.type)), std::string(name(spec.type)));
  if (hints.channels_given && hints.channels != spec.channels)
    throw conflict("--channels", std::to_string(hints.channels), std::to_string(spec.channels));
}

std::string partial_path(const std::string& output) {
  return output + ".partial";
}

std::unique_ptr<Source> make_synthetic_source(const std::string& pattern, const RawHints& hints,
                                              std::uint64_t seed);

namespace {

// Whether `path` ends in one of `extensions` (lower case), ignoring case.
bool has_extension(const std::string& path, std::initializer_list<const char*> extensions) {
  for (const char* e : extensions) {
    const std::string x(e);
    if (path.size() >= x.size() &&
        std::equal(x.rbegin(), x.rend(), path.rbegin(),
                   [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }))
      return true;
  }
  return false;
}

std::string format_of(int fd) {
  unsigned char m[8] = {};
  const ssize_t got = ::pread(fd, m, sizeof m, 0);
  if (got >= 6 && std::memcmp(m, "\x93NUMPY", 6) == 0) return "npy";
  if (got >= 4 && (std::memcmp(m, "II*\0", 4) == 0 || std::memcmp(m, "MM\0*", 4) == 0 ||
                   std::memcmp(m, "II+\0", 4) == 0 || std::memcmp(m, "MM\0+", 4) == 0))
    return "tiff";
  return "raw";
}

// The geometry of a headerless file: --width, --type, --channels given, height from the size.
FileLayout raw_layout(const std::string& path, const RawHints& hints, std::uintmax_t size) {
  if (hints.width <= 0)
    throw Error(ErrorKind::usage,
                "raw input '" + path + "' needs --width (samples per row, a positive number)");
  FileLayout l;
  l.spec = ImageSpec{hints.width, 1, hints.channels, hints.type};
  validate(l.spec);
  const std::uintmax_t row = l.spec.row_bytes();
  if (size == 0) throw Error(ErrorKind::input, "input '" + path + "' is empty");
  if (size % row != 0) {
    std::string msg = "input '" + path + "' is " + std::to_string(size) +
                      " bytes, not a multiple of the row size " + std::to_string(row) +
                      " bytes (width " + std::to_string(hints.width) + " x " +
                      std::to_string(hints.channels) + " channel(s) x " +
                      std::to_string(sample_bytes(hints.type)) + " bytes of " +
                      std::string(name(hints.type)) + ")";
    const std::uintmax_t pixel = l.spec.pixel_bytes();
    if (size % pixel == 0)
      msg += "; widths that fit: " + widths_that_fit(size / pixel, hints.width, 6);
    msg += "; check --width, --type and --channels";
    throw Error(ErrorKind::input, msg);
  }
  l.spec.height = static_cast<std::int64_t>(size / row);
  if (hints.height > 0 && hints.height != l.spec.height)
    throw Error(ErrorKind::input, "input '" + path + "' holds " + std::to_string(l.spec.height) +
                                      " rows of width " + std::to_string(hints.width) +
                                      ", but --height says " + std::to_string(hints.height));
  return l;
}

// The geometry of a .npy file from its header; options that contradict it are errors.
FileLayout npy_layout(const std::string& path, int fd, const RawHints& hints, std::uintmax_t size) {
  std::vector<unsigned char> head(std::min<std::uintmax_t>(size, 1 << 20));
  const ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  if (got < 0)
    throw Error(read_error_kind(errno), system_message("cannot read input", path, errno));
  const NpyLayout n = parse_npy_header(head.data(), static_cast<std::size_t>(got), path);
  check_hints(hints, n.spec, "the header of '" + path + "', which says");
  const std::uintmax_t need = n.data_offset + n.spec.total_bytes();
  if (size < need)
    throw Error(ErrorKind::input, "input '" + path + "' is truncated: its header describes " +
                                      n.spec.describe() + " (" + std::to_string(need) +
                                      " bytes with the header), the file has " +
                                      std::to_string(size));
  FileLayout l;
  l.spec = n.spec;
  l.offset = n.data_offset;
  l.swap = n.big_endian;
  l.format = "npy";
  return l;
}

}  // namespace

std::string detect_format(const std::string& path) {
  if (is_zarr_store(path)) return "zarr";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "raw";
  const std::string f = format_of(fd);
  ::close(fd);
  return f;
}

std::unique_ptr<Source> open_source(const std::string& path, const RawHints& hints,
                                    std::uint64_t seed) {
  const HintsScope scope(hints);
  if (path.rfind("synth:", 0) == 0) {
    if (hints.page != 0)
      throw Error(ErrorKind::usage, "--page applies to TIFF input; '" + path + "' is synthetic");
    if (hints.format != "auto")
      throw Error(ErrorKind::usage, "--in-format applies to files; '" + path + "' is synthetic");
    return make_synthetic_source(path.substr(6), hints, seed);
  }
  if (path.empty()) throw Error(ErrorKind::usage, "the input path is empty: name an image file");
  if (hints.format != "auto" && hints.format != "raw" && hints.format != "npy" &&
      hints.format != "tiff" && hints.format != "zarr")
    throw Error(ErrorKind::usage,
                "--in-format takes auto, raw, npy, tiff or zarr, got '" + hints.format + "'");
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw Error(ErrorKind::input, "input '" + path + "' does not exist");
  if (hints.format == "zarr" || (hints.format == "auto" && is_zarr_store(path)))
    return open_zarr_source(path, hints);
  if (hints.zarr_level >= 0)
    throw Error(ErrorKind::usage,
                "--input-level applies to OME-Zarr input; '" + path + "' is not a Zarr store");
  if (fs::is_directory(status))
    throw Error(ErrorKind::input, "input '" + path +
                                      "' is a directory, not an image file (nor a Zarr store: "
                                      "it holds no .zarray or .zgroup)");
  // Opening a FIFO would wait for a writer, and neither it nor a device has a size to plan with.
  if (!fs::is_regular_file(status))
    throw Error(ErrorKind::input, "input '" + path +
                                      "' is not a regular file (a device, FIFO or socket): ooc "
                                      "reads image files; save the data to a file first");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(read_error_kind(errno), system_message("cannot open input", path, errno));
  FileLayout layout;
  std::uintmax_t size = 0;
  std::string format = hints.format;
  try {
    size = fs::file_size(path, ec);
    if (ec) throw Error(ErrorKind::input, "cannot read the size of input '" + path + "'");
    const std::string magic = format_of(fd);
    if (format == "auto") {
      format = magic;
      if (magic == "raw" && has_extension(path, {".tif", ".tiff", ".btf", ".tf8"}))
        throw Error(ErrorKind::input, "input '" + path +
                                          "' is named like a TIFF file but does not start with "
                                          "TIFF magic bytes (II*, MM*): it is not a TIFF file, or "
                                          "it is damaged; give --in-format raw if it is raw data");
    }
    if (format == "tiff" && magic != "tiff")
      throw Error(ErrorKind::input,
                  "input '" + path + "' is not a TIFF file (it does not start with II* or MM*)");
    if (format == "npy") layout = npy_layout(path, fd, hints, size);
    if (format == "raw") layout = raw_layout(path, hints, size);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (format == "tiff") return open_tiff_source(path, fd, hints, size);
  if (hints.page != 0) {
    ::close(fd);
    throw Error(ErrorKind::usage, "--page applies to TIFF input; '" + path + "' is " + format);
  }
  return make_mapped_source(path, fd, std::move(layout));
}

namespace {
// "x.zarr" or "x.zarr/": a Zarr store.
bool zarr_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return has_extension(path, {".zarr"});
}
}  // namespace

std::string output_format(const std::string& path, const SinkOptions& options) {
  if (path == "null:") return "null";
  std::string f = options.format;
  // .btf and .tf8 are the customary names of BigTIFF files.
  if (f == "auto")
    f = has_extension(path, {".tif", ".tiff", ".btf", ".tf8"}) ? "tiff"
        : has_extension(path, {".npy"})                        ? "npy"
        : zarr_name(path)                                      ? "zarr"
                                                               : "raw";
  if (f != "raw" && f != "npy" && f != "tiff" && f != "zarr")
    throw Error(ErrorKind::usage,
                "--format takes auto, raw, npy, tiff or zarr, got '" + options.format + "'");
  return f;
}

std::int64_t output_row_alignment(const std::string& path, const SinkOptions& options) {
  if (path.empty()) return 1;
  if (output_format(path, options) == "tiff") {
    // A tiled TIFF's tile side; a striped one's strip height depends on the row size: the job
    // asks tiff_row_alignment(spec, options), which knows it.
    if (options.tile > 0) return options.tile;
    return options.pyramid_levels != 0 || options.cog ? 512 : 1;
  }
  if (output_format(path, options) != "zarr") return 1;
  const std::int64_t chunk = options.chunk > 0 ? options.chunk : 512;
  if (options.zarr_version == 3) return options.shard > 0 ? options.shard : 4 * chunk;
  return chunk;
}

std::unique_ptr<Sink> create_sink(const std::string& path, const ImageSpec& spec,
                                  const std::string& input_path, const SinkOptions& options) {
  validate(spec);
  if (path == "null:") return std::make_unique<NullSink>(spec);
  if (path.empty())
    throw Error(ErrorKind::usage, "the output path is empty: name a file (or null: to discard)");
  const std::string f = output_format(path, options);
  const bool big_name = has_extension(path, {".btf", ".tf8"});
  if (f != "zarr" && (options.chunk != 0 || options.shard != 0 || options.zarr_version != 2))
    throw Error(ErrorKind::usage,
                "--chunk, --shard and --zarr-version apply to Zarr outputs (a TIFF output takes "
                "--tile): name the output "
                ".zarr or give --format zarr");
  if (f != "zarr" && f != "tiff" && options.pyramid_levels != 0)
    throw Error(ErrorKind::usage,
                "--pyramid and --levels apply to Zarr and TIFF outputs: name the output .zarr or "
                ".tif, or give --format");
  if (f != "tiff" && options.cog)
    throw Error(ErrorKind::usage,
                "--cog makes a Cloud-Optimized GeoTIFF: name the output .tif or give --format "
                "tiff");
  if (f == "zarr") {
    if (options.tile != 0 || options.bigtiff != "auto")
      throw Error(ErrorKind::usage,
                  "--tile and --bigtiff apply to TIFF outputs; a Zarr output takes --chunk");
    return create_zarr_sink(path, spec, input_path, options);
  }
  const bool tiff_options = options.tile != 0 ||
                            (!options.compress.empty() && options.compress != "none") ||
                            options.level != -1 || options.bigtiff != "auto";
  if (f != "tiff" && tiff_options)
    throw Error(ErrorKind::usage,
                "--tile, --compress, --level and --bigtiff apply to TIFF and Zarr outputs only: "
                "name the output .tif or .zarr, or give --format");
  if (f == "tiff") {
    // In parts or resumed, each writer keeps its compressed blocks in files of its own beside the
    // temporary, and the finishing step assembles the file (tiff_parts.hpp).
    SinkOptions o = options;
    if (big_name && o.bigtiff == "auto") o.bigtiff = "yes";
    return create_tiff_sink(path, spec, input_path, o);
  }
  return std::make_unique<FileSink>(path, spec, input_path, f == "npy" ? npy_header(spec) : "",
                                    options);
}

}  // namespace ooc
