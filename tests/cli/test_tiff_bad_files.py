#!/usr/bin/env python3
"""Bad TIFF files made by a hand-written writer: exit 3 (2 for usage), a message naming the
problem, no crash, no output; their unbroken twins and unusual valid layouts read back exactly
(section 5 of tiff_support.py).
Usage: test_tiff_bad_files.py --bin-dir DIR [--keep] [-v] [unittest options]"""

import os
import sys
import zlib

import cli_cases
from cli_cases import report
from tiff_support import (H, OOCCONV, SHORT, TiffBase, W, bad, base_tags, control, conv,
    exit_problem, expect_error, grey_image, main, out_tif, p, random_image, rng, run, strips_of,
    tiles_of, write_raw, write_tiff)


class TiffBadFiles(TiffBase):
    # Numbered in the order they draw their data (cli_cases.py).

    def test_5a_truncated_magic_offsets(self):
        grey = grey_image()
        with cli_cases.cases(self):
            # Strips of 7 rows, uncompressed.
            size = write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7))
            control("uncompressed strips of 7 rows (hand-written)", grey)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), cut=size // 2)
            expect_error("(a) truncated file: cut in half, strips past the end", conv, 3,
                         ["truncat", "past the end"], out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), cut=60)
            expect_error("(a) truncated file: cut inside the directory", conv, 3, ["truncat"], out_tif)
            with open(bad, "wb") as f:
                f.write(b"II*\0\x08\0\0\0")
            expect_error("(a) truncated file: header only", conv, 3, ["truncat"], out_tif)
            cmd = [OOCCONV, write_raw(random_image("u16", 40, 60, 3)), bad, "--taps", 1, "-q", "--width", 60,
                   "--type", "u16", "--channels", 3, "--compress", "deflate"]
            rc, _, err = run(cmd)
            if rc != 0:
                report("(a) truncated oocconv output", [exit_problem(cmd, rc, err)])
            else:
                with open(bad, "r+b") as f:
                    f.truncate(os.path.getsize(bad) // 2)
                expect_error("(a) truncated file: an oocconv TIFF (directory at the end) cut in half", conv, 3,
                             ["truncat", "past the end"], out_tif)

            with open(p("x.tif"), "wb") as f:
                f.write(b"IX*\0" + bytes(200))
            expect_error("(b) wrong magic IX*: x.tif", [OOCCONV, p("x.tif"), out_tif, "--taps", 1, "-q"], 3,
                         ["magic", "not a TIFF"], out_tif)
            raw_file = write_raw(random_image("u8", 10, 10, 1), "plain.raw")
            expect_error("(b) --in-format tiff on a raw file", [OOCCONV, raw_file, out_tif, "--taps", 1, "-q",
                         "--in-format", "tiff", "--width", 10, "--type", "u8"], 3, ["not a TIFF"], out_tif)

            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), offsets={3: size + 1000})
            expect_error("(c) strip offset past the end of the file", conv, 3, ["past the end"], out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), byte_counts={10: size})
            expect_error("(c) strip byte count running past the end of the file", conv, 3, ["past the end"],
                         out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), byte_counts={2: 0})
            expect_error("(d) zero byte count strip", conv, 3, ["empty"], out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), byte_counts={4: 300})
            expect_error("(d) uncompressed strip shorter than its rows", conv, 3, ["damaged", "need"], out_tif)

    def test_5b_unsupported_layouts(self):
        grey = grey_image()
        with cli_cases.cases(self):
            row_bits = lambda bits: (W * bits + 7) // 8  # noqa: E731
            write_tiff(bad, base_tags(W, H, bps=1, photometric=0), [bytes(row_bits(1) * H)])
            expect_error("(e) 1-bit bilevel", conv, 3, ["1-bit"], out_tif)
            write_tiff(bad, base_tags(W, H, bps=12), [bytes(row_bits(12) * H)])
            expect_error("(f) 12-bit samples", conv, 3, ["12-bit"], out_tif)
            palette = base_tags(W, H, photometric=3)
            palette[320] = (SHORT, [(i * 257) & 0xFFFF for i in range(256)] * 3)
            write_tiff(bad, palette, [grey.tobytes()])
            expect_error("(g) palette (photometric 3 with a ColorMap)", conv, 3, ["palette"], out_tif)

    def test_5c_unusual_valid_layouts_and_absurd_sizes(self):
        grey = grey_image()
        with cli_cases.cases(self):
            # Unusual but valid layouts: strips stored in reverse order, filler between strips, byte counts
            # larger than the rows need, no RowsPerStrip tag (one strip), a tile size not a multiple of 16.
            strips = strips_of(grey, 7)
            write_tiff(bad, base_tags(W, H, rps=7), strips, placement=reversed(range(len(strips))))
            control("strips stored in reverse order", grey, extra=["--band-rows", 10])
            write_tiff(bad, base_tags(W, H, rps=7), strips, gap=13)
            control("13 filler bytes between strips", grey)
            write_tiff(bad, base_tags(W, H, rps=7), [s + bytes(5) for s in strips])
            control("strip byte counts 5 larger than the rows need", grey)
            no_rps = base_tags(W, H)
            del no_rps[278]
            write_tiff(bad, no_rps, [grey.tobytes()])
            control("no RowsPerStrip tag", grey)
            write_tiff(bad, base_tags(W, H, tile=(20, 24)), tiles_of(grey, 20, 24), tiled=True)
            control("tiles 20x24 (not a multiple of 16)", grey)
            write_tiff(bad, base_tags(W, H, rps=7), strips[:5])
            expect_error("too few strips for the image (5 of 11)", conv, 3, None, out_tif)
            write_tiff(bad, base_tags(1_000_000, 1_000_000, rps=1_000_000), [bytes(100)])
            expect_error("10^6 x 10^6 image with a 100-byte strip", conv, 3, ["truncat", "past the end"],
                         out_tif)
            write_tiff(bad, base_tags(2 ** 32 - 1, 3, spp=4, bps=32, sample_format=3, photometric=2, rps=1,
                                      compression=8), [zlib.compress(b"abc")] * 3)
            expect_error("width 2^32-1 x 4 x f32 Deflate strips", conv, 3, None, out_tif)

    def test_5d_tiles(self):
        grey = grey_image()
        with cli_cases.cases(self):
            # Tiles of 32 x 48 over the 100 x 75 image: 4 x 2 tiles, overhanging.
            tiles = tiles_of(grey, 32, 48)
            size = write_tiff(bad, base_tags(W, H, tile=(32, 48)), tiles, tiled=True)
            control("tiles 32x48 (hand-written)", grey)
            write_tiff(bad, base_tags(W, H, tile=(32, 48)), tiles, tiled=True, offsets={5: size + 64})
            expect_error("(h) tile offset past the end of the file", conv, 3, ["past the end"], out_tif)
            write_tiff(bad, base_tags(W, H, tile=(32, 48)), tiles, tiled=True, byte_counts={6: 0})
            expect_error("(h) zero byte count tile", conv, 3, ["empty"], out_tif)

    def test_5e_damaged_compressed_strips(self):
        grey = grey_image()
        with cli_cases.cases(self):
            # Deflate strips: valid, then garbage, then a valid stream that ends too soon.
            deflated = [zlib.compress(s) for s in strips_of(grey, 16)]
            for code in (8, 32946):
                write_tiff(bad, base_tags(W, H, rps=16, compression=code), deflated)
                control(f"Deflate (compression {code}) strips (hand-written)", grey, extra=["--band-rows", 6])
                garbage = list(deflated)
                garbage[2] = bytes((255 - i) % 256 for i in range(len(garbage[2])))
                write_tiff(bad, base_tags(W, H, rps=16, compression=code), garbage)
                expect_error(f"(i) Deflate (compression {code}) strip of garbage", conv, 3,
                             ["decode", "damaged"], out_tif)
            short = list(deflated)
            short[1] = zlib.compress(strips_of(grey, 16)[1][:500])
            write_tiff(bad, base_tags(W, H, rps=16, compression=8), short)
            expect_error("(i) Deflate strip that decodes to too few bytes", conv, 3, ["decode", "damaged"],
                         out_tif)
            for code, label in ((5, "LZW"), (50000, "ZSTD")):
                write_tiff(bad, base_tags(W, H, rps=16, compression=code),
                           [bytes((7 * i + 13) % 256 for i in range(300)) for _ in range(5)])
                expect_error(f"(i) {label} strips of garbage", conv, 3, ["decode", "damaged"], out_tif)

    def test_5f_samples_contradictions_and_directories(self):
        grey = grey_image()
        with cli_cases.cases(self):
            five = rng.integers(1, 255, (H, W, 5), dtype="u1")
            write_tiff(bad, base_tags(W, H, spp=5), [five.tobytes()])
            expect_error("(j) 5 samples per pixel", conv, 3, ["samples per pixel"], out_tif)

            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7))
            expect_error("(k) --width 99 for a TIFF 100 wide", conv + ["--width", 99], 2, ["width"],
                         out_tif, also=["100", "99"])
            expect_error("(k) --type u16 for a u8 TIFF", conv + ["--type", "u16"], 2, ["type"], out_tif,
                         also=["u8", "u16"])
            expect_error("(k) --channels 3 for a 1-channel TIFF", conv + ["--channels", 3], 2, ["channels"],
                         out_tif)
            expect_error("(k) --height 70 for a TIFF 75 high", conv + ["--height", 70], 2, ["height"],
                         out_tif, also=["75", "70"])

            no_length = base_tags(W, H, rps=7)
            del no_length[257]
            write_tiff(bad, no_length, strips_of(grey, 7))
            expect_error("missing ImageLength", conv, 3, None, out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), ifd_offset=10 ** 6)
            expect_error("directory offset past the end of the file", conv, 3, ["truncat", "damaged"], out_tif)
            expect_error("input that does not exist", [OOCCONV, p("nothing.tif"), out_tif, "--taps", 1, "-q"],
                         3, ["does not exist"], out_tif)


if __name__ == "__main__":
    sys.exit(main())
