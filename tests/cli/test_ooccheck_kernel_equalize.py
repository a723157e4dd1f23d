#!/usr/bin/env python3
"""ooccheck's --kernel and --equalize references judged by scipy.ndimage.convolve and
cv2.equalizeHist: the outside references' results accepted, one changed sample refused (D in
ops_support.py).
Usage: test_ooccheck_kernel_equalize.py --bin-dir DIR [unittest options, e.g. -v or a test name]"""

import os
import sys
import unittest

import numpy as np

from ops_support import (BORDERS, LAPLACE, OpsCase, SOBEL_X, cv2, cv2_eq, eq_reference, gaussian2d,
    main, random_data, run, scipy_ref)


class OoccheckTest(OpsCase):
    def ooccheck(self, out, src, x, in_t, extra, expect):
        h, w, c = x.shape
        rc, so, se = run(["ooccheck", out, src, "--width", w, "--type", in_t, "--channels", c]
                         + list(extra), expect=expect)
        self.assertEqual(rc, expect, f"{extra}: {so[-800:]}{se.strip()}")

    def test_kernel_reference_accepts_scipy(self):
        """--kernel: scipy.ndimage.convolve in float64 (OUT f64, so oocconv would sum in f64 and
        the tolerance is tight) passes; one sample off by 1e-9 relative fails."""
        rng = np.random.default_rng(61)
        k57 = rng.uniform(-1, 1, (5, 7))
        kf = self.write_kernel(k57)
        kernels = [(kf, k57), ("laplace", LAPLACE), ("sobel-x", SOBEL_X),
                   ("gaussian2d:1.5", gaussian2d(1.5)), ("box:3", np.full((3, 3), 1 / 9))]
        for i, (in_t, ch) in enumerate((("f32", 1), ("u8", 3), ("u16", 2))):
            x = random_data(rng, in_t, (37, 29, ch))
            src = self.write_raw(x)
            for j, (kern, k) in enumerate(kernels):
                border = BORDERS[(i + j) % len(BORDERS)]
                what = f"{in_t} C={ch} {os.path.basename(kern)} {border}"
                with self.subTest(what):
                    ref = scipy_ref(x, k, border, 2.5)
                    out = self.fresh(".npy")
                    np.save(out, ref)
                    opts = ["--kernel", kern, "--border", border, "--border-value", 2.5]
                    self.ooccheck(out, src, x, in_t, opts, 0)
                    ref[17, 11, ch - 1] *= 1 + 1e-9
                    np.save(out, ref)
                    self.ooccheck(out, src, x, in_t, opts, 1)

    def test_kernel_reference_reads_every_real_dtype(self):
        """ooccheck's own .npy reader takes the kernels oocconv takes (every real dtype, either
        byte order, C or Fortran order): scipy's result passes, one sample off fails."""
        rng = np.random.default_rng(62)
        x = random_data(rng, "f32", (23, 19, 1))
        src = self.write_raw(x)
        for i, dt in enumerate(["?", "i1", "u1", ">i2", "<u2", "<i4", ">u4", "<i8", ">u8", "<f2",
                                ">f4", "<f8"]):
            d = np.dtype(dt)
            k = (rng.integers(0, 2, (3, 5)) if d.kind == "b" else
                 rng.integers(-50 if d.kind == "i" else 0, 50, (3, 5)) if d.kind in "iu" else
                 rng.uniform(-1, 1, (3, 5))).astype(d)
            kf = self.fresh(".npy")
            np.save(kf, np.asfortranarray(k) if i % 2 else k)
            with self.subTest(d.str):
                ref = scipy_ref(x, k.astype(np.float64), "reflect")
                out = self.fresh(".npy")
                np.save(out, ref)
                self.ooccheck(out, src, x, "f32", ["--kernel", kf], 0)
                ref[11, 7, 0] += 1e-6 * (1 + abs(ref[11, 7, 0]))
                np.save(out, ref)
                self.ooccheck(out, src, x, "f32", ["--kernel", kf], 1)

    @unittest.skipIf(cv2 is None, "this python has no cv2 (python3-opencv)")
    def test_equalize_reference_accepts_cv2(self):
        """--equalize: cv2.equalizeHist's output (u8, 1 and 3 channels) and the u16 float32
        transcription pass, also with --sample; one sample changed fails."""
        rng = np.random.default_rng(62)
        for dt, in_t, c, lo, hi in ((np.uint8, "u8", 1, 40, 90), (np.uint8, "u8", 3, 0, 256),
                                    (np.uint16, "u16", 1, 1000, 1400),
                                    (np.uint16, "u16", 3, 0, 65536)):
            x = rng.integers(lo, hi, (150, 41, c)).astype(dt)
            if dt == np.uint8:
                expect = cv2_eq(x)
            else:
                expect = np.stack([eq_reference(x[:, :, i], 65536) for i in range(c)], axis=2)
            with self.subTest(f"{in_t} C={c} values {lo}..{hi - 1}"):
                src, out = self.write_raw(x), self.fresh()
                expect.tofile(out)
                self.ooccheck(out, src, x, in_t, ["--equalize"], 0)
                self.ooccheck(out, src, x, in_t, ["--equalize", "--sample", 1], 0)
                expect[70, 9, c - 1] ^= 1
                expect.tofile(out)
                self.ooccheck(out, src, x, in_t, ["--equalize"], 1)


if __name__ == "__main__":
    sys.exit(main())
