"""What the pipeline checks (test_pipeline_*.py) share: running oocrun and the float64
references. They check oocrun pipelines end to end:

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

Usage: test_pipeline_*.py --bin-dir DIR [unittest options]
"""
import os
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
BIN, _REST = cli_args.bin_dir_and_rest(cli_args.entry(__name__))
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
        # A cleanup, not tearDown: a subclass's setUp that skips after this (no GPU) runs no
        # tearDown, and its folder stayed behind.
        self.addCleanup(shutil.rmtree, self.d, True)

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


def main():
    """A check run as a script: unittest.main over the script's tests, with its leftover options."""
    unittest.main(argv=[sys.argv[0]] + _REST)
