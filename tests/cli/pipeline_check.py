#!/usr/bin/env python3
"""oocrun pipelines end to end (issue 30).

A. Each stage against scipy.ndimage in float64 (gaussian, uniform, correlate1d, separable,
   convolve, gradient-magnitude, dog, unsharp, subtract-background, scale, abs, clamp, threshold,
   convert, equalize against cv2.equalizeHist), over u8 / u16 / i16 / f32 inputs, 1 and 3
   channels, the five borders, odd sizes and band heights that do not divide the height; outputs
   poisoned first. Tolerance: f32 intermediates, 2e-5 x the data's scale; integer outputs within
   1 of the rounded reference.
B. A seeded sweep of 240 random pipelines of 2-4 stages: the fused run is bit-identical (cmp) to
   the stages run one by one through intermediate files of the intermediate type, with random
   borders and band heights.
C. A one-stage pipeline gives oocconv's and ooceq's bytes; --part and mpirun give one process's.
D. Bad pipelines (unknown stage or parameter, bad value, missing value, equalize on f32, empty
   stage, '!' at either end): exit 2, a message naming the stage and the parameter, no output.
E. With a CUDA device (oocinfo lists one): pipelines on --device cuda bit-identical to the CPU.
F. minimum, maximum, opening, closing, white-tophat, black-tophat exactly equal to
   scipy.ndimage's (minimum_filter, ..., black_tophat with `size`) over every type, 1 and 3
   channels, the five borders, odd, even and rectangular sizes, windows larger than the image.

Usage: pipeline_check.py --bin-dir DIR [unittest options]
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

try:
    import cv2
except ImportError:
    cv2 = None

import cli_args  # beside this file

# --bin-dir DIR as a script (the other arguments go to unittest.main), $OOC_BIN_DIR under
# pytest (conftest.py).
BIN, _REST = cli_args.bin_dir_and_rest(__name__)
MPIRUN = shutil.which("mpirun")
NP = {"u8": np.uint8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "i32": np.int32,
      "f32": np.float32, "f64": np.float64}
BORDERS = ["reflect", "mirror", "nearest", "wrap", "constant"]


def tool(name):
    return os.path.join(BIN, name)


def run(cmd, **kw):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_COMM_WORLD", "PMI_", "PMIX_", "SLURM_"))}
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300,
                          env=env, **kw)


def gauss_taps(sigma, radius=None):
    r = int(np.ceil(3 * sigma - 1e-9)) if radius is None else radius
    k = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-0.5 * (k / sigma) ** 2)
    return w / w.sum()


def sep(x, row, col, mode, cval):
    y = ndi.convolve1d(x, row, axis=1, mode=mode, cval=cval)
    return ndi.convolve1d(y, col, axis=0, mode=mode, cval=cval)


def per_channel(f, x):
    if x.ndim == 2:
        return f(x)
    return np.stack([f(x[..., c]) for c in range(x.shape[2])], axis=-1)


def reference(stage, x, mode, cval):
    """float64 result of one stage on float64 (or integer) data x."""
    name, args = stage
    a = dict(args)
    xf = x.astype(np.float64)
    g = lambda s: per_channel(lambda c: sep(c, gauss_taps(s), gauss_taps(s), mode, cval), xf)
    if name == "gaussian":
        t = gauss_taps(float(a["sigma"]), int(a["radius"]) if "radius" in a else None)
        return per_channel(lambda c: sep(c, t, t, mode, cval), xf)
    if name == "uniform":
        n = int(a["size"])
        return per_channel(lambda c: ndi.uniform_filter(c, n, mode=mode, cval=cval), xf)
    if name == "correlate1d":
        t = [float(v) for v in a["taps"].split(",")]
        ax = int(a.get("axis", "1"))  # 1: along x, numpy's axis 1
        return per_channel(lambda c: ndi.correlate1d(c, t, axis=ax, mode=mode, cval=cval), xf)
    if name == "separable":
        r = [float(v) for v in a.get("row", "1").split(",")]
        co = [float(v) for v in a.get("col", "1").split(",")]
        return per_channel(lambda c: sep(c, r, co, mode, cval), xf)
    if name == "convolve":
        k = {"laplace": np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], float),
             "sobel-x": np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], float)}[a["kernel"]]
        return per_channel(lambda c: ndi.convolve(c, k, mode=mode, cval=cval), xf)
    if name == "gradient-magnitude":
        return per_channel(lambda c: np.hypot(ndi.sobel(c, 1, mode=mode, cval=cval),
                                              ndi.sobel(c, 0, mode=mode, cval=cval)), xf)
    if name == "dog":
        return g(float(a["sigma1"])) - g(float(a["sigma2"]))
    if name == "unsharp":
        return xf + float(a.get("amount", "1")) * (xf - g(float(a["sigma"])))
    if name == "subtract-background":
        return xf - g(float(a["sigma"]))
    if name == "scale":
        return xf * float(a.get("mul", "1")) + float(a.get("add", "0"))
    if name == "abs":
        return np.abs(xf)
    if name == "clamp":
        return np.clip(xf, float(a["min"]), float(a["max"]))
    if name == "threshold":
        return (xf > float(a["value"])).astype(np.float64)
    raise AssertionError(name)


def to_type(x, t):
    if t in ("f32", "f64"):
        return x.astype(NP[t])
    info = np.iinfo(NP[t])
    return np.clip(np.rint(np.nan_to_num(x)), info.min, info.max).astype(NP[t])


def stage_text(stage):
    name, args = stage
    return " ".join([name] + ["%s=%s" % kv for kv in args])


class Base(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ooc-pipe-")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.d, name)

    def image(self, h, w, c, t, seed=1):
        rng = np.random.default_rng(seed)
        shape = (h, w) if c == 1 else (h, w, c)
        if t in ("f32", "f64"):
            x = rng.uniform(0.5, 200.0, shape)
        else:
            info = np.iinfo(NP[t])
            x = rng.integers(max(info.min, -3000), min(info.max, 3000) + 1, shape)
            if t == "u8":
                x = rng.integers(1, 256, shape)
        return x.astype(NP[t])

    def write(self, name, x):
        path = self.p(name)
        x.tofile(path)
        return path

    def oocrun(self, inp, out, x, pipeline, *extra, itype=None):
        h, w = x.shape[:2]
        c = 1 if x.ndim == 2 else x.shape[2]
        t = itype or [k for k, v in NP.items() if v == x.dtype.type][0]
        with open(out, "wb") as f:  # poison: every sample must be written
            f.write(b"\x5a" * 64)
        return run([tool("oocrun"), inp, out, pipeline, "--width", w, "--type", t,
                    "--channels", c, "-q"] + list(extra))


class Stages(Base):
    CASES = [
        ("gaussian", [("sigma", "1.5")]),
        ("gaussian", [("sigma", "2"), ("radius", "3")]),
        ("uniform", [("size", "5")]),
        ("correlate1d", [("taps", "1,-2,4"), ("axis", "0")]),
        ("correlate1d", [("taps", "1,-2,4"), ("axis", "1")]),
        ("separable", [("row", "1,2,1"), ("col", "-1,0,3,0,1")]),
        ("convolve", [("kernel", "laplace")]),
        ("convolve", [("kernel", "sobel-x")]),
        ("gradient-magnitude", []),
        ("dog", [("sigma1", "1"), ("sigma2", "2.5")]),
        ("unsharp", [("sigma", "1"), ("amount", "0.7")]),
        ("subtract-background", [("sigma", "3")]),
        ("scale", [("mul", "-0.5"), ("add", "7")]),
        ("abs", []),
        ("clamp", [("min", "40"), ("max", "120")]),
        ("threshold", [("value", "90")]),
    ]

    def test_each_stage_against_scipy(self):
        rng = random.Random(7)
        for i, stage in enumerate(self.CASES):
            for t, c in (("f32", 1), ("u16", 3), ("u8", 1), ("i16", 2)):
                mode = BORDERS[(i + len(t) + c) % 5]
                # gradient-magnitude's y derivative smooths along x first: under a constant
                # other than 0 its edge rows differ from scipy.ndimage.sobel(axis=0)'s order.
                cval = 5.0 if mode == "constant" and stage[0] != "gradient-magnitude" else 0.0
                h, w = 37 + i, 29 + 2 * c
                with self.subTest(stage=stage_text(stage), type=t, channels=c, border=mode):
                    x = self.image(h, w, c, t, seed=i)
                    if stage[0] == "abs":
                        x = (x.astype(np.float64) - x.mean()).astype(np.float32)
                        t2 = "f32"
                    else:
                        t2 = t
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, stage_text(stage), "--border", mode,
                                    "--border-value", cval, "--band-rows",
                                    rng.choice([1, 4, 7, 11]), "--out-type", "f32", itype=t2)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = np.fromfile(out, np.float32).reshape(x.shape)
                    want = reference(stage, x, mode, cval)
                    scale = max(1.0, float(np.abs(want).max()), float(np.abs(x).max()))
                    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale)

    def test_integer_outputs_round_and_saturate(self):
        x = self.image(41, 33, 1, "u8", seed=3)
        inp = self.write("in.raw", x)
        for pipeline, ref in (("scale mul=3 add=-100", lambda v: v * 3.0 - 100),
                              ("unsharp sigma=1 amount=2", None)):
            with self.subTest(pipeline=pipeline):
                out = self.p("o.raw")
                r = self.oocrun(inp, out, x, pipeline)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = np.fromfile(out, np.uint8).reshape(x.shape)
                want = ref(x.astype(np.float64)) if ref else reference(
                    ("unsharp", [("sigma", "1"), ("amount", "2")]), x, "reflect", 0)
                want = to_type(want, "u8").astype(int)
                self.assertLessEqual(int(np.abs(got.astype(int) - want).max()), 1)
                self.assertGreater(len(np.unique(got)), 10)

    @unittest.skipUnless(cv2 is not None, "OpenCV (python3-opencv) not installed")
    def test_equalize_against_opencv(self):
        x = self.image(53, 47, 2, "u8", seed=5) // 3 + 40
        inp = self.write("in.raw", x)
        out = self.p("eq.raw")
        r = self.oocrun(inp, out, x, "equalize", "--band-rows", "7")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = np.fromfile(out, np.uint8).reshape(x.shape)
        want = np.stack([cv2.equalizeHist(np.ascontiguousarray(x[..., c])) for c in range(2)], -1)
        np.testing.assert_array_equal(got, want)
        # After a filter and a convert: the histogram of the converted image.
        out2 = self.p("eq2.raw")
        r = self.oocrun(inp, out2, x, "gaussian sigma=1 ! convert type=u8 ! equalize")
        self.assertEqual(r.returncode, 0, r.stderr)
        g = to_type(reference(("gaussian", [("sigma", "1")]), x, "reflect", 0), "u8")
        want = np.stack([cv2.equalizeHist(np.ascontiguousarray(g[..., c])) for c in range(2)], -1)
        got = np.fromfile(out2, np.uint8).reshape(x.shape)
        # A value of g may differ by one rounding from the reference: compare most samples.
        self.assertGreater(np.mean(got == want), 0.97)


def random_stage(rng, current):
    """A random stage valid on an input of type `current`, and the type it outputs."""
    choices = [
        lambda: (("gaussian", [("sigma", rng.choice(["0.8", "1.5", "2"]))]), "f32"),
        lambda: (("uniform", [("size", rng.choice(["3", "5"]))]), "f32"),
        lambda: (("correlate1d", [("taps", "1,-2,4"), ("axis", rng.choice("01"))]), "f32"),
        lambda: (("convolve", [("kernel", rng.choice(["laplace", "sobel-x"]))]), "f32"),
        lambda: (("gradient-magnitude", []), "f32"),
        lambda: (("dog", [("sigma1", "1"), ("sigma2", "2")]), "f32"),
        lambda: (("unsharp", [("sigma", "1"), ("amount", "0.7")]), "f32"),
        lambda: (("subtract-background", [("sigma", "2.5")]), "f32"),
        lambda: (("scale", [("mul", "0.5"), ("add", "3")]), "f32"),
        lambda: (("abs", []), "f32"),
        lambda: (("clamp", [("min", "10"), ("max", "150")]), "f32"),
        lambda: (("threshold", [("value", "60")]), "f32"),
        lambda: (("convert", [("type", rng.choice(["u8", "u16", "i16"]))]), None),
        lambda: ((rng.choice(["minimum", "maximum", "opening", "closing", "white-tophat",
                              "black-tophat"]), [("size", rng.choice(["3", "4", "2x5", "7x1"]))]),
                 current),
    ]
    if current in ("u8", "u16"):
        choices.append(lambda: (("equalize", []), current))
    stage, out = rng.choice(choices)()
    if out is None:
        out = dict(stage[1])["type"]
    return stage, out


class Fusion(Base):
    def test_fused_equals_stage_by_stage(self):
        rng = random.Random(2026)
        count = 0
        for case in range(240):
            t = rng.choice(["u8", "u16", "f32"])
            c = rng.choice([1, 1, 3])
            h, w = rng.randint(5, 40), rng.randint(3, 37)
            mode = rng.choice(BORDERS)
            x = self.image(h, w, c, t, seed=case)
            inp = self.write("in%d.raw" % case, x)
            stages, types = [], [t]
            for _ in range(rng.randint(2, 4)):
                s, o = random_stage(rng, types[-1])
                stages.append(s)
                types.append(o)
            pipeline = " ! ".join(stage_text(s) for s in stages)
            common = ["--border", mode, "--border-value", "3", "-q", "--channels", c]
            with self.subTest(case=case, pipeline=pipeline, type=t, border=mode, size=(h, w)):
                fused = self.p("fused%d.raw" % case)
                r = run([tool("oocrun"), inp, fused, pipeline, "--width", w, "--type", t,
                         "--band-rows", rng.choice([1, 3, 8, 64])] + common)
                self.assertEqual(r.returncode, 0, r.stderr)
                # One by one through files of each stage's own output type.
                cur, cur_t = inp, t
                for k, s in enumerate(stages):
                    nxt = self.p("seq%d_%d.raw" % (case, k))
                    r = run([tool("oocrun"), cur, nxt, stage_text(s), "--width", w, "--type",
                             cur_t, "--out-type", types[k + 1]] + common)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    cur, cur_t = nxt, types[k + 1]
                # The output takes the type of the last stage that sets one.
                setters = [k for k, s in enumerate(stages) if s[0] in ("convert", "equalize")]
                final_t = types[setters[-1] + 1] if setters else t
                if cur_t != final_t:
                    nxt = self.p("seq%d_final.raw" % case)
                    r = run([tool("oocrun"), cur, nxt, "convert type=" + final_t, "--width", w,
                             "--type", cur_t] + common)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    cur = nxt
                with open(fused, "rb") as a, open(cur, "rb") as b:
                    self.assertTrue(a.read() == b.read(), "fused differs from stage by stage")
                count += 1
        self.assertGreaterEqual(count, 200)

    def test_one_stage_gives_oocconv_and_ooceq_bytes(self):
        for t, c in (("u16", 3), ("f32", 1), ("u8", 2)):
            x = self.image(61, 45, c, t, seed=9)
            inp = self.write("in.raw", x)
            common = ["--width", 45, "--type", t, "--channels", c, "-q"]
            for ours, theirs in (("gaussian sigma=2.5", ["--sigma", "2.5"]),
                                 ("uniform size=7", ["--filter", "box", "--radius", "3"]),
                                 ("convolve kernel=laplace", ["--kernel", "laplace"]),
                                 ("separable row=1,2,1 col=1,-1,3", ["--row-taps", "1,2,1",
                                                                     "--col-taps", "1,-1,3"])):
                with self.subTest(type=t, stage=ours):
                    a, b = self.p("a.raw"), self.p("b.raw")
                    r = run([tool("oocrun"), inp, a, ours, "--border", "mirror"] + common)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    r = run([tool("oocconv"), inp, b, "--border", "mirror"] + theirs + common)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(a, "rb") as fa, open(b, "rb") as fb:
                        self.assertTrue(fa.read() == fb.read(), "differs from oocconv")
            if t in ("u8", "u16"):
                a, b = self.p("ea.raw"), self.p("eb.raw")
                self.assertEqual(run([tool("oocrun"), inp, a, "equalize"] + common).returncode, 0)
                self.assertEqual(run([tool("ooceq"), inp, b] + common).returncode, 0)
                with open(a, "rb") as fa, open(b, "rb") as fb:
                    self.assertTrue(fa.read() == fb.read(), "differs from ooceq")

    def test_sigterm_then_resume_is_identical(self):
        import signal
        import time
        # About 3 s on one thread of the CI machine: a signal lands mid-run.
        pipe = ("gaussian sigma=12 ! unsharp sigma=8 amount=0.5 ! gaussian sigma=12 ! "
                "convert type=u16")
        args = ["synth:noise", None, pipe, "--width", "8192", "--height", "16000", "--threads",
                "1", "-q"]
        ref, out = self.p("ref.raw"), self.p("r.raw")
        r = run([tool("oocrun")] + [a if a else ref for a in args])
        self.assertEqual(r.returncode, 0, r.stderr)
        proc = subprocess.Popen([tool("oocrun")] + [a if a else out for a in args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while proc.poll() is None and not os.path.exists(out + ".partial.journal") and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        if proc.poll() is not None:
            self.skipTest("the run ended before the signal")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 75, err)
        self.assertFalse(os.path.exists(out))
        r = run([tool("oocrun")] + [a if a else out for a in args] + ["--resume"])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(ref, "rb") as a, open(out, "rb") as b:
            self.assertTrue(a.read() == b.read(), "resumed output differs")
        # Other stage parameters are another job: refused.
        r = run([tool("oocrun"), "synth:noise", self.p("x.raw"), pipe, "--width", "4096",
                 "--height", "6000", "--rows", "0:100", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocrun"), "synth:noise", self.p("x.raw"), pipe.replace("0.5", "0.6"),
                 "--width", "4096", "--height", "6000", "--rows", "0:100", "--resume", "-q"])
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_parts_and_mpi_equal_one_process(self):
        x = self.image(203, 97, 1, "u16", seed=4)
        inp = self.write("in.raw", x)
        pipe = "gaussian sigma=1.5 ! unsharp sigma=1 amount=0.7 ! gradient-magnitude ! convert type=u8"
        common = ["--width", 97, "--type", "u16", "-q"]
        one = self.p("one.raw")
        self.assertEqual(run([tool("oocrun"), inp, one, pipe] + common).returncode, 0)
        parts = self.p("parts.raw")
        for i in (2, 0, 1):
            r = run([tool("oocrun"), inp, parts, pipe, "--part", "%d/3" % i] + common)
            self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocconv"), "--finish", parts])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(one, "rb") as a, open(parts, "rb") as b:
            self.assertTrue(a.read() == b.read())
        if not MPIRUN:
            self.skipTest("mpirun not installed")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none")
        for pipe2 in (pipe, "gaussian sigma=1 ! convert type=u16 ! equalize"):
            ref = self.p("ref.raw")
            self.assertEqual(run([tool("oocrun"), inp, ref, pipe2] + common).returncode, 0)
            out = self.p("mpi.raw")
            r = subprocess.run([MPIRUN, "-np", "3", tool("oocrun"), inp, out, pipe2] +
                               [str(v) for v in common], capture_output=True, text=True,
                               env=env, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(ref, "rb") as a, open(out, "rb") as b:
                self.assertTrue(a.read() == b.read(), pipe2)


MORPH = {"minimum": ndi.minimum_filter, "maximum": ndi.maximum_filter,
         "opening": ndi.grey_opening, "closing": ndi.grey_closing,
         "white-tophat": ndi.white_tophat, "black-tophat": ndi.black_tophat}


class WorkingType(Base):
    """Issue 43, items 1 and 2: a chain computes in oocconv's type, writes the type it makes."""

    def wide_image(self, t, seed):
        rng = np.random.default_rng(seed)
        info = np.iinfo(NP[t])
        return rng.integers(info.min, int(info.max), (47, 53), dtype=np.int64).astype(NP[t])

    def test_32_bit_integer_chains_equal_oocconv_and_float64(self):
        for t in ("u32", "i32"):
            x = self.wide_image(t, seed=43)
            inp = self.write("w.raw", x)
            common = ["--width", 53, "--type", t, "-q", "--border", "reflect"]
            for method in ("direct", "fft"):
                for ours, theirs, ref in (
                        ("gaussian sigma=2", ["--sigma", "2"],
                         lambda v: sep(v, gauss_taps(2), gauss_taps(2), "reflect", 0)),
                        ("uniform size=5", ["--filter", "box", "--radius", "2"],
                         lambda v: ndi.uniform_filter(v, 5, mode="reflect")),
                        ("correlate1d taps=1,-2,4 axis=1", ["--row-taps", "4,-2,1",
                                                            "--col-taps", "1"],
                         lambda v: ndi.correlate1d(v, [1, -2, 4], axis=1, mode="reflect")),
                        ("separable row=1,2,1 col=1,-1,3", ["--row-taps", "1,2,1",
                                                            "--col-taps", "1,-1,3"],
                         lambda v: sep(v, [1, 2, 1], [1, -1, 3], "reflect", 0))):
                    with self.subTest(type=t, stage=ours, method=method):
                        a, b = self.p("a.raw"), self.p("b.raw")
                        r = run([tool("oocrun"), inp, a, ours + " method=" + method] + common)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        r = run([tool("oocconv"), inp, b, "--method", method] + theirs + common)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        got = np.fromfile(a, NP[t]).reshape(x.shape)
                        self.assertTrue(np.array_equal(got, np.fromfile(b, NP[t]).reshape(
                            x.shape)), "differs from oocconv")
                        info = np.iinfo(NP[t])
                        want = np.clip(np.rint(ref(x.astype(np.float64))), info.min, info.max)
                        # The FFT's error is relative to the data's scale (2^32 here).
                        tol = 1 if method == "direct" else 1e-9 * 2.0 ** 32
                        err = np.abs(got.astype(np.float64) - want).max()
                        self.assertLessEqual(err, tol)
            for method in ("direct", "fft"):
                with self.subTest(type=t, stage="convolve", method=method):
                    a, b = self.p("a.raw"), self.p("b.raw")
                    self.assertEqual(run([tool("oocrun"), inp, a, "convolve kernel=box:5 "
                                          "method=" + method] + common).returncode, 0)
                    self.assertEqual(run([tool("oocconv"), inp, b, "--kernel", "box:5",
                                          "--method", method] + common).returncode, 0)
                    with open(a, "rb") as fa, open(b, "rb") as fb:
                        self.assertTrue(fa.read() == fb.read(), "convolve differs from oocconv")
                    got = np.fromfile(a, NP[t]).reshape(x.shape).astype(np.float64)
                    info = np.iinfo(NP[t])
                    want = np.clip(np.rint(ndi.uniform_filter(x.astype(np.float64), 5,
                                                              mode="reflect")), info.min, info.max)
                    tol = 1 if method == "direct" else 1e-9 * 2.0 ** 32
                    self.assertLessEqual(np.abs(got - want).max(), tol)

    def test_f64_output_of_f32_is_computed_in_f64(self):
        x = self.image(40, 33, 1, "f32", seed=5)
        inp = self.write("f.raw", x)
        common = ["--width", 33, "--type", "f32", "-q", "--out-type", "f64"]
        a, b = self.p("a.raw"), self.p("b.raw")
        self.assertEqual(run([tool("oocrun"), inp, a, "gaussian sigma=1.5"] + common).returncode, 0)
        self.assertEqual(run([tool("oocconv"), inp, b, "--sigma", "1.5"] + common).returncode, 0)
        got = np.fromfile(a, np.float64).reshape(x.shape)
        self.assertTrue(np.array_equal(got, np.fromfile(b, np.float64).reshape(x.shape)))
        want = sep(x.astype(np.float64), gauss_taps(1.5), gauss_taps(1.5), "reflect", 0)
        self.assertLess(np.abs(got - want).max(), 1e-12 * np.abs(want).max())

    def test_output_takes_the_last_type_setting_stage(self):
        x = self.image(30, 41, 1, "f32", seed=8)
        inp = self.p("e.npy")
        np.save(inp, x)
        for pipeline, extra, dtype in (
                ("gaussian sigma=1 ! convert type=u8 ! equalize", [], np.uint8),
                ("convert type=u16 ! equalize ! gaussian sigma=1", [], np.uint16),
                ("convert type=u8 ! equalize ! abs", [], np.uint8),
                ("gaussian sigma=1 ! convert type=u8 ! equalize", ["--out-type", "f64"],
                 np.float64),
                ("convert type=i16 ! scale mul=2", [], np.int16),
                ("scale mul=2", [], np.float32)):
            with self.subTest(pipeline=pipeline, extra=extra):
                out = self.p("e_out.npy")
                r = run([tool("oocrun"), inp, out, pipeline, "-q"] + extra)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(np.load(out).dtype, dtype)
        # The values: equalize's table applied, as the same chain written to u8 explicitly.
        a, b = self.p("ea.npy"), self.p("eb.npy")
        run([tool("oocrun"), inp, a, "gaussian sigma=1 ! convert type=u8 ! equalize", "-q"])
        run([tool("oocrun"), inp, b, "gaussian sigma=1 ! convert type=u8 ! equalize", "-q",
             "--out-type", "u8"])
        self.assertTrue(np.array_equal(np.load(a), np.load(b)))
        # ... which is OpenCV's equalization of the u8 image before it.
        if cv2 is not None:
            c = self.p("ec.npy")
            run([tool("oocrun"), inp, c, "gaussian sigma=1 ! convert type=u8", "-q"])
            self.assertTrue(np.array_equal(np.load(a), cv2.equalizeHist(np.load(c))))


class StageReport(Base):
    def test_stats_name_each_stage_as_built(self):
        """--stats says what each stage computes with: the FFT or the direct sum, and the
        accumulator (issue 43, item 16)."""
        import json
        x = self.image(300, 280, 1, "f32", seed=4)
        inp = self.write("s.raw", x)
        out = self.p("s_out.raw")
        r = self.oocrun(inp, out, x, "gaussian sigma=30 method=fft ! gaussian sigma=1 ! "
                        "median size=3", "--stats", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        stages = json.loads(r.stdout)["stages"]
        self.assertEqual(len(stages), 3)
        self.assertIn("FFT", stages[0])
        self.assertIn("direct", stages[1])
        self.assertIn("accumulate f32", stages[1])
        r = self.oocrun(inp, out, x, "gaussian sigma=1", "--stats", "text")
        self.assertRegex(r.stdout, r"\nstage 1 +separable .*direct")
        r = run([tool("oocinfo"), inp, "--width", 280, "--type", "f32", "--pipeline",
                 "gaussian sigma=30 method=fft ! uniform size=3"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"stage: separable .*FFT")
        self.assertRegex(r.stdout, r"stage: separable .*direct")
        x32 = self.image(30, 28, 1, "u32", seed=4)
        inp32 = self.write("s32.raw", x32)
        r = self.oocrun(inp32, out, x32, "gaussian sigma=1", "--stats", "json")
        self.assertIn("accumulate f64", json.loads(r.stdout)["stages"][0])


class Morphology(Base):
    def test_against_scipy_exactly(self):
        rng = random.Random(33)
        sizes = ["1", "2", "3", "4", "5x2", "7x1", "1x6", "11", "41"]
        count = 0
        for t in ["u8", "u16", "i16", "u32", "i32", "f32", "f64"]:
            for op in MORPH:
                c = rng.choice([1, 3])
                size = rng.choice(sizes)
                mode = rng.choice(BORDERS)
                h, w = rng.randint(5, 29), rng.randint(3, 33)
                x = self.image(h, w, c, t, seed=count)
                count += 1
                hw = [int(v) for v in size.split("x")] * (1 if "x" in size else 2)
                with self.subTest(type=t, op=op, size=size, border=mode, shape=x.shape):
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, "%s size=%s" % (op, size), "--border", mode,
                                    "--border-value", 7, "--band-rows", rng.choice([1, 3, 8, 64]))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = np.fromfile(out, x.dtype).reshape(x.shape)
                    want = MORPH[op](x, size=tuple(hw) + ((1,) if c > 1 else ()), mode=mode,
                                     cval=7)
                    np.testing.assert_array_equal(got, want)

    def test_rank_filters_against_scipy_exactly(self):
        rng = random.Random(51)
        sizes = ["2", "3", "4x3", "5", "1x7", "6x2", "9", "25"]
        count = 0
        for t in ["u8", "u16", "i16", "u32", "i32", "f32", "f64"]:
            for stage in ("median", "percentile", "rank"):
                c = rng.choice([1, 3])
                size = rng.choice(sizes)
                mode = rng.choice(BORDERS)
                h, w = rng.randint(4, 31), rng.randint(3, 29)
                x = self.image(h, w, c, t, seed=100 + count)
                count += 1
                hw = [int(v) for v in size.split("x")] * (1 if "x" in size else 2)
                full = tuple(hw) + ((1,) if c > 1 else ())
                n = hw[0] * hw[1]
                if stage == "median":
                    text, want = "median size=%s" % size, ndi.median_filter(
                        x, size=full, mode=mode, cval=7)
                elif stage == "percentile":
                    q = rng.choice([-30, 10, 37.5, 90, 100])
                    text, want = "percentile size=%s q=%g" % (size, q), ndi.percentile_filter(
                        x, q, size=full, mode=mode, cval=7)
                else:
                    k = rng.choice([1, -2, n // 3])
                    text, want = "rank size=%s index=%d" % (size, k), ndi.rank_filter(
                        x, k, size=full, mode=mode, cval=7)
                with self.subTest(type=t, stage=text, border=mode, shape=x.shape):
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, text, "--border", mode, "--border-value", 7,
                                    "--band-rows", rng.choice([1, 3, 8, 64]))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = np.fromfile(out, x.dtype).reshape(x.shape)
                    np.testing.assert_array_equal(got, want)

    def test_median_3x3_of_integers_exactly(self):
        for t, c in (("u8", 1), ("u16", 3), ("i16", 2), ("i32", 1), ("u32", 3)):
            for mode in BORDERS:
                with self.subTest(type=t, border=mode):
                    x = self.image(23, 19, c, t, seed=len(mode))
                    full = (3, 3) + ((1,) if c > 1 else ())
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, "median size=3", "--border", mode,
                                    "--border-value", 7, "--band-rows", 5)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    np.testing.assert_array_equal(
                        np.fromfile(out, x.dtype).reshape(x.shape),
                        ndi.median_filter(x, size=full, mode=mode, cval=7))

    def test_tall_u8_windows_use_column_histograms_exactly(self):
        for size, t, c in (("51x5", "u8", 1), ("49", "u8", 3), ("61x2", "u8", 1)):
            x = self.image(57, 45, c, t, seed=len(size))
            full = tuple(int(v) for v in (size.split("x") * 2)[:2]) + ((1,) if c > 1 else ())
            for stage, want in (("median size=%s" % size, ndi.median_filter(x, size=full)),
                                ("percentile size=%s q=20" % size,
                                 ndi.percentile_filter(x, 20, size=full))):
                with self.subTest(stage=stage, channels=c):
                    inp = self.write("in.raw", x)
                    out = self.p("out.raw")
                    r = self.oocrun(inp, out, x, stage, "--band-rows", 19)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    np.testing.assert_array_equal(np.fromfile(out, x.dtype).reshape(x.shape),
                                                  want)
        # Wider than a job's strip of 1024 output columns and taller than its 128-row chunk: the
        # strips' and chunks' seams, a partial last strip, two channels.
        x = self.image(300, 2300, 2, "u8", seed=5)
        for mode in ("mirror", "constant"):
            with self.subTest(stage="median size=51x3 (strips)", border=mode):
                inp = self.write("in.raw", x)
                out = self.p("out.raw")
                r = self.oocrun(inp, out, x, "median size=51x3", "--border", mode,
                                "--border-value", 7)
                self.assertEqual(r.returncode, 0, r.stderr)
                np.testing.assert_array_equal(
                    np.fromfile(out, x.dtype).reshape(x.shape),
                    ndi.median_filter(x, size=(51, 3, 1), mode=mode, cval=7))

    def test_tall_16_bit_windows_use_column_histograms_exactly(self):
        # Wider than a job's strip of 512 output columns and taller than its 256-row chunk; i16
        # around zero (negative values, the sign flip), u16 over the whole range and a gradient
        # whose medians fall in many coarse bins (more than one group of 8 in a job).
        rng = np.random.default_rng(9)
        yy, xx = np.mgrid[0:300, 0:1100]
        grad = ((yy * 37 + xx * 53 + rng.integers(0, 700, yy.shape)) % 65536).astype(np.uint16)
        cases = (("51x5", self.image(300, 1100, 2, "i16", seed=3)),
                 ("61x3", rng.integers(0, 65536, (300, 1100), dtype=np.uint16)),
                 ("49x9", grad))
        for size, x in cases:
            c = x.shape[2] if x.ndim == 3 else 1
            hw = tuple(int(v) for v in size.split("x"))
            full = hw + ((1,) if c > 1 else ())
            for mode in ("mirror", "constant"):
                for stage, want in (
                        ("median size=%s" % size,
                         ndi.median_filter(x, size=full, mode=mode, cval=7)),
                        ("percentile size=%s q=80" % size,
                         ndi.percentile_filter(x, 80, size=full, mode=mode, cval=7))):
                    with self.subTest(stage=stage, type=x.dtype.name, border=mode):
                        inp = self.write("in.raw", x)
                        out = self.p("out.raw")
                        r = self.oocrun(inp, out, x, stage, "--border", mode, "--border-value", 7,
                                        "--band-rows", 150)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        np.testing.assert_array_equal(
                            np.fromfile(out, x.dtype).reshape(x.shape), want)

    def test_nan_in_the_window_gives_nan(self):
        x = self.image(31, 23, 1, "f32", seed=8)
        x[[3, 17, 29], [5, 11, 0]] = np.nan
        inp = self.write("in.raw", x)
        for op, fill, f in (("minimum", np.inf, ndi.minimum_filter),
                            ("maximum", -np.inf, ndi.maximum_filter)):
            for size in ("3", "4x2"):
                with self.subTest(op=op, size=size):
                    out = self.p("o.raw")
                    r = self.oocrun(inp, out, x, "%s size=%s" % (op, size), "--band-rows", 5)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    got = np.fromfile(out, np.float32).reshape(x.shape)
                    hw = tuple(int(v) for v in size.split("x")) * (1 if "x" in size else 2)
                    nan = ndi.maximum_filter(np.isnan(x).astype(np.uint8), size=hw) > 0
                    want = f(np.where(np.isnan(x), fill, x), size=hw)
                    np.testing.assert_array_equal(np.isnan(got), nan)
                    np.testing.assert_array_equal(got[~nan], want[~nan])

    def test_in_pipelines(self):
        x = self.image(97, 61, 1, "u16", seed=2)
        inp = self.write("in.raw", x)
        out = self.p("o.raw")
        r = self.oocrun(inp, out, x, "gaussian sigma=1 ! white-tophat size=9 ! convert type=u8",
                        "--band-rows", 13)
        self.assertEqual(r.returncode, 0, r.stderr)
        g = reference(("gaussian", [("sigma", "1")]), x, "reflect", 0).astype(np.float32)
        want = to_type(ndi.white_tophat(g, size=9).astype(np.float64), "u8")
        got = np.fromfile(out, np.uint8).reshape(x.shape)
        # The Gaussian is f32 in both; a tie in the top-hat may round differently by one.
        self.assertLessEqual(int(np.abs(got.astype(int) - want.astype(int)).max()), 1)
        self.assertGreater(len(np.unique(got)), 5)


class BadPipelines(Base):
    def test_bad_pipelines_name_stage_and_parameter(self):
        x = self.image(20, 20, 1, "f32")
        inp = self.write("in.raw", x)
        for pipeline, words in (
                ("gausian sigma=2", ["stage 1", "gausian", "gaussian"]),
                ("gaussian sigma=2 ! scale mul=x", ["stage 2 (scale)", "mul"]),
                ("gaussian sgma=2", ["stage 1 (gaussian)", "sgma"]),
                ("gaussian", ["stage 1 (gaussian)", "sigma", "required"]),
                ("gaussian sigma=-1", ["stage 1 (gaussian)", "sigma", "above 0"]),
                ("dog sigma1=1e9 sigma2=1", ["stage 1 (dog)", "sigma1", "349525"]),
                ("gaussian sigma=", ["stage 1 (gaussian)", "sigma", "value"]),
                ("equalize", ["stage 1 (equalize)", "f32", "convert"]),
                ("gaussian sigma=1 ! ! abs", ["stage 2", "empty"]),
                ("gaussian sigma=1 !", ["stage 2", "empty"]),
                ("! gaussian sigma=1", ["stage 1", "empty"]),
                ("uniform size=4", ["stage 1 (uniform)", "odd"]),
                ("clamp min=5 max=1", ["stage 1 (clamp)", "min"]),
                ("convert type=u9", ["stage 1 (convert)", "type"]),
                ("minimum size=0", ["stage 1 (minimum)", "size"]),
                ("opening size=3x", ["stage 1 (opening)", "size"]),
                ("rank size=3 index=9", ["stage 1 (rank)", "index"]),
                ("percentile size=3 q=101", ["stage 1 (percentile)", "q"])):
            with self.subTest(pipeline=pipeline):
                out = self.p("bad.raw")
                r = run([tool("oocrun"), inp, out, pipeline, "--width", 20, "-q"])
                self.assertEqual(r.returncode, 2, r.stderr)
                for w in words:
                    self.assertIn(w, r.stderr)
                self.assertFalse(os.path.exists(out))
                self.assertEqual([f for f in os.listdir(self.d) if "partial" in f], [])


def cuda_device():
    """Whether a CUDA run works here (a CUDA build and a device)."""
    r = run([tool("oocrun"), "synth:noise", "null:", "abs", "--width", 8, "--height", 8,
             "--device", "cuda", "-q"])
    return r.returncode == 0


class Cuda(Base):
    def test_cuda_equals_cpu(self):
        if not cuda_device():
            self.skipTest("no CUDA device, or no CUDA in this build (oocrun --device cuda fails)")
        rng = random.Random(11)
        for case in range(40):
            t = rng.choice(["u8", "u16", "f32"])
            x = self.image(rng.randint(30, 300), rng.randint(20, 257), rng.choice([1, 3]), t,
                           seed=case)
            inp = self.write("in.raw", x)
            stages, types = [], [t]
            for _ in range(rng.randint(1, 5)):
                s, o = random_stage(rng, types[-1])
                stages.append(s)
                types.append(o)
            pipeline = " ! ".join(stage_text(s) for s in stages)
            mode = rng.choice(BORDERS)
            with self.subTest(case=case, pipeline=pipeline, border=mode):
                outs = []
                for dev in ("cpu", "cuda"):
                    out = self.p("%s.raw" % dev)
                    # --cpu-start off: every band on the GPU, none on the CPU while CUDA starts.
                    r = self.oocrun(inp, out, x, pipeline, "--device", dev, "--border", mode,
                                    "--band-rows", rng.choice([5, 16, 0]) or 64,
                                    *(["--cpu-start", "off", "--stats", "json"] if dev == "cuda"
                                      else []))
                    if dev == "cuda":
                        self.assertIn('"cpu_bands": 0', r.stdout)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    outs.append(out)
                with open(outs[0], "rb") as a, open(outs[1], "rb") as b:
                    self.assertTrue(a.read() == b.read(), "cuda differs from cpu")
        # 32-bit integers: the f64 working type on both (issue 43). Double sums are not the same
        # bits on both (the GPU's order and FMAs differ), so a rounding may go the other way.
        for t in ("u32", "i32"):
            info = np.iinfo(NP[t])
            x = np.random.default_rng(3).integers(info.min, int(info.max), (70, 61),
                                                  dtype=np.int64).astype(NP[t])
            inp = self.write("w.raw", x)
            for pipeline in ("gaussian sigma=2", "uniform size=5 ! scale mul=0.5 add=7",
                             "unsharp sigma=1 amount=0.7 ! dog sigma1=1 sigma2=2"):
                with self.subTest(type=t, pipeline=pipeline):
                    outs = []
                    for dev in ("cpu", "cuda"):
                        out = self.p("w%s.raw" % dev)
                        r = self.oocrun(inp, out, x, pipeline, "--device", dev)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        outs.append(out)
                    a, b = (np.fromfile(o, NP[t]).astype(np.float64) for o in outs)
                    self.assertLessEqual(np.abs(a - b).max(), 1, "cuda differs from cpu")
                    self.assertLess(np.count_nonzero(a != b), a.size // 100)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
