// MemorySource and MemorySink: an image in the caller's memory, any strides, either byte order.
#include "ooc/memory.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace ooc {
namespace {

MemoryImage checked(MemoryImage m) {
  validate(m.spec);
  if (sample_bytes(m.spec.type) == 1) m.swap_bytes = false;  // one byte has no order
  return m;
}

// Rows stored as the image's rows: they can be copied whole, or handed out in place.
bool dense_rows(const MemoryImage& m) {
  const auto item = static_cast<std::ptrdiff_t>(sample_bytes(m.spec.type));
  return !m.swap_bytes && (m.spec.channels == 1 || m.channel_stride == item) &&
         (m.spec.width == 1 || m.col_stride == item * m.spec.channels);
}

std::ptrdiff_t plane_stride(const MemoryImage& m) {
  return m.plane_stride != 0 ? m.plane_stride
                             : static_cast<std::ptrdiff_t>(m.spec.height) * m.row_stride;
}

// The whole image as well, rows row_bytes() apart, planes one after the other.
bool dense(const MemoryImage& m) {
  const auto row = static_cast<std::ptrdiff_t>(m.spec.row_bytes());
  return dense_rows(m) && (m.spec.height == 1 || m.row_stride == row) &&
         (m.spec.depth == 1 || plane_stride(m) == static_cast<std::ptrdiff_t>(m.spec.height) * row);
}

// Stacked row r: row r % height of plane r / height.
std::byte* row_at(const MemoryImage& m, std::int64_t r) {
  const std::int64_t z = r / m.spec.height, y = r % m.spec.height;
  return m.data + static_cast<std::ptrdiff_t>(z) * plane_stride(m) +
         static_cast<std::ptrdiff_t>(y) * m.row_stride;
}

// A Source hands out at least one row; reads and writes may be empty.
void check_rows(const ImageSpec& s, std::int64_t y0, std::int64_t n, std::int64_t least = 0) {
  if (y0 < 0 || n < least || y0 + n > s.stacked_rows())
    throw std::logic_error("rows outside image");
}

// One row, sample by sample, between any two layouts (N: the sample's bytes).
template <std::size_t N>
void copy_row_samples(const std::byte* src, std::ptrdiff_t src_col, std::ptrdiff_t src_ch,
                      std::byte* dst, std::ptrdiff_t dst_col, std::ptrdiff_t dst_ch,
                      std::int64_t width, int channels, bool swap) {
  for (std::int64_t x = 0; x < width; ++x) {
    const std::byte* s = src + x * src_col;
    std::byte* d = dst + x * dst_col;
    for (int c = 0; c < channels; ++c) {
      std::byte v[N];
      std::memcpy(v, s + c * src_ch, N);
      if (swap) std::reverse(v, v + N);
      std::memcpy(d + c * dst_ch, v, N);
    }
  }
}

// f(std::integral_constant<std::size_t, N>) for the sample size N of `type`.
template <class F>
void with_sample_bytes(SampleType type, F f) {
  switch (sample_bytes(type)) {
    case 1:
      return f(std::integral_constant<std::size_t, 1>{});
    case 2:
      return f(std::integral_constant<std::size_t, 2>{});
    case 4:
      return f(std::integral_constant<std::size_t, 4>{});
    default:
      return f(std::integral_constant<std::size_t, 8>{});
  }
}

// Row `y` of the image into `dst`, the image's native, contiguous row.
void read_row(const MemoryImage& m, std::int64_t y, std::byte* dst) {
  const ImageSpec& s = m.spec;
  if (dense_rows(m)) {
    std::memcpy(dst, row_at(m, y), s.row_bytes());
    return;
  }
  const auto item = static_cast<std::ptrdiff_t>(sample_bytes(s.type));
  with_sample_bytes(s.type, [&](auto n) {
    copy_row_samples<decltype(n)::value>(row_at(m, y), m.col_stride, m.channel_stride, dst,
                                         item * s.channels, item, s.width, s.channels,
                                         m.swap_bytes);
  });
}

// The image's row `src` into row `y` of the memory.
void write_row(const MemoryImage& m, std::int64_t y, const std::byte* src) {
  const ImageSpec& s = m.spec;
  if (dense_rows(m)) {
    std::memcpy(row_at(m, y), src, s.row_bytes());
    return;
  }
  const auto item = static_cast<std::ptrdiff_t>(sample_bytes(s.type));
  with_sample_bytes(s.type, [&](auto n) {
    copy_row_samples<decltype(n)::value>(src, item * s.channels, item, row_at(m, y), m.col_stride,
                                         m.channel_stride, s.width, s.channels, m.swap_bytes);
  });
}

}  // namespace

MemorySource::MemorySource(const MemoryImage& image, std::string name)
    : image_(checked(image)), name_(std::move(name)) {}

std::string MemorySource::describe() const {
  return name_ + " " + image_.spec.describe();
}

const std::byte* MemorySource::rows(std::int64_t y0, std::int64_t n, RowArena& arena) {
  check_rows(image_.spec, y0, n, 1);
  if (dense(image_)) return row_at(image_, y0);
  std::byte* dst = arena.take(static_cast<std::size_t>(n) * image_.spec.row_bytes());
  read_rows(y0, n, dst);
  return dst;
}

void MemorySource::read_rows(std::int64_t y0, std::int64_t n, std::byte* dst) {
  check_rows(image_.spec, y0, n);
  const std::size_t row = image_.spec.row_bytes();
  for (std::int64_t i = 0; i < n; ++i)
    read_row(image_, y0 + i, dst + static_cast<std::size_t>(i) * row);
}

void MemorySource::copy_in() {
  const ImageSpec& s = image_.spec;
  // Not zeroed: every byte is written here, and untouched pages would only cost time.
  copy_.reset(new std::byte[s.total_bytes()]);
  read_rows(0, s.stacked_rows(), copy_.get());
  image_ = MemoryImage::dense(s, copy_.get());
}

MemorySink::MemorySink(const MemoryImage& image, std::string name)
    : image_(checked(image)), name_(std::move(name)) {}

std::string MemorySink::describe() const {
  return name_ + " " + image_.spec.describe();
}

std::byte* MemorySink::rows_in_place(std::int64_t y0, std::int64_t n) {
  check_rows(image_.spec, y0, n);
  return in_place_ && dense(image_) ? row_at(image_, y0) : nullptr;
}

void MemorySink::write_rows(std::int64_t y0, std::int64_t n, const std::byte* data,
                            std::size_t stride) {
  check_rows(image_.spec, y0, n);
  if (n > 0 && data == row_at(image_, y0) && stride == image_.spec.row_bytes() && dense(image_))
    return;  // written in place by the kernels
  for (std::int64_t i = 0; i < n; ++i)
    write_row(image_, y0 + i, data + static_cast<std::size_t>(i) * stride);
}

}  // namespace ooc
