#!/usr/bin/env python3
"""TIFF inputs of oocconv written by libvips and by tifffile (every type, channel count,
layout and codec), pages, and the sample types ooc does not read (sections 1 and 2 of
tiff_support.py).
Usage: test_tiff_read.py --bin-dir DIR [--keep] [-v] [unittest options]"""

import sys

import numpy as np

import cli_cases
from cli_cases import report, skip
from tiff_support import (NP, OOCCONV, TIFFFILE_LAYOUTS, TYPES, TiffBase, VIPS, VIPS_IMAGES,
    VIPS_OPTIONS, VIPS_SIZES, VipsWriter, compare, expect_error, main, oocconv_read, out_tif, p,
    random_image, tifffile)


class TiffRead(TiffBase):
    # Numbered in the order they draw their data (cli_cases.py).

    def test_1_libvips_inputs(self):
        writer = VipsWriter()  # libvips in this process: ~250 files, no vips process each
        if not VIPS and writer.lib is None:
            self.skipTest("no `vips` on PATH: the libvips-written TIFF checks did not run")
        with cli_cases.cases(self):
            for n, (t, c) in enumerate(VIPS_IMAGES):
                h, w = VIPS_SIZES[n % len(VIPS_SIZES)]
                img = random_image(t, h, w, c)
                for label, opts, only in VIPS_OPTIONS:
                    if only and np.dtype(NP[t]).kind != only:
                        continue
                    name = f"vips {t} x{c} {h}x{w} tiffsave {label}"
                    tif = p("vips.tif")
                    why = writer.save(img, t, tif, opts)
                    if why:
                        skip(name, f"vips could not write it: {why.strip()[:200]}")
                        continue
                    got, problem = oocconv_read(tif, img.shape, t)
                    report(name, [x for x in (problem, compare("oocconv read", got, img)) if x])

    def tifffile_layouts(self, only):
        """Every layout of TIFFFILE_LAYOUTS, written by tifffile, for one type."""
        with cli_cases.cases(self):
            for t in (only,):
                for c in (1, 2, 3, 4):
                    h, w = 75, 100
                    img = random_image(t, h, w, c)
                    for label, kw, extra in TIFFFILE_LAYOUTS:
                        kw = dict(kw)
                        if kw.get("predictor") and np.dtype(NP[t]).kind == "f":
                            continue  # tifffile's float predictor needs imagecodecs
                        if kw.get("planarconfig") == "separate" and c == 1:
                            continue  # one sample: separate is contig
                        name = f"tifffile {t} x{c} {label}"
                        tif = p("tifffile.tif")
                        data = img if c > 1 else img[..., 0]
                        kw.setdefault("photometric", "rgb" if c >= 3 else "minisblack")
                        if c > 1:
                            kw.setdefault("planarconfig", "contig")
                        if kw.get("planarconfig") == "separate":
                            data = np.ascontiguousarray(np.moveaxis(img, -1, 0))
                        if "byteorder" in kw:
                            data = data.astype(data.dtype.newbyteorder(kw["byteorder"]))
                        tifffile.imwrite(tif, data, metadata=None, **kw)
                        got, problem = oocconv_read(tif, img.shape, t, extra)
                        if (problem and kw.get("compression") == "lzma" and "compression" in problem.lower()
                                and "exit 3" in problem):
                            skip(name, "this libtiff has no LZMA codec (oocconv said so, exit 3)")
                            continue
                        report(name, [x for x in (problem, compare("oocconv read", got, img)) if x])

    def test_2b_pages(self):
        """A 3-page file, pages of different types, shapes and layouts: --page picks one."""
        with cli_cases.cases(self):
            # A 3-page file, pages of different types, shapes and layouts: --page picks one.
            pages = [random_image("u8", 40, 50, 1), random_image("u16", 37, 61, 3),
                     random_image("f32", 23, 29, 1)]
            multi = p("pages.tif")
            with tifffile.TiffWriter(multi) as tw:
                tw.write(pages[0][..., 0], photometric="minisblack", metadata=None)
                tw.write(pages[1], photometric="rgb", compression="zlib", rowsperstrip=5, metadata=None)
                tw.write(pages[2][..., 0], photometric="minisblack", tile=(16, 16), metadata=None)
            TN = {"u1": "u8", "u2": "u16", "f4": "f32"}
            for page, want in enumerate(pages):
                t = TN[want.dtype.str[1:]]
                got, problem = oocconv_read(multi, want.shape, t, ["--page", page])
                report(f"3-page file, --page {page}",
                       [x for x in (problem, compare("oocconv read", got, want)) if x])
            # Without --page the pages would be a volume's planes: they differ, which is an error.
            expect_error("3-page file, no --page: input error naming the page that differs",
                         [OOCCONV, multi, out_tif, "--taps", 1, "-q"], 3, ["page 1 is"],
                         out_tif, also=["--page 1"])
            expect_error("3-page file, --page 5: usage error naming the page count",
                         [OOCCONV, multi, out_tif, "--taps", 1, "-q", "--page", 5], 2, ["3 page"], out_tif,
                         also=["5"])
            expect_error("3-page file, --page -1: usage error",
                         [OOCCONV, multi, out_tif, "--taps", 1, "-q", "--page", -1], 2, ["page"], out_tif)

    def test_2c_sample_types_not_read(self):
        with cli_cases.cases(self):
            # Sample types ooc does not read, written by tifffile.
            for dtype, keys in [("i1", ["8-bit signed"]), ("f2", ["16-bit floating"]),
                                ("u8", ["64-bit unsigned"]), ("i8", ["64-bit signed"]),
                                ("c8", ["complex", "sample format"])]:
                bad = p("badtype.tif")
                tifffile.imwrite(bad, np.ones((9, 11), dtype), photometric="minisblack", metadata=None)
                expect_error(f"tifffile {np.dtype(dtype).name} image: exit 3",
                             [OOCCONV, bad, out_tif, "--taps", 1, "-q"], 3, keys, out_tif)


# One test per type of the largest sweep (test_2a_N_...), numbered in order.
for _i, _t in enumerate(TYPES):
    setattr(TiffRead, f"test_2a_{_i}_tifffile_layouts_{_t}",
            (lambda t: lambda self: self.tifffile_layouts(t))(_t))


if __name__ == "__main__":
    sys.exit(main())
