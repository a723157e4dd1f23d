// ooccheck --compare A B: compares two images of the same geometry band by band, out of core, and
// reports max abs error, RMS error, PSNR and the samples over the tolerance; exit 0 only within it.
// Raw and .npy files (TIFF, and the float64 reference mode, are still to come).
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "cli/common.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"

namespace {

// Row of samples of type t as doubles.
void to_double(ooc::SampleType t, const std::byte* p, std::int64_t n, double* out) {
  auto conv = [&]<class T>(T) {
    for (std::int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * sizeof(T), sizeof(T));
      out[i] = static_cast<double>(v);
    }
  };
  switch (t) {
    case ooc::SampleType::u8:
      return conv(std::uint8_t{});
    case ooc::SampleType::u16:
      return conv(std::uint16_t{});
    case ooc::SampleType::i16:
      return conv(std::int16_t{});
    case ooc::SampleType::u32:
      return conv(std::uint32_t{});
    case ooc::SampleType::i32:
      return conv(std::int32_t{});
    case ooc::SampleType::f32:
      return conv(float{});
    case ooc::SampleType::f64:
      return conv(double{});
  }
}

struct Tally {
  double max_abs = 0, sum_sq = 0, peak = 0;
  std::int64_t over = 0, count = 0, nan_mismatch = 0;
  std::int64_t worst_index = -1;
};

}  // namespace

int main(int argc, char** argv) {
  return ooc::cli::guarded_main("ooccheck", [&]() -> int {
    CLI::App app{"ooccheck: compare two images sample by sample, out of core."};
    app.footer(R"(
Examples:
  ooccheck --compare a.raw b.raw --width 16384 --type f32
  ooccheck --compare ours.raw peer.raw --width 16384 --type u8 --tolerance 1 --margin 16
Exit codes: 0 within tolerance, 1 over it, 2 usage, 3 bad input.
)");
    std::vector<std::string> files;
    bool compare = false;
    std::string type = "f32";
    ooc::RawHints hints;
    double tolerance = -1;
    std::int64_t margin = 0;
    app.add_flag("--compare", compare, "compare two images (A B)")->required();
    app.add_option("FILES", files, "A B")->expected(2)->required();
    app.add_option("--width", hints.width, "samples per row (raw files; .npy headers say it)");
    app.add_option("--height", hints.height, "rows (checked against the file size)");
    app.add_option("--type", type, "u8 u16 i16 u32 i32 f32 f64")->default_str("f32");
    app.add_option("--channels", hints.channels, "interleaved channels")->default_str("1");
    app.add_option("--tolerance", tolerance,
                   "largest allowed |A - B| (default: 1 for integers, 1e-5 x max|A| for floats)");
    app.add_option("--margin", margin, "ignore this many pixels at every edge (other border rules)")
        ->default_str("0");
    if (const auto code = ooc::cli::parse_command_line(app, argc, argv, "ooccheck")) return *code;
    hints.type = ooc::parse_sample_type(type);
    auto a = ooc::open_source(files[0], hints);
    auto b = ooc::open_source(files[1], hints);
    const ooc::ImageSpec s = a->spec();
    if (b->spec().height != s.height)
      throw ooc::Error(ooc::ErrorKind::input, "'" + files[0] + "' has " + std::to_string(s.height) +
                                                  " rows, '" + files[1] + "' has " +
                                                  std::to_string(b->spec().height));
    if (margin < 0 || 2 * margin >= std::min(s.width, s.height))
      throw ooc::Error(ooc::ErrorKind::usage, "--margin must leave part of the image");

    const std::int64_t n = s.row_samples();
    constexpr std::int64_t kBand = 64;
    tbb::combinable<Tally> tallies;
    std::vector<std::byte> ba, bb;
    for (std::int64_t y0 = margin; y0 < s.height - margin; y0 += kBand) {
      const std::int64_t rows = std::min(kBand, s.height - margin - y0);
      ba.resize(rows * s.row_bytes());
      bb.resize(rows * s.row_bytes());
      a->read_rows(y0, rows, ba.data());
      b->read_rows(y0, rows, bb.data());
      tbb::parallel_for(std::int64_t{0}, rows, [&](std::int64_t r) {
        thread_local std::vector<double> da, db;
        da.resize(n);
        db.resize(n);
        to_double(s.type, ba.data() + r * s.row_bytes(), n, da.data());
        to_double(s.type, bb.data() + r * s.row_bytes(), n, db.data());
        Tally& t = tallies.local();
        for (std::int64_t i = margin * s.channels; i < n - margin * s.channels; ++i) {
          const bool nan_a = std::isnan(da[i]), nan_b = std::isnan(db[i]);
          if (nan_a || nan_b) {
            t.nan_mismatch += nan_a != nan_b;
            continue;
          }
          const double d = std::abs(da[i] - db[i]);
          if (d > t.max_abs) {
            t.max_abs = d;
            t.worst_index = (y0 + r) * n + i;
          }
          t.sum_sq += d * d;
          t.peak = std::max(t.peak, std::abs(da[i]));
          ++t.count;
        }
      });
    }
    Tally all;
    tallies.combine_each([&](const Tally& t) {
      if (t.worst_index >= 0 && (all.worst_index < 0 || t.max_abs > all.max_abs)) {
        all.max_abs = t.max_abs;
        all.worst_index = t.worst_index;
      }
      all.sum_sq += t.sum_sq;
      all.peak = std::max(all.peak, t.peak);
      all.count += t.count;
      all.nan_mismatch += t.nan_mismatch;
    });
    if (tolerance < 0) tolerance = ooc::is_integer(s.type) ? 1.0 : 1e-5 * all.peak;
    // Samples over the tolerance: a second pass is not needed when the maximum is within it.
    std::int64_t over = 0;
    if (all.max_abs > tolerance) {
      std::vector<double> da(n), db(n);
      for (std::int64_t y = margin; y < s.height - margin; ++y) {
        a->read_rows(y, 1, ba.data());
        b->read_rows(y, 1, bb.data());
        to_double(s.type, ba.data(), n, da.data());
        to_double(s.type, bb.data(), n, db.data());
        for (std::int64_t i = margin * s.channels; i < n - margin * s.channels; ++i)
          over += std::abs(da[i] - db[i]) > tolerance;
      }
    }
    const double rms = all.count ? std::sqrt(all.sum_sq / double(all.count)) : 0.0;
    const double range =
        ooc::is_integer(s.type) ? ooc::highest_value(s.type) - ooc::lowest_value(s.type) : all.peak;
    const double psnr =
        rms > 0 ? 20 * std::log10(range / rms) : std::numeric_limits<double>::infinity();
    std::printf("compared %lld samples (margin %lld): max abs error %.6g", (long long)all.count,
                (long long)margin, all.max_abs);
    if (all.worst_index >= 0)
      std::printf(" at row %lld sample %lld", (long long)(all.worst_index / n),
                  (long long)(all.worst_index % n));
    std::printf(", RMS %.6g, PSNR %.2f dB, %lld over tolerance %.6g, %lld NaN mismatches\n", rms,
                psnr, (long long)over, tolerance, (long long)all.nan_mismatch);
    const bool ok = over == 0 && all.nan_mismatch == 0;
    std::printf("%s\n", ok ? "OK: within tolerance" : "FAIL: over tolerance");
    return ok ? 0 : 1;
  });
}
