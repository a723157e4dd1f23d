// Jobs over a caller's Source and Sink (what the Python array calls run on): a pipeline's passes
// with the histogram between them give the equalization written out here from its definition,
// every row written once whatever the band height; such a job refuses parts and resuming, checks
// the sink's spec, and never touches a file named like its output.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "ooc/error.hpp"
#include "ooc/job.hpp"
#include "ooc/memory.hpp"
#include "ooc/ops/convert.hpp"
#include "ooc/ops/rank.hpp"
#include "ooc/pipeline.hpp"
#include "reference.hpp"

namespace ooc {
namespace {

using test::MemorySink;
using test::MemorySource;

// cv2.equalizeHist's table for one channel's histogram (float, as OpenCV), from its definition.
std::vector<std::uint8_t> equalize_table(const std::vector<std::uint64_t>& h) {
  std::vector<std::uint8_t> lut(h.size(), 0);
  std::uint64_t n = 0;
  for (const std::uint64_t c : h) n += c;
  std::size_t i0 = 0;
  while (h[i0] == 0) ++i0;
  if (h[i0] == n) {
    for (std::size_t v = 0; v < h.size(); ++v) lut[v] = static_cast<std::uint8_t>(v);
    return lut;
  }
  const float scale = 255.0f / static_cast<float>(n - h[i0]);
  std::uint64_t sum = 0;
  for (std::size_t v = i0 + 1; v < h.size(); ++v) {
    sum += h[v];
    lut[v] = static_cast<std::uint8_t>(std::nearbyint(static_cast<float>(sum) * scale));
  }
  return lut;
}

// Each channel equalized on its own: the expected bytes.
std::vector<std::byte> equalize_reference(const ImageSpec& s, const std::vector<std::byte>& in) {
  const std::size_t n = static_cast<std::size_t>(s.width * s.height);
  std::vector<std::byte> out(in.size());
  for (int c = 0; c < s.channels; ++c) {
    std::vector<std::uint64_t> h(256, 0);
    for (std::size_t i = 0; i < n; ++i)
      ++h[static_cast<std::uint8_t>(in[i * static_cast<std::size_t>(s.channels) + c])];
    const std::vector<std::uint8_t> lut = equalize_table(h);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = i * static_cast<std::size_t>(s.channels) + c;
      out[k] = static_cast<std::byte>(lut[static_cast<std::uint8_t>(in[k])]);
    }
  }
  return out;
}

// A u8 image whose values cover part of the range unevenly (so the table is not the identity).
std::vector<std::byte> skewed_image(const ImageSpec& s, std::uint64_t seed) {
  std::vector<std::byte> d = test::random_image(s, seed);
  for (std::byte& b : d) {
    const int v = static_cast<std::uint8_t>(b);
    b = static_cast<std::byte>(40 + (v * v) / 400);  // 40..202, denser at the bottom
  }
  return d;
}

TEST(JobInMemory, TwoPassEqualizeMatchesTheReferenceForEveryBandHeight) {
  const ImageSpec s{67, 45, 2, SampleType::u8};  // odd width; 45 rows: 7 does not divide them
  const std::vector<std::byte> in = skewed_image(s, 11);
  const std::vector<std::byte> want = equalize_reference(s, in);
  for (std::int64_t rows : {1, 7, 16, 0})
    for (int threads : {1, 2}) {
      JobOptions jo;
      jo.pipeline.band_rows = rows;
      jo.pipeline.threads = threads;
      jo.device = "cpu";
      auto sink = std::make_unique<MemorySink>(s);
      MemorySink& out = *sink;
      Job job(std::make_unique<MemorySource>(s, in), std::move(sink), jo);
      PipelinePlan plan(s, {StageCall{"equalize", {}}}, {}, jo.pipeline);
      ASSERT_EQ(plan.passes(), 2);
      job.start(plan.operations());
      std::vector<RunStats> each;
      std::int64_t last_done = -1, last_total = -1;
      const RunStats total = run_pipeline(
          job, plan,
          [&](std::int64_t d, std::int64_t t) {
            last_done = d;
            last_total = t;
          },
          {}, &each);
      job.commit();
      ASSERT_EQ(each.size(), 2u);
      EXPECT_FALSE(total.stopped);
      EXPECT_EQ(last_done, 2 * s.height) << "progress counts the rows of both passes";
      EXPECT_EQ(last_total, 2 * s.height);
      EXPECT_EQ(out.data, want) << "band rows " << rows << " threads " << threads;
      for (std::int64_t y = 0; y < s.height; ++y)
        ASSERT_EQ(out.writes[static_cast<std::size_t>(y)], 1) << "row " << y;
      const PipelinePlan::Histogram* h = plan.histogram(0);
      ASSERT_NE(h, nullptr);
      EXPECT_EQ(h->bins, 256);
      EXPECT_EQ(h->channels, 2);
    }
}

TEST(JobInMemory, OnePassWritesTheOperationsBytes) {
  const ImageSpec s{33, 20, 1, SampleType::f32};
  const std::vector<std::byte> in = test::random_image(s, 3);
  auto op = make_convert(s, SampleType::u8);
  EngineOptions po;
  po.band_rows = 6;
  const MemorySink want = test::run_in_memory(*op, s, in, po);
  JobOptions jo;
  jo.pipeline = po;
  jo.device = "cpu";
  auto sink = std::make_unique<MemorySink>(*op->output());
  MemorySink& out = *sink;
  Job job(std::make_unique<MemorySource>(s, in), std::move(sink), jo);
  job.start({op.get()});
  const RunStats st = job.run(*op);
  job.commit();
  EXPECT_EQ(st.rows_done, s.height);
  EXPECT_EQ(out.data, want.data);
  EXPECT_EQ(job.row_begin(), 0);
  EXPECT_EQ(job.row_end(), s.height);
  EXPECT_TRUE(job.journal_path().empty());
  EXPECT_TRUE(job.state_path("pass-0").empty());
}

// ooc::MemorySink hands its rows to the kernels (no copy through a slot) only where allowed and
// its rows are the image's rows one after another; either way the output is the operation's bytes,
// every row written (the memory poisoned first).
TEST(JobInMemory, OutputsWrittenInPlaceEqualTheCopiedOnes) {
  const ImageSpec s{57, 41, 2, SampleType::u16};
  const std::vector<std::byte> in = test::random_image(s, 11);
  RankParams p;
  p.height = p.width = 5;
  p.rank = 12;
  auto op = make_rank(s, p);
  EngineOptions po;
  po.band_rows = 7;
  const std::vector<std::byte> want = test::run_in_memory(*op, s, in, po).data;
  const std::size_t row = s.row_bytes();
  for (const bool allowed : {false, true})
    for (const std::size_t pad : {std::size_t{0}, std::size_t{6}}) {  // rows 6 bytes further apart
      std::vector<std::byte> mem(static_cast<std::size_t>(s.height) * (row + pad), std::byte{0x5A});
      ooc::MemoryImage m = ooc::MemoryImage::dense(s, mem.data());
      m.row_stride = static_cast<std::ptrdiff_t>(row + pad);
      auto sink = std::make_unique<ooc::MemorySink>(m);
      sink->in_place(allowed);
      EXPECT_EQ(sink->rows_in_place(3, 4) == mem.data() + 3 * (row + pad), allowed && pad == 0);
      EXPECT_EQ(sink->rows_in_place(3, 4) == nullptr, !allowed || pad != 0);
      JobOptions jo;
      jo.pipeline = po;
      jo.device = "cpu";
      Job job(std::make_unique<MemorySource>(s, in), std::move(sink), jo);
      job.start({op.get()});
      job.run(*op);
      job.commit();
      for (std::int64_t y = 0; y < s.height; ++y)
        EXPECT_EQ(std::memcmp(mem.data() + static_cast<std::size_t>(y) * (row + pad),
                              want.data() + static_cast<std::size_t>(y) * row, row),
                  0)
            << "row " << y << (allowed ? " in place" : " copied") << " pad " << pad;
    }
}

TEST(JobInMemory, RefusesPartsResumeAndASinkOfAnotherSpec) {
  const ImageSpec s{16, 8, 1, SampleType::u8};
  const std::vector<std::byte> in = skewed_image(s, 5);
  const auto make = [&](JobOptions jo) {
    return Job(std::make_unique<MemorySource>(s, in), std::make_unique<MemorySink>(s), jo);
  };
  JobOptions parts;
  parts.part_count = 2;
  EXPECT_THROW(make(parts), Error);
  JobOptions resume;
  resume.resume = true;
  EXPECT_THROW(make(resume), Error);
  JobOptions rows;
  rows.rows_end = 4;
  EXPECT_THROW(make(rows), Error);

  // The operation makes f32, the sink holds u8.
  auto op = make_convert(s, SampleType::f32);
  JobOptions jo;
  jo.device = "cpu";
  Job wrong(std::make_unique<MemorySource>(s, in), std::make_unique<MemorySink>(s), jo);
  EXPECT_THROW(wrong.start({op.get()}), Error);
  Job none(std::make_unique<MemorySource>(s, in), nullptr, jo);
  EXPECT_THROW(none.start({op.get()}), Error);
}

// The output name is only a label: files of that name, or its temporary's, are left alone by a
// committed job and by one destroyed without commit.
TEST(JobInMemory, TouchesNoFileNamedLikeItsOutput) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ooc-job-memory-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "out.raw").string();
  const std::string partial = partial_path(out);
  for (const std::string& p : {out, partial, partial + ".journal"}) std::ofstream(p) << "keep";
  const ImageSpec s{16, 8, 1, SampleType::u8};
  const std::vector<std::byte> in = skewed_image(s, 9);
  auto op = make_convert(s, SampleType::u8);
  for (const bool commit : {true, false}) {
    JobOptions jo;
    jo.input = "<memory>";
    jo.output = out;
    jo.device = "cpu";
    Job job(std::make_unique<MemorySource>(s, in), std::make_unique<MemorySink>(s), jo);
    job.start({op.get()});
    job.run(*op);
    if (commit) job.commit();
  }
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    std::ifstream f(e.path());
    std::string text;
    f >> text;
    EXPECT_EQ(text, "keep") << e.path();
  }
  EXPECT_EQ(files, 3u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ooc
