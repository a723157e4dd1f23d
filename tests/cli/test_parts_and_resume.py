#!/usr/bin/env python3
"""Parts, MPI ranks and resume of oocconv and ooceq, end to end (issue 11).

Every output made in pieces (--part I/N, --rows A:B, --part auto from Slurm variables, mpirun
ranks, a run stopped by SIGTERM/SIGINT/SIGKILL and resumed) must be byte-identical (cmp) to one
uninterrupted single-process run, with nothing under the final name until it is complete. Also:
--finish names missing or unfinished parts (exit 3), --resume refuses a changed input or changed
options (exit 2), a failing MPI rank stops every rank and names itself, TIFF parts are refused
with a message, --progress-log writes lines. The --device cuda cases skip without a GPU; the MPI
cases skip without mpirun.

Usage: test_parts_and_resume.py --bin-dir DIR [unittest options, e.g. -v, -k NAME]
"""
import filecmp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import cli_args  # beside this file

# --bin-dir DIR as a script (the other arguments go to unittest.main), $OOC_BIN_DIR under
# pytest (conftest.py).
BIN_DIR, _REST = cli_args.bin_dir_and_rest(__name__,
                                            description=__doc__.split("\n")[0])
MPIRUN = shutil.which("mpirun")
HAVE_GPU = os.path.exists("/dev/nvidiactl")
RESUMABLE = 75
# A run long enough to be signalled mid-way on the 2-core CI machine (about 3 s on one thread
# there), small on disk: the direct sum (auto takes the FFT at this radius).
SLOW = ["synth:noise", "--width", "8192", "--height", "12000", "--radius", "96", "--threads", "1",
        "--method", "direct"]


def tool(name):
    return os.path.join(BIN_DIR, name)


def run(cmd, timeout=300, env=None, **kw):
    full = dict(os.environ, **(env or {}))
    for k in list(full):  # a test must not inherit a launcher's variables from its caller
        if k.startswith(("OMPI_COMM_WORLD", "PMI_", "PMIX_", "SLURM_")) and k not in (env or {}):
            del full[k]
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          env=full, **kw)


def mpirun(n, cmd, env=None, **kw):
    env = dict(env or {}, **{"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl": "self,vader",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"})
    return run([MPIRUN, "-np", str(n)] + cmd, env=env, **kw)


class PartsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = tempfile.mkdtemp(prefix="ooc-parts-")
        cls.inp = os.path.join(cls.d, "in.raw")
        r = run([tool("oocgen"), cls.inp, "--width", "1000", "--height", "777", "--type", "u16",
                 "--channels", "3", "--pattern", "gradient", "-q"])
        assert r.returncode == 0, r.stderr
        cls.opts = ["--width", "1000", "--type", "u16", "--channels", "3", "--sigma", "2.5",
                    "--border", "nearest", "-q"]
        cls.refs = {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.d, ignore_errors=True)

    def setUp(self):
        self.w = tempfile.mkdtemp(dir=self.d)

    def p(self, name):
        return os.path.join(self.w, name)

    def ref(self, ext, extra=()):
        key = (ext, tuple(extra))
        if key not in self.refs:
            out = os.path.join(self.d, "ref%d%s" % (len(self.refs), ext))
            r = run([tool("oocconv"), self.inp, out] + self.opts + list(extra))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.refs[key] = out
        return self.refs[key]

    def conv(self, out, *args, **kw):
        return run([tool("oocconv"), self.inp, out] + self.opts + list(args), **kw)

    def assertSame(self, a, b, why=""):
        self.assertTrue(os.path.exists(b), "no output %s %s" % (b, why))
        self.assertTrue(filecmp.cmp(a, b, shallow=False), "%s differs from %s %s" % (b, a, why))

    def assertNoLeftovers(self):
        left = [f for f in os.listdir(self.w) if ".partial" in f]
        self.assertEqual(left, [], "temporaries or journals left behind")

    # --- parts ---------------------------------------------------------------------------------

    def test_parts_are_identical_to_one_run(self):
        for ext in (".raw", ".npy"):
            for n in (2, 3, 5):
                for device in ["cpu"] + (["cuda"] if HAVE_GPU else []):
                    with self.subTest(ext=ext, parts=n, device=device):
                        out = self.p("o%d%s%s" % (n, device, ext))
                        for i in reversed(range(n)):  # any order
                            r = self.conv(out, "--part", "%d/%d" % (i, n), "--device", device,
                                          "--band-rows", str(7 + i))
                            self.assertEqual(r.returncode, 0, r.stderr)
                            self.assertFalse(os.path.exists(out), "in place before --finish")
                        r = run([tool("oocconv"), "--finish", out])
                        self.assertEqual(r.returncode, 0, r.stderr)
                        self.assertSame(self.ref(ext), out)
        # One part of one is a plain run: in place at once.
        out = self.p("one.raw")
        self.assertEqual(self.conv(out, "--part", "0/1").returncode, 0)
        self.assertSame(self.ref(".raw"), out)
        self.assertNoLeftovers()

    def test_rows_ranges_cover_the_image(self):
        out = self.p("rows.raw")
        for a, b in ((500, 777), (0, 123), (123, 500)):
            r = self.conv(out, "--rows", "%d:%d" % (a, b))
            self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(self.ref(".raw"), out)
        self.assertNoLeftovers()

    def test_finish_names_what_is_missing(self):
        out = self.p("miss.raw")
        for i in (0, 2):
            self.assertEqual(self.conv(out, "--part", "%d/4" % i).returncode, 0)
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("part 1/4 has not run", r.stderr)
        self.assertIn("part 3/4 has not run", r.stderr)
        self.assertFalse(os.path.exists(out))
        r = run([tool("oocconv"), "--finish", self.p("never.raw")])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no parts to finish", r.stderr)

    def test_part_auto_from_slurm_array_and_srun(self):
        out = self.p("auto.raw")
        for tid in (3, 4, 5):  # an array --array=3-5: task ids need not start at 0
            env = {"SLURM_ARRAY_TASK_ID": str(tid), "SLURM_ARRAY_TASK_COUNT": "3",
                   "SLURM_ARRAY_TASK_MIN": "3"}
            r = self.conv(out, "--part", "auto", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(run([tool("oocconv"), "--finish", out]).returncode, 0)
        self.assertSame(self.ref(".raw"), out)
        out = self.p("srun.raw")
        for rank in range(2):
            r = self.conv(out, "--part", "auto", env={"SLURM_PROCID": str(rank),
                                                      "SLURM_NTASKS": "2"})
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(run([tool("oocconv"), "--finish", out]).returncode, 0)
        self.assertSame(self.ref(".raw"), out)
        r = self.conv(self.p("gaps.raw"), "--part", "auto", env={
            "SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "3",
            "SLURM_ARRAY_TASK_MAX": "5"})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("consecutive", r.stderr)
        r = self.conv(self.p("none.raw"), "--part", "auto")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--part auto", r.stderr)

    def test_bad_part_options(self):
        for args in (["--part", "3/3"], ["--part", "x"], ["--part", "1/0"], ["--rows", "5:5"],
                     ["--rows", "0:778"], ["--rows", "a:b"], ["--part", "0/2", "--rows", "0:5"],
                     ["--part", "0/1000"]):
            with self.subTest(args=args):
                r = self.conv(self.p("bad.raw"), *args)
                self.assertEqual(r.returncode, 2, r.stderr)
        self.assertNoLeftovers()

    # --- resume --------------------------------------------------------------------------------

    def slow_ref(self):
        out = os.path.join(self.d, "slow_ref.raw")
        if not os.path.exists(out):
            r = run([tool("oocconv")] + SLOW[:1] + [out] + SLOW[1:] + ["-q"])
            self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def start_slow(self, out, *extra):
        return subprocess.Popen([tool("oocconv"), SLOW[0], out] + SLOW[1:] + list(extra),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_mid_run(self, proc, out, after):
        """Sleeps `after` seconds, then until the journal records rows done: past the run's setup
        and its signal handlers however slowly a loaded machine starts it."""
        time.sleep(after)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with open(out + ".partial.journal") as f:
                    if int(f.read().split("done ")[1].split()[0]) > 0:
                        return
            except (OSError, IndexError, ValueError):
                pass
            time.sleep(0.02)

    def interrupt(self, out, sig, after=0.8, twice=False, gap=0.05):
        proc = self.start_slow(out, "--progress-log")
        self.wait_mid_run(proc, out, after)
        if proc.poll() is not None:
            self.skipTest("the run ended before the signal")
        proc.send_signal(sig)
        if twice:
            time.sleep(gap)
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        return proc.returncode, err

    def test_sigterm_then_resume_is_identical(self):
        ref = self.slow_ref()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                out = self.p("r%s.raw" % sig.name)
                rc, err = self.interrupt(out, sig)
                self.assertEqual(rc, RESUMABLE, err)
                self.assertIn("--resume", err)
                self.assertFalse(os.path.exists(out))
                self.assertTrue(os.path.exists(out + ".partial.journal"), err)
                r = run([tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--resume", "-q"])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertSame(ref, out)
        self.assertNoLeftovers()

    def test_sigkill_and_second_sigint_resume(self):
        ref = self.slow_ref()
        out = self.p("k.raw")
        rc, err = self.interrupt(out, signal.SIGKILL, after=1.5)
        self.assertEqual(rc, -signal.SIGKILL)
        with open(out + ".partial.journal") as f:
            done = int(f.read().split("done ")[1].split()[0])
        self.assertGreater(done, 0, "the journal recorded nothing after 1.5 s")
        r = run([tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--resume", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(ref, out)
        out = self.p("twice.raw")
        # The first SIGINT's orderly stop can be over before the second arrives (then the exit
        # is the resumable one; since the tools leave with _exit it is over sooner), and two
        # signals sent at once may arrive as one: try again, with the second sooner, a few times.
        for gap in (0.05, 0.01, 0.002, 0.0) * 3:
            rc, err = self.interrupt(out, signal.SIGINT, twice=True, gap=gap)
            if rc != RESUMABLE:
                break
        self.assertEqual(rc, 128 + signal.SIGINT, err)
        r = run([tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--resume", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(ref, out)
        self.assertNoLeftovers()

    def test_resume_refuses_other_input_or_options(self):
        src = self.p("in.raw")
        shutil.copyfile(self.inp, src)
        out = self.p("x.raw")
        args = ["--width", "1000", "--type", "u16", "--channels", "3", "--sigma", "2.5", "-q"]
        r = run([tool("oocconv"), src, out, "--rows", "0:100"] + args)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocconv"), src, out, "--rows", "0:100", "--resume"] + args[:-3] +
                ["--sigma", "3", "-q"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("options differ", r.stderr)
        os.utime(src, (1, 1))
        r = run([tool("oocconv"), src, out, "--rows", "0:100", "--resume"] + args)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("input differ", r.stderr)
        # Nothing to resume: a fresh run.
        r = run([tool("oocconv"), src, self.p("fresh.raw"), "--resume"] + args)
        self.assertEqual(r.returncode, 0, r.stderr)

    def assertOptionsDiffer(self, r, what):
        """Exit 2, the options said to differ, naming the changed --border (both values) and
        none of the fields that are the same (the filter's taps, its accumulation type)."""
        self.assertEqual(r.returncode, 2, "%s: %s" % (what, r.stderr))
        self.assertIn("options differ", r.stderr, what)
        for word in ("border reflect", "border nearest"):
            self.assertIn(word, r.stderr, what)
        for same in ("accumulate", "taps (radius"):
            self.assertNotIn(same, r.stderr, what)

    def test_changed_border_names_the_differing_options(self):
        """A part or a resumed run with another --border than its job's is told that the options
        differ, naming what differs, for raw, .npy, TIFF and Zarr outputs of oocconv and oocrun:
        parts with and without --resume, and a stopped single run resumed. The stop names the
        file it kept (a TIFF's blocks file, not OUT.partial), which exists, and --resume with
        the job's own options finishes the output."""
        ops = {"oocconv": ["--sigma", "32", "--method", "direct"],
               "oocrun": ["gaussian sigma=32 method=direct"]}
        layout = {".raw": [], ".npy": [], ".tif": ["--tile", "64", "--compress", "deflate"],
                  ".zarr": ["--chunk", "64"]}
        for name, op in ops.items():
            for ext, lay in layout.items():
                def cmd(out, border, *extra, height="200"):
                    return ([tool(name), "synth:noise", out] + op +
                            ["--width", "2048", "--height", height, "--type", "u16",
                             "--threads", "1", "-q", "--border", border] + lay + list(extra))
                with self.subTest(tool=name, ext=ext, run="parts"):
                    out = self.p("b_%s%s" % (name, ext))
                    r = run(cmd(out, "reflect", "--part", "0/2"))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    for extra in ([], ["--resume"]):
                        self.assertOptionsDiffer(run(cmd(out, "nearest", "--part", "1/2", *extra)),
                                                 "part 1/2 %s" % extra)
                with self.subTest(tool=name, ext=ext, run="single"):
                    out = self.p("s_%s%s" % (name, ext))
                    proc = subprocess.Popen(cmd(out, "reflect", height="6000"),
                                            stderr=subprocess.PIPE, text=True)
                    deadline = time.monotonic() + 60
                    while (proc.poll() is None and time.monotonic() < deadline and
                           not os.path.exists(out + ".partial.journal")):
                        time.sleep(0.02)
                    if proc.poll() is not None:
                        self.skipTest("the run ended before the signal")
                    proc.send_signal(signal.SIGTERM)
                    _, err = proc.communicate(timeout=120)
                    self.assertEqual(proc.returncode, RESUMABLE, err)
                    kept = err.split("kept '")[1].split("'")[0]
                    self.assertTrue(os.path.exists(kept), "the stop names %s: %s" % (kept, err))
                    self.assertOptionsDiffer(run(cmd(out, "nearest", "--resume", height="6000")),
                                             "resumed")
                    r = run(cmd(out, "reflect", "--resume", height="6000"))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertTrue(os.path.exists(out))
                    self.assertFalse([f for f in os.listdir(self.w)
                                      if f.startswith(os.path.basename(out) + ".partial")])

    def test_progress_log_lines(self):
        out = self.p("log.raw")
        t0 = time.time()
        r = run([tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--progress-log=1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        if time.time() - t0 < 2:
            self.skipTest("the run took under 2 s: no line was due")
        self.assertRegex(r.stderr, r"oocconv: +\d+\.\d% \d+/12000 rows, [\d.]+ GB/s, ETA \d+m\d\ds")

    # --- issue 29: parts and resume never mix data ----------------------------------------------

    def wait_journal(self, proc, *journals, settle=0.3, timeout=60):
        """Until every journal exists (the run set up, its signal handlers in place), then a
        little longer: mid-run (or the process ends)."""
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if all(os.path.exists(j) for j in journals):
                time.sleep(settle)
                return proc.poll() is None
            time.sleep(0.02)
        return False

    def test_parts_of_another_input_are_refused(self):
        out = self.p("q.raw")
        self.assertEqual(self.conv(out, "--part", "0/2").returncode, 0)
        size = os.path.getsize(out + ".partial")
        small = self.p("small.raw")
        r = run([tool("oocgen"), small, "--width", "500", "--height", "300", "--type", "u16",
                 "--channels", "3", "--pattern", "noise", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocconv"), small, out, "--part", "1/2", "--width", "500"] + self.opts[2:])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("another job", r.stderr)
        self.assertEqual(os.path.getsize(out + ".partial"), size, "the shared file was resized")
        self.assertEqual(self.conv(out, "--part", "1/2").returncode, 0)
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(self.ref(".raw"), out)
        self.assertNoLeftovers()

    def test_fingerprint_covers_every_value(self):
        kernel = self.p("k.txt")
        base = ["--width", "1000", "--type", "u16", "--channels", "3", "-q"]
        pairs = [(["--radius", "6"], ["--radius", "6", "--sigma", "5"]),
                 (["--radius", "6"], ["--radius", "6", "--filter", "box"]),
                 (["--taps", "1,2,1"], ["--taps", "1,4,1"]),
                 (["--taps", "1,2,1", "--border", "constant", "--border-value", "0"],
                  ["--taps", "1,2,1", "--border", "constant", "--border-value", "1000"]),
                 (["--kernel", kernel], ["--kernel", kernel])]
        for i, (a, b) in enumerate(pairs):
            with self.subTest(a=a, b=b):
                with open(kernel, "w") as f:
                    f.write("1 2 1\n2 5 2\n1 2 1\n")
                out = self.p("fp%d.raw" % i)
                r = run([tool("oocconv"), self.inp, out, "--part", "0/2"] + base + a)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(kernel, "w") as f:
                    f.write("1 2 1\n2 4 2\n1 2 1\n")
                r = run([tool("oocconv"), self.inp, out, "--part", "1/2"] + base + b)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("another job", r.stderr)
                r = run([tool("oocconv"), self.inp, out, "--part", "0/2", "--resume"] + base + b)
                self.assertEqual(r.returncode, 2, r.stderr)
                r = run([tool("oocconv"), "--finish", out])
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertFalse(os.path.exists(out))

    def test_plain_run_does_not_replace_parts(self):
        out = self.p("p.raw")
        for i in range(2):
            self.assertEqual(self.conv(out, "--part", "%d/2" % i).returncode, 0)
        for extra in ([], ["--resume"]):
            r = self.conv(out, *extra)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("being made in parts", r.stderr)
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(self.ref(".raw"), out)
        self.assertNoLeftovers()

    def test_edited_journal_and_rewritten_input_are_refused(self):
        out = self.p("j.raw")
        self.assertEqual(self.conv(out, "--part", "0/2").returncode, 0)
        journal = out + ".partial.part-0-of-2.journal"
        with open(journal) as f:
            text = f.read()
        for old, new in (("done 388", "done 300"), ("rows 0 388 777", "rows 0 388 700")):
            with self.subTest(edit=new):
                self.assertIn(old, text)
                with open(journal, "w") as f:
                    f.write(text.replace(old, new))
                r = run([tool("oocconv"), "--finish", out])
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn("cannot be trusted", r.stderr)
                r = self.conv(out, "--part", "1/2", "--resume")
                self.assertEqual(r.returncode, 3, r.stderr)
        # An input rewritten in place, its mtime put back (touch -r): its ctime still moved.
        src = self.p("in.raw")
        shutil.copyfile(self.inp, src)
        args = ["--width", "1000", "--type", "u16", "--channels", "3", "--sigma", "2.5", "-q"]
        out = self.p("c.raw")
        r = run([tool("oocconv"), src, out, "--rows", "0:100"] + args)
        self.assertEqual(r.returncode, 0, r.stderr)
        st = os.stat(src)
        time.sleep(0.01)
        with open(src, "r+b") as f:
            f.write(b"\x07" * 64)
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        r = run([tool("oocconv"), src, out, "--rows", "100:777", "--resume"] + args)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("input", r.stderr)

    def test_parts_and_rows_mix_in_any_order(self):
        for order in ((("--part", "0/2"), ("--rows", "388:777")),
                      (("--rows", "388:777"), ("--part", "0/2")),
                      (("--rows", "0:500"), ("--part", "1/2"))):
            with self.subTest(order=order):
                out = self.p("mix%d.raw" % len(os.listdir(self.w)))
                for args in order:
                    self.assertEqual(self.conv(out, *args).returncode, 0)
                r = run([tool("oocconv"), "--finish", out])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertSame(self.ref(".raw"), out)
        self.assertNoLeftovers()

    def test_resume_with_another_split(self):
        ref = self.slow_ref()
        out = self.p("split.raw")
        # Part 0/3 done, part 1/3 stopped mid-way, part 2/3 never run.
        r = run([tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--part", "0/3", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        proc = subprocess.Popen([tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--part", "1/3"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.wait_journal(proc, out + ".partial.part-1-of-3.journal")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, RESUMABLE, err)
        # A running part is named as running, with its pid.
        proc = subprocess.Popen([tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--part", "2/3"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if self.wait_journal(proc, out + ".partial.part-2-of-3.journal"):
            r = run([tool("oocconv"), "--finish", out])
            if proc.poll() is None:
                self.assertEqual(r.returncode, 4, r.stderr)
                self.assertIn("pid %d" % proc.pid, r.stderr)
        proc.kill()
        proc.communicate()
        # Two parts now, resumed: any split of the rest completes the image.
        for i in range(2):
            r = run([tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--part", "%d/2" % i,
                                                                 "--resume", "-q"])
            self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(ref, out)
        self.assertNoLeftovers()

    @unittest.skipUnless(MPIRUN, "mpirun not installed")
    def test_mpi_resume_with_another_rank_count(self):
        ref = self.slow_ref()
        out = self.p("mpisplit.raw")
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
               "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl": "self,vader",
               "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
        full = dict(os.environ, **env)
        proc = subprocess.Popen([MPIRUN, "-np", "3", tool("oocconv"), SLOW[0], out] + SLOW[1:],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=full)
        self.wait_journal(proc, *(out + ".partial.part-%d-of-3.journal" % i for i in range(3)),
                          settle=0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        stopped = []
        for i in range(3):
            try:
                with open(out + ".partial.part-%d-of-3.journal" % i) as f:
                    text = f.read()
            except OSError:
                continue
            if int(text.split("done ")[1].split()[0]) < int(text.split("rows ")[1].split()[1]):
                stopped.append(i)
        if proc.returncode == 0 or not stopped:
            self.skipTest("the ranks ended before the signal")
        r = mpirun(2, [tool("oocconv"), SLOW[0], out] + SLOW[1:] + ["--resume", "-q"],
                   timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertSame(ref, out)
        self.assertNoLeftovers()

    @unittest.skipUnless(MPIRUN, "mpirun not installed")
    def test_mpi_final_errors_are_not_resumable(self):
        # Journals of another input in the way: no rerun mends that, so not 75.
        out = self.p("mpibad.raw")
        small = self.p("small.raw")
        r = run([tool("oocgen"), small, "--width", "1000", "--height", "300", "--type", "u16",
                 "--channels", "3", "--pattern", "noise", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run([tool("oocconv"), small, out, "--part", "0/2"] + self.opts)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = mpirun(2, [tool("oocconv"), self.inp, out] + self.opts, timeout=120)
        self.assertNotIn(r.returncode, (0, RESUMABLE), r.stderr)
        self.assertFalse(os.path.exists(out))
        # A damaged journal found when rank 0 finishes: a final error, not "run again".
        out = self.p("mpidamaged.raw")
        with open(out + ".partial.rows-0-5.journal", "w") as f:
            f.write("ooc-journal 2\ninput x\n")
        r = mpirun(2, [tool("oocconv"), self.inp, out] + self.opts, timeout=120)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("cannot be trusted", r.stderr)
        self.assertFalse(os.path.exists(out))
        # A TIFF output under mpirun (its ranks keep their compressed blocks; rank 0 joins them)
        # equals one run's.
        r = mpirun(2, [tool("oocconv"), self.inp, self.p("m.tif")] + self.opts, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        one = self.p("one.tif")
        r = run([tool("oocconv"), self.inp, one] + self.opts)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(one, self.p("m.tif"))

    # --- MPI -----------------------------------------------------------------------------------

    @unittest.skipUnless(MPIRUN, "mpirun not installed")
    def test_mpi_ranks_are_identical_to_one_run(self):
        for n in (1, 2, 3):
            with self.subTest(ranks=n):
                out = self.p("mpi%d.npy" % n)
                r = mpirun(n, [tool("oocconv"), self.inp, out] + self.opts[:-1] + ["--stats", "json"])
                self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
                self.assertSame(self.ref(".npy"), out)
                if n > 1:
                    self.assertIn('"ranks": %d' % n, r.stdout)
        self.assertNoLeftovers()

    @unittest.skipUnless(MPIRUN, "mpirun not installed")
    def test_mpi_equalization_sums_histograms(self):
        src = self.p("eq.raw")
        r = run([tool("oocgen"), src, "--width", "999", "--height", "555", "--type", "u8",
                 "--channels", "2", "--pattern", "low-contrast", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        args = ["--width", "999", "--type", "u8", "--channels", "2", "-q"]
        one = self.p("eq1.raw")
        self.assertEqual(run([tool("ooceq"), src, one] + args).returncode, 0)
        out = self.p("eq3.raw")
        r = mpirun(3, [tool("ooceq"), src, out, "--histogram", self.p("h.csv")] + args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(one, out)
        r1 = run([tool("ooceq"), src, self.p("eq1b.raw"), "--histogram", self.p("h1.csv")] + args)
        self.assertEqual(r1.returncode, 0, r1.stderr)
        self.assertSame(self.p("h1.csv"), self.p("h.csv"))

    @unittest.skipUnless(MPIRUN, "mpirun not installed")
    def test_mpi_failing_rank_stops_all(self):
        out = self.p("fail.raw")
        script = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$0" missing.raw "$@"; '
                  'else exec "$0" "$IN" "$@"; fi')
        r = mpirun(2, ["sh", "-c", script, tool("oocconv"), out] + self.opts, timeout=120,
                   cwd=self.w, env={"IN": self.inp})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("rank 1 of 2", r.stderr)
        self.assertIn("missing.raw", r.stderr)
        self.assertFalse(os.path.exists(out), "an output under the final name")


    def _stop_when(self, cmd, ready, limit=60):
        """Runs cmd, sends SIGTERM once ready() holds; returns (exit code, stderr)."""
        p = subprocess.Popen([str(c) for c in cmd], stderr=subprocess.PIPE, text=True)
        t = time.time()
        while p.poll() is None and not ready() and time.time() - t < limit:
            time.sleep(0.02)
        p.send_signal(signal.SIGTERM)
        return p.wait(), p.communicate()[1]

    def test_equalization_resumes_with_its_saved_histogram(self):
        # Stopped in the histogram pass, the run starts over; stopped in the table pass, the
        # resumed run takes the saved histogram (the rows after the stop alone would give another
        # table) and the output equals one run's, for ooceq and an oocrun pipeline.
        src = self.p("eqs.raw")
        r = run([tool("oocgen"), src, "--width", "2048", "--height", "3000", "--type", "u16",
                 "--pattern", "low-contrast", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        args = ["--width", "2048", "--type", "u16", "--threads", "1", "--band-rows", "16", "-q"]
        for name, cmd, pipeline in (
                ("ooceq", [tool("ooceq")], []),
                ("oocrun", [tool("oocrun")], ["gaussian sigma=30 ! convert type=u16 ! equalize"])):
            one = self.p(name + "1.raw")
            r = run(cmd[:1] + [src, one] + args + pipeline)
            self.assertEqual(r.returncode, 0, r.stderr)
            for when in ("histogram", "table"):
                out = self.p("%s-%s.raw" % (name, when))
                state = out + ".partial.pass-0"
                journal = out + ".partial.journal"

                def ready():
                    if when == "histogram":
                        return os.path.exists(out + ".partial")
                    try:
                        return os.path.exists(state) and "done 0" not in open(journal).read()
                    except OSError:
                        return False
                rc, err = self._stop_when(cmd[:1] + [src, out] + args + pipeline, ready)
                if rc == 0:
                    continue  # finished before the signal: nothing to resume
                self.assertEqual(rc, 75, err)
                # (ooceq's histogram pass is too quick to be caught reliably; the pipeline's,
                # which filters too, is not.)
                if name == "oocrun" or when == "table":
                    self.assertEqual(os.path.exists(state), when == "table", (name, when))
                r = run(cmd[:1] + [src, out, "--resume"] + args + pipeline)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertSame(one, out)
                self.assertFalse(os.path.exists(state), "the saved histogram outlived the run")
        # A damaged saved histogram is refused.
        out = self.p("dmg.raw")
        rc, err = self._stop_when([tool("ooceq"), src, out] + args,
                                  lambda: os.path.exists(out + ".partial.pass-0"))
        if rc == 75:
            with open(out + ".partial.pass-0", "r+") as f:
                f.seek(20)
                f.write("9")
            r = run([tool("ooceq"), src, out, "--resume"] + args)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn("cannot be trusted", r.stderr)


def main():
    unittest.main(argv=[sys.argv[0]] + _REST)


if __name__ == "__main__":
    main()
