#!/usr/bin/env python3
"""The type a pipeline computes in and writes: 32-bit integer chains equal to oocconv and
float64, f64 outputs of f32 inputs computed in f64, the output type of the last stage that sets
one.
Usage: test_pipeline_working_type.py --bin-dir DIR [unittest options]"""

import sys

import numpy as np
import scipy.ndimage as ndi

from pipeline_support import Base, NP, cv2, gauss_taps, main, run, sep, tool


class WorkingType(Base):
    """Issue 43, items 1 and 2: a chain computes in oocconv's type, writes the type it makes."""

    def wide_image(self, t, seed):
        rng = np.random.default_rng(seed)
        info = np.iinfo(NP[t])
        return rng.integers(info.min, int(info.max), (47, 53), dtype=np.int64).astype(NP[t])

    def test_32_bit_integer_chains_equal_oocconv_and_float64(self):
        for t in ("u32", "i32"):
            x = self.wide_image(t, seed=43)
            inp = self.write("w.raw", x)
            common = ["--width", 53, "--type", t, "-q", "--border", "reflect"]
            for method in ("direct", "fft"):
                for ours, theirs, ref in (
                        ("gaussian sigma=2", ["--sigma", "2"],
                         lambda v: sep(v, gauss_taps(2), gauss_taps(2), "reflect", 0)),
                        ("uniform size=5", ["--filter", "box", "--radius", "2"],
                         lambda v: ndi.uniform_filter(v, 5, mode="reflect")),
                        ("correlate1d taps=1,-2,4 axis=1", ["--row-taps", "4,-2,1",
                                                            "--col-taps", "1"],
                         lambda v: ndi.correlate1d(v, [1, -2, 4], axis=1, mode="reflect")),
                        ("separable row=1,2,1 col=1,-1,3", ["--row-taps", "1,2,1",
                                                            "--col-taps", "1,-1,3"],
                         lambda v: sep(v, [1, 2, 1], [1, -1, 3], "reflect", 0))):
                    with self.subTest(type=t, stage=ours, method=method):
                        a, b = self.p("a.raw"), self.p("b.raw")
                        r = run([tool("oocrun"), inp, a, ours + " method=" + method] + common)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        r = run([tool("oocconv"), inp, b, "--method", method] + theirs + common)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        got = np.fromfile(a, NP[t]).reshape(x.shape)
                        self.assertTrue(np.array_equal(got, np.fromfile(b, NP[t]).reshape(
                            x.shape)), "differs from oocconv")
                        info = np.iinfo(NP[t])
                        want = np.clip(np.rint(ref(x.astype(np.float64))), info.min, info.max)
                        # The FFT's error is relative to the data's scale (2^32 here).
                        tol = 1 if method == "direct" else 1e-9 * 2.0 ** 32
                        err = np.abs(got.astype(np.float64) - want).max()
                        self.assertLessEqual(err, tol)
            for method in ("direct", "fft"):
                with self.subTest(type=t, stage="convolve", method=method):
                    a, b = self.p("a.raw"), self.p("b.raw")
                    self.assertEqual(run([tool("oocrun"), inp, a, "convolve kernel=box:5 "
                                          "method=" + method] + common).returncode, 0)
                    self.assertEqual(run([tool("oocconv"), inp, b, "--kernel", "box:5",
                                          "--method", method] + common).returncode, 0)
                    with open(a, "rb") as fa, open(b, "rb") as fb:
                        self.assertTrue(fa.read() == fb.read(), "convolve differs from oocconv")
                    got = np.fromfile(a, NP[t]).reshape(x.shape).astype(np.float64)
                    info = np.iinfo(NP[t])
                    want = np.clip(np.rint(ndi.uniform_filter(x.astype(np.float64), 5,
                                                              mode="reflect")), info.min, info.max)
                    tol = 1 if method == "direct" else 1e-9 * 2.0 ** 32
                    self.assertLessEqual(np.abs(got - want).max(), tol)

    def test_f64_output_of_f32_is_computed_in_f64(self):
        x = self.image(40, 33, 1, "f32", seed=5)
        inp = self.write("f.raw", x)
        common = ["--width", 33, "--type", "f32", "-q", "--out-type", "f64"]
        a, b = self.p("a.raw"), self.p("b.raw")
        self.assertEqual(run([tool("oocrun"), inp, a, "gaussian sigma=1.5"] + common).returncode, 0)
        self.assertEqual(run([tool("oocconv"), inp, b, "--sigma", "1.5"] + common).returncode, 0)
        got = np.fromfile(a, np.float64).reshape(x.shape)
        self.assertTrue(np.array_equal(got, np.fromfile(b, np.float64).reshape(x.shape)))
        want = sep(x.astype(np.float64), gauss_taps(1.5), gauss_taps(1.5), "reflect", 0)
        self.assertLess(np.abs(got - want).max(), 1e-12 * np.abs(want).max())

    def test_output_takes_the_last_type_setting_stage(self):
        x = self.image(30, 41, 1, "f32", seed=8)
        inp = self.p("e.npy")
        np.save(inp, x)
        for pipeline, extra, dtype in (
                ("gaussian sigma=1 ! convert type=u8 ! equalize", [], np.uint8),
                ("convert type=u16 ! equalize ! gaussian sigma=1", [], np.uint16),
                ("convert type=u8 ! equalize ! abs", [], np.uint8),
                ("gaussian sigma=1 ! convert type=u8 ! equalize", ["--out-type", "f64"],
                 np.float64),
                ("convert type=i16 ! scale mul=2", [], np.int16),
                ("scale mul=2", [], np.float32)):
            with self.subTest(pipeline=pipeline, extra=extra):
                out = self.p("e_out.npy")
                r = run([tool("oocrun"), inp, out, pipeline, "-q"] + extra)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(np.load(out).dtype, dtype)
        # The values: equalize's table applied, as the same chain written to u8 explicitly.
        a, b = self.p("ea.npy"), self.p("eb.npy")
        run([tool("oocrun"), inp, a, "gaussian sigma=1 ! convert type=u8 ! equalize", "-q"])
        run([tool("oocrun"), inp, b, "gaussian sigma=1 ! convert type=u8 ! equalize", "-q",
             "--out-type", "u8"])
        self.assertTrue(np.array_equal(np.load(a), np.load(b)))
        # ... which is OpenCV's equalization of the u8 image before it.
        if cv2 is not None:
            c = self.p("ec.npy")
            run([tool("oocrun"), inp, c, "gaussian sigma=1 ! convert type=u8", "-q"])
            self.assertTrue(np.array_equal(np.load(a), cv2.equalizeHist(np.load(c))))


if __name__ == "__main__":
    sys.exit(main())
