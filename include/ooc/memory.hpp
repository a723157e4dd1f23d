// An image in the caller's memory as a Source or a Sink: any strides and either byte order, so
// that a program (the Python module's NumPy arrays, the tests' buffers) can run a Job over memory
// it owns without writing a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc {

// Where the samples of an image lie. The strides are in bytes, any sign (a reversed view) or 0 (a
// broadcast axis). The memory must outlive the Source or Sink made over it.
struct MemoryImage {
  ImageSpec spec;
  std::byte* data = nullptr;  // sample (0, 0, 0)
  std::ptrdiff_t row_stride = 0, col_stride = 0, channel_stride = 0;
  bool swap_bytes = false;  // samples stored in the other byte order than the machine's
  // A volume's planes (spec.depth > 1): bytes from one plane's row 0 to the next's; 0 takes
  // height x row_stride (planes one after the other).
  std::ptrdiff_t plane_stride = 0;

  // An image stored as the pipeline stores one: rows row_bytes() apart, native byte order.
  static MemoryImage dense(const ImageSpec& spec, std::byte* data) {
    const auto item = static_cast<std::ptrdiff_t>(sample_bytes(spec.type));
    return {spec, data, static_cast<std::ptrdiff_t>(spec.row_bytes()), item * spec.channels, item};
  }
};

// Reads the image where it lies. Rows stored as the image's rows are handed out in place (no
// copy: a mapped file's pages are read as the bands reach them); others are gathered into the
// band's own buffer, which the plan counts as the band's input rows.
class MemorySource : public Source {
 public:
  // `name` starts describe() ("memory", "array").
  explicit MemorySource(const MemoryImage& image, std::string name = "memory");
  const ImageSpec& spec() const noexcept override { return image_.spec; }
  std::string describe() const override;
  const std::byte* rows(std::int64_t y0, std::int64_t n, RowArena& arena) override;
  void read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) override;
  // Reads the whole image into memory of its own and serves the rows from there, so that the
  // caller's bytes may be overwritten meanwhile (an output sharing them).
  void copy_in();

 private:
  MemoryImage image_;
  std::string name_;
  std::unique_ptr<std::byte[]> copy_;
};

// Writes the rows where the image lies; commit() has nothing to do.
class MemorySink : public Sink {
 public:
  explicit MemorySink(const MemoryImage& image, std::string name = "memory");
  const ImageSpec& spec() const noexcept override { return image_.spec; }
  std::string describe() const override;
  void write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                  std::size_t stride) override;
  void commit() override {}
  std::string io_method() const override { return "none"; }  // no file is written
  // Rows stored as the image's rows, one after another: the kernels write them in place, unless
  // the source reads this memory too (in_place(false): a band's output would overwrite rows that
  // other bands still read).
  std::byte* rows_in_place(std::int64_t y0, std::int64_t n) override;
  void in_place(bool allowed) noexcept { in_place_ = allowed; }

 private:
  MemoryImage image_;
  std::string name_;
  bool in_place_ = false;
};

}  // namespace ooc
