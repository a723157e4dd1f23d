// The cost model: every number --device auto and the 2-D convolution's method weigh. An operation
// describes its work (ooc/cost.hpp); this file turns the description into nanoseconds per sample
// on one CPU thread and on one GPU, and a run into seconds.
//
// Where the constants come from: each is fitted to the benchmark named, whose command and results
// are in docs/performance.md (rerun it to refit). CPU figures are ns a sample and thread, GPU
// figures ns a sample of kernel time on one GPU.
// - separable_cpu_ns: `tools/bench/run startup` (f32, 1-32 GiB from the page cache to null:,
//   radius 3 and 16, 16 threads): 3.2-3.7 and 6.2-7.0 ns.
// - separable_cuda_ns: `tools/bench/run stages` (kernels alone); beyond radius 64 the generic
//   kernels of `oocconv --sigma 100 --device cuda` (16 GiB f32): 1.9 ns at radius 300.
// - kCpuSepFft*: `oocconv --method direct|fft --radius 8..300` (8192^2 f32, 2 threads, whole
//   processes) and `tools/bench/run fft-auto`: the methods meet near radius 50.
// - direct2d_cpu_ns: `tools/bench/run ops` (K 3 to 31, 16 threads). kCpuFft*: `tools/bench/run fft`
//   (8192^2 f32, K 5 to 255, 2 threads: about 0.075 ns a pass a sample of wall time), scaled so
//   that the model's crossover is the measured one, K 9 to 13.
// - kCudaFft*: `tools/device/bench_nodes.sh fft` (16 GiB f32, 129^2, 255^2 and 511^2 PSFs: 0.037,
//   0.047 and 0.091 ns at 31, 42 and 95 passes) and `ooc_gpu_stages --stages fft`.
// - minmax_cpu_ns, minmax_cuda_ns: `tools/device/bench_nodes.sh footprint` (16384^2 f32 disks of
//   radius 2, 7, 25, 50 and a random 25 x 25: 26, 78, 198, 459 and 101 ns on the CPU, u16 13, 23,
//   63 and 38; GPU 0.68 and 2.0 ns for the disks of 25 and 50) and `oocrun "minimum size=K"
//   --device cuda` (u8/u16, sizes 3 to 101: 0.03-0.08 ns whatever the size).
// - rank_cpu_ns: `oocrun synth:noise null: "median size=K"`: selection networks at 3 x 3 to 11 x 11
//   (5 x 5 3.7 ns; the others scaled from 2 threads, where 3 x 3, 7 x 7, 9 x 9 and 11 x 11 took
//   8.5, 81, 145 and 229 ns); u8 histograms 57 ns at 15 to 101; u16 Huang's 218, 288, 445 ns at
//   15, 51, 101 and two-pass column histograms 290-315 and 230 ns at 51 and 101 (32 threads);
//   f32 ranked histograms 256, 518 and 1130 ns at 15, 51, 101 (16 threads), f64 at 51 527 ns.
// - rank_cuda_ns: the same runs with `--device cuda --cpu-start off`, less their setup: 0.041,
//   0.172 and 2.16 ns at 9, 25 and 49 window samples; u16 0.55, 6.5, 20.6 ns at 15, 51, 101 (the
//   model: 0.71, 5.7, 20.4); u8 0.09, 0.65, 1.9 ns; radix select f32 2.1, 16.5, 60 ns at 15, 51,
//   101, f64 at 51 49.7 ns.
// - rank3d_cpu_ns, rank3d_cuda_ns: `tools/bench/run volumes --jobs "median size=3,median size=5"`
//   (1 GiB u16, 16 threads, whole processes): the CPU 0.43-0.44 and 1.8-1.9 s at 27 and 125
//   samples (about 12 and 55 ns); the GPU's kernels 0.043-0.047 and 1.16-1.27 s (0.09 and 2.3 ns),
//   its whole process 0.49-0.51 and 1.21-1.28 s.
// - product_cpu_ns, product_cuda_ns: `tools/bench/run atax`.
// - kCudaStartSeconds: `tools/bench/run startup` with `--cpu-start off` (the context 0.19-0.31 s,
//   about 0.1 s of teardown, 0.02 s a slot's buffers).
// - kCudaStreamBytesPerSecond: `tools/bench/run stream` (32 GiB f32 from the page cache to null:
//   in 1.41-1.54 s, start included).
// - kCudaStreamShareLostPerExtraGpu, kCudaExtraDeviceSeconds: `tools/device/bench_nodes.sh gpus`
//   (the pack 0.59-0.62 s on one GPU against 0.78-1.20 s on two; setup 0.42-0.44 s against 0.33).
// - kUnknown*, kPointwise*, kCombine*, kMorphology*: estimates, not fitted.
#include "cost_model.hpp"

#include <algorithm>

namespace ooc {
namespace {

// What nothing was measured for (the histogram and lookup passes, make_convert, an operation that
// says nothing): a CPU thread a little slower than a small separable filter, a GPU that streams.
constexpr double kUnknownCpuNs = 2.0, kUnknownCudaNs = 0.01;

// Point operations: one read, a few flops and one write per sample.
constexpr double kPointwiseCpuNs = 0.3, kPointwiseCudaNs = 0.001;

// Separable filters: a fixed cost per sample, then one per tap of both passes; f64 accumulation
// runs half as many lanes. Fitted to large images as well as small: a fit from small images alone
// made radius 16 look slower on the CPU than it is, and auto picked the slower backend.
double separable_cpu_ns(double taps, bool f64) {
  return (f64 ? 1.6 : 1.0) * (2.4 + 0.062 * taps);
}
// Up to radius 64 (258 taps) the kernels specialized on the radius; beyond, the generic kernels,
// about 4x the time a tap, where the FFT of the same filter is far cheaper.
double separable_cuda_ns(double taps, bool f64) {
  constexpr double kSpecializedTaps = 258, kGenericNsPerTap = 0.0016;
  const double generic = std::max(taps - kSpecializedTaps, 0.0) * kGenericNsPerTap;
  return (f64 ? 2.0 : 1.0) * (0.005 + 0.0004 * std::min(taps, kSpecializedTaps) + generic);
}

// Separable filters by 1-D FFTs on the CPU (fft_separable.hpp): work per sample
// (fft_separable_work, radix-2 passes over a point) times a time per pass, in the direct model's
// units, so that the two meet where the measured methods do (about radius 50, where the work is
// about 15 passes). FftLinePolicy's cache term (fft_separable.hpp) prices the blocks above 1024.
constexpr double kCpuSepFftNsPerPass = 0.95, kCpuSepFftNsBase = 0.0;
double separable_fft_cpu_ns(double work, bool f64) {
  return (f64 ? 2.0 : 1.0) * (kCpuSepFftNsBase + kCpuSepFftNsPerPass * work);
}

// The 2-D convolution, per output sample (the cost model of ConvMethod::automatic too). Direct:
// a cost per tap. FFT: work per sample (fft_work_per_sample, radix-2 passes over a point) times a
// time per pass, the CPU's in the direct model's units so that the model's crossover is the
// measured one; the GPU's from cuFFT's kernels summed over the slots (kCufftWorkPolicy's passes).
constexpr double kCpuFftNsPerPass = 0.44, kCpuFftNsBase = 1.0;
constexpr double kCudaFftNsPerPass = 0.00093, kCudaFftNsBase = 0.006;
double direct2d_cpu_ns(double taps, bool f64) {
  return (f64 ? 1.6 : 1.0) * (3.0 + 0.055 * taps);
}
double direct2d_cuda_ns(double taps, bool f64) {
  return (f64 ? 2.0 : 1.0) * (0.005 + 0.0003 * taps);
}
double fft2d_cpu_ns(double work, bool f64) {
  return (f64 ? 2.0 : 1.0) * (kCpuFftNsBase + kCpuFftNsPerPass * work);
}
double fft2d_cuda_ns(double work, bool f64) {
  return (f64 ? 2.0 : 1.0) * (kCudaFftNsBase + kCudaFftNsPerPass * work);
}

// Minimum and maximum: the CPU's van Herk/Gil-Werman passes cost the same whatever the window,
// and so do the GPU's (a scan below 6 samples an axis). A footprint on the CPU runs van Herk once
// per distinct length of its rows' runs and a pick pass per run (MinMaxFootprintKernel), each over
// the padded band: 10 + 14 a length + 0.3 a run fits within 1.5x; integers' picks cost about 0.35
// of floats' (NaN-aware, and fewer vector lanes). On the GPU (kernels/cuda/minmax_van_herk.hpp)
// output by output a cost per footprint sample, by lengths one per run; the cheaper is taken.
double minmax_cpu_ns(const Cost& c) {
  if (c.footprint_runs <= 0) return 1.5;
  return (c.floating ? 1.0 : 0.35) * (10.0 + 14.0 * c.footprint_lengths + 0.3 * c.footprint_runs);
}
double minmax_cuda_ns(const Cost& c) {
  if (c.footprint_runs <= 0) return 0.08;
  return 0.08 + std::min(0.0003 * c.window_samples, 0.02 * c.footprint_runs);
}

// Rank filters. CPU: windows of up to 128 samples of floats and 32-bit integers run selection
// networks on vectors (a cost per window sample); 8/16-bit integers slide histograms: u8 costs the
// same at every size (Huang's up to 48 rows, column histograms above), 16 bits grow with the rows
// under Huang's and fall with them under the two-pass column histograms used above 48 rows.
double rank_cpu_ns(const Cost& c) {
  // Windows of up to 25 samples of any type: the selection networks, as below.
  if (c.histogram && c.window_samples > 25) {
    if (!c.wide) return 57.0;
    return c.window_rows <= 48 ? 170.0 + 2.7 * c.window_rows : 170.0 + 6000.0 / c.window_rows;
  }
  if (c.window_samples <= 9) return 1.1;
  if (c.window_samples <= 25) return 3.7;
  if (c.window_samples <= 128) return 0.3 * c.window_samples;
  // Above 128: ranked histograms, two updates per window row a step.
  return 100.0 + 10.0 * c.window_rows;
}
// GPU kernels: a selection per output in registers, linear between the fitted sizes (why 49
// samples cost 12x what 25 do is not known). Rectangles of 8/16-bit integers above 25 samples
// slide histograms instead (kernels/cuda/rank_histogram.hpp), all counts in shared memory: each
// output slides the window's columns (a footprint: its column runs), and 16 bits rebuild the fine
// counts from the whole window when the rank's coarse bin moves (most rows on noise), hence a
// term per window sample; u8 counts coarse bins only. Larger windows of the other types take a
// radix select (kernels/cpu/rank_keys.hpp), a pass over the window for each bit of the keys.
double rank_cuda_ns(const Cost& c) {
  const double n = c.window_samples;
  if (c.key_bits > 0) return 0.6 + (c.key_bits > 32 ? 0.0003 : 0.0002) * c.key_bits * n;
  const bool sides = c.window_rows > 15 || c.window_cols > 15;
  if (c.histogram && (n > 25 || sides) &&
      (c.column_runs > 0 || n == c.window_rows * c.window_cols)) {
    const double slid = c.column_runs > 0 ? c.column_runs : c.window_cols;
    return c.wide ? 0.02 * slid + 0.0018 * n : 0.015 * slid;
  }
  if (n <= 9) return 0.041;
  if (n <= 25) return 0.041 + (n - 9) * (0.172 - 0.041) / 16;
  return 0.172 + (n - 25) * (2.16 - 0.172) / 24;
}

// A volume's rank windows. CPU: networks over columns sorted once and shared by neighbouring
// windows, a cost per window sample. GPU: boxes of up to 64 samples select in registers; larger
// boxes and every footprint take a radix select, a pass over the window for each bit of the
// samples.
double rank3d_cpu_ns(const Cost& c) {
  // Through 55 ns at 125 samples and 10 at 27 rather than the 12 measured there: the GPU's
  // estimate leaves out a volume's per-band copies, and at 27 samples it lost by 0.08 s.
  return std::max(1.0, 0.459 * c.window_samples - 2.4);
}
double rank3d_cuda_ns(const Cost& c) {
  if (c.window_samples <= 64 && c.footprint_runs <= 0) return 0.0034 * c.window_samples;
  return 0.00113 * c.window_samples * std::max(c.key_bits, 8.0);
}

// Combining a stage's input with its filtered copies: a pass over the band beside the filters'.
constexpr double kCombineCpuNs = 0.5, kCombineCudaNs = 0.002;

// Opening, closing and the top-hats on the CPU, as one (the two passes and the difference).
constexpr double kMorphologyCpuNs = 3.5;

// Matrix products: two FMAs per sample and column of X; memory-bound at small k.
double product_cpu_ns(double k) {
  return 1.0 + 0.25 * k;
}
double product_cuda_ns(double k) {
  return 0.002 + 0.0005 * k;
}

// What a GPU run pays besides streaming: mostly the CUDA context, made before the first band and
// torn down at exit; the first slots' buffers add a little each (docs/design.md, "--device auto").
constexpr double kCudaStartSeconds = 0.33;
// Bytes per second the GPUs' slots stream (read into pinned memory, copied in and out), start-up
// included: the host's memory bandwidth, shared by the read and both copies, bounds it, and a
// second GPU does not add to it.
constexpr double kCudaStreamBytesPerSecond = 30e9;
// What each GPU past the first takes off that rate: two GPUs' copies in and out at once leave the
// pack into pinned memory less of the host's bandwidth, so runs not bound by their kernels are
// slower on two.
constexpr double kCudaStreamShareLostPerExtraGpu = 0.3;
// Each GPU after the first: its context and its slots' buffers.
constexpr double kCudaExtraDeviceSeconds = 0.1;
// The share of the time another GPU must save to be taken (estimate_seconds).
constexpr double kCudaGainForAnotherGpu = 0.15;

}  // namespace

namespace {

// Both backends' ns per sample, from one reading of the description.
struct Ns {
  double cpu = 0, cuda = 0;
};

Ns ns_per_sample(const Cost& c);

Ns sum_of_stages(const Cost& c, Ns start) {
  for (const Cost& s : c.stages) {
    const Ns t = ns_per_sample(s);
    start.cpu += t.cpu;
    start.cuda += t.cuda;
  }
  return start;
}

Ns ns_per_sample(const Cost& c) {
  using K = Cost::Kind;
  switch (c.kind) {
    case K::unknown:
    case K::convert:
    case K::histogram:
    case K::lut:
      break;
    case K::given:
      return {c.cpu_ns, c.cuda_ns};
    case K::pointwise:
      return {kPointwiseCpuNs, kPointwiseCudaNs};
    case K::separable:
      return {
          c.cpu_fft ? separable_fft_cpu_ns(c.fft_work, c.f64) : separable_cpu_ns(c.taps, c.f64),
          c.cuda_fft ? fft2d_cuda_ns(c.fft_work_cuda, c.f64) : separable_cuda_ns(c.taps, c.f64)};
    case K::conv2d:
      return {c.cpu_fft ? fft2d_cpu_ns(c.fft_work, c.f64) : direct2d_cpu_ns(c.taps, c.f64),
              c.cuda_fft ? fft2d_cuda_ns(c.fft_work_cuda, c.f64) : direct2d_cuda_ns(c.taps, c.f64)};
    case K::minmax:
      return {minmax_cpu_ns(c), minmax_cuda_ns(c)};
    case K::rank:
      return {rank_cpu_ns(c), rank_cuda_ns(c)};
    case K::rank3d:
      return {rank3d_cpu_ns(c), rank3d_cuda_ns(c)};
    case K::combine:
      return sum_of_stages(c, {kCombineCpuNs, kCombineCudaNs});
    case K::morphology:  // the CPU runs the stages as one kernel, measured as a whole
      return {kMorphologyCpuNs, sum_of_stages(c, {}).cuda};
    case K::fused:
      return sum_of_stages(c, {});
    case K::product:
      return {product_cpu_ns(c.columns), product_cuda_ns(c.columns)};
  }
  return {kUnknownCpuNs, kUnknownCudaNs};
}

}  // namespace

double cpu_ns_per_sample(const Cost& c) {
  return ns_per_sample(c).cpu;
}

double cuda_ns_per_sample(const Cost& c) {
  return ns_per_sample(c).cuda;
}

namespace detail {

double cuda_start_seconds(std::size_t gpus) {
  return kCudaStartSeconds + kCudaExtraDeviceSeconds * double(std::max<std::size_t>(gpus, 1) - 1);
}

double cuda_seconds(const std::vector<const Operation*>& ops, const Workload& work,
                    std::size_t gpus) {
  // The copies share the host's bandwidth, and more GPUs at once stream it a little slower; the
  // kernels divide over the GPUs; each GPU adds its start.
  const double n = double(std::max<std::size_t>(gpus, 1));
  const double stream = kCudaStreamBytesPerSecond / (1 + kCudaStreamShareLostPerExtraGpu * (n - 1));
  double t = cuda_start_seconds(gpus);
  for (const Operation* op : ops)
    t += std::max(double(work.bytes) / stream,
                  double(work.samples) * cuda_ns_per_sample(op->cost()) * 1e-9 / n);
  return t;
}

RunEstimate estimate_seconds(const std::vector<const Operation*>& ops, const Workload& work,
                             int threads, std::size_t gpus) {
  RunEstimate e;
  for (const Operation* op : ops)
    e.cpu += double(work.samples) * cpu_ns_per_sample(op->cost()) * 1e-9 / std::max(threads, 1);
  for (std::size_t n = 1; n <= std::max<std::size_t>(gpus, 1); ++n) {
    const double t = cuda_seconds(ops, work, n);
    // The fewest GPUs that give the shortest time. One more must save more than the model's
    // error: two GPUs it put ahead streamed 4-8% slower than one (radius 16, a 6-stage
    // pipeline), so where it cannot show a clear gain the job keeps one GPU.
    if (n == 1 || t < e.cuda * (1 - kCudaGainForAnotherGpu)) {
      e.cuda = t;
      e.cuda_start = cuda_start_seconds(n);
      e.gpus = n;
    }
  }
  return e;
}

}  // namespace detail
}  // namespace ooc
