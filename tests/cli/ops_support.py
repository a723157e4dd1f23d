"""What the checks of the two newer operations share (test_convolve_kernel.py, test_equalize.py,
test_ooccheck_kernel_equalize.py, test_cuda_convolve_equalize.py). They run them through their
binaries: 2-D convolution (`oocconv --kernel`) against
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

Usage: test_*.py --bin-dir DIR [unittest options, e.g. -v or a test name]
"""
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
    cli_args.entry(__name__), bin_help="directory holding oocconv, ooceq, oocinfo")

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


def main():
    """A check run as a script: unittest.main over the script's tests, with its leftover options."""
    unittest.main(argv=[sys.argv[0]] + _REST)
