// Per-component measurements of one band's runs (runs.hpp), for the label stage's regions table
// and minimum size: each band measures its own components in its kernel (in parallel), and the
// serial merge only copies a band's records into the table of provisional labels, where the
// components joined across bands are folded together (combine_shape, combine_intensity).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/labels/runs.hpp"

namespace ooc::kernels {

// A component's shape, kShape 64-bit entries: area, the box (z, y, x from, then to, exclusive)
// and the sums of the coordinates (exact in 64 bits, so centroids do not depend on the plan).
enum Shape { kArea, kZ0, kY0, kX0, kZ1, kY1, kX1, kSumZ, kSumY, kSumX, kShape };

// A component's intensity, kIntensity doubles: the sum, the sum of squared deviations from the
// mean (combined across parts as Chan et al. do, so the variance keeps its precision where the
// mean is large), the minimum and the maximum.
enum Intensity { kSum, kM2, kMin, kMax, kIntensity };

// The shapes of r's components (label 1 at record 0), in `out` (r.count x kShape); the band's
// rows are plane z's rows y0, y0 + 1, ...
inline void measure_shape(const BandRuns& r, std::uint64_t z, std::uint64_t y0,
                          std::vector<std::uint64_t>& out) {
  out.resize(std::size_t{r.count} * kShape);
  for (std::size_t k = 0; k < r.count; ++k) {
    std::uint64_t* e = out.data() + k * kShape;
    std::fill_n(e, kShape, std::uint64_t{0});
    e[kZ0] = z;
    e[kY0] = e[kX0] = ~std::uint64_t{0};
    e[kZ1] = z + 1;
  }
  for (std::int64_t row = 0; row < r.rows(); ++row) {
    const std::uint64_t y = y0 + static_cast<std::uint64_t>(row);
    const auto u = static_cast<std::size_t>(row);
    for (std::uint64_t i = r.row_start[u]; i < r.row_start[u + 1]; ++i) {
      std::uint64_t* e = out.data() + std::size_t{r.label[i] - 1} * kShape;
      const std::uint64_t x0 = r.x0[i], x1 = r.x1[i], n = x1 - x0;
      e[kArea] += n;
      e[kY0] = std::min(e[kY0], y);
      e[kX0] = std::min(e[kX0], x0);
      e[kY1] = y + 1;  // rows come in order
      e[kX1] = std::max(e[kX1], x1);
      e[kSumY] += y * n;
      e[kSumX] += (x0 + x1 - 1) * n / 2;
    }
  }
  for (std::size_t k = 0; k < r.count; ++k) {
    std::uint64_t* e = out.data() + k * kShape;
    e[kSumZ] = z * e[kArea];
  }
}

// The intensities of r's components (r.count x kIntensity in `out`), from `rows[row]`, the band's
// rows of the intensity image; `shape` as measure_shape made it (the areas). Two passes over the
// samples: the sums, then the squared deviations from each component's mean.
template <class T>
void measure_intensity(const BandRuns& r, const T* const* rows,
                       const std::vector<std::uint64_t>& shape, std::vector<double>& out) {
  out.resize(std::size_t{r.count} * kIntensity);
  for (std::size_t k = 0; k < r.count; ++k) {
    double* e = out.data() + k * kIntensity;
    e[kSum] = e[kM2] = 0;
    e[kMin] = std::numeric_limits<double>::infinity();
    e[kMax] = -std::numeric_limits<double>::infinity();
  }
  for (std::int64_t row = 0; row < r.rows(); ++row) {
    const auto u = static_cast<std::size_t>(row);
    const T* v = rows[u];
    for (std::uint64_t i = r.row_start[u]; i < r.row_start[u + 1]; ++i) {
      double* e = out.data() + std::size_t{r.label[i] - 1} * kIntensity;
      double s = 0, lo = e[kMin], hi = e[kMax];
      for (std::uint32_t x = r.x0[i]; x < r.x1[i]; ++x) {
        const auto d = static_cast<double>(v[x]);
        s += d;
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
      e[kSum] += s;
      e[kMin] = lo;
      e[kMax] = hi;
    }
  }
  for (std::int64_t row = 0; row < r.rows(); ++row) {
    const auto u = static_cast<std::size_t>(row);
    const T* v = rows[u];
    for (std::uint64_t i = r.row_start[u]; i < r.row_start[u + 1]; ++i) {
      const std::size_t k = r.label[i] - 1;
      double* e = out.data() + k * kIntensity;
      const double mean = e[kSum] / static_cast<double>(shape[k * kShape + kArea]);
      double m2 = 0;
      for (std::uint32_t x = r.x0[i]; x < r.x1[i]; ++x) {
        const double d = static_cast<double>(v[x]) - mean;
        m2 += d * d;
      }
      e[kM2] += m2;
    }
  }
}

// Folds component e into r (both shapes).
inline void combine_shape(std::uint64_t* r, const std::uint64_t* e) {
  r[kArea] += e[kArea];
  for (int k : {kZ0, kY0, kX0}) r[k] = std::min(r[k], e[k]);
  for (int k : {kZ1, kY1, kX1}) r[k] = std::max(r[k], e[k]);
  for (int k : {kSumZ, kSumY, kSumX}) r[k] += e[k];
}

// Folds the intensities e of ne samples into r of nr samples (the areas before the fold).
inline void combine_intensity(double* r, std::uint64_t nr, const double* e, std::uint64_t ne) {
  if (ne == 0) return;
  if (nr == 0) {
    std::copy_n(e, kIntensity, r);
    return;
  }
  const double a = static_cast<double>(nr), b = static_cast<double>(ne);
  const double d = e[kSum] / b - r[kSum] / a;
  r[kM2] += e[kM2] + d * d * (a * b / (a + b));
  r[kSum] += e[kSum];
  r[kMin] = std::min(r[kMin], e[kMin]);
  r[kMax] = std::max(r[kMax], e[kMax]);
}

}  // namespace ooc::kernels
