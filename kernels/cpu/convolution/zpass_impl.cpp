// The z pass (zpass.hpp), compiled once per instruction set (OOC_ISA): the plane loop outside,
// the samples inside, so each plane's row streams through a vector accumulator in cache.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/convolution/zpass.hpp"
#include "kernels/cpu/morphology/border_constant.hpp"
#include "kernels/cpu/morphology/minmax.hpp"
#include "ooc/detail/sample_type.hpp"

namespace ooc::kernels::OOC_ISA {
namespace {

constexpr std::int64_t kStrip = 1024;  // samples of the accumulator kept in L1

template <class T, class Acc>
void sum_row(const ZPassArgs& a) {
  Acc* out = reinterpret_cast<Acc*>(a.out);
  Acc acc[kStrip];
  for (std::int64_t x0 = 0; x0 < a.samples; x0 += kStrip) {
    const std::int64_t n = std::min(kStrip, a.samples - x0);
    for (std::int64_t k = 0; k < a.planes; ++k) {
      const Acc t = static_cast<Acc>(a.taps[k]);
      const T* in = reinterpret_cast<const T*>(a.rows[k]);
      if (in == nullptr) {
        const Acc v = static_cast<Acc>(a.border_value);  // as the 2-D passes: scipy's double
        if (k == 0)
          for (std::int64_t i = 0; i < n; ++i) acc[i] = t * v;
        else
          for (std::int64_t i = 0; i < n; ++i) acc[i] = t * v + acc[i];
        continue;
      }
      in += x0;
      if (k == 0)
        for (std::int64_t i = 0; i < n; ++i) acc[i] = t * static_cast<Acc>(in[i]);
      else
        for (std::int64_t i = 0; i < n; ++i) acc[i] = t * static_cast<Acc>(in[i]) + acc[i];
    }
    std::copy(acc, acc + n, out + x0);
  }
}

template <bool Max, class T>
void extreme_row(const ZPassArgs& a) {
  T* out = reinterpret_cast<T*>(a.out);
  const T cval = constant_of<T>(a.border_value);
  for (std::int64_t k = 0; k < a.planes; ++k) {
    const T* in = reinterpret_cast<const T*>(a.rows[k]);
    if (k == 0) {
      if (in == nullptr)
        std::fill(out, out + a.samples, cval);
      else
        std::copy(in, in + a.samples, out);
      continue;
    }
    if (in == nullptr)
      for (std::int64_t i = 0; i < a.samples; ++i) out[i] = pick<Max>(out[i], cval);
    else
      for (std::int64_t i = 0; i < a.samples; ++i) out[i] = pick<Max>(out[i], in[i]);
  }
}

}  // namespace

void zpass_row(const ZPassArgs& a) {
  dispatch_type(a.in_type, [&](auto in) {
    using T = decltype(in);
    switch (a.kind) {
      case ZPassKind::sum:
        if (a.out_type == SampleType::f64)
          sum_row<T, double>(a);
        else
          sum_row<T, float>(a);
        break;
      case ZPassKind::minimum:
        extreme_row<false, T>(a);
        break;
      case ZPassKind::maximum:
        extreme_row<true, T>(a);
        break;
    }
  });
}

}  // namespace ooc::kernels::OOC_ISA
