#!/usr/bin/env python3
"""Nodata (issue 48) through a volume's 3-D filters, against independent float64 references on
random non-zero volumes with holes (blobs across planes, a whole plane, a hole at band edges, a
region with no valid sample within reach, NaN beside the value): normalized convolution as
scipy's correlate1d along z, y and x (or correlate with the 3-D kernel) of x*m and of m with the
same border, divided; rank filters as NumPy over each 3-D window's valid samples; over the five
borders, several types, min-weight= and fill=, and bands, threads and memory plans that must not
change a byte. Also the refusals (compound stages in 3-D, a rank window over 63 planes on
--device cuda, FFT of a 3-D kernel).

Usage: test_nodata_volume.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import os
import subprocess
import unittest

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import ndimage as ndi

import cli_args  # beside this file

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
os.environ.setdefault("OOC_BIN_DIR", BIN)  # test_nodata's helpers read it when imported
from test_nodata import (MODES, ND, OOCRUN, PAD, NodataCase, gaussian_taps,  # noqa: E402
                         holes)

rng = np.random.default_rng(4803)


def volume(d=7, h=23, w=19, nd=ND, nan=False, dtype=np.float32, lo=1, hi=100):
    """Random values in [lo, hi) with holes across planes, rows and columns."""
    x = rng.uniform(lo, hi, (d, h, w))
    zz, yy, xx = np.mgrid[:d, :h, :w]
    x[(zz - 2) ** 2 + (yy - 8) ** 2 + (xx - 6) ** 2 < 7] = nd  # a ball
    x[4] = np.where(rng.random((h, w)) < 0.15, nd, x[4])       # scattered holes in a plane
    x[5, 6:8, :] = nd                                          # at a band edge (bands of 6)
    x[:, 15:21, 10:17] = nd                                    # no valid sample within reach
    x[1] = nd                                                  # a whole plane
    if nan:
        x[rng.random((d, h, w)) < 0.04] = np.nan
    if np.issubdtype(dtype, np.integer):
        x = np.round(x)
    return x.astype(dtype)


def cval_parts(cval, nd):
    ok = not (np.isnan(cval) or cval == nd)
    return (cval, 1.0) if ok else (0.0, 0.0)


def normalized(x, nd, corr3, mode, cval=0.0, min_weight=0.0, fill=False):
    """sum(k x m) / sum(k m) with corr3(a, c, absolute) the filter (correlation) of a with
    constant c; nodata where no weight, the |k| weight under min_weight, or own holes."""
    xf = x.astype(np.float64)
    h = holes(xf, nd)
    m = (~h).astype(np.float64)
    cx, cm = cval_parts(cval, nd)
    num = corr3(np.where(h, 0.0, xf), cx, False)
    den = corr3(m, cm, False)
    wab = corr3(m, cm, True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return out, wab, den, h


def separable3(x, nd, kz, ky, kx, mode, cval=0.0, min_weight=0.0, fill=False):
    """kz, ky, kx in correlation order, filtered along z, then x, then y (the separable stages'
    order, which matters under a constant border where taps do not sum to 1)."""
    def corr3(a, c, absolute):
        for axis, k in ((0, kz), (2, kx), (1, ky)):
            k = np.abs(k) if absolute else np.asarray(k, float)
            a = ndi.correlate1d(a, k, axis=axis, mode=mode, cval=c)
        return a
    out, wab, den, h = normalized(x, nd, corr3, mode, cval)
    total = np.abs(kz).sum() * np.abs(ky).sum() * np.abs(kx).sum()
    bad = (wab <= 0) | (wab < min_weight * total) | (den == 0)
    if not fill:
        bad |= h
    out[bad] = nd
    return out


def direct3(x, nd, k, mode, cval=0.0):
    """convolve with a 3-D kernel k (convolution order, as scipy.ndimage.convolve)."""
    def corr3(a, c, absolute):
        w = np.abs(k) if absolute else k
        return ndi.convolve(a, w, mode=mode, cval=c)
    out, wab, den, h = normalized(x, nd, corr3, mode, cval)
    out[(wab <= 0) | (den == 0) | h] = nd
    return out


def ranked3(x, nd, size, rank_of, mode, cval=0.0, footprint=None, dilation=False):
    """The sample of rank r (n - 1) // (count - 1) among each 3-D window's n valid samples;
    nodata where none or on holes. dilation: grey_dilation's window (even sides one earlier,
    the footprint mirrored)."""
    size = footprint.shape if footprint is not None else size
    lead = [s // 2 - (1 if dilation and s % 2 == 0 else 0) for s in size]
    pad = [(l, s - 1 - l) for l, s in zip(lead, size)]
    xf = np.where(holes(x, nd), np.nan, x.astype(np.float64))
    if mode == "constant":
        c = np.nan if (np.isnan(cval) or cval == nd) else cval
        p = np.pad(xf, pad, mode="constant", constant_values=c)
    else:
        p = np.pad(xf, pad, mode=PAD[mode])
    win = sliding_window_view(p, size).reshape(x.shape + (int(np.prod(size)),))
    fp = np.ones(win.shape[-1], bool) if footprint is None else footprint.reshape(-1) != 0
    if dilation and footprint is not None:
        fp = fp[::-1]
    win = win[..., fp]
    count = win.shape[-1]
    n = np.sum(~np.isnan(win), axis=-1)
    s = np.sort(win, axis=-1)
    k = (rank_of(count) * np.maximum(n - 1, 0)) // max(count - 1, 1)
    out = np.take_along_axis(s, k[..., None], axis=-1)[..., 0]
    out[(n == 0) | holes(x, nd)] = nd
    return out


def rounded(v, nd, dtype):
    """A float64 result in an integer output type: rounded half to even, holes nd."""
    h = holes(v, nd)
    info = np.iinfo(dtype)
    return np.where(h, nd, np.clip(np.round(np.where(h, 0, v)), info.min, info.max))


PLANS = [("--band-rows", "6", "--threads", "2"), ("--band-rows", "1"),
         ("--band-rows", "40", "--threads", "1")]


class NodataVolume(NodataCase):
    def plans_agree(self, x, stage, *opts, nodata="-9999"):
        """The run of every plan: equal bytes, returned once."""
        outs = [self.oocrun(x, stage, *opts, *plan, nodata=nodata) for plan in PLANS]
        for o, plan in zip(outs[1:], PLANS[1:]):
            self.assertEqual(outs[0].tobytes(), o.tobytes(), f"{stage} {plan}: bytes differ")
        return outs[0]

    def test_separable_stages_every_border(self):
        g1, g07 = gaussian_taps(1.0), gaussian_taps(0.7)
        cases = [
            ("gaussian sigma=1", (g1, g1, g1)),
            ("gaussian sigma=1 sigma-z=0.7", (g07, g1, g1)),
            ("uniform size=3x5x3", (np.ones(3) / 3, np.ones(5) / 5, np.ones(3) / 3)),
            ("correlate1d taps=1,-2,4,0.5,3 axis=0", ([1, -2, 4, 0.5, 3], [1], [1])),
            ("correlate1d taps=1,2,-1 axis=2", ([1], [1], [1, 2, -1])),
            # convolution order: the taps reversed into correlation order
            ("separable row=1,2,0.5 col=0.5,1,0.25 plane=1,3,-2",
             ([-2, 3, 1], [0.25, 1, 0.5], [0.5, 2, 1])),
        ]
        for stage, (kz, ky, kx) in cases:
            for mode in MODES:
                for nan in (False, True):
                    x = volume(nan=nan)
                    cval = ND if mode == "constant" and nan else 7.0
                    with self.subTest(stage=stage, mode=mode, nan=nan):
                        got = self.plans_agree(x, stage, "--border", mode, "--border-value",
                                               str(cval))
                        want = separable3(x, ND, np.asarray(kz, float), np.asarray(ky, float),
                                          np.asarray(kx, float), mode, cval)
                        self.same(got, want, ND, f"{stage} {mode} nan={nan}", rtol=1e-4,
                                  atol=1e-3)

    def test_min_weight_fill_types_and_nan_nodata(self):
        g = gaussian_taps(1.0)
        x = volume()
        for mw in (0.3, 0.7):
            got = self.oocrun(x, f"gaussian sigma=1 min-weight={mw}", "--band-rows", "5")
            want = separable3(x, ND, g, g, g, "reflect", min_weight=mw)
            self.same(got, want, ND, f"min-weight {mw}", rtol=1e-4, atol=1e-3)
        got = self.oocrun(x, "uniform size=3 fill=true", "--band-rows", "5")
        box = np.ones(3) / 3
        self.same(got, separable3(x, ND, box, box, box, "reflect", fill=True), ND, "fill",
                  rtol=1e-4, atol=1e-3)
        # NaN alone as nodata, and integer volumes (the output rounded into the input's type).
        y = volume(nd=np.nan)
        got = self.oocrun(y, "gaussian sigma=1", "--border", "mirror", nodata="nan")
        self.same(got, separable3(y, np.nan, g, g, g, "mirror"), np.nan, "nan", rtol=1e-4,
                  atol=1e-3)
        for dtype, nd in ((np.uint16, 0.0), (np.int16, -9999.0), (np.uint8, 255.0)):
            z = volume(nd=nd, dtype=dtype, lo=1, hi=200)
            with self.subTest(dtype=dtype.__name__):
                got = self.plans_agree(z, "gaussian sigma=1", "--out-type",
                                       np.dtype(dtype).name.replace("uint", "u").replace(
                                           "int", "i"), nodata=str(int(nd)))
                want = rounded(separable3(z, nd, g, g, g, "reflect"), nd, dtype)
                self.assertEqual(got.dtype, dtype)
                diff = np.abs(got.astype(np.float64) - want)
                self.assertTrue(np.all((got == nd) == (want == nd)), "holes differ")
                self.assertLessEqual(diff.max(), 1.0)

    def test_convolve_3d_kernel_every_border(self):
        k = rng.uniform(-0.5, 1.0, (3, 3, 5))
        k[1, 1, 2] = 2.0
        np.save(self.p("k.npy"), k)
        x = volume()
        for mode in MODES:
            with self.subTest(mode=mode):
                got = self.plans_agree(x, f"convolve kernel={self.p('k.npy')}", "--border", mode,
                                       "--border-value", "2")
                self.same(got, direct3(x, ND, k, mode, 2.0), ND, f"convolve {mode}",
                          rtol=1e-4, atol=1e-3)
        r = self.run_tool([OOCRUN, self.p("in.npy"), self.p("o.npy"),
                           f"convolve kernel={self.p('k.npy')} method=fft", "--nodata", "-9999"],
                          code=2)
        self.assertIn("method=direct", r.stderr)

    def test_rank_stages_every_border(self):
        fp = (rng.random((3, 3, 3)) < 0.6).astype(np.uint8)
        fp[1, 1, 1] = 1
        np.save(self.p("fp.npy"), fp)
        cases = [
            ("median size=3", (3, 3, 3), lambda n: n // 2, None),
            ("median size=2x4 size-z=3", (3, 2, 4), lambda n: n // 2, None),
            ("percentile size=3 q=20", (3, 3, 3), lambda n: int(n * 20 / 100), None),
            ("rank size=3x3 size-z=2 index=-2", (2, 3, 3), lambda n: n - 2, None),
            ("minimum size=3", (3, 3, 3), lambda n: 0, None),
            ("maximum size=2x3 size-z=4", (4, 2, 3), lambda n: n - 1, None),
            (f"median footprint={self.p('fp.npy')}", None, lambda n: n // 2, fp),
            (f"maximum footprint={self.p('fp.npy')}", None, lambda n: n - 1, fp),
        ]
        for stage, size, rank_of, f in cases:
            for mode in MODES:
                x = volume(d=6, h=17, w=15, nan=mode == "wrap")
                with self.subTest(stage=stage, mode=mode):
                    got = self.plans_agree(x, stage, "--border", mode, "--border-value", "5")
                    want = ranked3(x, ND, size, rank_of, mode, 5.0, footprint=f)
                    self.assertTrue(np.array_equal(got, want.astype(np.float32), equal_nan=True),
                                    f"{stage} {mode}: {np.argwhere(got != want)[:5].tolist()}")

    def test_opening_and_closing(self):
        for stage, size in (("opening size=3", (3, 3, 3)), ("closing size=2x3 size-z=2",
                                                             (2, 2, 3))):
            for mode in ("reflect", "constant"):
                x = volume(d=6, h=17, w=15)
                with self.subTest(stage=stage, mode=mode):
                    got = self.plans_agree(x, stage, "--border", mode, "--border-value", "5")
                    first = stage.startswith("opening")
                    a = ranked3(x, ND, size, (lambda n: 0) if first else (lambda n: n - 1),
                                mode, 5.0, dilation=not first)
                    want = ranked3(a, ND, size, (lambda n: n - 1) if first else (lambda n: 0),
                                   mode, 5.0, dilation=first)
                    self.assertTrue(np.array_equal(got, want.astype(np.float32)), stage)

    def test_windows_deeper_than_the_volume(self):
        """z taps folded over 6 planes (their magnitudes apart), rank windows past the planes."""
        x = volume(d=6, h=22, w=18)
        g3, g1 = gaussian_taps(3.0), gaussian_taps(1.0)
        for mode in MODES:
            with self.subTest(mode=mode):
                got = self.plans_agree(x, "gaussian sigma=1 sigma-z=3", "--border", mode)
                self.same(got, separable3(x, ND, g3, g1, g1, mode), ND, f"sigma-z=3 {mode}",
                          rtol=1e-4, atol=1e-3)
                for stage, size, rank_of in (("median size=3 size-z=15", (15, 3, 3),
                                              lambda n: n // 2),
                                             ("minimum size=3 size-z=13", (13, 3, 3),
                                              lambda n: 0)):
                    got = self.oocrun(x, stage, "--border", mode, "--band-rows", "5")
                    want = ranked3(x, ND, size, rank_of, mode)
                    self.assertTrue(np.array_equal(got, want.astype(np.float32)), stage)

    def test_integer_ranks(self):
        x = volume(d=6, h=16, w=13, nd=0.0, dtype=np.uint16, lo=1, hi=60000)
        got = self.plans_agree(x, "median size=3", nodata="0")
        want = ranked3(x, 0.0, (3, 3, 3), lambda n: n // 2, "reflect")
        self.assertEqual(got.dtype, np.uint16)
        self.assertTrue(np.array_equal(got, want.astype(np.uint16)))

    def test_refusals(self):
        x = volume()
        np.save(self.p("in.npy"), x)
        r = self.run_tool([OOCRUN, self.p("in.npy"), self.p("o.npy"), "unsharp sigma=1",
                           "--nodata", "-9999"], code=2)
        self.assertIn("--planes", r.stderr)
        for stage in ("minimum size=65x1x1",):  # masked rank windows over 63 planes
            r = subprocess.run([OOCRUN, self.p("in.npy"), self.p("o.npy"), stage, "--nodata",
                                "-9999", "--device", "cuda", "-q"], capture_output=True,
                               text=True)
            self.assertIn(r.returncode, (2, 5), r.stderr)
            self.assertIn("--device cpu", r.stderr)
            self.assertFalse(os.path.exists(self.p("o.npy")))
        # --planes keeps the 2-D filters plane by plane.
        g = gaussian_taps(1.0)
        got = self.oocrun(x, "gaussian sigma=1", "--planes")
        want = separable3(x, ND, np.ones(1), g, g, "reflect")
        self.same(got, want, ND, "--planes", rtol=1e-4, atol=1e-3)


if __name__ == "__main__":
    unittest.main(argv=[__file__] + _REST)
