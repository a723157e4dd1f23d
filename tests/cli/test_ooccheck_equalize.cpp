// ooccheck --equalize: accepts ooceq's output, rounds in float32 as cv2.equalizeHist does,
// leaves a constant image alone, finds a corrupted sample and refuses what ooceq refuses.
#include <gtest/gtest.h>

#include "ooccheck_cli_support.hpp"

namespace {

using namespace ooc::test::ooccheck_cli;

TEST_F(ooccheck, EqualizePassesOoceqOutputAndSamplesOnlyTheComparison) {
  for (const std::string type : {"u8", "u16"}) {
    for (const int channels : {1, 3}) {
      SCOPED_TRACE(type + " x " + std::to_string(channels));
      const fs::path in = make_image("in.raw", 45, 200, type, channels, 3);
      const fs::path out = dir_ / "eq.raw";
      const auto input = raw_input(45, type, channels);
      std::vector<std::string> args{in.string(),   out.string(), "--device", "cpu",
                                    "--band-rows", "7",          "-q"};
      args.insert(args.end(), input.begin(), input.end());
      const RunResult e = run("ooceq", args);
      ASSERT_EQ(e.exit_code, 0) << e;
      std::vector<std::string> c{"--equalize", out.string(), in.string()};
      c.insert(c.end(), input.begin(), input.end());
      RunResult r = run("ooccheck", c);
      EXPECT_EQ(r.exit_code, 0) << r;
      EXPECT_NE(r.out.find("checked " + std::to_string(45 * 200 * channels) + " samples"),
                std::string::npos)
          << r;
      c.insert(c.end(), {"--sample", "1"});
      r = run("ooccheck", c);
      EXPECT_EQ(r.exit_code, 0) << r;
      EXPECT_NE(r.out.find("in 1 of 4 bands"), std::string::npos) << r;
      EXPECT_NE(r.out.find("histogram of every row"), std::string::npos) << r;
    }
  }
}

TEST_F(ooccheck, EqualizeRoundsInFloat32AsCv2Does) {
  // 0 once, 1 and 2 seven times each: N - h[0] = 14, and 1 maps to 7 x float32(255 / 14). The
  // float32 scale is just below 255 / 14, so 127.49999 -> 127 (cv2.equalizeHist says 127);
  // exact arithmetic would make it the tie 127.5 -> 128. u16: 23 samples, 11 and 11: 32767.
  auto image = [&](const std::string& name, auto zero, int n) {
    using T = decltype(zero);
    std::vector<T> v{T(0)};
    v.insert(v.end(), n, T(1));
    v.insert(v.end(), n, T(2));
    write_samples(dir_ / name, v);
    return v.size();
  };
  auto expect = [&](const std::string& name, auto zero, int n, double mid, double top) {
    using T = decltype(zero);
    std::vector<T> v{T(0)};
    v.insert(v.end(), n, T(mid));
    v.insert(v.end(), n, T(top));
    write_samples(dir_ / name, v);
  };
  const std::size_t w8 = image("in8.raw", std::uint8_t{}, 7);
  const std::size_t w16 = image("in16.raw", std::uint16_t{}, 11);
  auto judge = [&](const std::string& out, const std::string& in, std::size_t w,
                   const std::string& type) {
    return run("ooccheck", {"--equalize", (dir_ / out).string(), (dir_ / in).string(), "--width",
                            std::to_string(w), "--type", type});
  };
  expect("ok8.raw", std::uint8_t{}, 7, 127, 255);
  expect("bad8.raw", std::uint8_t{}, 7, 128, 255);
  expect("ok16.raw", std::uint16_t{}, 11, 32767, 65535);
  expect("bad16.raw", std::uint16_t{}, 11, 32768, 65535);
  RunResult r = judge("ok8.raw", "in8.raw", w8, "u8");
  EXPECT_EQ(r.exit_code, 0) << r;
  r = judge("bad8.raw", "in8.raw", w8, "u8");
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 7) << r;
  EXPECT_EQ(judge("ok16.raw", "in16.raw", w16, "u16").exit_code, 0);
  EXPECT_EQ(judge("bad16.raw", "in16.raw", w16, "u16").exit_code, 1);
  // ooceq agrees.
  const RunResult e = run("ooceq", {(dir_ / "in8.raw").string(), (dir_ / "eq8.raw").string(),
                                    "--width", std::to_string(w8), "-q"});
  ASSERT_EQ(e.exit_code, 0) << e;
  EXPECT_EQ(read_file(dir_ / "eq8.raw"), read_file(dir_ / "ok8.raw"));
}

TEST_F(ooccheck, EqualizeLeavesAConstantImageAndFailsACorruptedOne) {
  const std::vector<std::uint16_t> flat(3 * 40 * 30, 40000);
  write_samples(dir_ / "flat.raw", flat);
  const std::vector<std::string> input{"--width", "40", "--type", "u16", "--channels", "3"};
  auto judge = [&](const fs::path& out, const fs::path& in) {
    std::vector<std::string> args{"--equalize", out.string(), in.string()};
    args.insert(args.end(), input.begin(), input.end());
    return run("ooccheck", args);
  };
  RunResult r = judge(dir_ / "flat.raw", dir_ / "flat.raw");
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("one value: unchanged"), std::string::npos) << r;
  write_samples(dir_ / "zero.raw", std::vector<std::uint16_t>(flat.size(), 0));
  r = judge(dir_ / "zero.raw", dir_ / "flat.raw");
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), static_cast<long long>(flat.size())) << r;

  // ooceq's output of noise with one sample's low bit flipped: off by exactly 1, and found.
  const fs::path in = make_image("in.raw", 40, 30, "u16", 3);
  const fs::path out = dir_ / "eq.raw";
  std::vector<std::string> args{in.string(), out.string(), "-q"};
  args.insert(args.end(), input.begin(), input.end());
  ASSERT_EQ(run("ooceq", args).exit_code, 0);
  ASSERT_EQ(judge(out, in).exit_code, 0);
  flip_byte(out, (17 * 40 * 3 + 5) * 2, 0x01);
  r = judge(out, in);
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(over_count(r.out), 1) << r;
  EXPECT_NE(r.out.find("max abs error 1 at row 17 sample 5 (x 1, channel 2)"), std::string::npos)
      << r;
}

TEST_F(ooccheck, EqualizeRefusesWhatOoceqRefuses) {
  const fs::path in = make_image("in.raw", 20, 10, "f32");
  RunResult r = run("ooccheck", {"--equalize", in.string(), in.string(), "--width", "20"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_NE(r.err.find("u8 or u16"), std::string::npos) << r;
  EXPECT_NE(r.err.find("f32"), std::string::npos) << r;
  // A .npy OUT of another type than IN's.
  const fs::path in8 = make_image("in8.raw", 20, 10, "u8");
  const fs::path out16 = make_image("out16.npy", 20, 10, "u16");
  r = run("ooccheck",
          {"--equalize", out16.string(), in8.string(), "--width", "20", "--type", "u8"});
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("input's type"), std::string::npos) << r;
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--radius", "2"},
                                                {"--kernel", "laplace"},
                                                {"--tolerance", "1"},
                                                {"--compare"}}) {
    std::vector<std::string> args{"--equalize", in8.string(), in8.string(), "--width",
                                  "20",         "--type",     "u8"};
    args.insert(args.end(), extra.begin(), extra.end());
    r = run("ooccheck", args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << "\n" << r;
  }
}

}  // namespace
