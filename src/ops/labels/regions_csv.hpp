// The label stage's regions table (regions=FILE.csv): one row a label, with the columns and
// values of skimage.measure.regionprops_table, written as every output (a temporary renamed once
// complete) from the measurements of kernels/cpu/labels/regions.hpp, or joined from the rows that
// parts wrote; and the intensity image it reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/stage_registry.hpp"

namespace ooc {
class OutputFile;
}

namespace ooc::detail {

class RegionsCsv {
 public:
  // The header of a volume's table (bbox and centroid in z, y, x) or an image's, with the
  // intensity columns or without (none: a part's rows, joined by join_regions_csv).
  RegionsCsv(const std::string& path, bool volume, bool intensity, bool header = true);
  ~RegionsCsv();
  RegionsCsv(const RegionsCsv&) = delete;
  RegionsCsv& operator=(const RegionsCsv&) = delete;
  // Label `label`'s row: its kShape entries `e` and, with intensity, its kIntensity doubles' bits.
  void row(std::uint64_t label, const std::uint64_t* e, const std::uint64_t* ie);
  void append(const char* rows, std::size_t n);  // rows already written as row() writes them
  void commit();                                 // the rest written, the file renamed to its name

 private:
  void flush();
  std::unique_ptr<OutputFile> file_;
  std::string csv_;
  bool volume_, intensity_;
};

// The table at `path`: the header, then the parts' rows (`parts`, in order); `remove`: the parts'
// files go.
void join_regions_csv(const std::string& path, bool volume, bool intensity,
                      const std::vector<std::string>& parts, bool remove);

// The intensity image of a regions table (the stage's intensity=): of the label input's size and
// one channel (raw files read as its type); `no_regions`: refused, naming regions=.
std::unique_ptr<Source> open_intensity(const StageContext& c, bool no_regions);

}  // namespace ooc::detail
