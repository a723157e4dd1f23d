#!/usr/bin/env python3
"""Per-axis stage parameters as scipy.ndimage spells them: gaussian sigma=Sy,Sx (an image) and
sigma=Sz,Sy,Sx (a volume) against gaussian_filter's sigma tuple, size=DxHxW for uniform and the box
stages against scipy's size tuple, each the same bytes as the older spellings (sigmas=, size-z=),
and the wrong forms (a list of the wrong length, a zero side, DxHxW with size-z or on an image)
exit 2 and write nothing.

Usage: test_volume_params.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
from scipy import ndimage as ndi

import cli_args  # beside this file

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCRUN = os.path.join(BIN, "oocrun")
rng = np.random.default_rng(4646)
VOL = (rng.random((9, 23, 31)) * 100).astype(np.float32)  # (z, y, x)
IMG = (rng.random((27, 35)) * 100).astype(np.float32)


class VolumeParamsCheck(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ooc_volparams_")
        np.save(self.p("v.npy"), VOL)
        np.save(self.p("i.npy"), IMG)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.dir, name)

    def run_npy(self, src, pipeline, *extra):
        out = self.p("out.npy")
        if os.path.exists(out):
            os.remove(out)
        r = subprocess.run([OOCRUN, self.p(src), out, pipeline, "-q", *extra],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, f"{pipeline}: {r.stderr}")
        return np.load(out)

    def close(self, got, want, what):
        # f32 sums against a float64 reference: within 3e-5 of the values' scale.
        self.assertEqual(got.shape, want.shape, what)
        err = np.max(np.abs(got.astype(np.float64) - want))
        self.assertLessEqual(err, 3e-5 * np.max(np.abs(want)), what)

    def test_01_gaussian_sigma_per_axis_matches_scipy(self):
        got = self.run_npy("v.npy", "gaussian sigma=1,2,1.5")
        self.close(got, ndi.gaussian_filter(VOL.astype(np.float64), (1, 2, 1.5), truncate=3),
                   "volume sigma=1,2,1.5")
        # sigmas= is the same tuple under its earlier name; one sigma is every axis's.
        self.assertEqual(got.tobytes(), self.run_npy("v.npy", "gaussian sigmas=1,2,1.5").tobytes())
        self.assertEqual(self.run_npy("v.npy", "gaussian sigma=2").tobytes(),
                         self.run_npy("v.npy", "gaussian sigma=2,2,2").tobytes())
        got = self.run_npy("i.npy", "gaussian sigma=2,1")
        self.close(got, ndi.gaussian_filter(IMG.astype(np.float64), (2, 1), truncate=3),
                   "image sigma=2,1")
        # --planes: each plane in 2-D with the y and x sigmas.
        got = self.run_npy("v.npy", "gaussian sigma=2,1", "--planes")
        self.close(got, ndi.gaussian_filter(VOL.astype(np.float64), (0, 2, 1), truncate=3),
                   "planes sigma=2,1")

    def test_02_sizes_per_axis_match_scipy(self):
        got = self.run_npy("v.npy", "uniform size=3x5x3")
        self.close(got, ndi.uniform_filter(VOL.astype(np.float64), (3, 5, 3)), "uniform 3x5x3")
        self.assertEqual(got.tobytes(),
                         self.run_npy("v.npy", "uniform size=5x3 size-z=3").tobytes())
        got = self.run_npy("i.npy", "uniform size=5x3")
        self.close(got, ndi.uniform_filter(IMG.astype(np.float64), (5, 3)), "uniform 5x3")
        # Even sides as scipy places them (size // 2 samples before the output sample), every
        # border: a volume's (and size-z's), an image's, and a side of 2.
        for border in ("reflect", "mirror", "nearest", "wrap", "constant"):
            b = ["--border", border, "--border-value", "3"]
            got = self.run_npy("v.npy", "uniform size=4x2x5", *b)
            want = ndi.uniform_filter(VOL.astype(np.float64), (4, 2, 5), mode=border, cval=3)
            self.close(got, want, "uniform 4x2x5 " + border)
            self.assertEqual(got.tobytes(),
                             self.run_npy("v.npy", "uniform size=2x5 size-z=4", *b).tobytes())
            got = self.run_npy("i.npy", "uniform size=6x2", *b)
            want = ndi.uniform_filter(IMG.astype(np.float64), (6, 2), mode=border, cval=3)
            self.close(got, want, "uniform 6x2 " + border)
            got = self.run_npy("i.npy", "uniform size=4", *b)
            want = ndi.uniform_filter(IMG.astype(np.float64), 4, mode=border, cval=3)
            self.close(got, want, "uniform 4 " + border)
        got = self.run_npy("v.npy", "median size=3x2x4")
        self.assertTrue(np.array_equal(got, ndi.median_filter(VOL, size=(3, 2, 4))))
        self.assertEqual(got.tobytes(),
                         self.run_npy("v.npy", "median size=2x4 size-z=3").tobytes())
        got = self.run_npy("v.npy", "maximum size=2x3x3")
        self.assertTrue(np.array_equal(got, ndi.maximum_filter(VOL, size=(2, 3, 3))))
        got = self.run_npy("v.npy", "opening size=3x2x3")
        self.assertTrue(np.array_equal(got, ndi.grey_opening(VOL, size=(3, 2, 3))))

    def test_03_wrong_forms_exit_2_and_write_nothing(self):
        cases = [
            ("v.npy", "gaussian sigma=1,2", ["stage 1 (gaussian)", "one value or 3"]),
            ("v.npy", "gaussian sigma=1,2,3,4", ["stage 1 (gaussian)", "one value or 3"]),
            ("i.npy", "gaussian sigma=1,2,3", ["stage 1 (gaussian)", "one value or 2"]),
            ("v.npy", "gaussian sigma=1,-2,3", ["stage 1 (gaussian): sigma must be"]),
            ("v.npy", "gaussian sigma=1,2,3 sigma-z=2", ["sigma-z goes with one sigma"]),
            ("v.npy", "minimum size=0x3x3", ["stage 1 (minimum): size must be"]),
            ("v.npy", "uniform size=0x3x3", ["stage 1 (uniform): size must be"]),
            ("v.npy", "uniform size=3x3x3 size-z=3", ["give size=DxHxW or size-z, not both"]),
            ("v.npy", "median size=3x3x3 size-z=3", ["give size=DxHxW or size-z, not both"]),
            ("i.npy", "uniform size=3x3x3", ["a 2-D image", "takes size=N or HxW"]),
            ("i.npy", "maximum size=3x3x3", ["a 2-D image", "takes size=N or HxW"]),
            ("i.npy", "rank size=3x3x3 index=2", ["a 2-D image", "takes size=N or HxW"]),
        ]
        out = self.p("refused.npy")
        for src, pipeline, words in cases:
            r = subprocess.run([OOCRUN, self.p(src), out, pipeline, "-q"], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 2, f"{pipeline}: {r.stderr}")
            for w in words:
                self.assertIn(w, r.stderr, pipeline)
            self.assertFalse(os.path.exists(out) or os.path.exists(out + ".partial"), pipeline)


if __name__ == "__main__":
    unittest.main(argv=[__file__] + _REST)
