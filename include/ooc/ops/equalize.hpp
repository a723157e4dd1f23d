// Global histogram equalization of u8 and u16 images, each channel on its own, in two passes: a
// histogram (a reduction over every band) and a lookup table applied to every band. The table is
// OpenCV's cv2.equalizeHist, for u16 over 65536 bins:
//   i0 = the smallest value present, h = histogram, N = samples of the channel;
//   if h[i0] == N the image is constant and returned unchanged; otherwise
//   scale = float(bins - 1) / float(N - h[i0]), lut[i0] = 0 and for i > i0
//   lut[i] = round_half_even(float(h[i0+1] + ... + h[i]) * scale), all in float, as OpenCV.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ooc/engine.hpp"

namespace ooc {

// The histogram pass: counts per channel and value, merged in band order.
class HistogramOp : public Operation {
 public:
  // 256 bins for u8, 65536 for u16; other types throw a usage Error saying what to do.
  static std::size_t bins_of(SampleType t);
  virtual std::int64_t bins() const = 0;
  virtual int channels() const = 0;
  // counts()[c * bins() + v]: samples of channel c with value v in the bands run so far.
  virtual const std::vector<std::uint64_t>& counts() const = 0;
};
std::unique_ptr<HistogramOp> make_histogram(const ImageSpec& input);

// The equalization table of each channel from a histogram (see the formula above).
std::vector<std::uint16_t> equalization_lut(const std::vector<std::uint64_t>& counts,
                                            std::int64_t bins, int channels);

// The mapping pass: out = lut[channel][in], output type = input type.
class LutOp : public Operation {
 public:
  virtual void set_lut(std::vector<std::uint16_t> lut) = 0;  // channels x bins entries
};
std::unique_ptr<LutOp> make_lut(const ImageSpec& input);

}  // namespace ooc
