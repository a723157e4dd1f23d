// The engine's general shape: reductions merged in band order (the same whatever the band
// height, slots and threads), runs over a range of bands, several passes on one set of slots,
// and the equalization operation on it, against independent references (counts and the
// equalization formula written out here); the CUDA backend's plans, with a start held by the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>

#include "engine/staging.hpp"
#include "kernels/cpu/convolution/separable.hpp"
#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/ops/conv2d.hpp"
#include "ooc/ops/convert.hpp"
#include "ooc/ops/equalize.hpp"
#include "ooc/ops/separable.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

using test::MemorySink;
using test::MemorySource;

std::vector<std::uint64_t> count_directly(const ImageSpec& s, const std::vector<std::byte>& d,
                                          std::int64_t bins) {
  std::vector<std::uint64_t> h(static_cast<std::size_t>(bins * s.channels), 0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(s.width * s.height * s.channels); ++i)
    ++h[(i % s.channels) * bins + static_cast<std::int64_t>(test::get(d, s.type, i))];
  return h;
}

std::vector<std::uint64_t> histogram(const ImageSpec& s, const std::vector<std::byte>& d,
                                     const EngineOptions& o) {
  MemorySource src(s, d);
  auto h = make_histogram(s);
  Engine e(src, Backend{}, plan_bands(s, {h.get()}, Backend{}, o));
  e.run(*h, nullptr);
  return h->counts();
}

TEST(Engine, ReductionIsTheSameForEveryBandHeightSlotCountAndThreadCount) {
  for (SampleType t : {SampleType::u8, SampleType::u16}) {
    const ImageSpec s{173, 61, 3, t};
    const auto d = test::random_image(s, 21);
    const auto want = count_directly(s, d, std::int64_t(HistogramOp::bins_of(t)));
    for (std::int64_t rows : {1, 7, 60, 0})
      for (int slots : {1, 3})
        for (int threads : {1, 2}) {
          EngineOptions o;
          o.band_rows = rows;
          o.slots = slots;
          o.threads = threads;
          ASSERT_EQ(histogram(s, d, o), want)
              << name(t) << " rows " << rows << " slots " << slots << " threads " << threads;
        }
  }
}

TEST(Engine, ARangeOfBandsWritesOnlyItsRowsAndRangesAddUp) {
  const ImageSpec s{97, 50, 1, SampleType::f32};
  const auto d = test::random_image(s, 5);
  auto op = make_convert(s, SampleType::f32);
  EngineOptions o;
  o.band_rows = 8;  // 7 bands, the last of 2 rows
  MemorySource src(s, d);
  BandPlan plan = plan_bands(s, {op.get()}, Backend{}, o);
  ASSERT_EQ(plan.bands, 7);
  MemorySink sink(s);
  std::vector<int> expected(50, 0);
  for (auto [first, last] : {std::pair{2, 5}, std::pair{0, 2}, std::pair{5, 7}}) {
    plan.first_band = first;
    plan.last_band = last;
    Engine e(src, Backend{}, plan);
    const RunStats st = e.run(*op, &sink);
    const std::int64_t end = std::min<std::int64_t>(last * 8, 50);
    EXPECT_EQ(st.pixels, (end - first * 8) * 97);
    for (std::int64_t y = first * 8; y < end; ++y) ++expected[y];
    ASSERT_EQ(sink.writes, expected) << "bands " << first << " to " << last;
  }
  for (std::int64_t y = 0; y < 50; ++y) ASSERT_EQ(sink.writes[y], 1) << "row " << y;
  EXPECT_EQ(sink.data, d);
  plan.first_band = 3;
  plan.last_band = 9;
  Engine e(src, Backend{}, plan);
  EXPECT_THROW(e.run(*op, &sink), Error);
}

// The equalization table written out from its definition (float, as OpenCV), for one channel.
std::vector<std::uint16_t> table(const std::vector<std::uint64_t>& h) {
  const std::size_t bins = h.size();
  std::vector<std::uint16_t> lut(bins, 0);
  std::uint64_t n = 0;
  for (auto c : h) n += c;
  std::size_t i0 = 0;
  while (h[i0] == 0) ++i0;
  if (h[i0] == n) {
    for (std::size_t v = 0; v < bins; ++v) lut[v] = static_cast<std::uint16_t>(v);
    return lut;
  }
  const float scale = float(bins - 1) / float(n - h[i0]);
  std::uint64_t sum = 0;
  for (std::size_t v = i0 + 1; v < bins; ++v) {
    sum += h[v];
    lut[v] = static_cast<std::uint16_t>(std::nearbyint(float(sum) * scale));
  }
  return lut;
}

TEST(Engine, TwoPassesOnOneSetOfSlotsEqualize) {
  for (SampleType t : {SampleType::u8, SampleType::u16})
    for (int channels : {1, 2}) {
      const ImageSpec s{131, 77, channels, t};
      auto d = test::random_image(s, 8);
      // Low contrast, so that the table matters: values in [100, 160).
      for (std::size_t i = 0; i < std::size_t(s.width * s.height * channels); ++i) {
        const auto v = static_cast<std::uint64_t>(test::get(d, t, i)) % 60 + 100;
        if (t == SampleType::u8)
          d[i] = std::byte(v);
        else
          std::memcpy(d.data() + 2 * i, &v, 2);
      }
      MemorySource src(s, d);
      auto h = make_histogram(s);
      auto l = make_lut(s);
      EngineOptions o;
      o.band_rows = 9;
      Engine e(src, Backend{}, plan_bands(s, {h.get(), l.get()}, Backend{}, o));
      e.run(*h, nullptr);
      const std::int64_t bins = h->bins();
      l->set_lut(equalization_lut(h->counts(), bins, channels));
      MemorySink sink(s);
      e.run(*l, &sink);
      const auto counts = count_directly(s, d, bins);
      for (int c = 0; c < channels; ++c) {
        const auto want = table(
            std::vector<std::uint64_t>(counts.begin() + c * bins, counts.begin() + (c + 1) * bins));
        for (std::size_t i = c; i < std::size_t(s.width * s.height * channels); i += channels)
          ASSERT_EQ(test::get(sink.data, t, i), want[std::size_t(test::get(d, t, i))])
              << name(t) << " sample " << i;
      }
    }
}

TEST(Engine, ConstantImageIsReturnedUnchanged) {
  const ImageSpec s{40, 30, 1, SampleType::u8};
  std::vector<std::byte> d(s.total_bytes(), std::byte{77});
  std::vector<std::uint64_t> counts(256, 0);
  counts[77] = 1200;
  const auto lut = equalization_lut(counts, 256, 1);
  EXPECT_EQ(lut[77], 77);
}

// A CUDA start that this test controls: it stays "starting" until finish() (then fails, as on
// a machine without a GPU), so that the engine's CUDA backend runs its bands on the CPU.
class HeldStart final : public detail::CudaStart {
 public:
  bool ready() const override { return done_; }
  bool failed() const override { return done_.load(); }
  void wait() const override {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return done_.load(); });
    throw Error(ErrorKind::device, "held start: no GPU here");
  }
  std::size_t free_bytes(std::size_t) const override { return std::size_t{1} << 40; }
  void finish() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
  }

 private:
  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  std::atomic<bool> done_{false};
};

Backend held_cuda(const std::shared_ptr<HeldStart>& start, bool cpu_if_fails) {
  Backend b;
  b.cuda = true;
  b.devices = {0};
  b.start = start;
  b.cpu_if_cuda_fails = cpu_if_fails;
  return b;
}

// Two GPUs have twice the slots: the planner makes bands up to half as tall so that the CPU's
// buffers for the start still fit beside the pinned ring under the default limit.
TEST(Engine, TwoGpusKeepTheCpuStartUnderTheDefaultLimit) {
  const ImageSpec spec{65536, 65536, 1, SampleType::f32};  // 16 GiB: only planned
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(16, 0);
  auto op = make_separable(spec, p, EngineOptions{});
  if (!op->has_cuda()) GTEST_SKIP() << "this build has no CUDA kernels";
  if (!op->cpu_gives_cuda_bits()) GTEST_SKIP() << "this CPU does not give the GPU's bits";
  for (const std::vector<int>& devices : {std::vector<int>{0}, std::vector<int>{0, 1}}) {
    auto start = std::make_shared<HeldStart>();
    Backend b = held_cuda(start, false);
    b.devices = devices;
    EngineOptions po;
    po.cpu_start_bands = 0;
    const BandPlan gpu_only = plan_bands(spec, {op.get()}, b, po);
    po.cpu_start_bands = -1;
    const BandPlan with_start = plan_bands(spec, {op.get()}, b, po);
    EXPECT_EQ(with_start.cpu_start_bands, -1) << devices.size() << " GPUs";
    EXPECT_LE(with_start.ring_bytes, with_start.mem_limit);
    EXPECT_GE(2 * with_start.band_rows, gpu_only.band_rows) << devices.size() << " GPUs";
    EXPECT_LE(with_start.band_rows, gpu_only.band_rows);
    start->finish();
  }
}

// Only operations whose CPU kernel gives the CUDA kernels' bytes take bands on the CPU while CUDA
// starts by default: the others' results would depend on how long the start took.
// Several GPUs: each device holds a run of consecutive slots, in device order (so consecutive bands
// share their halo on one device), every device gets a slot when there are enough, and the counts
// differ by at most one (the planner sizes each device for the largest count).
// A volume's 3-D filter, to plan only: 8 rows and 8 planes of context.
class VolumeOp final : public Operation {
 public:
  explicit VolumeOp(ImageSpec in) : in_(in) {}
  std::string describe() const override { return "volume"; }
  std::optional<ImageSpec> output() const override { return in_; }
  std::int64_t halo() const override { return 8; }
  std::int64_t plane_halo() const override { return 8; }
  std::unique_ptr<CpuKernel> make_cpu() const override { return nullptr; }

 private:
  ImageSpec in_;
};

// A sink to plan with: rows in any order (raw, .npy, null:) or only in order (TIFF, Zarr).
class PlanSink final : public Sink {
 public:
  PlanSink(ImageSpec s, bool any) : spec_(s), any_(any) {}
  const ImageSpec& spec() const noexcept override { return spec_; }
  std::string describe() const override { return "plan sink"; }
  void write_rows(std::int64_t, std::int64_t, const std::byte*, std::size_t) override {}
  void commit() override {}
  bool any_order() const override { return any_; }

 private:
  ImageSpec spec_;
  bool any_;
};

// On one GPU, a volume walked so that each band takes 2R of its planes from the band before pins
// one plane's rows a slot: the ring is about (2R + 1) / 2 times smaller than the window's for the
// same bands, and the bands are as tall as the GPU likes. Elsewhere (two GPUs, a sink that takes
// rows in order) the slots hold the whole window, as before.
TEST(Engine, OneGpuVolumeSlotsPinOnePlane) {
#ifndef OOC_HAVE_CUDA
  GTEST_SKIP() << "this build has no CUDA: its planner cannot size GPU slots";
#endif
  ImageSpec spec{4096, 4096, 1, SampleType::f32};
  spec.depth = 256;  // 16 GiB: only planned
  const VolumeOp op(spec);
  const PlanSink any(spec, true), in_order(spec, false);
  auto start = std::make_shared<HeldStart>();
  for (const std::vector<int>& devices : {std::vector<int>{0}, std::vector<int>{0, 1}})
    for (const Sink* sink : {static_cast<const Sink*>(&any), static_cast<const Sink*>(&in_order)}) {
      Backend b = held_cuda(start, false);
      b.devices = devices;
      EngineOptions o;
      o.cpu_start_bands = 0;
      const BandPlan plan = plan_bands(spec, {&op}, b, o, nullptr, sink);
      const bool one_plane = devices.size() == 1 && sink->any_order();
      EXPECT_EQ(plan.host_planes, one_plane ? 1 : 0) << devices.size() << " GPU(s)";
      EXPECT_LE(plan.ring_bytes, plan.mem_limit);
      const std::size_t row = spec.row_bytes();
      const std::int64_t planes = one_plane ? 1 : 17;
      // Each slot: its pinned input rows with their halo, and its output rows.
      const std::size_t slot = static_cast<std::size_t>((plan.band_rows + 16) * planes) * row +
                               static_cast<std::size_t>(plan.band_rows) * row;
      EXPECT_GE(plan.ring_bytes, static_cast<std::size_t>(plan.slots) * slot);
      if (one_plane) {
        EXPECT_GE(plan.band_rows, 2048);  // 32 MiB a band copies in
        EXPECT_GT(plan.slab_planes, 0);
        EXPECT_LE(plan.ring_bytes, std::size_t{512} << 20);
      }
    }
  start->finish();
}

// An operation whose output names components (a label stage's second pass), to plan only: u8
// in, u32 out.
class LabelsOp final : public Operation {
 public:
  explicit LabelsOp(ImageSpec in) : in_(in) {}
  std::string describe() const override { return "labels"; }
  std::optional<ImageSpec> output() const override {
    ImageSpec o = in_;
    o.type = SampleType::u32;
    return o;
  }
  bool output_is_labels() const override { return true; }
  bool cpu_gives_cuda_bits() const override { return true; }  // as the real stage's
  std::unique_ptr<CpuKernel> make_cpu() const override { return nullptr; }
  // A CPU band's runs, as the label stage counts them: scratch a computing thread holds.
  std::size_t cpu_band_bytes(std::int64_t rows, std::int64_t cols) const override {
    return static_cast<std::size_t>(rows) * (static_cast<std::size_t>((cols + 1) / 2) * 12 + 8);
  }

 private:
  ImageSpec in_;
};

// Labels on a GPU: six times the slots a GPU of other operations, of bands of at most 24 MiB, the
// ring under the limit; with the CPU start's buffers planned (under the default limit too), 2 of
// every 3 bands of pass 1 and every 2nd of pass 2 go to the CPU. A filter of the same image keeps 4
// a GPU and no share;
// --slots is taken as given.
TEST(Engine, LabelsOnAGpuHaveManyShortSlotsAndShareBothPassesWithTheCpu) {
#ifndef OOC_HAVE_CUDA
  GTEST_SKIP() << "this build has no CUDA: its planner cannot size GPU slots";
#endif
  const ImageSpec spec{65536, 262144, 1, SampleType::u8};  // 16 GiB: only planned
  const LabelsOp labels(spec);
  const ImageSpec f32{16384, 16384, 1, SampleType::f32};
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(3, 0);
  auto filter = make_separable(f32, p, EngineOptions{});
  auto start = std::make_shared<HeldStart>();
  for (const std::vector<int>& devices : {std::vector<int>{0}, std::vector<int>{0, 1}}) {
    Backend b = held_cuda(start, false);
    b.devices = devices;
    EngineOptions o;
    o.cpu_start_bands = 0;
    const int gpus = static_cast<int>(devices.size());
    const BandPlan plan = plan_bands(spec, {&labels}, b, o);
    EXPECT_EQ(plan.slots, 24 * gpus);
    EXPECT_LE(plan.ring_bytes, plan.mem_limit);
    EXPECT_LE(plan.band_rows, 64);     // 24 MiB a slot at most
    EXPECT_EQ(plan.cpu_share.cpu, 0);  // no CPU start, no CPU share
    EXPECT_EQ(plan.cpu_share_out.cpu, 0);
    EngineOptions started = o;
    started.cpu_start_bands = -1;
    started.threads = 16;  // a GPU node's cores, whatever this machine has
    for (const std::size_t limit : {std::size_t{0}, std::size_t{8} << 30}) {
      // 0: the default, which fits the CPU's buffers beside one GPU's ring (two GPUs' rings take
      // it)
      if (limit == 0 && gpus > 1) continue;
      started.mem_limit = limit;
      const BandPlan shared = plan_bands(spec, {&labels}, b, started);
      EXPECT_EQ(shared.cpu_share.cpu, 2) << gpus << " GPU(s), limit " << limit;
      EXPECT_EQ(shared.cpu_share.of, 3) << gpus << " GPU(s), limit " << limit;
      EXPECT_EQ(shared.cpu_share_out.cpu, 1) << gpus << " GPU(s), limit " << limit;
      EXPECT_EQ(shared.cpu_share_out.of, 2) << gpus << " GPU(s), limit " << limit;
      EXPECT_EQ(shared.slots, 24 * gpus);
      EXPECT_LE(shared.ring_bytes, shared.mem_limit);
      EXPECT_GE(shared.band_rows, 8);
      // The shares from the environment (measurements, tests), and a clear refusal of others.
      ::setenv("OOC_LABEL_CPU_SHARE", "2/3", 1);
      ::setenv("OOC_LABEL_CPU_SHARE_OUT", "0", 1);
      const BandPlan envs = plan_bands(spec, {&labels}, b, started);
      EXPECT_EQ(envs.cpu_share.cpu, 2);
      EXPECT_EQ(envs.cpu_share.of, 3);
      EXPECT_EQ(envs.cpu_share_out.cpu, 0);
      for (const char* bad : {"3/2", "1/0", "-1/2", "1/2x", "half", "1", ""}) {
        ::setenv("OOC_LABEL_CPU_SHARE", bad, 1);
        EXPECT_THROW(plan_bands(spec, {&labels}, b, started), Error) << bad;
      }
      ::unsetenv("OOC_LABEL_CPU_SHARE");
      ::unsetenv("OOC_LABEL_CPU_SHARE_OUT");
      // A resumed run with other --threads plans the same bands.
      for (const int threads : {1, 7, 64}) {
        EngineOptions other = started;
        other.threads = threads;
        EXPECT_EQ(plan_bands(spec, {&labels}, b, other).band_rows, shared.band_rows)
            << threads << " threads, limit " << limit;
      }
    }
    o.slots = 4 * gpus;
    EXPECT_EQ(plan_bands(spec, {&labels}, b, o).slots, 4 * gpus);
    o.slots = 3;
    EXPECT_EQ(plan_bands(spec, {&labels}, b, o).slots, 3);
    o.slots = 0;
    EXPECT_EQ(plan_bands(f32, {filter.get()}, b, o).slots, 4 * gpus);
    EXPECT_EQ(plan_bands(f32, {filter.get()}, b, started).cpu_share_out.cpu, 0);
  }
  start->finish();
}

TEST(Engine, SlotsGoToDevicesInRunsOfConsecutiveSlots) {
  for (std::size_t devices = 1; devices <= 8; ++devices)
    for (std::size_t slots = 1; slots <= 40; ++slots) {
      std::vector<std::size_t> count(devices, 0);
      std::size_t last = 0;
      for (std::size_t i = 0; i < slots; ++i) {
        const std::size_t d = ooc::detail::slot_device_index(i, slots, devices);
        ASSERT_LT(d, devices);
        ASSERT_TRUE(i == 0 ? d == 0 : d >= last)
            << "slot " << i << " of " << slots << " on " << devices << " devices";
        last = d;
        ++count[d];
      }
      const auto [lo, hi] = std::minmax_element(count.begin(), count.end());
      EXPECT_LE(*hi, (slots + devices - 1) / devices);
      if (slots >= devices) {
        EXPECT_GE(*lo, std::size_t{1}) << slots << " slots, " << devices;
      }
      EXPECT_LE(*hi - *lo, std::size_t{1});
    }
}

TEST(Engine, OnlyOperationsWithTheGpuBitsStartOnTheCpu) {
  const ImageSpec s{64, 32, 1, SampleType::u16};
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(3, 0);
  EXPECT_EQ(make_separable(s, p, EngineOptions{})->cpu_gives_cuda_bits(),
            std::string(kernels::separable_isa()) != "baseline");
  EXPECT_TRUE(make_histogram(s)->cpu_gives_cuda_bits());
  EXPECT_TRUE(make_lut(s)->cpu_gives_cuda_bits());
  Conv2dParams c;
  c.kernel = parse_kernel("laplace", 1 << 30);
  EXPECT_FALSE(make_conv2d(s, c)->cpu_gives_cuda_bits());  // 2-D sums: not checked equal
}

// While CUDA starts, the CUDA backend's bands go through the CPU's kernels: every band, when the
// GPU never becomes ready in time, with the CPU backend's exact bytes; the plan counts their
// buffers. A start that fails under --device auto leaves the whole run on the CPU; under
// --device cuda it is the run's error.
TEST(Engine, BandsRunOnTheCpuWhileCudaStarts) {
  const ImageSpec spec{517, 203, 2, SampleType::f32};
  const auto data = test::random_image(spec, 31);
  SeparableParams p;
  p.filter.row = p.filter.col = gaussian_taps(5, 0);
  p.border = BorderMode::reflect;
  auto op = make_separable(spec, p, EngineOptions{});
  // A build without CUDA kernels refuses the CUDA backend before any band (and the held start
  // below would then never end).
  if (!op->has_cuda()) GTEST_SKIP() << "this build has no CUDA kernels";
  EngineOptions o;
  o.band_rows = 16;
  o.threads = 2;
  const auto cpu = test::run_in_memory(*op, spec, data, o);
  const std::int64_t bands = (spec.height + 15) / 16;

  // auto only where the CPU gives the GPU's bits (a CPU with FMA).
  std::vector<std::int64_t> modes = {bands};
  if (op->cpu_gives_cuda_bits()) modes.push_back(-1);
  for (const std::int64_t n : modes) {
    auto start = std::make_shared<HeldStart>();
    const Backend b = held_cuda(start, false);
    EngineOptions po = o;
    po.cpu_start_bands = n;
    const BandPlan plan = plan_bands(spec, {op.get()}, b, po);
    EXPECT_EQ(plan.cpu_start_bands, n);
    EXPECT_LE(plan.ring_bytes, plan.mem_limit);
    {
      MemorySource src(spec, data);
      MemorySink sink(spec);
      Engine e(src, b, plan);
      const RunStats st = e.run(*op, &sink);
      EXPECT_EQ(st.cpu_bands, bands) << "cpu_start_bands " << n;
      EXPECT_EQ(st.rows_done, spec.height);
      EXPECT_TRUE(sink.data == cpu.data) << "cpu_start_bands " << n;
      start->finish();  // lets the engine's slot maker end (with the start's error)
    }
  }

  // The start fails while the CPU does every band: --device cuda fails with its error, --device
  // auto has the CPU's result.
  for (const bool auto_device : {false, true}) {
    auto start = std::make_shared<HeldStart>();
    const Backend b = held_cuda(start, auto_device);
    EngineOptions po = o;
    po.cpu_start_bands = bands;
    const BandPlan plan = plan_bands(spec, {op.get()}, b, po);
    start->finish();
    MemorySource src(spec, data);
    MemorySink sink(spec);
    Engine e(src, b, plan);
    if (auto_device) {
      EXPECT_EQ(e.run(*op, &sink).rows_done, spec.height);
      EXPECT_TRUE(sink.data == cpu.data);
    } else {
      try {
        e.run(*op, &sink);
        ADD_FAILURE() << "--device cuda succeeded although CUDA failed to start";
      } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("no GPU here"), std::string::npos) << err.what();
      }
    }
  }

  // No room for the CPU's buffers beside the pinned ring: none on the CPU (auto), an error (N).
  {
    auto start = std::make_shared<HeldStart>();
    const Backend b = held_cuda(start, false);
    EngineOptions po = o;
    const BandPlan roomy = plan_bands(spec, {op.get()}, b, po);
    po.cpu_start_bands = 0;
    const BandPlan gpu_only = plan_bands(spec, {op.get()}, b, po);
    EXPECT_EQ(gpu_only.cpu_start_bands, 0);
    EXPECT_GT(roomy.ring_bytes, gpu_only.ring_bytes);
    po.mem_limit = gpu_only.ring_bytes;
    po.cpu_start_bands = -1;
    EXPECT_EQ(plan_bands(spec, {op.get()}, b, po).cpu_start_bands, 0);
    po.cpu_start_bands = 3;
    try {
      plan_bands(spec, {op.get()}, b, po);
      ADD_FAILURE() << "--cpu-start 3 without the memory for it was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--mem-limit"), std::string::npos) << e.what();
    }
    start->finish();
  }

  // The start fails: --device auto goes on with the CPU, --device cuda fails with its error.
  for (const bool auto_device : {true, false}) {
    auto start = std::make_shared<HeldStart>();
    start->finish();
    const Backend b = held_cuda(start, auto_device);
    EngineOptions po = o;
    po.cpu_start_bands = 0;
    MemorySource src(spec, data);
    MemorySink sink(spec);
    if (auto_device) {
      Engine e(src, b, plan_bands(spec, {op.get()}, b, po));
      const RunStats st = e.run(*op, &sink);
      EXPECT_TRUE(sink.data == cpu.data);
      EXPECT_EQ(st.rows_done, spec.height);
      EXPECT_NE(b.start_error().find("no GPU here"), std::string::npos) << b.start_error();
      EXPECT_EQ(b.describe().rfind("cpu", 0), 0u) << b.describe();
    } else {
      try {
        Engine e(src, b, plan_bands(spec, {op.get()}, b, po));
        e.run(*op, &sink);
        ADD_FAILURE() << "a failed CUDA start under --device cuda ran";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no GPU here"), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace ooc
