// The two implementations of fft_backend.hpp's Fft1d. KissFFT is the default because its BSD
// licence leaves the binaries' licence alone; FFTW3 is faster but GPL, so a binary built with
// OOC_WITH_FFTW=ON may only be distributed under the GPL (README, "Licences").
#include "fft_backend.hpp"

#include <mutex>

#if defined(OOC_WITH_FFTW)
#include <fftw3.h>

#include <type_traits>
#include <utility>
#else
#include <kissfft/kissfft.hh>
#endif

namespace ooc::kernels {

#if defined(OOC_WITH_FFTW)

namespace {
// FFTW's planner is not thread-safe (its execution is); plans are made rarely, so one lock.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

// An FFTW plan of T's precision, destroyed under the planner's lock.
template <class T>
struct PlanOwner {
  using Plan = std::conditional_t<std::is_same_v<T, float>, fftwf_plan, fftw_plan>;
  Plan plan = nullptr;
  PlanOwner() = default;
  PlanOwner(const PlanOwner&) = delete;
  PlanOwner& operator=(const PlanOwner&) = delete;
  ~PlanOwner() {
    if (!plan) return;
    std::lock_guard lock(planner_mutex());
    if constexpr (std::is_same_v<T, float>) {
      fftwf_destroy_plan(plan);
    } else {
      fftw_destroy_plan(plan);
    }
  }
};
}  // namespace

template <class T>
struct Fft1d<T>::Impl : PlanOwner<T> {};

template <class T>
Fft1d<T>::Fft1d(std::size_t n, bool inverse, std::size_t in_stride)
    : impl_(std::make_unique<Impl>()), n_(n) {
  // Planned on scratch arrays; run() uses the new-array interface, hence FFTW_UNALIGNED.
  const int sign = inverse ? FFTW_BACKWARD : FFTW_FORWARD;
  const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
  const int size = static_cast<int>(n), stride = static_cast<int>(in_stride);
  std::lock_guard lock(planner_mutex());
  if constexpr (std::is_same_v<T, float>) {
    auto* in = fftwf_alloc_complex(n * in_stride);
    auto* out = fftwf_alloc_complex(n);
    impl_->plan =
        fftwf_plan_many_dft(1, &size, 1, in, nullptr, stride, 0, out, nullptr, 1, 0, sign, flags);
    fftwf_free(in);
    fftwf_free(out);
  } else {
    auto* in = fftw_alloc_complex(n * in_stride);
    auto* out = fftw_alloc_complex(n);
    impl_->plan =
        fftw_plan_many_dft(1, &size, 1, in, nullptr, stride, 0, out, nullptr, 1, 0, sign, flags);
    fftw_free(in);
    fftw_free(out);
  }
}

template <class T>
void Fft1d<T>::run(const std::complex<T>* in, std::complex<T>* out) const {
  if constexpr (std::is_same_v<T, float>) {
    fftwf_execute_dft(impl_->plan,
                      reinterpret_cast<fftwf_complex*>(const_cast<std::complex<T>*>(in)),
                      reinterpret_cast<fftwf_complex*>(out));
  } else {
    fftw_execute_dft(impl_->plan, reinterpret_cast<fftw_complex*>(const_cast<std::complex<T>*>(in)),
                     reinterpret_cast<fftw_complex*>(out));
  }
}

// Split real and imaginary arrays through the guru interface; FFTW's split transform is the
// forward one, so the inverse swaps the real and imaginary parts of input and output.
template <class T>
struct FftLanes<T>::Impl : PlanOwner<T> {};

template <class T>
FftLanes<T>::FftLanes(std::size_t n, bool inverse, std::size_t lanes)
    : impl_(std::make_unique<Impl>()), lanes_(lanes), inverse_(inverse) {
  const int step = static_cast<int>(2 * lanes);
  const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
  std::lock_guard lock(planner_mutex());
  if constexpr (std::is_same_v<T, float>) {
    fftwf_iodim dim{static_cast<int>(n), step, step}, many{static_cast<int>(lanes), 1, 1};
    float* in = fftwf_alloc_real(2 * n * lanes);
    float* out = fftwf_alloc_real(2 * n * lanes);
    impl_->plan =
        fftwf_plan_guru_split_dft(1, &dim, 1, &many, in, in + lanes, out, out + lanes, flags);
    fftwf_free(in);
    fftwf_free(out);
  } else {
    fftw_iodim dim{static_cast<int>(n), step, step}, many{static_cast<int>(lanes), 1, 1};
    double* in = fftw_alloc_real(2 * n * lanes);
    double* out = fftw_alloc_real(2 * n * lanes);
    impl_->plan =
        fftw_plan_guru_split_dft(1, &dim, 1, &many, in, in + lanes, out, out + lanes, flags);
    fftw_free(in);
    fftw_free(out);
  }
}

template <class T>
FftLanes<T>::~FftLanes() = default;

template <class T>
void FftLanes<T>::run(const T* in, T* out) const {
  T* ri = const_cast<T*>(in);
  T* ii = ri + lanes_;
  T* ro = out;
  T* io = out + lanes_;
  if (inverse_) std::swap(ri, ii), std::swap(ro, io);
  if constexpr (std::is_same_v<T, float>) {
    fftwf_execute_split_dft(impl_->plan, ri, ii, ro, io);
  } else {
    fftw_execute_split_dft(impl_->plan, ri, ii, ro, io);
  }
}

template class FftLanes<float>;
template class FftLanes<double>;

const char* fft_library() noexcept {
  return "fftw3";
}

#else

template <class T>
struct Fft1d<T>::Impl {
  Impl(std::size_t n, bool inverse, std::size_t s) : fft(n, inverse), stride(s) {}
  kissfft<T> fft;
  std::size_t stride;
};

template <class T>
Fft1d<T>::Fft1d(std::size_t n, bool inverse, std::size_t in_stride)
    : impl_(std::make_unique<Impl>(n, inverse, in_stride)), n_(n) {}

template <class T>
void Fft1d<T>::run(const std::complex<T>* in, std::complex<T>* out) const {
  impl_->fft.transform(in, out, 0, 1, impl_->stride);
}

const char* fft_library() noexcept {
  return "kissfft";
}

#endif

template <class T>
Fft1d<T>::~Fft1d() = default;

template class Fft1d<float>;
template class Fft1d<double>;

bool fft_fast_size(std::size_t n) noexcept {
  if (n == 0) return false;
  for (std::size_t p : {2, 3, 5})
    while (n % p == 0) n /= p;
  return n == 1;
}

std::size_t fft_next_fast_size(std::size_t n) noexcept {
  if (n <= 1) return 1;
  while (!fft_fast_size(n)) ++n;
  return n;
}

}  // namespace ooc::kernels
