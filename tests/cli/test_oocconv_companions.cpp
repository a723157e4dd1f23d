// The companion tools beside oocconv (oocgen deterministic, ooccheck --compare, oocinfo), the
// fuzzers' findings as clean input errors, TIFF outputs of bands that split strips and tiles, and
// BigTIFF past 4 GiB opened by other readers.
#include <gtest/gtest.h>

#include "oocconv_cli_support.hpp"

namespace {

using namespace ooc::test::oocconv_cli;

// ---------------------------------------------------------------------------------------------
// Companion tools: oocgen makes deterministic images, ooccheck --compare judges two of them.

TEST_F(OocconvCli, OocgenIsDeterministicForASeedAndNotConstant) {
  const auto a = dir_ / "a.raw", b = dir_ / "b.raw", c = dir_ / "c.raw";
  for (const auto& [path, seed] : {std::pair{a, "5"}, std::pair{b, "5"}, std::pair{c, "6"}}) {
    const RunResult r =
        run_tool("oocgen", {path.string(), "--width", "301", "--height", "77", "--type", "u16",
                            "--channels", "3", "--seed", seed, "-q"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  }
  ASSERT_EQ(fs::file_size(a), 301u * 77u * 3u * 2u);
  const std::string da = read_file(a), db = read_file(b), dc = read_file(c);
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
  std::set<char> distinct(da.begin(), da.end());
  EXPECT_GT(distinct.size(), 200u);
}

TEST_F(OocconvCli, OoccheckPassesEqualImagesAndFailsACorruptedOne) {
  const auto gen = dir_ / "g.raw", x = dir_ / "x.raw", y = dir_ / "y.raw";
  ASSERT_EQ(run_tool("oocgen", {gen.string(), "--width", "129", "--height", "65", "-q"}).exit_code,
            0);
  // The same filter with different plans: equal to the bit.
  ASSERT_EQ(run({gen.string(), x.string(), "--width", "129", "--radius", "5", "--band-rows", "3",
                 "-q", "--device", "cpu"})
                .exit_code,
            0);
  ASSERT_EQ(run({gen.string(), y.string(), "--width", "129", "--radius", "5", "--threads", "1",
                 "-q", "--device", "cpu"})
                .exit_code,
            0);
  RunResult r = run_tool(
      "ooccheck", {"--compare", x.string(), y.string(), "--width", "129", "--tolerance", "0"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("max abs error 0"), std::string::npos) << r;
  // One sample off by 0.5: over a tolerance of 1e-3, and found where it is.
  std::string bytes = read_file(y);
  float v;
  std::memcpy(&v, bytes.data() + (40 * 129 + 17) * 4, 4);
  v += 0.5f;
  std::memcpy(bytes.data() + (40 * 129 + 17) * 4, &v, 4);
  write_file(y, bytes);
  r = run_tool("ooccheck",
               {"--compare", x.string(), y.string(), "--width", "129", "--tolerance", "1e-3"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << r;
  EXPECT_NE(r.out.find("1 over tolerance"), std::string::npos) << r;
  EXPECT_NE(r.out.find("at row 40 sample 17"), std::string::npos) << r;
}

TEST_F(OocconvCli, OocinfoListsDevicesAndDescribesFiles) {
  RunResult r = run_tool("oocinfo", {});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("CUDA devices: "), std::string::npos) << r;
  EXPECT_NE(r.out.find("oocconv --device auto would use: c"), std::string::npos) << r;
  // A raw file described by options, a .npy file by its header, side by side.
  make_input(37, 23);
  const auto npy = dir_ / "g.npy";
  ASSERT_EQ(
      run_tool("oocgen", {npy.string(), "--width", "50", "--height", "20", "--type", "u16", "-q"})
          .exit_code,
      0);
  r = run_tool("oocinfo",
               {in(), npy.string(), "--width", "37", "--mem-limit", "64M", "--device", "cpu"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("raw '" + in() + "' 37 x 23 x 1 f32"), std::string::npos) << r;
  EXPECT_NE(r.out.find("npy '" + npy.string() + "' 50 x 20 x 1 u16"), std::string::npos) << r;
  EXPECT_NE(r.out.find("plan for radius 16 on cpu"), std::string::npos) << r;
  r = run_tool("oocinfo", {(dir_ / "missing.raw").string(), "--width", "8"});
  EXPECT_TRUE(r.exited && r.exit_code == 3) << r;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r;
}

// Inputs the fuzzers found (tests/fuzz/regressions): each a clean input error.
TEST_F(OocconvCli, FuzzerFindingsAreCleanInputErrors) {
  const fs::path dir = fs::path(__FILE__).parent_path().parent_path() / "fuzz" / "regressions";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int seen = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const RunResult r = run({e.path().string(), out(), "--radius", "1", "--width", "16"});
    EXPECT_TRUE(r.exited && r.exit_code == 3) << e.path() << "\n" << r;
    EXPECT_EQ(r.err.rfind("oocconv: ", 0), 0u) << r;
    EXPECT_FALSE(fs::exists(out())) << e.path();
    ++seen;
  }
  EXPECT_GT(seen, 0);
}

// Bands that end inside strips and tiles (7 and 64 rows against strips of 21 rows, tiles of 16
// and 32): every layout must still hold the input exactly.
TEST_F(OocconvCli, TiffOutputOfBandsThatSplitStripsAndTilesRoundTrips) {
  const auto raw = dir_ / "w.raw";
  ASSERT_EQ(run_tool("oocgen", {raw.string(), "--width", "8191", "--height", "300", "--type", "u16",
                                "--channels", "3", "-q"})
                .exit_code,
            0);
  const std::string original = read_file(raw);
  for (const std::string band : {"7", "64"})
    for (const std::vector<std::string>& layout : {std::vector<std::string>{},
                                                   {"--tile", "32"},
                                                   {"--compress", "lzw"},
                                                   {"--compress", "zstd", "--tile", "16"}}) {
      const auto tif = dir_ / "w.tif", back = dir_ / "back.raw";
      std::vector<std::string> args = {raw.string(),  tif.string(), "--width", "8191",   "--type",
                                       "u16",         "--channels", "3",       "--taps", "1",
                                       "--band-rows", band,         "-q"};
      args.insert(args.end(), layout.begin(), layout.end());
      RunResult r = run(args);
      ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
      r = run({tif.string(), back.string(), "--taps", "1", "--band-rows", "5", "-q"});
      ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
      EXPECT_TRUE(read_file(back) == original)
          << "band rows " << band << ", layout " << (layout.empty() ? "strips" : layout[1]);
    }
}

TEST_F(OocconvCli, OocinfoDescribesTiffLayouts) {
  const auto tiled = dir_ / "t.tif", striped = dir_ / "s.tif";
  ASSERT_EQ(
      run_tool("oocgen", {tiled.string(), "--width", "300", "--height", "200", "--type", "u16",
                          "--channels", "3", "--tile", "64", "--compress", "zstd", "-q"})
          .exit_code,
      0);
  ASSERT_EQ(run_tool("oocgen", {striped.string(), "--width", "300", "--height", "200", "--type",
                                "f32", "--bigtiff", "yes", "-q"})
                .exit_code,
            0);
  const RunResult r = run_tool("oocinfo", {tiled.string(), striped.string(), "--device", "cpu"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("tiff '" + tiled.string() + "' 300 x 200 x 3 u16"), std::string::npos) << r;
  EXPECT_NE(r.out.find("classic TIFF, little endian, tiles 64 x 64 (20), ZSTD"), std::string::npos)
      << r;
  EXPECT_NE(r.out.find("BigTIFF, little endian, strips of"), std::string::npos) << r;
  EXPECT_NE(r.out.find("uncompressed, page 0 of 1, read mapped"), std::string::npos) << r;
}

// An output past 4 GiB becomes a BigTIFF by itself, and other readers open it. The content is
// mostly zero, and zero strips are written as holes, so the file costs little disk.
TEST_F(OocconvCli, TiffOutputPast4GiBIsABigTiffThatOtherReadersOpen) {
  const auto big = dir_ / "big.tif";
  const std::vector<std::string> geometry = {"--width", "8192",   "--height",
                                             "270000",  "--type", "u16"};
  auto args = std::vector<std::string>{big.string(), "--pattern", "gaussian-spots", "-q"};
  args.insert(args.end(), geometry.begin(), geometry.end());
  auto no = args;
  no.insert(no.end(), {"--bigtiff", "no"});
  RunResult r = run_tool("oocgen", no);
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r;
  EXPECT_NE(r.err.find("use --bigtiff auto or yes"), std::string::npos) << r;
  r = run_tool("oocgen", args);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r;
  std::cerr << "[ info ] oocgen 4.4 GB gaussian-spots TIFF: " << r.seconds << " s\n";
  struct stat st {};
  ASSERT_EQ(::stat(big.c_str(), &st), 0);
  EXPECT_GT(std::uint64_t(st.st_size), 8192ull * 270000 * 2);
  std::cerr << "[ info ] file " << st.st_size / kMiB << " MiB, on disk "
            << st.st_blocks * 512 / kMiB << " MiB\n";
  const std::string head = read_file_prefix(big, 4);
  EXPECT_EQ(head, std::string("II+\0", 4)) << "not a little-endian BigTIFF header";
  // Samples of bands spread over the whole file, against the generator itself.
  auto check = std::vector<std::string>{
      "--compare", big.string(), "synth:gaussian-spots", "--sample", "12", "--tolerance", "0"};
  check.insert(check.end(), geometry.begin(), geometry.end());
  r = run_tool("ooccheck", check);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  if (const auto tiffinfo = system_tool("tiffinfo"); !tiffinfo.empty()) {
    r = run_system(tiffinfo, {big.string()});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
    EXPECT_NE(r.out.find("Image Width: 8192 Image Length: 270000"), std::string::npos) << r;
  }
  if (const auto vips = system_tool("vips"); !vips.empty()) {
    // libvips opens it and decodes the last rows, which lie past 4 GiB.
    r = run_system(
        vips, {"crop", big.string(), (dir_ / "tail.v").string(), "0", "269000", "8192", "1000"});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
    r = run_system(vips, {"avg", (dir_ / "tail.v").string()});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
    r = run_system(vips, {"getpoint", big.string(), "8191", "269999"});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  }
  std::error_code ec;
  fs::remove(big, ec);
  if (system_tool("tiffinfo").empty() || system_tool("vips").empty())
    GTEST_SKIP() << "the checks by tiffinfo and vips did not run: tools/bootstrap.sh installs "
                    "libtiff-tools and libvips-tools";
}

}  // namespace
