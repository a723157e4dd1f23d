// The label stage's regions table (regions=FILE.csv): one row a label, with the columns and
// values of skimage.measure.regionprops_table, written as every output (a temporary renamed once
// complete) from the measurements of kernels/cpu/labels/regions.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ooc {
class OutputFile;
}

namespace ooc::detail {

class RegionsCsv {
 public:
  // The header of a volume's table (bbox and centroid in z, y, x) or an image's, with the
  // intensity columns or without.
  RegionsCsv(const std::string& path, bool volume, bool intensity);
  ~RegionsCsv();
  RegionsCsv(const RegionsCsv&) = delete;
  RegionsCsv& operator=(const RegionsCsv&) = delete;
  // Label `label`'s row: its kShape entries `e` and, with intensity, its kIntensity doubles' bits.
  void row(std::uint64_t label, const std::uint64_t* e, const std::uint64_t* ie);
  void commit();  // the rest written, the file renamed to its name

 private:
  void flush();
  std::unique_ptr<OutputFile> file_;
  std::string csv_;
  bool volume_, intensity_;
};

}  // namespace ooc::detail
