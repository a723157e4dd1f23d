// The image model: sample types, image geometry with checked 64-bit sizes, and band views.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ooc {

// u64 is the labels' type past 2^32 - 1 components (label label-type=u64): sinks write it and
// front ends return it, but no filter reads or makes it (dispatch_type refuses it), and it is not
// among the types --out-type and the readers take.
enum class SampleType { u8, u16, i16, u32, i32, f32, f64, u64 };

// The types the filters take (u64 is label output only).
inline constexpr SampleType kAllSampleTypes[] = {SampleType::u8,  SampleType::u16, SampleType::i16,
                                                 SampleType::u32, SampleType::i32, SampleType::f32,
                                                 SampleType::f64};

std::size_t sample_bytes(SampleType t) noexcept;
bool is_integer(SampleType t) noexcept;
std::string_view name(SampleType t) noexcept;
// Parses "u8", "uint8", "f32", "float32", ...; throws a usage Error naming the valid types.
SampleType parse_sample_type(std::string_view text);
// Smallest and largest value of an integer type (for saturation); +-max double for floats.
double lowest_value(SampleType t) noexcept;
double highest_value(SampleType t) noexcept;
// Throws the usage Error of a filter given u64 samples (dispatch_type's u64 case).
[[noreturn]] void refuse_u64_samples();

// Geometry of an image of interleaved channels: `depth` planes of height x width (a plane: depth
// 1; a volume: its z-stack). Sources and sinks address the planes' rows one after the other, row
// z x height + y (the order of a C-ordered (z, y, x, c) array). Sizes are checked for overflow.
struct ImageSpec {
  std::int64_t width = 0;
  std::int64_t height = 0;  // rows of a plane
  int channels = 1;
  SampleType type = SampleType::f32;
  std::int64_t depth = 1;  // planes
  // A z axis at depth 1 too (a (1, y, x) array): a volume of one plane, filtered in 3-D as scipy
  // filters such an array (the constant border's planes around it count).
  bool stack = false;

  bool volume() const noexcept { return depth > 1 || stack; }
  // Rows of every plane, stacked: what sources and sinks address.
  std::int64_t stacked_rows() const noexcept { return height * depth; }

  std::size_t pixel_bytes() const noexcept { return sample_bytes(type) * channels; }
  std::size_t row_bytes() const noexcept { return pixel_bytes() * static_cast<std::size_t>(width); }
  std::size_t total_bytes() const noexcept {
    return row_bytes() * static_cast<std::size_t>(height) * static_cast<std::size_t>(depth);
  }
  std::int64_t row_samples() const noexcept { return width * channels; }
  std::int64_t pixels() const noexcept { return width * height * depth; }
  std::string describe()
      const;  // "65536 x 1000 x 3 u16"; a volume "64 planes of 512 x 512 x 1 u16"
};

// The physical size of a voxel along z, y and x, in micrometres; 0 where it is not known (a
// plane's z). Kept beside an image's geometry, not in it: operations make their output specs
// afresh, and the size travels from the input's metadata (or --voxel-size) to the stages that
// filter in physical units and to the outputs that record it.
struct VoxelSize {
  double z = 0, y = 0, x = 0;
  std::string origin;  // where it was read: "OME-XML", "ImageJ", "OME-Zarr ...", "--voxel-size"
  bool known() const noexcept { return y > 0 && x > 0; }
};

// Throws a usage Error when a dimension is out of range or width*height*channels*bytes overflows.
void validate(const ImageSpec& spec);

// A window onto rows of an image held elsewhere: cropping is pointer arithmetic, never a copy.
struct BandView {
  std::byte* data = nullptr;
  std::size_t row_stride = 0;  // bytes from one row to the next
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  int channels = 1;
  SampleType type = SampleType::f32;

  std::byte* row(std::int64_t y) const noexcept {
    return data + static_cast<std::size_t>(y) * row_stride;
  }
};

}  // namespace ooc
