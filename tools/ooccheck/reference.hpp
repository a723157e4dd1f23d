// The float64 references of the separable and the 2-D convolution, as scipy.ndimage defines them
// (written from its definitions, not from ooc's kernels), read from any Source a band of output
// rows at a time, with the magnitudes that bound the rounding errors of any order of summing.
// ooccheck judges oocconv's outputs against them, and the unit and GPU tests the operations'
// (tests/unit/reference.hpp), so both check against the same code.
#pragma once

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "ooc/border.hpp"
#include "ooc/detail/sample_type.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"

namespace ooc::check {

// Row of samples of type t as doubles.
inline void to_double(SampleType t, const std::byte* p, std::int64_t n, double* out) {
  auto conv = [&]<class T>(T) {
    for (std::int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * sizeof(T), sizeof(T));
      out[i] = static_cast<double>(v);
    }
  };
  ooc::dispatch_type(t, conv);
}

// |tap|, at least `floor` for a non-zero tap: the accumulator holds a tap below its smallest
// normal number only to within floor x its epsilon, so the bound counts such a tap as `floor`.
inline std::vector<double> magnitudes(std::vector<double> v, double floor) {
  for (double& x : v) x = x == 0 ? 0.0 : std::max(std::abs(x), floor);
  return v;
}

// The rows a band reads: coordinate first + j (j < coords) of the band reads slot slot_of[j],
// and slot s holds source row src_rows[s] through the border rule (-1: the constant). Coordinates
// that name one row share its slot: a radius beyond the height folds many onto each, and each
// distinct row is then read (and filtered along x) once.
inline void band_slots(std::int64_t first, std::int64_t coords, std::int64_t h,
                       ooc::BorderMode border, std::vector<std::int64_t>& slot_of,
                       std::vector<std::int64_t>& src_rows) {
  slot_of.resize(static_cast<std::size_t>(coords));
  src_rows.clear();
  // slot_ref(src) names the slot of source row src (-1: the constant), -1 while it has none.
  auto fill_slots = [&](auto&& slot_ref) {
    for (std::int64_t j = 0; j < coords; ++j) {
      const std::int64_t src = ooc::map_border(first + j, h, border);
      std::int64_t& slot = slot_ref(src);
      if (slot < 0) {
        slot = static_cast<std::int64_t>(src_rows.size());
        src_rows.push_back(src);
      }
      slot_of[static_cast<std::size_t>(j)] = slot;
    }
  };
  if (h + 1 <= coords) {  // a radius beyond the height: a table of every row is the smaller
    std::vector<std::int64_t> table(static_cast<std::size_t>(h + 1), -1);
    fill_slots([&](std::int64_t src) -> std::int64_t& {
      return table[static_cast<std::size_t>(src + 1)];
    });
  } else {
    std::unordered_map<std::int64_t, std::int64_t> table;
    table.reserve(static_cast<std::size_t>(coords));
    fill_slots([&](std::int64_t src) -> std::int64_t& {
      return table.try_emplace(src, -1).first->second;
    });
  }
}

// out[i] = sum_k w[k] * src[k][i], k ascending.
inline void weighted_sum(const std::vector<const double*>& src, const std::vector<double>& w,
                         double* out, std::int64_t n) {
  std::fill(out, out + n, 0.0);
  for (std::size_t k = 0; k < w.size(); ++k) {
    const double wk = w[k];
    const double* s = src[k];
    for (std::int64_t i = 0; i < n; ++i) out[i] += wk * s[i];
  }
}

// The float64 reference of oocconv's separable convolution, one band of output rows at a time,
// with M = sum |column tap| x |row tap| x |input| over each output sample's support (the scale
// of the rounding errors of any order of summing those products).
class SeparableReference {
 public:
  // row, col: the taps along x and along y, in convolution order (scipy.ndimage.convolve1d's
  // weights), each of odd count.
  SeparableReference(ooc::Source& in, const std::vector<double>& row,
                     const std::vector<double>& col, ooc::BorderMode border, double cval,
                     double tap_floor)
      : in_(in),
        s_(in.spec()),
        n_(s_.row_samples()),
        tx_(row),
        ty_(col),
        rx_(static_cast<std::int64_t>(row.size() / 2)),
        ry_(static_cast<std::int64_t>(col.size() / 2)),
        border_(border),
        cval_(cval),
        ax_(magnitudes(tx_, tap_floor)),
        ay_(magnitudes(ty_, tap_floor)) {}

  std::int64_t row_samples() const { return n_; }

  // Rows [y0, y0 + rows) of the exact result and of M; valid until the next call. Each distinct
  // source row of the band (through the border rule, rows + 2 ry coordinates may name the same
  // row many times over when the radius exceeds the height) is filtered along x once.
  void compute_band(std::int64_t y0, std::int64_t rows) {
    band_slots(y0 - ry_, rows + 2 * ry_, s_.height, border_, slot_of_, src_rows_);
    const auto slots = static_cast<std::int64_t>(src_rows_.size());
    rowpass_.resize(static_cast<std::size_t>(slots * n_));
    rowpass_mag_.resize(rowpass_.size());
    tbb::parallel_for(std::int64_t{0}, slots, [&](std::int64_t s) {
      row_pass(src_rows_[static_cast<std::size_t>(s)], rowpass_.data() + s * n_,
               rowpass_mag_.data() + s * n_);
    });
  }

  // Output row y0 + y of the band (after compute_band) into out, and its M into mag.
  void column_pass(std::int64_t y, double* out, double* mag) const {
    // out(Y) = sum_k ty[k] * rowpass(Y + ry - k), rowpass(Y') at coordinate j = Y' - y0 + ry of
    // the band. Taps that land on one source row are summed first (w), and so are their
    // magnitudes (a): the row is then read once.
    thread_local std::vector<std::int64_t> pos;  // slot -> its entry in w and a, or -1
    thread_local std::vector<std::int64_t> used;
    thread_local std::vector<double> w, a;
    thread_local std::vector<const double*> src;
    if (pos.size() < src_rows_.size()) pos.resize(src_rows_.size(), -1);
    used.clear();
    w.clear();
    a.clear();
    for (std::size_t k = 0; k < ty_.size(); ++k) {
      const std::int64_t slot =
          slot_of_[static_cast<std::size_t>(y + 2 * ry_ - static_cast<std::int64_t>(k))];
      std::int64_t& p = pos[static_cast<std::size_t>(slot)];
      if (p < 0) {
        p = static_cast<std::int64_t>(used.size());
        used.push_back(slot);
        w.push_back(0.0);
        a.push_back(0.0);
      }
      w[static_cast<std::size_t>(p)] += ty_[k];
      a[static_cast<std::size_t>(p)] += ay_[k];
    }
    src.resize(used.size());
    for (std::size_t e = 0; e < used.size(); ++e) src[e] = rowpass_.data() + used[e] * n_;
    weighted_sum(src, w, out, n_);
    for (std::size_t e = 0; e < used.size(); ++e) src[e] = rowpass_mag_.data() + used[e] * n_;
    weighted_sum(src, a, mag, n_);
    for (const std::int64_t slot : used) pos[static_cast<std::size_t>(slot)] = -1;
  }

 private:
  // Source row src_row filtered along x, and its magnitude. A row outside the image under the
  // constant rule (src_row -1) is the constant itself: scipy pads the x-filtered image, not the
  // input, along y.
  void row_pass(std::int64_t src_row, double* out, double* mag) const {
    if (src_row < 0) {
      std::fill(out, out + n_, cval_);
      std::fill(mag, mag + n_, std::abs(cval_));
      return;
    }
    const int C = s_.channels;
    thread_local std::vector<std::byte> raw;
    thread_local std::vector<double> x, pad;
    thread_local std::vector<const double*> src;
    raw.resize(s_.row_bytes());
    x.resize(static_cast<std::size_t>(n_));
    in_.read_rows(src_row, 1, raw.data());
    to_double(s_.type, raw.data(), n_, x.data());
    // Pixel q in [-rx, W + rx) at pad[(q + rx) * C]; outside the row, the border rule along x.
    pad.resize(static_cast<std::size_t>((s_.width + 2 * rx_) * C));
    for (std::int64_t q = -rx_; q < s_.width + rx_; ++q) {
      double* p = pad.data() + (q + rx_) * C;
      const std::int64_t m = ooc::map_border(q, s_.width, border_);
      for (int c = 0; c < C; ++c) p[c] = m < 0 ? cval_ : x[m * C + c];
    }
    // convolve1d: out(p) = sum_k tx[k] * in(p + rx - k), in(p') at pad[(p' + rx) * C].
    src.resize(tx_.size());
    for (std::size_t k = 0; k < tx_.size(); ++k)
      src[k] = pad.data() + (2 * rx_ - static_cast<std::int64_t>(k)) * C;
    weighted_sum(src, tx_, out, n_);
    for (double& v : pad) v = std::abs(v);
    weighted_sum(src, ax_, mag, n_);
  }

  ooc::Source& in_;
  ooc::ImageSpec s_;
  std::int64_t n_;
  std::vector<double> tx_, ty_;
  std::int64_t rx_, ry_;
  ooc::BorderMode border_;
  double cval_;
  std::vector<double> ax_, ay_;                // |taps| (see magnitudes)
  std::vector<std::int64_t> slot_of_;          // band coordinate j (row y0 - ry + j) -> its slot
  std::vector<std::int64_t> src_rows_;         // slot -> source row (-1: the constant border)
  std::vector<double> rowpass_, rowpass_mag_;  // slot s at s * n_
};

// A 2-D kernel in convolution order (scipy.ndimage.convolve's weights), row major, odd sides.
struct KernelTaps {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> taps;

  std::int64_t rx() const { return cols / 2; }
  std::int64_t ry() const { return rows / 2; }
};

// The float64 reference of scipy.ndimage.convolve: every output sample the sum over its whole
// K x L window, with M = sum |tap| x |input| and S = sum |input| over it (the scales of the
// rounding errors of any order of summing, and of a rank-1 factorization).
class Reference2d {
 public:
  Reference2d(ooc::Source& in, const KernelTaps& k, ooc::BorderMode border, double cval,
              double tap_floor)
      : in_(in),
        s_(in.spec()),
        n_(s_.row_samples()),
        k_(k),
        border_(border),
        cval_(cval),
        pad_n_((s_.width + 2 * k.rx()) * s_.channels),
        mag_(magnitudes(k.taps, tap_floor)) {}

  std::int64_t row_samples() const { return n_; }

  // Reads the input rows that output rows [y0, y0 + rows) need, each distinct one once, padded
  // along x by the border rule; valid until the next call.
  void load_band(std::int64_t y0, std::int64_t rows) {
    const std::int64_t ry = k_.ry();
    band_slots(y0 - ry, rows + 2 * ry, s_.height, border_, slot_of_, src_rows_);
    padded_.resize(src_rows_.size() * static_cast<std::size_t>(pad_n_));
    tbb::parallel_for(std::size_t{0}, src_rows_.size(), [&](std::size_t slot) {
      load_row(src_rows_[slot], padded_.data() + slot * static_cast<std::size_t>(pad_n_));
    });
  }

  // Output row y0 + y of the band (after load_band): the exact result, M and S.
  void output_row(std::int64_t y, double* out, double* mag, double* sum_abs) const {
    std::fill(out, out + n_, 0.0);
    std::fill(mag, mag + n_, 0.0);
    std::fill(sum_abs, sum_abs + n_, 0.0);
    const int C = s_.channels;
    const std::int64_t rx = k_.rx(), ry = k_.ry();
    // out(Y, x) = sum_{i,j} k[i][j] in(Y + ry - i, x + rx - j): input row Y + ry - i is band
    // coordinate y + 2 ry - i; pixel x + rx - j sits at (x + 2 rx - j) C of the padded row. Zero
    // taps too: 0 x inf is NaN in scipy and in oocconv, and S counts every sample.
    for (std::int64_t i = 0; i < k_.rows; ++i) {
      const double* row =
          padded_.data() + slot_of_[static_cast<std::size_t>(y + 2 * ry - i)] * pad_n_;
      for (std::int64_t j = 0; j < k_.cols; ++j) {
        const double w = k_.taps[static_cast<std::size_t>(i * k_.cols + j)];
        const double a = mag_[static_cast<std::size_t>(i * k_.cols + j)];
        const double* src = row + (2 * rx - j) * C;
        for (std::int64_t p = 0; p < n_; ++p) {
          const double v = src[p], av = std::abs(v);
          out[p] += w * v;
          mag[p] += a * av;
          sum_abs[p] += av;
        }
      }
    }
  }

 private:
  // Source row src_row as doubles at dst[(q + rx) C] for pixels q in [-rx, W + rx), the border
  // rule outside the row; row -1 (outside the image under the constant rule) is the constant:
  // scipy pads the input itself along both axes.
  void load_row(std::int64_t src_row, double* dst) const {
    if (src_row < 0) {
      std::fill(dst, dst + pad_n_, cval_);
      return;
    }
    const int C = s_.channels;
    const std::int64_t rx = k_.rx();
    thread_local std::vector<std::byte> raw;
    thread_local std::vector<double> x;
    raw.resize(s_.row_bytes());
    x.resize(static_cast<std::size_t>(n_));
    in_.read_rows(src_row, 1, raw.data());
    to_double(s_.type, raw.data(), n_, x.data());
    for (std::int64_t q = -rx; q < s_.width + rx; ++q) {
      double* p = dst + (q + rx) * C;
      const std::int64_t m = ooc::map_border(q, s_.width, border_);
      for (int c = 0; c < C; ++c) p[c] = m < 0 ? cval_ : x[static_cast<std::size_t>(m * C + c)];
    }
  }

  ooc::Source& in_;
  ooc::ImageSpec s_;
  std::int64_t n_;
  const KernelTaps& k_;  // the caller's
  ooc::BorderMode border_;
  double cval_;
  std::int64_t pad_n_;
  std::vector<double> mag_;             // |taps| (see magnitudes)
  std::vector<std::int64_t> slot_of_;   // band coordinate j (row y0 - ry + j) -> its slot
  std::vector<std::int64_t> src_rows_;  // slot -> source row (-1: the constant border)
  std::vector<double> padded_;          // slot s at s * pad_n_
};

}  // namespace ooc::check
