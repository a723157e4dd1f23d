#!/usr/bin/env python3
"""Volumes filtered in 3-D on the GPU: every 3-D stage with a CUDA version on --device cuda gives
the CPU backend's bytes (z passes of sums where the CPU's build has FMA, which test_gpu's
separable checks assume too; extremes and rank filters always), over the five borders, u8/u16/
f32, 1 and 3 channels, bands of whole planes (the 2R planes of a band's window taken from the
band before on the device) and bands of a few rows (every plane copied), one slot and several;
the rank filters of up to 64 samples against scipy.ndimage exactly (NaN, -0); fused 3-D chains;
windows the GPU does not take and projections refused on --device cuda (exit 5) and run on the
CPU under auto. Outputs are poisoned first. Without a CUDA device every test skips.
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
    return rng.integers(1, 60000, shape).astype(NP[t])


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
        self.assertEqual(r.returncode, code, r.stderr)
        return np.load(out) if code == 0 else r.stderr

    def both(self, x, pipeline, *extra):
        """The CPU's bytes, and the GPU's under two plans: whole planes, and bands of 3 rows."""
        cpu = self.oocrun_npy(x, pipeline, "--device", "cpu", *extra, name="cpu.npy")
        for plan in ([], ["--band-rows", "3", "--slots", "1"]):
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

    def test_fused_3d_chain_and_larger_volume(self):
        x = volume(40, 64, 96, 1, "u16", seed=5)
        for pipeline in ("gaussian sigma=1 ! median size=3 ! unsharp sigma=1 amount=0.5",
                         "gaussian sigma=2 ! scale mul=0.5 ! maximum size=3",
                         "median size=3 ! median size=3"):
            with self.subTest(pipeline=pipeline):
                self.both(x, pipeline, "--out-type", "f32")

    def test_what_the_gpu_does_not_take(self):
        x = volume(6, 9, 10, 1, "u16", seed=2)
        for pipeline in ("median size=5", "project op=max", "gaussian sigma=1 ! project"):
            with self.subTest(pipeline=pipeline):
                err = self.oocrun_npy(x, pipeline, "--device", "cuda", code=5)
                self.assertIn("--device cpu", err)
                auto = self.oocrun_npy(x, pipeline, "--device", "auto")
                cpu = self.oocrun_npy(x, pipeline, "--device", "cpu", name="cpu.npy")
                self.assertTrue(np.array_equal(auto, cpu))


if __name__ == "__main__":
    main()
