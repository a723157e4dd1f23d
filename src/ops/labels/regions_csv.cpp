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
#include "ooc/io.hpp"

namespace ooc::detail {
namespace {

unsigned long long ull(std::uint64_t v) {
  return v;
}

}  // namespace

RegionsCsv::RegionsCsv(const std::string& path, bool volume, bool intensity, bool header)
    : file_(std::make_unique<OutputFile>(path, "")), volume_(volume), intensity_(intensity) {
  if (!header) return;
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

void RegionsCsv::append(const char* rows, std::size_t n) {
  csv_.append(rows, n);
  if (csv_.size() > (std::size_t{1} << 20)) flush();
}

void RegionsCsv::commit() {
  flush();
  file_->commit();
}

void join_regions_csv(const std::string& path, bool volume, bool intensity,
                      const std::vector<std::string>& parts, bool remove) {
  RegionsCsv out(path, volume, intensity);
  std::vector<char> buf(std::size_t{1} << 20);
  for (const std::string& part : parts) {
    std::FILE* f = std::fopen(part.c_str(), "rb");
    if (!f) throw Error(ErrorKind::io, system_message("cannot read the regions rows", part, errno));
    for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;)
      out.append(buf.data(), n);
    std::fclose(f);
  }
  out.commit();
  if (remove)
    for (const std::string& part : parts) ::unlink(part.c_str());
}

// The intensity image of a regions table: of the label input's size (raw files read as its type).
std::unique_ptr<Source> open_intensity(const StageContext& c, bool no_regions) {
  const std::string path = c.args.text("intensity");
  if (no_regions)
    throw Error(ErrorKind::usage, c.args.at() + ": intensity=" + path +
                                      " goes into the regions table: give regions=FILE.csv too");
  RawHints h;
  h.volume = c.in.volume();
  if (detect_format(path) == "raw") {  // else the header says, and a hint would contradict it
    h.width = c.in.width;
    h.height = c.in.height;
    h.depth = c.in.depth;
    h.type = c.in.type;
  }
  std::unique_ptr<Source> src = open_source(path, h);
  const ImageSpec& is = src->spec();
  if (is.width != c.in.width || is.height != c.in.height || is.depth != c.in.depth ||
      is.channels != 1)
    throw Error(ErrorKind::usage, c.args.at() + ": the intensity image " + path + " is " +
                                      is.describe() + ", the labels' input " + c.in.describe() +
                                      ": give an image of one channel and the same size");
  return src;
}

}  // namespace ooc::detail
