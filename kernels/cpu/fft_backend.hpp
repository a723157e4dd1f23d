// The one-dimensional complex FFT the CPU's overlap-save convolution is built on, behind one
// interface: KissFFT's header-only C++ template (libkissfft-dev, BSD) by default, FFTW3
// (libfftw3-dev, GPL) when the build enables OOC_WITH_FFTW. Both are used the same way: made once
// per size, direction and input stride, then run from many threads at once on other arrays.
#pragma once

#include <complex>
#include <cstddef>
#include <memory>

namespace ooc::cpu {

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

// "kissfft" or "fftw3", for descriptions and --stats.
const char* fft_library() noexcept;

// Whether n is a size the library transforms fast (only factors 2, 3 and 5).
bool fft_fast_size(std::size_t n) noexcept;
// The smallest such size >= n.
std::size_t fft_next_fast_size(std::size_t n) noexcept;

}  // namespace ooc::cpu
