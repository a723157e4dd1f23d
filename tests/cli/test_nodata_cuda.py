#!/usr/bin/env python3
"""Nodata (issue 48) on the GPU: the separable stages' and convolve's normalized convolution, the
compound stages, the rank filters (any window), a volume's linear and rank filters in 3-D and
convert under nodata on --device cuda give the CPU's bytes (every border, NaN and a value,
min-weight, fill, conversions with saturation and halves, a pyramid's TIFF), convolve's FFT
within its bound. Every band runs on the GPU (--cpu-start off). Skipped where no CUDA device is
usable.

Usage: test_nodata_cuda.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import os
import subprocess
import unittest

import numpy as np
import scipy.ndimage as ndi

import cli_args  # beside this file

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
os.environ.setdefault("OOC_BIN_DIR", BIN)  # test_nodata's helpers read it when imported
from test_nodata import MODES, ND, OOCRUN, NodataCase, holes, image, rng  # noqa: E402


class NodataCuda(NodataCase):
    def cuda_or_skip(self, stage):
        """Runs `stage` on in.npy under nodata -9999 on --device cuda: a skip where no CUDA
        device is usable (exit 5), else it must succeed."""
        probe = subprocess.run([OOCRUN, self.p("in.npy"), self.p("o.npy"), stage,
                                "--nodata", "-9999", "--device", "cuda", "-q"],
                               capture_output=True, text=True)
        if probe.returncode == 5:
            self.skipTest("no usable CUDA device")
        self.assertEqual(probe.returncode, 0, probe.stderr)

    def same_on_both(self, src, stage, nodata, *opts, what=None):
        """Runs `stage` on file src under nodata on the CPU and on the GPU (every band there:
        --cpu-start off): the same type and bytes."""
        outs = []
        for dev in ("cpu", "cuda"):
            out = self.p(f"{dev}.npy")
            self.run_tool([OOCRUN, self.p(src), out, stage, "--nodata", nodata, *opts,
                           "--device", dev, "--cpu-start", "off"])
            outs.append(np.load(out))
        what = what or f"{stage} {' '.join(opts)} nodata {nodata}"
        self.assertEqual(outs[0].dtype, outs[1].dtype, what)
        self.assertTrue(np.array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8)),
                        f"{what}: cuda differs from cpu")

    def test_cuda_gives_the_cpu_bytes(self):
        """The separable stages' normalized convolution and the rank filters on the GPU: the
        CPU's bytes (f32 sums, every border, NaN and a value, min-weight, fill, a negative tap,
        into u8; medians, a percentile, an even maximum, a footprint, an opening, a chain).
        Skipped where no CUDA device is usable."""
        x = image(kind="nan")
        np.save(self.p("in.npy"), x)
        self.cuda_or_skip("gaussian sigma=1")
        fp = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], np.uint8)
        np.save(self.p("fp.npy"), fp)
        cases = [("gaussian sigma=2", []), ("uniform size=5 min-weight=0.5", []),
                 ("gaussian sigma=1 fill=true", []), ("correlate1d taps=-1,2,4 axis=1", []),
                 ("gaussian sigma=1.5", ["--out-type", "u8"]), ("median size=5", []),
                 ("percentile size=5x3 q=30", ["--border-value", "50"]), ("maximum size=4", []),
                 (f"median footprint={self.p('fp.npy')}", []), ("opening size=3", []),
                 ("gaussian sigma=1 ! median size=3", [])]
        for stage, extra in cases:
            for mode in MODES:
                self.same_on_both("in.npy", stage, "-9999", "--border", mode, "--band-rows", "7",
                                  *extra)

    def test_channels_widths_and_one_row_bands_on_cuda(self):
        """Three channels, odd widths and bands of one row on the GPU under nodata: the CPU's
        bytes for the separable stages, convolve's direct sum, a compound stage and rank filters
        (counted and selected a bit at a time). Skipped where no CUDA device is usable."""
        np.save(self.p("in.npy"), image())
        self.cuda_or_skip("gaussian sigma=1")
        k = rng.uniform(0.1, 1, (3, 5))
        k[0, 2] = -0.4
        np.save(self.p("k.npy"), k)
        stages = ["gaussian sigma=1", f"convolve kernel={self.p('k.npy')} method=direct",
                  "unsharp sigma=1 amount=0.5", "median size=3", "percentile size=9 q=80"]
        for W in (1, 9, 33):
            x = rng.uniform(-50, 50, (21, W, 3)).astype(np.float32)
            x[rng.random(x.shape) < 0.1] = ND
            x[5, :, 1] = np.nan
            np.save(self.p("in.npy"), x)
            for stage in stages:
                for rows in ("1", "8"):
                    self.same_on_both("in.npy", stage, "-9999", "--border", "mirror",
                                      "--band-rows", rows, what=f"W {W} {stage} rows {rows}")

    def test_rank_windows_beyond_64_samples_on_cuda(self):
        """Masked rank filters of windows beyond 64 samples (selected a bit at a time on the
        GPU): the CPU's bytes for negative and positive values in f32, f64, i16 and u16, every
        border, a footprint, an even box, the least and greatest. Skipped where no CUDA device is
        usable."""
        x = image(kind="nan")
        h = holes(x, ND)
        signed = np.where(h, x, (x - 50) * 1.37).astype(np.float32)  # negatives and positives
        inputs = {"f32": (signed, "-9999"), "f64": (signed.astype(np.float64), "nan"),
                  "i16": (np.where(h, -9999, np.round(signed * 300)).astype(np.int16), "-9999"),
                  "u16": (np.where(h, 0, np.round(x * 600)).astype(np.uint16), "0")}
        np.save(self.p("in.npy"), signed)
        self.cuda_or_skip("median size=9")
        yy, xx = np.mgrid[-5:6, -5:6]
        np.save(self.p("disc.npy"), (yy ** 2 + xx ** 2 <= 25).astype(np.uint8))  # 81 samples
        stages = ["median size=9", "percentile size=11x7 q=30", "rank size=9 index=7",
                  f"median footprint={self.p('disc.npy')}", "minimum size=9",
                  "maximum size=10x9"]
        for name, (a, nd) in inputs.items():
            np.save(self.p("in.npy"), a)
            for stage in stages:
                for mode in ("reflect", "constant", "wrap"):
                    self.same_on_both("in.npy", stage, nd, "--border", mode, "--border-value",
                                      "3", "--band-rows", "7", what=f"{name} {stage} {mode}")

    def test_volume_normalized_convolution_on_cuda(self):
        """A volume's normalized convolution in 3-D on the GPU: the CPU's bytes (z, then column and
        row taps; negative taps, z taps folded over the volume's planes, a 3-D kernel with zero
        taps, min-weight, fill, NaN and a value, into u8; every border). Skipped where no CUDA
        device is usable."""
        from test_nodata_volume import volume
        np.save(self.p("in.npy"), volume())
        self.cuda_or_skip("gaussian sigma=1")
        stages = [("gaussian sigma=1", []), ("gaussian sigma=1 sigma-z=0.7 fill=true", []),
                  ("uniform size=3x5x3 min-weight=0.5", []),
                  ("correlate1d taps=1,-2,4,0.5,3 axis=0", []),
                  ("separable row=1,2,0.5 col=0.5,1,0.25 plane=1,3,-2", []),
                  ("gaussian sigma=1.5", ["--out-type", "u8"]),
                  ("gaussian sigma=3", []),  # 25 z taps folded over the 7 planes
                  (f"convolve kernel={self.p('k3.npy')}", []),  # a 3-D kernel's direct sum
                  (f"convolve kernel={self.p('k3.npy')} min-weight=0.3 fill=true", [])]
        k3 = rng.uniform(0.1, 1, (3, 5, 3))
        k3[0, 2, 1], k3[1, 0, 0], k3[2, 4, 2] = -0.6, 0.0, 0.0  # a negative tap, zero taps
        np.save(self.p("k3.npy"), k3)
        for nan in (False, True):
            np.save(self.p("in.npy"), volume(nan=nan))
            for stage, extra in stages:
                for mode in MODES:
                    self.same_on_both("in.npy", stage, "-9999", "--border", mode,
                                      "--border-value", "7", "--band-rows", "6", *extra,
                                      what=f"nan={nan} {stage} {mode}")

    def test_volume_rank_filters_on_cuda(self):
        """A volume's masked rank filters in 3-D on the GPU: the CPU's bytes (a box, an even box,
        a 3-D footprint, a percentile, the least and greatest, an opening; every border; f32
        with NaN and u16 with 0). Skipped where no CUDA device is usable."""
        from test_nodata_volume import volume
        np.save(self.p("in.npy"), volume(nan=True))
        self.cuda_or_skip("median size=3")
        zz, yy, xx = np.mgrid[-1:2, -2:3, -2:3]
        np.save(self.p("fp3.npy"), (zz ** 2 + yy ** 2 + xx ** 2 <= 4).astype(np.uint8))
        stages = ["median size=3", "percentile size=3x5x3 q=70", "maximum size=4",
                  "minimum size=2x3x3", f"median footprint={self.p('fp3.npy')}",
                  "opening size=3", "rank size=5 index=40"]
        inputs = ((volume(nan=True), "-9999"),
                  (volume(nd=0.0, dtype=np.uint16, lo=1, hi=60000), "0"))
        for a, nd in inputs:
            np.save(self.p("in.npy"), a)
            for stage in stages:
                for mode in MODES:
                    self.same_on_both("in.npy", stage, nd, "--border", mode, "--border-value",
                                      "5", "--band-rows", "6", what=f"{a.dtype} {stage} {mode}")

    def test_convolve_and_compound_stages_on_cuda(self):
        """convolve's direct sum and the compound stages on the GPU (every band there: --cpu-start
        off): the CPU's bytes (a negative tap, min-weight, fill, into u8); convolve by cuFFT
        within the FFT's bound of the float64 reference (x m and m correlated, divided), the
        same holes. Skipped where no CUDA device is usable."""
        x = image(kind="nan")
        np.save(self.p("in.npy"), x)
        self.cuda_or_skip("convolve kernel=laplace")
        k = rng.uniform(0.1, 1, (3, 5))
        k[1, 0] = -0.3  # the |k| weights differ from the weights: a third sum
        np.save(self.p("k.npy"), k)
        kernel = f"kernel={self.p('k.npy')}"
        cases = [(f"convolve {kernel} method=direct", []),
                 (f"convolve {kernel} method=direct min-weight=0.4 fill=true", []),
                 (f"convolve {kernel} method=direct", ["--out-type", "u8"]),
                 ("dog sigma1=1 sigma2=2", []), ("unsharp sigma=1.5 amount=0.7", []),
                 ("subtract-background sigma=2", ["--out-type", "i16"])]
        for stage, extra in cases:
            for mode in MODES:
                self.same_on_both("in.npy", stage, "-9999", "--border", mode, "--border-value",
                                  "2", "--band-rows", "7", *extra)
        # u16 with holes of 0, into f32 and back into u16.
        w = np.where(holes(x, ND), 0, np.round(x * 600)).astype(np.uint16)
        np.save(self.p("w.npy"), w)
        for stage, extra in ((f"convolve {kernel} method=direct", ["--out-type", "f32"]),
                             (f"convolve {kernel} method=direct fill=true", []),
                             ("unsharp sigma=1", [])):
            self.same_on_both("w.npy", stage, "0", "--band-rows", "7", *extra)
        k = rng.uniform(0.1, 1, (5, 7))
        np.save(self.p("k.npy"), k)
        corr = k[::-1, ::-1]
        xf = x.astype(np.float64)
        h = holes(xf, ND)
        m = (~h).astype(np.float64)
        for mode in MODES:
            for mw, fill in ((0.0, "false"), (0.5, "true")):
                out = self.p("fft.npy")
                self.run_tool([OOCRUN, self.p("in.npy"), out,
                               f"convolve {kernel} method=fft min-weight={mw} fill={fill}",
                               "--nodata", "-9999", "--border", mode, "--border-value", "2",
                               "--band-rows", "7", "--device", "cuda", "--cpu-start", "off"])
                got = np.load(out)
                num = ndi.correlate(np.where(h, 0, xf), corr, mode=mode, cval=2.0)
                den = ndi.correlate(m, corr, mode=mode, cval=1.0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    want = num / den
                bad_w = (den <= 0) | (den < mw * k.sum()) | (h & (fill == "false"))
                want[bad_w] = ND
                bound = 1e-4 * k.sum() * 100 / np.where(den > 0, den, 1)
                bad_g = got == ND
                self.assertTrue(np.array_equal(bad_g, bad_w), f"fft {mode} {mw}: nodata differs")
                err = np.abs(got[~bad_w] - want[~bad_w])
                self.assertTrue(np.all(err <= bound[~bad_w]), f"fft {mode} {mw}: {err.max()}")

    def test_convert_on_cuda_gives_the_cpu_bytes(self):
        """convert and --out-type under nodata on the GPU: holes to the output type's nodata,
        valid samples rounded half to even, saturated and moved off it, the CPU's bytes; a
        pyramid's levels of the converted image alike. Skipped where no CUDA device is usable."""
        x = image(kind="nan")
        x[2, :] = np.linspace(-300.0, 70000.0, x.shape[1])  # saturation both ways
        x[3, :12] = [0.0, 0.4, 0.5, 1.5, 2.5, -0.5, 254.5, 255.5, -32768.6, 65535.5, 1e30, -1e30]
        np.save(self.p("in.npy"), x)
        w = (np.abs(image(kind="blobs")) * 600).astype(np.uint16)
        w[w == 0] = 5
        w[:, 3] = 0  # holes of nodata 0
        w[4, :6] = [1, 255, 256, 65535, 300, 1]
        np.save(self.p("w.npy"), w)
        self.cuda_or_skip("convert type=u8")
        cases = [("in.npy", "convert type=u8", "-9999", []),
                 ("in.npy", "convert type=i16", "-9999", []),
                 ("in.npy", "convert type=u16", "nan", []),
                 ("in.npy", "convert type=f64", "-9999", []),
                 ("in.npy", "convert type=i32", "nan", []), ("w.npy", "convert type=u8", "0", []),
                 ("w.npy", "convert type=f32", "0", []), ("w.npy", "convert type=i16", "65535", []),
                 ("in.npy", "maximum size=3", "-9999", ["--out-type", "i16"])]
        for src, stage, nd, extra in cases:
            self.same_on_both(src, stage, nd, "--band-rows", "7", *extra, what=f"{src} {stage}")
        tifs = []
        for dev in ("cpu", "cuda"):
            out = self.p(f"{dev}.tif")
            self.run_tool([OOCRUN, self.p("w.npy"), out, "convert type=f32", "--nodata", "0",
                           "--levels", "2", "--tile", "16", "--device", dev, "--cpu-start", "off"])
            with open(out, "rb") as f:
                tifs.append(f.read())
        self.assertEqual(tifs[0], tifs[1], "a pyramid of the converted image: cuda differs")


if __name__ == "__main__":
    unittest.main(argv=["test_nodata_cuda"] + _REST)
