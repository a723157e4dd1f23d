// The regions table's rows (regions_csv.hpp): label, area, bbox, centroid and, with an intensity
// image, intensity_sum, _mean, _min, _max and the (population) deviation, as text that reads back
// to the same doubles (%.17g).
#include "ops/labels/regions_csv.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "io/output_file.hpp"
#include "kernels/cpu/labels/regions.hpp"
#include "ooc/error.hpp"

namespace ooc::detail {
namespace {

unsigned long long ull(std::uint64_t v) {
  return v;
}

}  // namespace

RegionsCsv::RegionsCsv(const std::string& path, bool volume, bool intensity)
    : file_(std::make_unique<OutputFile>(path, "")), volume_(volume), intensity_(intensity) {
  csv_ = std::string(volume ? "label,area,bbox-0,bbox-1,bbox-2,bbox-3,bbox-4,bbox-5,centroid-0,"
                              "centroid-1,centroid-2"
                            : "label,area,bbox-0,bbox-1,bbox-2,bbox-3,centroid-0,centroid-1") +
         (intensity ? ",intensity_sum,intensity_mean,intensity_min,intensity_max,intensity_std\n"
                    : "\n");
}

RegionsCsv::~RegionsCsv() = default;

void RegionsCsv::row(std::uint64_t label, const std::uint64_t* e, const std::uint64_t* ie) {
  using namespace kernels;
  char line[768];
  const double a = static_cast<double>(e[kArea]);
  int len = volume_
                ? std::snprintf(line, sizeof line,
                                "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.17g,%.17g,%.17g",
                                ull(label), ull(e[kArea]), ull(e[kZ0]), ull(e[kY0]), ull(e[kX0]),
                                ull(e[kZ1]), ull(e[kY1]), ull(e[kX1]), double(e[kSumZ]) / a,
                                double(e[kSumY]) / a, double(e[kSumX]) / a)
                : std::snprintf(line, sizeof line, "%llu,%llu,%llu,%llu,%llu,%llu,%.17g,%.17g",
                                ull(label), ull(e[kArea]), ull(e[kY0]), ull(e[kX0]), ull(e[kY1]),
                                ull(e[kX1]), double(e[kSumY]) / a, double(e[kSumX]) / a);
  if (intensity_ && ie) {
    double v[kIntensity];
    std::memcpy(v, ie, sizeof v);
    len += std::snprintf(line + len, sizeof line - static_cast<std::size_t>(len),
                         ",%.17g,%.17g,%.17g,%.17g,%.17g", v[kSum], v[kSum] / a, v[kMin], v[kMax],
                         std::sqrt(v[kM2] / a));
  }
  line[len++] = '\n';
  csv_.append(line, static_cast<std::size_t>(len));
  if (csv_.size() > (std::size_t{1} << 20)) flush();
}

void RegionsCsv::flush() {
  for (std::size_t done = 0; done < csv_.size();) {
    const ssize_t w = ::write(file_->fd(), csv_.data() + done, csv_.size() - done);
    if (w <= 0)
      throw Error(ErrorKind::io,
                  system_message("cannot write the regions table", file_->partial(), errno));
    done += static_cast<std::size_t>(w);
  }
  csv_.clear();
}

void RegionsCsv::commit() {
  flush();
  file_->commit();
}

}  // namespace ooc::detail
