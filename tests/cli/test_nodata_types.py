#!/usr/bin/env python3
"""Nodata (issue 48) across sample types and against GDAL, through oocrun, on random images
with holes (test_nodata.py's): --out-type and convert into a type that cannot hold the nodata
value (-9999 into u8, NaN into an integer type) against a NumPy reference of the rule (holes take
the converted value, valid samples landing on it move one step off), what the outputs and the run
say about it, a volume's convert, and COG levels against GDAL's own overviews.

Usage: test_nodata_types.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import json
import os
import shutil
import subprocess
import unittest

import numpy as np

import cli_args  # beside this file

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
os.environ.setdefault("OOC_BIN_DIR", BIN)  # test_nodata's helpers read it when imported
from test_nodata import (ND, OOCRUN, NodataCase, gaussian_taps, holes, image,  # noqa: E402
                         masked_level, ranked, rng, separable)


INT_RANGE = {t: (np.iinfo(t).min, np.iinfo(t).max) for t in (np.uint8, np.uint16, np.int16)}
TYPE_NAME = {np.uint8: "u8", np.uint16: "u16", np.int16: "i16"}


def to_type(v, nd, dtype, out_nd):
    """A float64 result with holes (nd or NaN) converted as --out-type does under nodata: holes
    to out_nd, valid values rounded half to even and saturated, those landing on out_nd one step
    up (down where out_nd is the type's largest)."""
    lo, hi = INT_RANGE[dtype]
    h = holes(v, nd)
    c = np.clip(np.round(np.where(h, 0.0, v)), lo, hi)
    c[c == out_nd] = out_nd - 1 if out_nd == hi else out_nd + 1
    c[h] = out_nd
    return c.astype(dtype)


class NodataTypes(NodataCase):
    def test_out_type_keeps_holes(self):
        """--out-type into a type that cannot hold the nodata value: holes take the type's own
        (-9999 into u8 or u16: 0; NaN into i16: -32768; -9999 into i16 stays), valid samples that
        would convert to it move one step off, through the fused filters, the rank stages'
        convert, the compound stages and a convert stage between two stages."""
        g = gaussian_taps(1)
        for nd, text, dtype, out_nd in ((ND, "-9999", np.uint8, 0), (np.nan, "nan", np.int16,
                                        -32768), (ND, "-9999", np.int16, -9999)):
            x = image(kind="nan" if np.isnan(nd) else "blobs").astype(np.float64)
            v = rng.uniform(-3, 5, x.shape)  # values near 0 and below: some round to 0
            v[::5] = rng.uniform(-40000, 40000, v[::5].shape)  # some saturate
            if out_nd == -9999:
                v[1::4] = rng.uniform(-9999.6, -9998.4, v[1::4].shape)  # near the value kept
            x = np.where(holes(x, nd), x, v).astype(np.float32)
            name = f"{text} to {dtype.__name__}"
            for stage, want in (
                    ("gaussian sigma=1", separable(x, nd, g, g, "reflect")),
                    ("median size=3", ranked(x, nd, (3, 3), lambda n: n // 2, "reflect")),
                    ("convolve kernel=box:3 method=fft", separable(x, nd, [1 / 3] * 3, [1 / 3] * 3,
                                                                  "reflect"))):
                if stage.startswith("convolve") and out_nd != 0:
                    continue
                got = self.oocrun(x, stage, "--band-rows", "7", "--out-type", TYPE_NAME[dtype],
                                  nodata=text)
                ref = to_type(want, nd, dtype, out_nd)
                self.assertEqual(got.dtype, dtype, name)
                self.assertTrue(np.array_equal(got == out_nd, ref == out_nd),
                                f"{stage} {name}: holes differ")
                # f32 sums: a value within their rounding of a half may round either way.
                err = np.abs(got.astype(np.int64) - ref.astype(np.int64))
                self.assertLessEqual(err.max(), 1 if "median" not in stage else 0, stage + name)
                self.assertGreater(np.sum(got == out_nd), 0, name)
        # unsharp (a compound stage) into u8, and a convert stage whose holes the median after it
        # reads as holes (0 in u8).
        x = image()
        x = np.where(holes(x, ND), ND, rng.uniform(0, 3, x.shape)).astype(np.float32)
        got = self.oocrun(x, "gaussian sigma=1 ! convert type=u8 ! median size=3",
                          "--band-rows", "7")
        mid = to_type(separable(x, ND, g, g, "reflect"), ND, np.uint8, 0)
        want = ranked(mid, 0.0, (3, 3), lambda n: n // 2, "reflect")
        self.assertTrue(np.array_equal(got, want.astype(np.uint8)), "convert stage then median")
        got = self.oocrun(x, "unsharp sigma=1 amount=1", "--out-type", "u8")
        self.assertTrue(np.array_equal(got == 0, holes(x, ND)), "unsharp into u8: holes")

    def test_volume_convert_and_refusals(self):
        """A volume in 3-D: convert (sample by sample) keeps holes as the rule says; the compound
        stages take a volume plane by plane only, and say so (the linear and rank stages know
        holes in 3-D: test_nodata_volume.py)."""
        x = rng.uniform(-2, 300, (5, 21, 17)).astype(np.float32)
        x[1:3, 4:9, 5:12] = ND
        x[rng.random(x.shape) < 0.05] = ND
        got = self.oocrun(x, "convert type=u8")
        self.assertTrue(np.array_equal(got, to_type(x.astype(np.float64), ND, np.uint8, 0)))
        r = self.run_tool([OOCRUN, self.p("in.npy"), self.p("o.npy"), "dog sigma1=1 sigma2=2",
                           "--nodata", "-9999"], code=2)
        self.assertIn("knows holes in 2-D only: add --planes", r.stderr)

    def test_out_type_says_its_nodata(self):
        """The value chosen is stated: a note on stderr, --stats json, the TIFF's GDAL_NODATA on
        every level (levels averaging the valid samples of the u8 image), the Zarr's fill_value."""
        try:
            import tifffile
            import zarr
        except ImportError:
            self.skipTest("no tifffile or zarr-python")
        x = image(64, 48)
        x = np.where(holes(x, ND), ND, rng.uniform(0, 255, x.shape)).astype(np.float32)
        x[:4, :8] = ND
        np.save(self.p("in.npy"), x)
        want = to_type(ranked(x, ND, (3, 3), lambda n: n // 2, "reflect"), ND, np.uint8, 0)
        r = subprocess.run([OOCRUN, self.p("in.npy"), self.p("o.tif"), "median size=3",
                            "--nodata", "-9999", "--out-type", "u8", "--levels", "2", "--tile",
                            "16", "--stats", "json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("nodata -9999 does not fit the output's type u8: its holes are 0", r.stderr)
        self.assertEqual(json.loads(r.stdout)["output"]["nodata"], 0)
        with tifffile.TiffFile(self.p("o.tif")) as tf:
            for k, lv in enumerate(tf.series[0].levels):
                self.assertTrue(np.array_equal(lv.asarray(), want), f"level {k}")
                self.assertEqual(lv.keyframe.tags[42113].value.strip("\x00 "), "0", f"level {k}")
                want = masked_level(want, 0.0)
        self.run_tool([OOCRUN, self.p("in.npy"), self.p("o.zarr"), "gaussian sigma=1",
                       "--nodata", "-9999", "--out-type", "u16", "--chunk", "16"])
        a = zarr.open_group(self.p("o.zarr"), mode="r")["0"]
        self.assertEqual(a.fill_value, 0)
        self.assertTrue(np.array_equal(a[:] == 0, holes(x, ND)))
        # The input's tag as the nodata value: the same.
        tifffile.imwrite(self.p("tag.tif"), x, extratags=[(42113, "s", 0, "-9999", True)])
        self.run_tool([OOCRUN, self.p("tag.tif"), self.p("t.tif"), "median size=3", "--out-type",
                       "u8"])
        with tifffile.TiffFile(self.p("t.tif")) as tf:
            self.assertEqual(tf.pages[0].tags[42113].value.strip("\x00 "), "0")
            self.assertTrue(np.array_equal(tf.pages[0].asarray(), to_type(
                ranked(x, ND, (3, 3), lambda n: n // 2, "reflect"), ND, np.uint8, 0)))

    def test_cog_levels_as_gdal_makes_them(self):
        """GDAL's COG overviews with RESAMPLING=AVERAGE (the mean of the valid samples of each
        2 x 2 block, GDAL 3.6 rounding half up) as the reference: the same holes at every level,
        f32 levels equal byte for byte, u16 levels equal but where the mean is a tie (ooc rounds
        half to even), and each ooc level the masked mean of the one above."""
        if not shutil.which("gdal_translate"):
            self.skipTest("no gdal_translate")
        import tifffile
        for dtype, nd, text in ((np.uint16, 0.0, "0"), (np.float32, ND, "-9999")):
            x = image(512, 512, nd=nd)
            x = np.where(holes(x, nd), nd, rng.uniform(1, 60000, x.shape)).astype(dtype)
            x[:, :37] = nd  # nodata borders
            x[470:, :] = nd
            tifffile.imwrite(self.p("in.tif"), x, extratags=[(42113, "s", 0, text, True)])
            self.run_tool([OOCRUN, self.p("in.tif"), self.p("o.tif"), "convert type=" +
                           ("u16" if dtype == np.uint16 else "f32"), "--cog", "--tile", "128",
                           "--levels", "2"])
            subprocess.run(["gdal_translate", "-q", "-of", "COG", "-co", "BLOCKSIZE=128", "-co",
                            "COMPRESS=NONE", "-co", "RESAMPLING=AVERAGE", self.p("in.tif"),
                            self.p("g.tif")], check=True)
            with tifffile.TiffFile(self.p("o.tif")) as a, tifffile.TiffFile(self.p("g.tif")) as b:
                ours = [p.asarray() for p in a.pages]
                gdal = [p.asarray() for p in b.pages]
            self.assertEqual(len(ours), len(gdal))
            for k in range(len(ours)):
                name = f"{dtype.__name__} level {k}"
                self.assertTrue(np.array_equal(ours[k] == nd, gdal[k] == nd), name + ": holes")
                if k == 0:
                    self.assertTrue(np.array_equal(ours[0], x), name)
                    continue
                self.assertTrue(np.array_equal(ours[k], masked_level(ours[k - 1], nd)), name)
                if dtype == np.float32:
                    self.assertTrue(np.array_equal(ours[k], gdal[k]), name)
                elif k == 1:
                    m = masked_level(x.astype(np.float64), nd)
                    tie = (m != nd) & (m - np.floor(m) == 0.5)
                    self.assertTrue(np.array_equal(ours[1][~tie], gdal[1][~tie]), name)
                    self.assertTrue(np.array_equal(gdal[1][tie], np.floor(m[tie] + 0.5)), name)


if __name__ == "__main__":
    unittest.main(argv=["test_nodata_types"] + _REST)
