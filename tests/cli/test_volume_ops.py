#!/usr/bin/env python3
"""Volumes filtered in 3-D by the stages built from 2-D ones, against scipy.ndimage in 3-D:
gradient-magnitude (generic_gradient_magnitude with sobel; float64 reference, f32 within 3e-6 of
the largest magnitude), white-tophat and black-tophat of a box, 3-D footprints for the minimum,
maximum, opening, closing, top-hats and rank stages (exact), and convolve with a 3-D kernel
(direct and FFT; f32 accumulation: within 1e-5 of max of convolve(|x|, |k|), the sum of the
products' sizes), over the five borders, u8/u16/f32, 1 and 3 channels, odd shapes, volumes of
one and two planes and windows larger than the volume; the bytes never depend on the band
height, threads or --mem-limit; 2-D footprints and kernels on a volume are refused with a hint.
Usage: test_volume_ops.py --bin-dir DIR [unittest options]"""

import os

import numpy as np
import scipy.ndimage as ndi

from pipeline_support import BORDERS, NP, Base, main, run, tool

SHAPES = [(4, 9, 7, 1), (1, 6, 5, 1), (2, 7, 6, 3)]
TYPES = ["u8", "u16", "f32"]


def volume(shape, t, seed):
    rng = np.random.default_rng(seed)
    d, h, w, c = shape
    s = (d, h, w) if c == 1 else shape
    hi = {"u8": 256, "u16": 3000}.get(t)
    x = rng.integers(0, hi, s) if hi else rng.uniform(0.0, 200.0, s)
    return x.astype(NP[t])


def channels(f, x):
    if x.ndim == 3:
        return f(x)
    return np.stack([f(x[..., c]) for c in range(x.shape[3])], axis=-1)


class VolumeOps(Base):
    def oocrun(self, x, pipeline, *extra):
        np.save(self.p("in.npy"), x)
        out = self.p("out.npy")
        with open(out, "wb") as f:  # poison: a stale file must not pass
            f.write(b"\x5a" * 64)
        r = run([tool("oocrun"), self.p("in.npy"), out, pipeline, "-q"] + list(extra))
        self.assertEqual(r.returncode, 0, pipeline + ": " + r.stderr)
        return np.load(out)

    def test_gradient_magnitude(self):
        for shape in SHAPES:
            x = volume(shape, "f32", seed=shape[0])
            for mode in BORDERS:
                got = self.oocrun(x, "gradient-magnitude", "--border", mode)
                want = channels(lambda v: ndi.generic_gradient_magnitude(
                    v.astype(np.float64), ndi.sobel, mode=mode), x)
                what = "%s %s" % (shape, mode)
                self.assertEqual(got.dtype, np.float32, what)
                self.assertLessEqual(np.abs(got - want).max(), 3e-6 * np.abs(want).max(), what)

    def test_morphology_and_ranks(self):
        rng = np.random.default_rng(7)
        fp = rng.random((3, 3, 5)) < 0.5
        fp[1, 1, 2] = True
        np.save(self.p("fp.npy"), fp)
        big = np.zeros((5, 3, 3), np.uint8)  # more planes than the volumes
        big[:, 1, 1] = big[2] = 1
        np.save(self.p("big.npy"), big)
        cases = [
            ("white-tophat size=3 size-z=5", lambda v, m: ndi.white_tophat(v, (5, 3, 3), mode=m)),
            ("black-tophat size=4x3", lambda v, m: ndi.black_tophat(v, (4, 4, 3), mode=m)),
            ("minimum footprint=fp.npy", lambda v, m: ndi.minimum_filter(v, footprint=fp, mode=m)),
            ("maximum footprint=big.npy",
             lambda v, m: ndi.maximum_filter(v, footprint=big, mode=m)),
            ("opening footprint=fp.npy", lambda v, m: ndi.grey_opening(v, footprint=fp, mode=m)),
            ("closing footprint=big.npy",
             lambda v, m: ndi.grey_closing(v, footprint=big, mode=m)),
            ("white-tophat footprint=fp.npy",
             lambda v, m: ndi.white_tophat(v, footprint=fp, mode=m)),
            ("black-tophat footprint=big.npy",
             lambda v, m: ndi.black_tophat(v, footprint=big, mode=m)),
            ("median footprint=fp.npy", lambda v, m: ndi.median_filter(v, footprint=fp, mode=m)),
            ("rank footprint=big.npy index=-2",
             lambda v, m: ndi.rank_filter(v, -2, footprint=big, mode=m)),
            ("percentile footprint=fp.npy q=30",
             lambda v, m: ndi.percentile_filter(v, 30, footprint=fp, mode=m)),
        ]
        for i, shape in enumerate(SHAPES):
            for t in TYPES:
                x = volume(shape, t, seed=10 + i)
                for mode in BORDERS:
                    for stage, f in cases:
                        stage = stage.replace("=fp.npy", "=" + self.p("fp.npy")).replace(
                            "=big.npy", "=" + self.p("big.npy"))
                        got = self.oocrun(x, stage, "--border", mode)
                        want = channels(lambda v: f(v, mode), x)
                        self.assertTrue(np.array_equal(got, want),
                                        "%s %s %s %s" % (stage, shape, t, mode))

    def test_convolve_3d_kernel(self):
        rng = np.random.default_rng(3)
        kernels = {"k.npy": rng.uniform(-1, 1, (3, 5, 3)),
                   "tall.npy": rng.uniform(-1, 1, (7, 3, 3)).astype(np.float32),
                   "col.npy": rng.uniform(-1, 1, (3, 3, 1))}  # (K, L, 1): planes on a volume
        for name, k in kernels.items():
            np.save(self.p(name), k)
        for i, shape in enumerate(SHAPES):
            for t in TYPES:
                x = volume(shape, t, seed=20 + i)
                for mode in BORDERS:
                    for name, method in (("k.npy", "direct"), ("k.npy", "fft"),
                                         ("tall.npy", "auto"), ("col.npy", "auto")):
                        got = self.oocrun(x, "convolve kernel=%s method=%s ! convert type=f32"
                                          % (self.p(name), method), "--border", mode)
                        k = kernels[name].astype(np.float64)
                        xs = x.astype(np.float64)
                        want = channels(lambda v: ndi.convolve(v, k, mode=mode), xs)
                        size = channels(lambda v: ndi.convolve(np.abs(v), np.abs(k), mode=mode),
                                        xs).max()
                        what = "%s %s %s %s %s" % (name, method, shape, t, mode)
                        self.assertLessEqual(np.abs(got - want).max(), 1e-5 * size, what)
                # Into the input's type: rounded half to even and saturated, as the 2-D stage.
                if t != "f32":
                    got = self.oocrun(x, "convolve kernel=" + self.p("k.npy"))
                    info = np.iinfo(NP[t])
                    want = np.clip(np.rint(channels(lambda v: ndi.convolve(
                        v, kernels["k.npy"]), x.astype(np.float64))), info.min, info.max)
                    self.assertLessEqual(np.abs(got.astype(np.float64) - want).max(), 1.0)

    def test_bytes_do_not_depend_on_the_plan(self):
        rng = np.random.default_rng(5)
        np.save(self.p("k.npy"), rng.uniform(-1, 1, (3, 3, 5)))
        fp = rng.random((3, 5, 3)) < 0.6
        fp[1, 2, 1] = True
        np.save(self.p("fp.npy"), fp)
        x = volume((6, 40, 23, 1), "f32", seed=9)
        for pipeline in ("gradient-magnitude", "white-tophat size=3 ! black-tophat size=5x3",
                         "median footprint=%s ! opening footprint=%s" % (self.p("fp.npy"),
                                                                       self.p("fp.npy")),
                         "convolve kernel=%s method=direct" % self.p("k.npy"),
                         "convolve kernel=%s method=fft" % self.p("k.npy")):
            want = self.oocrun(x, pipeline, "--band-rows", "40", "--threads", "1").tobytes()
            for extra in (["--band-rows", "1"], ["--band-rows", "7", "--threads", "3"],
                          ["--mem-limit", "2M"]):
                got = self.oocrun(x, pipeline, *extra).tobytes()
                self.assertEqual(got, want, pipeline + " " + " ".join(extra))

    def test_2d_windows_on_a_volume_refused(self):
        x = volume((3, 8, 8, 1), "f32", seed=1)
        np.save(self.p("in.npy"), x)
        np.save(self.p("cross.npy"), np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], np.uint8))
        np.save(self.p("even.npy"), np.ones((2, 3, 3)))
        for pipeline, hint in (("convolve kernel=laplace", "--planes"),
                               ("median footprint=" + self.p("cross.npy"), "--planes"),
                               ("closing footprint=" + self.p("cross.npy"), "--planes"),
                               ("convolve kernel=" + self.p("even.npy"), "odd")):
            out = self.p("refused.npy")
            r = run([tool("oocrun"), self.p("in.npy"), out, pipeline, "-q"])
            self.assertEqual(r.returncode, 2, pipeline + ": " + r.stderr)
            self.assertIn(hint, r.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    main()
