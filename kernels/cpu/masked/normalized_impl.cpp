// The band kernel of normalized convolution (normalized.hpp), separable and 2-D, compiled once
// per instruction set as the unmasked kernels are (CMakeLists.txt: OOC_ISA names the namespace;
// normalized.cpp picks one at run time). Both passes of the separable form and the 2-D sum are
// one routine over strided sources: vec::weighted_sum of tap-shifted pointers into padded rows.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "convert.hpp"
#include "kernels/cpu/convolution/vec_sum.hpp"
#include "normalized.hpp"
#include "ooc/detail/sample_type.hpp"
#include "rows.hpp"

namespace ooc::kernels::OOC_ISA {
namespace {

using vec::column_sums;
using vec::kColumnRows;
using vec::weighted_sum;

// holes[b]: whether padded samples [b ch, (b + 1) ch) of m hold a weight that is not 1.
template <class Acc>
void hole_blocks(const Acc* m, std::int64_t pw, std::uint8_t* holes) {
  constexpr std::int64_t ch = kChunk<Acc>;
  using I = std::conditional_t<sizeof(Acc) == 4, std::int32_t, std::int64_t>;
  for (std::int64_t b = 0; b * ch < pw; ++b) {
    const std::int64_t e = std::min(pw, (b + 1) * ch);
    // An OR of comparisons, which vectorizes (a float sum's adds are a chain of latencies).
    I any = 0;
    for (std::int64_t i = b * ch; i < e; ++i) any |= -I(m[i] != Acc(1));
    holes[b] = any != 0;
  }
}

// dirty[c]: whether output chunk c reads a padded sample with a hole (its samples
// [c ch, c ch + ch) read padded samples up to reach beyond).
template <class Acc>
void chunk_flags(const std::uint8_t* holes, std::int64_t n, std::int64_t reach,
                 std::uint8_t* dirty) {
  constexpr std::int64_t ch = kChunk<Acc>;
  for (std::int64_t c = 0; c * ch < n; ++c) {
    const std::int64_t last = std::min(n, (c + 1) * ch) - 1 + reach;
    std::uint8_t d = 0;
    for (std::int64_t b = c; b <= last / ch; ++b) d |= holes[b];
    dirty[c] = d;
  }
}

// The sum a weighted_sum gives where every source sample is `value`: the all-valid windows'
// weights, rounded as the sums over holes round them.
template <class Acc>
Acc constant_sum(const std::vector<Acc>& w, Acc value) {
  std::vector<const Acc*> src(w.size(), &value);
  Acc out = 0;
  weighted_sum<Acc>(src.data(), w.data(), static_cast<std::int64_t>(w.size()), &out, 1);
  return out;
}

struct Layout {
  std::int64_t strip_px, strips, in_rows, n, pw, chunks, blocks;
  std::size_t acc_n, bytes_n;  // Acc elements and bytes of flags, per thread
};

template <class Acc>
Layout layout(const masked::NormalizedArgs& a) {
  Layout l{};
  const int C = a.channels;
  constexpr std::int64_t ch = kChunk<Acc>;
  l.strip_px = std::clamp<std::int64_t>(a.strip_samples / C, 1, a.width);
  l.strips = (a.width + l.strip_px - 1) / l.strip_px;
  l.in_rows = a.out_rows + 2 * a.ry;
  l.n = l.strip_px * C;
  l.pw = (l.strip_px + 2 * a.rx) * C;
  l.chunks = (l.n + ch - 1) / ch;
  l.blocks = (l.pw + ch - 1) / ch;
  const auto R = static_cast<std::size_t>(l.in_rows), n = static_cast<std::size_t>(l.n),
             pw = static_cast<std::size_t>(l.pw);
  if (a.taps2d)  // padded values and weights of every row; a numerator row, ad, aw
    l.acc_n = 2 * R * pw + 3 * n;
  else  // row-pass values, weights, |weights|; a padded row's values and weights; kColumnRows
        // numerators, ad, aw
    l.acc_n = 3 * R * n + 2 * pw + (kColumnRows + 2) * n;
  l.bytes_n = R * n + R * static_cast<std::size_t>(l.chunks) + static_cast<std::size_t>(l.blocks);
  return l;
}

template <class Acc>
void run(const masked::NormalizedArgs& a) {
  const Layout l = layout<Acc>(a);
  const int C = a.channels;
  constexpr std::int64_t ch = kChunk<Acc>;
  const std::size_t out_sample = sample_bytes(a.out_type);
  // Into another type: holes as its nodata value, valid samples kept off it (convert.hpp).
  const auto store = dispatch_type(a.out_type, [](auto u) { return &store_row<decltype(u), Acc>; });
  const double nodata = a.nodata;

  const bool two_d = a.taps2d != nullptr;
  const std::int64_t K = 2 * a.ry + 1, L = 2 * a.rx + 1;
  // w: the taps the numerator and the weights take; wa: their magnitudes (min-weight's sum).
  std::vector<Acc> wr, wc, wra, wca, w2, w2a;
  bool negative = false;
  double total_abs = 0;
  if (two_d) {
    for (std::int64_t t = 0; t < K * L; ++t) {
      w2.push_back(static_cast<Acc>(a.taps2d[t]));
      w2a.push_back(static_cast<Acc>(std::fabs(a.taps2d[t])));
      negative |= a.taps2d[t] < 0;
      total_abs += std::fabs(a.taps2d[t]);
    }
  } else {
    double ra = 0, ca = 0;
    for (std::int64_t t = 0; t < L; ++t) {
      wr.push_back(static_cast<Acc>(a.row_taps[t]));
      wra.push_back(static_cast<Acc>(std::fabs(a.row_taps[t])));
      negative |= a.row_taps[t] < 0;
      ra += std::fabs(a.row_taps[t]);
    }
    for (std::int64_t t = 0; t < K; ++t) {
      wc.push_back(static_cast<Acc>(a.col_taps[t]));
      wca.push_back(static_cast<Acc>(std::fabs(a.col_taps[t])));
      negative |= a.col_taps[t] < 0;
      ca += std::fabs(a.col_taps[t]);
    }
    total_abs = ra * ca;
  }
  const double need = a.min_weight * total_abs;
  const NormalizedConstants<Acc> nc(a, a.nodata, need);
  const Acc cv = nc.cv, cm = nc.cm, fillv = nc.fillv, least_acc = nc.least;
  const bool direct = nc.direct;
  // The weights of a window without holes: what the sums over the weights give there.
  Acc R = 0, RA = 0, D, AW;
  if (two_d) {
    D = constant_sum(w2, Acc(1));
    AW = negative ? constant_sum(w2a, Acc(1)) : D;
  } else {
    R = constant_sum(wr, Acc(1));
    RA = negative ? constant_sum(wra, Acc(1)) : R;
    D = constant_sum(wc, R);
    AW = negative ? constant_sum(wca, RA) : D;
  }
  const bool clean_ok = AW > 0 && double(AW) >= need && D != 0;

  // Finishes output samples [b, e) of a numerator row o: divided by the weights ad (null: D)
  // where the window is valid, else nodata. The output's own sample is a hole where own8[s] is
  // not 0 (separable) or ownw[s] is 0 (2-D).
  const auto finish = [&](Acc* o, const Acc* ad, const Acc* aw, const std::uint8_t* own8,
                          const Acc* ownw, std::int64_t b, std::int64_t e) {
    if (!ad) {
      if (clean_ok)
        for (std::int64_t s = b; s < e; ++s) o[s] = o[s] / D;
      else
        std::fill(o + b, o + e, fillv);
      return;
    }
    finish_valid<Acc>(o, ad, aw, own8, ownw, a.fill, least_acc, fillv, b, e);
  };

  tbb::parallel_for(std::int64_t{0}, l.strips, [&](std::int64_t strip) {
    thread_local std::vector<Acc> scratch;
    thread_local std::vector<std::uint8_t> flags;
    thread_local std::vector<const Acc*> src;
    if (scratch.size() < l.acc_n) scratch.resize(l.acc_n);
    if (flags.size() < l.bytes_n) flags.resize(l.bytes_n);
    const std::int64_t p0 = strip * l.strip_px, p1 = std::min(a.width, p0 + l.strip_px);
    const std::int64_t n = (p1 - p0) * C, pw = (p1 - p0 + 2 * a.rx) * C;
    const std::int64_t chunks = (n + ch - 1) / ch, q0 = p0 - a.rx, q1 = p1 + a.rx;
    std::uint8_t* own = flags.data();             // in_rows x n: holes (separable)
    std::uint8_t* dirty = own + l.in_rows * l.n;  // in_rows x chunks
    std::uint8_t* blocks = dirty + l.in_rows * l.chunks;
    const auto out_row = [&](std::int64_t y) {
      return a.out + static_cast<std::size_t>(y) * a.out_stride +
             static_cast<std::size_t>(p0 * C) * out_sample;
    };
    const auto window_dirty = [&](std::int64_t first_row, std::int64_t rows, std::int64_t c) {
      std::uint8_t d = 0;
      for (std::int64_t i = 0; i < rows; ++i) d |= dirty[(first_row + i) * l.chunks + c];
      return d != 0;
    };

    if (two_d) {
      Acc* V = scratch.data();  // in_rows x pw
      Acc* M = V + l.in_rows * l.pw;
      Acc* num = M + l.in_rows * l.pw;
      Acc* ad = num + l.n;
      Acc* aw = ad + l.n;
      for (std::int64_t j = 0; j < l.in_rows; ++j) {
        dispatch_type(a.in_type, [&](auto t) {
          using U = decltype(t);
          load_row<U, Acc>(a.rows[j], a.width, C, a.border, cv, cm, HoleTest<U>(a.nodata), q0, q1,
                           V + j * l.pw, M + j * l.pw);
        });
        hole_blocks(M + j * l.pw, pw, blocks);
        chunk_flags<Acc>(blocks, n, 2 * a.rx * C, dirty + j * l.chunks);
      }
      src.resize(static_cast<std::size_t>(K * L));
      for (std::int64_t y = 0; y < a.out_rows; ++y) {
        const auto at = [&](const Acc* base) {
          for (std::int64_t i = 0; i < K; ++i)
            for (std::int64_t j = 0; j < L; ++j) src[i * L + j] = base + (y + i) * l.pw + j * C;
        };
        Acc* o = direct ? reinterpret_cast<Acc*>(out_row(y)) : num;
        at(V);
        weighted_sum<Acc>(src.data(), w2.data(), K * L, o, n);
        const Acc* centre = M + (y + a.ry) * l.pw + a.rx * C;
        bool weights_at = false;  // src points at M
        for (std::int64_t c = 0; c < chunks; ++c) {
          const std::int64_t b = c * ch, e = std::min(n, b + ch);
          if (!window_dirty(y, K, c)) {
            finish(o, nullptr, nullptr, nullptr, centre, b, e);
            continue;
          }
          if (!weights_at) at(M), weights_at = true;
          weighted_sum<Acc>(src.data(), w2.data(), K * L, ad, e, b);
          if (negative) weighted_sum<Acc>(src.data(), w2a.data(), K * L, aw, e, b);
          finish(o, ad, negative ? aw : ad, nullptr, centre, b, e);
        }
        if (!direct) store(num, out_row(y), n, fillv, nodata);
      }
      return;
    }

    // Separable: the row pass over every input row of the band, this strip's columns.
    Acc* num = scratch.data();  // in_rows x n
    Acc* den = num + l.in_rows * l.n;
    Acc* wab = den + l.in_rows * l.n;
    Acc* pv = wab + l.in_rows * l.n;
    Acc* pm = pv + l.pw;
    Acc* an = pm + l.pw;  // kColumnRows x n
    Acc* ad = an + kColumnRows * l.n;
    Acc* aw = ad + l.n;
    src.resize(static_cast<std::size_t>(std::max(L, K + kColumnRows)));
    for (std::int64_t j = 0; j < l.in_rows; ++j) {
      Acc* nj = num + j * l.n;
      Acc* dj = den + j * l.n;
      Acc* wj = wab + j * l.n;
      if (!a.rows[j]) {  // scipy pads the column pass with cval: the constant, weight 1
        std::fill(nj, nj + n, cv);
        std::fill(dj, dj + n, cm);
        std::fill(wj, wj + n, cm);
        std::fill(dirty + j * l.chunks, dirty + j * l.chunks + chunks, std::uint8_t(1));
        continue;
      }
      dispatch_type(a.in_type, [&](auto t) {
        using U = decltype(t);
        load_row<U, Acc>(a.rows[j], a.width, C, a.border, cv, cm, HoleTest<U>(a.nodata), q0, q1, pv,
                         pm);
      });
      std::uint8_t* oj = own + j * l.n;
      const Acc* pc = pm + a.rx * C;  // a local: the byte stores may alias a's fields
      for (std::int64_t s = 0; s < n; ++s) oj[s] = pc[s] == 0;
      hole_blocks(pm, pw, blocks);
      chunk_flags<Acc>(blocks, n, 2 * a.rx * C, dirty + j * l.chunks);
      for (std::int64_t k = 0; k < L; ++k) src[k] = pv + k * C;
      weighted_sum<Acc>(src.data(), wr.data(), L, nj, n);
      for (std::int64_t k = 0; k < L; ++k) src[k] = pm + k * C;
      for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t b = c * ch, e = std::min(n, b + ch);
        if (dirty[j * l.chunks + c]) {
          weighted_sum<Acc>(src.data(), wr.data(), L, dj, e, b);
          if (negative) weighted_sum<Acc>(src.data(), wra.data(), L, wj, e, b);
        } else {
          std::fill(dj + b, dj + e, R);
          if (negative) std::fill(wj + b, wj + e, RA);
        }
      }
    }

    // The column pass, kColumnRows output rows at a time where the filter has as many taps.
    const std::int64_t step = K >= kColumnRows ? kColumnRows : 1;
    for (std::int64_t y = 0; y < a.out_rows; y += step) {
      const std::int64_t rows = std::min(step, a.out_rows - y);
      for (std::int64_t k = 0; k < K + rows - 1; ++k) src[k] = num + (y + k) * l.n;
      Acc* dst[kColumnRows];
      for (std::int64_t m = 0; m < rows; ++m)
        dst[m] = direct ? reinterpret_cast<Acc*>(out_row(y + m)) : an + m * l.n;
      if (rows == kColumnRows)
        column_sums<Acc>(src.data(), wc.data(), K, dst, n);
      else
        for (std::int64_t m = 0; m < rows; ++m)
          weighted_sum<Acc>(src.data() + m, wc.data(), K, dst[m], n);
      for (std::int64_t m = 0; m < rows; ++m) {
        const std::uint8_t* oh = own + (y + m + a.ry) * l.n;
        for (std::int64_t c = 0; c < chunks; ++c) {
          const std::int64_t b = c * ch, e = std::min(n, b + ch);
          if (!window_dirty(y + m, K, c)) {
            finish(dst[m], nullptr, nullptr, oh, nullptr, b, e);
            continue;
          }
          for (std::int64_t k = 0; k < K; ++k) src[k] = den + (y + m + k) * l.n;
          weighted_sum<Acc>(src.data(), wc.data(), K, ad, e, b);
          if (negative) {
            for (std::int64_t k = 0; k < K; ++k) src[k] = wab + (y + m + k) * l.n;
            weighted_sum<Acc>(src.data(), wca.data(), K, aw, e, b);
          }
          finish(dst[m], ad, negative ? aw : ad, oh, nullptr, b, e);
        }
        if (!direct) store(dst[m], out_row(y + m), n, fillv, nodata);
      }
    }
  });
}

}  // namespace

void normalized_band(const masked::NormalizedArgs& a) {
  if (a.f64)
    run<double>(a);
  else
    run<float>(a);
}

std::size_t normalized_scratch_bytes(const masked::NormalizedArgs& a) {
  const Layout l = a.f64 ? layout<double>(a) : layout<float>(a);
  return l.acc_n * (a.f64 ? 8 : 4) + l.bytes_n +
         static_cast<std::size_t>((2 * a.rx + 1) * (2 * a.ry + 1) + kColumnRows) * sizeof(void*);
}

}  // namespace ooc::kernels::OOC_ISA
