// The band kernel of normalized convolution (normalized.hpp), separable and 2-D, compiled once
// per instruction set as the unmasked kernels are (CMakeLists.txt: OOC_ISA names the namespace;
// normalized.cpp picks one at run time). Both passes of the separable form and the 2-D sum are
// one routine over strided sources: vec::weighted_sum of tap-shifted pointers into padded rows.
#include <tbb/parallel_for.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

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

// blocks[b]: whether block b of kL padded samples holds a hole, from a byte a sample (1: hole).
template <std::int64_t kL>
void hole_blocks_of_bytes(const std::uint8_t* hole, std::int64_t pw,
                          std::uint8_t* __restrict blocks) {
  using B = std::conditional_t<kL == 8, std::uint64_t, std::uint32_t>;
  static_assert(sizeof(B) == kL);
  std::int64_t b = 0;
  for (; (b + 1) * kL <= pw; ++b) {
    B bytes;
    std::memcpy(&bytes, hole + b * kL, sizeof bytes);
    blocks[b] = bytes != 0;
  }
  if (b * kL < pw)
    blocks[b] = std::any_of(hole + b * kL, hole + pw, [](std::uint8_t h) { return h != 0; });
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

// out[g] = the OR of rows rows of flags (stride apart) at g < n; out is no source row.
void or_rows(const std::uint8_t* first, std::int64_t stride, std::int64_t rows, std::int64_t n,
             std::uint8_t* __restrict out) {
  std::copy(first, first + n, out);
  for (std::int64_t k = 1; k < rows; ++k) {
    const std::uint8_t* __restrict v = first + k * stride;
    for (std::int64_t g = 0; g < n; ++g) out[g] = static_cast<std::uint8_t>(out[g] | v[g]);
  }
}

// dirty[g]: whether output vector g (samples [g kL, g kL + kL), n in all) reads a padded sample
// with a hole (up to reach beyond), from blocks[] of hole_blocks_of_bytes<kL> (blocks of the padded
// row's pw samples): the OR of the span blocks from g, as whole byte rows (chunk_flags' loop
// over each vector's blocks cost more than the sums it saved). The last vectors take the
// blocks there are.
template <std::int64_t kL>
void vector_flags(const std::uint8_t* holes, std::int64_t n, std::int64_t pw, std::int64_t reach,
                  std::uint8_t* __restrict dirty) {
  const std::int64_t nv = (n + kL - 1) / kL, nb = (pw + kL - 1) / kL;
  const std::int64_t span = (kL - 1 + reach) / kL + 1;
  std::fill(dirty, dirty + nv, std::uint8_t(0));
  for (std::int64_t s = 0; s < span; ++s) {
    const std::int64_t m = std::min(nv, nb - s);  // vectors g with block g + s there
    const std::uint8_t* __restrict h = holes + s;
    for (std::int64_t g = 0; g < m; ++g) dirty[g] = static_cast<std::uint8_t>(dirty[g] | h[g]);
  }
}

// The offsets of the vectors whose flag is set into at (the last vector, where n is no multiple
// of kL, overlapping the one before it: the same sums); returns their count.
template <std::int64_t kL>
std::int64_t vector_offsets(const std::uint8_t* flags, std::int64_t n, std::int32_t* at) {
  const std::int64_t nv = (n + kL - 1) / kL;
  std::int64_t count = 0, g = 0;
#if defined(__AVX2__)
  // Eight whole vectors' flags at a time: their set lanes' offsets packed by one permutation
  // (at has room for 8 past the count).
  static constexpr struct Packed {
    std::int32_t lanes[256][8];
    constexpr Packed() : lanes{} {
      for (int m = 0; m < 256; ++m)
        for (int l = 0, k = 0; l < 8; ++l)
          if ((m >> l) & 1) lanes[m][k++] = l;
    }
  } kPacked{};
  const __m256i step = _mm256_setr_epi32(0, kL, 2 * kL, 3 * kL, 4 * kL, 5 * kL, 6 * kL, 7 * kL);
  for (; (g + 8) * kL <= n; g += 8) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(flags + g));
    const int m = ~_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_setzero_si128())) & 0xff;
    if (m == 0) continue;
    const __m256i lanes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kPacked.lanes[m]));
    const __m256i off = _mm256_add_epi32(_mm256_set1_epi32(static_cast<std::int32_t>(g * kL)),
                                         _mm256_permutevar8x32_epi32(step, lanes));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + count), off);
    count += __builtin_popcount(static_cast<unsigned>(m));
  }
#endif
  // Eight flags at a time: most vectors have no hole, and a word of none is skipped whole.
  for (; g + 8 <= nv; g += 8) {
    std::uint64_t w;
    std::memcpy(&w, flags + g, sizeof w);
    if (w == 0) continue;
    for (std::int64_t k = g; k < g + 8; ++k) {
      at[count] = static_cast<std::int32_t>(std::min(k * kL, n - kL));
      count += flags[k] != 0;
    }
  }
  for (; g < nv; ++g) {
    at[count] = static_cast<std::int32_t>(std::min(g * kL, n - kL));
    count += flags[g] != 0;
  }
  return count;
}

// weighted_sum's sums (the same roundings: a plain first product, one FMA a tap in tap order) of
// the vectors of kLanes samples at offsets at[0, count) only: the windows with a hole, which in
// a row with a few holes are a fraction of weighted_sum's chunks. kUnroll vectors at a time, as
// weighted_sum, to cover the FMA latency.
template <class Acc>
void weighted_sum_at(const Acc* const* src, const Acc* w, std::int64_t taps, Acc* dst,
                     const std::int32_t* at, std::int64_t count) {
  using V = vec::Vec32<Acc>;
  constexpr int kUnroll = 8;
  std::int64_t t = 0;
  for (; t + kUnroll <= count; t += kUnroll) {
    V acc[kUnroll];
    const V w0 = V{} + w[0];
    for (int u = 0; u < kUnroll; ++u) acc[u] = w0 * vec::load_vec(src[0] + at[t + u]);
    for (std::int64_t k = 1; k < taps; ++k) {
      const V wk = V{} + w[k];
      const Acc* s = src[k];
      for (int u = 0; u < kUnroll; ++u) acc[u] += wk * vec::load_vec(s + at[t + u]);
    }
    for (int u = 0; u < kUnroll; ++u) vec::store_vec(dst + at[t + u], acc[u]);
  }
  // The rest four at a time, the last offset repeated to fill a four (the same sums stored
  // twice): one vector at a time, each sum waits on its previous tap's FMA.
  for (; t < count; t += 4) {
    std::int32_t o[4];
    for (int u = 0; u < 4; ++u) o[u] = at[std::min<std::int64_t>(t + u, count - 1)];
    V acc[4];
    const V w0 = V{} + w[0];
    for (int u = 0; u < 4; ++u) acc[u] = w0 * vec::load_vec(src[0] + o[u]);
    for (std::int64_t k = 1; k < taps; ++k) {
      const V wk = V{} + w[k];
      const Acc* s = src[k];
      for (int u = 0; u < 4; ++u) acc[u] += wk * vec::load_vec(s + o[u]);
    }
    for (int u = 0; u < 4; ++u) vec::store_vec(dst + o[u], acc[u]);
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
  std::int64_t vecs, vblocks;  // the separable path's flags: vectors of a row, of a padded row
  std::int64_t ring;           // the separable path's rows of sums kept at once
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
  // A ring (K + kColumnRows - 1 rows) where the column pass has fewer taps than kColumnRows;
  // longer column filters keep the band's rows (measured: a ring made uniform size=5 4% faster,
  // the Gaussian sigma=2 no faster).
  l.ring = 2 * a.ry + 1 < kColumnRows ? std::min(l.in_rows, 2 * a.ry + kColumnRows) : l.in_rows;
  l.n = l.strip_px * C;
  l.pw = (l.strip_px + 2 * a.rx) * C;
  l.chunks = (l.n + ch - 1) / ch;
  l.blocks = (l.pw + ch - 1) / ch;
  constexpr std::int64_t kL = 32 / sizeof(Acc);
  l.vecs = (l.n + kL - 1) / kL;
  l.vblocks = (l.pw + kL - 1) / kL;
  const auto R = static_cast<std::size_t>(l.in_rows), n = static_cast<std::size_t>(l.n),
             pw = static_cast<std::size_t>(l.pw);
  if (a.taps2d)  // padded values and weights of every row; a numerator row, ad, aw
    l.acc_n = 2 * R * pw + 3 * n;
  else  // a ring of row-pass values, weights, |weights|; a padded row's values and weights;
        // kColumnRows numerators, ad, aw
    l.acc_n = 3 * static_cast<std::size_t>(l.ring) * n + 2 * pw + (kColumnRows + 2) * n;
  // holes of the padded rows (separable); a row's flags (chunks for 2-D, vectors for separable); a
  // padded row's blocks; the separable path's flags of one output row
  const auto flags = static_cast<std::size_t>(std::max(l.chunks, l.vecs));
  l.bytes_n = R * pw + R * flags + static_cast<std::size_t>(std::max(l.blocks, l.vblocks)) +
              static_cast<std::size_t>(l.vecs);
  return l;
}

template <class Acc>
void run(const masked::NormalizedArgs& a) {
  const Layout l = layout<Acc>(a);
  const int C = a.channels;
  constexpr std::int64_t ch = kChunk<Acc>, kL = 32 / sizeof(Acc);
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

  // Where each input row's sums lie in the ring (an integer division a row pointer cost a tenth
  // of a short filter's time).
  std::vector<std::int64_t> ring_at(static_cast<std::size_t>(l.in_rows));
  for (std::int64_t j = 0; j < l.in_rows; ++j) ring_at[j] = (j % l.ring) * l.n;
  tbb::parallel_for(std::int64_t{0}, l.strips, [&](std::int64_t strip) {
    thread_local std::vector<Acc> scratch;
    thread_local std::vector<std::uint8_t> flags;
    thread_local std::vector<const Acc*> src;
    thread_local std::vector<std::int32_t> at;  // offsets of the vectors with a hole
    if (scratch.size() < l.acc_n) scratch.resize(l.acc_n);
    if (flags.size() < l.bytes_n) flags.resize(l.bytes_n);
    const std::int64_t p0 = strip * l.strip_px, p1 = std::min(a.width, p0 + l.strip_px);
    const std::int64_t n = (p1 - p0) * C, pw = (p1 - p0 + 2 * a.rx) * C;
    const std::int64_t chunks = (n + ch - 1) / ch, q0 = p0 - a.rx, q1 = p1 + a.rx;
    std::uint8_t* own = flags.data();              // in_rows x pw: holes (separable)
    std::uint8_t* dirty = own + l.in_rows * l.pw;  // in_rows x chunks (2-D)
    std::uint8_t* blocks = dirty + l.in_rows * std::max(l.chunks, l.vecs);
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

    // Separable: the row pass over every input row of the band, this strip's columns. The
    // weights are summed only in the vectors (kL samples) whose window holds a hole: vd holds a
    // flag a vector a row (a strip narrower than a vector: all set, summed whole).
    // The row pass's rows live in a ring of l.ring rows (or the band's, see layout), each made
    // just before the first column pass that reads it, so that short filters read them from
    // the cache.
    Acc* num = scratch.data();  // ring x n
    Acc* den = num + l.ring * l.n;
    Acc* wab = den + l.ring * l.n;
    Acc* pv = wab + l.ring * l.n;
    Acc* pm = pv + l.pw;
    Acc* an = pm + l.pw;  // kColumnRows x n
    Acc* ad = an + kColumnRows * l.n;
    Acc* aw = ad + l.n;
    const auto at_row = [&](Acc* base, std::int64_t j) { return base + ring_at[j]; };
    std::uint8_t* vd = dirty;                                   // in_rows x l.vecs
    std::uint8_t* cd = blocks + std::max(l.blocks, l.vblocks);  // one output row's flags
    const std::int64_t nv = (n + kL - 1) / kL;
    const bool whole = n < kL;
    at.resize(static_cast<std::size_t>(l.vecs + 8));
    std::int32_t* const at0 = at.data();
    src.resize(static_cast<std::size_t>(std::max(L, K + kColumnRows)));
    const auto row_pass = [&](std::int64_t j) {
      Acc* nj = at_row(num, j);
      Acc* dj = at_row(den, j);
      Acc* wj = at_row(wab, j);
      std::uint8_t* vj = vd + j * l.vecs;
      if (!a.rows[j]) {  // scipy pads the column pass with cval: the constant, weight 1
        std::fill(nj, nj + n, cv);
        std::fill(dj, dj + n, cm);
        std::fill(wj, wj + n, cm);
        std::fill(vj, vj + nv, std::uint8_t(1));
        return;
      }
      dispatch_type(a.in_type, [&](auto t) {
        using U = decltype(t);
        load_row<U, Acc>(a.rows[j], a.width, C, a.border, cv, cm, HoleTest<U>(a.nodata), q0, q1, pv,
                         pm, own + j * l.pw);
      });
      hole_blocks_of_bytes<kL>(own + j * l.pw, pw, blocks);
      for (std::int64_t k = 0; k < L; ++k) src[k] = pv + k * C;
      weighted_sum<Acc>(src.data(), wr.data(), L, nj, n);
      for (std::int64_t k = 0; k < L; ++k) src[k] = pm + k * C;
      if (whole) {
        vj[0] = 1;
        weighted_sum<Acc>(src.data(), wr.data(), L, dj, n);
        if (negative) weighted_sum<Acc>(src.data(), wra.data(), L, wj, n);
        return;
      }
      vector_flags<kL>(blocks, n, pw, 2 * a.rx * C, vj);
      // The all-valid weights everywhere, then the sums of the vectors with a hole over them.
      std::fill(dj, dj + n, R);
      if (negative) std::fill(wj, wj + n, RA);
      const std::int64_t count = vector_offsets<kL>(vj, n, at0);
      weighted_sum_at<Acc>(src.data(), wr.data(), L, dj, at0, count);
      if (negative) weighted_sum_at<Acc>(src.data(), wra.data(), L, wj, at0, count);
    };

    // The column pass, kColumnRows output rows at a time where the filter has as many taps.
    const std::int64_t step = K >= kColumnRows ? kColumnRows : 1;
    std::int64_t made = 0;  // rows of the row pass made so far
    for (std::int64_t y = 0; y < a.out_rows; y += step) {
      const std::int64_t rows = std::min(step, a.out_rows - y);
      for (; made < y + rows + K - 1; ++made) row_pass(made);
      for (std::int64_t k = 0; k < K + rows - 1; ++k) src[k] = at_row(num, y + k);
      Acc* dst[kColumnRows];
      for (std::int64_t m = 0; m < rows; ++m)
        dst[m] = direct ? reinterpret_cast<Acc*>(out_row(y + m)) : an + m * l.n;
      if (rows == kColumnRows)
        column_sums<Acc>(src.data(), wc.data(), K, dst, n);
      else
        for (std::int64_t m = 0; m < rows; ++m)
          weighted_sum<Acc>(src.data() + m, wc.data(), K, dst[m], n);
      for (std::int64_t m = 0; m < rows; ++m) {
        const std::uint8_t* oh = own + (y + m + a.ry) * l.pw + a.rx * C;
        // The vectors whose column window holds a row with a hole in its row window.
        or_rows(vd + (y + m) * l.vecs, l.vecs, K, nv, cd);
        if (whole) {
          for (std::int64_t k = 0; k < K; ++k) src[k] = at_row(den, y + m + k);
          weighted_sum<Acc>(src.data(), wc.data(), K, ad, n);
          if (negative) {
            for (std::int64_t k = 0; k < K; ++k) src[k] = at_row(wab, y + m + k);
            weighted_sum<Acc>(src.data(), wca.data(), K, aw, n);
          }
          finish(dst[m], ad, negative ? aw : ad, oh, nullptr, 0, n);
        } else {
          // A clean window's weights are D (and AW): finish_valid then divides by D where
          // `finish` would, and says nodata where its clean_ok would not hold.
          std::fill(ad, ad + n, D);
          if (negative) std::fill(aw, aw + n, AW);
          const std::int64_t count = vector_offsets<kL>(cd, n, at0);
          for (std::int64_t k = 0; k < K; ++k) src[k] = at_row(den, y + m + k);
          weighted_sum_at<Acc>(src.data(), wc.data(), K, ad, at0, count);
          if (negative) {
            for (std::int64_t k = 0; k < K; ++k) src[k] = at_row(wab, y + m + k);
            weighted_sum_at<Acc>(src.data(), wca.data(), K, aw, at0, count);
          }
          finish(dst[m], ad, negative ? aw : ad, oh, nullptr, 0, n);
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
  return l.acc_n * (a.f64 ? 8 : 4) + l.bytes_n + static_cast<std::size_t>(l.vecs + 8) * 4 +
         static_cast<std::size_t>((2 * a.rx + 1) * (2 * a.ry + 1) + kColumnRows) * sizeof(void*);
}

}  // namespace ooc::kernels::OOC_ISA
