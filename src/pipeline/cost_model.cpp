// The cost model: every number --device auto and the 2-D convolution's method weigh, with where it
// was measured. An operation describes its work (ooc/cost.hpp); this file turns the description
// into nanoseconds per sample on one CPU thread and on one GPU, and a run into seconds.
#include "cost_model.hpp"

#include <algorithm>

namespace ooc {
namespace {

// What nothing was measured for (the histogram and lookup passes, make_convert, an operation that
// says nothing): a CPU thread a little slower than a small separable filter, a GPU that streams.
constexpr double kUnknownCpuNs = 2.0, kUnknownCudaNs = 0.01;

// Point operations: one read, a few flops and one write per sample.
constexpr double kPointwiseCpuNs = 0.3, kPointwiseCudaNs = 0.001;

// Separable filters, fitted to the start-up benchmark (16 cores, f32 from the page cache to null:,
// 1-32 GiB at radius 3 and 16: 3.2-3.7 and 6.2-7.0 ns per sample and thread; docs/performance.md,
// start-up): a fixed cost per sample, then one per tap of both passes; f64 accumulation runs half
// as many lanes. A fit from small images alone (1.6 + 0.1 per tap) made radius 16 on 4 GiB look
// slower on the CPU than it is, and auto picked the slower backend.
double separable_cpu_ns(double taps, bool f64) {
  return (f64 ? 1.6 : 1.0) * (2.4 + 0.062 * taps);
}
// Up to radius 64 (258 taps) the kernels specialized on the radius; beyond, the generic kernels,
// about 4x the time a tap: radius 300 took 8.3 s of kernels for 16 GiB f32 on two H200s (1.9 ns
// a sample), where the FFT of the same filter takes 0.4 s.
double separable_cuda_ns(double taps, bool f64) {
  constexpr double kSpecializedTaps = 258, kGenericNsPerTap = 0.0016;
  const double generic = std::max(taps - kSpecializedTaps, 0.0) * kGenericNsPerTap;
  return (f64 ? 2.0 : 1.0) * (0.005 + 0.0004 * std::min(taps, kSpecializedTaps) + generic);
}

// Separable filters by 1-D FFTs on the CPU (fft_separable.hpp): work per sample
// (fft_separable_work, radix-2 passes over a point) times a time per pass, in the direct model's
// units. Fitted to the crossover measured on the 2-core AVX2 VM (8192^2 f32 from synth:noise to
// null:, 2 threads, whole processes; docs/performance.md): the direct sums took 0.11-0.13, 0.15,
// 0.24, 0.43-0.46, 0.76-0.81 and 1.76-1.80 s at radius 8, 16, 32, 64, 128, 300 (about 42 of the
// direct model's ns a sample per second), the FFT 0.23, 0.20, 0.36, 0.32-0.36, 0.62 and 0.60-0.64
// s: the same time near radius 45, where the work is about 15 passes. Refitted to `tools/bench/run
// fft-auto` (2-core VM, 2 threads, 64 MiB f32 at widths 512 to 32768 from /dev/shm to null:,
// radius 8 to 128, medians of 3 alternated; docs/performance.md): the two methods met between
// radius 40 and 64 (48 to 56 at most widths, 64 at width 512), and 0.9 took the FFT at radius 48
// on 512 x 32768 where it was 1.23x the direct sum's time; 0.95 moves auto's crossover to about
// radius 50. FftLinePolicy's cache term (fft_separable.hpp) prices the blocks above 1024.
constexpr double kCpuSepFftNsPerPass = 0.95, kCpuSepFftNsBase = 0.0;
double separable_fft_cpu_ns(double work, bool f64) {
  return (f64 ? 2.0 : 1.0) * (kCpuSepFftNsBase + kCpuSepFftNsPerPass * work);
}

// The 2-D convolution, per output sample (the cost model of ConvMethod::automatic too).
// Direct: fitted to the 16-core `run ops` rows (K 3 to 31; docs/performance.md); on the 2-core
// AVX2 VM it is about 5-6x the measured wall time a sample (2 threads) at K 9 to 21. FFT: work per
// sample (fft_work_per_sample, radix-2 passes over a point) times a time per pass: the VM's
// measured vectorized KissFFT (8192^2 f32, 2 threads, K 5 to 255: about 0.075 ns a pass a
// sample of wall time) in the direct model's units, so that the model's crossover is the
// measured one, K between 9 and 13 (direct 0.11 s against FFT 0.15 s at 9 x 9, 0.18 s against
// 0.15 s at 13 x 13, whole processes). The GPU's: cuFFT's kernels in 16 GiB f32 runs on one
// H200 (65536 wide, from the page cache to null:), summed over the slots: 0.16, 0.20 and 0.39 s
// for 129^2, 255^2 and 511^2 PSFs (0.037, 0.047 and 0.091 ns a sample at 31, 42 and 95 passes of
// kCufftWorkPolicy's measure); on one band in device memory (ooc_gpu_stages --stages fft, 16384
// wide) 19.6-24.7 Gpixel/s at K 63 to 255, 10.7 at 511.
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

// Minimum and maximum: the CPU's van Herk/Gil-Werman passes cost the same whatever the window.
// The GPU's run van Herk too (a scan below 6 samples an axis): u8 and u16 minimum size=3, 15, 101
// of 16384^2 on one H200 took 0.008-0.021 s of kernel time summed over the 4 slots (0.03-0.08 ns a
// sample, not growing with the window), whole runs 0.49-0.55 s, nearly all of it the 0.42-0.45 s
// setup. A footprint on the CPU runs van Herk once per distinct length of its rows' runs and a
// pick pass per run (MinMaxFootprintKernel), each over the padded band: on the H100 host's 16
// threads (16384^2 from synth:noise to null:, whole runs, docs/performance.md "Footprints on the
// GPU") f32 disks of radius 2, 7, 25, 50 (2, 5, 15 and 30 distinct lengths, 5 to 101 runs) and a
// random 25 x 25 (4 lengths, 143 runs) took 26, 78, 198, 459 and 101 ns a sample and thread;
// fitted within 1.5x by 10 + 14 a length + 0.3 a run. u16 took 13, 23, 63 and 38 ns (no disk of
// 50): integers' picks cost about 0.35 of floats' (NaN-aware, and fewer vector lanes). On
// the GPU (kernels/cuda/minmax_van_herk.hpp) output by output about 0.0003 ns a footprint sample,
// by lengths about 0.02 ns a run (the kernels summed over 4 slots, divided by 4: 0.68 and 2.0 ns
// for the disks of radius 25 and 50).
double minmax_cpu_ns(const Cost& c) {
  if (c.footprint_runs <= 0) return 1.5;
  return (c.floating ? 1.0 : 0.35) * (10.0 + 14.0 * c.footprint_lengths + 0.3 * c.footprint_runs);
}
double minmax_cuda_ns(const Cost& c) {
  if (c.footprint_runs <= 0) return 0.08;
  return 0.08 + std::min(0.0003 * c.window_samples, 0.02 * c.footprint_runs);
}

// Rank filters: the CPU's sliding histogram updates a row of the window per output sample; the
// GPU's sorting network in registers grows with the square of the samples.
// Rank filters (median size=3, 5, 7 of f32 on the 2 x H200 host, 32 threads, 1 GiB from
// synth:noise to null:, kernel seconds from --stats; docs/performance.md, rank filters). CPU, per
// thread: windows of floats and 32-bit integers run selection networks on vectors: 3 x 3 about
// 1.1 ns (scaled from the 2-core VM, where its network took it from 211 to 8.5 ns), 5 x 5 3.7 ns
// (measured), up to 128 samples about 0.3 ns a window sample (scaled from the VM: 81, 145 and 229
// ns at 7x7, 9x9 and 11x11 there, the VM being 5.4x slower a thread at 5 x 5; before the network,
// nth_element took 184 ns at 7 x 7 on the host, about 3.75 ns a sample, as it did above 128
// until the ranked histograms). 8/16-bit integers use sliding histograms (one H200 host's 16 cores,
// 16384^2 medians of sizes 15, 51, 101 from synth:noise, whole runs; docs/performance.md, "Large
// windows of 8- and 16-bit samples on the GPU"): u8 about 57 ns a sample and thread whatever the
// size (Huang's up to 48 rows, column histograms above); 16 bits 218, 288 and 445 ns, growing with
// the rows, with Huang's histograms. Above 48 rows 16 bits now take two-pass column histograms,
// which the 2-core VM measured 0.77x (51 rows) and 0.40x (101) as costly as Huang's there
// (docs/performance.md, "Median"); on the 2 x H200 host (32 threads, 16384^2 u16 from synth:noise
// to null:, whole runs) they took 2.46-2.64 s at 51 and 1.91-1.93 s at 101, about 290-315 and 230
// ns a sample and thread, falling with the rows (at 15, Huang's: 1.84-2.26 s, 220-270 ns).
double rank_cpu_ns(const Cost& c) {
  // Windows of up to 25 samples of any type: the selection networks, as below.
  if (c.histogram && c.window_samples > 25) {
    if (!c.wide) return 57.0;
    return c.window_rows <= 48 ? 170.0 + 2.7 * c.window_rows : 170.0 + 6000.0 / c.window_rows;
  }
  if (c.window_samples <= 9) return 1.1;
  if (c.window_samples <= 25) return 3.7;
  if (c.window_samples <= 128) return 0.3 * c.window_samples;
  // Above 128: ranked histograms, two updates per window row a step. f32 medians of 16384^2 on
  // the H100 host's 16 threads (synth:noise to null:, whole runs): 15, 51 and 101 rows took 256,
  // 518 and 1130 ns a sample and thread, f64 at 51 527 (the 2-core VM's threads took half that:
  // 122, 213 and 387 at 8192^2).
  return 100.0 + 10.0 * c.window_rows;
}
// GPU kernels: a selection per output in registers; 0.041, 0.172 and 2.16 ns per sample at 9, 25
// and 49 window samples (one H200), linear between them; why 49 costs 12x what 25 does is not
// known. Rectangles of 8/16-bit integers above 25 samples count sliding histograms instead
// (kernels/cuda/rank_histogram.hpp), all counts in shared memory: each output slides the window's
// columns, and 16 bits rebuild the fine counts from the whole window when the rank's coarse bin
// moves (most rows on noise). Fitted on one H200 of the 2 x H200 host (16384^2 u16 medians from
// synth:noise to null:, --cpu-start off, whole runs less their 0.43-0.44 s setup): sizes 15, 51,
// 101 took 0.15, 1.74 and 5.52 s (0.55, 6.5, 20.6 ns a sample), here 0.02 ns per window column
// and 0.0018 per window sample (0.71, 5.7, 20.4). u8 counts coarse bins only: 0.015 ns per
// column (its kernels took 0.025, 0.17 and 0.52 s summed over the 4 slots there, 0.09, 0.65 and
// 1.9 ns a sample; whole runs 0.52-0.61 s, mostly setup).
// A footprint slides its column runs instead of the window's columns.
// Larger windows of the other types take a radix select (kernels/cpu/rank_keys.hpp), a pass over
// the window for each bit of the keys: on one H100 (16384^2 medians from synth:noise, whole runs
// less their setup) f32 at 15, 51 and 101 took 2.1, 16.5 and 60 ns a sample, f64 at 51 49.7:
// 0.6 + 0.0002 ns a window sample and bit (0.0003 for 64-bit keys).
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

// Combining a stage's input with its filtered copies: a pass over the band beside the filters'.
constexpr double kCombineCpuNs = 0.5, kCombineCudaNs = 0.002;

// Opening, closing and the top-hats on the CPU, as one (the two passes and the difference).
constexpr double kMorphologyCpuNs = 3.5;

// Matrix products: two FMAs per sample and column of X; memory-bound at small k
// (docs/performance.md, atax).
double product_cpu_ns(double k) {
  return 1.0 + 0.25 * k;
}
double product_cuda_ns(double k) {
  return 0.002 + 0.0005 * k;
}

// What a GPU run pays besides streaming: mostly the CUDA context, made before the first band
// (0.19-0.31 s on an H200) and torn down at exit (about 0.1 s); the first slots' buffers add 0.02 s
// each (docs/design.md, "--device auto"; docs/performance.md, start-up: a 1 GiB image took
// 0.35-0.40 s on CUDA alone).
constexpr double kCudaStartSeconds = 0.33;
// Bytes per second the GPUs' slots stream (read into pinned memory, copied in and out), as
// measured on the same machine: 32 GiB f32 from the page cache to null: in 1.41-1.54 s (radius 16)
// and 1.42-1.51 s (radius 3), start-up included; the host's memory bandwidth, shared by the read
// and both copies, bounds it (about 36-44 GB/s of reads while H2D and D2H run). A second GPU does
// not add to it: on the 2 x H200 host, 8 GiB f32 streamed at 17-25 GB/s on one GPU and 17-18 on
// two (separable r16, a 6-stage pipeline, 2-D 31x31; docs/performance.md, several GPUs).
constexpr double kCudaStreamBytesPerSecond = 30e9;
// What each GPU past the first takes off that rate: two GPUs' copies in and out at once leave the
// pack into pinned memory less of the host's bandwidth. On the 2 x H200 host (16 GiB f32 from the
// page cache to null:, one call) the pack took 0.78-1.20 s on two GPUs against 0.59-0.62 s on one
// for a 2-D 31 x 31 and 511 x 511 FFT, and whole runs on two took 1.1-1.5x those on one wherever
// the kernels were not the bound (docs/performance.md, several GPUs).
constexpr double kCudaStreamShareLostPerExtraGpu = 0.3;
// Each GPU after the first: its context and its slots' buffers (setup 0.42-0.44 s against 0.33 on
// one GPU for the same pipeline there; 0.21-0.27 against 0.13-0.16 for a 2-D kernel).
constexpr double kCudaExtraDeviceSeconds = 0.1;

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
    // The fewest GPUs that give the shortest time (one more must save more than rounding).
    if (n == 1 || t < e.cuda * (1 - 1e-9)) {
      e.cuda = t;
      e.cuda_start = cuda_start_seconds(n);
      e.gpus = n;
    }
  }
  return e;
}

}  // namespace detail
}  // namespace ooc
