// The .npy reader (open_source on .npy files), against headers and data laid out here by hand as
// NumPy writes them (not with the library's npy_header): every dtype in both byte orders (big
// endian swapped to this machine's order), (H, W) and (H, W, C) shapes, header versions 1.0, 2.0
// and 3.0, Fortran order refused, a header that promises more data than the file holds refused,
// and hints that contradict the header refused with both values named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "io/npy.hpp"
#include "ooc/error.hpp"
#include "ooc/image.hpp"
#include "ooc/io.hpp"
#include "scratch.hpp"

namespace {

using ooc::test::contains;
using ooc::test::TempDir;

namespace fs = std::filesystem;

// A .npy file as NumPy lays it out: magic, version, little-endian header length (2 bytes in
// version 1, 4 in versions 2 and 3), the dict padded with spaces to a multiple of 64 and ended
// by a newline, then the data.
std::string npy_bytes(const std::string& dict, int version, const std::string& data) {
  const std::size_t prefix = version == 1 ? 10 : 12;
  std::string d = dict;
  const std::size_t total = (prefix + d.size() + 1 + 63) / 64 * 64;
  d.append(total - prefix - d.size() - 1, ' ');
  d += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  const std::size_t n = d.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (version != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + d + data;
}

std::string dict_of(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

ooc::Error open_error(const std::string& path, const ooc::RawHints& h = {}) {
  try {
    ooc::open_source(path, h);
  } catch (const ooc::Error& e) {
    return e;
  }
  ADD_FAILURE() << "open_source('" << path << "') did not throw";
  return ooc::Error(ooc::ErrorKind::usage, "");
}

struct Dtype {
  const char* kind;  // as in descr, after the byte order
  ooc::SampleType type;
  std::size_t bytes;
};
constexpr Dtype kDtypes[] = {{"u1", ooc::SampleType::u8, 1},  {"u2", ooc::SampleType::u16, 2},
                             {"i2", ooc::SampleType::i16, 2}, {"u4", ooc::SampleType::u32, 4},
                             {"i4", ooc::SampleType::i32, 4}, {"f4", ooc::SampleType::f32, 4},
                             {"f8", ooc::SampleType::f64, 8}};

// Samples as this (little-endian) machine holds them, and the file's data in `order`.
struct Data {
  std::string native, file;
};
Data make_data(std::size_t samples, std::size_t bytes, char order, unsigned seed) {
  std::mt19937 rng(seed);
  Data d;
  d.native.resize(samples * bytes);
  for (auto& c : d.native) c = static_cast<char>(rng() & 0xff);
  d.file = d.native;
  if (order == '>')
    for (std::size_t i = 0; i < samples; ++i)
      std::reverse(d.file.begin() + static_cast<std::ptrdiff_t>(i * bytes),
                   d.file.begin() + static_cast<std::ptrdiff_t>((i + 1) * bytes));
  return d;
}

// Every way of reading rows gives `native`, in bands of 3 (the last one shorter).
void expect_rows(ooc::Source& src, const std::string& native) {
  const ooc::ImageSpec& s = src.spec();
  const std::size_t row = s.row_bytes();
  ASSERT_EQ(native.size(), row * static_cast<std::size_t>(s.height));
  for (std::int64_t y0 = 0; y0 < s.height; y0 += 3) {
    const std::int64_t n = std::min<std::int64_t>(3, s.height - y0);
    const std::size_t bytes = static_cast<std::size_t>(n) * row;
    const char* want = native.data() + static_cast<std::size_t>(y0) * row;
    ooc::RowArena arena;
    EXPECT_EQ(0, std::memcmp(src.rows(y0, n, arena), want, bytes)) << "rows() at " << y0;
    std::vector<std::byte> dst(bytes + 16, std::byte{0xA5});
    src.read_rows(y0, n, dst.data());
    EXPECT_EQ(0, std::memcmp(dst.data(), want, bytes)) << "read_rows() at " << y0;
    EXPECT_EQ(dst[bytes], std::byte{0xA5}) << "read_rows() wrote past its rows";
  }
}

TEST(NpySource, EveryDtypeInBothByteOrders) {
  TempDir tmp("npy");
  for (const Dtype& t : kDtypes) {
    // u1 has no byte order: NumPy writes '|'; the others '<' or '>'.
    const std::vector<char> orders =
        t.bytes == 1 ? std::vector<char>{'|', '<', '>'} : std::vector<char>{'<', '>', '='};
    for (const char order : orders) {
      const std::string descr = std::string(1, order) + t.kind;
      SCOPED_TRACE(descr);
      const std::int64_t H = 11, W = 7;
      const Data d = make_data(H * W, t.bytes, order, static_cast<unsigned>(t.bytes * 31 + order));
      write_file(tmp / "a.npy", npy_bytes(dict_of(descr, "(11, 7)"), 1, d.file));
      auto src = ooc::open_source(tmp / "a.npy", ooc::RawHints{});
      EXPECT_EQ(src->spec().type, t.type);
      EXPECT_EQ(src->spec().height, H);
      EXPECT_EQ(src->spec().width, W);
      EXPECT_EQ(src->spec().channels, 1);
      expect_rows(*src, d.native);
    }
  }
}

TEST(NpySource, ShapesWithAndWithoutChannels) {
  TempDir tmp("npy");
  struct Case {
    std::string shape;
    std::int64_t h, w;
    int c;
  };
  for (const Case& c :
       {Case{"(5, 9)", 5, 9, 1}, Case{"(5, 9, 1)", 5, 9, 1}, Case{"(4, 6, 2)", 4, 6, 2},
        Case{"(3, 10, 3)", 3, 10, 3}, Case{"(7, 2, 4)", 7, 2, 4}, Case{"(6,8)", 6, 8, 1},
        Case{"(2, 3, 3,)", 2, 3, 3}}) {
    SCOPED_TRACE(c.shape);
    const Data d = make_data(static_cast<std::size_t>(c.h * c.w * c.c), 2, '>', 7);
    write_file(tmp / "a.npy", npy_bytes(dict_of(">i2", c.shape), 1, d.file));
    auto src = ooc::open_source(tmp / "a.npy", ooc::RawHints{});
    EXPECT_EQ(src->spec().height, c.h);
    EXPECT_EQ(src->spec().width, c.w);
    EXPECT_EQ(src->spec().channels, c.c);
    EXPECT_EQ(src->spec().type, ooc::SampleType::i16);
    expect_rows(*src, d.native);
  }
  // Not images: one dimension, five channels of a volume, five dimensions ((4, 4, 5) is a volume).
  for (const std::string shape : {"(20,)", "(2, 3, 4, 5)", "(2, 3, 4, 5, 1)"}) {
    SCOPED_TRACE(shape);
    write_file(tmp / "b.npy", npy_bytes(dict_of("<u1", shape), 1, std::string(120, 'x')));
    const ooc::Error e = open_error(tmp / "b.npy");
    EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
    EXPECT_TRUE(contains(e.what(), "is not an image")) << e.what();
  }
}

TEST(NpySource, HeaderVersions) {
  TempDir tmp("npy");
  const Data d = make_data(8 * 5 * 3, 4, '<', 9);
  for (const int version : {1, 2, 3}) {
    SCOPED_TRACE(version);
    write_file(tmp / "a.npy", npy_bytes(dict_of("<f4", "(8, 5, 3)"), version, d.file));
    auto src = ooc::open_source(tmp / "a.npy", ooc::RawHints{});
    EXPECT_EQ(src->spec().describe(), (ooc::ImageSpec{5, 8, 3, ooc::SampleType::f32}.describe()));
    expect_rows(*src, d.native);
  }
  // A version 2.0 header longer than 65535 bytes (a 4-byte length that a 2-byte reading would
  // get wrong): NumPy writes one for a huge dict; spaces pad it here.
  std::string dict = dict_of("<f4", "(8, 5, 3)");
  dict.insert(dict.size() - 1, std::string(70000, ' '));
  write_file(tmp / "long.npy", npy_bytes(dict, 2, d.file));
  auto src = ooc::open_source(tmp / "long.npy", ooc::RawHints{});
  EXPECT_EQ(src->spec().height, 8);
  expect_rows(*src, d.native);
  // Version 4 does not exist.
  write_file(tmp / "v4.npy", npy_bytes(dict_of("<f4", "(8, 5, 3)"), 4, d.file));
  const ooc::Error e = open_error(tmp / "v4.npy");
  EXPECT_TRUE(contains(e.what(), "version 4")) << e.what();
}

TEST(NpySource, FortranOrderIsRefused) {
  TempDir tmp("npy");
  write_file(tmp / "f.npy", npy_bytes(dict_of("<u2", "(4, 6)", true), 1, std::string(48, 'x')));
  const ooc::Error e = open_error(tmp / "f.npy");
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(contains(e.what(), "Fortran order")) << e.what();
  EXPECT_TRUE(contains(e.what(), "ascontiguousarray")) << e.what();
}

TEST(NpySource, HeaderThatPromisesMoreThanTheFileHoldsIsRefused) {
  TempDir tmp("npy");
  // (10, 10) f8 needs 800 bytes of data; the file has 799, then 400.
  for (const std::size_t have : {std::size_t{799}, std::size_t{400}, std::size_t{0}}) {
    SCOPED_TRACE(have);
    const std::string file = npy_bytes(dict_of("<f8", "(10, 10)"), 1, std::string(have, 'x'));
    write_file(tmp / "t.npy", file);
    const ooc::Error e = open_error(tmp / "t.npy");
    EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
    EXPECT_TRUE(contains(e.what(), "is truncated")) << e.what();
    EXPECT_TRUE(
        contains(e.what(), std::to_string(file.size() - have + 800) + " bytes with the header"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "the file has " + std::to_string(file.size()))) << e.what();
  }
  // A header length past the end of the file.
  std::string cut = npy_bytes(dict_of("<f8", "(10, 10)"), 1, "");
  cut.resize(40);
  write_file(tmp / "h.npy", cut);
  const ooc::Error e = open_error(tmp / "h.npy");
  EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
  EXPECT_TRUE(contains(e.what(), "truncated .npy header")) << e.what();
}

TEST(NpySource, UnsupportedOrDamagedHeadersAreRefused) {
  TempDir tmp("npy");
  for (const std::string descr : {"<i8", "<c8", "<f2", "|b1", "<U4"}) {
    SCOPED_TRACE(descr);
    write_file(tmp / "d.npy", npy_bytes(dict_of(descr, "(2, 2)"), 1, std::string(64, 'x')));
    const ooc::Error e = open_error(tmp / "d.npy");
    EXPECT_EQ(e.kind(), ooc::ErrorKind::input);
    EXPECT_TRUE(contains(e.what(), "dtype '" + descr + "' is not supported")) << e.what();
  }
  write_file(tmp / "m.npy", npy_bytes("'descr': '<u1', 'shape': (2, 2)", 1, "abcd"));
  EXPECT_TRUE(contains(open_error(tmp / "m.npy").what(), "not a {...} dictionary"));
  write_file(tmp / "s.npy", npy_bytes(dict_of("<u1", "(2, -2)"), 1, "abcd"));
  EXPECT_TRUE(contains(open_error(tmp / "s.npy").what(), "negative dimension"));
  write_file(tmp / "n.npy",
             npy_bytes("{'descr': '<u1', 'fortran_order': False, }", 1, std::string(4, 'x')));
  EXPECT_TRUE(contains(open_error(tmp / "n.npy").what(), "has no 'shape'"));
  // --in-format npy on a file that is not one.
  write_file(tmp / "raw.npy", std::string(64, 'x'));
  ooc::RawHints h;
  h.format = "npy";
  EXPECT_TRUE(contains(open_error(tmp / "raw.npy", h).what(), "not a .npy file"));
}

TEST(NpySource, HintThatContradictsTheHeaderNamesBoth) {
  TempDir tmp("npy");
  const Data d = make_data(6 * 9 * 2, 2, '<', 3);
  write_file(tmp / "a.npy", npy_bytes(dict_of("<u2", "(6, 9, 2)"), 1, d.file));
  // Hints that agree are taken.
  ooc::RawHints agree;
  agree.width = 9;
  agree.height = 6;
  agree.channels = 2;
  agree.channels_given = true;
  agree.type = ooc::SampleType::u16;
  agree.type_given = true;
  expect_rows(*ooc::open_source(tmp / "a.npy", agree), d.native);
  // A type or channel count that was not given (the defaults, f32 and 1) is no contradiction.
  EXPECT_EQ(ooc::open_source(tmp / "a.npy", ooc::RawHints{})->spec().channels, 2);

  struct Case {
    std::string option, given, header;
    ooc::RawHints hints;
  };
  std::vector<Case> cases;
  ooc::RawHints h;
  h.width = 10;
  cases.push_back({"--width", "10", "9", h});
  h = {};
  h.height = 5;
  cases.push_back({"--height", "5", "6", h});
  h = {};
  h.type = ooc::SampleType::f32;
  h.type_given = true;
  cases.push_back({"--type", "f32", "u16", h});
  h = {};
  h.channels = 3;
  h.channels_given = true;
  cases.push_back({"--channels", "3", "2", h});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.option);
    const ooc::Error e = open_error(tmp / "a.npy", c.hints);
    EXPECT_EQ(e.kind(), ooc::ErrorKind::usage);
    const std::string want = c.option + " " + c.given + " contradicts the header of '" +
                             (tmp / "a.npy") + "', which says " + c.header;
    EXPECT_TRUE(contains(e.what(), want)) << e.what() << "\nwanted: " << want;
  }
}

}  // namespace
