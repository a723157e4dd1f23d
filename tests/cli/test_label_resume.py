#!/usr/bin/env python3
"""A label run stopped by SIGTERM in its second pass resumes (issue 47 item 5): the first pass's
table, its bands' offsets and first rows are saved beside the output's temporary once the first
pass ends, and the same command with --resume skips the first pass (it reads nothing) and writes
only the rows after the journal's (the exact band it stopped at), giving the bytes of one
uninterrupted run and scipy.ndimage.label's labels: images 8-connected (u32, u64), a volume in
3-D (26) through oocrun's pipeline, --regions with --min-size (the table written once, equal to
the uninterrupted run's), a part of a run in parts and MPI ranks. A damaged saved table and a
resume that plans other bands are refused naming the way on; a fresh run does not take an
earlier run's saved state; the saved state goes with the finished output.

Usage: test_label_resume.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import glob
import json
import os
import re
import signal
import subprocess
import time
import unittest

import numpy as np

import cli_args  # beside this file
from label_cases import LabelCase, scipy_label

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCLABEL = os.path.join(BIN, "ooclabel")
OOCRUN = os.path.join(BIN, "oocrun")
rng = np.random.default_rng(4748)

# One row a band, one thread: the journal records rows of the second pass (a second in) before
# the signal, and many bands are left.
SLOW = ["--band-rows", "1", "--threads", "1"]


def random_mask(shape, p):
    m = rng.random(shape) < p
    return np.where(m, rng.integers(1, 255, shape), 0).astype(np.uint8)


class LabelResume(LabelCase):
    def same(self, got, want, what):
        self.assertEqual(got.dtype, want.dtype, what)
        self.assertEqual(got.shape, want.shape, what)
        self.assertTrue(np.array_equal(got, want),
                        f"{what}: {np.count_nonzero(got != want)} labels differ")

    def stop_and_resume(self, argv, out, journal, stats=True):
        """Stops argv in its second pass, checks what the stop kept, runs argv + --resume and
        returns (row it stopped at, the resumed run's --stats json)."""
        with open(out, "wb") as f:  # poisoned: a stale file of the output's name
            f.write(b"\x5a" * 1000)
        err = self.stop_in_second_pass(argv, journal)
        m = re.search(r"stopped at row (\d+)", err)
        self.assertTrue(m, err)
        stopped = int(m.group(1))
        self.assertGreater(stopped, 0)
        self.assertTrue(glob.glob(glob.escape(out) + ".partial*.pass-0*.table") or
                        glob.glob(glob.escape(out) + ".partial.pass-0.table"), "table saved")
        r = self.run_tool(argv + ["--resume"] + (["--stats", "json"] if stats else []))
        return stopped, (json.loads(r.stdout) if stats else None)

    def check_resumed(self, st, stopped, rows, row_bytes):
        # The first pass is not run again, and only the rows after the stop are written.
        self.assertEqual(st["passes"][0]["bytes_read"], 0, "the first pass ran again")
        self.assertEqual(st["output"]["bytes"], (rows - stopped) * row_bytes,
                         f"not resumed at row {stopped}")

    def test_image_u32_and_u64(self):
        a = random_mask((400000, 64), 0.45)
        np.save(self.p("in.npy"), a)
        want, n = scipy_label(a != 0, 8)
        for lt, dtype in (("u32", np.uint32), ("u64", np.uint64)):
            with self.subTest(label_type=lt):
                out, one = self.p(f"r_{lt}.npy"), self.p(f"one_{lt}.npy")
                argv = [OOCLABEL, self.p("in.npy"), out, "--connectivity", "8",
                        "--label-type", lt] + SLOW
                self.run_tool([OOCLABEL, self.p("in.npy"), one, "--connectivity", "8",
                               "--label-type", lt])
                stopped, st = self.stop_and_resume(argv, out, out + ".partial.journal")
                self.check_resumed(st, stopped, a.shape[0], 64 * np.dtype(dtype).itemsize)
                self.assertEqual(st["components"], n)
                got = np.load(out)
                self.assertEqual(got.dtype, dtype)
                self.same(got, want.astype(dtype), f"{lt} resumed")
                with open(out, "rb") as f, open(one, "rb") as g:
                    self.assertEqual(f.read(), g.read(), "one uninterrupted run's bytes")
                self.assertEqual(glob.glob(out + ".partial*"), [], "state removed")

    def test_volume_in_3d_through_oocrun(self):
        # threshold ! label: the stage before label recomputed in the resumed second pass.
        v = (rng.random((8000, 50, 64)) * 255).astype(np.uint8)
        np.save(self.p("v.npy"), v)
        want, _ = scipy_label(v > 140, 26)
        out = self.p("v_out.raw")
        argv = [OOCRUN, self.p("v.npy"), out, "threshold value=140 ! label connectivity=26",
                "--volume"] + SLOW
        stopped, st = self.stop_and_resume(argv, out, out + ".partial.journal")
        self.check_resumed(st, stopped, v.shape[0] * v.shape[1], 64 * 4)
        got = np.fromfile(out, np.uint32).reshape(v.shape)
        self.same(got, want, "volume resumed")

    def test_regions_and_min_size(self):
        a = random_mask((300000, 48), 0.5)
        np.save(self.p("in.npy"), a)
        args = ["--connectivity", "4", "--min-size", "3"]
        self.run_tool([OOCLABEL, self.p("in.npy"), self.p("one.npy"), "--regions",
                       self.p("one.csv")] + args)
        out = self.p("r.npy")
        argv = [OOCLABEL, self.p("in.npy"), out, "--regions", self.p("r.csv")] + args + SLOW
        stopped, st = self.stop_and_resume(argv, out, out + ".partial.journal")
        self.check_resumed(st, stopped, a.shape[0], 48 * 4)
        self.assertTrue(np.array_equal(np.load(out), np.load(self.p("one.npy"))))
        with open(self.p("r.csv")) as f, open(self.p("one.csv")) as g:
            self.assertEqual(f.read(), g.read(), "the regions table")
        # The same labels as skimage's remove_small_objects then label would give: the kept
        # components of scipy's labels, numbered on.
        lab, _ = scipy_label(a != 0, 4)
        sizes = np.bincount(lab.ravel())
        keep = sizes >= 3
        keep[0] = False
        renum = np.zeros(sizes.size, np.uint32)
        renum[keep] = np.arange(1, keep.sum() + 1, dtype=np.uint32)
        self.same(np.load(out), renum[lab], "min-size resumed")

    def test_a_part_resumes(self):
        a = random_mask((600000, 64), 0.45)
        np.save(self.p("in.npy"), a)
        out = self.p("s.raw")
        base = [OOCLABEL, self.p("in.npy"), out, "--connectivity", "8"]
        r = subprocess.run(base + ["--part", "1/2", "-q"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 75, r.stderr)
        # Part 0 completes the faces and goes on to write its rows: stopped there, then resumed.
        stopped, st = self.stop_and_resume(base + ["--part", "0/2"] + SLOW, out,
                                           out + ".partial.part-0-of-2.journal")
        self.check_resumed(st, stopped, 300000, 64 * 4)
        self.run_tool(base + ["--part", "1/2"])
        self.run_tool([OOCLABEL, "--finish", out])
        got = np.fromfile(out, np.uint32).reshape(a.shape)
        self.same(got, scipy_label(a != 0, 8)[0], "a part resumed")
        self.assertEqual(glob.glob(out + ".*"), [], "faces and states removed by --finish")

    def test_mpi_ranks_resume(self):
        # Each rank saves its own table (TEMP.pass-0.rows-FIRST); mpirun's ranks stop at their
        # bands on SIGTERM and go on from them under --resume.
        mpirun, env = self.mpirun()
        # Rows enough that both ranks are still in the second pass a journal update (a second)
        # after it starts: a rank's 200000 rows took about one second.
        a = random_mask((1200000, 64), 0.45)
        np.save(self.p("in.npy"), a)
        out = self.p("m.npy")
        argv = [mpirun, "-np", "2", OOCLABEL, self.p("in.npy"), out, "--connectivity",
                "8"] + SLOW
        err = self.stop_in_second_pass(argv, out + ".partial.part-0-of-2.journal", env, None)
        self.assertEqual(len(re.findall(r"stopped at row \d+", err)), 2, err)
        self.assertEqual(len(glob.glob(out + ".partial.pass-0.rows-*.table")), 2)
        r = subprocess.run(argv + ["-q", "--resume", "--stats", "json"], capture_output=True,
                           text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["passes"][0]["bytes_read"], 0, "pass 1 again")
        self.same(np.load(out), scipy_label(a != 0, 8)[0], "ranks resumed")
        self.assertEqual(glob.glob(out + ".partial*"), [], "states removed")

    def test_a_stale_table_is_not_taken(self):
        # A run of mask a stopped in pass 2 saves its table; a fresh run of mask b to the same
        # output, stopped in its first pass, then resumed, labels b (not through a's table).
        a, b = random_mask((400000, 64), 0.45), random_mask((400000, 64), 0.45)
        np.save(self.p("a.npy"), a)
        np.save(self.p("b.npy"), b)
        out = self.p("o.raw")
        self.stop_in_second_pass([OOCLABEL, self.p("a.npy"), out, "--connectivity", "8"] + SLOW,
                                 out + ".partial.journal")
        self.assertTrue(os.path.exists(out + ".partial.pass-0"))
        argv = [OOCLABEL, self.p("b.npy"), out, "--connectivity", "8"] + SLOW
        proc = subprocess.Popen(argv + ["-q"], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and not (
                os.path.exists(out + ".partial.journal") and
                not os.path.exists(out + ".partial.pass-0")):
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        if proc.returncode == 0 or os.path.exists(out + ".partial.pass-0"):
            self.skipTest("the fresh run ended its first pass before the signal")
        self.assertEqual(proc.returncode, 75, err)
        self.run_tool(argv + ["--resume"])
        got = np.fromfile(out, np.uint32).reshape(b.shape)
        self.same(got, scipy_label(b != 0, 8)[0], "b's labels after a resume")

    def test_refusals_then_a_fresh_run(self):
        a = random_mask((400000, 64), 0.45)
        np.save(self.p("in.npy"), a)
        out = self.p("d.raw")
        argv = [OOCLABEL, self.p("in.npy"), out, "--connectivity", "8"]
        # Another band plan: pass 1's local numbers are its bands'; refused, naming the way on.
        self.stop_in_second_pass(argv + SLOW, out + ".partial.journal")
        r = self.run_tool(argv + ["--band-rows", "3", "--threads", "1", "--resume"], code=2)
        self.assertIn("not one of the first pass's bands", r.stderr)
        self.assertIn("without --resume", r.stderr)
        # A damaged table: refused, nothing taken from it.
        self.stop_in_second_pass(argv + SLOW, out + ".partial.journal")
        table = out + ".partial.pass-0.table"
        with open(table, "r+b") as f:
            f.seek(8 * 1000)
            w = f.read(8)
            f.seek(8 * 1000)
            f.write(bytes([w[0] ^ 1]) + w[1:])
        r = self.run_tool(argv + SLOW + ["--resume"], code=3)
        self.assertIn("damaged", r.stderr)
        self.assertIn("without --resume", r.stderr)
        self.run_tool(argv)
        got = np.fromfile(out, np.uint32).reshape(a.shape)
        self.same(got, scipy_label(a != 0, 8)[0], "a fresh run after the refusals")


if __name__ == "__main__":
    unittest.main(argv=["test_label_resume"] + _REST)
