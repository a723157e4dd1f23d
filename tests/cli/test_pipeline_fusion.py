#!/usr/bin/env python3
"""Fused pipelines bit-identical to their stages run one by one (240 random pipelines), one
stage giving oocconv's and ooceq's bytes, SIGTERM and --resume, --part and mpirun giving one
process's bytes (B and C in pipeline_support.py).
Usage: test_pipeline_fusion.py --bin-dir DIR [unittest options]"""

import os
import random
import subprocess
import sys

from pipeline_support import BORDERS, Base, MPIRUN, main, random_stage, run, stage_text, tool


class Fusion(Base):
    def test_fused_equals_stage_by_stage(self):
        rng = random.Random(2026)
        count = 0
        for case in range(240):
            t = rng.choice(["u8", "u16", "f32"])
            c = rng.choice([1, 1, 3])
            h, w = rng.randint(5, 40), rng.randint(3, 37)
            mode = rng.choice(BORDERS)
            x = self.image(h, w, c, t, seed=case)
            inp = self.write("in%d.raw" % case, x)
            stages, types = [], [t]
            for _ in range(rng.randint(2, 4)):
                s, o = random_stage(rng, types[-1])
                stages.append(s)
                types.append(o)
            pipeline = " ! ".join(stage_text(s) for s in stages)
            common = ["--border", mode, "--border-value", "3", "-q", "--channels", c]
            with self.subTest(case=case, pipeline=pipeline, type=t, border=mode, size=(h, w)):
                fused = self.p("fused%d.raw" % case)
                r = run([tool("oocrun"), inp, fused, pipeline, "--width", w, "--type", t,
                         "--band-rows", rng.choice([1, 3, 8, 64])] + common)
                self.assertEqual(r.returncode, 0, r.stderr)
                # One by one through files of each stage's own output type.
                cur, cur_t = inp, t
                for k, s in enumerate(stages):
                    nxt = self.p("seq%d_%d.raw" % (case, k))
                    r = run([tool("oocrun"), cur, nxt, stage_text(s), "--width", w, "--type",
                             cur_t, "--out-type", types[k + 1]] + common)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    cur, cur_t = nxt, types[k + 1]
                # The output takes the type of the last stage that sets one.
                setters = [k for k, s in enumerate(stages) if s[0] in ("convert", "equalize")]
                final_t = types[setters[-1] + 1] if setters else t
                if cur_t != final_t:
                    nxt = self.p("seq%d_final.raw" % case)
                    r = run([tool("oocrun"), cur, nxt, "convert type=" + final_t, "--width", w,
                             "--type", cur_t] + common)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    cur = nxt
                with open(fused, "rb") as a, open(cur, "rb") as b:
                    self.assertTrue(a.read() == b.read(), "fused differs from stage by stage")
                count += 1
        self.assertGreaterEqual(count, 200)

    def test_one_stage_gives_oocconv_and_ooceq_bytes(self):
        for t, c in (("u16", 3), ("f32", 1), ("u8", 2)):
            x = self.image(61, 45, c, t, seed=9)
            inp = self.write("in.raw", x)
            common = ["--width", 45, "--type", t, "--channels", c, "-q"]
            for ours, theirs in (("gaussian sigma=2.5", ["--sigma", "2.5"]),
                                 ("uniform size=7", ["--filter", "box", "--radius", "3"]),
                                 ("convolve kernel=laplace", ["--kernel", "laplace"]),
                                 ("separable row=1,2,1 col=1,-1,3", ["--row-taps", "1,2,1",
                                                                     "--col-taps", "1,-1,3"])):
                with self.subTest(type=t, stage=ours):
                    a, b = self.p("a.raw"), self.p("b.raw")
                    r = run([tool("oocrun"), inp, a, ours, "--border", "mirror"] + common)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    r = run([tool("oocconv"), inp, b, "--border", "mirror"] + theirs + common)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(a, "rb") as fa, open(b, "rb") as fb:
                        self.assertTrue(fa.read() == fb.read(), "differs from oocconv")
            if t in ("u8", "u16"):
                a, b = self.p("ea.raw"), self.p("eb.raw")
                self.assertEqual(run([tool("oocrun"), inp, a, "equalize"] + common).returncode, 0)
                self.assertEqual(run([tool("ooceq"), inp, b] + common).returncode, 0)
                with open(a, "rb") as fa, open(b, "rb") as fb:
                    self.assertTrue(fa.read() == fb.read(), "differs from ooceq")

    def test_sigterm_then_resume_is_identical(self):
        import signal
        import time
        # About 3 s on one thread of the CI machine: a signal lands mid-run.
        pipe = ("gaussian sigma=12 ! unsharp sigma=8 amount=0.5 ! gaussian sigma=12 ! "
                "convert type=u16")
        args = ["synth:noise", None, pipe, "--width", "8192", "--height", "16000", "--threads",
                "1", "-q"]
        ref, out = self.p("ref.raw"), self.p("r.raw")
        r = run([tool("oocrun")] + [a if a else ref for a in args])
        self.assertEqual(r.returncode, 0, r.stderr)
        proc = subprocess.Popen([tool("oocrun")] + [a if a else out for a in args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while proc.poll() is None and not os.path.exists(out + ".partial.journal") and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        if proc.poll() is not None:
            self.skipTest("the run ended before the signal")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 75, err)
        self.assertFalse(os.path.exists(out))
        r = run([tool("oocrun")] + [a if a else out for a in args] + ["--resume"])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(ref, "rb") as a, open(out, "rb") as b:
            self.assertTrue(a.read() == b.read(), "resumed output differs")
        # Other stage parameters are another job: refused.
        r = run([tool("oocrun"), "synth:noise", self.p("x.raw"), pipe, "--width", "4096",
                 "--height", "6000", "--rows", "0:100", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocrun"), "synth:noise", self.p("x.raw"), pipe.replace("0.5", "0.6"),
                 "--width", "4096", "--height", "6000", "--rows", "0:100", "--resume", "-q"])
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_parts_and_mpi_equal_one_process(self):
        x = self.image(203, 97, 1, "u16", seed=4)
        inp = self.write("in.raw", x)
        pipe = "gaussian sigma=1.5 ! unsharp sigma=1 amount=0.7 ! gradient-magnitude ! convert type=u8"
        common = ["--width", 97, "--type", "u16", "-q"]
        one = self.p("one.raw")
        self.assertEqual(run([tool("oocrun"), inp, one, pipe] + common).returncode, 0)
        parts = self.p("parts.raw")
        for i in (2, 0, 1):
            r = run([tool("oocrun"), inp, parts, pipe, "--part", "%d/3" % i] + common)
            self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocconv"), "--finish", parts])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(one, "rb") as a, open(parts, "rb") as b:
            self.assertTrue(a.read() == b.read())
        if not MPIRUN:
            self.skipTest("mpirun not installed")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none")
        for pipe2 in (pipe, "gaussian sigma=1 ! convert type=u16 ! equalize"):
            ref = self.p("ref.raw")
            self.assertEqual(run([tool("oocrun"), inp, ref, pipe2] + common).returncode, 0)
            out = self.p("mpi.raw")
            r = subprocess.run([MPIRUN, "-np", "3", tool("oocrun"), inp, out, pipe2] +
                               [str(v) for v in common], capture_output=True, text=True,
                               env=env, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(ref, "rb") as a, open(out, "rb") as b:
                self.assertTrue(a.read() == b.read(), pipe2)


if __name__ == "__main__":
    sys.exit(main())
