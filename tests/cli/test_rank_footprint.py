#!/usr/bin/env python3
"""Rank and morphology filters with a footprint (issue 33), end to end through oocrun.

A. median, percentile, rank, minimum, maximum, opening, closing, white-tophat and black-tophat
   with footprint=FILE.npy exactly equal to scipy.ndimage's (median_filter, ..., black_tophat with
   `footprint`) over the 7 sample types, 1 and 3 channels, the five borders, footprints (disk,
   cross, ring, random, asymmetric, all ones, 1 x 1), images smaller than the footprint and band
   heights that do not divide the height; outputs poisoned first, data random and non-zero.
B. Footprint files in every form NumPy writes them: bool, u1, i4, big-endian i2, Fortran order.
C. NaN in a footprint's samples gives NaN (the rule of the rectangular windows), and a NaN
   outside the footprint's ones does not.
D. Bad footprints and bad stages (even side, a 2, float, 3-D, no 1, size and footprint together,
   neither): exit 2 with a message naming the stage and what is wrong, no output.
E. The selection networks (5 x 5 median of every type, 3 x 3 of floats, 3 x 3 and 5 x 5 of 8- and
   16-bit integers at every width 1..100 (u8) or 1..64 (16-bit), rectangles of up to 128 samples
   of floats and 32-bit integers for median, percentile and rank) exactly equal to scipy; NaN in a
   window gives NaN.
F. Floats and 32-bit integers beyond the networks (ranked histograms; on CUDA a radix select):
   rectangles of more than 128 samples and footprints of more than 48, median, percentile and
   rank, exactly equal to scipy;
   NaN gives NaN; windows reaching more than twice the image past its edge reflect as numpy.pad's
   "symmetric" does (scipy 1.10 does not repeat the reflection there).

Usage: test_rank_footprint.py --bin-dir DIR [unittest options]
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import scipy.ndimage as ndi

import cli_args  # beside this file

# --bin-dir DIR as a script (the other arguments go to unittest.main), $OOC_BIN_DIR under
# pytest (conftest.py).
BIN, _REST = cli_args.bin_dir_and_rest(__name__)
# OOC_CHECK_DEVICE=cuda runs the oocrun calls on the GPU (device_check.sh's rank step): the
# windows the CUDA kernels take must give scipy's values exactly, as the CPU's do. The footprints
# --device cuda refuses (rank filters of wide types beyond 49 ones or 15 a side) stay on the CPU.
DEVICE = os.environ.get("OOC_CHECK_DEVICE", "")
DEVICE_ARGS = ["--device", DEVICE, "--cpu-start", "off"] if DEVICE else []
NP = {"u8": np.uint8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "i32": np.int32,
      "f32": np.float32, "f64": np.float64}
BORDERS = ["reflect", "mirror", "nearest", "wrap", "constant"]


def cuda_footprint(stage, t, fp):
    """Whether the CUDA kernels take this stage with footprint fp on type t."""
    if stage.split()[0] not in RANK_STAGES:
        return True  # minimum, maximum and what is built on them: every type
    n, (h, w) = int(fp.sum()), fp.shape
    return (h <= 15 and w <= 15 and n <= 49) or (t in ("u8", "u16", "i16") and n <= 65535)


def disk(r):
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    return x * x + y * y <= r * r + r


def cross(r):
    f = np.zeros((2 * r + 1, 2 * r + 1), bool)
    f[r, :] = f[:, r] = True
    return f


def ring(r):
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    d = x * x + y * y
    return (d <= r * r) & (d >= (r - 1) * (r - 1))


def random_fp(h, w, seed):
    f = np.random.default_rng(seed).random((h, w)) < 0.45
    f[0, 0] = True  # never empty; the centre may be 0
    return f


FOOTPRINTS = {
    "disk2": disk(2), "disk4": disk(4), "cross2": cross(2), "ring3": ring(3),
    "random5x3": random_fp(5, 3, 1), "random3x7": random_fp(3, 7, 2),
    "random9x9": random_fp(9, 9, 3), "ones3x5": np.ones((3, 5), bool), "one": np.ones((1, 1), bool),
    "row1x5": np.array([[1, 0, 1, 1, 0]], bool),
}
RANK_STAGES = ("median", "percentile", "rank")
MORPH = {"minimum": ndi.minimum_filter, "maximum": ndi.maximum_filter,
         "opening": ndi.grey_opening, "closing": ndi.grey_closing,
         "white-tophat": ndi.white_tophat, "black-tophat": ndi.black_tophat}


def run(cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300)


class Base(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ooc-rank-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.d, name)

    def image(self, h, w, c, t, seed):
        rng = np.random.default_rng(seed)
        shape = (h, w) if c == 1 else (h, w, c)
        if t in ("f32", "f64"):
            x = rng.uniform(0.5, 200.0, shape)
        elif t == "u8":
            x = rng.integers(1, 256, shape)
        else:
            info = np.iinfo(NP[t])
            # Wide types spread over their range (the 16-bit histograms' two levels too).
            lo, hi = max(info.min, -40000), min(info.max, 40000)
            x = rng.integers(lo, hi + 1, shape)
            x[x == 0] = 1
        return x.astype(NP[t])

    def oocrun(self, x, pipeline, *extra, gpu=True):
        # gpu=False: a window without a CUDA version stays on the CPU under OOC_CHECK_DEVICE.
        inp = self.p("in.raw")
        x.tofile(inp)
        out = self.p("out.raw")
        with open(out, "wb") as f:  # poison: every sample must be written
            f.write(b"\x5a" * (x.nbytes))
        h, w = x.shape[:2]
        c = 1 if x.ndim == 2 else x.shape[2]
        t = [k for k, v in NP.items() if v == x.dtype.type][0]
        r = run([os.path.join(BIN, "oocrun"), inp, out, pipeline, "--width", w, "--type", t,
                 "--channels", c, "-q"] + list(extra) +
                (DEVICE_ARGS if gpu else []))
        self.assertEqual(r.returncode, 0, pipeline + ": " + r.stderr)
        return np.fromfile(out, x.dtype).reshape(x.shape)

    def save(self, name, f):
        path = self.p(name + ".npy")
        np.save(path, f)
        return path


def reference(stage, x, fp, mode, arg):
    f = fp if x.ndim == 2 else fp[:, :, None]
    kw = dict(footprint=f, mode=mode, cval=7)
    if stage == "median":
        return ndi.median_filter(x, **kw)
    if stage == "percentile":
        return ndi.percentile_filter(x, arg, **kw)
    if stage == "rank":
        return ndi.rank_filter(x, arg, **kw)
    return MORPH[stage](x, **kw)


class Footprints(Base):
    def test_against_scipy_exactly(self):
        rng = random.Random(33)
        count = 0
        for t in NP:
            for stage in (RANK_STAGES + tuple(MORPH)) * 2:
                name = rng.choice(sorted(FOOTPRINTS))
                fp = FOOTPRINTS[name]
                n = int(fp.sum())
                c = rng.choice([1, 1, 3])
                mode = rng.choice(BORDERS)
                # Now and then smaller than the footprint.
                h, w = rng.choice([(rng.randint(9, 40), rng.randint(9, 45)), (3, 4), (7, 2)])
                x = self.image(h, w, c, t, seed=count)
                count += 1
                arg, text = None, stage
                if stage == "percentile":
                    arg = rng.choice([-30, 10, 37.5, 90])
                    text += " q=%g" % arg
                elif stage == "rank":
                    arg = rng.choice([1, -2, n // 3]) if n > 2 else 0
                    text += " index=%d" % arg
                path = self.save(name, fp)
                with self.subTest(type=t, stage=text, footprint=name, border=mode,
                                  shape=x.shape):
                    got = self.oocrun(x, "%s footprint=%s" % (text, path), "--border", mode,
                                      "--border-value", 7, "--band-rows",
                                      rng.choice([1, 3, 8, 64]),
                                      gpu=cuda_footprint(stage, t, fp))
                    np.testing.assert_array_equal(got, reference(stage, x, fp, mode, arg))

    def test_histograms_and_runs_on_wider_images(self):
        # The 8/16-bit sliding histograms and the run decomposition over longer rows and every
        # border, with the tall footprints of the sweep's sizes.
        cases = [("u8", "median", "disk4"), ("u16", "median", "ring3"),
                 ("i16", "percentile", "random9x9"), ("u8", "rank", "cross2"),
                 ("u16", "minimum", "disk4"), ("f32", "maximum", "random9x9"),
                 ("i32", "median", "disk2"), ("f64", "percentile", "ring3")]
        for i, (t, stage, name) in enumerate(cases):
            fp = FOOTPRINTS[name]
            x = self.image(37, 131, 1, t, seed=500 + i)
            arg = {"percentile": 25, "rank": 3}.get(stage)
            text = stage + ("" if arg is None else (" q=%g" % arg if stage == "percentile"
                                                    else " index=%d" % arg))
            path = self.save(name, fp)
            for mode in BORDERS:
                with self.subTest(type=t, stage=text, footprint=name, border=mode):
                    got = self.oocrun(x, "%s footprint=%s" % (text, path), "--border", mode,
                                      "--border-value", 7, "--band-rows", 10,
                                      gpu=cuda_footprint(stage, t, fp))
                    np.testing.assert_array_equal(got, reference(stage, x, fp, mode, arg))

    def test_file_forms(self):
        fp = FOOTPRINTS["random5x3"]
        x = self.image(21, 17, 1, "u16", seed=9)
        want = ndi.median_filter(x, footprint=fp, mode="reflect")
        forms = {"bool": fp, "u1": fp.astype(np.uint8), "i4": fp.astype(np.int32),
                 "be-i2": fp.astype(">i2"), "fortran": np.asfortranarray(fp.astype(np.uint8))}
        for form, arr in forms.items():
            with self.subTest(form=form):
                path = self.save(form, arr)
                got = self.oocrun(x, "median footprint=%s" % path, "--band-rows", 6)
                np.testing.assert_array_equal(got, want)

    def test_in_a_pipeline(self):
        x = self.image(45, 39, 1, "u16", seed=4)
        path = self.save("disk", FOOTPRINTS["disk2"])
        got = self.oocrun(x, "median footprint=%s ! white-tophat footprint=%s" % (path, path),
                          "--band-rows", 7)
        m = ndi.median_filter(x, footprint=FOOTPRINTS["disk2"])
        np.testing.assert_array_equal(got, ndi.white_tophat(m, footprint=FOOTPRINTS["disk2"]))

    def test_nan_in_the_footprint_gives_nan(self):
        fp = FOOTPRINTS["cross2"]
        x = self.image(23, 19, 1, "f32", seed=8)
        x[[4, 11, 19], [7, 2, 15]] = np.nan
        path = self.save("cross", fp)
        nan = ndi.maximum_filter(np.isnan(x).astype(np.uint8), footprint=fp) > 0
        for stage in ("median", "minimum", "maximum", "percentile q=80"):
            with self.subTest(stage=stage):
                got = self.oocrun(x, "%s footprint=%s" % (stage, path), "--band-rows", 5)
                np.testing.assert_array_equal(np.isnan(got), nan)
                fill = {"minimum": np.inf, "maximum": -np.inf}.get(stage.split()[0], 0)
                name = stage.split()[0]
                clean = np.where(np.isnan(x), fill, x)
                want = reference(name, clean, fp, "reflect", 80 if name == "percentile" else None)
                np.testing.assert_array_equal(got[~nan], want[~nan])


class MedianNetworks(Base):
    # The selection networks: 5 x 5 of every type, 3 x 3 of floats (integers take sorted
    # columns), on vectors of adjacent columns: widths below, at and between multiples of a
    # vector, the scalar path under one vector's width; NaN in a window gives NaN.
    def sweep(self, size, types, widths, seed):
        rng = random.Random(seed)
        for i, t in enumerate(types):
            for w in widths:
                c = rng.choice([1, 3])
                mode = rng.choice(BORDERS)
                x = self.image(rng.randint(size, 23), w, c, t, seed=seed + 10 * i + w)
                full = (size, size) + ((1,) if c > 1 else ())
                with self.subTest(size=size, type=t, width=w, channels=c, border=mode):
                    got = self.oocrun(x, "median size=%d" % size, "--border", mode,
                                      "--border-value", 7, "--band-rows", rng.choice([1, 4, 64]))
                    np.testing.assert_array_equal(
                        got, ndi.median_filter(x, size=full, mode=mode, cval=7))

    def nan_case(self, size, seed):
        for t in ("f32", "f64"):
            x = self.image(19, 70, 1, t, seed=seed)
            x[[2, 9, 18], [0, 33, 69]] = np.nan
            nan = ndi.maximum_filter(np.isnan(x).astype(np.uint8), size=size) > 0
            with self.subTest(size=size, type=t):
                got = self.oocrun(x, "median size=%d" % size, "--band-rows", 6)
                np.testing.assert_array_equal(np.isnan(got), nan)
                np.testing.assert_array_equal(got[~nan], ndi.median_filter(x, size=size)[~nan])

    def test_5x5_against_scipy_exactly(self):
        self.sweep(5, list(NP), (3, 16, 37, 131), 700)

    def test_3x3_floats_against_scipy_exactly(self):
        self.sweep(3, ["f32", "f64"], (3, 8, 16, 37, 131), 900)

    def test_small_integers_every_width_against_scipy_exactly(self):
        # 3 x 3 and 5 x 5 medians of 8- and 16-bit samples: one channel's network reads the image
        # rows (L = 32 u8 or 16 u16 lanes with AVX2, pieces padded by the border at the row's two
        # edges, a last vector overlapping the one before it) from a width of 2 L + 3, several
        # channels' padded planes; widths 1..100 (u8) and 1..64 (4 L: 16-bit) cross every vector
        # count, every remainder at and past the loop's first vector and the narrow fallbacks.
        # Every border at 3 x 3 on one channel at every width up to 2 L + 5; past it the
        # border's pieces are the same at every width (only the vectors between them change), so
        # one border a width, in turn.
        rng = random.Random(1100)
        for t, lanes in (("u8", 32), ("u16", 16), ("i16", 16)):
            for w in range(1, min(101, 4 * lanes + 1)):
                borders = BORDERS if w <= 2 * lanes + 5 else [BORDERS[w % len(BORDERS)]]
                runs = [(3, 1, mode) for mode in borders]
                runs += [(3, c, rng.choice(BORDERS)) for c in (2, 3)]
                runs += [(5, rng.choice([1, 2, 3]), rng.choice(BORDERS))]
                for size, c, mode in runs:
                    x = self.image(rng.randint(1, 12), w, c, t, seed=w)
                    full = (size, size) + ((1,) if c > 1 else ())
                    # The CPU's networks: 1,500 runs, which on the GPU (no networks there) would
                    # take a CUDA start each.
                    with self.subTest(size=size, type=t, width=w, channels=c, border=mode):
                        got = self.oocrun(x, "median size=%d" % size, "--border", mode,
                                          "--border-value", 7, "--band-rows",
                                          rng.choice([1, 3, 64]), gpu=False)
                        np.testing.assert_array_equal(
                            got, ndi.median_filter(x, size=full, mode=mode, cval=7))

    def test_nan_gives_nan(self):
        self.nan_case(5, 3)
        self.nan_case(3, 31)
        self.nan_case(7, 37)

    def test_general_networks_against_scipy_exactly(self):
        # Rectangles of up to 128 samples of floats and 32-bit integers: one network per window
        # and rank (median, percentile, rank), with every border, channels and band height.
        rng = random.Random(128)
        for t in ("f32", "f64", "i32", "u32"):
            for h, w in ((7, 7), (3, 5), (1, 7), (7, 1), (9, 9), (11, 11), (5, 9)):
                n = h * w
                c = rng.choice([1, 3])
                mode = rng.choice(BORDERS)
                x = self.image(rng.randint(max(h, 3), 30), rng.choice([8, 13, 37, 70]), c, t,
                               seed=h * 100 + w)
                full = (h, w) + ((1,) if c > 1 else ())
                kw = dict(size=full, mode=mode, cval=7)
                q, index = rng.choice([10, 37.5, 90]), rng.choice([0, 1, -2, n // 3])
                for text, ref in (
                        ("median size=%dx%d" % (h, w), lambda: ndi.median_filter(x, **kw)),
                        ("percentile q=%g size=%dx%d" % (q, h, w),
                         lambda: ndi.percentile_filter(x, q, **kw)),
                        ("rank index=%d size=%dx%d" % (index, h, w),
                         lambda: ndi.rank_filter(x, index, **kw))):
                    with self.subTest(type=t, stage=text, channels=c, border=mode):
                        # The GPU selects in registers for up to 49 samples of these types.
                        got = self.oocrun(x, text, "--border", mode, "--border-value", 7,
                                          "--band-rows", rng.choice([1, 5, 64]), gpu=n <= 49)
                        np.testing.assert_array_equal(got, ref())


class RankedHistograms(Base):
    # The CPU's ranked histograms, and under OOC_CHECK_DEVICE=cuda the GPU's radix select, which
    # takes the same windows (rectangles of more than 128 samples, footprints of more than 48).
    TYPES = ("u32", "i32", "f32", "f64")

    def test_against_scipy_exactly(self):
        rng = random.Random(4242)
        shapes = [(13, 13, None), (21, 7, None), (7, 21, None), (1, 151, None), (151, 1, None),
                  (None, None, "disk7"), (None, None, "random17x13")]
        for i, t in enumerate(self.TYPES):
            for h, w, name in shapes:
                if name == "disk7":
                    fp = disk(7)
                elif name:
                    fp = np.random.default_rng(i).random((17, 13)) < 0.4
                    fp[8, 6] = True
                c = rng.choice([1, 3])
                mode = rng.choice(BORDERS)
                hh, ww = (h, w) if name is None else fp.shape
                # scipy repeats the reflection only once: keep the window within twice the image.
                x = self.image(rng.randint(max(3, hh // 4 + 1), 60), max(rng.choice([9, 40, 131]),
                                                                      ww // 4 + 1), c, t,
                               seed=1000 + 10 * i + hh)
                n = int(fp.sum()) if name else hh * ww
                if name:
                    path = self.save(name, fp)
                    win, kw = "footprint=" + path, dict(footprint=fp if c == 1 else fp[:, :, None])
                else:
                    win, kw = "size=%dx%d" % (h, w), dict(size=(h, w) + ((1,) if c > 1 else ()))
                kw.update(mode=mode, cval=7)
                q, index = rng.choice([10, 37.5, 90]), rng.choice([0, 1, -2, n // 3])
                for text, ref in (("median " + win, lambda: ndi.median_filter(x, **kw)),
                                  ("percentile q=%g %s" % (q, win),
                                   lambda: ndi.percentile_filter(x, q, **kw)),
                                  ("rank index=%d %s" % (index, win),
                                   lambda: ndi.rank_filter(x, index, **kw))):
                    with self.subTest(type=t, stage=text, channels=c, border=mode, shape=x.shape):
                        got = self.oocrun(x, text, "--border", mode, "--border-value", 7,
                                          "--band-rows", rng.choice([1, 6, 64]))
                        np.testing.assert_array_equal(got, ref())

    def test_nan_gives_nan(self):
        for t in ("f32", "f64"):
            x = self.image(40, 70, 1, t, seed=77)
            x[[3, 20, 39], [5, 30, 69]] = np.nan
            nan = ndi.maximum_filter(np.isnan(x).astype(np.uint8), size=13) > 0
            with self.subTest(type=t):
                got = self.oocrun(x, "median size=13", "--band-rows", 9)
                np.testing.assert_array_equal(np.isnan(got), nan)
                clean = ndi.median_filter(np.where(np.isnan(x), 0, x), size=13)
                np.testing.assert_array_equal(got[~nan], clean[~nan])

    def test_windows_far_past_the_edge_reflect_as_numpy_pad(self):
        x = self.image(10, 5, 1, "i32", seed=5)
        # 101 samples: the CPU's networks (no CUDA version of this window).
        got = self.oocrun(x, "median size=101x1", "--border", "reflect", gpu=False)
        p = np.pad(x, ((50, 50), (0, 0)), mode="symmetric")
        want = np.array([[np.median(p[i:i + 101, j]) for j in range(5)] for i in range(10)])
        np.testing.assert_array_equal(got, want.astype(np.int32))


class Refusals(Base):
    def test_bad_footprints_and_stages(self):
        x = self.image(9, 9, 1, "u8", seed=1)
        inp = self.p("in.raw")
        x.tofile(inp)
        bad = {
            "even": (np.ones((4, 3), bool), "odd"),
            "two": (np.array([[0, 2, 0], [1, 1, 1], [0, 1, 0]], np.uint8), "other than 0 and 1"),
            "float": (np.ones((3, 3), np.float32), "samples"),
            "three_d": (np.ones((3, 3, 3), bool), "not 2-D"),
            "zeros": (np.zeros((3, 3), bool), "no 1"),
        }
        cases = [("median footprint=%s" % self.save(k, a), [m]) for k, (a, m) in bad.items()]
        good = self.save("good", FOOTPRINTS["disk2"])
        cases += [("minimum size=3 footprint=%s" % good, ["not both"]),
                  ("median", ["size", "footprint"]),
                  ("opening footprint=%s" % self.p("missing.npy"), ["cannot be read"])]
        for stage, words in cases:
            with self.subTest(stage=stage):
                out = self.p("out.raw")
                r = run([os.path.join(BIN, "oocrun"), inp, out, stage, "--width", 9, "--type",
                         "u8", "-q"])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("stage 1", r.stderr)
                for w in words:
                    self.assertIn(w, r.stderr)
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
