#!/usr/bin/env python3
"""Nodata (issue 48) on the GPU: the separable stages' normalized convolution, the rank filters
and convert under nodata on --device cuda give the CPU's bytes (every border, NaN and a value,
min-weight, fill, conversions with saturation and halves, a pyramid's TIFF). Skipped where no CUDA
device is usable.

Usage: test_nodata_cuda.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import os
import subprocess
import unittest

import numpy as np

import cli_args  # beside this file

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
os.environ.setdefault("OOC_BIN_DIR", BIN)  # test_nodata's helpers read it when imported
from test_nodata import MODES, OOCRUN, NodataCase, image  # noqa: E402


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
                outs = []
                for dev in ("cpu", "cuda"):
                    out = self.p(f"{dev}.npy")
                    self.run_tool([OOCRUN, self.p("in.npy"), out, stage, "--nodata", "-9999",
                                   "--border", mode, "--band-rows", "7", "--device", dev, *extra])
                    outs.append(np.load(out))
                self.assertTrue(np.array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8)),
                                f"{stage} {mode}: cuda differs from cpu")

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
            outs = []
            for dev in ("cpu", "cuda"):
                out = self.p(f"{dev}.npy")
                self.run_tool([OOCRUN, self.p(src), out, stage, "--nodata", nd, "--band-rows", "7",
                               "--device", dev, *extra])
                outs.append(np.load(out))
            self.assertEqual(outs[0].dtype, outs[1].dtype)
            self.assertTrue(np.array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8)),
                            f"{src} {stage} nodata {nd}: cuda differs from cpu")
        tifs = []
        for dev in ("cpu", "cuda"):
            out = self.p(f"{dev}.tif")
            self.run_tool([OOCRUN, self.p("w.npy"), out, "convert type=f32", "--nodata", "0",
                           "--levels", "2", "--tile", "16", "--device", dev])
            with open(out, "rb") as f:
                tifs.append(f.read())
        self.assertEqual(tifs[0], tifs[1], "a pyramid of the converted image: cuda differs")


if __name__ == "__main__":
    unittest.main(argv=["test_nodata_cuda"] + _REST)
