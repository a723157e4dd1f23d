// The one place a SampleType becomes its C++ type: sample_cpp_t<t> at compile time (host and CUDA
// device code), and dispatch_type(t, f), which calls f(T{}) for a type known at run time (host
// code, e.g. to pick a kernel's template instance; u64, the labels' type, is refused).
#pragma once

#include <cstdint>

#include "ooc/image.hpp"

namespace ooc {

template <SampleType>
struct SampleCpp;
template <>
struct SampleCpp<SampleType::u8> {
  using type = std::uint8_t;
};
template <>
struct SampleCpp<SampleType::u16> {
  using type = std::uint16_t;
};
template <>
struct SampleCpp<SampleType::i16> {
  using type = std::int16_t;
};
template <>
struct SampleCpp<SampleType::u32> {
  using type = std::uint32_t;
};
template <>
struct SampleCpp<SampleType::i32> {
  using type = std::int32_t;
};
template <>
struct SampleCpp<SampleType::f32> {
  using type = float;
};
template <>
struct SampleCpp<SampleType::f64> {
  using type = double;
};
template <>
struct SampleCpp<SampleType::u64> {
  using type = std::uint64_t;
};
template <SampleType t>
using sample_cpp_t = typename SampleCpp<t>::type;

// f(T{}) for the C++ type T of `t`; every branch must return the same type.
template <class F>
decltype(auto) dispatch_type(SampleType t, F&& f) {
  switch (t) {
    case SampleType::u8:
      return f(std::uint8_t{});
    case SampleType::u16:
      return f(std::uint16_t{});
    case SampleType::i16:
      return f(std::int16_t{});
    case SampleType::u32:
      return f(std::uint32_t{});
    case SampleType::i32:
      return f(std::int32_t{});
    case SampleType::f32:
      return f(float{});
    case SampleType::f64:
      break;
    case SampleType::u64:  // labels only: no kernel is made for them
      refuse_u64_samples();
  }
  return f(double{});
}

}  // namespace ooc
