// oocconv and its siblings under a batch system's environment: --part auto from Slurm and MPI
// variables, -q against progress lines, ooceq's advice on other types, --no-locks, and oocgen's
// gaussian-spots at every size.
#include <gtest/gtest.h>

#include "oocconv_cli_support.hpp"

namespace {

using namespace ooc::test::oocconv_cli;

// ---------------------------------------------------------------------------------------------
// Issue 29: --part auto from the environment, -q and progress, ooceq's advice on other types,
// --no-locks, gaussian-spots at every size.

// Sets (or unsets, for nullptr) environment variables for one scope; children inherit them.
// The launcher variables of whatever runs the tests are cleared first, so that only the ones a
// test names are seen.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, const char*>>& vars) {
    for (const char* name :
         {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
          "SLURM_ARRAY_TASK_MAX", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
          "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK"})
      set(name, nullptr);
    for (const auto& [name, value] : vars) set(name, value);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// --part auto takes I/N from Slurm's variables: a value that makes no part is refused (exit 2)
// naming the variables and the values they hold, never turned into a part the user did not ask
// for ("--part -3/4"), truncated ("1215752191 parts") or ignored (the whole image as 0/1).
TEST_F(OocconvCli, PartAutoRefusesSlurmVariablesThatMakeNoPartAndNamesThem) {
  make_input(37, 23);
  const std::vector<std::string> args = {in(), out(),    "--width", "37",       "--radius",
                                         "1",  "--part", "auto",    "--device", "cpu"};
  struct Case {
    std::vector<std::pair<std::string, const char*>> env;
    std::vector<std::string> phrases, absent;
  };
  const std::vector<Case> cases = {
      {{{"SLURM_ARRAY_TASK_ID", "2"},
        {"SLURM_ARRAY_TASK_COUNT", "4"},
        {"SLURM_ARRAY_TASK_MIN", "5"}},
       {"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_MIN=5", "SLURM_ARRAY_TASK_COUNT=4"},
       {"--part -3/4"}},
      {{{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "99999999999"}},
       {"SLURM_ARRAY_TASK_COUNT=99999999999", "1048576"},
       {"1215752191"}},
      {{{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "99999999999999999999999"}},
       {"SLURM_ARRAY_TASK_COUNT='99999999999999999999999'", "64 bits"},
       {}},
      {{{"SLURM_ARRAY_TASK_ID", "seven"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}},
       {"SLURM_ARRAY_TASK_ID='seven'", "not a whole number"},
       {}},
      {{{"SLURM_ARRAY_TASK_ID", "-1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
       {"SLURM_ARRAY_TASK_ID='-1'"},
       {}},
      {{{"SLURM_ARRAY_TASK_ID", "3"}}, {"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_COUNT"}, {}},
      {{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "2"}}, {"SLURM_PROCID=3", "SLURM_NTASKS=2"}, {}},
      {{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2x"}}, {"SLURM_NTASKS='2x'"}, {}},
  };
  for (const Case& c : cases) {
    ScopedEnv env(c.env);
    std::string label;
    for (const auto& [name, value] : c.env) label += name + "=" + value + " ";
    const RunResult r = run(args);
    EXPECT_TRUE(r.exited && r.exit_code == 2) << label << "\n" << r;
    EXPECT_NE(r.err.find("--part auto: "), std::string::npos) << label << "\n" << r;
    for (const auto& p : c.phrases)
      EXPECT_NE(r.err.find(p), std::string::npos) << "no '" << p << "' for " << label << "\n" << r;
    for (const auto& p : c.absent)
      EXPECT_EQ(r.err.find(p), std::string::npos) << "'" << p << "' for " << label << "\n" << r;
    EXPECT_TRUE(stray_files().empty()) << label;
  }
  // A right array still works: task 1 of 0..1 writes part 1/2.
  ScopedEnv env({{"SLURM_ARRAY_TASK_ID", "1"},
                 {"SLURM_ARRAY_TASK_COUNT", "2"},
                 {"SLURM_ARRAY_TASK_MIN", "0"},
                 {"SLURM_ARRAY_TASK_MAX", "1"}});
  const RunResult r = run(args);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_TRUE(fs::exists(partial() + ".part-1-of-2.journal")) << r;
  expect_input_unchanged();
}

// -q: no progress lines on a stderr that is not a terminal (the default there is a line every
// 10 s); an explicit --progress-log still prints them. Three runs side by side, stopped after
// 12.5 s: the one without -q shows that a line was due.
TEST_F(OocconvCli, QuietSilencesDefaultProgressLinesButNotAnExplicitProgressLog) {
  const std::vector<std::string> base = {
      "synth:noise", "null:",     "--width", "65536",       "--height", "1000000",  "--radius",
      "16",          "--threads", "1",       "--band-rows", "16",       "--device", "cpu"};
  struct Run {
    std::string name;
    std::vector<std::string> extra;
    bool lines;
  };
  const std::vector<Run> runs = {{"quiet", {"-q"}, false},
                                 {"default", {}, true},
                                 {"quiet-log", {"-q", "--progress-log=1"}, true}};
  std::vector<std::unique_ptr<Child>> children;
  for (const Run& run : runs) {
    fs::create_directory(dir_ / run.name);
    auto args = base;
    args.insert(args.end(), run.extra.begin(), run.extra.end());
    children.push_back(std::make_unique<Child>(bin_, args, dir_ / run.name));
  }
  std::this_thread::sleep_for(12500ms);
  for (auto& c : children) c->signal(SIGTERM);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunResult r = children[i]->wait(60s);
    EXPECT_TRUE(r.exited && r.exit_code == 75) << runs[i].name << " did not run 12.5 s?\n" << r;
    const bool lines = r.err.find(" rows, ") != std::string::npos &&
                       r.err.find(" GB/s, ETA ") != std::string::npos;
    EXPECT_EQ(lines, runs[i].lines) << runs[i].name << "\n" << r;
  }
  const RunResult help = run({"--help"});
  EXPECT_NE(help.out.find("an explicit --progress or --progress-log still reports"),
            std::string::npos)
      << help;
}

// ooceq refuses f32 with a conversion that works: oocconv's --taps 1 --out-type u16 (the old
// advice) maps data in [0, 1) to 0 and 1; a one-tap scale of 65535 keeps it.
TEST_F(OocconvCli, OoceqOnFloatSuggestsAConversionThatKeepsTheValues) {
  const fs::path ooceq = bin_.parent_path() / "ooceq";
  if (!fs::exists(ooceq)) GTEST_SKIP() << "no ooceq beside oocconv: build it";
  const auto f = dir_ / "f.raw", u = dir_ / "u.raw", eq = dir_ / "eq.raw";
  const std::vector<std::string> geometry = {"--width", "256", "--height", "128", "--type", "f32"};
  auto gen = std::vector<std::string>{f.string(), "-q"};
  gen.insert(gen.end(), geometry.begin(), geometry.end());
  ASSERT_EQ(run_tool("oocgen", gen).exit_code, 0);  // noise: values in [0, 1)
  RunResult r = run_tool("ooceq", {f.string(), eq.string(), "--width", "256", "--type", "f32"});
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r;
  const std::string advice = "--row-taps 65535 --out-type u16";
  EXPECT_NE(r.err.find(advice), std::string::npos) << r;
  EXPECT_EQ(r.err.find("--taps 1 "), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(eq));
  // The advice, as given, on the file.
  r = run({f.string(), u.string(), "--width", "256", "--type", "f32", "--row-taps", "65535",
           "--out-type", "u16", "-q"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  const std::string fb = read_file(f), ub = read_file(u);
  ASSERT_EQ(fb.size(), 256u * 128u * 4u);
  ASSERT_EQ(ub.size(), 256u * 128u * 2u);
  std::set<std::uint16_t> distinct;
  std::uint16_t top = 0;
  long worst = 0;
  for (std::size_t i = 0; i < 256u * 128u; ++i) {
    float v;
    std::uint16_t w;
    std::memcpy(&v, fb.data() + 4 * i, 4);
    std::memcpy(&w, ub.data() + 2 * i, 2);
    const long want = static_cast<long>(double(v) * 65535.0 + 0.5);
    worst = std::max(worst, std::labs(long(w) - want));
    top = std::max(top, w);
    distinct.insert(w);
  }
  EXPECT_LE(worst, 1) << "u16 = round(65535 f) within 1 (f32 product)";
  EXPECT_GT(top, 60000);
  EXPECT_GT(distinct.size(), 20000u);
  r = run_tool("ooceq", {u.string(), eq.string(), "--width", "256", "--type", "u16", "-q"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_EQ(fs::file_size(eq), 256u * 128u * 2u);
}

// --no-locks is one of the shared output options (oocconv, ooceq, oocgen): accepted, with its
// warning in --help. What it allows (a file system without fcntl locks) is the job's.
TEST_F(OocconvCli, NoLocksIsASharedOutputOption) {
  make_input(37, 23);
  RunResult r = run({"--help"});
  EXPECT_NE(r.out.find("--no-locks"), std::string::npos) << r;
  EXPECT_NE(r.out.find("two writers of one output then go unnoticed"), std::string::npos) << r;
  r = run({in(), out(), "--width", "37", "--radius", "1", "--no-locks", "-q", "--device", "cpu"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_EQ(fs::file_size(out()), 37u * 23u * 4u);
  r = run_tool("oocgen",
               {(dir_ / "g.raw").string(), "--width", "8", "--height", "8", "--no-locks", "-q"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  if (fs::exists(bin_.parent_path() / "ooceq")) {
    r = run_tool("ooceq", {"--help"});
    EXPECT_NE(r.out.find("--no-locks"), std::string::npos) << r;
  }
}

// gaussian-spots has spots at every size: a cell of 64 x 64 pixels holds one, so the share of
// non-zero pixels does not depend on the image's size (it was one cell in 32 of 512 px: a
// 2048 x 1536 image was all zero). Deterministic for a seed.
TEST_F(OocconvCli, GaussianSpotsHasSpotsAtEverySize) {
  const auto share = [&](int w, int h, int seed, const std::string& type) -> double {
    const auto path = dir_ / "spots.raw";
    const RunResult r =
        run_tool("oocgen", {path.string(), "--width", std::to_string(w), "--height",
                            std::to_string(h), "--type", type, "--pattern", "gaussian-spots",
                            "--seed", std::to_string(seed), "-q"});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
    const std::string b = read_file(path);
    const std::size_t size = type == "u8" ? 1 : 2;
    EXPECT_EQ(b.size(), std::size_t(w) * std::size_t(h) * size);
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i + size <= b.size(); i += size)
      nonzero += (b[i] != 0 || (size == 2 && b[i + 1] != 0)) ? 1 : 0;
    return double(nonzero) / double(std::size_t(w) * std::size_t(h));
  };
  for (int seed = 1; seed <= 6; ++seed) {
    const double s = share(64, 64, seed, "u16");
    EXPECT_GT(s, 0.02) << "64 x 64, seed " << seed;
    EXPECT_LT(s, 0.30) << "64 x 64, seed " << seed;
  }
  for (const auto& [w, h, type] : {std::tuple{1024, 1024, "u16"}, std::tuple{2048, 1536, "u8"}}) {
    const double s = share(w, h, 1, type);
    EXPECT_GT(s, 0.05) << w << " x " << h << " " << type;
    EXPECT_LT(s, 0.20) << w << " x " << h << " " << type;
  }
  // One seed, one image; another seed, another.
  const auto a = dir_ / "a.raw", b = dir_ / "b.raw", c = dir_ / "c.raw";
  for (const auto& [path, seed] : {std::pair{a, "3"}, std::pair{b, "3"}, std::pair{c, "4"}})
    ASSERT_EQ(run_tool("oocgen", {path.string(), "--width", "300", "--height", "200", "--type",
                                  "u16", "--pattern", "gaussian-spots", "--seed", seed, "-q"})
                  .exit_code,
              0);
  EXPECT_TRUE(read_file(a) == read_file(b));
  EXPECT_FALSE(read_file(a) == read_file(c));
}

}  // namespace
