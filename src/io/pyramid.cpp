// The 2 x 2 (and a volume's 2 x 2 x 2) mean pyramid of pyramid.hpp.
#include "io/pyramid.hpp"

#include "ooc/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <type_traits>

#include <tbb/parallel_for.h>

#include "ooc/detail/sample_type.hpp"

namespace ooc {

ImageSpec pyramid_level(const ImageSpec& base, int k, bool halve_z) {
  ImageSpec s = base;
  for (int i = 0; i < k; ++i) {
    s.width = (s.width + 1) / 2;
    s.height = (s.height + 1) / 2;
    if (halve_z) s.depth = (s.depth + 1) / 2;
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

// The mean of four samples summed exactly: integers round half to even in integer arithmetic,
// without a branch (s >> 2 is the floor, also below zero), floats through float64.
template <class T, class Acc>
T mean4(Acc s) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(s * 0.25);
  else
    return static_cast<T>((s + 1 + ((s >> 2) & 1)) >> 2);
}

// C channels known at compile time, so that the loop over a row vectorizes.
template <class T, int C>
void reduce(std::int64_t w, const T* a, const T* b, T* dst) {
  // 8- and 16-bit sums fit in 32 bits.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<(sizeof(T) <= 2), std::int32_t, std::int64_t>>;
  const std::int64_t half = w / 2;
  // Summed in this order (top left, bottom left, top right, bottom right) so that float64
  // samples round as a NumPy reference's slices add them; the last odd column with itself.
  for (std::int64_t x = 0; x < half; ++x)
    for (int k = 0; k < C; ++k) {
      const std::int64_t i = 2 * x * C + k, j = i + C;
      dst[x * C + k] = mean4<T, Acc>(static_cast<Acc>(a[i]) + static_cast<Acc>(b[i]) +
                                     static_cast<Acc>(a[j]) + static_cast<Acc>(b[j]));
    }
  if (w % 2)
    for (int k = 0; k < C; ++k) {
      const std::int64_t i = (w - 1) * C + k;
      dst[half * C + k] = mean4<T, Acc>(static_cast<Acc>(a[i]) + static_cast<Acc>(b[i]) +
                                        static_cast<Acc>(a[i]) + static_cast<Acc>(b[i]));
    }
}

// Eight samples likewise: one rounding of their exact sum (8 x 16 bits fits in 32).
template <class T, class Acc>
T mean8(Acc s) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(s * 0.125);
  else
    return static_cast<T>((s + 3 + ((s >> 3) & 1)) >> 3);
}

// Rows a, b of the even plane and c, d of the odd one, summed plane by plane in the 2 x 2 order.
template <class T, int C>
void reduce_z(std::int64_t w, const T* a, const T* b, const T* c, const T* d, T* dst) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<(sizeof(T) <= 2), std::int32_t, std::int64_t>>;
  const std::int64_t half = w / 2;
  const auto sum = [&](std::int64_t i, std::int64_t j) {
    return static_cast<Acc>(a[i]) + static_cast<Acc>(b[i]) + static_cast<Acc>(a[j]) +
           static_cast<Acc>(b[j]) + static_cast<Acc>(c[i]) + static_cast<Acc>(d[i]) +
           static_cast<Acc>(c[j]) + static_cast<Acc>(d[j]);
  };
  for (std::int64_t x = 0; x < half; ++x)
    for (int k = 0; k < C; ++k) {
      const std::int64_t i = 2 * x * C + k;
      dst[x * C + k] = mean8<T, Acc>(sum(i, i + C));
    }
  if (w % 2)
    for (int k = 0; k < C; ++k) {
      const std::int64_t i = (w - 1) * C + k;
      dst[half * C + k] = mean8<T, Acc>(sum(i, i));
    }
}

template <class T>
void reduce_z(const ImageSpec& upper, const std::byte* a_, const std::byte* b_, const std::byte* c_,
              const std::byte* d_, std::byte* dst_) {
  const T* a = reinterpret_cast<const T*>(a_);
  const T* b = b_ ? reinterpret_cast<const T*>(b_) : a;
  const T* c = reinterpret_cast<const T*>(c_);
  const T* d = d_ ? reinterpret_cast<const T*>(d_) : c;
  T* dst = reinterpret_cast<T*>(dst_);
  switch (upper.channels) {
    case 1:
      return reduce_z<T, 1>(upper.width, a, b, c, d, dst);
    case 2:
      return reduce_z<T, 2>(upper.width, a, b, c, d, dst);
    case 3:
      return reduce_z<T, 3>(upper.width, a, b, c, d, dst);
    default:
      return reduce_z<T, 4>(upper.width, a, b, c, d, dst);
  }
}

template <class T>
void reduce(const ImageSpec& upper, const std::byte* a_, const std::byte* b_, std::byte* dst_) {
  const T* a = reinterpret_cast<const T*>(a_);
  const T* b = b_ ? reinterpret_cast<const T*>(b_) : a;
  T* dst = reinterpret_cast<T*>(dst_);
  switch (upper.channels) {
    case 1:
      return reduce<T, 1>(upper.width, a, b, dst);
    case 2:
      return reduce<T, 2>(upper.width, a, b, dst);
    case 3:
      return reduce<T, 3>(upper.width, a, b, dst);
    default:
      return reduce<T, 4>(upper.width, a, b, dst);
  }
}

// The 2 x 2 mean of the valid samples (not NaN, not `nodata`) as doubles, rounded as mean4
// rounds (half to even: s / n is a half only for n 2 or 4, where it is exact); nodata where the
// block has none. The odd last column and row count twice, as in reduce, which leaves their mean
// the same.
template <class T>
void reduce_masked(const ImageSpec& upper, const T* a, const T* b, T* dst, double nodata) {
  const int C = upper.channels;
  const std::int64_t w = upper.width, half = (w + 1) / 2;
  const auto hole = [&](double v) { return std::isnan(v) || v == nodata; };
  const auto store = [&](double v) -> T {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(v);
    } else {
      if (std::isnan(v)) return T{0};
      return static_cast<T>(std::clamp(std::nearbyint(v), double(std::numeric_limits<T>::lowest()),
                                       double(std::numeric_limits<T>::max())));
    }
  };
  for (std::int64_t x = 0; x < half; ++x)
    for (int k = 0; k < C; ++k) {
      const std::int64_t i = 2 * x * C + k, j = 2 * x + 1 < w ? i + C : i;
      double s = 0;
      int n = 0;
      for (const T v : {a[i], b[i], a[j], b[j]})
        if (!hole(static_cast<double>(v))) {
          s += static_cast<double>(v);
          ++n;
        }
      dst[x * C + k] = store(n == 0 ? nodata : s / n);
    }
}

}  // namespace

void pyramid_reduce_row(const ImageSpec& upper, const std::byte* a, const std::byte* b,
                        std::byte* dst, std::optional<double> nodata) {
  if (nodata) {
    dispatch_type(upper.type, [&](auto t) {
      using T = decltype(t);
      const T* ta = reinterpret_cast<const T*>(a);
      reduce_masked<T>(upper, ta, b ? reinterpret_cast<const T*>(b) : ta, reinterpret_cast<T*>(dst),
                       *nodata);
    });
    return;
  }
  dispatch_type(upper.type, [&](auto t) { reduce<decltype(t)>(upper, a, b, dst); });
}

void pyramid_reduce_row_z(const ImageSpec& upper, const std::byte* a, const std::byte* b,
                          const std::byte* c, const std::byte* d, std::byte* dst) {
  dispatch_type(upper.type, [&](auto t) { reduce_z<decltype(t)>(upper, a, b, c, d, dst); });
}

void join_pyramid_edges(
    int levels, const std::function<ImageSpec(int)>& spec,
    const std::function<std::int64_t(int)>& unit_rows, const std::vector<LevelEdge>& edges,
    const std::string& temp, const std::function<void(int, std::int64_t, const std::byte*)>& write,
    const std::function<void(int, std::int64_t, std::int64_t, std::int64_t)>& incomplete,
    std::optional<double> nodata) {
  std::map<std::int64_t, std::vector<std::byte>> upper;  // level k - 1's rows held here
  for (int k = 0; k <= levels; ++k) {
    const ImageSpec s = spec(k);
    const ImageSpec up = spec(k > 0 ? k - 1 : 0);
    const std::size_t rb = s.row_bytes();
    const std::int64_t unit = unit_rows(k);
    std::map<std::int64_t, std::vector<std::byte>> rows, sources;
    for (const LevelEdge& e : edges) {
      if (e.level != k) continue;
      std::ifstream in(e.path, std::ios::binary);
      std::vector<std::byte> bytes;
      if (in && e.lo >= 0 && e.hi > e.lo && e.hi <= s.height) {
        bytes.resize(static_cast<std::size_t>(e.hi - e.lo) * rb + 1);
        in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        bytes.resize(static_cast<std::size_t>(in.gcount()));
      }
      if (bytes.empty() || bytes.size() != static_cast<std::size_t>(e.hi - e.lo) * rb)
        throw Error(ErrorKind::input, "'" + e.path +
                                          "' does not hold the rows its name says: remove '" +
                                          temp + "*' and run again");
      for (std::int64_t r = e.lo; r < e.hi; ++r) {
        const std::byte* p = bytes.data() + static_cast<std::size_t>(r - e.lo) * rb;
        (e.source ? sources : rows)[r].assign(p, p + rb);
      }
    }
    std::vector<std::int64_t> touched;
    for (const auto& [r, _] : rows) touched.push_back(r / unit);
    for (const auto& [r, _] : upper) touched.push_back(r / 2 / unit);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (const std::int64_t ur : touched) {
      const std::int64_t r0 = ur * unit, r1 = std::min(r0 + unit, s.height);
      bool whole = true;
      for (std::int64_t r = r0; r < r1; ++r) {
        if (rows.count(r)) continue;
        const auto a = upper.find(2 * r);
        const bool last = 2 * r + 1 >= up.height;
        const auto b = last ? upper.end() : upper.find(2 * r + 1);
        if (k == 0 || a == upper.end() || (!last && b == upper.end())) {
          whole = false;
          continue;
        }
        std::vector<std::byte> row(rb);
        pyramid_reduce_row(up, a->second.data(), last ? nullptr : b->second.data(), row.data(),
                           nodata);
        rows[r] = std::move(row);
      }
      if (!whole) {
        incomplete(k, ur, r0, r1);
        continue;
      }
      std::vector<std::byte> block(static_cast<std::size_t>(r1 - r0) * rb);
      for (std::int64_t r = r0; r < r1; ++r)
        std::memcpy(block.data() + static_cast<std::size_t>(r - r0) * rb, rows[r].data(), rb);
      write(k, ur, block.data());
    }
    rows.merge(sources);  // keeps the joined row where both have one
    upper = std::move(rows);
  }
}

PyramidBuilder::PyramidBuilder(const ImageSpec& base, int levels, std::int64_t begin,
                               std::int64_t end, Emit emit, Emit orphan)
    : base_(base),
      levels_(levels),
      carried_(static_cast<std::size_t>(levels) + 1),
      blocks_(static_cast<std::size_t>(levels) + 1),
      at_bottom_(end >= base.height),
      emit_(std::move(emit)),
      orphan_(std::move(orphan)) {
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
  }
}

void PyramidBuilder::push(std::int64_t y, std::int64_t n, const std::byte* data,
                          std::size_t stride) {
  // Level by level: the rows of level k this push brings (consecutive) make consecutive rows of
  // level k + 1, reduced in parallel, then emitted in order and reduced further. Level 1 is a
  // quarter of level 0's work and level 2 a sixteenth; with the deeper levels reduced one row at a
  // time in the (serial) write stage, a 32-core run's pyramid cost 1.9x its level 0 alone.
  std::int64_t yk = y, nk = n;
  const std::byte* dk = data;
  std::size_t sk = stride;
  for (int k = 0; k < levels_ && nk > 0; ++k) {
    const ImageSpec& s = specs_[k];
    const std::size_t rb = s.row_bytes(), next_rb = specs_[k + 1].row_bytes();
    const auto row = [&](std::int64_t i) { return dk + static_cast<std::size_t>(i) * sk; };
    struct Pair {
      const std::byte *a, *b;  // b null: the odd last row, averaged with itself
    };
    std::vector<Pair> pairs;
    std::int64_t r0 = -1;
    std::vector<std::byte>& carried = carried_[k];  // a partner from the last push, kept apart
    for (std::int64_t i = 0; i < nk; ++i) {
      const std::int64_t rk = yk + i, r = rk / 2;
      if (r < first_[k + 1] || r >= end_[k + 1]) {  // no partner in this writer's range
        if (orphan_) orphan_(k, rk, row(i));
        continue;
      }
      if (rk % 2 == 0 && rk + 1 < s.height) {
        if (i + 1 < nk) continue;  // paired with the next row of the block
        std::memcpy(pending_[k].data(), row(i), rb);
        pending_row_[k] = rk;
        continue;
      }
      const std::byte* a = row(i);
      const std::byte* b = nullptr;
      if (rk % 2 == 1) {
        if (i > 0) {
          a = row(i - 1);
        } else {
          if (pending_row_[k] != rk - 1) continue;  // its partner was never seen
          carried.assign(pending_[k].begin(), pending_[k].end());
          a = carried.data();
          pending_row_[k] = -1;
        }
        b = row(i);
      }
      if (r0 < 0) r0 = r;
      pairs.push_back({a, b});
    }
    std::vector<std::byte>& out = blocks_[k + 1];
    out.resize(pairs.size() * next_rb);
    const auto reduce = [&](std::size_t j) {
      pyramid_reduce_row(s, pairs[j].a, pairs[j].b, out.data() + j * next_rb, nodata_);
    };
    if (pairs.size() > 1)
      tbb::parallel_for(std::size_t{0}, pairs.size(), reduce);
    else if (!pairs.empty())
      reduce(0);
    for (std::size_t j = 0; j < pairs.size(); ++j)
      emit_(k + 1, r0 + static_cast<std::int64_t>(j), out.data() + j * next_rb);
    yk = r0;
    nk = static_cast<std::int64_t>(pairs.size());
    dk = out.data();
    sk = next_rb;
  }
}

VolumePyramidBuilder::VolumePyramidBuilder(const ImageSpec& base, int levels, bool halve_z,
                                           Emit emit)
    : levels_(levels),
      halve_z_(halve_z),
      even_(static_cast<std::size_t>(levels) + 1),
      pending_row_(static_cast<std::size_t>(levels) + 1, -1),
      carried_(static_cast<std::size_t>(levels) + 1),
      blocks_(static_cast<std::size_t>(levels) + 1),
      emit_(std::move(emit)) {
  for (int k = 0; k <= levels; ++k) {
    specs_.push_back(pyramid_level(base, k, halve_z));
    pending_.emplace_back(specs_.back().row_bytes());
  }
}

std::size_t VolumePyramidBuilder::held_bytes(const ImageSpec& base, int levels, bool halve_z) {
  std::size_t b = 0;
  for (int k = 0; k < levels; ++k) {
    const ImageSpec s = pyramid_level(base, k, halve_z);
    b += 2 * s.row_bytes();  // the pending row and its carried copy
    if (halve_z && s.depth > 1) b += s.row_bytes() * static_cast<std::size_t>(s.height);
  }
  return b;
}

void VolumePyramidBuilder::push(std::int64_t y, std::int64_t n, const std::byte* data,
                                std::size_t stride) {
  const std::int64_t h = specs_[0].height;
  while (n > 0) {
    const std::int64_t m = std::min(n, h - y % h);  // rows of one plane
    push_level(0, y, m, data, stride);
    data += static_cast<std::size_t>(m) * stride;
    y += m;
    n -= m;
  }
}

// Rows [y, y + n) of level k, all of one plane: kept where the plane is an even one awaiting its
// partner, else reduced (in parallel, as PyramidBuilder does) into the rows of level k + 1 they
// make, which are emitted and pushed on.
void VolumePyramidBuilder::push_level(int k, std::int64_t y, std::int64_t n, const std::byte* data,
                                      std::size_t stride) {
  if (k >= levels_ || n <= 0) return;
  const auto K = static_cast<std::size_t>(k);
  const ImageSpec& s = specs_[K];
  const std::int64_t h = s.height, z = y / h, y0 = y % h;
  const std::size_t rb = s.row_bytes(), next_rb = specs_[K + 1].row_bytes();
  const auto row = [&](std::int64_t i) { return data + static_cast<std::size_t>(i) * stride; };
  if (halve_z_ && z % 2 == 0 && z + 1 < s.depth) {
    even_[K].resize(rb * static_cast<std::size_t>(h));
    for (std::int64_t i = 0; i < n; ++i)
      std::memcpy(even_[K].data() + static_cast<std::size_t>(y0 + i) * rb, row(i), rb);
    return;
  }
  const std::byte* even = halve_z_ && z % 2 == 1 ? even_[K].data() : nullptr;
  struct Pair {
    const std::byte *a, *b;  // b null: the plane's odd last row, averaged with itself
    std::int64_t top;        // the upper row's index in its plane
  };
  std::vector<Pair> pairs;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r = y0 + i;
    if (r % 2 == 0 && r + 1 < h) {
      if (i + 1 < n) continue;  // paired with the next row of the block
      std::memcpy(pending_[K].data(), row(i), rb);
      pending_row_[K] = y + i;
      continue;
    }
    if (r % 2 == 0) {
      pairs.push_back({row(i), nullptr, r});
      continue;
    }
    const std::byte* a = nullptr;
    if (i > 0) {
      a = row(i - 1);
    } else {
      if (pending_row_[K] != y - 1)
        throw std::logic_error("a volume's pyramid was given its rows out of order");
      carried_[K].assign(pending_[K].begin(), pending_[K].end());
      a = carried_[K].data();
      pending_row_[K] = -1;
    }
    pairs.push_back({a, row(i), r - 1});
  }
  if (pairs.empty()) return;
  std::vector<std::byte>& out = blocks_[K + 1];
  out.resize(pairs.size() * next_rb);
  const auto reduce = [&](std::size_t j) {
    const Pair& p = pairs[j];
    std::byte* dst = out.data() + j * next_rb;
    if (!even) return pyramid_reduce_row(s, p.a, p.b, dst);
    const std::byte* e = even + static_cast<std::size_t>(p.top) * rb;
    pyramid_reduce_row_z(s, e, p.b ? e + rb : nullptr, p.a, p.b, dst);
  };
  if (pairs.size() > 1)
    tbb::parallel_for(std::size_t{0}, pairs.size(), reduce);
  else
    reduce(0);
  const std::int64_t next_h = specs_[K + 1].height;
  const std::int64_t first = (halve_z_ ? z / 2 : z) * next_h + pairs[0].top / 2;
  for (std::size_t j = 0; j < pairs.size(); ++j)
    emit_(k + 1, first + static_cast<std::int64_t>(j), out.data() + j * next_rb);
  push_level(k + 1, first, static_cast<std::int64_t>(pairs.size()), out.data(), next_rb);
}

}  // namespace ooc
