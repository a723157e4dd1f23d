#!/usr/bin/env python3
"""Tiles across the row (--tile-cols) change no byte: every stage of `oocrun --list`, random
fused pipelines, every border, 1 and 3 channels, u8/u16/i16/f32/f64 inputs, tile widths that do
not divide the row, tiles of one column and halos wider than a tile, against the same run in
whole rows; rank windows, footprints and 2-D kernels; the planner's choice shown by --stats.
Usage: test_tiles.py --bin-dir DIR [unittest options]"""

import json
import random

import numpy as np

from pipeline_support import BORDERS, Base, main, random_stage, run, stage_text, tool

# One pipeline per stage of `oocrun --list` (FFT methods keep whole rows: their blocks are fixed
# in image columns; they are here to show that a --tile-cols they cannot take changes nothing).
STAGES = [
    "gaussian sigma=1.5", "gaussian sigma=3 method=fft", "uniform size=5", "uniform size=9",
    "correlate1d taps=1,-2,4,0.5,3 axis=1", "correlate1d taps=1,-2,4 axis=0",
    "separable row=1,2,3,2,1 col=0.5,1,0.25", "convolve kernel=laplace", "convolve kernel=box:7",
    "convolve kernel=gaussian2d:1.2 method=fft", "gradient-magnitude", "dog sigma1=1 sigma2=2.5",
    "unsharp sigma=1.5 amount=0.7", "subtract-background sigma=2.5", "scale mul=0.5 add=3",
    "abs", "clamp min=10 max=150", "threshold value=60", "convert type=u16",
    "minimum size=3", "maximum size=2x5", "opening size=4", "closing size=7x1",
    "white-tophat size=3", "black-tophat size=5", "median size=3", "median size=5",
    "median size=7x3", "percentile size=4 q=30", "rank size=3x9 index=5",
    "gaussian sigma=1 ! median size=3 ! unsharp sigma=1 amount=0.5 ! abs ! clamp min=0 max=90",
]
# Stages without a window read no border (one border each, in turn over the types), and the FFT
# methods no tile: two tile widths show that.
POINT = {"scale mul=0.5 add=3", "abs", "clamp min=10 max=150", "threshold value=60",
         "convert type=u16"}


class Tiles(Base):
    def same(self, x, pipeline, border, tiles, band_rows="0", extra=()):
        inp = self.write("in.raw", x)
        ref = self.p("whole.raw")
        common = ["--border", border, "--border-value", "3"] + list(extra)
        r = self.oocrun(inp, ref, x, pipeline, "--tile-cols", str(10**9), *common)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(ref, "rb") as f:
            want = f.read()
        for tc in tiles:
            out = self.p("tiles%d.raw" % tc)
            args = ["--tile-cols", str(tc)]
            if band_rows != "0":
                args += ["--band-rows", band_rows]
            r = self.oocrun(inp, out, x, pipeline, *args, *common)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                got = f.read()
            self.assertTrue(got == want,
                            "tiles of %d columns differ from whole rows" % tc)

    def test_every_stage_every_border(self):
        for k, pipeline in enumerate(STAGES):
            tiles = [1, 13] if "method=fft" in pipeline else [1, 7, 13, 60, 64]
            for i, t in enumerate(("u8", "f32", "i16", "f64")):
                borders = [BORDERS[(k + i) % len(BORDERS)]] if pipeline in POINT else BORDERS
                for border in borders:
                    c = 3 if k % 4 == 1 else 1
                    x = self.image(23, 61, c, t, seed=k)
                    with self.subTest(pipeline=pipeline, type=t, border=border, channels=c):
                        self.same(x, pipeline, border, tiles, band_rows="5")

    def test_random_pipelines(self):
        rng = random.Random(45)
        for case in range(60):
            t = rng.choice(["u8", "u16", "f32", "f64"])
            cur, stages = t, []
            for _ in range(rng.randint(2, 5)):
                s, cur = random_stage(rng, cur)
                stages.append(stage_text(s))
            pipeline = " ! ".join(stages)
            h, w = rng.randint(3, 40), rng.randint(2, 90)
            x = self.image(h, w, rng.choice([1, 1, 3]), t, seed=case)
            border = rng.choice(BORDERS)
            tiles = sorted({rng.randint(1, w), rng.randint(1, 9), 1})
            with self.subTest(case=case, pipeline=pipeline, border=border, size=(h, w)):
                self.same(x, pipeline, border, tiles, band_rows=str(rng.choice([1, 4, 64])))

    def test_footprints_and_threads(self):
        fp = self.p("fp.npy")
        np.save(fp, np.array([[0, 1, 0, 0, 1], [1, 1, 1, 0, 0], [0, 1, 0, 1, 1]], np.uint8))
        k = self.p("k.npy")
        np.save(k, np.random.default_rng(3).uniform(-1, 1, (5, 9)))
        for pipeline in ("median footprint=" + fp, "maximum footprint=" + fp,
                         "convolve kernel=" + k + " method=direct"):
            for border in BORDERS:
                x = self.image(31, 77, 1, "f32", seed=7)
                for threads in ("1", "3"):
                    with self.subTest(pipeline=pipeline, border=border, threads=threads):
                        self.same(x, pipeline, border, [1, 5, 11, 40],
                                  extra=["--threads", threads])

    def test_planner_cuts_wide_rows_under_a_small_budget(self):
        # 65536 columns of f32 under 24M: whole rows of this chain fit only in bands of a few
        # rows (each recomputing its 19-row halo twice); the planner cuts tiles instead, with
        # taller bands on both threads, and the bytes are those of whole rows.
        x = self.image(64, 65536, 1, "f32", seed=9)
        inp = self.write("wide.raw", x)
        pipeline = "gaussian sigma=4 ! unsharp sigma=2 amount=0.5 ! median size=3 ! abs"
        out, ref = self.p("wide_out.raw"), self.p("wide_ref.raw")
        r = self.oocrun(inp, ref, x, pipeline, "--tile-cols", str(10**9), "--mem-limit", "24M",
                        "--threads", "2", "--stats", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = json.loads(r.stdout)["plan"]
        r = self.oocrun(inp, ref, x, pipeline, "--tile-cols", str(10**9), "--threads", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.oocrun(inp, out, x, pipeline, "--mem-limit", "24M", "--threads", "2",
                        "--stats", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        plan = json.loads(r.stdout)["plan"]
        self.assertGreater(plan["tile_cols"], 0, plan)
        self.assertEqual(plan["threads"], 2, plan)
        self.assertLessEqual(plan["ring_bytes"], 24 << 20, plan)
        self.assertGreater(plan["estimate_seconds"], 0, plan)
        self.assertGreater(plan["band_rows"], 2 * rows["band_rows"], (plan, rows))
        self.assertLess(plan["estimate_seconds"], rows["estimate_seconds"], (plan, rows))
        with open(out, "rb") as a, open(ref, "rb") as b:
            self.assertTrue(a.read() == b.read())

if __name__ == "__main__":
    main()
