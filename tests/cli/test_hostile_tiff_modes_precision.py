#!/usr/bin/env python3
"""Hostile TIFF layouts and names, output file modes (kept on overwrite, umask for new ones),
exact integer outputs and radii far beyond the image (hostile_support.py says what every hostile
check expects).
Usage: test_hostile_tiff_modes_precision.py --bin-dir DIR [unittest options]"""

import os
import stat
import sys

import numpy as np

import hostile_support
from hostile_support import (HostileBase, gaussian_taps, main, ndimage, random_image,
    scipy_separable, tifffile)

# The module's shared inputs: made in a folder before its tests, removed after them.
setUpModule = hostile_support.setUpModule
tearDownModule = hostile_support.tearDownModule


# =============================================================================================
# 18-20. TIFF layouts and names, file modes
# =============================================================================================

class TiffAndModes(HostileBase):
    def test_tiff_with_image_depth_refused(self):
        if tifffile is None:
            self.skipTest("this python has no tifffile")
        vol = random_image(3 * 64, 64).reshape(3, 64, 64)
        for tile in [(1, 16, 16), (3, 16, 16)]:
            with self.subTest(tile_depth=tile[0]):
                path = self.p("vol%d.tif" % tile[0])
                tifffile.imwrite(path, vol, tile=tile, volumetric=True, photometric="minisblack")
                self.assertEqual(tifffile.TiffFile(path).pages[0].imagedepth, 3)  # the writer
                r = self.oocconv(path, "o.raw", "--radius", "1", cwd=self.d, timeout=30)
                self.assertExit(r, 3)
                self.assertMentions(r, "depth")
                self.assertAbsent(self.p("o.raw"), r)

    def test_btf_and_tf8_outputs_are_bigtiff(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        opts = ["--width", "100", "--radius", "2"]
        plain = self.plain_run(a, "plain.raw", *opts)
        for ext in ["btf", "tf8"]:
            with self.subTest(ext=ext):
                out = self.p("o." + ext)
                r = self.oocconv(a, out, *opts)
                self.assertExit(r, 0)
                with open(out, "rb") as f:
                    head = f.read(4)
                self.assertIn(head, (b"II+\x00", b"MM\x00+"), "not BigTIFF: %r\n%s" % (head, r))
                if tifffile is not None:
                    got = tifffile.imread(out)
                    want = np.fromfile(plain, "<f4").reshape(50, 100)
                    np.testing.assert_array_equal(got, want)

    def test_overwrite_keeps_existing_mode(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        for mode in [0o600, 0o640]:
            with self.subTest(mode=oct(mode)):
                out = self.p("o.raw")
                with open(out, "wb") as f:
                    f.write(b"old")
                os.chmod(out, mode)
                r = self.oocconv(a, out, "--width", "100", "--radius", "2")
                self.assertExit(r, 0)
                self.assertEqual(oct(stat.S_IMODE(os.stat(out).st_mode)), oct(mode), str(r))
                self.assertEqual(os.path.getsize(out), 50 * 100 * 4)

    def test_new_output_mode_follows_umask(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        for umask in [0o022, 0o027, 0o002]:
            with self.subTest(umask=oct(umask)):
                out = self.p("new_%o.raw" % umask)
                r = self.oocconv(a, out, "--width", "100", "--radius", "2", umask=umask)
                self.assertExit(r, 0)
                self.assertEqual(oct(stat.S_IMODE(os.stat(out).st_mode)), oct(0o666 & ~umask))


# =============================================================================================
# 21-22. Precision, and radii far beyond the image
# =============================================================================================

class Precision(HostileBase):
    def setUp(self):
        if ndimage is None:
            self.skipTest("this python has no scipy")
        super().setUp()

    def test_f32_input_to_i32_output_is_exact_to_1(self):
        # Around 2e7 an f32 holds steps of 2: sums in f32 would be off by more than 1.
        a, img = self.raw_f32("a.raw", 64, 64, lo=1e7, hi=3e7)
        r = self.oocconv(a, "o.raw", "--width", "64", "--radius", "3", "--out-type", "i32",
                         cwd=self.d)
        self.assertExit(r, 0)
        got = np.fromfile(self.p("o.raw"), "<i4").reshape(64, 64).astype(np.float64)
        ref = np.round(scipy_separable(img, gaussian_taps(3)))
        self.assertLessEqual(np.abs(got - ref).max(), 1, str(r))

    def _timed(self, args, limit_s):
        r = self.oocconv(*args, cwd=self.d, timeout=3 * limit_s + 10)
        self.assertExit(r, 0)
        self.assertLess(r.secs, limit_s, "too slow:\n%s" % r)
        return r

    def test_radius_10000_on_100x50_is_fast_and_right(self):
        a, img = self.raw_f32("a.raw", 50, 100)
        self._timed([a, "o.raw", "--width", "100", "--radius", "10000"], 3)
        got = np.fromfile(self.p("o.raw"), "<f4").reshape(50, 100)
        ref = scipy_separable(img, gaussian_taps(10000))
        self.assertLessEqual(np.abs(got - ref).max(), 1e-4 * np.abs(ref).max())

    def test_radius_30000_on_100x50_is_fast(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        self._timed([a, "o.raw", "--width", "100", "--radius", "30000"], 6)

    def test_taps_file_of_100001_taps_is_fast(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        taps = np.random.default_rng(3).uniform(0.5, 1.5, 100001)
        taps /= taps.sum()
        with open(self.p("taps.txt"), "w") as f:
            f.write(",".join("%.9g" % t for t in taps) + "\n")
        self._timed([a, "o.raw", "--width", "100", "--taps-file", "taps.txt"], 10)

    def test_radius_5000_on_2000x50_is_fast(self):
        a, _ = self.raw_f32("a.raw", 50, 2000)
        self._timed([a, "o.raw", "--width", "2000", "--radius", "5000"], 3)


if __name__ == "__main__":
    sys.exit(main())
