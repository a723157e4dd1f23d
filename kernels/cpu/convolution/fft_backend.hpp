// The one-dimensional complex FFT the CPU's overlap-save convolution is built on, behind one
// interface: KissFFT's header-only C++ template (libkissfft-dev, BSD) by default, FFTW3
// (libfftw3-dev, GPL) when the build enables OOC_WITH_FFTW. Both are used the same way: made once
// per size, direction and input stride, then run from many threads at once on other arrays.
#pragma once

#include <complex>
#include <cstddef>
#include <memory>

namespace ooc::kernels {

template <class T>
class Fft1d {
 public:
  // Unnormalized: the inverse of the forward transform is n times the input.
  Fft1d(std::size_t n, bool inverse, std::size_t in_stride);
  ~Fft1d();
  Fft1d(const Fft1d&) = delete;
  Fft1d& operator=(const Fft1d&) = delete;
  // out[k] = sum_j in[j * in_stride] exp(-+ 2 pi i j k / n); out is contiguous and must not
  // overlap in. Thread-safe: the object is only read.
  void run(const std::complex<T>* in, std::complex<T>* out) const;
  std::size_t size() const noexcept { return n_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::size_t n_;
};

#if defined(OOC_WITH_FFTW)
// `lanes` transforms of n points at once, in the layout of fft_conv_impl.cpp's vectors: point k
// of transform l has its real part at [2 lanes k + l] and its imaginary part at
// [2 lanes k + lanes + l]. (The KissFFT build does this with kissfft.hh on vectors instead.)
template <class T>
class FftLanes {
 public:
  FftLanes(std::size_t n, bool inverse, std::size_t lanes);
  ~FftLanes();
  FftLanes(const FftLanes&) = delete;
  FftLanes& operator=(const FftLanes&) = delete;
  void run(const T* in, T* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::size_t lanes_;
  bool inverse_;
};
#endif

// "kissfft" or "fftw3", for descriptions and --stats.
const char* fft_library() noexcept;

// Whether n is a size the library transforms fast (only factors 2, 3 and 5).
bool fft_fast_size(std::size_t n) noexcept;
// The smallest such size >= n.
std::size_t fft_next_fast_size(std::size_t n) noexcept;

}  // namespace ooc::kernels
