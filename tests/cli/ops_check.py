#!/usr/bin/env python3
"""The two newer operations through their binaries: 2-D convolution (`oocconv --kernel`) against
scipy.ndimage.convolve, and histogram equalization (`ooceq`) against OpenCV's cv2.equalizeHist.

A. `oocconv IN OUT --kernel K` equals scipy.ndimage.convolve(IN as float64, K, mode=--border,
   cval=--border-value) (the kernel flipped, as scipy does), each interleaved channel on its own,
   then converted to the output type (integers: rounded half to even, saturated, NaN -> 0).
   Swept over u8 u16 i16 f32 f64 (and --out-type f32 for the integer types), 1 and 3 channels,
   the five borders (constant with 0.5 and 7), random kernels of rank > 1 (3x3, 5x7, 15x15, 31x31)
   and 1x9 / 9x1, odd widths and band heights that do not divide the height (--band-rows 1, 7,
   default); the output file is first filled with poison and must come out exactly
   H x W x C x bytes. Tolerance: accumulation in f32: |err| <= 1e-5 x sum|k| x max|x| (in f64:
   1e-9 x the same), plus 0.5 against the unrounded, saturated reference for integer outputs.
   Also: kernels larger than the image; exact ties (half to even), saturation and NaN; kernel
   text files (spaces, commas, '# comment' lines), .npy of every real dtype; the built-ins box:N,
   gaussian2d:S, laplace, sobel-x, sobel-y; rank-1 kernels reported as "rank 1" in --stats json
   and still equal to scipy (also with a constant border of 3), rank 2 (laplace) not; bad kernels
   (exit 2, a message, no output, no .partial); bit-identical results across --band-rows and
   --threads.
B. `ooceq IN OUT` (u8, u16; 1-4 channels; raw and .npy): u8 equals cv2.equalizeHist of each
   channel exactly; u16 equals a numpy float32 transcription of the same formula over 65536 bins.
   Low-contrast images, constant images (unchanged), every u8 value present, band heights, an
   image larger than --mem-limit, --histogram .csv / .npy, --stats json, f32 / i16 refused.
D. ooccheck's own references judged by the same outside references: `ooccheck OUT IN --kernel K`
   accepts scipy.ndimage.convolve's float64 result (stored as f64) for file kernels, built-ins and
   every border, and `ooccheck --equalize` accepts cv2.equalizeHist's output (u8) and the float32
   transcription's (u16); each fails (exit 1) once one sample is changed.
C. Where `oocinfo` lists a CUDA device: a few cases of A and B with --device cuda against the CPU
   backend and the float64 reference (f32: 1e-5 relative; integer results of exact arithmetic
   and equalization: identical). Skipped, saying so, without a device.

Usage: ops_check.py --bin-dir DIR [unittest options, e.g. -v or a test name]
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import scipy.ndimage as ndi

try:
    import cv2
except ImportError:  # the B tests that need it skip, saying so
    cv2 = None

import cli_args  # beside this file

# --bin-dir DIR as a script (the other arguments go to unittest.main), $OOC_BIN_DIR under
# pytest (conftest.py).
BIN_DIR, _REST = cli_args.bin_dir_and_rest(
    __name__, bin_help="directory holding oocconv, ooceq, oocinfo")

TIMEOUT = 120
NP = {"u8": np.uint8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "i32": np.int32,
      "f32": np.float32, "f64": np.float64}
BORDERS = ["reflect", "mirror", "nearest", "wrap", "constant"]
LAPLACE = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], float)
SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], float)


def run(args, expect=0, timeout=TIMEOUT):
    """Runs a tool of BIN_DIR (args[0] is its name) and returns (rc, out, err); prints the command,
    rc and stderr when rc is not `expect`. A binary missing or busy for a moment (being relinked) is
    waited for, up to a minute. A timeout reads as rc None."""
    cmd = [os.path.join(BIN_DIR, str(args[0]))] + [str(a) for a in args[1:]]
    deadline = time.monotonic() + 60
    while True:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                               timeout=timeout)
            rc, out, err = r.returncode, r.stdout, r.stderr
            break
        except subprocess.TimeoutExpired:
            rc, out, err = None, "", f"timed out after {timeout} s"
            break
        except OSError as e:  # ENOENT / ETXTBSY while the build relinks it
            if time.monotonic() > deadline:
                rc, out, err = None, "", f"cannot run it: {e}"
                break
            time.sleep(1)
    if rc != expect:
        print(f"\n$ {' '.join(cmd)}\nrc={rc} (expected {expect})\nstderr: {err.strip()}",
              file=sys.stderr)
    return rc, out, err


def cuda_devices():
    """Number of CUDA devices oocinfo lists (0 when it lists none or cannot run)."""
    rc, out, _ = run(["oocinfo"])
    if rc != 0:
        return 0
    for line in out.splitlines():
        if line.startswith("CUDA devices:"):
            try:
                return int(line.split(":", 1)[1])
            except ValueError:
                return 0
    return 0


_CUDA = None


def cuda_count():
    global _CUDA
    if _CUDA is None:
        _CUDA = cuda_devices()
    return _CUDA


# ---------------------------------------------------------------------------------------------
# references

def random_data(rng, t, shape):
    """Random data of type t with no zero sample."""
    if t == "u8":
        x = rng.integers(1, 256, shape)
    elif t == "u16":
        x = rng.integers(1, 65536, shape)
    elif t == "i16":
        x = rng.integers(-32768, 32768, shape)
        x[x == 0] = 1
    else:
        x = rng.uniform(-4, 4, shape)
        x[x == 0] = 0.5
    return x.astype(NP[t])


def scipy_ref(x, k, border, cval=0.0):
    """float64 scipy.ndimage.convolve of each channel of x (H, W, C)."""
    xf = x.astype(np.float64)
    out = np.empty(xf.shape, np.float64)
    for c in range(xf.shape[2]):
        out[:, :, c] = ndi.convolve(xf[:, :, c], np.asarray(k, np.float64), mode=border, cval=cval)
    return out


def convert(ref, t):
    """The program's conversion of a float64 result to type t."""
    if t in ("f32", "f64"):
        return ref.astype(NP[t])
    info = np.iinfo(NP[t])
    r = np.nan_to_num(ref, nan=0.0, posinf=float(info.max), neginf=float(info.min))
    return np.clip(np.rint(r), info.min, info.max).astype(NP[t])


def accumulates_f64(in_t, out_t):
    return any(t in ("f64", "u32", "i32") for t in (in_t, out_t))


def gaussian2d(sigma):
    r = math.ceil(3 * sigma)
    x = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-x * x / (2 * sigma * sigma))
    g /= g.sum()
    return np.outer(g, g)


def eq_reference(ch, bins):
    """cv2.equalizeHist's formula for one channel (any number of bins), in float32."""
    flat = ch.ravel()
    n = flat.size
    h = np.bincount(flat, minlength=bins).astype(np.int64)
    i0 = int(np.flatnonzero(h)[0])
    if h[i0] == n:
        return ch.copy()
    scale = np.float32(bins - 1) / np.float32(n - h[i0])
    lut = np.zeros(bins, np.float64)
    cs = np.cumsum(h[i0 + 1:]).astype(np.float32)
    lut[i0 + 1:] = np.rint((cs * scale).astype(np.float32))
    return lut.astype(ch.dtype)[ch]


def cv2_eq(x):
    """cv2.equalizeHist of each channel of x (H, W, C) u8."""
    return np.stack([cv2.equalizeHist(np.ascontiguousarray(x[:, :, c]))
                     for c in range(x.shape[2])], axis=2)


# ---------------------------------------------------------------------------------------------

class OpsCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ooc_ops_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.n = 0

    def path(self, name):
        return os.path.join(self.tmp, name)

    def fresh(self, ext=".raw"):
        self.n += 1
        return self.path(f"f{self.n}{ext}")

    def write_raw(self, x):
        p = self.fresh()
        x.tofile(p)
        return p

    def write_kernel(self, k, dtype=np.float64):
        p = self.fresh(".npy")
        np.save(p, np.ascontiguousarray(k, dtype))
        return p

    def poison(self, out, nbytes):
        with open(out, "wb") as f:
            f.write(b"\xa5" * (2 * nbytes + 13))

    def read_out(self, out, t, shape):
        expected = int(np.prod(shape)) * np.dtype(NP[t]).itemsize
        size = os.path.getsize(out)
        self.assertEqual(size, expected, f"{out}: {size} bytes, expected {expected}")
        self.assertFalse(os.path.exists(out + ".partial"), "OUT.partial left behind")
        return np.fromfile(out, NP[t]).reshape(shape)

    # A convolution run: returns (output array, stdout).
    def conv(self, x, kernel, border="reflect", cval=None, out_t=None, extra=(), in_t=None,
             expect=0, out=None):
        in_t = in_t or {v: k for k, v in NP.items()}[x.dtype.type]
        h, w, c = x.shape
        src = self.write_raw(x)
        out = out or self.fresh()
        out_t = out_t or in_t
        self.poison(out, h * w * c * np.dtype(NP[out_t]).itemsize)
        args = ["oocconv", src, out, "--width", w, "--type", in_t, "--channels", c,
                "--kernel", kernel, "--border", border, "-q"]
        if cval is not None:
            args += ["--border-value", cval]
        if out_t != in_t:
            args += ["--out-type", out_t]
        args += list(extra)
        rc, so, se = run(args, expect=expect)
        self.assertEqual(rc, expect, f"{args}: {se.strip()}")
        if expect != 0:
            return None, se
        return self.read_out(out, out_t, (h, w, c)), so

    def check_close(self, got, x, k, border, cval, in_t, out_t, what, rel=None):
        ref = scipy_ref(x, k, border, cval if cval is not None else 0.0)
        if rel is None:
            rel = 1e-9 if accumulates_f64(in_t, out_t) else 1e-5
        xmax = float(np.max(np.abs(x.astype(np.float64))))
        if border == "constant" and cval is not None:
            xmax = max(xmax, abs(float(cval)))
        tol = rel * float(np.sum(np.abs(k))) * xmax
        if out_t in ("f32", "f64"):
            target = ref
        else:
            info = np.iinfo(NP[out_t])
            target = np.clip(ref, info.min, info.max)
            tol += 0.5
        err = np.abs(got.astype(np.float64) - target)
        worst = float(err.max())
        where = np.unravel_index(int(err.argmax()), err.shape)
        self.assertLessEqual(worst, tol, f"{what}: max |err| {worst:.3g} > {tol:.3g} at {where}: "
                             f"got {got[where]}, reference {target[where]!r}")

    def eq(self, x, extra=(), fmt="raw", expect=0, out_ext=None, device=None):
        """ooceq of x (H, W, C); returns (output array, stdout)."""
        h, w, c = x.shape
        t = {np.uint8: "u8", np.uint16: "u16"}.get(x.dtype.type, "f32")
        if fmt == "npy":
            src = self.fresh(".npy")
            np.save(src, x if c > 1 else x[:, :, 0])
            args = ["ooceq", src]
        else:
            src = self.write_raw(x)
            args = ["ooceq", src]
        out = self.fresh(out_ext or (".npy" if fmt == "npy" else ".raw"))
        args += [out, "-q"] + list(extra)
        if fmt != "npy":
            args += ["--width", w, "--type", t, "--channels", c]
        if device:
            args += ["--device", device]
        rc, so, se = run(args, expect=expect)
        self.assertEqual(rc, expect, f"{args}: {se.strip()}")
        if expect != 0:
            self.assertFalse(os.path.exists(out), "output written")
            self.assertFalse(os.path.exists(out + ".partial"), ".partial left")
            return None, se
        if out.endswith(".npy"):
            got = np.load(out)
            self.assertEqual(got.dtype, x.dtype)
            if fmt == "npy":
                self.assertEqual(got.shape, x.shape if c > 1 else x.shape[:2], "npy shape")
            got = got.reshape(h, w, c)
        else:
            got = self.read_out(out, t, (h, w, c))
        return got, so

    def assert_same(self, got, expect, what):
        bad = np.argwhere(got != expect)
        self.assertEqual(len(bad), 0, f"{what}: {len(bad)} samples differ, first "
                         f"{bad[:1].tolist()}: got {got[tuple(bad[0])] if len(bad) else ''}, "
                         f"expected {expect[tuple(bad[0])] if len(bad) else ''}")


class ConvolveTest(OpsCase):
    def test_sweep_types_channels_borders_kernels(self):
        """Every type configuration x channels 1, 3 x every border x 6 kernel shapes; odd widths,
        band heights 1, 7 and planned (none dividing the height); outputs over poisoned files."""
        rng = np.random.default_rng(1234)
        configs = [("u8", "u8"), ("u16", "u16"), ("i16", "i16"), ("f32", "f32"), ("f64", "f64"),
                   ("u8", "f32"), ("u16", "f32"), ("i16", "f32")]
        shapes = [(3, 3), (5, 7), (15, 15), (31, 31), (1, 9), (9, 1)]
        kernels = {s: rng.uniform(-1, 1, s) for s in shapes}
        for s in ((3, 3), (5, 7), (15, 15), (31, 31)):
            self.assertGreater(np.linalg.matrix_rank(kernels[s]), 1)
        kfiles = {s: self.write_kernel(kernels[s]) for s in shapes}
        sizes = [(23, 37), (17, 29), (20, 31)]
        bands = [None, 1, 7]
        i = 0
        for in_t, out_t in configs:
            for ch in (1, 3):
                x_by_size = {hw: random_data(rng, in_t, hw + (ch,)) for hw in sizes}
                for border in BORDERS:
                    for s in shapes:
                        i += 1
                        hw = sizes[i % len(sizes)]
                        br = bands[(i // 3) % len(bands)]
                        cval = (0.5 if i % 2 else 7) if border == "constant" else None
                        extra = ["--band-rows", br] if br else []
                        what = (f"{in_t}->{out_t} C={ch} {border}"
                                f"{'' if cval is None else f'({cval})'} kernel {s[0]}x{s[1]} "
                                f"image {hw[0]}x{hw[1]} band-rows {br or 'default'}")
                        with self.subTest(what):
                            x = x_by_size[hw]
                            got, _ = self.conv(x, kfiles[s], border, cval, out_t, extra)
                            self.check_close(got, x, kernels[s], border, cval, in_t, out_t, what)

    def test_kernel_larger_than_image(self):
        """41x41 (and 41x3, 3x41) kernels on a 20x30 image: scipy's extension repeats."""
        rng = np.random.default_rng(7)
        for in_t, out_t in (("f32", "f32"), ("u8", "u8"), ("f64", "f64"), ("u16", "f32")):
            for ch in (1, 3):
                x = random_data(rng, in_t, (20, 30, ch))
                for shape in ((41, 41), (41, 3), (3, 41)):
                    k = rng.uniform(-1, 1, shape)
                    kf = self.write_kernel(k)
                    for border in BORDERS:
                        cval = 7 if border == "constant" else None
                        for br in (None, 7):
                            what = f"{in_t}->{out_t} C={ch} {shape} {border} band-rows {br}"
                            with self.subTest(what):
                                got, _ = self.conv(x, kf, border, cval, out_t,
                                                   ["--band-rows", br] if br else [])
                                self.check_close(got, x, k, border, cval, in_t, out_t, what)

    def test_integer_output_rounds_half_even_and_saturates(self):
        """Exact halves (data in steps of 0.5, integer kernels, exact in f32) round to even, out of
        range saturates; both through the 2-D path (laplace) and the separable one (sobel-x)."""
        rng = np.random.default_rng(11)
        x = (rng.integers(-700, 700, (19, 27, 1)) * 0.5).astype(np.float32)
        for name, k in (("laplace", LAPLACE), ("sobel-x", SOBEL_X), ("sobel-y", SOBEL_X.T)):
            for out_t in ("u8", "i16", "u16"):
                for border in ("reflect", "constant"):
                    what = f"{name} f32->{out_t} {border}"
                    with self.subTest(what):
                        cval = 2.5 if border == "constant" else None
                        got, _ = self.conv(x, name, border, cval, out_t)
                        ref = scipy_ref(x, k, border, cval or 0.0)
                        self.assertTrue(np.any(np.mod(ref, 1) == 0.5), "no ties in the data")
                        expect = convert(ref, out_t)
                        bad = np.argwhere(got != expect)
                        self.assertEqual(len(bad), 0,
                                         f"{what}: {len(bad)} samples differ, first at "
                                         f"{bad[:1].tolist()}: got "
                                         f"{got[tuple(bad[0])] if len(bad) else ''}, expected "
                                         f"{expect[tuple(bad[0])] if len(bad) else ''} "
                                         f"(exact {ref[tuple(bad[0])] if len(bad) else ''})")

    def test_nan_and_infinities_to_integers(self):
        """NaN becomes 0 and +-inf saturate in an integer output (1x1 kernel, and a dense 3x3
        kernel through which the NaN spreads to its neighbours, as in scipy)."""
        x = np.array([[0.5, 1.5, 2.5, -0.5, 3.49],
                      [300, -5, np.nan, np.inf, -np.inf],
                      [254.5, 255.5, 65535.5, -32768.5, 7]], np.float32)[:, :, None]
        k1 = self.write_kernel([[1.0]])
        rng = np.random.default_rng(3)
        kd = rng.uniform(0.5, 1, (3, 3))
        kdf = self.write_kernel(kd)
        for kf, k in ((k1, [[1.0]]), (kdf, kd)):
            for out_t in ("u8", "u16", "i16"):
                what = f"kernel {np.shape(k)} f32->{out_t}"
                with self.subTest(what):
                    with np.errstate(invalid="ignore"):
                        ref = scipy_ref(x, k, "nearest")
                    got, _ = self.conv(x, kf, "nearest", None, out_t)
                    expect = convert(ref, out_t)
                    if np.shape(k) == (1, 1):
                        np.testing.assert_array_equal(got, expect, what)
                    else:  # NaN / inf exactly where scipy has them; elsewhere within 1
                        special = ~np.isfinite(ref)
                        np.testing.assert_array_equal(got[special], expect[special], what)
                        diff = np.abs(got.astype(np.int64) - expect.astype(np.int64))
                        self.assertLessEqual(int(diff.max()), 1, what)

    def test_output_exact_size_over_poisoned_file(self):
        """An existing, larger OUT full of poison is replaced by exactly H x W x C x bytes."""
        rng = np.random.default_rng(5)
        for in_t, out_t, ch in (("u8", "u8", 3), ("f32", "f64", 1), ("i16", "u16", 2),
                                ("f64", "u8", 4)):
            with self.subTest(f"{in_t}->{out_t} C={ch}"):
                x = random_data(rng, in_t, (13, 21, ch))
                k = rng.uniform(-1, 1, (5, 3))
                got, _ = self.conv(x, self.write_kernel(k), "mirror", None, out_t)
                self.check_close(got, x, k, "mirror", None, in_t, out_t, f"{in_t}->{out_t}")

    def test_kernel_text_file(self):
        """Text kernels: rows of numbers separated by spaces or commas, '# comment' lines."""
        rng = np.random.default_rng(21)
        k = rng.uniform(-2, 2, (5, 7))
        lines = ["# a 5 x 7 kernel", "# rows of numbers"]
        for r, row in enumerate(k):
            if r % 2:
                lines.append(", ".join(f"{v:.17g}" for v in row))
            else:
                lines.append("  " + "   ".join(f"{v:.17g}" for v in row) + " ")
            if r == 2:
                lines.append("# a comment between rows")
        kf = self.path("k.txt")
        with open(kf, "w") as f:
            f.write("\n".join(lines) + "\n")
        x = random_data(rng, "f32", (22, 33, 2))
        for border in BORDERS:
            with self.subTest(border):
                got, _ = self.conv(x, kf, border, 0.5 if border == "constant" else None)
                self.check_close(got, x, k, border, 0.5 if border == "constant" else None,
                                 "f32", "f32", f"text kernel {border}")
        # A 3x3 with commas only and no trailing newline.
        kf2 = self.path("k2.txt")
        with open(kf2, "w") as f:
            f.write("1,2,3\n4,-5,6\n-7,8,9.5")
        k2 = np.array([[1, 2, 3], [4, -5, 6], [-7, 8, 9.5]])
        got, _ = self.conv(x, kf2, "wrap")
        self.check_close(got, x, k2, "wrap", None, "f32", "f32", "comma kernel")

    def test_kernel_npy_every_real_dtype(self):
        """.npy kernels of every real dtype (as scipy casts weights to float64): bool, int8-64,
        uint8-64, float16/32/64, either byte order, C or Fortran order; taken exactly, by oocconv
        --kernel and by oocrun's convolve stage alike."""
        rng = np.random.default_rng(22)
        x = random_data(rng, "f64", (18, 25, 3))
        dtypes = ["?", "i1", "u1", "<i2", ">i2", "<u2", "<i4", ">u4", "<i8", ">i8", "<u8", "<f2",
                  "<f4", ">f4", "<f8", ">f8"]
        for dt in dtypes:
            d = np.dtype(dt)
            for shape in ((3, 5), (7, 7)):
                if d.kind == "b":
                    k = rng.integers(0, 2, shape).astype(d)
                elif d.kind in "iu":
                    lo = 0 if d.kind == "u" else -100
                    k = rng.integers(lo, 100, shape).astype(d)
                else:
                    k = rng.uniform(-1, 1, shape).astype(d)
                for order in ("C", "F"):
                    kf = self.fresh(".npy")
                    np.save(kf, np.asfortranarray(k) if order == "F" else k)
                    name = f"{d.str} {shape} {order}"
                    with self.subTest(name):
                        got, _ = self.conv(x, kf, "nearest")
                        self.check_close(got, x, k.astype(np.float64), "nearest", None, "f64",
                                         "f64", f"npy {name}")
            # The pipeline stage reads the same files: the same bytes.
            src, a, b = self.fresh(".npy"), self.fresh(".npy"), self.fresh(".npy")
            np.save(src, x)
            kf = self.fresh(".npy")
            np.save(kf, k)
            run(["oocconv", src, a, "--kernel", kf, "--border", "nearest", "-q"])
            rc, _, err = run(["oocrun", src, b, f"convolve kernel={kf}", "--border", "nearest",
                              "-q"])
            self.assertEqual(rc, 0, f"oocrun convolve kernel= {d.str}: {err}")
            self.assertEqual(open(a, "rb").read(), open(b, "rb").read(), d.str)

    def test_builtin_kernels(self):
        """box:N, gaussian2d:S (radius ceil(3S)), laplace, sobel-x, sobel-y equal their
        definitions through scipy."""
        rng = np.random.default_rng(23)
        builtins = [("box:1", np.ones((1, 1))), ("box:3", np.full((3, 3), 1 / 9)),
                    ("box:5", np.full((5, 5), 1 / 25)), ("box:9", np.full((9, 9), 1 / 81)),
                    ("gaussian2d:0.7", gaussian2d(0.7)), ("gaussian2d:1.5", gaussian2d(1.5)),
                    ("gaussian2d:2", gaussian2d(2.0)), ("laplace", LAPLACE),
                    ("sobel-x", SOBEL_X), ("sobel-y", SOBEL_X.T)]
        for in_t, out_t in (("f64", "f64"), ("f32", "f32"), ("u16", "f32")):
            x = random_data(rng, in_t, (21, 35, 2))
            for name, k in builtins:
                for border in ("reflect", "wrap", "constant"):
                    cval = 3 if border == "constant" else None
                    what = f"{name} {in_t}->{out_t} {border}"
                    with self.subTest(what):
                        got, _ = self.conv(x, name, border, cval, out_t)
                        self.check_close(got, x, k, border, cval, in_t, out_t, what)

    def test_rank1_kernels_reported_and_match(self):
        """box, gaussian2d, sobel and an outer product from a file say "rank 1" in --stats json's
        "operation" and equal scipy, also with --border constant --border-value 3 (where sobel-x,
        whose row taps sum to 0, runs 2-D)."""
        rng = np.random.default_rng(24)
        outer = np.outer(rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 5))
        of = self.path("outer.txt")
        np.savetxt(of, outer, fmt="%.17g")
        cases = [("box:5", np.full((5, 5), 1 / 25)), ("gaussian2d:1.5", gaussian2d(1.5)),
                 ("sobel-x", SOBEL_X), ("sobel-y", SOBEL_X.T), (of, outer),
                 (self.write_kernel(outer.T), outer.T)]
        for in_t, out_t in (("f32", "f32"), ("u8", "u8"), ("f64", "f64")):
            x = random_data(rng, in_t, (24, 31, 3))
            for name, k in cases:
                for border, cval in (("constant", 3), ("reflect", None), ("mirror", None)):
                    what = f"{os.path.basename(name)} {in_t}->{out_t} {border}"
                    with self.subTest(what):
                        got, so = self.conv(x, name, border, cval, out_t,
                                            ["--stats", "json", "--band-rows", 5])
                        op = json.loads(so)["operation"]
                        # Under a nonzero constant border a rank-1 kernel runs separable only if
                        # its row taps can be scaled to sum to 1 (the separable filter pads the
                        # x-filtered rows with the constant); sobel-x's row sums to 0: 2-D.
                        zero_row = name == "sobel-x" and border == "constant"
                        if zero_row:
                            self.assertNotIn("rank 1", op, f"{what}: operation {op!r}")
                        else:
                            self.assertIn("rank 1", op, f"{what}: operation {op!r}")
                        self.check_close(got, x, k, border, cval, in_t, out_t, what)

    def test_rank2_kernel_not_reported_rank1(self):
        """laplace (rank 2) and a random 5x5 run as 2-D kernels: no "rank 1" in the operation."""
        rng = np.random.default_rng(25)
        x = random_data(rng, "f32", (16, 19, 1))
        k = rng.uniform(-1, 1, (5, 5))
        for name, kk in (("laplace", LAPLACE), (self.write_kernel(k), k)):
            with self.subTest(os.path.basename(name)):
                got, so = self.conv(x, name, "constant", 3, None, ["--stats", "json"])
                op = json.loads(so)["operation"]
                self.assertNotIn("rank 1", op, f"operation {op!r}")
                self.check_close(got, x, kk, "constant", 3, "f32", "f32", name)

    def test_bad_kernels_refused(self):
        """Bad kernels: exit 2, a message naming the kernel, no OUT and no OUT.partial."""
        def text(name, body):
            p = self.path(name)
            with open(p, "w") as f:
                f.write(body)
            return p
        k3d = self.path("k3d.npy")
        np.save(k3d, np.ones((3, 3, 3)))
        k1d = self.path("k1d.npy")
        np.save(k1d, np.ones(3))
        kcomplex = self.path("kcomplex.npy")
        np.save(kcomplex, np.ones((3, 3), np.complex64))
        kdir = self.path("kdir")
        os.mkdir(kdir)
        cases = {
            "even 4x4": [text("even.txt", "1 1 1 1\n" * 4)],
            "even 3x4": [text("even2.txt", "1 1 1 1\n" * 3)],
            "empty file": [text("empty.txt", "")],
            "only comments": [text("comments.txt", "# nothing\n# here\n")],
            "NaN tap": [text("nan.txt", "1 2 3\n4 nan 6\n7 8 9\n")],
            "inf tap": [text("inf.txt", "1 2 3\n4 inf 6\n7 8 9\n")],
            "ragged rows": [text("ragged.txt", "1 2 3\n4 5\n7 8 9\n")],
            "not a number": [text("word.txt", "1 2 3\n4 x 6\n7 8 9\n")],
            "3-D npy": [k3d],
            "1-D npy": [k1d],
            "complex npy": [kcomplex],
            "box:4": ["box:4"],
            "box:0": ["box:0"],
            "gaussian2d:-1": ["gaussian2d:-1"],
            "gaussian2d:0": ["gaussian2d:0"],
            "foo": ["foo"],
            "missing file": [self.path("nope.txt")],
            "directory": [kdir],
            "--kernel with --radius": ["laplace", "--radius", "2"],
            "--kernel with --taps": ["laplace", "--taps", "1,2,1"],
        }
        x = random_data(np.random.default_rng(0), "f32", (9, 11, 1))
        src = self.write_raw(x)
        for what, kargs in cases.items():
            with self.subTest(what):
                out = self.path("bad_out.raw")
                args = ["oocconv", src, out, "--width", 11, "--kernel"] + kargs
                rc, _, err = run(args, expect=2)
                self.assertEqual(rc, 2, f"{what}: rc {rc}, stderr {err.strip()!r}")
                self.assertIn("kernel", err.lower(), f"{what}: message {err.strip()!r}")
                self.assertFalse(os.path.exists(out), f"{what}: output written")
                self.assertFalse(os.path.exists(out + ".partial"), f"{what}: .partial left")

    def test_bit_identical_across_bands_and_threads(self):
        """The same bytes for --band-rows 1 / 5 / planned and --threads 1 / 2 (2-D and rank 1)."""
        rng = np.random.default_rng(26)
        k = rng.uniform(-1, 1, (15, 15))
        kf = self.write_kernel(k)
        for in_t, out_t, ch, kern in (("f32", "f32", 3, kf), ("u16", "u16", 1, kf),
                                      ("f32", "f32", 2, "gaussian2d:2"),
                                      ("u8", "f32", 3, kf), ("f64", "f64", 1, kf)):
            x = random_data(rng, in_t, (41, 53, ch))
            src = self.write_raw(x)
            for border in ("reflect", "constant"):
                what = f"{in_t}->{out_t} C={ch} {os.path.basename(kern)} {border}"
                with self.subTest(what):
                    blobs = {}
                    for br in (1, 5, None):
                        for th in (1, 2):
                            out = self.fresh()
                            args = ["oocconv", src, out, "--width", 53, "--type", in_t,
                                    "--channels", ch, "--kernel", kern, "--border", border,
                                    "--border-value", 0.5, "--out-type", out_t,
                                    "--threads", th, "-q"]
                            if br:
                                args += ["--band-rows", br]
                            rc, _, err = run(args)
                            self.assertEqual(rc, 0, err)
                            with open(out, "rb") as f:
                                blobs[(br, th)] = f.read()
                    first = blobs[(1, 1)]
                    for key, blob in blobs.items():
                        self.assertEqual(blob, first, f"{what}: band-rows/threads {key} differ "
                                         "from (1, 1)")


# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------

class OoccheckTest(OpsCase):
    def ooccheck(self, out, src, x, in_t, extra, expect):
        h, w, c = x.shape
        rc, so, se = run(["ooccheck", out, src, "--width", w, "--type", in_t, "--channels", c]
                         + list(extra), expect=expect)
        self.assertEqual(rc, expect, f"{extra}: {so[-800:]}{se.strip()}")

    def test_kernel_reference_accepts_scipy(self):
        """--kernel: scipy.ndimage.convolve in float64 (OUT f64, so oocconv would sum in f64 and
        the tolerance is tight) passes; one sample off by 1e-9 relative fails."""
        rng = np.random.default_rng(61)
        k57 = rng.uniform(-1, 1, (5, 7))
        kf = self.write_kernel(k57)
        kernels = [(kf, k57), ("laplace", LAPLACE), ("sobel-x", SOBEL_X),
                   ("gaussian2d:1.5", gaussian2d(1.5)), ("box:3", np.full((3, 3), 1 / 9))]
        for i, (in_t, ch) in enumerate((("f32", 1), ("u8", 3), ("u16", 2))):
            x = random_data(rng, in_t, (37, 29, ch))
            src = self.write_raw(x)
            for j, (kern, k) in enumerate(kernels):
                border = BORDERS[(i + j) % len(BORDERS)]
                what = f"{in_t} C={ch} {os.path.basename(kern)} {border}"
                with self.subTest(what):
                    ref = scipy_ref(x, k, border, 2.5)
                    out = self.fresh(".npy")
                    np.save(out, ref)
                    opts = ["--kernel", kern, "--border", border, "--border-value", 2.5]
                    self.ooccheck(out, src, x, in_t, opts, 0)
                    ref[17, 11, ch - 1] *= 1 + 1e-9
                    np.save(out, ref)
                    self.ooccheck(out, src, x, in_t, opts, 1)

    def test_kernel_reference_reads_every_real_dtype(self):
        """ooccheck's own .npy reader takes the kernels oocconv takes (every real dtype, either
        byte order, C or Fortran order): scipy's result passes, one sample off fails."""
        rng = np.random.default_rng(62)
        x = random_data(rng, "f32", (23, 19, 1))
        src = self.write_raw(x)
        for i, dt in enumerate(["?", "i1", "u1", ">i2", "<u2", "<i4", ">u4", "<i8", ">u8", "<f2",
                                ">f4", "<f8"]):
            d = np.dtype(dt)
            k = (rng.integers(0, 2, (3, 5)) if d.kind == "b" else
                 rng.integers(-50 if d.kind == "i" else 0, 50, (3, 5)) if d.kind in "iu" else
                 rng.uniform(-1, 1, (3, 5))).astype(d)
            kf = self.fresh(".npy")
            np.save(kf, np.asfortranarray(k) if i % 2 else k)
            with self.subTest(d.str):
                ref = scipy_ref(x, k.astype(np.float64), "reflect")
                out = self.fresh(".npy")
                np.save(out, ref)
                self.ooccheck(out, src, x, "f32", ["--kernel", kf], 0)
                ref[11, 7, 0] += 1e-6 * (1 + abs(ref[11, 7, 0]))
                np.save(out, ref)
                self.ooccheck(out, src, x, "f32", ["--kernel", kf], 1)

    @unittest.skipIf(cv2 is None, "this python has no cv2 (python3-opencv)")
    def test_equalize_reference_accepts_cv2(self):
        """--equalize: cv2.equalizeHist's output (u8, 1 and 3 channels) and the u16 float32
        transcription pass, also with --sample; one sample changed fails."""
        rng = np.random.default_rng(62)
        for dt, in_t, c, lo, hi in ((np.uint8, "u8", 1, 40, 90), (np.uint8, "u8", 3, 0, 256),
                                    (np.uint16, "u16", 1, 1000, 1400),
                                    (np.uint16, "u16", 3, 0, 65536)):
            x = rng.integers(lo, hi, (150, 41, c)).astype(dt)
            if dt == np.uint8:
                expect = cv2_eq(x)
            else:
                expect = np.stack([eq_reference(x[:, :, i], 65536) for i in range(c)], axis=2)
            with self.subTest(f"{in_t} C={c} values {lo}..{hi - 1}"):
                src, out = self.write_raw(x), self.fresh()
                expect.tofile(out)
                self.ooccheck(out, src, x, in_t, ["--equalize"], 0)
                self.ooccheck(out, src, x, in_t, ["--equalize", "--sample", 1], 0)
                expect[70, 9, c - 1] ^= 1
                expect.tofile(out)
                self.ooccheck(out, src, x, in_t, ["--equalize"], 1)


# ---------------------------------------------------------------------------------------------

class CudaTest(OpsCase):
    def setUp(self):
        super().setUp()
        if cuda_count() == 0:
            self.skipTest("oocinfo lists no CUDA device here (CUDA devices: 0)")

    def test_cuda_convolve_matches_cpu_and_reference(self):
        """--device cuda against --device cpu: f32 within 1e-5 relative of the float64 reference;
        integer outputs of exact arithmetic (integer kernels and data) identical."""
        rng = np.random.default_rng(51)
        kr = rng.uniform(-1, 1, (15, 15))
        kint = rng.integers(-3, 4, (7, 5)).astype(np.float64)
        kint[3, 2] = 5  # rank > 1, exact in f32 for u8 data
        krf, kif = self.write_kernel(kr), self.write_kernel(kint)
        cases = [("f32", "f32", 3, krf, kr, "reflect", None, None),
                 ("f32", "f32", 1, krf, kr, "constant", 0.5, 7),
                 ("f32", "f32", 2, "gaussian2d:1.5", gaussian2d(1.5), "wrap", None, 1),
                 ("f64", "f64", 1, krf, kr, "mirror", None, None),
                 ("u8", "i16", 3, kif, kint, "nearest", None, 7),
                 ("u8", "u8", 1, "laplace", LAPLACE, "constant", 7, None),
                 ("u16", "u16", 1, "sobel-x", SOBEL_X, "reflect", None, 5)]
        for in_t, out_t, ch, kern, k, border, cval, br in cases:
            what = f"{in_t}->{out_t} C={ch} {os.path.basename(kern)} {border}"
            with self.subTest(what):
                x = random_data(rng, in_t, (45, 67, ch))
                extra = ["--band-rows", br] if br else []
                cpu, _ = self.conv(x, kern, border, cval, out_t, extra + ["--device", "cpu"])
                gpu, so = self.conv(x, kern, border, cval, out_t,
                                    extra + ["--device", "cuda", "--stats", "json"])
                self.assertIn("cuda", json.loads(so)["backend"].lower())
                if out_t in ("f32", "f64"):
                    self.check_close(gpu, x, k, border, cval, in_t, out_t, what + " cuda")
                    self.check_close(cpu, x, k, border, cval, in_t, out_t, what + " cpu")
                else:
                    self.assertTrue(np.array_equal(cpu, gpu), f"{what}: cpu and cuda differ by "
                                    f"up to {np.abs(cpu.astype(int) - gpu.astype(int)).max()}")
                    np.testing.assert_array_equal(cpu, convert(scipy_ref(x, k, border, cval or 0),
                                                               out_t))

    def test_cuda_equalize_identical_to_cpu(self):
        """ooceq --device cuda gives the CPU backend's bytes (u8 and u16, 1 and 3 channels)."""
        if cv2 is None:
            self.skipTest("this python has no cv2")
        rng = np.random.default_rng(52)
        for dt, c, hi in ((np.uint8, 1, 256), (np.uint8, 3, 90), (np.uint16, 1, 65536),
                          (np.uint16, 3, 3000)):
            x = rng.integers(0, hi, (129, 77, c)).astype(dt)
            what = f"{np.dtype(dt).name} C={c}"
            with self.subTest(what):
                cpu, _ = self.eq(x, ["--band-rows", 7], device="cpu")
                gpu, _ = self.eq(x, ["--band-rows", 7], device="cuda")
                self.assertTrue(np.array_equal(cpu, gpu), f"{what}: cpu and cuda differ")
                if dt == np.uint8:
                    self.assertTrue(np.array_equal(gpu, cv2_eq(x)), f"{what}: cuda vs cv2")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
