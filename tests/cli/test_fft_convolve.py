#!/usr/bin/env python3
"""The 2-D convolution by FFT (`oocconv --kernel K --method fft`, oocrun's `convolve method=fft`)
against scipy.ndimage.convolve in float64, through the binaries.

- Kernel sizes 3x3 to 129x129, odd and rectangular (5x9, 33x17, 257x3, 3x61, 1x301 and 301x1 of
  rank 1, forced through the FFT), every border (constant with a value other than 0), on random
  non-zero data, with the output file poisoned first and required to come out exactly
  H x W x C x bytes.
- Every sample type, --out-type, --precision f64 (double transforms), 1 to 4 channels.
- Band heights asked of 1, 7 and 23 rows (the planner makes them whole tile rows) and the planned
  height, kernels taller and wider than the image, images of 1 row and of 1 column, a row of
  100000.
- Results bit-identical across --band-rows and --threads (the tile grid is the image's), and
  across parts, MPI ranks and resumed runs that start on the tile grid or inside a tile row.
- --method auto picks direct for small kernels and the FFT for large ones (--stats json).
- Bad --method values: exit 2 and a message naming the option.
Tolerance (fft_error_bound in conv2d.hpp, with margin): |err| <= rel x sum|k| x max|x|, rel 1e-5
for f32 transforms, 1e-12 for f64; plus 0.5 for integer outputs (rounding of a value near a half).

Usage: test_fft_convolve.py --bin-dir DIR [unittest options]
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

import numpy as np
import scipy.ndimage as ndi

import cli_args  # beside this file
import filter_run

# --bin-dir DIR as a script (the other arguments go to unittest.main), $OOC_BIN_DIR under
# pytest (conftest.py).
BIN_DIR, _REST = cli_args.bin_dir_and_rest(
    __name__, bin_help="directory holding oocconv and oocrun")
# OOC_CHECK_DEVICE=cuda runs every oocconv/oocrun call on the GPU (device_check.sh's fft step);
# the references and tolerances are the same.
DEVICE = os.environ.get("OOC_CHECK_DEVICE", "")
DEVICE_ARGS = ["--device", DEVICE, "--cpu-start", "off"] if DEVICE else []

NP = {"u8": np.uint8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "i32": np.int32,
      "f32": np.float32, "f64": np.float64}
BORDERS = ["reflect", "mirror", "nearest", "wrap", "constant"]


def run(args, expect=0):
    cmd = [os.path.join(BIN_DIR, str(args[0]))] + [str(a) for a in args[1:]]
    if args[0] in ("oocconv", "oocrun"):
        cmd += DEVICE_ARGS
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300)
    if r.returncode != expect:
        print(f"\n$ {' '.join(cmd)}\nrc={r.returncode}\nstderr: {r.stderr.strip()}",
              file=sys.stderr)
    return r.returncode, r.stdout, r.stderr


def random_data(rng, t, shape):
    if t == "u8":
        x = rng.integers(1, 256, shape)
    elif t == "u16":
        x = rng.integers(1, 65536, shape)
    elif t in ("i16", "i32"):
        x = rng.integers(-30000, 30000, shape)
        x[x == 0] = 1
    elif t == "u32":
        x = rng.integers(1, 1 << 20, shape)
    else:
        x = rng.uniform(-4, 4, shape)
        x[x == 0] = 0.5
    return x.astype(NP[t])


PAD = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap",
       "constant": "constant"}


def padded(x, K, L, border, cval):
    """x extended by K // 2 rows and L // 2 columns each side by numpy's rule for `border`, which
    is scipy.ndimage's (repeated as often as the kernel needs: test_reference_equals_scipy)."""
    ry, rx = K // 2, L // 2
    H, W = x.shape
    kw = {"constant_values": cval} if border == "constant" else {}
    if border == "mirror" and H == 1:
        xp = np.pad(x, ((ry, ry), (0, 0)), mode="edge")
    else:
        xp = np.pad(x, ((ry, ry), (0, 0)), mode=PAD[border], **kw)
    if border == "mirror" and W == 1:
        return np.pad(xp, ((0, 0), (rx, rx)), mode="edge")
    return np.pad(xp, ((0, 0), (rx, rx)), mode=PAD[border], **kw)


def direct_sum(x, k, border, cval):
    """The float64 direct sum of scipy.ndimage.convolve (odd kernel sides) over the padded image,
    through BLAS a band of output rows at a time: scipy's own loop takes most of a second for
    each large kernel, and this check has dozens."""
    K, L = k.shape
    H, W = x.shape
    win = np.lib.stride_tricks.sliding_window_view(padded(x, K, L, border, cval), (K, L))
    flipped = np.ascontiguousarray(k[::-1, ::-1])
    out = np.empty((H, W))
    rows = max(1, (1 << 21) // (W * K * L))  # bands of about 16 MiB of windows
    for y in range(0, H, rows):
        out[y:y + rows] = np.tensordot(win[y:y + rows], flipped, axes=([2, 3], [0, 1]))
    return out


def reference(x, k, border, cval):
    """scipy.ndimage.convolve of a 2-D float64 x. Where the kernel is more than twice the image's
    side, scipy 1.10's N-D filters read outside their extended line (garbage or 1e305 values;
    convolve1d is right): there the image is padded by numpy's repeated extension first, which is
    the same rule, and only the inside kept. Large sums (over 2 M multiply-adds) take the same
    direct sum through BLAS (direct_sum), equal to scipy's to rounding."""
    K, L = k.shape
    H, W = x.shape
    if H * W * K * L > 2_000_000 and K % 2 and L % 2:
        return direct_sum(x, k, border, cval)
    if K <= 2 * H and L <= 2 * W:
        return ndi.convolve(x, k, mode=border, cval=cval)
    ry, rx = K // 2, L // 2
    return ndi.convolve(padded(x, K, L, border, cval), k, mode="constant")[ry:ry + H, rx:rx + W]


def f64_transforms(in_t, out_t, precision):
    return precision == "f64" or any(t in ("f64", "u32", "i32") for t in (in_t, out_t))


class FftCase(filter_run.ScratchCase):
    PREFIX, SEED = "ooc_fft_", 32

    def kernel_file(self, k):
        p = self.fresh(".npy")
        np.save(p, np.ascontiguousarray(k, np.float64))
        return p

    def random_kernel(self, K, L):
        k = self.rng.uniform(-1, 1, (K, L))
        k[K // 2, L // 2] += 2.0  # not a pure high-pass: the sums stay away from 0
        return k

    def conv(self, x, kfile, border="reflect", cval=None, out_t=None, method="fft", extra=(),
             tool="oocconv"):
        """Runs the convolution of x (H, W, C) and returns the output array."""
        return filter_run.run_filter(self, run, self.fresh, NP, x,
                                     ["--kernel", kfile, "--method", method],
                                     f"convolve kernel={kfile} method={method}", border, cval,
                                     out_t, extra, tool)

    def check(self, got, x, k, border, cval, out_t, f64, what):
        xf = x.astype(np.float64)
        ref = np.stack([reference(xf[:, :, c], k, border, cval or 0.0)
                        for c in range(x.shape[2])], axis=2)
        xmax = float(np.abs(xf).max())
        if border == "constant" and cval is not None:
            xmax = max(xmax, abs(cval))
        # f64 transforms into an f32 output: the output's rounding.
        rel = (1e-6 if out_t == "f32" else 1e-12) if f64 else 1e-5
        tol = rel * float(np.abs(k).sum()) * xmax
        if out_t not in ("f32", "f64"):
            info = np.iinfo(NP[out_t])
            ref = np.clip(ref, info.min, info.max)
            tol += 0.5
        err = np.abs(got.astype(np.float64) - ref)
        worst = float(err.max())
        where = np.unravel_index(int(err.argmax()), err.shape)
        self.assertLessEqual(worst, tol, f"{what}: max |err| {worst:.3g} > {tol:.3g} at {where}")

    def test_sizes_and_borders(self):
        """Odd and rectangular kernels from 3x3 to 129x129 on every border; many bands."""
        shapes = [(3, 3), (5, 9), (15, 15), (33, 17), (31, 31), (65, 65), (129, 129), (257, 3),
                  (3, 61), (1, 301), (301, 1)]
        bands = [None, 1, 7, 23]
        i = 0
        for K, L in shapes:
            k = self.random_kernel(K, L)
            kf = self.kernel_file(k)
            for border in BORDERS:
                H, W = [(61, 97), (140, 75), (33, 211)][i % 3]
                cval = 2.5 if border == "constant" else None
                x = random_data(self.rng, "f32", (H, W, 1))
                extra = [] if bands[i % 4] is None else ["--band-rows", bands[i % 4]]
                i += 1
                got = self.conv(x, kf, border, cval, extra=extra)
                self.check(got, x, k, border, cval, "f32", False,
                           f"{K}x{L} {border} {H}x{W} {extra}")

    def test_reference_equals_scipy(self):
        """direct_sum, the reference of the large kernels, against scipy.ndimage.convolve itself on
        every border, kernels within and beyond twice the image's sides (scipy padded there)."""
        for (H, W), (K, L) in (((40, 57), (15, 21)), ((23, 31), (65, 9)), ((12, 9), (3, 41)),
                               ((1, 30), (5, 7)), ((30, 1), (7, 5))):
            k = self.random_kernel(K, L)
            for border in BORDERS:
                x = random_data(self.rng, "f32", (H, W)).astype(np.float64)
                cval = 2.5 if border == "constant" else 0.0
                if K <= 2 * H and L <= 2 * W:
                    want = ndi.convolve(x, k, mode=border, cval=cval)
                else:
                    ry, rx = K // 2, L // 2
                    want = ndi.convolve(padded(x, K, L, border, cval), k,
                                        mode="constant")[ry:ry + H, rx:rx + W]
                got = direct_sum(x, k, border, cval)
                tol = 1e-13 * float(np.abs(k).sum()) * float(np.abs(x).max() + abs(cval))
                self.assertLessEqual(float(np.abs(got - want).max()), tol,
                                     f"{H}x{W} kernel {K}x{L} {border}")

    def test_types_channels_precision(self):
        """Every type, --out-type, --precision f64, 1 to 4 channels."""
        cases = [("u8", None, 1), ("u8", "f32", 3), ("u16", None, 2), ("i16", "f64", 1),
                 ("u32", None, 1), ("i32", "f32", 4), ("f32", None, 3), ("f64", None, 2),
                 ("f32", "u16", 1), ("f64", "i16", 4)]
        k = self.random_kernel(21, 19)
        kf = self.kernel_file(k)
        for n, (in_t, out_t, c) in enumerate(cases):
            for precision in ("auto", "f64"):
                border = BORDERS[n % 5]
                x = random_data(self.rng, in_t, (45, 83, c))
                if out_t in ("u16", "i16") and in_t.startswith("f"):
                    x = (x * 300).astype(x.dtype)  # spans the integers, saturates some
                got = self.conv(x, kf, border, out_t=out_t, extra=["--precision", precision,
                                                                    "--band-rows", 9])
                ot = out_t or in_t
                self.check(got, x, k, border, None, ot, f64_transforms(in_t, ot, precision),
                           f"{in_t}->{ot} C={c} {border} precision {precision}")

    def test_small_and_degenerate_images(self):
        """Kernels larger than the image, one row, one column, a row of 100000 samples."""
        for (H, W), (K, L) in [((20, 30), (41, 41)), ((20, 30), (41, 3)), ((20, 30), (3, 41)),
                               ((1, 50), (5, 7)), ((50, 1), (7, 5)), ((1, 1), (3, 3)),
                               ((3, 100000), (3, 9))]:
            k = self.random_kernel(K, L)
            kf = self.kernel_file(k)
            for border in (BORDERS if H * W < 5000 else ["reflect", "wrap"]):
                x = random_data(self.rng, "f32", (H, W, 1))
                got = self.conv(x, kf, border, 1.5 if border == "constant" else None)
                self.check(got, x, k, border, 1.5 if border == "constant" else None, "f32",
                           False, f"{H}x{W} kernel {K}x{L} {border}")

    def test_bit_identical_across_bands_and_threads(self):
        """The tile grid belongs to the image: the bytes do not depend on the bands or threads."""
        k = self.random_kernel(25, 31)
        kf = self.kernel_file(k)
        for border in ("reflect", "constant"):
            x = random_data(self.rng, "f32", (300, 170, 2))
            first = None
            for extra in ([], ["--band-rows", 1], ["--band-rows", 13], ["--band-rows", 64],
                          ["--band-rows", 250, "--threads", 1], ["--threads", 2]):
                got = self.conv(x, kf, border, extra=extra)
                if first is None:
                    first = got
                    self.check(got, x, k, border, None, "f32", False, border)
                else:
                    self.assertTrue(np.array_equal(got.view(np.uint32), first.view(np.uint32)),
                                    f"{border} {extra}: bytes differ from the planned bands'")

    def test_parts_ranks_and_resume_give_one_runs_bytes(self):
        """Bands on the tile grid carry only the kernel's halo, so parts, MPI ranks and resumed
        runs may start on the grid or inside a tile row: every split gives one run's bytes, for
        oocconv and for oocrun's convolve stage, alone or after another stage."""
        k = self.random_kernel(31, 31)
        kf = self.kernel_file(k)
        H, W = 1400, 400
        x = random_data(self.rng, "f32", (H, W, 1))
        src = self.fresh()
        x.tofile(src)
        size = ["--width", W, "--height", H, "-q"]
        tools = {"oocconv": (["oocconv"], ["--kernel", kf, "--method", "fft"] + size),
                 "convolve": (["oocrun"], [f"convolve kernel={kf} method=fft"] + size),
                 "gaussian ! convolve": (["oocrun"], ["gaussian sigma=2 ! convolve "
                                                      f"kernel={kf} method=fft"] + size)}
        for name, (tool, args) in tools.items():
            self.check_splits(name, tool, src, args, H)

    def check_splits(self, name, tool, src, args, H):
        def conv(out, *extra):
            rc, _, err = run(tool + [src, out] + args + list(extra))
            self.assertEqual(rc, 0, f"{name} {extra}: {err}")

        def finish(out):
            rc, _, err = run(["oocconv", "--finish", out])
            self.assertEqual(rc, 0, err)

        ref = self.fresh()
        conv(ref)
        with open(ref, "rb") as f:
            want = f.read()

        def same(out, what):
            with open(out, "rb") as f:
                self.assertTrue(f.read() == want, f"{name}, {what}: bytes differ from one run's")

        for extra in (["--band-rows", 1], ["--band-rows", 500, "--threads", 1]):
            out = self.fresh()
            conv(out, *extra)
            same(out, str(extra))
        for n, extra in ((2, []), (3, ["--band-rows", 1]), (5, ["--threads", 1])):
            out = self.fresh()
            for i in range(n):
                conv(out, "--part", f"{i}/{n}", *extra)
            finish(out)
            same(out, f"{n} parts {extra}")
        # A run that stopped at row `done` (on the tile grid or inside a tile row), resumed.
        for done in (337, 900, H - 1):
            out = self.fresh()
            conv(out, "--rows", f"0:{done}")
            conv(out, "--rows", f"0:{H}", "--resume")
            finish(out)
            same(out, f"resumed at row {done}")
        mpirun = shutil.which("mpirun")
        if mpirun and not DEVICE:
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                       OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader",
                       OMPI_MCA_btl_vader_single_copy_mechanism="none")
            out = self.fresh()
            cmd = [mpirun, "-np", "3", os.path.join(BIN_DIR, tool[0]), src, out]
            r = subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                               env=env, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            same(out, "3 MPI ranks")

    def stats_operation(self, x, kf, method="auto"):
        src = self.fresh()
        x.tofile(src)
        h, w, c = x.shape
        rc, out, err = run(["oocconv", src, "null:", "--width", w, "--height", h, "--kernel", kf,
                            "--method", method, "--stats", "json", "-q"])
        self.assertEqual(rc, 0, err)
        return json.loads(out)["operation"]

    def test_auto_picks(self):
        """auto: the direct sum for 3x3 and 5x5, the FFT from 45x45 on (its tile in --stats)."""
        x = random_data(self.rng, "f32", (512, 512, 1))
        for K, fft in ((3, False), (5, False), (45, True), (129, True)):
            op = self.stats_operation(x, self.kernel_file(self.random_kernel(K, K)))
            self.assertEqual("FFT" in op, fft, f"{K}x{K}: {op}")
            self.assertEqual("direct" in op, not fft, f"{K}x{K}: {op}")
        op = self.stats_operation(x, self.kernel_file(self.random_kernel(3, 3)), "fft")
        self.assertIn("FFT", op)
        # A kernel of rank 1 stays separable under auto, and is a 2-D FFT when forced.
        g = np.outer(np.hanning(41) + 0.1, np.hanning(41) + 0.1)
        gf = self.kernel_file(g)
        self.assertIn("rank 1", self.stats_operation(x, gf))
        self.assertIn("FFT", self.stats_operation(x, gf, "fft"))

    def test_pipeline_stage(self):
        """oocrun's convolve stage with method=fft, alone and after a Gaussian."""
        k = self.random_kernel(37, 29)
        kf = self.kernel_file(k)
        x = random_data(self.rng, "f32", (130, 90, 1))
        got = self.conv(x, kf, "mirror", tool="oocrun", extra=["--band-rows", 11])
        self.check(got, x, k, "mirror", None, "f32", False, "oocrun convolve method=fft")
        src = self.fresh()
        x.tofile(src)
        out = self.fresh()
        rc, _, err = run(["oocrun", src, out, "gaussian", "sigma=2", "!", "convolve",
                          f"kernel={kf}", "method=fft", "--width", 90, "--border", "nearest",
                          "--band-rows", 17, "-q"])
        self.assertEqual(rc, 0, err)
        got = np.fromfile(out, np.float32).reshape(130, 90, 1)
        g = ndi.gaussian_filter(x[:, :, 0].astype(np.float64), 2, mode="nearest", truncate=3.0)
        ref = ndi.convolve(g, k, mode="nearest")
        tol = 1e-5 * np.abs(k).sum() * np.abs(x).max()
        self.assertLessEqual(float(np.abs(got[:, :, 0] - ref).max()), tol, "gaussian ! convolve")

    def test_bad_method(self):
        x = random_data(self.rng, "f32", (10, 10, 1))
        src = self.fresh()
        x.tofile(src)
        kf = self.kernel_file(self.random_kernel(3, 3))
        rc, _, err = run(["oocconv", src, self.fresh(), "--width", 10, "--kernel", kf,
                          "--method", "fast"], expect=2)
        self.assertEqual(rc, 2)
        self.assertIn("--method", err)
        rc, _, err = run(["oocconv", src, self.fresh(), "--width", 10, "--radius", 3,
                          "--method", "slow"], expect=2)
        self.assertEqual(rc, 2)
        self.assertIn("--method", err)
        rc, _, err = run(["oocrun", src, self.fresh(), f"convolve kernel={kf} method=slow",
                          "--width", 10], expect=2)
        self.assertEqual(rc, 2)
        self.assertIn("method", err)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
