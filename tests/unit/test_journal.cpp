// The resume journal and finishing in parts, through the public API (ooc::Job, finish_output) on
// a small synthetic input copied by an operation defined here: a part's journal after commit, a
// damaged journal refused ("cannot be trusted"), journals of another input or options refused on
// resume, a resume over the union of the journals of another split (done rows are not written
// again), a whole-image run refused while parts exist, and finish naming a missing or stopped
// part.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ooc/engine.hpp"
#include "ooc/error.hpp"
#include "ooc/io.hpp"
#include "ooc/job.hpp"
#include "scratch.hpp"

namespace {

using ooc::test::contains;
using ooc::test::TempDir;

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

// The identity: output rows are the input rows, so the expected output is the input itself.
class CopyKernel final : public ooc::CpuKernel {
 public:
  explicit CopyKernel(std::size_t row_bytes) : row_bytes_(row_bytes) {}
  void run(const ooc::CpuBand& b) override {
    for (std::int64_t y = 0; y < b.band.rows; ++y)
      std::memcpy(b.out.row(y), b.rows[b.halo + y], row_bytes_);
  }

 private:
  std::size_t row_bytes_;
};

class CopyOp final : public ooc::Operation {
 public:
  explicit CopyOp(const ooc::ImageSpec& spec) : spec_(spec) {}
  std::string describe() const override { return "copy"; }
  std::optional<ooc::ImageSpec> output() const override { return spec_; }
  std::unique_ptr<ooc::CpuKernel> make_cpu() const override {
    return std::make_unique<CopyKernel>(spec_.row_bytes());
  }

 private:
  ooc::ImageSpec spec_;
};

constexpr std::int64_t kW = 37, kH = 20;

ooc::RawHints synth_hints() {
  ooc::RawHints h;
  h.width = kW;
  h.height = kH;
  h.type = ooc::SampleType::u16;
  return h;
}

// The input's bytes, read from a source of its own.
std::vector<std::byte> input_bytes(std::uint64_t seed = 1) {
  auto src = ooc::open_source("synth:noise", synth_hints(), seed);
  std::vector<std::byte> v(src->spec().total_bytes());
  src->read_rows(0, kH, v.data());
  return v;
}

std::vector<std::byte> file_bytes(const std::string& path) {
  const std::string s = read_text(path);
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

ooc::JobOptions options(const std::string& output, int part, int parts) {
  ooc::JobOptions o;
  o.input = "synth:noise";
  o.hints = synth_hints();
  o.seed = 1;
  o.output = output;
  o.device = "cpu";
  o.pipeline.threads = 2;
  o.pipeline.band_rows = 3;  // several bands per part
  o.part_index = part;
  o.part_count = parts;
  o.journal = true;
  o.fingerprint = "copy";
  return o;
}

struct Ran {
  std::string journal;
  std::int64_t begin = 0, end = 0, resumed_from = 0;
  bool nothing_left = false;
};

Ran run_job(const ooc::JobOptions& o) {
  ooc::Job job(o);
  CopyOp op(job.source().spec());
  job.start({&op});
  Ran r{job.journal_path(), job.row_begin(), job.row_end(), job.resumed_from(), job.nothing_left()};
  job.run(op);
  job.commit();
  return r;
}

// The Error `f` throws, or a failure when it throws none.
template <class F>
ooc::Error error_of(F&& f) {
  try {
    f();
  } catch (const ooc::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no ooc::Error thrown";
  return ooc::Error(ooc::ErrorKind::usage, "");
}

// A journal as Job writes it, up to its checksum line (checked separately: its digest is the
// library's own).
std::string journal_body(const std::string& input, const std::string& options, int part, int parts,
                         std::int64_t begin, std::int64_t end, std::int64_t done) {
  return "ooc-journal 2\ninput " + input + "\noptions " + options + "\npart " +
         std::to_string(part) + " " + std::to_string(parts) + "\nrows " + std::to_string(begin) +
         " " + std::to_string(end) + " " + std::to_string(kH) + "\ndone " + std::to_string(done) +
         "\n";
}

void expect_journal(const std::string& path, const std::string& body) {
  const std::string text = read_text(path);
  ASSERT_EQ(text.substr(0, body.size()), body) << path;
  const std::string check = text.substr(body.size());
  ASSERT_TRUE(check.rfind("check ", 0) == 0 && check.back() == '\n') << check;
  const std::string hex = check.substr(6, check.size() - 7);
  EXPECT_GE(hex.size(), 16u) << check;
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << check;
}

TEST(Journal, PartsJournalAfterCommitThenFinish) {
  TempDir tmp("journal");
  const std::string out = tmp / "out.raw", temp = out + ".partial";
  const auto want = input_bytes();
  const std::size_t row = kW * 2;

  const Ran p0 = run_job(options(out, 0, 2));
  EXPECT_EQ(p0.journal, temp + ".part-0-of-2.journal");
  EXPECT_EQ(p0.begin, 0);
  EXPECT_EQ(p0.end, 10);
  expect_journal(p0.journal, journal_body("synth:noise seed 1", "copy", 0, 2, 0, 10, 10));
  // The part wrote its rows into the shared temporary, sized for the whole image; no output yet.
  EXPECT_FALSE(fs::exists(out));
  ASSERT_TRUE(fs::exists(temp));
  EXPECT_EQ(fs::file_size(temp), want.size());
  const auto partial = file_bytes(temp);
  EXPECT_EQ(0, std::memcmp(partial.data(), want.data(), 10 * row));
  EXPECT_TRUE(fs::exists(temp + ".job")) << "the manifest binding the temporary to the job";

  const Ran p1 = run_job(options(out, 1, 2));
  EXPECT_EQ(p1.journal, temp + ".part-1-of-2.journal");
  expect_journal(p1.journal, journal_body("synth:noise seed 1", "copy", 1, 2, 10, 20, 20));

  const std::string summary = ooc::finish_output(out);
  EXPECT_TRUE(contains(summary, "from 2 part(s), 20 rows")) << summary;
  EXPECT_TRUE(file_bytes(out) == want);
  // Nothing left behind: temporary, journals, manifest.
  for (const auto& e : fs::directory_iterator(tmp.dir))
    EXPECT_EQ(e.path().filename().string(), "out.raw") << "left behind";
}

TEST(Journal, WholeRunRemovesItsJournalOnCommit) {
  TempDir tmp("journal");
  const std::string out = tmp / "out.npy";
  const Ran r = run_job(options(out, 0, 1));
  EXPECT_EQ(r.journal, out + ".partial.journal");
  EXPECT_FALSE(fs::exists(r.journal));
  EXPECT_FALSE(fs::exists(out + ".partial.job"));
  const auto got = file_bytes(out);
  const auto want = input_bytes();
  ASSERT_GE(got.size(), want.size());
  // After the .npy header, the rows.
  EXPECT_EQ(0, std::memcmp(got.data() + got.size() - want.size(), want.data(), want.size()));
}

TEST(Journal, FinishNamesTheMissingParts) {
  TempDir tmp("journal");
  const std::string out = tmp / "out.raw";
  ooc::Error e = error_of([&] { ooc::finish_output(out); });
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(contains(e.what(), "has no parts to finish")) << e.what();

  // 3 parts of 20 rows: 0:6, 6:13, 13:20.
  run_job(options(out, 0, 3));
  e = error_of([&] { ooc::finish_output(out); });
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(e.resumable());
  EXPECT_TRUE(contains(e.what(),
                       "is not complete: rows 6:20 have no part (part 1/3, part 2/3 "
                       "has not run)"))
      << e.what();
  EXPECT_FALSE(fs::exists(out));

  run_job(options(out, 2, 3));
  e = error_of([&] { ooc::finish_output(out); });
  EXPECT_TRUE(contains(e.what(), "is not complete: rows 6:13 have no part (part 1/3 has not run)"))
      << e.what();
  EXPECT_FALSE(contains(e.what(), "part 2/3")) << e.what();

  // Part 1 started (its journal says no row is done) and ended without running.
  {
    ooc::Job job(options(out, 1, 3));
    CopyOp op(job.source().spec());
    job.start({&op});
  }
  e = error_of([&] { ooc::finish_output(out); });
  EXPECT_TRUE(contains(e.what(), "part 1/3 (rows 6:13) stopped at row 6")) << e.what();
  EXPECT_FALSE(fs::exists(out));

  // Resumed, it completes the output.
  auto o = options(out, 1, 3);
  o.resume = true;
  run_job(o);
  EXPECT_TRUE(contains(ooc::finish_output(out), "from 3 part(s)"));
  EXPECT_TRUE(file_bytes(out) == input_bytes());
}

TEST(Journal, DamagedJournalCannotBeTrusted) {
  TempDir tmp("journal");
  const std::string out = tmp / "out.raw";
  const Ran p0 = run_job(options(out, 0, 2));
  const std::string good = read_text(p0.journal);
  ASSERT_TRUE(contains(good, "\ndone 10\n"));

  std::string edited = good;
  edited.replace(edited.find("\ndone 10\n"), 9, "\ndone 20\n");  // claims the whole image
  struct Case {
    std::string text, why;
  };
  for (const Case& c : {Case{edited, "its checksum does not match"},
                        Case{good.substr(0, good.size() - 5), "its checksum does not match"},
                        Case{good.substr(0, good.find("check ")), "its checksum does not match"},
                        Case{"hello\n", "not an ooc journal"},
                        Case{"ooc-journal 1\n" + good.substr(good.find('\n') + 1),
                             "it was written by another version of ooc"}}) {
    SCOPED_TRACE(c.why);
    write_text(p0.journal, c.text);
    // Finishing, and a part resumed beside it, refuse it and name it.
    for (const bool resume : {false, true}) {
      const ooc::Error e = error_of([&] {
        if (!resume) {
          ooc::finish_output(out);
        } else {
          auto o = options(out, 1, 2);
          o.resume = true;
          run_job(o);
        }
      });
      EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
      EXPECT_TRUE(contains(e.what(), "journal '" + p0.journal + "' cannot be trusted (" + c.why))
          << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
  }
}

TEST(Journal, ResumeRefusesJournalsOfAnotherInputOrOptions) {
  TempDir tmp("journal");
  const std::string out = tmp / "out.raw";
  run_job(options(out, 0, 2));

  auto other_seed = options(out, 1, 2);
  other_seed.seed = 2;
  auto other_options = options(out, 1, 2);
  other_options.fingerprint = "copy v2";
  // Resumed: the journals say which input and options wrote the rows on disk.
  {
    auto o = other_seed;
    o.resume = true;
    const ooc::Error e = error_of([&] { run_job(o); });
    EXPECT_EQ(e.kind(), ooc::ErrorKind::usage);
    EXPECT_TRUE(contains(e.what(),
                         "cannot resume: the input differ from the interrupted run's "
                         "(was: synth:noise seed 1; now: synth:noise seed 2)"))
        << e.what();
  }
  {
    auto o = other_options;
    o.resume = true;
    const ooc::Error e = error_of([&] { run_job(o); });
    EXPECT_EQ(e.kind(), ooc::ErrorKind::usage);
    EXPECT_TRUE(contains(e.what(),
                         "cannot resume: the options differ from the interrupted "
                         "run's (was: copy; now: copy v2)"))
        << e.what();
  }
  {
    auto o = options(out, 1, 2);
    o.hints.height = kH + 2;  // the same input identity, another image
    o.resume = true;
    const ooc::Error e = error_of([&] { run_job(o); });
    EXPECT_TRUE(contains(e.what(),
                         "the image heights differ from the interrupted run's (was: 20; "
                         "now: 22)"))
        << e.what();
  }
  // Not resumed: the manifest refuses a part of another job before it touches the temporary.
  {
    const ooc::Error e = error_of([&] { run_job(other_seed); });
    EXPECT_EQ(e.kind(), ooc::ErrorKind::usage);
    EXPECT_TRUE(contains(e.what(),
                         "is being made by another job, with another input (was: "
                         "synth:noise seed 1; now: synth:noise seed 2)"))
        << e.what();
    const ooc::Error f = error_of([&] { run_job(other_options); });
    EXPECT_TRUE(contains(f.what(), "another job whose options differ (was: copy; now: copy v2)"))
        << f.what();
  }
  // The refused parts left the temporary as it was: the right part 1 still completes it.
  run_job(options(out, 1, 2));
  ooc::finish_output(out);
  EXPECT_TRUE(file_bytes(out) == input_bytes());
}

TEST(Journal, WholeRunRefusedWhilePartsExist) {
  TempDir tmp("journal");
  const std::string out = tmp / "out.raw";
  run_job(options(out, 1, 2));
  const ooc::Error e = error_of([&] { run_job(options(out, 0, 1)); });
  EXPECT_EQ(e.kind(), ooc::ErrorKind::usage);
  EXPECT_TRUE(
      contains(e.what(), "is being made in parts ('" + out + ".partial.part-1-of-2.journal'"))
      << e.what();
  // The part's rows are still there.
  const auto partial = file_bytes(out + ".partial");
  const auto want = input_bytes();
  ASSERT_EQ(partial.size(), want.size());
  EXPECT_EQ(0, std::memcmp(partial.data() + want.size() / 2, want.data() + want.size() / 2,
                           want.size() / 2));
}

TEST(Journal, ResumeSkipsRowsDoneByAnotherSplit) {
  TempDir tmp("journal");
  const std::string out = tmp / "out.raw", temp = out + ".partial";
  const std::size_t row = kW * 2;
  run_job(options(out, 0, 2));  // rows 0:10
  // Mark the rows part 0 of 2 wrote: a run that writes them again would overwrite the mark.
  {
    std::fstream f(temp, std::ios::binary | std::ios::in | std::ios::out);
    const std::string mark(10 * row, '\xEE');
    f.write(mark.data(), static_cast<std::streamsize>(mark.size()));
  }
  // Resumed in 3 parts (0:6, 6:13, 13:20): part 0's rows are all done; part 1 starts at row 10.
  struct Want {
    std::int64_t begin, end, from;
    bool nothing_left;
  };
  const Want wants[] = {{0, 6, 6, true}, {6, 13, 10, false}, {13, 20, 13, false}};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    auto o = options(out, i, 3);
    o.resume = true;
    const Ran r = run_job(o);
    EXPECT_EQ(r.begin, wants[i].begin);
    EXPECT_EQ(r.end, wants[i].end);
    EXPECT_EQ(r.resumed_from, wants[i].from);
    EXPECT_EQ(r.nothing_left, wants[i].nothing_left);
  }
  const std::string summary = ooc::finish_output(out);
  EXPECT_TRUE(contains(summary, "from 4 part(s), 20 rows")) << summary;
  const auto got = file_bytes(out);
  const auto want = input_bytes();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < 10 * row; ++i)
    ASSERT_EQ(got[i], std::byte{0xEE}) << "byte " << i << ": a done row was written again";
  EXPECT_EQ(0, std::memcmp(got.data() + 10 * row, want.data() + 10 * row, 10 * row));
}

}  // namespace
