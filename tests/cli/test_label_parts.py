#!/usr/bin/env python3
"""ooclabel in parts as separate processes (issue 47 item 5): each part (--part I/N or --rows A:B)
labels its rows and saves its first and last rows' components beside the output; once every
part has, each part run again (the last one at once) writes its rows with scipy's numbering, and
--finish puts the output in place and removes the faces. The parts run in several orders, with
2 to 5 parts, 4 and 8 connectivity, bands of 1 and 3 rows, u32 and u64 labels and a --planes
volume, on images built to merge late across every cut (a comb whose teeth join in the last row,
a spiral, crossing diagonals, random blobs); the output is compared with scipy.ndimage.label and
with one process's bytes, after a poisoned file of the output's name. --finish before the parts
are done exits 75 naming the rows missing or the count; a part stopped by SIGTERM in its second
pass is run again from the start; volumes in 3-D (6/18/26, cuts inside planes, parts shorter than a plane)
equal scipy; regions tables with intensity and --min-size equal one process's.

Usage: test_label_parts.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import glob
import os
import subprocess
import unittest

import numpy as np

import cli_args  # beside this file
from label_cases import LabelCase, late_merging_image, scipy_label

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCLABEL = os.path.join(BIN, "ooclabel")
rng = np.random.default_rng(4705)


def same_table(case, got, want):
    """Two regions tables: the same header and labels, values equal to 1e-9 relative."""
    with open(got) as f, open(want) as g:
        case.assertEqual(f.readline(), g.readline())
    a = np.loadtxt(got, delimiter=",", skiprows=1, ndmin=2)
    b = np.loadtxt(want, delimiter=",", skiprows=1, ndmin=2)
    case.assertEqual(a.shape, b.shape)
    case.assertTrue(np.array_equal(a[:, :2], b[:, :2]), "labels and areas")
    case.assertTrue(np.allclose(a, b, rtol=1e-9, atol=1e-9))


class LabelParts(LabelCase):
    def in_parts(self, inp, out, splits, order, extra):
        """Runs the parts in `order` until each has written its rows: a part whose faces come
        before the others' exits 75, and runs again after the last one; then --finish."""
        with open(out, "wb") as f:  # poisoned: a stale file of the output's name
            f.write(b"\x5a" * 1000)
        waiting = []
        for i in order:
            r = subprocess.run([OOCLABEL, inp, out] + splits[i] + extra, capture_output=True,
                               text=True)
            self.assertIn(r.returncode, (0, 75), r.stderr)
            if r.returncode == 75:
                self.assertIn("run this part again", r.stderr)
                waiting.append(i)
        self.assertEqual(len(waiting), len(order) - 1, "only the last part goes on at once")
        self.assertTrue(glob.glob(out + ".label-faces.*"))
        f = subprocess.run([OOCLABEL, "--finish", out], capture_output=True, text=True)
        self.assertEqual(f.returncode, 75, f.stderr)
        self.assertIn("components", f.stderr)
        for i in waiting:
            self.run_tool([OOCLABEL, inp, out] + splits[i] + extra)
        self.run_tool([OOCLABEL, "--finish", out])
        self.assertEqual(glob.glob(out + ".label-faces.*"), [], "faces removed by --finish")

    def test_parts_in_any_order_equal_one_process(self):
        a = late_merging_image((rng.random((63, 64)) < 0.45) * rng.integers(1, 255, (63, 64)))
        np.save(self.p("in.npy"), a)
        cases = [(3, 4, [2, 0, 1], []), (4, 8, [0, 1, 2, 3], ["--band-rows", "1"]),
                 (2, 8, [1, 0], ["--band-rows", "3"]), (5, 4, [3, 1, 4, 0, 2], []),
                 (3, 8, [1, 2, 0], ["--label-type", "u64"])]
        for n, conn, order, extra in cases:
            with self.subTest(parts=n, conn=conn, order=order, extra=extra):
                want, count = scipy_label(a != 0, conn)
                one = self.p("one.npy")
                self.run_tool([OOCLABEL, self.p("in.npy"), one, "--connectivity", str(conn)] +
                              extra)
                out = self.p("parts.npy")
                splits = [["--part", f"{i}/{n}"] for i in range(n)]
                self.in_parts(self.p("in.npy"), out, splits, order,
                              ["--connectivity", str(conn)] + extra)
                got = np.load(out)
                self.assertTrue(np.array_equal(got, want.astype(got.dtype)),
                                f"{np.count_nonzero(got != want)} labels differ")
                with open(out, "rb") as f1, open(one, "rb") as f2:
                    self.assertEqual(f1.read(), f2.read(), "one process's bytes")
                os.remove(out)

    def test_rows_and_planes(self):
        # --rows cuts anywhere (inside a plane and at one); a --planes volume's numbers go on.
        v = ((rng.random((5, 13, 17)) < 0.5) * 7).astype(np.uint8)
        np.save(self.p("v.npy"), v)
        want, _ = scipy_label(v != 0, 8, planes_apart=True)
        out = self.p("v.raw")
        splits = [["--rows", "0:20"], ["--rows", "20:26"], ["--rows", "26:65"]]
        self.in_parts(self.p("v.npy"), out, splits, [1, 2, 0],
                      ["--connectivity", "8", "--planes", "--volume"])
        got = np.fromfile(out, np.uint32).reshape(v.shape)
        self.assertTrue(np.array_equal(got, want), "--planes volume in --rows parts")

    def test_finish_names_missing_rows_and_a_stopped_part_runs_again(self):
        a = (rng.random((600000, 64)) < 0.45).astype(np.uint8)
        np.save(self.p("in.npy"), a)
        out = self.p("s.raw")
        base = [OOCLABEL, self.p("in.npy"), out, "--connectivity", "8"]
        r = subprocess.run(base + ["--part", "1/2"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 75, r.stderr)
        f = subprocess.run([OOCLABEL, "--finish", out], capture_output=True, text=True)
        self.assertEqual(f.returncode, 75, f.stderr)
        self.assertIn("rows 0:300000", f.stderr)
        # Part 0 completes the faces and goes on to write its rows: stopped there by SIGTERM
        # once its journal shows rows written (one row a band, one thread), then run again
        # without --resume: from its first pass (a resume: test_label_resume.py).
        self.stop_in_second_pass(base + ["--part", "0/2", "--band-rows", "1", "--threads", "1"],
                                 out + ".partial.part-0-of-2.journal")
        self.run_tool(base + ["--part", "0/2"])
        self.run_tool(base + ["--part", "1/2"])
        self.run_tool([OOCLABEL, "--finish", out])
        got = np.fromfile(out, np.uint32).reshape(a.shape)
        self.assertTrue(np.array_equal(got, scipy_label(a != 0, 8)[0]))

    def test_volumes_in_3d(self):
        # The parts exchange a plane and a row each way: cuts inside planes, parts shorter than
        # a plane (each row a part), 6/18/26, against scipy's 3-D structures.
        for shape, conn, n in (((5, 13, 17), 6, 3), ((6, 7, 9), 18, 4), ((4, 5, 11), 26, 20),
                               ((3, 9, 8), 26, 2)):
            v = (rng.random(shape) < 0.4).astype(np.uint8)
            np.save(self.p("v.npy"), v)
            want, _ = scipy_label(v != 0, conn)
            with self.subTest(shape=shape, conn=conn, parts=n):
                out = self.p("v3.npy")
                order = list(range(n))[::-1]
                self.in_parts(self.p("v.npy"), out, [["--part", f"{i}/{n}"] for i in range(n)],
                              order, ["--connectivity", str(conn), "--volume"])
                got = np.load(out)
                self.assertTrue(np.array_equal(got, want),
                                f"{np.count_nonzero(got != want)} labels differ")
                os.remove(out)

    def test_regions_and_min_size(self):
        # Each part writes its rows of the table, joined in part order by the part that finds
        # them all; a component across parts has its pieces' measurements folded. The labels are
        # one process's bytes, the table its values (the intensity deviation's last bits may
        # differ: the pieces fold in another order), checked against skimage in test_label.py.
        for shape, conn, extra, n in (((120, 70), 8, [], 3), ((90, 50), 4, ["--min-size", "3"], 4),
                                      ((6, 20, 17), 26, ["--volume"], 3),
                                      ((6, 20, 17), 6, ["--volume", "--min-size", "4"], 5)):
            a = (rng.random(shape) < 0.4).astype(np.uint8)
            np.save(self.p("in.npy"), a)
            np.save(self.p("i.npy"), (rng.random(shape) * 100).astype(np.float32))
            args = ["--connectivity", str(conn), "--intensity", self.p("i.npy")] + extra
            self.run_tool([OOCLABEL, self.p("in.npy"), self.p("one.npy"), "--regions",
                           self.p("one.csv")] + args)
            with self.subTest(shape=shape, conn=conn, extra=extra, parts=n):
                out = self.p("rp.npy")
                self.in_parts(self.p("in.npy"), out, [["--part", f"{i}/{n}"] for i in range(n)],
                              list(range(n))[::-1], args + ["--regions", self.p("rp.csv")])
                self.assertTrue(np.array_equal(np.load(out), np.load(self.p("one.npy"))))
                same_table(self, self.p("rp.csv"), self.p("one.csv"))
                self.assertEqual(glob.glob(out + ".label-faces*"), [])
                os.remove(out)
                os.remove(self.p("rp.csv"))


if __name__ == "__main__":
    unittest.main(argv=["test_label_parts"] + _REST)
