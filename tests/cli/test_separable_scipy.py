#!/usr/bin/env python3
"""Compares oocconv with scipy.ndimage, computed independently in float64.

Explicit non-symmetric taps of different lengths along x and y, every border mode, sample types
f32 f64 u8 u16 i16, 1 to 4 channels, a 37 x 23 image and a 5 x 3 one whose filter radius exceeds
it, band heights that do not divide the height; and the Gaussian of --radius 4 (sigma 4/3).
With --precision f64 --out-type f64 the largest relative error must stay under 1e-9 (per sample,
relative to |scipy| floored at 1e-6 of the image's largest |scipy|); f32 runs at default precision
must stay within 1e-6 of the image's largest value.

Usage: test_separable_scipy.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)
A failing test names every failing case with the command to reproduce it.
"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
from scipy import ndimage

import cli_args  # beside this file
import cli_cases

BIN, _REST = cli_args.bin_dir_and_rest(__name__)

TYPES = {"f32": np.float32, "f64": np.float64, "u8": np.uint8, "u16": np.uint16, "i16": np.int16}
BORDERS = ["reflect", "mirror", "nearest", "wrap", "constant"]
CVAL = 2.5
F64_TOL = 1e-9


def random_image(rng, h, w, c, dtype):
    """A random image with no zero sample, shape (H, W, C)."""
    shape = (h, w, c)
    if np.issubdtype(dtype, np.floating):
        img = rng.uniform(-100.0, 100.0, shape)
        img[np.abs(img) < 1e-3] = 1.0
    else:
        info = np.iinfo(dtype)
        img = rng.integers(max(info.min, -30000), info.max, shape, endpoint=True)
        img[img == 0] = 1
    return img.astype(dtype)


def rel_error(got, ref):
    """Largest |got - ref| relative to |ref| (floored at 1e-6 of the image's largest |ref|)."""
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    denom = np.maximum(np.abs(ref), max(scale * 1e-6, 1e-300))
    err = np.abs(got - ref) / denom
    i = int(np.argmax(err))
    return float(err.flat[i]), np.unravel_index(i, ref.shape)


def norm_error(got, ref):
    """Largest |got - ref| relative to the image's largest |ref| (for f32 rounding)."""
    scale = max(float(np.max(np.abs(ref))), 1e-300)
    err = np.abs(got - ref) / scale
    i = int(np.argmax(err))
    return float(err.flat[i]), np.unravel_index(i, ref.shape)


def fmt_taps(taps):
    return ",".join("%.17g" % t for t in taps)


class Checker:
    def __init__(self, oocconv, workdir):
        self.oocconv = oocconv
        self.workdir = workdir
        self.n = 0

    def run(self, img, args, out_dtype=np.float64):
        """Writes img (H, W, C) raw, runs oocconv with args, returns the output as (H, W, C)."""
        h, w, c = img.shape
        self.n += 1
        src = os.path.join(self.workdir, "in%d.raw" % self.n)
        dst = os.path.join(self.workdir, "out%d.raw" % self.n)
        img.tofile(src)
        type_name = next(k for k, v in TYPES.items() if np.dtype(v) == img.dtype)
        cmd = [self.oocconv, src, dst, "--width", str(w), "--type", type_name,
               "--channels", str(c), "--quiet"] + args
        proc = subprocess.run(cmd, capture_output=True, text=True)
        shown = " ".join(cmd)
        if proc.returncode != 0:
            os.remove(src)
            return None, shown, "exit %d: %s" % (proc.returncode, proc.stderr.strip())
        out = np.fromfile(dst, dtype=out_dtype)
        os.remove(src)
        os.remove(dst)
        if out.size != h * w * c:
            return None, shown, "output has %d samples, expected %d" % (out.size, h * w * c)
        return out.reshape(h, w, c), shown, None

    def check(self, name, img, args, ref, tol, out_dtype=np.float64, metric=rel_error):
        got, cmd, err = self.run(img, args, out_dtype)
        if err is None:
            e, where = metric(got.astype(np.float64), ref)
            if not e < tol:
                err = "relative error %.3g >= %.3g at (y, x, c) = %s: oocconv %.17g, scipy %.17g" % (
                    e, tol, tuple(int(i) for i in where), got[where], ref[where])
        cli_cases.report(name, [err, err and cmd])
        return got


def scipy_separable(img, row_taps, col_taps, mode):
    x = img.astype(np.float64)
    x = ndimage.convolve1d(x, row_taps, axis=1, mode=mode, cval=CVAL)
    return ndimage.convolve1d(x, col_taps, axis=0, mode=mode, cval=CVAL)


# One generator for the whole check, drawn in the tests' (numbered) order: cli_cases.py.
rng = np.random.default_rng(20240607)
# (width, height, row taps, col taps, extra band heights that do not divide the height)
GEOMETRIES = [(37, 23, 3, 5, [5]), (5, 3, 19, 15, [2]), (1, 1, 5, 3, []), (2, 40, 9, 7, [3])]


class ScipyCheck(unittest.TestCase):
    def setUp(self):
        work = tempfile.TemporaryDirectory(prefix="ooc_scipy_")
        self.addCleanup(work.cleanup)
        self.ck = Checker(os.path.join(BIN, "oocconv"), work.name)

    def separable(self, w, h, nr, nc, band_rows):
        """Explicit taps over every type, 1 to 4 channels and border; band heights."""
        ck = self.ck
        with cli_cases.cases(self, verbose=False):
            row_taps = rng.uniform(-1.0, 2.0, nr)
            col_taps = rng.uniform(-1.0, 2.0, nc)
            taps_args = ["--row-taps=" + fmt_taps(row_taps), "--col-taps=" + fmt_taps(col_taps)]
            for type_name, dtype in TYPES.items():
                for c in range(1, 5):
                    img = random_image(rng, h, w, c, dtype)
                    for mode in BORDERS:
                        ref = scipy_separable(img, row_taps, col_taps, mode)
                        args = taps_args + ["--border", mode, "--border-value", str(CVAL),
                                            "--precision", "f64", "--out-type", "f64"]
                        name = "%dx%d %s c%d taps %d/%d border %s" % (w, h, type_name, c, nr, nc,
                                                                      mode)
                        ck.check(name, img, args, ref, F64_TOL)
                        for b in band_rows:
                            ck.check(name + " band-rows %d" % b, img,
                                     args + ["--band-rows", str(b), "--threads", "2"], ref,
                                     F64_TOL)

    # One test per geometry, numbered in the order they draw their data.
    def test_1_separable_37x23(self):
        self.separable(*GEOMETRIES[0])

    def test_2_separable_5x3_radius_past_the_image(self):
        self.separable(*GEOMETRIES[1])

    def test_3_separable_1x1(self):
        self.separable(*GEOMETRIES[2])

    def test_4_separable_2x40(self):
        self.separable(*GEOMETRIES[3])

    def gaussian(self, w, h):
        """The Gaussian of --radius 4: sigma 4/3, normalized, applied along x then y."""
        ck = self.ck
        r, sigma = 4, 4.0 / 3.0
        x = np.arange(-r, r + 1, dtype=np.float64)
        g = np.exp(-x * x / (2 * sigma * sigma))
        g /= g.sum()
        with cli_cases.cases(self, verbose=False):
            for c in (1, 3):
                for type_name in ("f64", "f32", "u16"):
                    img = random_image(rng, h, w, c, TYPES[type_name])
                    for mode in BORDERS:
                        y = ndimage.correlate1d(img.astype(np.float64), g, axis=1, mode=mode,
                                                cval=CVAL)
                        ref = ndimage.correlate1d(y, g, axis=0, mode=mode, cval=CVAL)
                        base = ["--radius", "4", "--border", mode, "--border-value", str(CVAL)]
                        name = "gaussian r4 %dx%d %s c%d border %s" % (w, h, type_name, c, mode)
                        ck.check(name + " f64", img,
                                 base + ["--precision", "f64", "--out-type", "f64"], ref, F64_TOL)
                        if type_name == "f32":
                            # Default precision, output in the input's type: f32 rounding, so
                            # the error is measured against the image's largest value.
                            ck.check(name + " f32", img, base, ref, 1e-6, out_dtype=np.float32,
                                     metric=norm_error)

    def test_5_gaussian_37x23(self):
        self.gaussian(37, 23)

    def test_6_gaussian_5x3(self):
        self.gaussian(5, 3)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
