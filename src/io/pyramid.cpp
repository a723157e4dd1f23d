// The 2 x 2 mean pyramid of pyramid.hpp.
#include "io/pyramid.hpp"

#include <cmath>
#include <cstring>

#include "ooc/detail/sample_type.hpp"

namespace ooc {

ImageSpec pyramid_level(const ImageSpec& base, int k) {
  ImageSpec s = base;
  for (int i = 0; i < k; ++i) {
    s.width = (s.width + 1) / 2;
    s.height = (s.height + 1) / 2;
  }
  return s;
}

int pyramid_auto_levels(const ImageSpec& base, std::int64_t min_side) {
  int k = 0;
  ImageSpec s = base;
  while (std::min(s.width, s.height) >= min_side && std::min(s.width, s.height) > 1) {
    s = pyramid_level(s, 1);
    ++k;
  }
  return k;
}

namespace {

template <class T>
T from_mean(double m) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(m);
  } else {
    // Round half to even (the default rounding mode); the mean of samples of T lies in T.
    return static_cast<T>(std::nearbyint(m));
  }
}

template <class T>
void reduce(const ImageSpec& upper, const std::byte* a_, const std::byte* b_, std::byte* dst_) {
  const T* a = reinterpret_cast<const T*>(a_);
  const T* b = b_ ? reinterpret_cast<const T*>(b_) : a;
  T* dst = reinterpret_cast<T*>(dst_);
  const int c = upper.channels;
  const std::int64_t w = upper.width, half = w / 2;
  for (std::int64_t x = 0; x < half; ++x)
    for (int k = 0; k < c; ++k) {
      const std::int64_t i = 2 * x * c + k, j = i + c;
      // Summed in this order (top left, bottom left, top right, bottom right) so that float64
      // samples round as a NumPy reference's slices add them.
      const double s = static_cast<double>(a[i]) + static_cast<double>(b[i]) +
                       static_cast<double>(a[j]) + static_cast<double>(b[j]);
      dst[x * c + k] = from_mean<T>(s * 0.25);
    }
  if (w % 2)
    for (int k = 0; k < c; ++k) {
      const std::int64_t i = (w - 1) * c + k;
      // The last column with itself: the same four-term sum, for the same rounding.
      const double s = static_cast<double>(a[i]) + static_cast<double>(b[i]) +
                       static_cast<double>(a[i]) + static_cast<double>(b[i]);
      dst[half * c + k] = from_mean<T>(s * 0.25);
    }
}

}  // namespace

void pyramid_reduce_row(const ImageSpec& upper, const std::byte* a, const std::byte* b,
                        std::byte* dst) {
  dispatch_type(upper.type, [&](auto t) { reduce<decltype(t)>(upper, a, b, dst); });
}

PyramidBuilder::PyramidBuilder(const ImageSpec& base, int levels, std::int64_t begin,
                               std::int64_t end, Emit emit)
    : base_(base), levels_(levels), at_bottom_(end >= base.height), emit_(std::move(emit)) {
  for (int k = 0; k <= levels; ++k) {
    specs_.push_back(pyramid_level(base, k));
    if (k == 0) {
      first_.push_back(begin);
      end_.push_back(end);
    } else {
      // An odd first row above has its partner before the range; an odd last row above is
      // paired with itself only at the image's bottom.
      first_.push_back((first_[k - 1] + 1) / 2);
      end_.push_back(at_bottom_ ? specs_[k].height : end_[k - 1] / 2);
      if (end_[k] < first_[k]) end_[k] = first_[k];
    }
    pending_.emplace_back(specs_[k].row_bytes());
    pending_row_.push_back(-1);
    out_.emplace_back(specs_[k].row_bytes());
  }
}

void PyramidBuilder::feed(int k, std::int64_t row, const std::byte* data) {
  if (k > 0) emit_(k, row, data);
  if (k >= levels_) return;
  const ImageSpec& s = specs_[k];
  const std::int64_t r = row / 2;
  if (r < first_[k + 1] || r >= end_[k + 1]) return;  // no partner within this writer's range
  if (row % 2 == 0) {
    if (row + 1 < s.height) {
      std::memcpy(pending_[k].data(), data, s.row_bytes());
      pending_row_[k] = row;
      return;
    }
    pyramid_reduce_row(s, data, nullptr, out_[k + 1].data());  // the odd last row
  } else {
    if (pending_row_[k] != row - 1) return;  // its partner was never seen
    pyramid_reduce_row(s, pending_[k].data(), data, out_[k + 1].data());
    pending_row_[k] = -1;
  }
  feed(k + 1, r, out_[k + 1].data());
}

void PyramidBuilder::push(std::int64_t y, std::int64_t n, const std::byte* data,
                          std::size_t stride) {
  for (std::int64_t i = 0; i < n; ++i) feed(0, y + i, data + static_cast<std::size_t>(i) * stride);
}

}  // namespace ooc
