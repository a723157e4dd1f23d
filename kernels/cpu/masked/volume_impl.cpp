// The band kernel of a volume's normalized convolution in 3-D (volume.hpp), compiled once per
// instruction set as the 2-D one (normalized_impl.cpp, whose row helpers it shares: rows.hpp).
// Separable: each row the column pass needs is decoded in every plane of the z taps (values with
// holes 0, weights 0 or 1, the border rule across the row), summed along z, then along the row,
// into the band's scratch (under the constant border each pass pads its own input with the
// constant, as scipy's passes do); each output row is then the column pass of those rows, divided.
// A 3-D kernel: every plane's rows decoded once into the scratch, each output one weighted_sum over
// the kernel's non-zero taps. The weights are summed everywhere (no fast path): volumes are
// smaller than the images the 2-D kernel's chunks were made for.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "ooc/detail/sample_type.hpp"
#include "rows.hpp"
#include "volume.hpp"

namespace ooc::kernels::OOC_ISA {
namespace {

using vec::weighted_sum;

// Taps as the accumulator's type, their magnitudes, and whether any is negative (else the
// magnitudes' sums are the weights' own).
template <class Acc>
struct AxisTaps {
  std::vector<Acc> w, wa;
  bool negative = false;
  AxisTaps(const double* t, std::int64_t n, const double* abs = nullptr) {
    for (std::int64_t i = 0; i < n; ++i) {
      w.push_back(static_cast<Acc>(t[i]));
      wa.push_back(static_cast<Acc>(abs ? abs[i] : std::fabs(t[i])));
      negative |= t[i] < 0 || (abs && abs[i] != std::fabs(t[i]));
    }
  }
};

struct Geometry {
  std::int64_t n, pw, per_plane, R, first, P, p0;
  explicit Geometry(const masked::VolumeNormalizedArgs& a)
      : n(a.width * a.channels),
        pw((a.width + 2 * a.rx) * a.channels),
        per_plane(a.out_rows + 2 * a.halo),
        R(a.out_rows + 2 * a.ry),
        first(a.halo - a.ry),
        P(2 * a.rz + 1),
        p0(a.plane_halo - a.rz) {}
  // Row r of the column pass's rows in plane k of the window.
  const std::byte* row(const masked::VolumeNormalizedArgs& a, std::int64_t k,
                       std::int64_t r) const {
    return a.rows[(p0 + k) * per_plane + first + r];
  }
  std::size_t band_elems(const masked::VolumeNormalizedArgs& a) const {
    return a.taps3d ? 2 * static_cast<std::size_t>(P * R * pw)
                    : 3 * static_cast<std::size_t>(R * n);
  }
  std::size_t thread_elems(const masked::VolumeNormalizedArgs& a) const {
    return (a.taps3d ? 0 : static_cast<std::size_t>((2 * P + 3) * pw)) +
           3 * static_cast<std::size_t>(n);
  }
};

template <class T, class Acc>
void run(const masked::VolumeNormalizedArgs& a, std::vector<std::byte>& scratch) {
  const Geometry g(a);
  const int C = a.channels;
  const std::int64_t n = g.n, pw = g.pw, R = g.R, P = g.P;
  const HoleTest<T> hole(a.nodata);
  const NormalizedConstants<Acc> nc(a, a.nodata, a.min_weight * a.total_abs);
  const Acc cv = nc.cv, cm = nc.cm, fillv = nc.fillv, least = nc.least;
  const auto store = dispatch_type(a.out_type, [](auto u) { return &store_row<decltype(u), Acc>; });
  const auto load = [&](const std::byte* row, Acc* v, Acc* m) {
    load_row<T, Acc>(row, a.width, C, a.border, cv, cm, hole, -a.rx, a.width + a.rx, v, m);
  };
  scratch.resize(g.band_elems(a) * sizeof(Acc));
  Acc* const band = reinterpret_cast<Acc*>(scratch.data());

  // Output row y from its numerator o, weights d and |weights| aw (n each).
  const auto finish = [&](std::int64_t y, Acc* o, const Acc* d, const Acc* aw,
                          std::vector<std::uint8_t>& own) {
    const T* centre = reinterpret_cast<const T*>(a.rows[a.plane_halo * g.per_plane + a.halo + y]);
    own.resize(static_cast<std::size_t>(n));
    for (std::int64_t s = 0; s < n; ++s) own[s] = hole(centre[s]);
    finish_valid<Acc>(o, d, aw, own.data(), nullptr, a.fill, least, fillv, 0, n);
    std::byte* out = a.out + static_cast<std::size_t>(y) * a.out_stride;
    if (nc.direct)
      std::memcpy(out, o, static_cast<std::size_t>(n) * sizeof(Acc));
    else
      store(o, out, n, fillv, a.nodata);
  };

  // Each output row over TBB threads: sums(y, src, o, d, aw) fills its numerator, weights and
  // |weights| (n each; src room for `sources` pointers) and says whether aw was filled (else the
  // weights are their own magnitudes); then the row is finished.
  const auto each_output_row = [&](std::int64_t sources, const auto& sums) {
    tbb::parallel_for(std::int64_t{0}, a.out_rows, [&](std::int64_t y) {
      thread_local std::vector<Acc> buf;
      thread_local std::vector<const Acc*> src;
      thread_local std::vector<std::uint8_t> own;
      buf.resize(3 * static_cast<std::size_t>(n));
      src.resize(static_cast<std::size_t>(sources));
      Acc *o = buf.data(), *d = o + n, *aw = d + n;
      const bool magnitudes = sums(y, src.data(), o, d, aw);
      finish(y, o, d, magnitudes ? aw : d, own);
    });
  };

  if (a.taps3d) {
    // Every plane's rows decoded once: values V and weights M, P x R rows of pw.
    Acc* const V = band;
    Acc* const M = band + P * R * pw;
    tbb::parallel_for(std::int64_t{0}, P * R, [&](std::int64_t i) {
      load(g.row(a, i / R, i % R), V + i * pw, M + i * pw);
    });
    const std::int64_t K = 2 * a.ry + 1, L = 2 * a.rx + 1;
    struct Tap {
      std::int64_t at;  // offset from the output row's first source sample
      Acc w, wa;
    };
    std::vector<Tap> taps;
    bool negative = false;
    for (std::int64_t t = 0; t < P * K * L; ++t) {
      const double v = a.taps3d[t];
      negative |= v < 0;
      if (v == 0 && !(taps.empty() && t == P * K * L - 1)) continue;  // one kept: all zero
      const std::int64_t j = t / (K * L), i = (t / L) % K, l = t % L;
      taps.push_back(
          {(j * R + i) * pw + l * C, static_cast<Acc>(v), static_cast<Acc>(std::fabs(v))});
    }
    const auto T_ = static_cast<std::int64_t>(taps.size());
    std::vector<Acc> w, wa;
    for (const Tap& t : taps) {
      w.push_back(t.w);
      wa.push_back(t.wa);
    }
    each_output_row(T_, [&](std::int64_t y, const Acc** src, Acc* o, Acc* d, Acc* aw) {
      for (std::int64_t t = 0; t < T_; ++t) src[t] = V + y * pw + taps[t].at;
      weighted_sum<Acc>(src, w.data(), T_, o, n);
      for (std::int64_t t = 0; t < T_; ++t) src[t] = M + y * pw + taps[t].at;
      weighted_sum<Acc>(src, w.data(), T_, d, n);
      if (negative) weighted_sum<Acc>(src, wa.data(), T_, aw, n);
      return negative;
    });
    return;
  }

  const AxisTaps<Acc> tz(a.z_taps, P, a.z_abs), ty(a.col_taps, 2 * a.ry + 1),
      tx(a.row_taps, 2 * a.rx + 1);
  const bool negative = tz.negative || ty.negative || tx.negative;
  const std::int64_t K = 2 * a.ry + 1, L = 2 * a.rx + 1;
  // The z and row passes of the column pass's R rows: numerators, weights, |weights|.
  Acc* const N = band;
  Acc* const D = N + R * n;
  Acc* const A = D + R * n;
  tbb::parallel_for(std::int64_t{0}, R, [&](std::int64_t r) {
    thread_local std::vector<Acc> buf;
    thread_local std::vector<const Acc*> src;
    buf.resize(static_cast<std::size_t>((2 * P + 3) * pw));
    src.resize(static_cast<std::size_t>(std::max(P, L)));
    Acc *V = buf.data(), *M = V + P * pw, *zn = M + P * pw, *zd = zn + pw, *za = zd + pw;
    for (std::int64_t k = 0; k < P; ++k) load(g.row(a, k, r), V + k * pw, M + k * pw);
    for (std::int64_t k = 0; k < P; ++k) src[k] = V + k * pw;
    weighted_sum<Acc>(src.data(), tz.w.data(), P, zn, pw);
    for (std::int64_t k = 0; k < P; ++k) src[k] = M + k * pw;
    weighted_sum<Acc>(src.data(), tz.w.data(), P, zd, pw);
    if (negative) weighted_sum<Acc>(src.data(), tz.wa.data(), P, za, pw);
    if (a.border == BorderMode::constant) {  // the row pass pads its own input: the constant
      const std::int64_t e = a.rx * C;
      for (auto [to, v] : {std::pair{zn, cv}, std::pair{zd, cm}, std::pair{za, cm}}) {
        std::fill(to, to + e, v);
        std::fill(to + pw - e, to + pw, v);
      }
    }
    const auto across = [&](const Acc* from, const std::vector<Acc>& w, Acc* to) {
      for (std::int64_t l = 0; l < L; ++l) src[l] = from + l * C;
      weighted_sum<Acc>(src.data(), w.data(), L, to, n);
    };
    if (!g.row(a, a.rz, r) && a.border == BorderMode::constant) {
      // A row past the image: the column pass pads its own input with the constant too.
      std::fill(N + r * n, N + (r + 1) * n, cv);
      std::fill(D + r * n, D + (r + 1) * n, cm);
      std::fill(A + r * n, A + (r + 1) * n, cm);
      return;
    }
    across(zn, tx.w, N + r * n);
    across(zd, tx.w, D + r * n);
    if (negative) across(za, tx.wa, A + r * n);
  });
  each_output_row(K, [&](std::int64_t y, const Acc** src, Acc* o, Acc* d, Acc* aw) {
    const auto down = [&](const Acc* from, const std::vector<Acc>& w, Acc* to) {
      for (std::int64_t i = 0; i < K; ++i) src[i] = from + (y + i) * n;
      weighted_sum<Acc>(src, w.data(), K, to, n);
    };
    down(N, ty.w, o);
    down(D, ty.w, d);
    if (negative) down(A, ty.wa, aw);
    return negative;
  });
}

}  // namespace

void volume_normalized_band(const masked::VolumeNormalizedArgs& a, std::vector<std::byte>& s) {
  dispatch_type(a.in_type, [&](auto t) {
    using T = decltype(t);
    if (a.f64)
      run<T, double>(a, s);
    else
      run<T, float>(a, s);
  });
}

std::size_t volume_normalized_band_bytes(const masked::VolumeNormalizedArgs& a) {
  return Geometry(a).band_elems(a) * (a.f64 ? 8 : 4);
}

std::size_t volume_normalized_thread_bytes(const masked::VolumeNormalizedArgs& a) {
  return Geometry(a).thread_elems(a) * (a.f64 ? 8 : 4) +
         static_cast<std::size_t>(a.width * a.channels);
}

}  // namespace ooc::kernels::OOC_ISA
