#!/usr/bin/env python3
"""A volume's CPU bands walked in slabs (BandPlan::slab_planes: a band's rows in each plane of a
slab in turn, the slab's output written after its last band, or band by band to a sink that takes
rows in any order: raw, .npy, null:) give the bytes of the plane after plane walk: every 3-D stage
whose window has 7 planes or more, every border, 1 and 3 channels, fused with 2-D and smaller 3-D
stages, over band heights, slab sizes (set by --mem-limit where the slab is gathered), slots,
threads, parts and outputs (.npy, raw, multi-page TIFF, Zarr, null:), and a run stopped by SIGTERM
and resumed; the results also match scipy.ndimage in float64. --stats json says which walk ran.

Usage: test_volume_slabs.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np
from scipy import ndimage as ndi

import cli_args  # beside this file

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCRUN = os.path.join(BIN, "oocrun")
rng = np.random.default_rng(4747)
VOL = (rng.random((17, 29, 23)) * 200 - 50).astype(np.float32)  # (z, y, x)
VOL3 = (rng.random((11, 19, 13, 3)) * 1000).astype(np.uint16)  # (z, y, x, c)
BIG = (rng.random((12, 160, 256)) * 100).astype(np.float32)  # planes of 160 KiB


class VolumeSlabsCheck(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ooc_slabs_")
        np.save(self.p("v.npy"), VOL)
        np.save(self.p("v3.npy"), VOL3)
        np.save(self.p("big.npy"), BIG)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.dir, name)

    def oocrun(self, src, out, pipeline, *extra, plan=False):
        """Runs oocrun; returns the plan's slab_planes (from --stats json), or the whole plan."""
        if os.path.exists(out):
            shutil.rmtree(out) if os.path.isdir(out) else os.remove(out)
        r = subprocess.run([OOCRUN, self.p(src), out, pipeline, "-q", "--stats", "json", *extra],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, f"{pipeline} {extra}: {r.stderr}")
        got = json.loads(r.stdout)["plan"]
        return got if plan else got["slab_planes"]

    def npy(self, src, pipeline, *extra):
        out = self.p("o.npy")
        slabs = self.oocrun(src, out, pipeline, *extra)
        return np.load(out), slabs

    def tif(self, src, pipeline, *extra):
        """The same through a writer that takes rows in order: the slab is gathered."""
        import tifffile
        out = self.p("o.tif")
        slabs = self.oocrun(src, out, pipeline, *extra)
        return tifffile.imread(out), slabs

    def test_01_slabs_give_the_plane_walks_bytes(self):
        cases = [
            ("v.npy", "gaussian sigma=2", (2, 2, 2)),
            ("v.npy", "gaussian sigma=1,0.5,2", (1, 0.5, 2)),
            ("v.npy", "uniform size=7x3x5", None),
            ("v.npy", "maximum size=9x3x3", None),
            ("v.npy", "gaussian sigma=1.5 ! median size=3 ! gaussian sigma=0,1,1", None),
            ("v3.npy", "gaussian sigma=1 ! minimum size=7x1x1", None),
        ]
        for src, pipeline, sigma in cases:
            for border in ("reflect", "constant", "nearest", "mirror", "wrap"):
                b = ["--border", border, "--border-value", "7.5"]
                with self.subTest(src=src, pipeline=pipeline, border=border):
                    ref, slabs = self.npy(src, pipeline, *b)  # whole planes a band: no slabs
                    self.assertEqual(slabs, 0)
                    if sigma and border != "wrap":
                        want = ndi.gaussian_filter(VOL.astype(np.float64), sigma, truncate=3,
                                                   mode=border, cval=7.5)
                        err = np.max(np.abs(ref.astype(np.float64) - want))
                        self.assertLessEqual(err, 3e-5 * np.max(np.abs(want)))
                    for k, extra in enumerate((["--band-rows", "1"],
                                               ["--band-rows", "4", "--threads", "3"],
                                               ["--band-rows", "7", "--slots", "2", "--threads",
                                                "1"], ["--band-rows", "5", "--tile-cols", "8"])):
                        for write in (self.npy, self.tif) if k % 2 else (self.npy,):
                            got, slabs = write(src, pipeline, *b, *extra)
                            self.assertGreater(slabs, 1, extra)
                            self.assertEqual(got.reshape(ref.shape).tobytes(), ref.tobytes(),
                                             (write.__name__, extra))

    def test_02_slab_sizes_slots_parts_and_outputs(self):
        pipe = "gaussian sigma=2"
        ref, slabs = self.npy("big.npy", pipe, "--border", "mirror")
        self.assertEqual(slabs, 0)
        seen, directs = set(), []
        # The memory limit sets a gathered slab's planes (two buffers of them beside the ring);
        # a sink that takes rows in any order needs no buffers: its slabs are every plane here
        # (up to 8 windows), under the same limits, in less memory.
        for mem in ("4M", "6M", "9M", "64M"):  # on 2 threads: the slots count in the limit
            for extra in (["--band-rows", "16"], ["--band-rows", "33", "--slots", "6"]):
                extra = ["--border", "mirror", "--mem-limit", mem, "--threads", "2"] + extra
                got, slabs = self.tif("big.npy", pipe, *extra)
                seen.add(slabs)
                self.assertEqual(got.tobytes(), ref.tobytes(), (mem, extra))
                got, direct = self.npy("big.npy", pipe, *extra)
                self.assertIn(direct, (0, 12) if slabs < 2 else (12,), (mem, extra))
                directs.append(direct)
                self.assertEqual(got.tobytes(), ref.tobytes(), (mem, extra))
                if slabs > 1:
                    ring = lambda out: self.oocrun("big.npy", self.p(out), pipe, *extra,
                                                   plan=True)["ring_bytes"]
                    self.assertLess(ring("o.npy") + 2 * 160 * 1024 * slabs, ring("o.tif") + 1)
        self.assertTrue(len(seen - {0, 1}) >= 3, f"slab sizes tried: {sorted(seen)}")
        self.assertGreaterEqual(directs.count(12), 5, directs)
        self.assertEqual(self.oocrun("big.npy", "null:", pipe, "--band-rows", "16"), 12)
        # Parts of whole planes walk in slabs; parts cut inside a plane walk plane after plane.
        out = self.p("parts.raw")
        for rows in ("0:640", "640:1120", "1120:1920"):
            r = subprocess.run([OOCRUN, self.p("big.npy"), out, pipe, "-q", "--border", "mirror",
                                "--band-rows", "16", "--rows", rows], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([OOCRUN, "--finish", out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(np.fromfile(out, np.float32).tobytes(), ref.tobytes())
        # Every writer takes a slab's rows as it takes a band's.
        import tifffile
        self.oocrun("big.npy", self.p("o.tif"), pipe, "--border", "mirror", "--band-rows", "16")
        self.assertEqual(tifffile.imread(self.p("o.tif")).tobytes(), ref.tobytes())
        try:
            import zarr
        except ImportError:  # a GPU machine without zarr-python: CI has it
            return
        self.oocrun("big.npy", self.p("o.zarr"), pipe, "--border", "mirror", "--band-rows", "16",
                    "--chunk", "64")
        self.assertEqual(np.asarray(zarr.open(self.p("o.zarr"), mode="r")["0"]).tobytes(),
                         ref.tobytes())

    def test_03_stopped_mid_slab_then_resumed(self):
        src = self.p("tall.npy")
        np.save(src, (rng.random((64, 256, 512)) * 100).astype(np.float32))
        pipe = "gaussian sigma=3 ! gaussian sigma=3 ! gaussian sigma=3"
        out = self.p("r.raw")
        ref = self.p("ref.raw")
        r = subprocess.run([OOCRUN, src, ref, pipe, "-q", "--band-rows", "8"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        proc = subprocess.Popen([OOCRUN, src, out, pipe, "-q", "--band-rows", "8",
                                 "--threads", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        if proc.poll() is not None:
            self.skipTest("the run ended before the signal")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 75, err)
        self.assertFalse(os.path.exists(out))
        r = subprocess.run([OOCRUN, src, out, pipe, "-q", "--band-rows", "8", "--resume"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(ref, "rb") as a, open(out, "rb") as b:
            self.assertTrue(a.read() == b.read(), "resumed run differs")


if __name__ == "__main__":
    unittest.main(argv=[__file__] + _REST)
