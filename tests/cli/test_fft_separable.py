#!/usr/bin/env python3
"""Separable filters by 1-D FFTs (`oocconv --radius/--sigma/--taps --method fft`, oocrun's
`gaussian`/`uniform`/`separable` with method=fft) against scipy.ndimage.convolve1d along x, then
along y, in float64, through the binaries.

- Radii 1 to 400, every border (constant with a value other than 0), random non-zero data, the
  output file poisoned first and required to come out exactly H x W x C x bytes.
- u8, u16, f32, f64, --out-type, --precision f64 (double transforms), 1 and 3 channels.
- Band heights that do not divide the block grid (--band-rows, a small --mem-limit), images of 1
  row and of 1 column, taps longer than the image, row and column taps of different lengths.
- Results bit-identical across --threads 1 and 2 and across two --mem-limit values (the block
  grids are the image's).
- --method auto picks direct for small radii and the FFT for large ones (--stats json).
- A NaN input: the direct sum keeps it in its window, the FFT spreads it over exactly the blocks
  whose inputs hold it (and their transform partners); every other output stays finite.
Tolerance (the 2-D path's fft_error_bound, once per pass, with margin): |err| <= rel x sum|row| x
sum|col| x max|x|, rel 1e-5 for f32 transforms, 1e-12 for f64 (1e-6 into an f32 output); plus 0.5
for integer outputs (rounding of a value near a half).

Usage: test_fft_separable.py --bin-dir DIR [unittest options]
"""
import json
import os
import re
import subprocess
import sys
import unittest

import numpy as np
import scipy.ndimage as ndi

import cli_args  # beside this file
import filter_run

BIN_DIR, _REST = cli_args.bin_dir_and_rest(
    __name__, bin_help="directory holding oocconv and oocrun")

NP = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32, "f64": np.float64}
BORDERS = ["reflect", "mirror", "nearest", "wrap", "constant"]
PAD = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap",
       "constant": "constant"}


def run(args, expect=0):
    cmd = [os.path.join(BIN_DIR, str(args[0]))] + [str(a) for a in args[1:]]
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
    else:
        x = rng.uniform(-4, 4, shape)
        x[x == 0] = 0.5
    return x.astype(NP[t])


def conv1d(x, taps, axis, border, cval):
    """scipy.ndimage.convolve1d; for taps longer than twice the line, the line is padded by
    numpy's repeated extension first (the same rule) and only the inside kept."""
    n = x.shape[axis]
    r = len(taps) // 2
    if len(taps) <= 2 * n and not (border == "mirror" and n == 1):
        return ndi.convolve1d(x, taps, axis=axis, mode=border, cval=cval)
    widths = [(0, 0)] * x.ndim
    widths[axis] = (r, r)
    if border == "mirror" and n == 1:
        xp = np.pad(x, widths, mode="edge")
    else:
        kw = {"constant_values": cval} if border == "constant" else {}
        xp = np.pad(x, widths, mode=PAD[border], **kw)
    y = ndi.convolve1d(xp, taps, axis=axis, mode="constant")
    return np.take(y, np.arange(r, r + n), axis=axis)


def reference(x, row, col, border, cval):
    """The separable filter of a 2-D float64 x: row taps along x, then column taps along y, each
    pass padding its own input by the border rule (the constant pads the x-filtered rows)."""
    return conv1d(conv1d(x, row, 1, border, cval), col, 0, border, cval)


def gaussian(radius, sigma=None):
    sigma = sigma or radius / 3.0
    t = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    return t / t.sum()


class SeparableFftCase(filter_run.ScratchCase):
    PREFIX, SEED = "ooc_sfft_", 33

    def taps(self, r):
        """Random taps of radius r, not a pure high-pass, in convolution order."""
        t = self.rng.uniform(-0.2, 1, 2 * r + 1)
        t[r] += 1.0
        return t

    def filt(self, x, row, col, border="reflect", cval=None, out_t=None, method="fft", extra=(),
             tool="oocconv"):
        """Runs the separable filter of x (H, W, C) and returns the output array."""
        text = lambda t: ",".join(repr(float(v)) for v in t)
        return filter_run.run_filter(
            self, run, self.fresh, NP, x,
            ["--row-taps", text(row), "--col-taps", text(col), "--method", method],
            f"separable row={text(row)} col={text(col)} method={method}", border, cval, out_t,
            extra, tool)

    def check(self, got, x, row, col, border, cval, out_t, f64, what):
        xf = x.astype(np.float64)
        ref = np.stack([reference(xf[:, :, c], row, col, border, cval or 0.0)
                        for c in range(x.shape[2])], axis=2)
        xmax = float(np.abs(xf).max())
        if border == "constant" and cval is not None:
            xmax = max(xmax, abs(cval))
        rel = (1e-6 if out_t == "f32" else 1e-12) if f64 else 1e-5
        tol = rel * float(np.abs(row).sum() * np.abs(col).sum()) * xmax
        if out_t not in ("f32", "f64"):
            info = np.iinfo(NP[out_t])
            ref = np.clip(ref, info.min, info.max)
            tol += 0.5
        err = np.abs(got.astype(np.float64) - ref)
        worst = float(err.max())
        where = np.unravel_index(int(err.argmax()), err.shape)
        self.assertLessEqual(worst, tol, f"{what}: max |err| {worst:.3g} > {tol:.3g} at {where}")

    def test_radii_and_borders(self):
        """Radii 1 to 400 on every border, many band heights; square and unequal taps."""
        radii = [(1, 1), (2, 5), (7, 7), (16, 3), (40, 40), (1, 300), (300, 1), (128, 128),
                 (400, 400)]
        bands = [None, 1, 7, 23, 50]
        i = 0
        for rx, ry in radii:
            row, col = self.taps(rx), self.taps(ry)
            for border in BORDERS:
                H, W = [(61, 97), (140, 75), (33, 211), (250, 40)][i % 4]
                cval = 2.5 if border == "constant" else None
                x = random_data(self.rng, "f32", (H, W, 1))
                extra = [] if bands[i % 5] is None else ["--band-rows", bands[i % 5]]
                i += 1
                got = self.filt(x, row, col, border, cval, extra=extra)
                self.check(got, x, row, col, border, cval, "f32", False,
                           f"radius {rx},{ry} {border} {H}x{W} {extra}")

    def test_types_channels_precision(self):
        """u8, u16, f32, f64, --out-type, --precision f64, 1 and 3 channels."""
        cases = [("u8", None, 1), ("u8", "f32", 3), ("u16", None, 3), ("u16", "f64", 1),
                 ("f32", None, 3), ("f64", None, 1), ("f64", "u16", 3), ("f32", "u8", 1)]
        row, col = gaussian(20), gaussian(13)
        for n, (in_t, out_t, c) in enumerate(cases):
            for precision in ("auto", "f64"):
                border = BORDERS[(n + (precision == "f64")) % 5]
                x = random_data(self.rng, in_t, (57, 83, c))
                if out_t in ("u16", "u8") and in_t.startswith("f"):
                    x = (x * 300).astype(x.dtype)  # spans the integers, saturates some
                got = self.filt(x, row, col, border, out_t=out_t,
                                extra=["--precision", precision, "--band-rows", 9])
                ot = out_t or in_t
                f64 = precision == "f64" or "f64" in (in_t, ot)
                self.check(got, x, row, col, border, None, ot, f64,
                           f"{in_t}->{ot} C={c} {border} precision {precision}")

    def test_small_and_degenerate_images(self):
        """Taps longer than the image, one row, one column, one sample."""
        for (H, W), (rx, ry) in [((20, 30), (40, 40)), ((20, 30), (60, 1)), ((20, 30), (1, 60)),
                                 ((1, 50), (5, 7)), ((50, 1), (7, 5)), ((1, 1), (3, 3)),
                                 ((1, 700), (300, 300)), ((700, 1), (300, 300))]:
            row, col = self.taps(rx), self.taps(ry)
            for border in BORDERS:
                x = random_data(self.rng, "f32", (H, W, 1))
                cval = 1.5 if border == "constant" else None
                got = self.filt(x, row, col, border, cval)
                self.check(got, x, row, col, border, cval, "f32", False,
                           f"{H}x{W} radius {rx},{ry} {border}")

    def test_bit_identical_across_bands_and_threads(self):
        """The block grids belong to the image: the bytes do not depend on bands or threads."""
        row, col = gaussian(90), gaussian(70)
        for border in ("reflect", "constant"):
            x = random_data(self.rng, "f32", (700, 300, 3))
            first = None
            for extra in (["--threads", 2], ["--threads", 1], ["--mem-limit", "24M"],
                          ["--mem-limit", "60M", "--threads", 1], ["--band-rows", 37]):
                got = self.filt(x, row, col, border, 0.5 if border == "constant" else None,
                                extra=extra)
                if first is None:
                    first = got
                    self.check(got, x, row, col, border, 0.5 if border == "constant" else None,
                               "f32", False, border)
                else:
                    self.assertTrue(np.array_equal(got.view(np.uint32), first.view(np.uint32)),
                                    f"{border} {extra}: bytes differ from the first run's")

    def stats_operation(self, w, h, *args):
        rc, out, err = run(["oocconv", "synth:noise", "null:", "--width", w, "--height", h,
                            "--stats", "json", "-q"] + list(args))
        self.assertEqual(rc, 0, err)
        return json.loads(out)["operation"]

    def test_auto_picks(self):
        """auto: direct for small radii, the FFT for large ones; fft and direct as asked."""
        for radius, fft in ((3, False), (8, False), (100, True), (300, True)):
            op = self.stats_operation(1024, 1024, "--radius", radius)
            self.assertEqual("FFT on the CPU" in op, fft, f"radius {radius}: {op}")
        self.assertIn("FFT on the CPU",
                      self.stats_operation(64, 64, "--radius", 2, "--method", "fft"))
        self.assertNotIn("FFT on the CPU",
                         self.stats_operation(64, 64, "--radius", 300, "--method", "direct"))

    def test_nan_spreads_over_blocks(self):
        """A NaN input: --method direct keeps it in the (2ry+1) x (2rx+1) window around it; the
        FFT spreads it over whole blocks: the rows of each y-block whose inputs hold it (h = n - K
        + 1 rows from a multiple of h) by the columns of each x-block whose inputs hold it and of
        the x-block sharing that one's transform (blocks 2k and 2k + 1). Every other output is
        finite and within the FFT's bound (README, "NaN and Inf")."""
        H, W, rx, ry = 300, 260, 5, 7
        row, col = gaussian(rx), gaussian(ry)
        text = lambda t: ",".join(repr(float(v)) for v in t)
        # (y, x): inside a block; on an x-block's first column (its left neighbour's halo reads
        # it too); near a y-block's edge.
        for y, x in ((150, 100), (140, 108), (160, 30)):
            x_in = random_data(self.rng, "f32", (H, W, 1))
            x_in[y, x, 0] = np.nan
            src, masks = self.fresh(), {}
            x_in.tofile(src)
            for method in ("direct", "fft"):
                out = self.fresh()
                rc, stats, err = run(["oocconv", src, out, "--width", W, "--height", H,
                                      "--row-taps", text(row), "--col-taps", text(col),
                                      "--method", method, "--stats", "text", "-q"])
                self.assertEqual(rc, 0, err)
                got = np.fromfile(out, np.float32).reshape(H, W)
                masks[method] = ~np.isfinite(got)
                if method == "fft":
                    m = re.search(r"blocks of (\d+) along x, (\d+) along y", stats)
                    self.assertIsNotNone(m, stats)
                    w, h = int(m.group(1)) - (2 * rx + 1) + 1, int(m.group(2)) - (2 * ry + 1) + 1
                    ys = [j for j in range(-(-H // h)) if j * h - ry <= y < (j + 1) * h + ry]
                    xs = {i for i in range(-(-W // w)) if i * w - rx <= x < (i + 1) * w + rx}
                    xs |= {i ^ 1 for i in xs if (i ^ 1) * w < W}
                    want = np.zeros((H, W), bool)
                    for j in ys:
                        for i in xs:
                            want[j * h:(j + 1) * h, i * w:(i + 1) * w] = True
                    self.assertTrue(np.array_equal(masks["fft"], want),
                                    f"NaN at ({y}, {x}), blocks {w} x {h}: non-finite rows "
                                    f"{np.nonzero(masks['fft'].any(1))[0][[0, -1]]}, columns "
                                    f"{np.nonzero(masks['fft'].any(0))[0][[0, -1]]}")
                    ref = reference(np.nan_to_num(x_in[:, :, 0].astype(np.float64)), row, col,
                                    "reflect", 0.0)
                    tol = 1e-5 * float(np.abs(row).sum() * np.abs(col).sum()) * 4
                    self.assertLessEqual(float(np.abs(got[~want] - ref[~want]).max()), tol)
            window = np.zeros((H, W), bool)
            window[y - ry:y + ry + 1, x - rx:x + rx + 1] = True
            self.assertTrue(np.array_equal(masks["direct"], window), f"direct, NaN at ({y}, {x})")
            self.assertTrue(masks["fft"][window].all())
            self.assertGreater(masks["fft"].sum(), 10 * window.sum())

    def test_stages(self):
        """oocrun's gaussian, uniform and separable stages with method=fft."""
        x = random_data(self.rng, "f32", (130, 90, 1))
        row, col = self.taps(33), self.taps(21)
        got = self.filt(x, row, col, "mirror", tool="oocrun", extra=["--band-rows", 11])
        self.check(got, x, row, col, "mirror", None, "f32", False, "oocrun separable method=fft")
        src = self.fresh()
        x.tofile(src)
        for stage, taps in (("gaussian sigma=10 method=fft", gaussian(30, 10)),
                            ("uniform size=41 method=fft", np.full(41, 1 / 41))):
            out = self.fresh()
            rc, _, err = run(["oocrun", src, out, stage, "--width", 90, "--border", "nearest",
                              "--band-rows", 17, "-q"])
            self.assertEqual(rc, 0, err)
            got = np.fromfile(out, np.float32).reshape(130, 90, 1)
            self.check(got, x, taps, taps, "nearest", None, "f32", False, stage)
        rc, _, err = run(["oocrun", src, self.fresh(), "gaussian sigma=2 method=slow",
                          "--width", 90], expect=2)
        self.assertEqual(rc, 2)
        self.assertIn("method", err)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
