// The README's library example as a program: blurs a raw f32 image with ooc's engine, then checks
// every output sample against its own float64 convolution (reflect border), so that a consumer
// build that links but computes wrongly fails too.
#include <ooc/error.hpp>
#include <ooc/filter.hpp>
#include <ooc/run.hpp>
#include <ooc/version.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace {

std::vector<float> read_f32(const std::string& path, std::size_t n) {
  std::vector<float> v(n, std::nanf(""));
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(v.data()), n * sizeof(float));
  return v;
}

std::int64_t reflect(std::int64_t i, std::int64_t n) {
  while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - i - 1;
  return i;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: blur IN.raw OUT.raw WIDTH RADIUS\n");
    return 2;
  }
  const std::string in = argv[1], out = argv[2];
  const std::int64_t width = std::stoll(argv[3]), radius = std::stoll(argv[4]);
  try {
    // A job: where from and to, and the stages (typed values, as oocconv --radius makes them).
    ooc::JobSpec spec;
    spec.options.input = in;
    spec.options.hints.width = width;  // a raw file has no header
    spec.options.output = out;
    spec.stages = {ooc::StageCall{"gaussian", {{"sigma", radius / 3.0}, {"radius", radius}}}};
    const ooc::JobResult r = ooc::run_job(std::move(spec));
    std::printf("ooc %s: %lld rows on %s in %.3f s\n", OOC_VERSION_STRING,
                static_cast<long long>(r.total.rows_done), r.report.backend.c_str(),
                r.total.seconds);

    const std::int64_t height = r.report.in.height;
    const std::size_t n = static_cast<std::size_t>(width * height);
    const std::vector<float> a = read_f32(in, n), b = read_f32(out, n);
    const std::vector<double> taps = ooc::gaussian_taps(radius, 0);
    std::vector<double> rows(n);
    for (std::int64_t y = 0; y < height; ++y)
      for (std::int64_t x = 0; x < width; ++x) {
        double s = 0;
        for (std::int64_t k = -radius; k <= radius; ++k)
          s += taps[radius - k] * a[y * width + reflect(x + k, width)];
        rows[y * width + x] = s;
      }
    double worst = 0;
    for (std::int64_t y = 0; y < height; ++y)
      for (std::int64_t x = 0; x < width; ++x) {
        double s = 0;
        for (std::int64_t k = -radius; k <= radius; ++k)
          s += taps[radius - k] * rows[reflect(y + k, height) * width + x];
        const double err = std::abs(b[y * width + x] - s) / (std::abs(s) + 1e-3);
        worst = std::isnan(err) ? INFINITY : std::max(worst, err);
      }
    std::printf("largest relative error against float64: %.3g\n", worst);
    return worst < 1e-5 ? 0 : 1;
  } catch (const ooc::Error& e) {
    std::fprintf(stderr, "blur: %s\n", e.what());
    return 1;
  }
}
