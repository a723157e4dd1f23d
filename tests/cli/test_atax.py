#!/usr/bin/env python3
"""oocatax (y = A^T (A X), A X, A^T X over a matrix file) through its binary, against NumPy in
float64 and against ooccheck --atax.

A. Every product (atax, ax, atx) on random non-zero matrices of odd sizes (M, N not multiples of
   any tile or vector width: 1 x 7, 9 x 1, 37 x 53, 1003 x 129, 613 x 517), f32 and f64 A, k = 1,
   3 and 64, --precision f64 and f32, with small leaves and band heights that do not divide M
   (--leaf-rows 4, --band-rows 1, 7, 64), raw, .npy and TIFF A, .npy and text X, .npy and text y.
   The output file starts as poison (a file of NaN bytes at the path) and must be replaced.
   Tolerance: f64 products 1e-12, f32 products 2e-5, relative to the largest |reference|, and
   exactly the reference's shape.
B. Determinism: y has the same bytes for every --band-rows, --slots and --threads (leaves fixed).
C. ooccheck --atax accepts every y of A and fails (exit 1) once one element is changed.
D. Bad input: a raw size that does not match the file, X of the wrong length or with rows of
   different lengths, NaN/Inf in X (computed: y has NaN where NumPy has; counted in --stats json),
   M x N that overflows 64 bits, an integer A, a bad --leaf-rows, --op ax to .txt: exit code 2 or
   3, a message naming the problem, no y and no .partial left; A is never modified.
E. --device cuda against NumPy where `oocinfo` lists a CUDA device; skipped, saying so, without.
F. Memory (issue 29): k = 4096 (the documented maximum) on a narrow matrix, and a 2000 x 301 f64
   matrix under --mem-limit 1M, run (the leaf shrinks to fit the limit) and match NumPy; when not
   even one row fits, or --leaf-rows asks for more, the error states a --mem-limit under which the
   same run then succeeds (and 0.9 of it does not: the figure is the need, not a guess).
G. Raw-input messages name oocatax's options (--cols, --rows, --type), never --width, --height or
   --channels, which it does not have.
H. NaN/Inf in A: rc 0, y as NumPy computes it, and a warning on stderr (even under -q) with how
   many and where the first is (row, column), also in --stats json; overflowing products are
   named as such; a finite A gives no warning.

Usage: test_atax.py --bin-dir DIR [unittest options, e.g. -v or a test name]
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import cli_args  # beside this file

# --bin-dir DIR as a script (the other arguments go to unittest.main), $OOC_BIN_DIR under
# pytest (conftest.py).
BIN_DIR, _REST = cli_args.bin_dir_and_rest(
    __name__, bin_help="directory holding oocatax, ooccheck, oocinfo")
TIMEOUT = 300


def tool(name):
    return os.path.join(BIN_DIR, name)


def reference(a, x, op):
    a = a.astype(np.float64)
    x = x.astype(np.float64)
    if op == "atax":
        return a.T @ (a @ x)
    if op == "ax":
        return a @ x
    return a.T @ x


def has_gpu():
    """Whether oocinfo lists a CUDA device ("CUDA devices: N")."""
    r = subprocess.run([tool("oocinfo")], capture_output=True, text=True, timeout=TIMEOUT)
    for line in r.stdout.splitlines():
        if line.startswith("CUDA devices:"):
            return line.split(":", 1)[1].strip() not in ("", "0")
    return False


class AtaxCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="atax_check_")
        self.rng = np.random.default_rng(20261122)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_atax(self, args, expect=0):
        r = subprocess.run([tool("oocatax")] + [str(a) for a in args], capture_output=True,
                           text=True, timeout=TIMEOUT)
        self.assertEqual(r.returncode, expect, f"oocatax {args}: {r.stderr}")
        return r

    def matrix(self, m, n, dtype):
        a = self.rng.standard_normal((m, n)).astype(dtype)
        a[a == 0] = 0.5  # non-zero everywhere
        return a

    def load_y(self, path):
        if path.endswith(".npy"):
            return np.load(path)
        return np.loadtxt(path, ndmin=2)

    def poison(self, path):
        with open(path, "wb") as f:
            f.write(b"\xff" * 4096)

    def assert_close(self, y, ref, precision, what):
        self.assertEqual(y.shape, ref.shape, what)
        scale = max(np.max(np.abs(ref)), 1e-300)
        err = np.max(np.abs(y - ref)) / scale
        tol = 1e-12 if precision == "f64" else 2e-5
        self.assertLessEqual(err, tol, f"{what}: relative error {err}")


class ProductTest(AtaxCase):
    def check(self, m, n, dtype, k, op, precision, band_rows=None, a_format="npy",
              x_format="npy", y_format="npy", leaf=4):
        a = self.matrix(m, n, dtype)
        rows_x = m if op == "atx" else n
        x = self.rng.standard_normal((rows_x, k)) if k > 1 else self.rng.standard_normal(rows_x)
        args = []
        if a_format == "npy":
            np.save(self.path("A.npy"), a)
            args.append(self.path("A.npy"))
        elif a_format == "raw":
            a.tofile(self.path("A.raw"))
            args += [self.path("A.raw"), "--rows", m, "--cols", n, "--type",
                     "f32" if dtype == np.float32 else "f64"]
        else:
            import tifffile
            tifffile.imwrite(self.path("A.tif"), a)
            args.append(self.path("A.tif"))
        if x_format == "npy":
            np.save(self.path("x.npy"), x)
            args += ["--x", self.path("x.npy")]
        else:
            np.savetxt(self.path("x.txt"), x.reshape(rows_x, -1), fmt="%.17g")
            args += ["--x", self.path("x.txt")]
        out = self.path("y." + y_format)
        self.poison(out)
        args += ["--out", out, "--op", op, "--precision", precision, "--leaf-rows", leaf,
                 "--device", "cpu", "-q"]
        if band_rows:
            args += ["--band-rows", band_rows]
        self.run_atax(args)
        y = self.load_y(out)
        ref = reference(a, x, op)
        if op == "ax" or y_format == "txt" or (x_format == "txt"):
            ref = ref.reshape(ref.shape[0], -1)
            y = y.reshape(ref.shape[0], -1)
        what = f"{op} {m}x{n} {np.dtype(dtype).name} k={k} {precision} band_rows={band_rows}"
        self.assert_close(y, ref, precision, what)
        self.assertFalse(os.path.exists(out + ".partial"))
        return a, x, y

    def test_sweep(self):
        for m, n in [(37, 53), (1003, 129), (1, 7), (9, 1)]:
            for dtype in (np.float32, np.float64):
                for k in (1, 3, 64):
                    for op in ("atax", "ax", "atx"):
                        for precision in ("f64", "f32"):
                            self.check(m, n, dtype, k, op, precision, band_rows=7)

    def test_band_heights(self):
        for band_rows in (1, 7, 64, None):
            for k in (1, 3):
                self.check(613, 517, np.float32, k, "atax", "f64", band_rows=band_rows)

    def test_formats(self):
        self.check(101, 37, np.float32, 3, "atax", "f64", a_format="raw")
        self.check(101, 37, np.float64, 1, "atx", "f64", a_format="tiff")
        self.check(101, 37, np.float32, 2, "atax", "f64", x_format="txt", y_format="txt")
        self.check(64, 33, np.float64, 1, "ax", "f64", a_format="raw", band_rows=5)

    def test_default_leaves(self):
        # The default leaf (16 MiB of A) on a matrix of several leaves and bands.
        a = self.matrix(1100, 4099, np.float32)  # 16 KiB rows: 1024-row leaves
        np.save(self.path("A.npy"), a)
        x = self.rng.standard_normal(4099)
        np.save(self.path("x.npy"), x)
        r = self.run_atax([self.path("A.npy"), "--x", self.path("x.npy"), "--out",
                           self.path("y.npy"), "--device", "cpu", "--stats", "json"])
        stats = json.loads(r.stdout)
        self.assertEqual(stats["product"]["leaf_rows"], 1024)
        self.assert_close(np.load(self.path("y.npy")), reference(a, x, "atax"), "f64", "default")


class DeterminismTest(AtaxCase):
    def test_same_bytes(self):
        a = self.matrix(1003, 129, np.float32)
        np.save(self.path("A.npy"), a)
        for k in (1, 3, 64):
            x = self.rng.standard_normal((129, k))
            np.save(self.path("x.npy"), x)
            for precision in ("f64", "f32"):
                digests = set()
                for band_rows, slots, threads in [(4, 1, 1), (8, 3, 2), (64, 0, 2), (1000, 0, 1),
                                                  (None, 2, 2), (12, 1, 2)]:
                    args = [self.path("A.npy"), "--x", self.path("x.npy"), "--out",
                            self.path("y.npy"), "--leaf-rows", 4, "--threads", threads,
                            "--precision", precision, "--device", "cpu", "-q"]
                    if band_rows:
                        args += ["--band-rows", band_rows]
                    if slots:
                        args += ["--slots", slots]
                    self.run_atax(args)
                    with open(self.path("y.npy"), "rb") as f:
                        digests.add(hashlib.sha256(f.read()).hexdigest())
                self.assertEqual(len(digests), 1, f"k={k} {precision}: {len(digests)} results")


class OoccheckTest(AtaxCase):
    def test_accepts_and_rejects(self):
        for op in ("atax", "ax", "atx"):
            a = self.matrix(211, 97, np.float32)
            a.tofile(self.path("A.raw"))
            rows_x = 211 if op == "atx" else 97
            x = self.rng.standard_normal((rows_x, 3))
            np.save(self.path("x.npy"), x)
            self.run_atax([self.path("A.raw"), "--rows", 211, "--cols", 97, "--x",
                           self.path("x.npy"), "--out", self.path("y.npy"), "--op", op,
                           "--leaf-rows", 16, "--device", "cpu", "-q"])
            check = [tool("ooccheck"), "--atax", self.path("y.npy"), self.path("A.raw"),
                     "--rows", "211", "--cols", "97", "--type", "f32", "--x", self.path("x.npy"),
                     "--op", op]
            r = subprocess.run(check, capture_output=True, text=True, timeout=TIMEOUT)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            y = np.load(self.path("y.npy"))
            y.flat[y.size // 2] *= 1 + 1e-9
            np.save(self.path("y.npy"), y)
            r = subprocess.run(check, capture_output=True, text=True, timeout=TIMEOUT)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)

    def test_generated_x_and_low_rank(self):
        # oocgen's low-rank matrix and --x random, checked by ooccheck's own generator.
        subprocess.run([tool("oocgen"), self.path("A.raw"), "--width", "300", "--height", "500",
                        "--pattern", "low-rank", "-q"], check=True, timeout=TIMEOUT,
                       capture_output=True)
        self.run_atax([self.path("A.raw"), "--rows", 500, "--cols", 300, "--x", "random", "--k",
                       5, "--seed", 9, "--out", self.path("y.npy"), "--device", "cpu", "-q"])
        r = subprocess.run([tool("ooccheck"), "--atax", self.path("y.npy"), self.path("A.raw"),
                            "--rows", "500", "--cols", "300", "--type", "f32", "--x", "random",
                            "--k", "5", "--seed", "9"], capture_output=True, text=True,
                           timeout=TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        a = np.fromfile(self.path("A.raw"), dtype=np.float32).reshape(500, 300)
        # Low rank plus small noise: the 9th singular value is far below the 8th.
        s = np.linalg.svd(a.astype(np.float64), compute_uv=False)
        self.assertGreater(s[7] / s[8], 5)


class BadInputTest(AtaxCase):
    def expect_error(self, args, code, words):
        before = {}
        for p in (self.path("A.raw"),):
            if os.path.exists(p):
                with open(p, "rb") as f:
                    before[p] = f.read()
        r = self.run_atax(args, expect=code)
        for w in words:
            self.assertIn(w, r.stderr, f"{args}: {r.stderr}")
        self.assertFalse(os.path.exists(self.path("y.npy")), args)
        self.assertFalse(os.path.exists(self.path("y.npy.partial")), args)
        for p, data in before.items():
            with open(p, "rb") as f:
                self.assertEqual(f.read(), data, "input modified")
        return r

    def test_errors(self):
        a = self.matrix(50, 20, np.float32)
        a.tofile(self.path("A.raw"))
        np.save(self.path("x.npy"), self.rng.standard_normal(20))
        np.save(self.path("x19.npy"), self.rng.standard_normal(19))
        with open(self.path("ragged.txt"), "w") as f:
            f.write("1 2\n3\n")
        y = ["--out", self.path("y.npy"), "-q"]
        A = [self.path("A.raw"), "--cols", 20, "--type", "f32"]
        self.expect_error([self.path("A.raw"), "--cols", 21, "--x", self.path("x.npy")] + y, 3,
                          ["size"])
        self.expect_error(A + ["--rows", 51, "--x", self.path("x.npy")] + y, 3, ["51"])
        self.expect_error(A + ["--x", self.path("x19.npy")] + y, 3, ["19 rows", "needs 20"])
        self.expect_error(A + ["--op", "atx", "--x", self.path("x.npy")] + y, 3,
                          ["needs 50", "row of A"])
        self.expect_error(A + ["--x", self.path("ragged.txt")] + y, 3, ["line 2"])
        self.expect_error(A + ["--x", self.path("missing.npy")] + y, 3, ["missing.npy"])
        self.expect_error(A + ["--x", "ones", "--leaf-rows", 3] + y, 2, ["power of two"])
        self.expect_error(A + ["--x", "ones", "--op", "ax", "--out", self.path("y.txt")], 2,
                          [".txt"])
        self.expect_error(A + ["--x", "ones", "--op", "bogus"] + y, 2, ["atax, ax or atx"])
        self.expect_error(A + ["--x", "ones", "--precision", "f16"] + y, 2, ["f32"])
        self.expect_error([self.path("A.raw"), "--cols", 20, "--type", "u8", "--x", "ones"] + y,
                          2, ["f32 or f64"])
        # M x N x 4 beyond 64 bits.
        self.expect_error([self.path("A.raw"), "--cols", 2**40, "--rows", 2**40, "--x", "ones"] +
                          y, 3, [])
        # The output is the matrix itself: refused before the pass over A.
        r = self.run_atax(A + ["--x", "ones", "--out", self.path("A.raw"), "-q"], expect=2)
        self.assertIn("is the input file", r.stderr)
        self.assertEqual(np.fromfile(self.path("A.raw"), dtype=np.float32).tobytes(), a.tobytes())

    def test_nonfinite_x(self):
        a = self.matrix(40, 12, np.float64)
        np.save(self.path("A.npy"), a)
        x = self.rng.standard_normal(12)
        x[3] = np.nan
        x[5] = np.inf
        np.save(self.path("x.npy"), x)
        for op in ("atax", "ax"):
            r = self.run_atax([self.path("A.npy"), "--x", self.path("x.npy"), "--op", op,
                               "--out", self.path("y.npy"), "--stats", "json", "--device", "cpu"])
            stats = json.loads(r.stdout)
            self.assertEqual(stats["product"]["x_nonfinite"], 2)
            self.assertIn("NaN or Inf", r.stderr)
            with np.errstate(invalid="ignore"):
                ref = reference(a, x, op).reshape(-1)
            got = np.load(self.path("y.npy")).reshape(-1)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
            os.remove(self.path("y.npy"))

    def test_one_row_one_column(self):
        for m, n in [(1, 1), (1, 300), (300, 1)]:
            a = self.matrix(m, n, np.float32)
            np.save(self.path("A.npy"), a)
            np.save(self.path("x.npy"), self.rng.standard_normal(n))
            self.run_atax([self.path("A.npy"), "--x", self.path("x.npy"), "--out",
                           self.path("y.npy"), "--device", "cpu", "-q"])
            self.assert_close(np.load(self.path("y.npy")),
                              reference(a, np.load(self.path("x.npy")), "atax"), "f64",
                              f"{m}x{n}")

    def test_power_iteration_in_place(self):
        # --x v.npy --out v.npy: X is read before y replaces it (a power-iteration step).
        a = self.matrix(200, 30, np.float64)
        np.save(self.path("A.npy"), a)
        v = np.ones(30)
        np.save(self.path("v.npy"), v)
        for _ in range(3):
            self.run_atax([self.path("A.npy"), "--x", self.path("v.npy"), "--out",
                           self.path("v.npy"), "--device", "cpu", "-q"])
            v = a.T @ (a @ v)
        self.assert_close(np.load(self.path("v.npy")), v, "f64", "three steps")


def need_stated(stderr):
    """The --mem-limit figure an error says the job needs, as --mem-limit takes it: "needs
    --mem-limit 9.5K or more" (or "needs at least 9.4 KiB", the planner's words)."""
    m = re.search(r"needs (?:--mem-limit |at least )([0-9.]+)\s*([KMGT]?)", stderr)
    return m.group(1) + m.group(2) if m else None


def size_bytes(text):
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)


class MemoryLimitTest(AtaxCase):
    def atax_ref(self, a, x):
        # A^T (A X) in float64, a block of rows at a time (A X whole would be M x k doubles).
        y = np.zeros((a.shape[1], x.shape[1]))
        for r in range(0, a.shape[0], 1000):
            b = a[r:r + 1000].astype(np.float64)
            y += b.T @ (b @ x)
        return y

    def run_limit(self, a_path, x_path, limit, extra=(), expect=0):
        out = self.path("y.npy")
        r = self.run_atax([a_path, "--x", x_path, "--out", out, "--mem-limit", limit,
                           "--threads", 2, "--device", "cpu", "--stats", "json"] + list(extra),
                          expect=expect)
        if expect != 0:
            self.assertFalse(os.path.exists(out))
        return r

    def test_k4096_narrow(self):
        # 16 columns, k = 4096: T = leaf x k per thread is 512 times A's leaf. The default leaf
        # (one of all 4000 rows) needs 2 x 125 MiB; under 64M the leaf shrinks instead of
        # failing with a floor ("needs at least 1.6 MiB") that the run could never meet.
        a = self.matrix(4000, 16, np.float32)
        np.save(self.path("A.npy"), a)
        x = self.rng.standard_normal((16, 4096))
        np.save(self.path("x.npy"), x)
        r = self.run_limit(self.path("A.npy"), self.path("x.npy"), "64M")
        product = json.loads(r.stdout)["product"]
        self.assertLess(product["leaf_rows"], product["leaf_rows_default"])
        self.assert_close(np.load(self.path("y.npy")), self.atax_ref(a, x), "f64", "k=4096")

    def test_small_limit_f64(self):
        a = self.matrix(2000, 301, np.float64)
        np.save(self.path("A.npy"), a)
        x = self.rng.standard_normal(301)
        np.save(self.path("x.npy"), x)
        self.run_limit(self.path("A.npy"), self.path("x.npy"), "1M")
        self.assert_close(np.load(self.path("y.npy")), a.T @ (a @ x), "f64", "1M")

    def check_stated_need(self, a, x, limit, extra=()):
        np.save(self.path("A.npy"), a)
        np.save(self.path("x.npy"), x)
        args = (self.path("A.npy"), self.path("x.npy"))
        r = self.run_limit(*args, limit, extra, expect=2)
        need = need_stated(r.stderr)
        self.assertIsNotNone(need, r.stderr)
        for word in ("--width", "--channels"):
            self.assertNotIn(word, r.stderr)
        self.assertGreater(size_bytes(need), size_bytes(limit), r.stderr)
        self.run_limit(*args, need, extra)
        ref = self.atax_ref(a, x.reshape(x.shape[0], -1))
        self.assert_close(np.load(self.path("y.npy")).reshape(ref.shape), ref, "f64",
                          f"at the stated {need}")
        os.remove(self.path("y.npy"))
        self.run_limit(*args, str(int(0.9 * size_bytes(need))), extra, expect=2)
        return r

    def test_stated_need_suffices(self):
        a = self.matrix(2000, 301, np.float64)
        x = self.rng.standard_normal(301)
        self.check_stated_need(a, x, "4K")
        r = self.check_stated_need(a, x, "64K", ["--leaf-rows", 64])
        self.assertIn("--leaf-rows", r.stderr)
        # k = 4096: even one-row leaves need the y partial sums (16 x 4096 doubles) per thread.
        self.check_stated_need(self.matrix(300, 16, np.float32),
                               self.rng.standard_normal((16, 4096)), "1M")


class RawMessageTest(AtaxCase):
    """oocatax's raw-input errors name its own options."""

    def expect(self, args, code, words):
        r = self.run_atax(args + ["--x", "ones", "--out", self.path("y.npy"), "-q"], expect=code)
        for w in words:
            self.assertIn(w, r.stderr, f"{args}: {r.stderr}")
        for w in ("--width", "--height", "--channels", "channel(s)"):
            self.assertNotIn(w, r.stderr, f"{args}: {r.stderr}")
        self.assertFalse(os.path.exists(self.path("y.npy")))

    def test_names(self):
        a = self.matrix(50, 20, np.float32)
        a.tofile(self.path("A.raw"))
        np.save(self.path("A.npy"), a)
        A = self.path("A.raw")
        self.expect([A], 2, ["--cols", "--type"])
        self.expect([A, "--cols", 21], 3, ["--cols 21", "--type", "size", "20"])
        self.expect([A, "--cols", 30, "--type", "f64"], 3, ["--cols 30", "(f64)", "25"])
        self.expect([A, "--cols", 20, "--rows", 51], 3, ["--rows says 51", "50 rows"])
        self.expect([self.path("A.npy"), "--cols", 21], 2, ["--cols 21", "20 columns"])
        self.expect([self.path("A.npy"), "--rows", 51], 2, ["--rows 51", "50 rows"])
        self.expect(["synth:low-rank", "--cols", 20], 2, ["--rows and --cols"])
        # Agreeing options are fine.
        self.run_atax([self.path("A.npy"), "--rows", 50, "--cols", 20, "--x", "ones", "--out",
                       self.path("y.npy"), "-q"])


class NonFiniteATest(AtaxCase):
    def test_warned_and_counted(self):
        for dtype in (np.float32, np.float64):
            for op in ("atax", "atx", "ax"):
                for k, precision in ((1, "f64"), (3, "f32")):
                    a = self.matrix(61, 23, dtype)
                    a[37, 5] = np.nan
                    a[9, 17] = np.inf  # the first by row, in a later column and another band
                    a[9, 20] = -np.inf
                    np.save(self.path("A.npy"), a)
                    x = self.rng.standard_normal((61 if op == "atx" else 23, k))
                    np.save(self.path("x.npy"), x)
                    what = f"{np.dtype(dtype).name} {op} k={k} {precision}"
                    r = self.run_atax([self.path("A.npy"), "--x", self.path("x.npy"), "--out",
                                       self.path("y.npy"), "--op", op, "--precision", precision,
                                       "--leaf-rows", 4, "--band-rows", 8, "--device", "cpu",
                                       "--stats", "json", "-q"])
                    self.assertIn("warning: A holds 3 NaN or Inf value(s), the first at row 9, "
                                  "column 17", r.stderr, what)
                    product = json.loads(r.stdout)["product"]
                    self.assertEqual(product["a_nonfinite"], 3, what)
                    self.assertEqual(product["a_first_nonfinite"], {"row": 9, "col": 17}, what)
                    with np.errstate(invalid="ignore", over="ignore"):
                        ref = reference(a, x, op)
                    got = np.load(self.path("y.npy")).reshape(ref.shape)
                    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref), what)
                    os.remove(self.path("y.npy"))

    def test_finite_is_quiet(self):
        a = self.matrix(61, 23, np.float64)
        np.save(self.path("A.npy"), a)
        r = self.run_atax([self.path("A.npy"), "--x", "random", "--k", 3, "--out",
                           self.path("y.npy"), "--leaf-rows", 4, "--device", "cpu", "--stats",
                           "json", "-q"])
        self.assertEqual(r.stderr, "")
        product = json.loads(r.stdout)["product"]
        self.assertEqual(product["a_nonfinite"], 0)
        self.assertIsNone(product["a_first_nonfinite"])

    def test_overflow_named(self):
        # Finite values whose products are not: y is Inf, and the warning says why.
        np.save(self.path("A.npy"), np.full((30, 4), 1e200))
        r = self.run_atax([self.path("A.npy"), "--x", "ones", "--out", self.path("y.npy"),
                           "--device", "cpu", "-q"])
        self.assertIn("though A and X are finite: the products overflowed", r.stderr)
        self.assertFalse(np.isfinite(np.load(self.path("y.npy"))).any())


@unittest.skipUnless(has_gpu(), "no CUDA device listed by oocinfo: GPU cases run on the GPU machine")
class CudaTest(AtaxCase):
    def test_against_numpy_and_cpu(self):
        for dtype in (np.float32, np.float64):
            for k in (1, 3, 64):
                for op in ("atax", "ax", "atx"):
                    for precision in ("f64", "f32"):
                        a = self.matrix(1003, 517, dtype)
                        np.save(self.path("A.npy"), a)
                        rows_x = 1003 if op == "atx" else 517
                        x = self.rng.standard_normal((rows_x, k))
                        np.save(self.path("x.npy"), x)
                        digests = set()
                        for band_rows in (16, 64, None):
                            args = [self.path("A.npy"), "--x", self.path("x.npy"), "--out",
                                    self.path("y.npy"), "--op", op, "--precision", precision,
                                    "--leaf-rows", 16, "--device", "cuda", "-q"]
                            if band_rows:
                                args += ["--band-rows", band_rows]
                            self.run_atax(args)
                            y = np.load(self.path("y.npy"))
                            digests.add(hashlib.sha256(y.tobytes()).hexdigest())
                            self.assert_close(y.reshape(-1, k), reference(a, x, op),
                                              precision, f"cuda {op} k={k} {precision}")
                        self.assertEqual(len(digests), 1, f"cuda {op} k={k} {precision}")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
