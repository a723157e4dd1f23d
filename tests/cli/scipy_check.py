#!/usr/bin/env python3
"""Compares oocconv with scipy.ndimage, computed independently in float64.

Explicit non-symmetric taps of different lengths along x and y, every border mode, sample types
f32 f64 u8 u16 i16, 1 to 4 channels, a 37 x 23 image and a 5 x 3 one whose filter radius exceeds
it, band heights that do not divide the height; and the Gaussian of --radius 4 (sigma 4/3).
With --precision f64 --out-type f64 the largest relative error must stay under 1e-9 (per sample,
relative to |scipy| floored at 1e-6 of the image's largest |scipy|); f32 runs at default precision
must stay within 1e-6 of the image's largest value.

Usage: scipy_check.py --oocconv PATH/TO/oocconv [-v]
Exits 1 and prints every failing case (with the command to reproduce it) on a mismatch.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import ndimage

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
    def __init__(self, oocconv, workdir, verbose):
        self.oocconv = oocconv
        self.workdir = workdir
        self.verbose = verbose
        self.cases = 0
        self.failures = []
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
        self.cases += 1
        got, cmd, err = self.run(img, args, out_dtype)
        if err is None:
            e, where = metric(got.astype(np.float64), ref)
            if not e < tol:
                err = "relative error %.3g >= %.3g at (y, x, c) = %s: oocconv %.17g, scipy %.17g" % (
                    e, tol, tuple(int(i) for i in where), got[where], ref[where])
        if err is not None:
            self.failures.append("%s\n    %s\n    %s" % (name, err, cmd))
            print("FAIL " + name + ": " + err, flush=True)
        elif self.verbose:
            print("ok   " + name, flush=True)
        return got


def scipy_separable(img, row_taps, col_taps, mode):
    x = img.astype(np.float64)
    x = ndimage.convolve1d(x, row_taps, axis=1, mode=mode, cval=CVAL)
    return ndimage.convolve1d(x, col_taps, axis=0, mode=mode, cval=CVAL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oocconv", required=True)
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    rng = np.random.default_rng(20240607)

    with tempfile.TemporaryDirectory(prefix="ooc_scipy_") as workdir:
        ck = Checker(os.path.abspath(opts.oocconv), workdir, opts.verbose)

        # (width, height, row taps, col taps, extra band heights that do not divide the height)
        geometries = [(37, 23, 3, 5, [5]), (5, 3, 19, 15, [2]), (1, 1, 5, 3, []), (2, 40, 9, 7, [3])]
        for w, h, nr, nc, band_rows in geometries:
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

        # Gaussian of --radius 4: sigma 4/3, normalized, applied along x then y.
        r, sigma = 4, 4.0 / 3.0
        x = np.arange(-r, r + 1, dtype=np.float64)
        g = np.exp(-x * x / (2 * sigma * sigma))
        g /= g.sum()
        for w, h in [(37, 23), (5, 3)]:
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

        print("%d cases, %d passed, %d failed" % (ck.cases, ck.cases - len(ck.failures),
                                                 len(ck.failures)))
        if ck.failures:
            print("\nFailing cases:\n" + "\n".join(ck.failures))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
