#!/usr/bin/env python3
"""oocrun's stages one by one against scipy.ndimage in float64 (and equalize against
cv2.equalizeHist), integer outputs rounded and saturated, --stats naming each stage as built, and
bad pipelines refused naming the stage and parameter (A and D in pipeline_support.py).
Usage: test_pipeline_stages.py --bin-dir DIR [unittest options]"""

import os
import random
import sys
import unittest

import numpy as np

from pipeline_support import (BORDERS, Base, cv2, gauss_taps, main, reference, run, sep,
                              stage_text, to_type, tool)


class Stages(Base):
    CASES = [
        ("gaussian", [("sigma", "1.5")]),
        ("gaussian", [("sigma", "2"), ("radius", "3")]),
        ("uniform", [("size", "5")]),
        ("correlate1d", [("taps", "1,-2,4"), ("axis", "0")]),
        ("correlate1d", [("taps", "1,-2,4"), ("axis", "1")]),
        ("separable", [("row", "1,2,1"), ("col", "-1,0,3,0,1")]),
        ("convolve", [("kernel", "laplace")]),
        ("convolve", [("kernel", "sobel-x")]),
        ("gradient-magnitude", []),
        ("dog", [("sigma1", "1"), ("sigma2", "2.5")]),
        ("unsharp", [("sigma", "1"), ("amount", "0.7")]),
        ("subtract-background", [("sigma", "3")]),
        ("scale", [("mul", "-0.5"), ("add", "7")]),
        ("abs", []),
        ("clamp", [("min", "40"), ("max", "120")]),
        ("threshold", [("value", "90")]),
    ]

    def test_each_stage_against_scipy(self):
        rng = random.Random(7)
        for i, stage in enumerate(self.CASES):
            for t, c in (("f32", 1), ("u16", 3), ("u8", 1), ("i16", 2)):
                mode = BORDERS[(i + len(t) + c) % 5]
                # gradient-magnitude's y derivative smooths along x first: under a constant
                # other than 0 its edge rows differ from scipy.ndimage.sobel(axis=0)'s order.
                cval = 5.0 if mode == "constant" and stage[0] != "gradient-magnitude" else 0.0
                h, w = 37 + i, 29 + 2 * c
                with self.subTest(stage=stage_text(stage), type=t, channels=c, border=mode):
                    x = self.image(h, w, c, t, seed=i)
                    if stage[0] == "abs":
                        x = (x.astype(np.float64) - x.mean()).astype(np.float32)
                        t2 = "f32"
                    else:
                        t2 = t
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, stage_text(stage), "--border", mode,
                                    "--border-value", cval, "--band-rows",
                                    rng.choice([1, 4, 7, 11]), "--out-type", "f32", itype=t2)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = np.fromfile(out, np.float32).reshape(x.shape)
                    want = reference(stage, x, mode, cval)
                    scale = max(1.0, float(np.abs(want).max()), float(np.abs(x).max()))
                    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale)

    def test_integer_outputs_round_and_saturate(self):
        x = self.image(41, 33, 1, "u8", seed=3)
        inp = self.write("in.raw", x)
        for pipeline, ref in (("scale mul=3 add=-100", lambda v: v * 3.0 - 100),
                              ("unsharp sigma=1 amount=2", None)):
            with self.subTest(pipeline=pipeline):
                out = self.p("o.raw")
                r = self.oocrun(inp, out, x, pipeline)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = np.fromfile(out, np.uint8).reshape(x.shape)
                want = ref(x.astype(np.float64)) if ref else reference(
                    ("unsharp", [("sigma", "1"), ("amount", "2")]), x, "reflect", 0)
                want = to_type(want, "u8").astype(int)
                self.assertLessEqual(int(np.abs(got.astype(int) - want).max()), 1)
                self.assertGreater(len(np.unique(got)), 10)

    @unittest.skipUnless(cv2 is not None, "OpenCV (python3-opencv) not installed")
    def test_equalize_against_opencv(self):
        x = self.image(53, 47, 2, "u8", seed=5) // 3 + 40
        inp = self.write("in.raw", x)
        out = self.p("eq.raw")
        r = self.oocrun(inp, out, x, "equalize", "--band-rows", "7")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = np.fromfile(out, np.uint8).reshape(x.shape)
        want = np.stack([cv2.equalizeHist(np.ascontiguousarray(x[..., c])) for c in range(2)], -1)
        np.testing.assert_array_equal(got, want)
        # After a filter and a convert: the histogram of the converted image.
        out2 = self.p("eq2.raw")
        r = self.oocrun(inp, out2, x, "gaussian sigma=1 ! convert type=u8 ! equalize")
        self.assertEqual(r.returncode, 0, r.stderr)
        g = to_type(reference(("gaussian", [("sigma", "1")]), x, "reflect", 0), "u8")
        want = np.stack([cv2.equalizeHist(np.ascontiguousarray(g[..., c])) for c in range(2)], -1)
        got = np.fromfile(out2, np.uint8).reshape(x.shape)
        # A value of g may differ by one rounding from the reference: compare most samples.
        self.assertGreater(np.mean(got == want), 0.97)


class StageReport(Base):
    def test_stats_name_each_stage_as_built(self):
        """--stats says what each stage computes with: the FFT or the direct sum, and the
        accumulator (issue 43, item 16)."""
        import json
        x = self.image(300, 280, 1, "f32", seed=4)
        inp = self.write("s.raw", x)
        out = self.p("s_out.raw")
        r = self.oocrun(inp, out, x, "gaussian sigma=30 method=fft ! gaussian sigma=1 ! "
                        "median size=3", "--stats", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        stages = json.loads(r.stdout)["stages"]
        self.assertEqual(len(stages), 3)
        self.assertIn("FFT", stages[0])
        self.assertIn("direct", stages[1])
        self.assertIn("accumulate f32", stages[1])
        r = self.oocrun(inp, out, x, "gaussian sigma=1", "--stats", "text")
        self.assertRegex(r.stdout, r"\nstage 1 +separable .*direct")
        r = run([tool("oocinfo"), inp, "--width", 280, "--type", "f32", "--pipeline",
                 "gaussian sigma=30 method=fft ! uniform size=3"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"stage: separable .*FFT")
        self.assertRegex(r.stdout, r"stage: separable .*direct")
        x32 = self.image(30, 28, 1, "u32", seed=4)
        inp32 = self.write("s32.raw", x32)
        r = self.oocrun(inp32, out, x32, "gaussian sigma=1", "--stats", "json")
        self.assertIn("accumulate f64", json.loads(r.stdout)["stages"][0])

    def test_compound_stages_say_how_their_filters_compute(self):
        """dog, unsharp and subtract-background run their Gaussians as the direct sum (tiles
        across the row; issue 45, item 3), and --stats says so; against scipy at a sigma where
        a Gaussian alone would take the FFT."""
        import json
        x = self.image(300, 280, 1, "f32", seed=5)
        inp = self.write("c.raw", x)
        out = self.p("c_out.raw")
        g = lambda y, s: sep(y, gauss_taps(s), gauss_taps(s), "reflect", 0)
        for stage, want in (("subtract-background sigma=30", lambda y: y - g(y, 30)),
                            ("unsharp sigma=30 amount=0.5", lambda y: y + 0.5 * (y - g(y, 30))),
                            ("dog sigma1=25 sigma2=30", lambda y: g(y, 25) - g(y, 30))):
            with self.subTest(stage=stage):
                r = self.oocrun(inp, out, x, stage, "--stats", "json", "--band-rows", 37)
                self.assertEqual(r.returncode, 0, r.stderr)
                first = json.loads(r.stdout)["stages"][0]
                self.assertIn("direct", first)
                self.assertNotIn("FFT", first)
                got = np.fromfile(out, np.float32).reshape(x.shape)
                np.testing.assert_allclose(got, want(x.astype(np.float64)), rtol=0,
                                           atol=2e-5 * np.abs(x).max())


class BadPipelines(Base):
    def test_bad_pipelines_name_stage_and_parameter(self):
        x = self.image(20, 20, 1, "f32")
        inp = self.write("in.raw", x)
        for pipeline, words in (
                ("gausian sigma=2", ["stage 1", "gausian", "gaussian"]),
                ("gaussian sigma=2 ! scale mul=x", ["stage 2 (scale)", "mul"]),
                ("gaussian sgma=2", ["stage 1 (gaussian)", "sgma"]),
                ("gaussian", ["stage 1 (gaussian)", "sigma", "required"]),
                ("gaussian sigma=-1", ["stage 1 (gaussian)", "sigma", "above 0"]),
                ("dog sigma1=1e9 sigma2=1", ["stage 1 (dog)", "sigma1", "349525"]),
                ("gaussian sigma=", ["stage 1 (gaussian)", "sigma", "value"]),
                ("equalize", ["stage 1 (equalize)", "f32", "convert"]),
                ("gaussian sigma=1 ! ! abs", ["stage 2", "empty"]),
                ("gaussian sigma=1 !", ["stage 2", "empty"]),
                ("! gaussian sigma=1", ["stage 1", "empty"]),
                ("uniform size=0", ["stage 1 (uniform)", "size"]),
                ("clamp min=5 max=1", ["stage 1 (clamp)", "min"]),
                ("convert type=u9", ["stage 1 (convert)", "type"]),
                ("minimum size=0", ["stage 1 (minimum)", "size"]),
                ("opening size=3x", ["stage 1 (opening)", "size"]),
                ("rank size=3 index=9", ["stage 1 (rank)", "index"]),
                ("percentile size=3 q=101", ["stage 1 (percentile)", "q"])):
            with self.subTest(pipeline=pipeline):
                out = self.p("bad.raw")
                r = run([tool("oocrun"), inp, out, pipeline, "--width", 20, "-q"])
                self.assertEqual(r.returncode, 2, r.stderr)
                for w in words:
                    self.assertIn(w, r.stderr)
                self.assertFalse(os.path.exists(out))
                self.assertEqual([f for f in os.listdir(self.d) if "partial" in f], [])


if __name__ == "__main__":
    sys.exit(main())
