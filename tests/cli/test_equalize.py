#!/usr/bin/env python3
"""Histogram equalization (`ooceq`) against cv2.equalizeHist (u8) and a float32
transcription of its formula (u16): channels, constant images, band heights, --mem-limit,
--histogram, --stats json, other types refused (B in ops_support.py).
Usage: test_equalize.py --bin-dir DIR [unittest options, e.g. -v or a test name]"""

import json
import os
import sys
import unittest

import numpy as np

from ops_support import OpsCase, cv2, cv2_eq, eq_reference, main, run


@unittest.skipIf(cv2 is None, "this python has no cv2 (python3-opencv)")
class EqualizeTest(OpsCase):
    def test_u8_single_channel_matches_cv2(self):
        """u8, one channel, low-contrast and wide random images: cv2.equalizeHist exactly."""
        rng = np.random.default_rng(31)
        for (h, w), lo, hi in (((37, 53), 100, 131), ((64, 64), 0, 256), ((1, 7), 3, 9),
                               ((101, 33), 250, 256), ((50, 77), 0, 4)):
            x = rng.integers(lo, hi, (h, w, 1)).astype(np.uint8)
            for fmt in ("raw", "npy"):
                with self.subTest(f"{h}x{w} values {lo}..{hi - 1} {fmt}"):
                    got, _ = self.eq(x, fmt=fmt)
                    self.assert_same(got, cv2_eq(x), f"{h}x{w} {fmt}")

    def test_u8_multichannel_each_channel_cv2(self):
        """u8 with 2-4 channels: each channel is cv2.equalizeHist of that channel."""
        rng = np.random.default_rng(32)
        for c in (2, 3, 4):
            # a different low-contrast range per channel
            x = np.stack([rng.integers(20 * i, 20 * i + 17 + 9 * i, (29, 45))
                          for i in range(c)], axis=2).astype(np.uint8)
            for fmt in ("raw", "npy"):
                with self.subTest(f"C={c} {fmt}"):
                    got, _ = self.eq(x, fmt=fmt)
                    self.assert_same(got, cv2_eq(x), f"C={c} {fmt}")

    def test_u8_reference_formula_agrees_with_cv2(self):
        """Sanity of the numpy reference used for u16: with 256 bins it equals cv2."""
        rng = np.random.default_rng(33)
        for lo, hi in ((100, 140), (0, 256), (7, 9)):
            x = rng.integers(lo, hi, (40, 41)).astype(np.uint8)
            self.assert_same(eq_reference(x, 256), cv2.equalizeHist(x), f"{lo}..{hi}")

    def test_u16_matches_reference(self):
        """u16, 1-4 channels, raw and .npy: the float32 transcription of equalizeHist over 65536
        bins."""
        rng = np.random.default_rng(34)
        for c in (1, 2, 3, 4):
            for (lo, hi) in ((1000, 1300), (0, 65536), (40000, 40003)):
                x = np.stack([rng.integers(lo, hi, (33, 47)) for _ in range(c)],
                             axis=2).astype(np.uint16)
                expect = np.stack([eq_reference(x[:, :, i], 65536) for i in range(c)], axis=2)
                for fmt in ("raw", "npy"):
                    with self.subTest(f"C={c} {lo}..{hi - 1} {fmt}"):
                        got, _ = self.eq(x, fmt=fmt)
                        self.assert_same(got, expect, f"u16 C={c} {fmt}")

    def test_constant_image_unchanged(self):
        """A channel of one value comes back unchanged (u8 and u16, one and several channels)."""
        for dt, vals in ((np.uint8, (0, 77, 255, 13)), (np.uint16, (0, 40000, 65535, 9))):
            for c in (1, 3):
                x = np.empty((17, 23, c), dt)
                for i in range(c):
                    x[:, :, i] = vals[i]
                with self.subTest(f"{np.dtype(dt).name} C={c}"):
                    got, _ = self.eq(x)
                    self.assert_same(got, x, "constant")
        # one constant channel beside a varying one
        rng = np.random.default_rng(35)
        x = np.stack([np.full((20, 20), 200), rng.integers(0, 50, (20, 20))],
                     axis=2).astype(np.uint8)
        got, _ = self.eq(x)
        self.assert_same(got, cv2_eq(x), "constant beside varying")

    def test_every_value_present(self):
        """An image holding every u8 value (and one holding every u16 value)."""
        rng = np.random.default_rng(36)
        x = np.concatenate([np.arange(256), rng.integers(0, 256, 39 * 57 - 256)])
        x = rng.permutation(x).reshape(39, 57, 1).astype(np.uint8)
        got, _ = self.eq(x)
        self.assert_same(got, cv2_eq(x), "every u8 value")
        y = np.concatenate([np.arange(65536), rng.integers(30000, 31000, 256 * 300 - 65536)])
        y = rng.permutation(y).reshape(256, 300, 1).astype(np.uint16)
        got, _ = self.eq(y, ["--band-rows", 7])
        self.assert_same(got, eq_reference(y[:, :, 0], 65536)[:, :, None], "every u16 value")

    def test_band_heights_identical(self):
        """--band-rows 1, 7 and planned give identical files (and match the reference)."""
        rng = np.random.default_rng(37)
        for dt, c in ((np.uint8, 1), (np.uint8, 3), (np.uint16, 2)):
            hi = 256 if dt == np.uint8 else 5000
            x = rng.integers(0, hi, (61, 43, c)).astype(dt)
            outs = {}
            for br in (1, 7, None):
                got, _ = self.eq(x, ["--band-rows", br] if br else [])
                outs[br] = got.tobytes()
            what = f"{np.dtype(dt).name} C={c}"
            self.assertEqual(outs[1], outs[None], what)
            self.assertEqual(outs[7], outs[None], what)
            if dt == np.uint8:
                self.assert_same(np.frombuffer(outs[None], dt).reshape(x.shape), cv2_eq(x), what)

    def test_image_larger_than_mem_limit(self):
        """4096 x 4096 u8 (16 MiB) with --mem-limit 4M: succeeds and equals cv2."""
        rng = np.random.default_rng(38)
        x = rng.integers(60, 190, (4096, 4096, 1)).astype(np.uint8)
        x[:1000] //= 2  # not uniform
        got, so = self.eq(x, ["--mem-limit", "4M", "--stats", "json"])
        self.assert_same(got, cv2_eq(x), "4096x4096 under 4M")
        plan = json.loads(so)["plan"]
        self.assertGreater(plan["bands"], 1, f"one band under --mem-limit 4M: {plan}")

    def test_histogram_csv(self):
        """--histogram h.csv: header value,channel0,..., one row per bin, counts = bincount."""
        rng = np.random.default_rng(39)
        for dt, bins, c in ((np.uint8, 256, 1), (np.uint8, 256, 3), (np.uint16, 65536, 2)):
            x = rng.integers(0, 3000 if bins > 256 else 256, (31, 29, c)).astype(dt)
            hp = self.fresh(".csv")
            with self.subTest(f"{np.dtype(dt).name} C={c}"):
                self.eq(x, ["--histogram", hp])
                with open(hp) as f:
                    lines = f.read().splitlines()
                self.assertEqual(lines[0].strip(),
                                 "value," + ",".join(f"channel{i}" for i in range(c)))
                rows = [ln for ln in lines[1:] if ln.strip()]
                self.assertEqual(len(rows), bins, "one row per bin")
                table = np.array([[int(v) for v in ln.split(",")] for ln in rows], np.int64)
                np.testing.assert_array_equal(table[:, 0], np.arange(bins))
                for i in range(c):
                    np.testing.assert_array_equal(
                        table[:, 1 + i], np.bincount(x[:, :, i].ravel(), minlength=bins))

    def test_histogram_npy(self):
        """--histogram h.npy: uint64 array of shape (channels, bins) equal to bincount."""
        rng = np.random.default_rng(40)
        for dt, bins, c in ((np.uint8, 256, 1), (np.uint8, 256, 4), (np.uint16, 65536, 3)):
            x = rng.integers(0, 256 if bins == 256 else 65536, (27, 35, c)).astype(dt)
            hp = self.fresh(".npy")
            with self.subTest(f"{np.dtype(dt).name} C={c}"):
                self.eq(x, ["--histogram", hp])
                hist = np.load(hp)
                self.assertEqual(hist.dtype, np.uint64)
                self.assertEqual(hist.shape, (c, bins))
                for i in range(c):
                    np.testing.assert_array_equal(
                        hist[i], np.bincount(x[:, :, i].ravel(), minlength=bins))

    def test_stats_json(self):
        """--stats json: "histogram" with per-channel min, max, distinct_values, samples, and
        "passes"."""
        rng = np.random.default_rng(41)
        for dt, c in ((np.uint8, 3), (np.uint16, 1)):
            x = rng.integers(10, 200 if dt == np.uint8 else 9000, (23, 19, c)).astype(dt)
            x[0, 0, 0] = 3
            with self.subTest(np.dtype(dt).name):
                _, so = self.eq(x, ["--stats", "json"])
                st = json.loads(so)
                self.assertIn("passes", st)
                chans = st["histogram"]["channels"]
                self.assertEqual(len(chans), c)
                for i, ch in enumerate(chans):
                    v = x[:, :, i]
                    self.assertEqual(ch["min"], int(v.min()))
                    self.assertEqual(ch["max"], int(v.max()))
                    self.assertEqual(ch["distinct_values"], len(np.unique(v)))
                    self.assertEqual(ch["samples"], v.size)

    def test_refuses_other_types(self):
        """f32 or i16 input (raw or .npy): exit 2, a message naming u8 / u16, no output."""
        rng = np.random.default_rng(42)
        xf = rng.uniform(0, 1, (8, 9, 1)).astype(np.float32)
        xi = rng.integers(-5, 5, (8, 9, 1)).astype(np.int16)
        for what, x, fmt in (("f32 raw", xf, "raw"), ("f32 npy", xf, "npy"),
                             ("i16 npy", xi, "npy")):
            with self.subTest(what):
                _, err = self.eq(x, fmt=fmt, expect=2)
                self.assertIn("u8", err)
                self.assertIn("u16", err)
        with self.subTest("i16 raw"):
            src = self.write_raw(xi)
            out = self.path("i16_out.raw")
            rc, _, err = run(["ooceq", src, out, "--width", 9, "--type", "i16"], expect=2)
            self.assertEqual(rc, 2)
            self.assertIn("u8", err)
            self.assertIn("u16", err)
            self.assertFalse(os.path.exists(out))
            self.assertFalse(os.path.exists(out + ".partial"))


if __name__ == "__main__":
    sys.exit(main())
