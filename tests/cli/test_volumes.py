#!/usr/bin/env python3
"""Volumes filtered in 3-D against scipy.ndimage in 3-D (float64 reference; exact for minimum,
maximum, opening, closing and the rank filters; dog, unsharp and subtract-background on 3-D
Gaussians), over the five borders, u8/u16/i16/f32 inputs, 1 and 3 channels ((z, y, x, c)
arrays), anisotropic and even windows, windows larger than the volume, planes of one row or one
column, volumes of one plane, projections, and fused pipelines of several 3-D stages; the bytes
never depend on the band height, threads, tiles across the row or parts; --planes filters each
plane in 2-D; stages without a 3-D version are refused with a hint. Outputs are poisoned first.
Usage: test_volumes.py --bin-dir DIR [unittest options]"""

import json
import os
import shutil
import subprocess

import numpy as np
import scipy.ndimage as ndi

from pipeline_support import BORDERS, NP, Base, gauss_taps, main, run, tool

CVAL = 7.0


def volume(d, h, w, c, t, seed):
    rng = np.random.default_rng(seed)
    shape = (d, h, w) if c == 1 else (d, h, w, c)
    if t in ("f32", "f64"):
        x = rng.uniform(0.5, 200.0, shape)
    elif t == "u8":
        x = rng.integers(1, 256, shape)
    else:
        info = np.iinfo(NP[t])
        x = rng.integers(max(info.min, -3000), min(info.max, 3000) + 1, shape)
    return x.astype(NP[t])


def channels(f, x):
    if x.ndim == 3:
        return f(x)
    return np.stack([f(x[..., c]) for c in range(x.shape[3])], axis=-1)


def rounded(r, t):
    """The reference in the output's type: integers rounded half to even and saturated."""
    if t in ("f32", "f64"):
        return r
    info = np.iinfo(NP[t])
    return np.clip(np.rint(r), info.min, info.max)


class Volumes(Base):
    def oocrun_npy(self, x, pipeline, *extra, name="out.npy"):
        inp = self.p("in.npy")
        np.save(inp, x)
        out = self.p(name)
        with open(out, "wb") as f:  # poison: a stale file must not pass
            f.write(b"\x5a" * 64)
        r = run([tool("oocrun"), inp, out, pipeline, "-q"] + list(extra))
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.load(out)

    def close(self, got, want, t, what):
        self.assertEqual(got.shape, want.shape, what)
        if t in ("f32", "f64"):
            scale = max(1.0, float(np.abs(want).max()))
            err = float(np.abs(got.astype(np.float64) - want).max())
            self.assertLessEqual(err, 3e-5 * scale, what)
        else:
            err = float(np.abs(got.astype(np.float64) - rounded(want, t)).max())
            self.assertLessEqual(err, 1.0, what)

    def test_linear_stages_every_border(self):
        cases = [
            ("gaussian sigma=1.2", lambda v, m: ndi.correlate(
                v, np.einsum("i,j,k->ijk", *[gauss_taps(1.2)] * 3), mode=m, cval=CVAL)),
            ("gaussian sigma=1.5 sigma-z=0.7", lambda v, m: sep3(
                v, gauss_taps(0.7), gauss_taps(1.5), gauss_taps(1.5), m)),
            ("uniform size=3 size-z=5", lambda v, m: ndi.uniform_filter(
                v, (5, 3, 3), mode=m, cval=CVAL)),
            ("correlate1d taps=1,-2,4,0.5,3 axis=0", lambda v, m: ndi.correlate1d(
                v, [1, -2, 4, 0.5, 3], axis=0, mode=m, cval=CVAL)),
            ("correlate1d taps=1,2,-1 axis=2", lambda v, m: ndi.correlate1d(
                v, [1, 2, -1], axis=2, mode=m, cval=CVAL)),
            ("dog sigma1=1 sigma2=1.7", lambda v, m: sep3(v, *[gauss_taps(1)] * 3, m)
             - sep3(v, *[gauss_taps(1.7)] * 3, m)),
            ("unsharp sigma=1.2 amount=0.6", lambda v, m: v + 0.6 * (
                v - sep3(v, *[gauss_taps(1.2)] * 3, m))),
            ("subtract-background sigma=1.5", lambda v, m: v - sep3(
                v, *[gauss_taps(1.5)] * 3, m)),
            # The separable stage's 2-D passes run along x, then y (oocconv's order).
            ("separable row=1,2,1 col=0.5,1,0.25 plane=1,3,2", lambda v, m: sep3(
                v, [1, 3, 2], [0.5, 1, 0.25], [1, 2, 1], m, convolve=True, order=(0, 2, 1))),
        ]
        for k, (pipeline, ref) in enumerate(cases):
            for t in ("u8", "u16", "i16", "f32"):
                for border in BORDERS:
                    c = 3 if (k + len(t)) % 3 == 0 else 1
                    x = volume(6, 13, 11, c, t, seed=k)
                    with self.subTest(pipeline=pipeline, type=t, border=border, channels=c):
                        got = self.oocrun_npy(x, pipeline, "--border", border, "--border-value",
                                              str(CVAL), "--band-rows", "4")
                        want = channels(lambda v: ref(v.astype(np.float64), border), x)
                        self.close(got, want, t, pipeline)

    def test_rank_and_morphology_exact(self):
        cases = [
            ("minimum size=3", lambda v, m: ndi.minimum_filter(v, 3, mode=m, cval=CVAL)),
            ("maximum size=2x3 size-z=4", lambda v, m: ndi.maximum_filter(
                v, (4, 2, 3), mode=m, cval=CVAL)),
            ("opening size=3 size-z=2", lambda v, m: ndi.grey_opening(
                v, size=(2, 3, 3), mode=m, cval=CVAL)),
            ("closing size=4", lambda v, m: ndi.grey_closing(v, size=4, mode=m, cval=CVAL)),
            ("median size=3", lambda v, m: ndi.median_filter(v, 3, mode=m, cval=CVAL)),
            ("median size=2x4 size-z=3", lambda v, m: ndi.median_filter(
                v, (3, 2, 4), mode=m, cval=CVAL)),
            ("percentile size=3 q=20", lambda v, m: ndi.percentile_filter(
                v, 20, size=3, mode=m, cval=CVAL)),
            ("rank size=3x3 size-z=1 index=-2", lambda v, m: ndi.rank_filter(
                v, -2, size=(1, 3, 3), mode=m, cval=CVAL)),
        ]
        for k, (pipeline, ref) in enumerate(cases):
            for t in ("u8", "u16", "i16", "f32"):
                for border in BORDERS:
                    c = 3 if (k + len(t)) % 4 == 0 else 1
                    x = volume(5, 9, 12, c, t, seed=10 + k)
                    with self.subTest(pipeline=pipeline, type=t, border=border, channels=c):
                        got = self.oocrun_npy(x, pipeline, "--border", border, "--border-value",
                                              str(CVAL), "--band-rows", "3", "--tile-cols", "5")
                        want = channels(lambda v: ref(v, border), x)
                        self.assertTrue(np.array_equal(got, want), pipeline)

    def test_medians_with_nan_and_signed_zeros(self):
        # The rank rule of ooc: a NaN in the window gives NaN; -0 sorts below +0. The reference
        # sorts each window's samples by value, then sign (numpy.pad's modes for scipy's
        # borders), so the bytes of every zero are checked too; 3x3x3 takes the shared-column
        # road with its fixed tables, 3x4x2 the general one.
        pad_mode = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge",
                    "wrap": "wrap", "constant": "constant"}
        rng = np.random.default_rng(21)
        x = rng.integers(-3, 4, (6, 11, 40)).astype(np.float32)
        x[x == 0] = np.where(rng.random(int((x == 0).sum())) < 0.5, -0.0, 0.0)
        x[x == 3] = 0.0
        x[[1, 4, 5], [2, 9, 0], [7, 33, 39]] = np.nan
        for size, (d, h, w) in (("3", (3, 3, 3)), ("4x2 size-z=3", (3, 4, 2))):
            for border in BORDERS:
                with self.subTest(size=size, border=border):
                    got = self.oocrun_npy(x, "median size=" + size, "--border", border,
                                          "--border-value", str(CVAL), "--band-rows", "3")
                    before = (d // 2, h // 2, w // 2)  # scipy's origin 0 for even sizes
                    pad = [(b, n - 1 - b) for b, n in zip(before, (d, h, w))]
                    kw = {"constant_values": CVAL} if border == "constant" else {}
                    p = np.pad(x, pad, mode=pad_mode[border], **kw)
                    win = np.lib.stride_tricks.sliding_window_view(p, (d, h, w))
                    win = win.reshape(x.shape + (d * h * w,))
                    order = np.lexsort((~np.signbit(win), win), axis=-1)
                    want = np.take_along_axis(win, order, axis=-1)[..., d * h * w // 2]
                    want = np.where(np.isnan(win).any(axis=-1), np.float32(np.nan), want)
                    self.assertEqual(got.tobytes(), want.astype(np.float32).tobytes())

    def test_windows_larger_than_the_volume_and_thin_planes(self):
        for shape in ((3, 1, 9), (4, 8, 1), (2, 5, 6)):
            x = volume(*shape, 1, "f32", seed=3)
            for border in BORDERS:
                with self.subTest(shape=shape, border=border):
                    # (4, 8, 1) would be 4 x 8 of one channel without --volume.
                    got = self.oocrun_npy(x, "median size=5 ! gaussian sigma=2 sigma-z=3",
                                          "--border", border, "--border-value", str(CVAL),
                                          "--volume")
                    r = ndi.median_filter(x, 5, mode=border, cval=CVAL).astype(np.float64)
                    want = sep3(r, gauss_taps(3), gauss_taps(2), gauss_taps(2), border)
                    self.close(got, want, "f32", "median ! gaussian on %s" % (shape,))

    def test_a_volume_of_one_plane(self):
        x = volume(1, 9, 11, 1, "f32", seed=13)
        for border in BORDERS:
            with self.subTest(border=border):
                got = self.oocrun_npy(x, "gaussian sigma=1 sigma-z=2 ! minimum size=3",
                                      "--border", border, "--border-value", str(CVAL))
                r = sep3(x.astype(np.float64), gauss_taps(2), *[gauss_taps(1)] * 2, border)
                want = ndi.minimum_filter(r.astype(np.float32), 3, mode=border, cval=CVAL)
                self.assertEqual(got.shape, (1, 9, 11))
                self.close(got, want, "f32", "one plane, " + border)

    def test_windows_far_past_the_planes(self):
        # Taps and windows past the depth are folded or clamped onto it: the same values.
        x = volume(4, 6, 7, 1, "f32", seed=14)
        for border in BORDERS:
            with self.subTest(border=border):
                got = self.oocrun_npy(x, "gaussian sigma=1 sigma-z=400 ! maximum size=3 size-z=41",
                                      "--border", border, "--border-value", str(CVAL))
                r = sep3(x.astype(np.float64), gauss_taps(400), *[gauss_taps(1)] * 2, border)
                want = ndi.maximum_filter(r.astype(np.float32), (41, 3, 3), mode=border,
                                          cval=CVAL)
                self.close(got, want, "f32", "far past the planes, " + border)

    def test_fused_3d_stages_equal_scipy_one_by_one(self):
        x = volume(7, 15, 10, 1, "u8", seed=5)
        pipeline = "gaussian sigma=1 ! maximum size=3 ! uniform size=3 ! median size=3"
        for border in BORDERS:
            with self.subTest(border=border):
                got = self.oocrun_npy(x, pipeline, "--border", border, "--border-value",
                                      str(CVAL), "--band-rows", "2")
                r = sep3(x.astype(np.float64), *[gauss_taps(1)] * 3, border)
                r = ndi.maximum_filter(r.astype(np.float32), 3, mode=border, cval=CVAL)
                r = ndi.uniform_filter(r.astype(np.float64), 3, mode=border, cval=CVAL)
                r = ndi.median_filter(r.astype(np.float32), 3, mode=border, cval=CVAL)
                self.assertEqual(got.dtype, np.uint8)
                # The f32 intermediates round as ooc's do to within a few ulp; the u8 result
                # within 1.
                self.assertLessEqual(np.abs(got.astype(float) - rounded(r, "u8")).max(), 1.0)

    def test_bytes_do_not_depend_on_the_plan(self):
        x = volume(9, 31, 23, 1, "f32", seed=7)
        pipeline = "gaussian sigma=1.5 ! median size=3 ! opening size=2"
        want = self.oocrun_npy(x, pipeline, "--band-rows", "31", "--threads", "1",
                               name="whole.npy")
        for extra in (["--band-rows", "1"], ["--band-rows", "7", "--threads", "3"],
                      ["--tile-cols", "4", "--band-rows", "5"], ["--mem-limit", "2M"]):
            with self.subTest(extra=extra):
                got = self.oocrun_npy(x, pipeline, *extra)
                self.assertTrue(np.array_equal(got, want), extra)

    def test_parts_give_one_process_bytes(self):
        x = volume(6, 17, 13, 1, "u16", seed=8)
        np.save(self.p("in.npy"), x)
        pipeline = "gaussian sigma=1 ! median size=3"
        one = self.oocrun_npy(x, pipeline, name="one.npy")
        out = self.p("parts.npy")
        for i in range(3):
            r = run([tool("oocrun"), self.p("in.npy"), out, pipeline, "--part", "%d/3" % i,
                     "-q"])
            self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocrun"), "--finish", out, "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(np.array_equal(np.load(out), one))

    def test_mpi_ranks_give_one_process_bytes(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("no mpirun")
        x = volume(7, 19, 11, 1, "f32", seed=9)
        np.save(self.p("in.npy"), x)
        pipeline = "gaussian sigma=2 ! minimum size=3"
        one = self.oocrun_npy(x, pipeline, name="one.npy")
        out = self.p("mpi.npy")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader")
        r = subprocess.run([mpirun, "-np", "3", tool("oocrun"), self.p("in.npy"), out, pipeline,
                            "-q"], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr[-1500:])
        self.assertTrue(np.array_equal(np.load(out), one))
        # A TIFF volume in ranks: the file one process writes, byte for byte.
        tiffs = []
        for name, launch in (("one.tif", []), ("mpi.tif", [mpirun, "-np", "3"])):
            r = subprocess.run(launch + [tool("oocrun"), self.p("in.npy"), self.p(name), pipeline,
                                         "--tile", "16", "--compress", "deflate", "-q"],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr[-1500:])
            with open(self.p(name), "rb") as f:
                tiffs.append(f.read())
        self.assertEqual(tiffs[0], tiffs[1], "TIFF volume from 3 ranks")

    def test_small_limits_keep_slabs(self):
        """Under a small --mem-limit the plan keeps room for a slab's runs (fewer, shorter bands)
        rather than a ring that leaves none, whatever the slots default to."""
        x = volume(12, 256, 512, 1, "f32", seed=10)
        pipeline = "gaussian sigma=2"
        want = self.oocrun_npy(x, pipeline, name="whole.npy")
        for threads in ("2", "16"):
            with self.subTest(threads=threads):
                r = run([tool("oocrun"), self.p("in.npy"), self.p("s.npy"), pipeline, "--mem-limit",
                         "3M", "--threads", threads, "--stats", "json", "-q"])
                self.assertEqual(r.returncode, 0, r.stderr)
                plan = json.loads(r.stdout)["plan"]
                self.assertGreater(plan["slab_planes"], 1, plan)
                self.assertTrue(np.array_equal(np.load(self.p("s.npy")), want))

    def test_planes_filter_each_plane_in_2d(self):
        x = volume(4, 12, 9, 1, "f32", seed=9)
        got = self.oocrun_npy(x, "gaussian sigma=1 ! median size=3 ! dog sigma1=1 sigma2=2",
                              "--planes")
        for z in range(4):
            r = sep3(x[z:z + 1].astype(np.float64), [1.0], *[gauss_taps(1)] * 2, "reflect")[0]
            r = ndi.median_filter(r.astype(np.float32), 3, mode="reflect").astype(np.float64)
            r = (sep3(r[None], [1.0], *[gauss_taps(1)] * 2, "reflect")
                 - sep3(r[None], [1.0], *[gauss_taps(2)] * 2, "reflect"))[0]
            self.close(got[z], r, "f32", "plane %d" % z)

    def test_projections(self):
        x = volume(7, 11, 9, 3, "u16", seed=11)
        for op in ("max", "min", "sum", "mean"):
            with self.subTest(op=op):
                got = self.oocrun_npy(x, "project op=" + op, "--band-rows", "4")
                want = getattr(np, op)(x.astype(np.float64), axis=0)
                self.assertEqual(got.shape, want.shape)
                if op in ("max", "min"):
                    self.assertEqual(got.dtype, np.uint16)
                    self.assertTrue(np.array_equal(got, want))
                else:
                    self.assertEqual(got.dtype, np.float32)
                    self.close(got, want, "f32", op)
        # 3-D stages before, 2-D after; parts give one process's bytes.
        pipeline = "gaussian sigma=1 ! project op=max ! median size=3"
        got = self.oocrun_npy(x, pipeline, "--band-rows", "2")
        r = sep3(x.astype(np.float64), *[gauss_taps(1)] * 3, "reflect").astype(np.float32)
        want = channels(lambda v: ndi.median_filter(v.max(axis=0)[None], (1, 3, 3))[0],
                        r[..., None] if r.ndim == 3 else r)
        self.close(got, want.reshape(got.shape), "f32", pipeline)
        out = self.p("parts.npy")
        for i in range(2):
            r = run([tool("oocrun"), self.p("in.npy"), out, pipeline, "--part", "%d/2" % i, "-q"])
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(run([tool("oocrun"), "--finish", out, "-q"]).returncode, 0)
        self.assertTrue(np.array_equal(np.load(out), got))
        r = run([tool("oocrun"), self.p("in.npy"), self.p("p2.npy"), "project ! project", "-q"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("takes a volume", r.stderr)

    def test_planes_on_cuda_equal_each_plane_alone(self):
        probe = run([tool("oocrun"), "synth:noise", "null:", "scale", "--width", "16", "--height",
                     "16", "--device", "cuda", "-q"])
        if probe.returncode != 0:
            self.skipTest("no CUDA device, or no CUDA in this build (oocrun --device cuda fails)")
        x = volume(5, 37, 29, 1, "u16", seed=12)
        pipeline = "gaussian sigma=1.5 ! median size=3 ! unsharp sigma=1 amount=0.5"
        got = self.oocrun_npy(x, pipeline, "--planes", "--device", "cuda", "--cpu-start", "off",
                              "--band-rows", "8")
        for z in range(x.shape[0]):
            want = self.oocrun_npy(x[z], pipeline, "--device", "cuda", "--cpu-start", "off",
                                   "--band-rows", "8", name="plane.npy")
            self.assertTrue(np.array_equal(got[z], want), "plane %d" % z)
        # A 3-D window the GPU does not take (300 planes): refused on --device cuda
        # (test_volumes_cuda checks the 3-D stages it takes).
        np.save(self.p("in.npy"), x)
        r = run([tool("oocrun"), self.p("in.npy"), self.p("c.npy"), "rank size=300x1x3 index=7",
                 "--device", "cuda", "-q"])
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("--planes", r.stderr)

    def test_stages_without_3d_refused(self):
        x = volume(3, 8, 8, 1, "f32", seed=1)
        np.save(self.p("in.npy"), x)
        np.save(self.p("cross.npy"), np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], np.uint8))
        for pipeline in ("convolve kernel=laplace", "median footprint=" + self.p("cross.npy")):
            out = self.p("refused.npy")
            r = run([tool("oocrun"), self.p("in.npy"), out, pipeline, "-q"])
            self.assertEqual(r.returncode, 2, pipeline + ": " + r.stderr)
            self.assertIn("--planes", r.stderr)
            self.assertFalse(os.path.exists(out))


def sep3(v, z, y, x, mode, convolve=False, order=(0, 1, 2)):
    """Axis by axis from z, scipy's order (convolve: the taps in convolution order)."""
    f = ndi.convolve1d if convolve else ndi.correlate1d
    taps = {0: z, 1: y, 2: x}
    for axis in order:
        v = f(v, np.asarray(taps[axis], dtype=np.float64), axis=axis, mode=mode, cval=CVAL)
    return v


if __name__ == "__main__":
    main()
