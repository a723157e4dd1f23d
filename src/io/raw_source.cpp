// The mapped raw source: a headerless row-major image (or the data part of a .npy file, or a
// TIFF's contiguous strips) read through memory-mapped windows (one per band, so resident memory
// stays bounded), by pread, or with O_DIRECT into aligned buffers.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "direct.hpp"
#include "formats.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "output_file.hpp"

namespace bip = boost::interprocess;

namespace ooc {
namespace {

// Bands read ahead under direct I/O for bands of band_bytes new bytes: Reader::ahead_bands, or
// OOC_READ_AHEAD (0 to Reader::kAhead), which is there to measure what reading ahead brings.
int read_ahead_bands(std::size_t band_bytes) {
  static const int forced = [] {
    const char* v = std::getenv("OOC_READ_AHEAD");
    if (!v || !*v) return -1;
    return std::clamp(std::atoi(v), 0, direct::Reader::kAhead);
  }();
  return forced >= 0 ? forced : direct::Reader::ahead_bands(band_bytes);
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
  std::size_t buffer_bytes(std::int64_t band_rows, int /*readers*/) const override {
    // Direct: the bounce buffers, the last band's rows kept for its halo and the bands read
    // ahead (each at most twice the band's rows with the halo's).
    const std::size_t band = static_cast<std::size_t>(band_rows) * spec_.row_bytes();
    // GPU slots (several readers) read rows straight into their pinned buffers, but the bands the
    // CPU filters while CUDA starts come through rows() and read ahead too: counted either way.
    const int ahead = read_ahead_bands(band);
    return direct_ ? direct_->buffer_bytes() + 2 * (1 + ahead) * band : 0;
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
    if (direct_ || fd_ < 0 || y0 < 0 || y0 >= spec_.stacked_rows()) return;
    const std::size_t at = layout_.offset + static_cast<std::size_t>(y0) * spec_.row_bytes();
    ::posix_fadvise(fd_, static_cast<off_t>(at), static_cast<off_t>(max_bytes),
                    POSIX_FADV_WILLNEED);
  }

  const std::byte* rows(std::int64_t y0, std::int64_t n, RowArena& arena) override {
    const std::size_t bytes = static_cast<std::size_t>(n) * spec_.row_bytes();
    if (direct_) {  // the band in requests side by side, straight into a pooled aligned buffer
      // The rows it shares with the band read before (the halo: nearly half of a CPU band of 40
      // rows at radius 16) are copied from that band's buffer, not read from the disk again:
      // the page cache that would have served them twice is what direct I/O leaves out.
      std::lock_guard lock(last_mutex_);
      const std::byte* known = nullptr;
      std::size_t known_bytes = 0;
      if (last_ && !layout_.swap && y0 >= last_y0_ && y0 < last_y1_ && y0 + n > last_y1_) {
        known = last_rows_ + static_cast<std::size_t>(y0 - last_y0_) * spec_.row_bytes();
        known_bytes = static_cast<std::size_t>(last_y1_ - y0) * spec_.row_bytes();
      }
      const std::byte* p = nullptr;
      auto held =
          direct_->read_pooled(layout_.offset + static_cast<std::size_t>(y0) * spec_.row_bytes(),
                               bytes, &p, known, known_bytes);
      if (layout_.swap)
        reverse_bytes(const_cast<std::byte*>(p), bytes / sample_bytes(spec_.type),
                      sample_bytes(spec_.type));
      // The bands to come, if they keep this one's step and height: read ahead, so that the
      // disk has the next bands' requests in flight while this one is filtered (one band's
      // requests at a time left the disk idle between them: 0.6x dd on a cold file).
      const std::int64_t step = last_ ? y0 - last_y0_ : 0;
      if (step > 0 && step <= n) {
        const int ahead = read_ahead_bands(static_cast<std::size_t>(step) * spec_.row_bytes());
        for (int k = 1; k <= ahead; ++k) {
          const std::int64_t a0 = y0 + k * step, a1 = std::min(a0 + n, spec_.stacked_rows());
          if (a0 >= a1 || a0 >= spec_.stacked_rows()) break;
          direct_->read_ahead(
              layout_.offset + static_cast<std::size_t>(a0) * spec_.row_bytes(),
              static_cast<std::size_t>(a1 - a0) * spec_.row_bytes(),
              static_cast<std::size_t>(std::max<std::int64_t>(n - step, 0)) * spec_.row_bytes());
        }
      }
      last_ = held;
      last_rows_ = p;
      last_y0_ = y0;
      last_y1_ = y0 + n;
      arena.keep(std::move(held));
      return p;
    }
    if (layout_.swap) {  // big endian: a swapped copy, not the mapping
      std::byte* out = arena.take(bytes);
      read_rows(y0, n, out);
      return out;
    }
    // Start reading the whole window now: a cold file is read ahead while earlier bands compute.
    return map(y0, bytes, arena);
  }

 private:
  const std::byte* map(std::int64_t y0, std::size_t bytes, RowArena& arena) {
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
    region.advise(bip::mapped_region::advice_willneed);
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
  // Direct I/O: the last band's rows, kept for the halo the next band shares (one more pooled
  // buffer held: Reader::buffer_bytes counts the pool's).
  std::mutex last_mutex_;
  std::shared_ptr<const void> last_;
  const std::byte* last_rows_ = nullptr;
  std::int64_t last_y0_ = 0, last_y1_ = 0;
};

}  // namespace

void reverse_bytes(std::byte* p, std::size_t samples, std::size_t width) {
  for (std::size_t i = 0; i < samples; ++i, p += width) std::reverse(p, p + width);
}

namespace {
// The --io choice of the input open_source is opening (InputHintsScope, formats.hpp).
thread_local const RawHints* t_hints = nullptr;

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

InputHintsScope::InputHintsScope(const RawHints& h) : saved(t_hints) {
  t_hints = &h;
}

InputHintsScope::~InputHintsScope() {
  t_hints = saved;
}

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

}  // namespace ooc
