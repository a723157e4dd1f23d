#!/usr/bin/env python3
"""Volumes filtered in 3-D on the GPU: every 3-D stage with a CUDA version on --device cuda gives
the CPU backend's bytes (z passes of sums where the CPU's build has FMA, which test_gpu's
separable checks assume too; extremes and rank filters always), over the five borders, u8/u16/
f32, 1 and 3 channels, bands of whole planes (the 2R planes of a band's window taken from the
band before on the device) and bands of a few rows (every plane copied), one slot and several;
the rank filters of up to 64 samples against scipy.ndimage exactly (NaN, -0); rank windows of
more samples (radix select) and 3-D footprints with holes (median, rank, percentile and the
morphology's extremes) over u8/u16/i16/f32, odd shapes (1-3 columns), NaN and -0; minimum, maximum,
opening, closing and the top-hats of any box (windows larger than the volume too); the gradient
magnitude (f32 and f64 sums, which the CPU's FMA build rounds as the GPU); 3-D kernels' direct
convolution (exact for integer kernels and data, else within 1e-5 of float64); fused 3-D chains;
projections along z (the CPU's bytes, or refused while the engine's GPU slots hold a window of
planes, not every plane); windows the GPU does not take (deeper than 256 planes) refused on
--device cuda (exit 5) and run on the CPU under auto. Outputs are poisoned first. Without a CUDA device every test skips.
Usage: test_volumes_cuda.py --bin-dir DIR [unittest options]"""

import numpy as np
import scipy.ndimage as ndi

from pipeline_support import BORDERS, NP, Base, main, run, tool

CVAL = 7.0


def volume(d, h, w, c, t, seed):
    rng = np.random.default_rng(seed)
    shape = (d, h, w) if c == 1 else (d, h, w, c)
    if t == "f32":
        return rng.uniform(0.5, 200.0, shape).astype(np.float32)
    if t == "u8":
        return rng.integers(1, 256, shape).astype(np.uint8)
    if t == "i16":  # both signs: the keys' offset
        return rng.integers(-30000, 30000, shape).astype(np.int16)
    return rng.integers(1, 60000, shape).astype(NP[t])


def vol(x):
    """--volume where a 3-D array's last axis (1-4 columns) would read as channels."""
    return ["--volume"] if x.ndim == 3 and x.shape[-1] <= 4 else []


def signed_f32(x, seed):
    """f32 samples of both signs, some zeros of each sign and one NaN: the radix keys' order."""
    rng = np.random.default_rng(seed)
    x = x - np.float32(100)
    flat = x.reshape(-1)
    k = rng.choice(flat.size, size=max(4, flat.size // 12), replace=False)
    flat[k[: len(k) // 2]] = -0.0
    flat[k[len(k) // 2:]] = 0.0
    flat[k[0]] = np.nan
    return x


class VolumesCuda(Base):
    @classmethod
    def setUpClass(cls):
        probe = run([tool("oocrun"), "synth:noise", "null:", "scale", "--width", "16", "--height",
                     "16", "--device", "cuda", "-q"])
        cls.cuda = probe.returncode == 0

    def setUp(self):
        super().setUp()
        if not self.cuda:
            self.skipTest("no CUDA device, or no CUDA in this build (oocrun --device cuda fails)")

    def oocrun_npy(self, x, pipeline, *extra, name="out.npy", code=0):
        inp = self.p("in.npy")
        np.save(inp, x)
        out = self.p(name)
        with open(out, "wb") as f:  # poison: a stale file must not pass
            f.write(b"\x5a" * 64)
        r = run([tool("oocrun"), inp, out, pipeline, "-q"] + list(extra))
        if code is None:  # either: the output, or a refusal's message (exit 5)
            self.assertIn(r.returncode, (0, 5), r.stderr)
            return np.load(out) if r.returncode == 0 else r.stderr
        self.assertEqual(r.returncode, code, r.stderr)
        return np.load(out) if code == 0 else r.stderr

    def both(self, x, pipeline, *extra):
        """The CPU's bytes, and the GPU's under three plans: whole planes; bands of 3 rows in one
        slot, each band's window copied in pieces through its one plane of pinned rows; bands of 4
        rows in 3 slots, walked in slabs, each taking 2R planes from the band before."""
        cpu = self.oocrun_npy(x, pipeline, "--device", "cpu", *extra, name="cpu.npy")
        for plan in ([], ["--band-rows", "3", "--slots", "1"], ["--band-rows", "4", "--slots", "3"]):
            gpu = self.oocrun_npy(x, pipeline, "--device", "cuda", "--cpu-start", "off", *plan,
                                  *extra, name="gpu.npy")
            self.assertEqual((gpu.dtype, gpu.shape), (cpu.dtype, cpu.shape), pipeline)
            # Bytes: -0 and +0, and NaNs' bits, must agree too.
            self.assertTrue(gpu.tobytes() == cpu.tobytes(),
                            "%s %s: max |gpu - cpu| %g" % (pipeline, plan, float(np.nanmax(
                                np.abs(gpu.astype(np.float64) - cpu)))))
        return cpu

    def test_stages_give_the_cpu_bytes_every_border(self):
        stages = ["gaussian sigma=1.3", "gaussian sigma=2 sigma-z=0.8", "uniform size=3 size-z=5",
                  "correlate1d taps=1,-2,4,0.5,3 axis=0", "minimum size=3",
                  "maximum size=2x3 size-z=4", "opening size=3 size-z=2", "closing size=4",
                  "median size=3", "percentile size=3 q=20", "rank size=4 index=40",
                  "dog sigma1=1 sigma2=1.7", "unsharp sigma=1.2 amount=0.6",
                  "subtract-background sigma=1.5"]
        for k, pipeline in enumerate(stages):
            for i, border in enumerate(BORDERS):  # each border, the types in turn
                for t in (("u8", "u16", "f32")[(k + i) % 3],):
                    c = 3 if (k + i) % 4 == 0 else 1
                    x = volume(7, 13, 22, c, t, seed=k)
                    with self.subTest(pipeline=pipeline, type=t, border=border, channels=c):
                        self.both(x, pipeline, "--border", border, "--border-value", str(CVAL))

    def test_rank_filters_equal_scipy_with_nan_and_signed_zeros(self):
        x = volume(6, 17, 19, 1, "f32", seed=3)
        x[2, 5, 7] = np.nan
        x[4, 10:13, 3:6] = -0.0
        x[1, 0:4, 0:4] = 0.0
        nan = np.isnan(x).astype(np.uint8)
        for border in BORDERS:
            for pipeline, size, ref in (
                    ("median size=3", (3, 3, 3), ndi.median_filter),
                    ("rank size=2x3 size-z=3 index=5", (3, 2, 3),
                     lambda v, size, **kw: ndi.rank_filter(v, 5, size=size, **kw)),
                    ("minimum size=3", (3, 3, 3), ndi.minimum_filter)):
                with self.subTest(pipeline=pipeline, border=border):
                    got = self.both(x, pipeline, "--border", border, "--border-value", str(CVAL))
                    # Every window holding the NaN gives NaN; the others equal scipy's (the
                    # NaN's sample replaced: scipy orders NaN otherwise).
                    hit = ndi.maximum_filter(nan, size=size, mode=border, cval=0).astype(bool)
                    self.assertTrue(np.array_equal(np.isnan(got), hit), pipeline)
                    want = ref(np.where(np.isnan(x), 0, x), size=size, mode=border, cval=CVAL)
                    self.assertTrue(np.array_equal(got[~hit], want[~hit]), pipeline)

    def test_minimum_maximum_and_tophats_of_any_box(self):
        """Boxes of more than 64 samples: the z pass of the extremes, then the 2-D van Herk
        passes; the top-hats' difference with the middle plane on the device."""
        stages = ["minimum size=5", "maximum size=7", "minimum size=3x5x7", "maximum size=6x4x5",
                  "opening size=5", "closing size=3x5x7", "white-tophat size=5",
                  "black-tophat size=3x5x7", "white-tophat size=3", "black-tophat size=4x2x3"]
        for k, pipeline in enumerate(stages):
            for i, border in enumerate(BORDERS):
                t = ("u8", "u16", "f32")[(k + i) % 3]
                c = 3 if (k + i) % 4 == 0 else 1
                x = volume(8, 13, 22, c, t, seed=10 + k)
                with self.subTest(pipeline=pipeline, type=t, border=border, channels=c):
                    self.both(x, pipeline, "--border", border, "--border-value", str(CVAL))

    def test_extremes_of_windows_larger_than_the_volume(self):
        x = volume(5, 9, 10, 1, "f32", seed=4)
        x[2, 4, 4] = np.nan
        x[3, 1:3, 1:3] = -0.0
        x[0, 5:7, 5:7] = 0.0
        for border in BORDERS:
            for pipeline, size, ref in (("minimum size=9x11x13", (9, 11, 13), ndi.minimum_filter),
                                        ("maximum size=7x3x12", (7, 3, 12), ndi.maximum_filter)):
                with self.subTest(pipeline=pipeline, border=border):
                    got = self.both(x, pipeline, "--border", border, "--border-value", str(CVAL))
                    nan = np.isnan(x).astype(np.uint8)
                    hit = ndi.maximum_filter(nan, size=size, mode=border, cval=0).astype(bool)
                    self.assertTrue(np.array_equal(np.isnan(got), hit), pipeline)
                    want = ref(np.where(np.isnan(x), 0, x), size=size, mode=border, cval=CVAL)
                    self.assertTrue(np.array_equal(got[~hit], want[~hit]), pipeline)
            for pipeline in ("white-tophat size=9x3x3", "black-tophat size=3x11x13"):
                with self.subTest(pipeline=pipeline, border=border):
                    self.both(x, pipeline, "--border", border, "--border-value", str(CVAL))

    def test_tophats_with_nan_and_signed_zeros(self):
        x = volume(6, 11, 12, 1, "f32", seed=8)
        x[2, 5, 7] = np.nan
        x[4, 2:5, 3:6] = -0.0
        x[1, 0:4, 0:4] = 0.0
        for border in BORDERS:
            for pipeline in ("minimum size=5", "maximum size=3x5x7", "white-tophat size=5",
                             "black-tophat size=3x5x7"):
                with self.subTest(pipeline=pipeline, border=border):
                    self.both(x, pipeline, "--border", border, "--border-value", str(CVAL))

    def test_gradient_magnitude(self):
        """The three Sobel derivatives (z pass, then the 2-D passes) and the root of their
        squares' sum, each operation rounded as the CPU's."""
        for i, border in enumerate(BORDERS):
            for j, t in enumerate(("u8", "u16", "f32")):
                c = 3 if (i + j) % 2 == 0 else 1
                x = volume(7, 13, 22, c, t, seed=20 + i)
                with self.subTest(type=t, border=border, channels=c):
                    self.both(x, "gradient-magnitude", "--border", border, "--border-value",
                              str(CVAL))
        x = volume(5, 11, 9, 1, "f32", seed=6)
        for extra in (["--precision", "f64"], ["--out-type", "u16"],
                      ["--precision", "f64", "--out-type", "u8"]):
            with self.subTest(extra=extra):
                self.both(x, "gradient-magnitude", *extra)
        # One plane, and two: the derivative along z folded onto the planes there are.
        for d in (1, 2):
            with self.subTest(depth=d):
                self.both(volume(d, 12, 10, 1, "f32", seed=d), "gradient-magnitude",
                          "--volume")
        got = self.both(x.astype(np.float64), "gradient-magnitude", "--precision", "f64")
        want = ndi.generic_gradient_magnitude(x.astype(np.float64), ndi.sobel, mode="reflect")
        self.assertLess(float(np.max(np.abs(got - want))), 1e-9 * float(np.max(want)))

    def test_fused_3d_chain_and_larger_volume(self):
        x = volume(40, 64, 96, 1, "u16", seed=5)
        for pipeline in ("gaussian sigma=1 ! median size=3 ! unsharp sigma=1 amount=0.5",
                         "gaussian sigma=2 ! scale mul=0.5 ! maximum size=3",
                         "median size=3 ! median size=3",
                         "gaussian sigma=1 ! gradient-magnitude ! white-tophat size=5",
                         "black-tophat size=3x5x7 ! gradient-magnitude"):
            with self.subTest(pipeline=pipeline):
                self.both(x, pipeline, "--out-type", "f32")

    def test_convolve_3d_kernels(self):
        """A 3-D kernel's direct convolution: the 2-D convolution of each kernel plane on the
        device, added plane by plane as the CPU adds them. Integer kernels on integer data sum
        exactly in f32 (the CPU's bytes); real kernels within 1e-5 of the float64 reference, as
        the 2-D convolution's test (test_cuda_convolve_equalize) checks it."""
        rng = np.random.default_rng(40)
        kint = self.p("kint.npy")
        np.save(kint, rng.integers(-3, 4, (3, 5, 3)).astype(np.float64))
        kreal = rng.uniform(-1, 1, (5, 3, 7))
        kr = self.p("kreal.npy")
        np.save(kr, kreal)
        kflat = self.p("kflat.npy")  # planes of zeros are dropped: one plane left
        k = np.zeros((3, 3, 3))
        k[1] = rng.integers(-2, 3, (3, 3))
        np.save(kflat, k)
        kdeep = self.p("kdeep.npy")  # more planes than the volume
        np.save(kdeep, rng.integers(-1, 2, (9, 3, 1)).astype(np.float64))
        for i, border in enumerate(BORDERS):
            for j, (t, out) in enumerate((("u8", "i32"), ("u16", "f32"), ("u8", "u16"))):
                c = 3 if (i + j) % 3 == 0 else 1
                x = volume(6, 13, 22, c, t, seed=40 + i)
                for kern in (kint, kflat, kdeep):
                    with self.subTest(border=border, type=t, out=out, channels=c, kernel=kern):
                        self.both(x, "convolve kernel=%s method=direct" % kern, "--out-type", out,
                                  "--border", border, "--border-value", str(CVAL))
            x = volume(6, 13, 22, 1, "f32", seed=50 + i)
            want = ndi.convolve(x.astype(np.float64), kreal, mode=border, cval=CVAL)
            for plan in ([], ["--band-rows", "3", "--slots", "1"]):
                with self.subTest(border=border, kernel="real", plan=plan):
                    got = self.oocrun_npy(x, "convolve kernel=%s method=direct" % kr, "--device",
                                          "cuda", "--cpu-start", "off", "--border", border,
                                          "--border-value", str(CVAL), *plan)
                    self.assertEqual(got.dtype, np.float32)
                    err = float(np.max(np.abs(got - want)))
                    self.assertLess(err, 1e-5 * float(np.max(np.abs(want))), border)

    def test_convolve_3d_kernels_by_fft(self):
        """method=fft on the device: each kernel plane's 2-D convolution by cuFFT on the image's
        tile grid, so the bytes do not depend on the band plan; within the FFT's bound of the
        float64 reference (1e-5 of max convolve(|x|, |k|)), planes outside the volume under the
        constant rule included."""
        rng = np.random.default_rng(41)
        k = rng.uniform(-1, 1, (3, 9, 7))
        kp = self.p("kfft.npy")
        np.save(kp, k)
        for i, border in enumerate(BORDERS):
            x = volume(5, 37, 29, 1 + (i % 2) * 2, "f32", seed=60 + i)
            xs = x.astype(np.float64).reshape(x.shape[:3] + (-1,))
            want = np.stack([ndi.convolve(xs[..., c], k, mode=border, cval=CVAL)
                             for c in range(xs.shape[-1])], -1)
            size = np.stack([ndi.convolve(np.abs(xs[..., c]), np.abs(k), mode=border,
                                          cval=abs(CVAL)) for c in range(xs.shape[-1])], -1)
            runs = []
            for plan in ([], ["--band-rows", "5", "--slots", "1"]):
                with self.subTest(border=border, plan=plan):
                    got = self.oocrun_npy(x, "convolve kernel=%s method=fft" % kp, "--device",
                                          "cuda", "--cpu-start", "off", "--border", border,
                                          "--border-value", str(CVAL), *plan)
                    got = got.astype(np.float64).reshape(want.shape)
                    self.assertLessEqual(np.abs(got - want).max(), 1e-5 * size.max(), border)
                    runs.append(got.tobytes())
            self.assertEqual(runs[0], runs[1], border + ": bytes depend on the band plan")

    def test_projections(self):
        """Max, min, sum and mean along z, alone and after (and before) other stages: the CPU's
        bytes (sums in plane order, in double). Until the engine's GPU slots hold every plane of
        a band, --device cuda refuses them (exit 5, naming --device cpu) and auto takes the CPU:
        both outcomes are accepted here, the second checked."""
        x = volume(9, 13, 22, 1, "f32", seed=12)
        x[3, 4, 5] = np.nan
        x[5, 6:8, 6:8] = -0.0
        x[2, 6:8, 6:8] = 0.0
        cases = [(x, "project op=%s" % op, []) for op in ("max", "min", "sum", "mean")]
        for j, t in enumerate(("u8", "u16", "f32")):
            v = volume(7, 11, 10, 3 if j != 1 else 1, t, seed=30 + j)
            cases += [(v, "project op=%s" % op, []) for op in ("max", "min", "sum", "mean")]
        cases += [(volume(6, 12, 14, 1, "u16", seed=7), p, e) for p, e in (
            ("gaussian sigma=1 ! project op=mean", []),
            ("median size=3 ! project op=max", []),
            ("project op=sum ! gaussian sigma=1.5", ["--precision", "f64"]),
            ("maximum size=5 ! project op=min ! scale mul=0.5", ["--border", "constant"]),
            ("project op=mean", ["--out-type", "f64"]))]
        for v, pipeline, extra in cases:
            with self.subTest(pipeline=pipeline, type=str(v.dtype), shape=v.shape, extra=extra):
                probe = self.oocrun_npy(v, pipeline, "--device", "cuda", *extra, code=None)
                if isinstance(probe, str):  # refused: the CPU under auto
                    self.assertIn("--device cpu", probe)
                    auto = self.oocrun_npy(v, pipeline, "--device", "auto", *extra)
                    cpu = self.oocrun_npy(v, pipeline, "--device", "cpu", *extra, name="cpu.npy")
                    self.assertTrue(auto.tobytes() == cpu.tobytes(), pipeline)
                    continue
                got = self.both(v, pipeline, *extra)
                self.assertEqual(got.shape[0], v.shape[1], pipeline)  # one plane out

    def test_rank_windows_beyond_64_samples(self):
        """Boxes of 125-189 samples (the radix select): each border, u8/u16/i16/f32 (f32 with
        both signs, signed zeros and a NaN), shapes of 1-3 columns and odd counts, even sizes;
        the CPU's bytes, and scipy's where no NaN is in the window."""
        cases = [("median size=5", (5, 5, 5), lambda v, **k: ndi.median_filter(v, 5, **k)),
                 ("rank size=7x7x3 index=100", (7, 7, 3),
                  lambda v, **k: ndi.rank_filter(v, 100, (7, 7, 3), **k)),
                 ("percentile size=3x5x9 q=30", (3, 5, 9),
                  lambda v, **k: ndi.percentile_filter(v, 30, (3, 5, 9), **k)),
                 ("rank size=6x4x6 index=-3", (6, 4, 6),
                  lambda v, **k: ndi.rank_filter(v, -3, (6, 4, 6), **k))]
        shapes = [(7, 13, 22), (5, 11, 3), (9, 6, 1), (6, 10, 2), (4, 1, 17)]
        for i, border in enumerate(BORDERS):
            for j, t in enumerate(("u8", "u16", "i16", "f32")):
                pipeline, size, ref = cases[(i + j) % len(cases)]
                shape = shapes[(i + 2 * j) % len(shapes)]
                x = volume(*shape, 1, t, seed=60 + 4 * i + j)
                if t == "f32":
                    x = signed_f32(x, seed=i)
                with self.subTest(pipeline=pipeline, type=t, border=border, shape=shape):
                    got = self.both(x, pipeline, "--border", border, "--border-value", str(CVAL),
                                    *vol(x))
                    nan = np.isnan(x) if t == "f32" else np.zeros(x.shape, bool)
                    hit = ndi.maximum_filter(nan.astype(np.uint8), size=size, mode=border,
                                             cval=0).astype(bool)
                    if t == "f32":
                        self.assertTrue(np.array_equal(np.isnan(got), hit), pipeline)
                    want = ref(np.where(nan, 0, x), mode=border, cval=CVAL)
                    self.assertTrue(np.array_equal(got[~hit], want[~hit]), pipeline)
        # Three channels, and a window larger than the volume.
        x = volume(3, 5, 6, 3, "u16", seed=70)
        for pipeline in ("median size=7", "rank size=5x9x3 index=120"):
            with self.subTest(pipeline=pipeline, channels=3):
                self.both(x, pipeline, "--border", "mirror")

    def test_footprints_with_holes(self):
        """3-D footprints (the runs of their ones): rank, median, percentile and the morphology's
        extremes, opening, closing and top-hats over each border and u8/u16/i16/f32; the CPU's
        bytes."""
        rng = np.random.default_rng(80)
        holes = rng.random((3, 5, 5)) < 0.6
        holes[1, 2, 2] = True
        holes[0] = False  # a plane of one one, in its corner
        holes[0, 0, 4] = True
        ball = np.zeros((5, 5, 5), np.uint8)
        zz, yy, xx = np.mgrid[-2:3, -2:3, -2:3]
        ball[zz * zz + yy * yy + xx * xx <= 4] = 1  # 33 ones
        big = (rng.random((5, 7, 5)) < 0.8).astype(np.uint8)  # ~140 ones: beyond the registers
        small = np.zeros((3, 1, 3), np.uint8)
        small[0, 0, 0] = small[2, 0, 2] = small[1, 0, 1] = 1
        files = {}
        for name, f in (("holes", holes), ("ball", ball), ("big", big), ("small", small)):
            files[name] = self.p(name + ".npy")
            np.save(files[name], f)
        stages = ["median footprint={holes}", "rank footprint={big} index=17",
                  "percentile footprint={ball} q=70", "minimum footprint={holes}",
                  "maximum footprint={big}", "opening footprint={ball}",
                  "closing footprint={holes}", "white-tophat footprint={small}",
                  "black-tophat footprint={ball}", "median footprint={small}"]
        shapes = [(7, 13, 22), (6, 9, 3), (5, 7, 1), (8, 4, 2)]
        k = 0
        for i, border in enumerate(BORDERS):
            for j in range(4):
                pipeline = stages[k % len(stages)].format(**files)
                t = ("u8", "u16", "i16", "f32")[(i + j) % 4]
                shape = shapes[(i + j) % len(shapes)]
                x = volume(*shape, 1, t, seed=90 + k)
                if t == "f32":
                    x = signed_f32(x, seed=k)
                k += 1
                with self.subTest(pipeline=pipeline, type=t, border=border, shape=shape):
                    self.both(x, pipeline, "--border", border, "--border-value", str(CVAL),
                              *vol(x))
        # scipy's own result where no NaN is near (the footprints' placement and mirroring).
        x = volume(6, 9, 8, 1, "u16", seed=99)
        for pipeline, ref in (
                ("rank footprint=%s index=5" % files["holes"],
                 lambda v: ndi.rank_filter(v, 5, footprint=holes, mode="wrap")),
                ("closing footprint=%s" % files["ball"],
                 lambda v: ndi.grey_closing(v, footprint=ball, mode="wrap"))):
            with self.subTest(pipeline=pipeline, reference="scipy"):
                got = self.both(x, pipeline, "--border", "wrap")
                self.assertTrue(np.array_equal(got, ref(x)), pipeline)

    def test_what_the_gpu_does_not_take(self):
        """Rank windows deeper than the 256 plane addresses a launch carries."""
        x = volume(6, 9, 10, 1, "u16", seed=2)
        for pipeline in ("rank size=300x1x3 index=7",):
            with self.subTest(pipeline=pipeline):
                err = self.oocrun_npy(x, pipeline, "--device", "cuda", code=5)
                self.assertIn("--device cpu", err)
                auto = self.oocrun_npy(x, pipeline, "--device", "auto")
                cpu = self.oocrun_npy(x, pipeline, "--device", "cpu", name="cpu.npy")
                self.assertTrue(np.array_equal(auto, cpu))

if __name__ == "__main__":
    main()
