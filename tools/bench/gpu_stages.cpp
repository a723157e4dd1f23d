// ooc_gpu_stages: the ceiling of each stage of the GPU pipeline, measured on its own, for one band
// of W x B samples (plus 2 r halo rows of input): a page-cache read into pinned memory with T
// threads (for each T asked for, alone and again while H2D and D2H copies run without pause, as
// they do in the pipeline: the host memory the two share), H2D, D2H, both copies at once, the
// separable kernels alone (against a device-to-device cudaMemcpy of the same run), NPP's row +
// column filters on the same band, and pwrite + fsync of the output. The slowest of these bounds
// what the whole pipeline can reach. One line per stage, "stage GB/s (median of N)" plus details;
// --csv writes the same rows as CSV. GB = 1e9 bytes. The kernels run twice side by side on the same
// band: the path the pipeline takes (kernels specialized on the radius where there are some) and
// the generic kernels (kernels-generic); their outputs are compared byte for byte. Each kernel row
// also gives the time of its bounds over its time: memory (the DRAM bytes it must move /
// --dram-peak) and FMA (2 (2r + 1) FMAs per output pixel / the device's fp32 FMA rate, SMs x 128 x
// clock): 1.00 = at the bound. The pinned stage times making and freeing pinned host buffers of
// 64 MiB to 4 GiB three ways (cudaHostAlloc; the engine's ring slots: anonymous memory on huge
// pages, populated, then cudaHostRegister; malloc + memset + cudaHostRegister) and the H2D rate
// from each.
//
// Usage: ooc_gpu_stages --file PATH [--width 65536] [--rows 256] [--radius 16] [--type f32|u8]
//                       [--repeats 10] [--threads 8[,16...]] [--device 0] [--csv PATH]
//                       [--dram-peak 3900] [--stages read,copies,kernels,write,pinned]
//                       [--read-methods pread,mmap,mmap-nt,register]
// PATH is an existing file of at least 2 GiB (its content does not matter); it is read once
// before the read stage so that it is in the page cache. The write stage writes as many bytes to
// PATH.stagewrite and deletes it. Without --file, the read and write stages are skipped.
// Exit codes: 0 ok, 1 unexpected failure, 2 usage, 3 input file, 4 I/O, 5 no/failed GPU.
#include <cuda_runtime.h>
#include <emmintrin.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "kernels/cuda/convolution/separable.cuh"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/ops/conv2d.hpp"

#if defined(OOC_BENCH_HAVE_NPP)
#include <nppi_filtering_functions.h>

#include "npp_support.hpp"
#endif

#include "gpu_stages.hpp"

namespace gpu_stages {

// The 2-D convolution by FFT (--method fft: cuFFT overlap-save on the image's tile grid) as the
// engine runs it on a band already in device memory: the operation's CUDA kernel object, its slot
// started (plans, the kernel's spectrum), then run_async timed. f32, a random K x K kernel (not
// separable), nearest border; the band lies inside a taller image (its halo rows are real rows)
// and is whole tile rows high, the nearest to --rows (what the planner makes of a band).
// tools/device/gpu_fft_peers.py times CuPy and NPP on the same shapes.
void stage_fft(const Options& o, Report& rep) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(1.0f, 200.0f), tap(0.1f, 1.0f);
  Stream s;
  for (const int k : o.fft_kernels) {
    ooc::Conv2dParams p;
    p.kernel.rows = p.kernel.cols = k;
    p.kernel.name = "random";
    double sum = 0;
    for (int i = 0; i < k * k; ++i) sum += p.kernel.taps.emplace_back(tap(rng));
    for (double& t : p.kernel.taps) t /= sum;
    p.border = ooc::BorderMode::nearest;
    p.method = ooc::ConvMethod::fft;
    const ooc::ImageSpec spec{o.width, std::int64_t{1} << 22, 1, SampleType::f32};
    const auto op = ooc::make_conv2d(spec, p, {});
    const std::int64_t grid = std::max<std::int64_t>(op->row_grid(), 1);
    const std::int64_t rows = std::max(grid, (o.rows + grid / 2) / grid * grid);
    const std::int64_t halo = op->halo(), in_rows = rows + 2 * halo;
    std::vector<float> in(static_cast<std::size_t>(o.width * in_rows));
    for (float& v : in) v = value(rng);
    DeviceBuffer d_in(o.device, in.size() * sizeof(float));
    OOC_CUDA_TRY(cudaMemcpy(d_in.data(), in.data(), d_in.size(), cudaMemcpyHostToDevice));
    DeviceBuffer d_out(o.device, static_cast<std::size_t>(o.width * rows) * sizeof(float));
    DeviceBuffer d_scratch(o.device, std::max<std::size_t>(op->cuda_scratch_bytes(rows), 1));
    const auto kernel = op->make_cuda({o.device});
    const ooc::CudaSlotInfo slot{0, o.device, s.get()};
    kernel->start(slot);
    ooc::CudaBand b;
    b.band.rows = rows;
    b.band.y0 = 4 * rows;  // on the tile grid, away from the image's edges
    b.in = d_in.data();
    b.in_stride = static_cast<std::size_t>(o.width) * sizeof(float);
    b.halo = halo;
    b.first_row = b.band.y0 - halo;
    b.in_spec = spec;
    b.out = d_out.data();
    b.out_stride = b.in_stride;
    b.scratch = d_scratch.data();
    b.device = o.device;
    b.stream = s.get();
    const auto ms = time_on_stream(s.get(), o.repeats, [&](cudaStream_t) { kernel->run_async(b); });
    kernel->stop(slot);
    const double t = median(ms), pixels = double(o.width) * double(rows);
    const double bytes = double(in_rows + rows) * double(o.width) * sizeof(float);
    std::string what = op->describe();
    for (char& c : what)
      if (c == ',') c = ';';
    rep.row("fft-k" + std::to_string(k), median(gbps_of(ms, bytes)), o.repeats, t,
            pixels / (t * 1e-3) / 1e9, bytes,
            fmt("%.3f", t) + " ms/band of " + std::to_string(rows) + " rows (halo " +
                std::to_string(halo) + "), " + fmt("%.2f", pixels / (t * 1e-3) / 1e9) +
                " Gpixel/s; " + what);
  }
}

int run(const Options& o) {
  // The device first: with none, say so and leave with the device exit code (5).
  int ndev = 0;
  OOC_CUDA_TRY(cudaGetDeviceCount(&ndev));
  if (ndev == 0) throw Error(ErrorKind::device, "no CUDA device found");
  if (o.device >= ndev)
    throw Error(ErrorKind::usage, "--device " + std::to_string(o.device) + " but only " +
                                      std::to_string(ndev) + " CUDA device(s)");
  OOC_CUDA_TRY(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  OOC_CUDA_TRY(cudaGetDeviceProperties(&prop, o.device));

  std::int64_t file_bytes = 0;
  if (!o.file.empty()) {
    file_bytes = file_size_of(o.file);
    if (file_bytes < (std::int64_t{2} << 30))
      std::fprintf(stderr,
                   "%s: warning: --file '%s' has %lld bytes, less than the 2 GiB asked for\n",
                   kProg, o.file.c_str(), static_cast<long long>(file_bytes));
  }

  const bool f32 = o.type == SampleType::f32;
  const std::int64_t W = o.width, B = o.rows, r = o.radius;
  const std::int64_t in_rows = B + 2 * r;
  const std::size_t esize = f32 ? 4 : 1;  // the output has the input's type
  const std::size_t in_bytes = static_cast<std::size_t>(W * in_rows) * esize;
  const std::size_t out_bytes = static_cast<std::size_t>(W * B) * esize;
  const std::size_t mid_bytes = static_cast<std::size_t>(W * in_rows) * sizeof(float);

  std::printf("%s: %s (sm_%d%d, %d SMs), band %lld x %lld + 2 x %lld halo rows, %s, radius %lld\n",
              kProg, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              static_cast<long long>(W), static_cast<long long>(B), static_cast<long long>(r),
              f32 ? "f32" : "u8", static_cast<long long>(r));
  std::printf("%s: input band %.1f MB, output band %.1f MB, f32 intermediate %.1f MB; GB = 1e9 B\n",
              kProg, in_bytes / 1e6, out_bytes / 1e6, mid_bytes / 1e6);
  std::fflush(stdout);

  Report rep(o.csv);
  if (wants(o, "pinned")) stage_pinned(o, rep);
  if (wants(o, "fft")) stage_fft(o, rep);
  PinnedBuffer h_in(in_bytes), h_out(out_bytes);

  // 1. read
  if (!wants(o, "read")) {
  } else if (o.file.empty()) {
    rep.row("read", -1, 0, -1, -1, -1, "skipped: no --file");
  } else {
    stage_warmup(o, rep);
    for (const int T : o.threads)
      for (const std::string& m : o.read_methods)
        for (const bool copies : {false, true}) {
          if (m == "register")
            stage_register(o, file_bytes, h_in.size(), T, copies, rep);
          else
            stage_read(o, file_bytes, h_in, T, copies, m, rep);
        }
  }

  // Random non-zero input (after the read stage, which overwrote h_in with file bytes).
  {
    std::mt19937 gen(12345);
    if (f32) {
      std::uniform_real_distribution<float> dist(0.25f, 1.25f);
      auto* p = reinterpret_cast<float*>(h_in.data());
      for (std::size_t i = 0; i < in_bytes / 4; ++i) p[i] = dist(gen);
    } else {
      std::uniform_int_distribution<int> dist(1, 255);
      auto* p = reinterpret_cast<std::uint8_t*>(h_in.data());
      for (std::size_t i = 0; i < in_bytes; ++i) p[i] = static_cast<std::uint8_t>(dist(gen));
    }
    std::memset(h_out.data(), 0, out_bytes);
  }

  DeviceBuffer d_in(o.device, in_bytes), d_mid(o.device, mid_bytes), d_out(o.device, out_bytes);
  Stream s1, s2;

  // 2. H2D (this also puts the random input on the device for the kernels).
  if (!wants(o, "copies")) {
    OOC_CUDA_TRY(cudaMemcpy(d_in.data(), h_in.data(), in_bytes, cudaMemcpyHostToDevice));
  } else {
    const auto ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t s) {
      OOC_CUDA_TRY(cudaMemcpyAsync(d_in.data(), h_in.data(), in_bytes, cudaMemcpyHostToDevice, s));
    });
    rep.row("h2d", median(gbps_of(ms, in_bytes)), o.repeats, median(ms), -1,
            static_cast<double>(in_bytes), "pinned -> device, one input band incl. halo rows");
  }
  // 3. D2H
  if (wants(o, "copies")) {
    const auto ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t s) {
      OOC_CUDA_TRY(
          cudaMemcpyAsync(h_out.data(), d_out.data(), out_bytes, cudaMemcpyDeviceToHost, s));
    });
    rep.row("d2h", median(gbps_of(ms, out_bytes)), o.repeats, median(ms), -1,
            static_cast<double>(out_bytes), "device -> pinned, one output band");
  }
  // 2b. H2D and D2H at once, on two streams; the time is from the start of both to the end of
  // both, over the bytes of both.
  if (wants(o, "copies")) {
    PinnedBuffer h_out2(out_bytes);
    DeviceBuffer d_out2(o.device, out_bytes);
    OOC_CUDA_TRY(cudaMemsetAsync(d_out2.data(), 0, out_bytes, s1.get()));
    Event forked, joined;
    const auto ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t s) {
      OOC_CUDA_TRY(cudaEventRecord(forked.get(), s));
      OOC_CUDA_TRY(cudaStreamWaitEvent(s2.get(), forked.get(), 0));
      OOC_CUDA_TRY(cudaMemcpyAsync(d_in.data(), h_in.data(), in_bytes, cudaMemcpyHostToDevice, s));
      OOC_CUDA_TRY(cudaMemcpyAsync(h_out2.data(), d_out2.data(), out_bytes, cudaMemcpyDeviceToHost,
                                   s2.get()));
      OOC_CUDA_TRY(cudaEventRecord(joined.get(), s2.get()));
      OOC_CUDA_TRY(cudaStreamWaitEvent(s, joined.get(), 0));
    });
    const double bytes = static_cast<double>(in_bytes + out_bytes);
    rep.row("h2d+d2h", median(gbps_of(ms, bytes)), o.repeats, median(ms), -1, bytes,
            "both at once on two streams, input band H2D + output band D2H, bytes of both");
  }

  // Device-to-device cudaMemcpy, the device memory ceiling of this run (read + write bytes).
  double d2d_gbps = 0;
  if (wants(o, "copies") || wants(o, "kernels")) {
    const std::size_t n = std::max<std::size_t>(std::size_t{256} << 20, mid_bytes);
    DeviceBuffer a(o.device, n), b(o.device, n);
    OOC_CUDA_TRY(cudaMemsetAsync(a.data(), 1, n, s1.get()));
    const auto ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t s) {
      OOC_CUDA_TRY(cudaMemcpyAsync(b.data(), a.data(), n, cudaMemcpyDeviceToDevice, s));
    });
    d2d_gbps = median(gbps_of(ms, 2.0 * n));
    rep.row("d2d-memcpy", d2d_gbps, o.repeats, median(ms), -1, 2.0 * n,
            "cudaMemcpyAsync device -> device of " + fmt("%.0f", n / 1e6) +
                " MB, counting read + write bytes");
  }

  // 4. kernels alone: the path the pipeline takes, then the generic kernels, on the same band.
  if (wants(o, "kernels")) {
    const std::vector<float> taps = gaussian_taps(r);
    DeviceBuffer d_taps(o.device, taps.size() * sizeof(float));
    OOC_CUDA_TRY(cudaMemcpy(d_taps.data(), taps.data(), taps.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
    ooc::cuda::SeparableLaunch a;
    a.in = d_in.data();
    a.in_stride = static_cast<std::size_t>(W) * esize;
    a.mid = d_mid.data();
    a.mid_stride = static_cast<std::size_t>(W) * sizeof(float);
    a.out = d_out.data();
    a.out_stride = static_cast<std::size_t>(W) * esize;
    a.width = W;
    a.channels = 1;
    a.in_type = o.type;
    a.out_type = o.type;
    a.out_rows = B;
    a.rx = r;
    a.ry = r;
    a.row_taps = d_taps.data();
    a.col_taps = d_taps.data();
    a.row_taps_host = taps.data();
    a.col_taps_host = taps.data();
    a.border = ooc::BorderMode::reflect;
    a.first_row = 0;  // a band inside the image: every input row is a real row
    a.image_height = in_rows;
    a.f64 = false;
    ooc::cuda::SeparableLaunch g = a;
    g.generic = true;
    DeviceBuffer d_out_generic(o.device, out_bytes);
    g.out = d_out_generic.data();
    const auto path = ooc::cuda::separable_path(a);
    const char* path_name = path == ooc::cuda::SeparablePath::fused      ? "fused"
                            : path == ooc::cuda::SeparablePath::two_pass ? "two-pass specialized"
                                                                         : "generic";
    // Poison both outputs, so that a sample one of them leaves unwritten shows as a difference.
    OOC_CUDA_TRY(cudaMemsetAsync(d_out.data(), 0xA5, out_bytes, s1.get()));
    OOC_CUDA_TRY(cudaMemsetAsync(d_out_generic.data(), 0x5A, out_bytes, s1.get()));
    // Interleaved: fast, generic, fast, generic... so that clocks and caches treat both alike.
    std::vector<double> kernel_ms, generic_ms;
    for (int i = 0; i < o.repeats; ++i) {
      const auto f = time_on_stream(s1.get(), 1,
                                    [&](cudaStream_t s) { ooc::cuda::separable_band_async(a, s); });
      const auto gm = time_on_stream(
          s1.get(), 1, [&](cudaStream_t s) { ooc::cuda::separable_band_async(g, s); });
      kernel_ms.push_back(f[0]);
      generic_ms.push_back(gm[0]);
    }
    bool identical = false;
    {
      std::vector<unsigned char> x(out_bytes), y(out_bytes);
      OOC_CUDA_TRY(cudaMemcpy(x.data(), d_out.data(), out_bytes, cudaMemcpyDeviceToHost));
      OOC_CUDA_TRY(cudaMemcpy(y.data(), d_out_generic.data(), out_bytes, cudaMemcpyDeviceToHost));
      identical = std::memcmp(x.data(), y.data(), out_bytes) == 0;
    }
    const double ours_ms = median(kernel_ms);
    const double generic_med = median(generic_ms);
    const double pixels = static_cast<double>(W) * static_cast<double>(B);
    // Bounds: DRAM bytes a kernel must move at --dram-peak, and 2 (2r + 1) FMAs per output pixel
    // at the device's fp32 rate (SMs x 128 FMA per clock x clock).
    int clock_khz = 0;
    OOC_CUDA_TRY(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, o.device));
    const double fma_rate = static_cast<double>(prop.multiProcessorCount) * 128.0 * clock_khz * 1e3;
    const double fmas = pixels * 2.0 * static_cast<double>(2 * r + 1);
    const double peak = o.dram_peak_gbps * kGB;
    const double two_pass_bytes = static_cast<double>(in_bytes + 2 * mid_bytes + out_bytes);
    const double fused_bytes = static_cast<double>(in_bytes + out_bytes);
    auto mem_frac = [&](double bytes, double ms) { return bytes / peak / (ms * 1e-3); };
    auto fma_frac = [&](double ms) { return fmas / fma_rate / (ms * 1e-3); };
    std::printf(
        "%s: bounds: DRAM %.0f GB/s (--dram-peak), fp32 FMA %.1f TFMA/s (%d SMs x 128 x "
        "%.0f MHz); %.0f FMAs per output pixel\n",
        kProg, o.dram_peak_gbps, fma_rate / 1e12, prop.multiProcessorCount, clock_khz / 1e3,
        2.0 * static_cast<double>(2 * r + 1));
    std::printf("%s: path taken: %s; outputs of the two paths %s\n", kProg, path_name,
                identical ? "byte-identical" : "DIFFER (a bug: they must be byte-identical)");
    std::fflush(stdout);
    {
      const double io_bytes = static_cast<double>(in_bytes + out_bytes);
      const bool fused = path == ooc::cuda::SeparablePath::fused;
      const double must = fused ? fused_bytes : two_pass_bytes;
      rep.row("kernels", median(gbps_of(kernel_ms, io_bytes)), o.repeats, ours_ms,
              pixels / (ours_ms * 1e-3) / 1e9, io_bytes,
              std::string("separable_band_async (") + path_name +
                  "), f32 accumulate, reflect, Gaussian sigma r/3: " + fmt("%.3f", ours_ms) +
                  " ms/band, " + fmt("%.2f", pixels / (ours_ms * 1e-3) / 1e9) +
                  " Gpixel/s; bytes = input + output band; generic/this time = " +
                  fmt("%.2f", generic_med / ours_ms) + "x; outputs " +
                  (identical ? "byte-identical to the generic kernels"
                             : "DIFFER from the generic kernels"),
              mem_frac(must, ours_ms), fma_frac(ours_ms));
      const double moved = must;
      const double moved_gbps = median(gbps_of(kernel_ms, moved));
      rep.row("kernels-moved", moved_gbps, o.repeats, ours_ms, pixels / (ours_ms * 1e-3) / 1e9,
              moved,
              std::string("same runs, bytes = ") +
                  (fused ? "input + output (fused: no intermediate in DRAM)"
                         : "input + 2 x f32 intermediate + output") +
                  " = " + fmt("%.0f", 100.0 * moved_gbps / d2d_gbps) + "% of d2d-memcpy",
              mem_frac(must, ours_ms), fma_frac(ours_ms));
      rep.row("kernels-generic", median(gbps_of(generic_ms, io_bytes)), o.repeats, generic_med,
              pixels / (generic_med * 1e-3) / 1e9, io_bytes,
              "the generic kernels (SeparableLaunch::generic) on the same band, runs interleaved "
              "with the row above: " +
                  fmt("%.3f", generic_med) + " ms/band, " +
                  fmt("%.2f", pixels / (generic_med * 1e-3) / 1e9) +
                  " Gpixel/s; bytes = input + output band; memory bound counts input + 2 x f32 "
                  "intermediate + output",
              mem_frac(two_pass_bytes, generic_med), fma_frac(generic_med));
    }

    // 5. NPP on the same band
#if defined(OOC_BENCH_HAVE_NPP)
    if (!f32) {
      rep.row("npp", -1, 0, -1, -1, -1, "n/a: the NPP comparison is f32 only");
    } else if (W > std::numeric_limits<int>::max() / 4 ||
               in_rows > std::numeric_limits<int>::max()) {
      rep.row("npp", -1, 0, -1, -1, -1, "n/a: the band is too large for NPP's int sizes");
    } else {
      // NPP convolves (the kernel is applied reversed): hand it the taps reversed, anchor r.
      std::vector<float> rev(taps.rbegin(), taps.rend());
      DeviceBuffer d_rev(o.device, rev.size() * sizeof(float));
      OOC_CUDA_TRY(
          cudaMemcpy(d_rev.data(), rev.data(), rev.size() * sizeof(float), cudaMemcpyHostToDevice));
      DeviceBuffer n_mid(o.device, mid_bytes), n_out(o.device, out_bytes);
      const NppStreamContext ctx = ooc::bench::npp_context(s1.get());
      const int step = static_cast<int>(W * 4);
      const int iw = static_cast<int>(W), ih = static_cast<int>(in_rows), oh = static_cast<int>(B);
      const int mask = static_cast<int>(2 * r + 1), anchor = static_cast<int>(r);
      const auto* src = reinterpret_cast<const Npp32f*>(d_in.data());
      auto* mid = reinterpret_cast<Npp32f*>(n_mid.data());
      auto* dst = reinterpret_cast<Npp32f*>(n_out.data());
      const auto* k = reinterpret_cast<const Npp32f*>(d_rev.data());
      const auto npp_ms = time_on_stream(s1.get(), o.repeats, [&](cudaStream_t) {
        // Row pass over all input rows. Column pass: NPP's pSrc points at the first pixel of the
        // ROI (row r) and oSrcOffset says where that is in the W x (B + 2r) source, so the halo
        // rows are read as real rows and NPP's border rule (replicate) only applies at the left
        // and right edges.
        OOC_NPP_TRY(nppiFilterRowBorder_32f_C1R_Ctx(src, step, NppiSize{iw, ih}, NppiPoint{0, 0},
                                                    mid, step, NppiSize{iw, ih}, k, mask, anchor,
                                                    NPP_BORDER_REPLICATE, ctx));
        OOC_NPP_TRY(nppiFilterColumnBorder_32f_C1R_Ctx(
            mid + r * W, step, NppiSize{iw, ih}, NppiPoint{0, anchor}, dst, step, NppiSize{iw, oh},
            k, mask, anchor, NPP_BORDER_REPLICATE, ctx));
        OOC_CUDA_TRY(cudaGetLastError());
      });
      // Agreement with our kernels away from the left and right edges (borders differ there).
      std::vector<float> ours(static_cast<std::size_t>(W * B)), theirs(ours.size());
      OOC_CUDA_TRY(cudaMemcpy(ours.data(), d_out.data(), out_bytes, cudaMemcpyDeviceToHost));
      OOC_CUDA_TRY(cudaMemcpy(theirs.data(), n_out.data(), out_bytes, cudaMemcpyDeviceToHost));
      double max_diff = 0;
      for (std::int64_t y = 0; y < B; ++y)
        for (std::int64_t x = r; x < W - r; ++x) {
          const std::size_t i = static_cast<std::size_t>(y * W + x);
          max_diff = std::max(max_diff, static_cast<double>(std::fabs(ours[i] - theirs[i])));
        }
      const double t = median(npp_ms);
      const double io_bytes = static_cast<double>(in_bytes + out_bytes);
      rep.row("npp", median(gbps_of(npp_ms, io_bytes)), o.repeats, t, pixels / (t * 1e-3) / 1e9,
              io_bytes,
              "nppiFilterRowBorder + nppiFilterColumnBorder_32f_C1R_Ctx, NPP_BORDER_REPLICATE (NPP "
              "has no reflect): " +
                  fmt("%.3f", t) + " ms/band, " + fmt("%.2f", pixels / (t * 1e-3) / 1e9) +
                  " Gpixel/s, npp/ours time = " + fmt("%.2f", t / ours_ms) +
                  "x, npp/generic time = " + fmt("%.2f", t / generic_med) +
                  "x, max |npp - ours| off the edges = " + fmt("%.2g", max_diff) +
                  "; memory bound counts input + 2 x f32 intermediate + output",
              mem_frac(two_pass_bytes, t), fma_frac(t));
    }
#else
    rep.row("npp", -1, 0, -1, -1, -1,
            f32 ? "n/a: built without NPP (nppif/nppc not found when configuring)"
                : "n/a: the NPP comparison is f32 only");
#endif
  }

  // The output band on the host, for the write stage.
  OOC_CUDA_TRY(cudaMemcpy(h_out.data(), d_out.data(), out_bytes, cudaMemcpyDeviceToHost));

  // 6. write
  if (!wants(o, "write")) {
  } else if (o.file.empty()) {
    rep.row("write", -1, 0, -1, -1, -1, "skipped: no --file");
  } else {
    stage_write(o, file_bytes, h_out, rep);
  }
  return 0;
}

}  // namespace gpu_stages

using gpu_stages::Error;
using gpu_stages::ErrorKind;
using gpu_stages::kProg;
using gpu_stages::kUsage;
using gpu_stages::Options;

int main(int argc, char** argv) {
  try {
    Options o;
    if (!gpu_stages::parse_options(argc, argv, o)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return gpu_stages::run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    if (e.kind() == ErrorKind::device)
      std::fprintf(stderr, "%s: this benchmark needs a working CUDA GPU and driver\n", kProg);
    if (e.kind() == ErrorKind::usage) std::fputs(kUsage, stderr);
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: unexpected failure: %s\n", kProg, e.what());
    return 1;
  }
}
