// oocconv's exit codes and messages for every failure a user can cause: bad input (3), a bad
// command line (2), output problems and a full disk (4), each leaving the input untouched and
// nothing behind.
#include <gtest/gtest.h>

#include "oocconv_cli_support.hpp"

namespace {

using namespace ooc::test::oocconv_cli;

// ---------------------------------------------------------------------------------------------
// Bad input: exit 3.

TEST_F(OocconvCli, MissingInputIsAnInputError) {
  expect_failure({(dir_ / "nope.raw").string(), out(), "--width", "37", "--radius", "1"}, 3,
                 {"does not exist", "nope.raw"});
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, InputThatIsADirectoryIsAnInputError) {
  fs::create_directory(dir_ / "adir");
  expect_failure({(dir_ / "adir").string(), out(), "--width", "37", "--radius", "1"}, 3,
                 {"is a directory"});
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_FALSE(fs::exists(partial()));
}

TEST_F(OocconvCli, UnreadableInputIsAnInputError) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: file permissions do not stop root";
  make_input();
  fs::permissions(input_, fs::perms::none);
  const RunResult r = run({in(), out(), "--width", "37", "--radius", "1"});
  fs::permissions(input_, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(r.exit_code, 3) << r;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r;
  expect_input_unchanged();
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, FileSizeNotAMultipleOfTheRowNamesBothSizesAndWidthsThatFit) {
  make_input(37, 23);  // 3404 bytes; rows of width 36 f32 are 144 bytes: 3404 % 144 != 0
  const std::string size = std::to_string(37 * 23 * 4);
  expect_failure({in(), out(), "--width", "36", "--radius", "1"}, 3,
                 {size, "144", "widths that fit", "37"});
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, HeightThatDisagreesWithTheFileIsAnInputError) {
  make_input(37, 23);
  expect_failure({in(), out(), "--width", "37", "--height", "24", "--radius", "1"}, 3,
                 {"--height", "23", "24"});
  EXPECT_TRUE(stray_files().empty());
}

// ---------------------------------------------------------------------------------------------
// Bad command line: exit 2.

TEST_F(OocconvCli, UnknownSampleTypeIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "37", "--type", "f16", "--radius", "1"}, 2,
                 {"unknown sample type", "f16"});
}

TEST_F(OocconvCli, ZeroWidthIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "0", "--radius", "1"}, 2, {"--width"});
}

TEST_F(OocconvCli, MissingWidthForRawInputIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--radius", "1"}, 2, {"--width"});
}

TEST_F(OocconvCli, NoFilterOptionsIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "37"}, 2, {"no filter", "--radius"});
}

TEST_F(OocconvCli, EvenTapCountIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "37", "--taps", "1,2,2,1"}, 2, {"odd"});
  expect_failure({in(), out(), "--width", "37", "--row-taps", "1,2", "--col-taps", "1,2,1"}, 2,
                 {"odd", "--row-taps"});
}

TEST_F(OocconvCli, UnknownBorderIsAUsageError) {
  make_input();
  expect_failure({in(), out(), "--width", "37", "--radius", "1", "--border", "clamp"}, 2,
                 {"border", "clamp"});
}

TEST_F(OocconvCli, HelpExitsZeroAndShowsExamples) {
  const RunResult r = run({"--help"});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r;
  EXPECT_NE(r.out.find("Examples"), std::string::npos) << r;
  EXPECT_NE(r.out.find("--mem-limit"), std::string::npos) << r;
}

// ---------------------------------------------------------------------------------------------
// Output problems.

TEST_F(OocconvCli, OutputInAMissingDirectoryIsAnIoError) {
  make_input();
  expect_failure({in(), (dir_ / "missing" / "out.raw").string(), "--width", "37", "--radius", "1"},
                 4, {"does not exist", "missing"});
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, OutputThatIsTheInputIsRefused) {
  make_input();
  expect_failure({in(), in(), "--width", "37", "--radius", "1"}, 2, {"is the input"});
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(OocconvCli, OutputThatIsASymlinkToTheInputIsRefused) {
  make_input();
  fs::create_symlink(input_, dir_ / "link.raw");
  expect_failure({in(), (dir_ / "link.raw").string(), "--width", "37", "--radius", "1"}, 2,
                 {"is the input"});
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.raw"));
  EXPECT_FALSE(fs::exists(dir_ / "link.raw.partial"));
}

TEST_F(OocconvCli, OutputThatIsARelativePathToTheInputIsRefused) {
  make_input();
  fs::create_directory(dir_ / "sub");
  const std::string dotted = (dir_ / "sub" / ".." / "in.raw").string();
  expect_failure({in(), dotted, "--width", "37", "--radius", "1"}, 2, {"is the input"});
}

TEST_F(OocconvCli, UnwritableOutputDirectoryIsAnIoError) {
  make_input();
  std::string target;
  if (::geteuid() == 0) {
    // Root ignores permission bits; sysfs refuses to create regular files even for root.
    if (!fs::is_directory("/sys/kernel"))
      GTEST_SKIP() << "running as root and /sys is not mounted: no directory root cannot write";
    target = "/sys/ooc_cli_test_" + std::to_string(::getpid()) + ".raw";
  } else {
    fs::create_directory(dir_ / "ro");
    fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    target = (dir_ / "ro" / "out.raw").string();
  }
  expect_failure({in(), target, "--width", "37", "--radius", "1"}, 4,
                 {"cannot create output", target});
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(target + ".partial"));
}

// ---------------------------------------------------------------------------------------------
// A full disk: the output cannot be made at full size.

TEST_F(OocconvCli, FileSizeLimitIsAnIoErrorThatLeavesNothingBehind) {
  make_input(256, 256);  // 256 KiB in and out
  ChildOptions opt;
  opt.file_size_limit = 64 * 1024;
  const RunResult r = run({in(), out(), "--width", "256", "--radius", "2"}, opt);
  EXPECT_TRUE(r.exited) << r;
  EXPECT_EQ(r.exit_code, 4) << r;
  EXPECT_NE(r.err.find(out()), std::string::npos) << "the message should name the output\n" << r;
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_FALSE(fs::exists(partial()));
  expect_input_unchanged();
}

TEST_F(OocconvCli, FailedRunLeavesAnExistingOutputAsItWas) {
  make_input(256, 256);
  const std::string previous = "the result of an earlier run";
  write_file(out(), previous);
  ChildOptions opt;
  opt.file_size_limit = 64 * 1024;
  const RunResult r = run({in(), out(), "--width", "256", "--radius", "2"}, opt);
  EXPECT_EQ(r.exit_code, 4) << r;
  EXPECT_EQ(read_file(out()), previous) << "a failed run replaced the existing output";
  EXPECT_FALSE(fs::exists(partial()));
  expect_input_unchanged();
}

TEST_F(OocconvCli, FullTmpfsIsAnIoErrorThatLeavesNothingBehind) {
  make_input(512, 1024);  // 2 MiB in and out, on a 1 MiB file system
  const fs::path mnt = dir_ / "tiny";
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1M") != 0)
    GTEST_SKIP() << "cannot mount a 1 MiB tmpfs (" << std::strerror(errno)
                 << "): needs root or CAP_SYS_ADMIN";
  mount_point_ = mnt;
  const std::string target = (mnt / "out.raw").string();
  const RunResult r = run({in(), target, "--width", "512", "--radius", "2"});
  EXPECT_TRUE(r.exited) << r;
  EXPECT_EQ(r.exit_code, 4) << r;
  EXPECT_NE(r.err.find(target), std::string::npos) << "the message should name the output\n" << r;
  EXPECT_NE(r.err.find("space"), std::string::npos) << r;
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(target + ".partial"));
  expect_input_unchanged();
}

}  // namespace
