#!/usr/bin/env python3
"""Nodata (issue 48) through oocrun and oocconv against independent float64 references: the
linear stages as normalized convolution, scipy's correlate1d of x*m and of m with the same border
(then divided), the rank stages as NumPy over each window's valid samples, over the five border
modes, on random non-zero images with holes in blobs, stripes, at band edges (bands of 7 rows), a
whole band of holes, a region with no valid sample, NaN beside a value, and a nodata value that is
also a real sample's. Also min-weight= and fill=, the refusals, --nodata none giving today's
bytes, the input's GDAL_NODATA tag as the default, and what the outputs record.

Usage: test_nodata.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import ndimage as ndi

import cli_args  # beside this file

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCRUN = os.path.join(BIN, "oocrun")
OOCCONV = os.path.join(BIN, "oocconv")
MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]
PAD = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap"}
ND = -9999.0
rng = np.random.default_rng(48)


def holes(x, nd):
    return np.isnan(x) | (x == nd)


def image(h=45, w=38, nd=ND, kind="blobs"):
    """Random values in [1, 100) with holes of every kind the issue names."""
    x = rng.uniform(1, 100, (h, w))
    yy, xx = np.mgrid[:h, :w]
    x[(yy - 12) ** 2 + (xx - 9) ** 2 < 16] = nd          # a blob
    x[:, 20] = nd                                         # a stripe down
    x[30, :] = nd                                         # a stripe across
    x[6:8, :] = nd                                        # at a band edge (bands of 7 rows)
    x[14:21, :] = nd                                      # a whole band of 7 rows
    x[35:44, 25:36] = nd                                  # no valid sample within reach
    x[:, 0] = np.where(rng.random(h) < 0.5, nd, x[:, 0])  # holes at the image's edge
    if kind == "nan":  # NaN beside the value: both holes
        x[rng.random((h, w)) < 0.05] = np.nan
    return x.astype(np.float32)


def separable(x, nd, kr, kc, mode, cval=0.0, min_weight=0.0, fill=False):
    """Normalized convolution: correlate1d along x then y of x*m and of m (kr, kc in correlation
    order), each pass padded as scipy pads it; nodata where no weight, where the weight of |k| on
    valid samples is below min_weight, and on holes unless fill."""
    x = x.astype(np.float64)
    h = holes(x, nd)
    m = (~h).astype(np.float64)
    cv_ok = not (np.isnan(cval) or cval == nd)
    cx, cm = (cval, 1.0) if cv_ok else (0.0, 0.0)

    def sep(a, c, r, k):
        a = ndi.correlate1d(a, np.asarray(r, float), axis=1, mode=mode, cval=c)
        return ndi.correlate1d(a, np.asarray(k, float), axis=0, mode=mode, cval=c)

    num = sep(np.where(h, 0.0, x), cx, kr, kc)
    den = sep(m, cm, kr, kc)
    wab = sep(m, cm, np.abs(kr), np.abs(kc))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    bad = (wab <= 0) | (wab < min_weight * np.abs(kr).sum() * np.abs(kc).sum()) | (den == 0)
    if not fill:
        bad |= h
    out[bad] = nd
    return out


def ranked(x, nd, size, rank_of, mode, cval=0.0, footprint=None, dilation=False):
    """The sample of rank r (n - 1) // (count - 1) among each window's n valid samples (r: scipy's
    rank among the window's count samples); nodata where none, or on holes."""
    kh, kw = size
    top = kh // 2 - (1 if dilation and kh % 2 == 0 else 0)
    left = kw // 2 - (1 if dilation and kw % 2 == 0 else 0)
    xf = np.where(holes(x, nd), np.nan, x.astype(np.float64))
    pad = ((top, kh - 1 - top), (left, kw - 1 - left))
    if mode == "constant":
        c = np.nan if (np.isnan(cval) or cval == nd) else cval
        p = np.pad(xf, pad, mode="constant", constant_values=c)
    else:
        p = np.pad(xf, pad, mode=PAD[mode])
    win = sliding_window_view(p, (kh, kw)).reshape(x.shape + (kh * kw,))
    fp = np.ones(kh * kw, bool) if footprint is None else footprint.reshape(-1).astype(bool)
    if dilation and footprint is not None:
        fp = fp[::-1]
    win = win[..., fp]
    count = win.shape[-1]
    n = np.sum(~np.isnan(win), axis=-1)
    s = np.sort(win, axis=-1)  # NaN last
    r = rank_of(count)
    k = (r * np.maximum(n - 1, 0)) // max(count - 1, 1)
    out = np.take_along_axis(s, k[..., None], axis=-1)[..., 0]
    out[(n == 0) | holes(x, nd)] = nd
    return out


def gaussian_taps(sigma):
    r = int(np.ceil(3 * sigma))
    t = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    return t / t.sum()


def masked_level(a, nd):
    """The next level: each 2 x 2 block's mean of its valid samples (an odd last row or column
    with itself), summed top left, bottom left, top right, bottom right in float64, integers
    rounded half to even; nodata where the block has none."""
    if a.shape[0] % 2:
        a = np.vstack([a, a[-1:]])
    if a.shape[1] % 2:
        a = np.hstack([a, a[:, -1:]])
    s = np.zeros((a.shape[0] // 2, a.shape[1] // 2))
    n = np.zeros(s.shape)
    for b in (a[0::2, 0::2], a[1::2, 0::2], a[0::2, 1::2], a[1::2, 1::2]):
        v = b.astype(np.float64)
        ok = ~holes(v, nd)
        s = s + np.where(ok, v, 0.0)
        n += ok
    with np.errstate(divide="ignore", invalid="ignore"):
        out = s / n
    out[n == 0] = nd
    if np.issubdtype(a.dtype, np.integer):
        out = np.round(out)
    return out.astype(a.dtype)


class NodataCase(unittest.TestCase):
    """A temporary folder and the runs of oocrun the nodata checks share (test_nodata_types.py's
    too)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ooc_nodata_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.dir, name)

    def run_tool(self, args, code=0):
        r = subprocess.run(args + ["-q"], capture_output=True, text=True)
        self.assertEqual(r.returncode, code, f"{' '.join(args)}: {r.stderr}")
        return r

    def oocrun(self, x, stages, *opts, nodata="-9999", out_npy=True):
        src, dst = self.p("in.npy"), self.p("out.npy")
        np.save(src, x)
        extra = ["--nodata", nodata] if nodata is not None else []
        self.run_tool([OOCRUN, src, dst, stages, *extra, *opts])
        return np.load(dst)

    def same(self, got, want, nd, what, rtol=2e-5, atol=2e-4):
        bad_g = np.isnan(got) if np.isnan(nd) else got == nd
        bad_w = np.isnan(want) if np.isnan(nd) else want == nd
        diff = np.argwhere(bad_g != bad_w)
        self.assertEqual(len(diff), 0, f"{what}: nodata differs at {diff[:5].tolist()}")
        ok = ~bad_w
        np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=atol, err_msg=what)


class Nodata(NodataCase):
    def test_linear_stages_every_border(self):
        x = image()
        g = gaussian_taps(1.5)
        cases = [
            ("gaussian sigma=1.5", g, g),
            ("uniform size=5x3", np.full(3, 1 / 3), np.full(5, 1 / 5)),
            ("correlate1d taps=1,2,4 axis=1", np.array([1.0, 2, 4]), np.array([1.0])),
            ("correlate1d taps=3,1,0.5,2,1 axis=0", np.array([1.0]), np.array([3, 1, 0.5, 2, 1])),
            # convolution order: correlate with the taps reversed
            ("separable row=1,2,3 col=0.5,1,1.5,2,0.25", np.array([3.0, 2, 1]),
             np.array([0.25, 2, 1.5, 1, 0.5])),
        ]
        for mode in MODES:
            for stage, kr, kc in cases:
                for band in ("7", "0"):
                    opts = ["--border", mode, "--border-value", "3.5"]
                    if band != "0":
                        opts += ["--band-rows", band, "--threads", "2"]
                    got = self.oocrun(x, stage, *opts)
                    want = separable(x, ND, kr, kc, mode, 3.5)
                    self.same(got, want, ND, f"{stage} --border {mode} bands {band}")

    def test_linear_stages_every_width_channels_precision(self):
        """The separable stages sum the weights a vector of samples at a time, only where a
        vector's window holds a hole (the last vector of a row overlapping the one before it):
        widths around the vectors' (8 f32 samples, 4 f64), a strip of one sample, channels,
        tiles across the row, f64 sums, negative taps, against the float64 reference."""
        g = gaussian_taps(1)
        neg = np.array([-0.5, 2.0, 1.0, -0.25, 0.75])
        for W in (1, 3, 7, 8, 9, 15, 16, 17, 33, 70):
            for C in (1, 3):
                x = rng.uniform(1, 100, (19, W, C)).astype(np.float32)
                x[rng.random(x.shape) < 0.08] = ND
                x[:, W // 2, 0] = ND
                x[9, :, :] = np.nan
                if C == 1:
                    x = x[..., 0]
                for prec in ("f32", "f64"):
                    for stage, kr in (("gaussian sigma=1", g),
                                      ("correlate1d taps=-0.5,2,1,-0.25,0.75 axis=1", neg)):
                        kc = g if stage.startswith("gaussian") else np.array([1.0])
                        opts = ["--precision", prec, "--band-rows", "6", "--border", "mirror"]
                        if W >= 33:
                            opts += ["--tile-cols", "16", "--threads", "2"]
                        xin = x.astype(np.float64) if prec == "f64" else x  # an f64 output
                        got = self.oocrun(xin, stage, *opts)
                        want = (separable(x, ND, kr, kc, "mirror") if C == 1 else
                                np.stack([separable(x[..., c], ND, kr, kc, "mirror")
                                          for c in range(C)], axis=-1))
                        tol = (1e-12, 1e-10) if prec == "f64" else (2e-5, 2e-4)
                        self.same(got, want, ND, f"{stage} W {W} C {C} {prec}", *tol)

    def test_convolve_direct_every_border(self):
        """convolve: one 2-D pass, scipy.ndimage.correlate of x*m and m with the kernel turned
        (convolve's order), padded once."""
        x = image(kind="nan")
        k = rng.uniform(0.1, 1, (3, 5))
        k[1, 0] = -0.3  # a negative tap: the |k| weight differs from the weight
        np.save(self.p("k.npy"), k)
        corr = k[::-1, ::-1]
        for mode in MODES:
            for mw, fill in ((0.0, "false"), (0.4, "true")):
                got = self.oocrun(x, f"convolve kernel={self.p('k.npy')} min-weight={mw} "
                                  f"fill={fill}", "--border", mode, "--border-value", "2",
                                  "--band-rows", "7")
                xf = x.astype(np.float64)
                h = holes(xf, ND)
                m = (~h).astype(np.float64)
                num = ndi.correlate(np.where(h, 0, xf), corr, mode=mode, cval=2.0)
                den = ndi.correlate(m, corr, mode=mode, cval=1.0)
                wab = ndi.correlate(m, np.abs(corr), mode=mode, cval=1.0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    want = num / den
                bad = (wab <= 0) | (wab < mw * np.abs(k).sum()) | (den == 0)
                if fill == "false":
                    bad |= h
                want[bad] = ND
                self.same(got, want, ND, f"convolve --border {mode} min-weight {mw} fill {fill}")

    def test_constant_border_of_nodata_and_nan_holes(self):
        x = image(kind="nan")
        g = gaussian_taps(2)
        for nd, text in ((ND, "-9999"), (np.nan, "nan")):
            for cval in (ND, 7.0):
                got = self.oocrun(x, "gaussian sigma=2", "--border", "constant", "--border-value",
                                  str(cval), nodata=text)
                want = separable(x, nd, g, g, "constant", cval)
                self.same(got, want, nd, f"nodata {text} cval {cval}")

    def test_min_weight_and_fill(self):
        x = image()
        k = np.full(5, 0.2)
        for mw in (0.0, 0.3, 0.75):
            for fill in (False, True):
                stage = f"uniform size=5 min-weight={mw} fill={'true' if fill else 'false'}"
                got = self.oocrun(x, stage, "--band-rows", "7")
                self.same(got, separable(x, ND, k, k, "reflect", 0, mw, fill), ND, stage)

    def test_value_equal_to_real_samples_and_integer_types(self):
        x = np.round(rng.uniform(1, 60, (40, 33))).astype(np.uint16)  # many repeats of each value
        nd = float(x[3, 3])  # a real sample's value: every sample of it is a hole
        x[10:17, :] = nd
        g = gaussian_taps(1)
        for mode in MODES:
            got = self.oocrun(x, "gaussian sigma=1", "--border", mode, "--band-rows", "7",
                              nodata=str(int(nd)))
            self.assertEqual(got.dtype, np.uint16)
            want = separable(x, nd, g, g, mode)
            ok = want != nd
            # Holes are nd; a valid sample that rounds to nd moves one step up (off the holes).
            # f32 sums, as the unmasked filter's: a value within their rounding of a half may
            # round either way.
            self.assertTrue(np.array_equal(got == nd, ~ok), mode)
            sure = np.abs(want - np.floor(want) - 0.5) > 1e-4
            e = np.round(want)
            e[e == nd] = nd + 1
            self.assertTrue(np.array_equal(got[ok & sure], e[ok & sure]), mode)
            self.assertLessEqual(np.abs(got[ok].astype(float) - want[ok]).max(), 1.5 + 1e-4, mode)

    def test_rank_stages_every_border(self):
        x = image(kind="nan")
        fp = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], np.uint8)
        np.save(self.p("fp.npy"), fp)
        cases = [
            ("median size=3", (3, 3), lambda n: n // 2, None),
            ("median size=4", (4, 4), lambda n: n // 2, None),  # even: scipy's own rank
            ("percentile size=5x3 q=30", (5, 3), lambda n: int(n * 30 / 100), None),
            ("rank size=3x5 index=-2", (3, 5), lambda n: n - 2, None),
            ("minimum size=3", (3, 3), lambda n: 0, None),
            ("maximum size=5", (5, 5), lambda n: n - 1, None),
            (f"median footprint={self.p('fp.npy')}", (3, 3), lambda n: n // 2, fp),
        ]
        for mode in MODES:
            for stage, size, rank_of, f in cases:
                got = self.oocrun(x, stage, "--border", mode, "--border-value", "50",
                                  "--band-rows", "7", nodata="nan")
                want = ranked(x, np.nan, size, rank_of, mode, 50.0, f)
                self.same(got, want, np.nan, f"{stage} --border {mode}", rtol=0, atol=0)

    def test_median_lanes_every_hole_count(self):
        """The 3 x 3 and 5 x 5 float medians that run a row's windows in vector lanes (holes -inf
        and +inf in turn), and a taller window: random holes from sparse to dense, so that every
        count of holes in a window occurs, NaN beside the value, against the NumPy reference."""
        for frac in (0.05, 0.3, 0.6, 0.9):
            x = rng.uniform(-50, 50, (40, 203)).astype(np.float32)
            x[rng.random(x.shape) < frac] = ND
            x[rng.random(x.shape) < 0.02] = np.nan
            for h, w in ((3, 3), (5, 5), (9, 3)):  # 9 x 3: the counted (not ORed) hole test
                for mode in ("reflect", "constant"):
                    got = self.oocrun(x, f"median size={h}x{w}", "--border", mode,
                                      "--band-rows", "9")
                    want = ranked(x, ND, (h, w), lambda n: n // 2, mode)
                    self.same(got, want, ND, f"median {h}x{w} {mode} holes {frac}", rtol=0, atol=0)

    def test_median_one_pass_every_width(self):
        """The 3 x 3 and 5 x 5 float medians filter a row in one pass (vector lanes inside the
        row, the windows at its ends through the border rule): widths around the lanes' and the
        window's, holes as the value and as NaN, every border, odd band heights, against the
        NumPy reference."""
        for W in (7, 9, 10, 11, 12, 13, 14, 15, 17, 23, 41):
            x = rng.uniform(-50, 50, (23, W)).astype(np.float32)
            x[rng.random(x.shape) < 0.2] = ND
            x[rng.random(x.shape) < 0.05] = np.nan
            x[:, W // 2] = ND  # a column of holes: every window beside it has one
            for n in (3, 5):
                for mode in MODES:
                    for nd in ("-9999", "nan"):
                        y = np.where(x == ND, np.nan, x) if nd == "nan" else x
                        got = self.oocrun(y, f"median size={n}", "--border", mode, "--border-value",
                                          "7", "--band-rows", "5", nodata=nd)
                        want = ranked(y, float(nd), (n, n), lambda c: c // 2, mode, 7.0)
                        self.same(got, want, float(nd), f"median {n} W {W} {mode} nodata {nd}",
                                  rtol=0, atol=0)

    def test_median_windows_without_holes_are_the_unmasked_bytes(self):
        """The one-pass 3 x 3 and 5 x 5 medians send windows without a hole through the unmasked
        network: with no hole anywhere the masked run is the unmasked one byte for byte, and with
        a few holes every output whose window misses them is (repeated values and signed zeros
        included, where a different selection could pick another zero)."""
        for W in (13, 40, 203):
            x = np.round(rng.uniform(-20, 20, (37, W))).astype(np.float32)  # many ties
            x[x == 0] = -0.0
            x[::3, ::4] = 0.0
            y = x.copy()
            holes_at = [(5, W // 3), (20, W - 2), (36, 0)]
            for r, c in holes_at:
                y[r, c] = ND
            for n in (3, 5):
                for mode in ("reflect", "constant"):
                    opts = ["--border", mode, "--band-rows", "6", "--threads", "2"]
                    plain = self.oocrun(x, f"median size={n}", *opts, nodata=None)
                    clean = self.oocrun(x, f"median size={n}", *opts)
                    self.assertTrue(np.array_equal(plain.view(np.uint32), clean.view(np.uint32)),
                                    f"no holes, median {n} W {W} {mode}")
                    got = self.oocrun(y, f"median size={n}", *opts)
                    far = np.ones(x.shape, bool)
                    h = n // 2
                    for r, c in holes_at:
                        far[max(r - h, 0):r + h + 1, max(c - h, 0):c + h + 1] = False
                    self.assertTrue(np.array_equal(plain[far].view(np.uint32),
                                                   got[far].view(np.uint32)),
                                    f"holes, median {n} W {W} {mode}")

    def test_opening_and_closing(self):
        x = image()
        for mode in MODES:
            lo = lambda n: 0
            hi = lambda n: n - 1
            for stage, first, second in (("opening", lo, hi), ("closing", hi, lo)):
                got = self.oocrun(x, f"{stage} size=3", "--border", mode, "--band-rows", "7")
                mid = ranked(x, ND, (3, 3), first, mode).astype(np.float32)
                want = ranked(mid, ND, (3, 3), second, mode, dilation=True)
                self.same(got, want, ND, f"{stage} --border {mode}", rtol=0, atol=0)

    def test_fast_path_gives_the_masked_bytes(self):
        """Windows without a hole take the constant weight; it must be the bytes the weighted
        sums give: a hole changes no output beyond its reach, whatever the band plan."""
        x = rng.uniform(1, 100, (40, 300)).astype(np.float32)
        y = x.copy()
        y[20, 150] = ND
        for stage, r in (("gaussian sigma=1", 3), ("uniform size=5", 2)):
            for opts in ((), ("--band-rows", "7", "--threads", "2")):
                a = self.oocrun(x, stage, *opts)
                b = self.oocrun(y, stage, *opts)
                far = np.ones(x.shape, bool)
                far[20 - r:21 + r, 150 - r:151 + r] = False
                self.assertTrue(np.array_equal(a[far].view(np.uint32), b[far].view(np.uint32)),
                                f"{stage} {opts}")
                self.assertEqual(b[20, 150], ND)
            whole = self.oocrun(y, stage)
            banded = self.oocrun(y, stage, "--band-rows", "3", "--threads", "2")
            self.assertTrue(np.array_equal(whole.view(np.uint32), banded.view(np.uint32)), stage)

    def test_convolve_fft_within_its_bound(self):
        """method=fft: the transforms of x*m and of m, divided; within the FFT's bound of the
        float64 reference, relative to sum|k| max|x| / the window's weight."""
        x = image(kind="nan")
        k = rng.uniform(0.1, 1, (5, 7))
        np.save(self.p("k.npy"), k)
        corr = k[::-1, ::-1]
        for mode in MODES:
            for method in ("fft", "direct"):
                got = self.oocrun(x, f"convolve kernel={self.p('k.npy')} method={method}",
                                  "--border", mode, "--border-value", "2", "--band-rows", "7")
                xf = x.astype(np.float64)
                h = holes(xf, ND)
                m = (~h).astype(np.float64)
                num = ndi.correlate(np.where(h, 0, xf), corr, mode=mode, cval=2.0)
                den = ndi.correlate(m, corr, mode=mode, cval=1.0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    want = num / den
                want[(den <= 0) | h] = ND
                bound = 1e-4 * k.sum() * 100 / np.where(den > 0, den, 1)
                bad_g, bad_w = got == ND, want == ND
                self.assertTrue(np.array_equal(bad_g, bad_w), f"{method} {mode}: nodata differs")
                err = np.abs(got[~bad_w] - want[~bad_w])
                self.assertTrue(np.all(err <= bound[~bad_w]), f"{method} {mode}: {err.max()}")

    def test_compound_stages(self):
        """dog, unsharp and subtract-background from the masked Gaussian: holes stay holes."""
        x = image()
        for nd, text in ((ND, "-9999"), (np.nan, "nan")):
            xn = np.where(holes(x, ND), nd, x).astype(np.float32)

            def g(s):
                t = gaussian_taps(s)
                return separable(xn, nd, t, t, "reflect")

            xf = xn.astype(np.float64)
            cases = (("dog sigma1=1 sigma2=2", g(1) - g(2)),
                     ("unsharp sigma=1.5 amount=0.7", xf + 0.7 * (xf - g(1.5))),
                     ("subtract-background sigma=2", xf - g(2)))
            for stage, want in cases:
                want = np.where(holes(xn, nd), nd, want)
                got = self.oocrun(xn, stage, "--band-rows", "7", nodata=text)
                self.same(got, want, nd, f"{stage} nodata {text}", atol=1e-3)

    def test_no_valid_sample_at_all(self):
        x = np.full((20, 17), ND, np.float32)
        for stage in ("gaussian sigma=2", "median size=3", "uniform size=3 fill=true"):
            got = self.oocrun(x, stage)
            self.assertTrue(np.all(got == ND), stage)

    def test_none_gives_todays_bytes_and_oocconv(self):
        x = image()
        plain = self.oocrun(x, "gaussian sigma=2", nodata=None)
        none = self.oocrun(x, "gaussian sigma=2", nodata="none")
        self.assertTrue(np.array_equal(plain.view(np.uint32), none.view(np.uint32)))
        src, dst = self.p("in.npy"), self.p("conv.npy")
        np.save(src, x)
        self.run_tool([OOCCONV, src, dst, "--sigma", "2", "--nodata", "-9999"])
        g = gaussian_taps(2)
        self.same(np.load(dst), separable(x, ND, g, g, "reflect"), ND, "oocconv --nodata")

    def test_refusals(self):
        x = image()
        np.save(self.p("in.npy"), x)
        for stage in ("scale mul=2", "gaussian sigma=2 ! white-tophat size=3"):
            r = self.run_tool([OOCRUN, self.p("in.npy"), self.p("o.npy"), stage, "--nodata",
                               "-9999"], code=2)
            self.assertIn("does not know holes", r.stderr)
        r = self.run_tool([OOCRUN, self.p("in.npy"), self.p("o.npy"), "gaussian sigma=1",
                           "--nodata", "abc"], code=2)
        self.assertIn("--nodata takes", r.stderr)
        r = self.run_tool([OOCRUN, self.p("in.npy"), self.p("o.npy"), "gaussian sigma=1 fill=true"],
                          code=2)
        self.assertIn("--nodata", r.stderr)

    def test_pyramids_and_tags(self):
        try:
            import tifffile
        except ImportError:
            self.skipTest("no tifffile")
        for dtype, nd, text in ((np.float32, ND, "-9999"), (np.float32, np.nan, "nan"),
                                (np.uint16, 0.0, "0")):
            x = image(61, 75, nd=nd)
            if dtype == np.uint16:  # the same holes, as 0
                x = np.where(holes(x, nd), 0, rng.integers(1, 60000, x.shape)).astype(dtype)
            x[:4, :8] = nd  # a block of level 2 with no valid sample
            np.save(self.p("in.npy"), x)
            for opts in (["--levels", "3", "--tile", "16"], ["--cog", "--levels", "2"]):
                out = self.p("out.tif")
                self.run_tool([OOCRUN, self.p("in.npy"), out, "median size=3", "--nodata", text,
                               "--band-rows", "7", *opts])
                lv0 = ranked(x, nd, (3, 3), lambda n: n // 2, "reflect").astype(dtype)
                with tifffile.TiffFile(out) as tf:
                    levels = tf.series[0].levels
                    want = lv0
                    for k, lv in enumerate(levels):
                        got = lv.asarray()
                        self.assertTrue(np.array_equal(got, want, equal_nan=np.isnan(nd)),
                                        f"{dtype.__name__} {text} {opts} level {k}")
                        tag = lv.keyframe.tags.get(42113)
                        self.assertIsNotNone(tag, f"level {k}: no GDAL_NODATA")
                        self.assertEqual(float(tag.value.strip("\x00 ")), nd) if not np.isnan(nd) \
                            else self.assertEqual(tag.value.strip("\x00 ").lower(), "nan")
                        want = masked_level(want, nd)
                if shutil.which("gdalinfo"):
                    import json
                    j = json.loads(subprocess.run(["gdalinfo", "-json", out], capture_output=True,
                                                  text=True, check=True).stdout)
                    b = j["bands"][0]
                    got_nd = b.get("noDataValue")
                    self.assertTrue(got_nd == "NaN" if np.isnan(nd) else got_nd == nd, got_nd)
                    self.assertEqual(len(b.get("overviews", [])), len(levels) - 1)
        # The input's tag is the default; oocinfo shows it; --nodata none drops it.
        x = image()
        tifffile.imwrite(self.p("tag.tif"), x, extratags=[(42113, "s", 0, "-9999", True)])
        self.run_tool([OOCRUN, self.p("tag.tif"), self.p("o.npy"), "gaussian sigma=1"])
        g = gaussian_taps(1)
        self.same(np.load(self.p("o.npy")), separable(x, ND, g, g, "reflect"), ND, "tag default")
        info = subprocess.run([os.path.join(BIN, "oocinfo"), self.p("tag.tif")],
                              capture_output=True, text=True)
        self.assertIn("nodata: -9999", info.stdout, info.stderr)
        self.run_tool([OOCRUN, self.p("tag.tif"), self.p("o.tif"), "gaussian sigma=1",
                       "--nodata", "none"])
        with tifffile.TiffFile(self.p("o.tif")) as tf:
            self.assertNotIn(42113, tf.pages[0].tags)

    def test_pyramids_in_parts_equal_the_whole_run(self):
        """Levels whose blocks two parts' rows make are reduced where the parts are joined: with
        the holes left out there too."""
        try:
            import tifffile
            import zarr
        except ImportError:
            self.skipTest("no tifffile or zarr-python")
        x = image(90, 70)
        x[26:34, :40] = ND  # holes across the parts' boundaries (rows 30 and 60)
        x[57:63, 25:] = ND
        np.save(self.p("in.npy"), x)
        for out, layout in (("w.tif", ["--tile", "16", "--levels", "3"]),
                            ("w.zarr", ["--chunk", "16", "--levels", "3"])):
            whole, parted = self.p(out), self.p("p_" + out)
            args = ["median size=3", "--nodata", "-9999", *layout]
            self.run_tool([OOCRUN, self.p("in.npy"), whole, *args])
            for i in (1, 0, 2):
                self.run_tool([OOCRUN, self.p("in.npy"), parted, *args, "--part", f"{i}/3"])
            self.run_tool([OOCRUN, "--finish", parted])
            if out.endswith(".tif"):
                with tifffile.TiffFile(whole) as a, tifffile.TiffFile(parted) as b:
                    la, lb = a.series[0].levels, b.series[0].levels
                    got = [lv.asarray() for lv in lb]
                    want = [lv.asarray() for lv in la]
            else:
                ga, gb = zarr.open_group(whole, mode="r"), zarr.open_group(parted, mode="r")
                got = [gb[str(k)][:] for k in range(4)]
                want = [ga[str(k)][:] for k in range(4)]
            ref = ranked(x, ND, (3, 3), lambda n: n // 2, "reflect").astype(np.float32)
            for k in range(4):
                self.assertTrue(np.array_equal(want[k], ref), f"{out} level {k}")
                self.assertTrue(np.array_equal(got[k], ref), f"{out} in parts, level {k}")
                ref = masked_level(ref, ND)

    def test_python_keyword(self):
        """ooc.pipeline(..., nodata=) and ooc.run(..., nodata=): oocrun's --nodata."""
        import sys
        sys.path.insert(0, os.path.join(BIN, "python"))
        try:
            import ooc
        except ImportError:
            self.skipTest("no ooc module in the build")
        x = image(kind="nan")
        g = gaussian_taps(1)
        self.same(ooc.pipeline(x, "gaussian sigma=1", nodata=ND), separable(x, ND, g, g, "reflect"),
                  ND, "ooc.pipeline nodata=-9999")
        y = np.where(holes(x, ND), np.nan, x).astype(np.float32)
        self.same(ooc.pipeline(y, "gaussian sigma=1", nodata=np.nan),
                  separable(y, np.nan, g, g, "reflect"), np.nan, "ooc.pipeline nodata=nan")
        self.same(ooc.gaussian_filter(x, 1, truncate=3, nodata=ND),
                  separable(x, ND, g, g, "reflect"), ND, "ooc.gaussian_filter nodata=-9999")
        self.same(ooc.median_filter(y, 3, mode="nearest", nodata=np.nan),
                  ranked(y, np.nan, (3, 3), lambda n: n // 2, "nearest"), np.nan,
                  "ooc.median_filter nodata=nan", rtol=0, atol=0)
        np.save(self.p("in.npy"), x)
        ooc.run(self.p("in.npy"), self.p("py.npy"), "median size=3", nodata=ND)
        self.same(np.load(self.p("py.npy")), ranked(x, ND, (3, 3), lambda n: n // 2, "reflect"),
                  ND, "ooc.run nodata=-9999", rtol=0, atol=0)

    def test_equalize_leaves_nodata_out(self):
        for dtype, bins in ((np.uint8, 256), (np.uint16, 65536)):
            x = rng.integers(0, 3000 if dtype == np.uint16 else 200, (37, 29)).astype(dtype)
            nd = int(x[2, 2])  # a real sample's value, and many holes of it
            x[5:12, :] = nd
            got = self.oocrun(x, "equalize", "--band-rows", "7", nodata=str(nd))
            h = np.bincount(x[x != nd].ravel(), minlength=bins).astype(np.int64)
            i0 = int(np.nonzero(h)[0][0])
            scale = np.float32(bins - 1) / np.float32(h.sum() - h[i0])
            lut = np.zeros(bins, np.float64)
            lut[i0 + 1:] = np.clip(np.rint(np.cumsum(h[i0 + 1:]).astype(np.float32) * scale),
                                   0, bins - 1)
            lut[nd] = nd
            self.assertTrue(np.array_equal(got, lut[x].astype(dtype)), dtype.__name__)

    def test_zarr_fill_value(self):
        try:
            import zarr
        except ImportError:
            self.skipTest("no zarr-python")
        x = image()
        np.save(self.p("in.npy"), x)
        out = self.p("out.zarr")
        self.run_tool([OOCRUN, self.p("in.npy"), out, "median size=3", "--nodata", "-9999",
                       "--levels", "2", "--chunk", "16"])
        g = zarr.open_group(out, mode="r")
        want = ranked(x, ND, (3, 3), lambda n: n // 2, "reflect").astype(np.float32)
        for k in range(3):
            a = g[str(k)]
            self.assertEqual(a.fill_value, ND)
            self.assertTrue(np.array_equal(a[:], want), f"level {k}")
            want = masked_level(want, ND)



if __name__ == "__main__":
    unittest.main(argv=["test_nodata"] + _REST)
