#!/usr/bin/env python3
"""Morphology and rank stages (minimum ... black-tophat, median, percentile, rank) exactly
equal to scipy.ndimage's over every type, channel count, border and window, column histograms of
tall windows, NaN in the window, and inside pipelines (F in pipeline_support.py).
Usage: test_pipeline_morphology.py --bin-dir DIR [unittest options]"""

import random
import sys

import numpy as np
import scipy.ndimage as ndi

from pipeline_support import BORDERS, Base, main, reference, to_type


MORPH = {"minimum": ndi.minimum_filter, "maximum": ndi.maximum_filter,
         "opening": ndi.grey_opening, "closing": ndi.grey_closing,
         "white-tophat": ndi.white_tophat, "black-tophat": ndi.black_tophat}


class Morphology(Base):
    def test_against_scipy_exactly(self):
        rng = random.Random(33)
        sizes = ["1", "2", "3", "4", "5x2", "7x1", "1x6", "11", "41"]
        count = 0
        for t in ["u8", "u16", "i16", "u32", "i32", "f32", "f64"]:
            for op in MORPH:
                c = rng.choice([1, 3])
                size = rng.choice(sizes)
                mode = rng.choice(BORDERS)
                h, w = rng.randint(5, 29), rng.randint(3, 33)
                x = self.image(h, w, c, t, seed=count)
                count += 1
                hw = [int(v) for v in size.split("x")] * (1 if "x" in size else 2)
                with self.subTest(type=t, op=op, size=size, border=mode, shape=x.shape):
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, "%s size=%s" % (op, size), "--border", mode,
                                    "--border-value", 7, "--band-rows", rng.choice([1, 3, 8, 64]))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = np.fromfile(out, x.dtype).reshape(x.shape)
                    want = MORPH[op](x, size=tuple(hw) + ((1,) if c > 1 else ()), mode=mode,
                                     cval=7)
                    np.testing.assert_array_equal(got, want)

    def test_rank_filters_against_scipy_exactly(self):
        rng = random.Random(51)
        sizes = ["2", "3", "4x3", "5", "1x7", "6x2", "9", "25"]
        count = 0
        for t in ["u8", "u16", "i16", "u32", "i32", "f32", "f64"]:
            for stage in ("median", "percentile", "rank"):
                c = rng.choice([1, 3])
                size = rng.choice(sizes)
                mode = rng.choice(BORDERS)
                h, w = rng.randint(4, 31), rng.randint(3, 29)
                x = self.image(h, w, c, t, seed=100 + count)
                count += 1
                hw = [int(v) for v in size.split("x")] * (1 if "x" in size else 2)
                full = tuple(hw) + ((1,) if c > 1 else ())
                n = hw[0] * hw[1]
                if stage == "median":
                    text, want = "median size=%s" % size, ndi.median_filter(
                        x, size=full, mode=mode, cval=7)
                elif stage == "percentile":
                    q = rng.choice([-30, 10, 37.5, 90, 100])
                    text, want = "percentile size=%s q=%g" % (size, q), ndi.percentile_filter(
                        x, q, size=full, mode=mode, cval=7)
                else:
                    k = rng.choice([1, -2, n // 3])
                    text, want = "rank size=%s index=%d" % (size, k), ndi.rank_filter(
                        x, k, size=full, mode=mode, cval=7)
                with self.subTest(type=t, stage=text, border=mode, shape=x.shape):
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, text, "--border", mode, "--border-value", 7,
                                    "--band-rows", rng.choice([1, 3, 8, 64]))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = np.fromfile(out, x.dtype).reshape(x.shape)
                    np.testing.assert_array_equal(got, want)

    def test_median_3x3_of_integers_exactly(self):
        for t, c in (("u8", 1), ("u16", 3), ("i16", 2), ("i32", 1), ("u32", 3)):
            for mode in BORDERS:
                with self.subTest(type=t, border=mode):
                    x = self.image(23, 19, c, t, seed=len(mode))
                    full = (3, 3) + ((1,) if c > 1 else ())
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, "median size=3", "--border", mode,
                                    "--border-value", 7, "--band-rows", 5)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    np.testing.assert_array_equal(
                        np.fromfile(out, x.dtype).reshape(x.shape),
                        ndi.median_filter(x, size=full, mode=mode, cval=7))

    def test_tall_u8_windows_use_column_histograms_exactly(self):
        for size, t, c in (("51x5", "u8", 1), ("49", "u8", 3), ("61x2", "u8", 1)):
            x = self.image(57, 45, c, t, seed=len(size))
            full = tuple(int(v) for v in (size.split("x") * 2)[:2]) + ((1,) if c > 1 else ())
            for stage, want in (("median size=%s" % size, ndi.median_filter(x, size=full)),
                                ("percentile size=%s q=20" % size,
                                 ndi.percentile_filter(x, 20, size=full))):
                with self.subTest(stage=stage, channels=c):
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, stage, "--band-rows", 19)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    np.testing.assert_array_equal(np.fromfile(out, x.dtype).reshape(x.shape),
                                                  want)
        # Wider than a job's strip of 1024 output columns and taller than its 128-row chunk: the
        # strips' and chunks' seams, a partial last strip, two channels.
        x = self.image(300, 2300, 2, "u8", seed=5)
        for mode in ("mirror", "constant"):
            with self.subTest(stage="median size=51x3 (strips)", border=mode):
                inp = self.write("in.raw", x)
                out = self.p("out.raw")
                r = self.oocrun(inp, out, x, "median size=51x3", "--border", mode,
                                "--border-value", 7)
                self.assertEqual(r.returncode, 0, r.stderr)
                np.testing.assert_array_equal(
                    np.fromfile(out, x.dtype).reshape(x.shape),
                    ndi.median_filter(x, size=(51, 3, 1), mode=mode, cval=7))

    def test_tall_16_bit_windows_use_column_histograms_exactly(self):
        # Wider than a job's strip of 512 output columns and taller than its 256-row chunk; i16
        # around zero (negative values, the sign flip), u16 over the whole range and a gradient
        # whose medians fall in many coarse bins (more than one group of 8 in a job).
        rng = np.random.default_rng(9)
        yy, xx = np.mgrid[0:300, 0:1100]
        grad = ((yy * 37 + xx * 53 + rng.integers(0, 700, yy.shape)) % 65536).astype(np.uint16)
        cases = (("51x5", self.image(300, 1100, 2, "i16", seed=3)),
                 ("61x3", rng.integers(0, 65536, (300, 1100), dtype=np.uint16)),
                 ("49x9", grad))
        for size, x in cases:
            c = x.shape[2] if x.ndim == 3 else 1
            hw = tuple(int(v) for v in size.split("x"))
            full = hw + ((1,) if c > 1 else ())
            for mode in ("mirror", "constant"):
                for stage, want in (
                        ("median size=%s" % size,
                         ndi.median_filter(x, size=full, mode=mode, cval=7)),
                        ("percentile size=%s q=80" % size,
                         ndi.percentile_filter(x, 80, size=full, mode=mode, cval=7))):
                    with self.subTest(stage=stage, type=x.dtype.name, border=mode):
                        inp = self.write("in.raw", x)
                        out = self.p("out.raw")
                        r = self.oocrun(inp, out, x, stage, "--border", mode, "--border-value", 7,
                                        "--band-rows", 150)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        np.testing.assert_array_equal(
                            np.fromfile(out, x.dtype).reshape(x.shape), want)

    def test_nan_in_the_window_gives_nan(self):
        x = self.image(31, 23, 1, "f32", seed=8)
        x[[3, 17, 29], [5, 11, 0]] = np.nan
        inp = self.write("in.raw", x)
        for op, fill, f in (("minimum", np.inf, ndi.minimum_filter),
                            ("maximum", -np.inf, ndi.maximum_filter)):
            for size in ("3", "4x2"):
                with self.subTest(op=op, size=size):
                    out = self.p("o.raw")
                    r = self.oocrun(inp, out, x, "%s size=%s" % (op, size), "--band-rows", 5)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = np.fromfile(out, np.float32).reshape(x.shape)
                    hw = tuple(int(v) for v in size.split("x")) * (1 if "x" in size else 2)
                    nan = ndi.maximum_filter(np.isnan(x).astype(np.uint8), size=hw) > 0
                    want = f(np.where(np.isnan(x), fill, x), size=hw)
                    np.testing.assert_array_equal(np.isnan(got), nan)
                    np.testing.assert_array_equal(got[~nan], want[~nan])

    def test_in_pipelines(self):
        x = self.image(97, 61, 1, "u16", seed=2)
        inp = self.write("in.raw", x)
        out = self.p("o.raw")
        r = self.oocrun(inp, out, x, "gaussian sigma=1 ! white-tophat size=9 ! convert type=u8",
                        "--band-rows", 13)
        self.assertEqual(r.returncode, 0, r.stderr)
        g = reference(("gaussian", [("sigma", "1")]), x, "reflect", 0).astype(np.float32)
        want = to_type(ndi.white_tophat(g, size=9).astype(np.float64), "u8")
        got = np.fromfile(out, np.uint8).reshape(x.shape)
        # The Gaussian is f32 in both; a tie in the top-hat may round differently by one.
        self.assertLessEqual(int(np.abs(got.astype(int) - want.astype(int)).max()), 1)
        self.assertGreater(len(np.unique(got)), 5)


if __name__ == "__main__":
    sys.exit(main())
