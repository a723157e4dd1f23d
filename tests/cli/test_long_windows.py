#!/usr/bin/env python3
"""Windows longer than the image: separable taps whose radius is past the width or the height
(folded onto the image by the border rule, src/ops/convolution/fold_taps.hpp) and minimum /
maximum windows past the image (clamped, src/ops/morphology/clamp_window.hpp) against
scipy.ndimage in float64, over the five borders (constant with a non-zero value), 1-row and
1-column images, both axes and several band heights; each output the same bytes whatever the
band height and thread count.
Usage: test_long_windows.py --bin-dir DIR [unittest options]"""

import random
import sys

import numpy as np
import scipy.ndimage as ndi

from pipeline_support import BORDERS, Base, gauss_taps, main, sep

CVAL = 7.25
SHAPES = [(1, 1), (1, 7), (9, 1), (2, 3), (5, 11), (13, 4), (6, 6)]
BANDS = [1, 3, 64]


def taps_text(t):
    return ",".join("%.17g" % v for v in t)


class LongWindows(Base):
    def run_bands(self, x, t, stage, mode, cval=CVAL):
        """The output of `stage` for each band height (and two threads once), checked to be the
        same bytes, as an array."""
        inp = self.write("in.raw", x)
        outs = []
        # Bands of the image's height or more are one plan (--stats shows the same plan): each
        # such height once.
        runs = dict.fromkeys((min(b, x.shape[0]), t) for b, t in [(b, 1) for b in BANDS] + [(2, 2)])
        for b, threads in runs:
            out = self.p("out.raw")
            r = self.oocrun(inp, out, x, stage, "--border", mode, "--border-value", cval,
                            "--band-rows", b, "--threads", threads, itype=t)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                outs.append(f.read())
        for o in outs[1:]:
            self.assertEqual(o, outs[0], "bytes differ between band heights or threads")
        return np.frombuffer(outs[0], x.dtype).reshape(x.shape)

    def check_close(self, got, want, scale, f64):
        tol = (1e-11 if f64 else 3e-6) * scale
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol)

    def test_separable_taps_past_the_image(self):
        rng = random.Random(45)
        nrng = np.random.default_rng(45)
        for h, w in SHAPES:
            for mode in BORDERS:
                t = rng.choice(["f64", "f32"])
                x = nrng.uniform(0.5, 200.0, (h, w)).astype(np.float64 if t == "f64" else
                                                             np.float32)
                rx = rng.choice([w + 1, 2 * w + 3, 5 * w + 2, 40])
                ry = rng.choice([h + 1, 2 * h + 1, 4 * h + 5, 37])
                row = nrng.normal(size=2 * rx + 1)  # asymmetric: the taps' order counts
                col = nrng.normal(size=2 * ry + 1)
                with self.subTest(shape=(h, w), border=mode, type=t, radii=(rx, ry)):
                    got = self.run_bands(x, t, "separable row=%s col=%s" % (taps_text(row),
                                                                            taps_text(col)), mode)
                    want = sep(x.astype(np.float64), row, col, mode, CVAL)
                    scale = np.abs(row).sum() * np.abs(col).sum() * 200.0
                    self.check_close(got, want, scale, t == "f64")

    def test_correlate1d_along_either_axis(self):
        nrng = np.random.default_rng(7)
        for h, w in SHAPES:
            for axis in (0, 1):
                n = (h, w)[axis]
                taps = nrng.normal(size=2 * (3 * n + 2) + 1)
                x = nrng.uniform(-50.0, 50.0, (h, w))
                for mode in BORDERS:
                    with self.subTest(shape=(h, w), axis=axis, border=mode):
                        got = self.run_bands(x, "f64", "correlate1d taps=%s axis=%d" % (
                            taps_text(taps), axis), mode)
                        want = ndi.correlate1d(x, taps, axis=axis, mode=mode, cval=CVAL)
                        self.check_close(got, want, np.abs(taps).sum() * 60.0, True)

    def test_gaussian_past_the_image(self):
        nrng = np.random.default_rng(3)
        cases = [((23, 37), "sigma=25 radius=1000", gauss_taps(25.0, 1000)),
                 ((7, 9), "sigma=2000", gauss_taps(2000.0)),
                 ((1, 30), "sigma=12", gauss_taps(12.0)),
                 ((30, 1), "sigma=12", gauss_taps(12.0))]
        for (h, w), args, taps in cases:
            x = nrng.uniform(0.5, 200.0, (h, w)).astype(np.float32)
            for mode in BORDERS:
                with self.subTest(shape=(h, w), stage=args, border=mode):
                    got = self.run_bands(x, "f32", "gaussian " + args, mode)
                    want = sep(x.astype(np.float64), taps, taps, mode, CVAL)
                    self.check_close(got, want, 200.0, False)

    def test_fft_on_folded_taps(self):
        """method=fft plans its blocks on the folded taps (rounding of its own: a looser bound)."""
        nrng = np.random.default_rng(5)
        x = nrng.uniform(0.5, 200.0, (40, 50)).astype(np.float32)
        taps = gauss_taps(30.0, 300)
        for mode in BORDERS:
            with self.subTest(border=mode):
                got = self.run_bands(x, "f32", "gaussian sigma=30 radius=300 method=fft", mode)
                want = sep(x.astype(np.float64), taps, taps, mode, CVAL)
                self.check_close(got, want, 200.0 * 30, False)

    def test_stats_name_the_folded_window(self):
        """--stats names the window run: taps folded to the border's radius, a minimum's window
        clamped to the image along both axes."""
        x = np.ones((5, 11), np.float32)
        inp = self.write("in.raw", x)
        radii = {"reflect": (11, 5), "mirror": (10, 4), "nearest": (10, 4), "wrap": (5, 2),
                 "constant": (11, 5)}
        for mode, (rx, ry) in radii.items():
            for stage, text in [("gaussian sigma=25 radius=100000",
                                 "separable %dx%d taps (radius %d, %d)" % (2 * rx + 1,
                                                                           2 * ry + 1, rx, ry)),
                                ("minimum size=100001", "minimum 11x23,")]:
                with self.subTest(border=mode, stage=stage):
                    r = self.oocrun(inp, self.p("out.raw"), x, stage, "--border", mode,
                                    "--stats", "text")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn(text, r.stdout)

    def test_minimum_maximum_past_the_image(self):
        ops = {"minimum": ndi.minimum_filter, "maximum": ndi.maximum_filter,
               "opening": ndi.grey_opening, "closing": ndi.grey_closing}
        rng = random.Random(11)
        count = 0
        for h, w in SHAPES:
            for mode in BORDERS:
                t = rng.choice(["u8", "i16", "f32", "f64"])
                op = rng.choice(list(ops))
                x = self.image(h, w, 1, t, seed=count)
                count += 1
                hh = rng.choice([h + 1, 2 * h + 2, 2 * h + 3, 3 * h + 4])
                ww = rng.choice([w + 1, 2 * w + 2, 2 * w + 3, 3 * w + 4])
                for size in ["%dx%d" % (hh, ww), "%dx%d" % (hh, 1), "%dx%d" % (1, ww),
                             "100001"]:
                    hw = [int(v) for v in size.split("x")] * (1 if "x" in size else 2)
                    with self.subTest(shape=(h, w), type=t, op=op, size=size, border=mode):
                        got = self.run_bands(x, t, "%s size=%s" % (op, size), mode, cval=7)
                        want = ops[op](x, size=tuple(hw), mode=mode, cval=7)
                        np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    sys.exit(main())
