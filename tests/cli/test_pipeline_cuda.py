#!/usr/bin/env python3
"""Pipelines on --device cuda bit-identical to the CPU; skipped without a CUDA device (E in
pipeline_support.py).
Usage: test_pipeline_cuda.py --bin-dir DIR [unittest options]"""

import random
import sys

import numpy as np

from pipeline_support import BORDERS, Base, NP, main, random_stage, run, stage_text, tool


def cuda_device():
    """Whether a CUDA run works here (a CUDA build and a device)."""
    r = run([tool("oocrun"), "synth:noise", "null:", "abs", "--width", 8, "--height", 8,
             "--device", "cuda", "-q"])
    return r.returncode == 0


class Cuda(Base):
    def test_cuda_equals_cpu(self):
        if not cuda_device():
            self.skipTest("no CUDA device, or no CUDA in this build (oocrun --device cuda fails)")
        rng = random.Random(11)
        for case in range(40):
            t = rng.choice(["u8", "u16", "f32"])
            x = self.image(rng.randint(30, 300), rng.randint(20, 257), rng.choice([1, 3]), t,
                           seed=case)
            inp = self.write("in.raw", x)
            stages, types = [], [t]
            for _ in range(rng.randint(1, 5)):
                s, o = random_stage(rng, types[-1])
                stages.append(s)
                types.append(o)
            pipeline = " ! ".join(stage_text(s) for s in stages)
            mode = rng.choice(BORDERS)
            with self.subTest(case=case, pipeline=pipeline, border=mode):
                outs = []
                for dev in ("cpu", "cuda"):
                    out = self.p("%s.raw" % dev)
                    # --cpu-start off: every band on the GPU, none on the CPU while CUDA starts.
                    r = self.oocrun(inp, out, x, pipeline, "--device", dev, "--border", mode,
                                    "--band-rows", rng.choice([5, 16, 0]) or 64,
                                    *(["--cpu-start", "off", "--stats", "json"] if dev == "cuda"
                                      else []))
                    if dev == "cuda":
                        self.assertIn('"cpu_bands": 0', r.stdout)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    outs.append(out)
                with open(outs[0], "rb") as a, open(outs[1], "rb") as b:
                    self.assertTrue(a.read() == b.read(), "cuda differs from cpu")
        # 32-bit integers: the f64 working type on both (issue 43). Double sums are not the same
        # bits on both (the GPU's order and FMAs differ), so a rounding may go the other way.
        for t in ("u32", "i32"):
            info = np.iinfo(NP[t])
            x = np.random.default_rng(3).integers(info.min, int(info.max), (70, 61),
                                                  dtype=np.int64).astype(NP[t])
            inp = self.write("w.raw", x)
            for pipeline in ("gaussian sigma=2", "uniform size=5 ! scale mul=0.5 add=7",
                             "unsharp sigma=1 amount=0.7 ! dog sigma1=1 sigma2=2"):
                with self.subTest(type=t, pipeline=pipeline):
                    outs = []
                    for dev in ("cpu", "cuda"):
                        out = self.p("w%s.raw" % dev)
                        r = self.oocrun(inp, out, x, pipeline, "--device", dev)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        outs.append(out)
                    a, b = (np.fromfile(o, NP[t]).astype(np.float64) for o in outs)
                    self.assertLessEqual(np.abs(a - b).max(), 1, "cuda differs from cpu")
                    self.assertLess(np.count_nonzero(a != b), a.size // 100)


if __name__ == "__main__":
    sys.exit(main())
