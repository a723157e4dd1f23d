#!/usr/bin/env python3
"""The labels' type (issue 47): label-type=u64 (ooclabel --label-type u64) writes u64 labels equal
to scipy.ndimage.label's numbers into raw, .npy, TIFF and Zarr outputs; auto (the default) takes
u32, or u64 where the image could hold more components than u32 numbers; an explicit u32 whose
count does not fit is refused after the first pass, naming the way on, with nothing written;
u64 labels under 3 MPI ranks equal scipy too.
The u32 limit is lowered through OOC_LABEL_MAX_FOR_TESTS (the stage's test hook) so that small
images reach it; the images are random masks with many components, and every output is
poisoned (a stale file of the output's name) before the run.

Usage: test_label_types.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import json
import os
import subprocess
import unittest

import numpy as np

import cli_args  # beside this file
from label_cases import LabelCase, scipy_label

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCLABEL = os.path.join(BIN, "ooclabel")
OOCRUN = os.path.join(BIN, "oocrun")
rng = np.random.default_rng(4764)
def most_components(shape, conn):
    """The stage's bound: one a sample in two (4, 6, 18), one a 2 x 2 (x 2) block (8, 26)."""
    half = [(s + 1) // 2 for s in shape]
    if conn == 8:
        return int(np.prod(half))
    if conn == 26:
        return int(np.prod(half))
    return (int(np.prod(shape)) + 1) // 2


class LabelTypes(LabelCase):
    def poisoned(self, name):
        path = self.p(name)
        with open(path, "wb") as f:
            f.write(b"\xa5" * 4096)
        return path

    def test_u64_into_every_format(self):
        # Explicit u64: the values of scipy's labels (as uint64) in every writer, with bands of
        # 1 and 3 rows (components across bands) and the default plan.
        a = (rng.random((45, 71)) < 0.3).astype(np.uint8) * rng.integers(1, 250, (45, 71),
                                                                          dtype=np.uint8)
        np.save(self.p("in.npy"), a)
        for conn in (4, 8):
            want, n = scipy_label(a != 0, conn, output=np.uint64)
            self.assertGreater(n, 50)
            for rows in (["--band-rows", "1"], ["--band-rows", "3"], []):
                with self.subTest(conn=conn, rows=rows):
                    out = self.poisoned("o.npy")
                    self.run_tool([OOCLABEL, self.p("in.npy"), out, "--connectivity", str(conn),
                                   "--label-type", "u64"] + rows)
                    got = np.load(out)
                    self.assertEqual(got.dtype, np.uint64)
                    self.assertTrue(np.array_equal(got, want), f"{conn} {rows}")
        want, _ = scipy_label(a != 0, 8, output=np.uint64)
        raw = self.poisoned("o.raw")
        self.run_tool([OOCLABEL, self.p("in.npy"), raw, "--connectivity", "8",
                       "--label-type", "u64"])
        self.assertTrue(np.array_equal(np.fromfile(raw, "<u8").reshape(a.shape), want))
        try:
            import tifffile
        except ImportError:
            tifffile = None
        if tifffile:
            tif = self.poisoned("o.tif")
            self.run_tool([OOCLABEL, self.p("in.npy"), tif, "--connectivity", "8",
                           "--label-type", "u64"])
            got = tifffile.imread(tif)
            self.assertEqual(got.dtype, np.uint64)
            self.assertTrue(np.array_equal(got, want), "TIFF")
        try:
            import zarr
        except ImportError:
            zarr = None
        if zarr:
            store = self.p("o.zarr")
            self.run_tool([OOCRUN, self.p("in.npy"), store,
                           "label connectivity=8 label-type=u64", "--chunk", "16"])
            g = zarr.open_group(store, mode="r")  # OME-Zarr: level 0 is the first dataset
            got = np.asarray(g[g.attrs["multiscales"][0]["datasets"][0]["path"]])
            self.assertEqual(got.dtype, np.uint64)
            self.assertTrue(np.array_equal(got, want), "Zarr")

    def test_volume_u64(self):
        v = (rng.random((6, 13, 17)) < 0.35).astype(np.uint8)
        np.save(self.p("v.npy"), v)
        for conn in (6, 26):
            want, _ = scipy_label(v != 0, conn, output=np.uint64)
            out = self.poisoned("v_out.npy")
            self.run_tool([OOCLABEL, self.p("v.npy"), out, "--connectivity", str(conn),
                           "--volume", "--label-type", "u64", "--band-rows", "2"])
            got = np.load(out)
            self.assertEqual(got.dtype, np.uint64)
            self.assertTrue(np.array_equal(got, want), f"volume {conn}")

    def test_auto_promotes_by_the_bound_and_u32_refuses(self):
        # The u32 limit lowered: auto takes u64 once the image's bound passes it (the values
        # still scipy's), u32 below; an explicit u32 whose count passes it is refused after the
        # first pass, naming u64, with no output; regions and min-size promote alike.
        a = (rng.random((40, 50)) < 0.45).astype(np.uint8)
        np.save(self.p("in.npy"), a)
        for conn in (4, 8):
            want, n = scipy_label(a != 0, conn, output=np.uint64)
            bound = most_components(a.shape, conn)
            for limit, wide in ((bound - 1, True), (bound, False)):
                with self.subTest(conn=conn, limit=limit):
                    out = self.poisoned("auto.npy")
                    r = self.run_tool([OOCLABEL, self.p("in.npy"), out, "--connectivity",
                                       str(conn), "--stats", "json"],
                                      env={"OOC_LABEL_MAX_FOR_TESTS": str(limit)})
                    got = np.load(out)
                    self.assertEqual(got.dtype, np.uint64 if wide else np.uint32)
                    self.assertTrue(np.array_equal(got, want.astype(got.dtype)))
                    self.assertEqual(json.loads(r.stdout)["components"], n)
            out = self.p("refused.npy")
            if os.path.exists(out):
                os.remove(out)
            r = self.run_tool([OOCLABEL, self.p("in.npy"), out, "--connectivity", str(conn),
                               "--label-type", "u32"], env={"OOC_LABEL_MAX_FOR_TESTS": str(n - 1)},
                              code=2)
            for w in (str(n), "components", "u32", "label-type=u64"):
                self.assertIn(w, r.stderr)
            self.assertFalse(os.path.exists(out))
            self.assertFalse(os.path.exists(out + ".partial"))
            # A count that just fits u32 passes.
            self.run_tool([OOCLABEL, self.p("in.npy"), out, "--connectivity", str(conn),
                           "--label-type", "u32"], env={"OOC_LABEL_MAX_FOR_TESTS": str(n)})
            self.assertTrue(np.array_equal(np.load(out), want.astype(np.uint32)))
            os.remove(out)

    def test_u64_under_mpi_ranks(self):
        # The ranks agree on the numbering whatever the labels' type.
        mpirun, env = self.mpirun()
        a = (rng.random((61, 47)) < 0.35).astype(np.uint8)
        np.save(self.p("in.npy"), a)
        want, _ = scipy_label(a != 0, 8, output=np.uint64)
        out = self.poisoned("mpi.npy")
        r = subprocess.run([mpirun, "-np", "3", OOCLABEL, self.p("in.npy"), out, "--connectivity",
                            "8", "--label-type", "u64", "-q"], capture_output=True, text=True,
                           env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = np.load(out)
        self.assertEqual(got.dtype, np.uint64)
        self.assertTrue(np.array_equal(got, want))

    def test_u64_refused_where_a_filter_would_take_it(self):
        np.save(self.p("in.npy"), np.ones((8, 9), np.uint8))
        out = self.p("x.npy")
        r = self.run_tool([OOCRUN, self.p("in.npy"), out, "gaussian sigma=1", "--out-type",
                           "u64"], code=2)
        self.assertIn("labels", r.stderr)
        self.assertFalse(os.path.exists(out))
        r = self.run_tool([OOCLABEL, self.p("in.npy"), out, "--label-type", "u16"], code=2)
        self.assertIn("u16", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=["test_label_types"] + _REST)
