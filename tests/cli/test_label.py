#!/usr/bin/env python3
"""Connected components (ooclabel, and `label` as the last stage of an oocrun pipeline) equal
scipy.ndimage.label byte for byte with the matching structure: images (4, 8) and volumes (6, 18,
26), u8/u16/f32 inputs, one row, one column, one plane, bands of 1 to 7 rows and small
--mem-limit (components across many bands, the table in its scratch file), the same bytes under
every band plan and thread count, all-background and all-foreground inputs, combs and spirals
that merge late, --planes, a poisoned output replaced, the refusals (too many components for u32,
oocrun's label in parts, wrong connectivity, several channels, stages after label) exiting 2 with
nothing written, and --regions (skimage.measure.regionprops_table's columns) and --min-size,
with --intensity (intensity_mean/_min/_max against skimage, the sum and deviation against
scipy.ndimage), the count as the job's result (--stats json "components"), MPI ranks giving one
process's bytes (images, --planes volumes and volumes in 3-D). A resume after SIGTERM in the
second pass: test_label_resume.py.

Usage: test_label.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import json
import os
import subprocess
import unittest

import numpy as np
from scipy import ndimage as ndi

import cli_args  # beside this file
from label_cases import LabelCase, late_merging_image, scipy_label

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCLABEL = os.path.join(BIN, "ooclabel")
OOCRUN = os.path.join(BIN, "oocrun")
rng = np.random.default_rng(4747)


def random_mask(shape, p, dtype):
    m = rng.random(shape) < p
    vals = (rng.random(shape) * 200 + 1).astype(dtype)
    if dtype == np.float32:
        vals[rng.random(shape) < 0.1] = -0.5  # negative values are foreground too
    return np.where(m, vals, 0).astype(dtype)


class LabelCheck(LabelCase):
    def label(self, a, conn=None, *extra, volume=False, out="out.npy"):
        np.save(self.p("in.npy"), a)
        if os.path.exists(self.p(out)):
            os.remove(self.p(out))
        args = [OOCLABEL, self.p("in.npy"), self.p(out)]
        if conn is not None:
            args += ["--connectivity", str(conn)]
        self.run_tool(args + (["--volume"] if volume else []) + list(extra))
        return np.load(self.p(out))

    def same(self, got, want, what):
        self.assertEqual(got.dtype, np.uint32, what)
        self.assertEqual(got.shape, want.shape, what)
        self.assertTrue(np.array_equal(got, want),
                        f"{what}: {np.count_nonzero(got != want)} labels differ")

    def test_01_images_match_scipy(self):
        # Rows are read 64 samples at a time: widths about and past 64 and 128, runs across the
        # blocks (density 0.9), and every type.
        shapes = [(61, 83), (1, 97), (89, 1), (40, 40), (9, 64), (12, 129), (7, 300)]
        types = [np.uint8, np.uint16, np.float32, np.int16, np.uint8, np.float64, np.uint8]
        for conn in (4, 8):
            for i, shape in enumerate(shapes):
                a = random_mask(shape, 0.9 if shape[1] >= 129 else 0.45, types[i])
                want, n = scipy_label(a != 0, conn)
                if shape == (61, 83):
                    self.assertGreater(n, 20)
                for rows in ("1", "3", "7", None):
                    extra = ["--band-rows", rows] if rows else []
                    with self.subTest(conn=conn, shape=shape, rows=rows):
                        self.same(self.label(a, conn, *extra), want, f"{shape} {conn} {rows}")

    def test_02_volumes_match_scipy(self):
        shapes = [(6, 23, 29), (1, 17, 19), (5, 1, 13), (4, 11, 1)]
        types = [np.uint8, np.uint16, np.float32]
        for conn in (6, 18, 26):
            for i, shape in enumerate(shapes):
                a = random_mask(shape, 0.35, types[(i + conn) % 3])
                want, n = scipy_label(a != 0, conn)
                for rows in ("1", "5", None):
                    extra = ["--band-rows", rows] if rows else []
                    with self.subTest(conn=conn, shape=shape, rows=rows):
                        self.same(self.label(a, conn, *extra, volume=True), want,
                                  f"{shape} {conn} {rows}")
        # scipy's default structure: 4 on an image, 6 on a volume.
        a = random_mask((5, 19, 21), 0.4, np.uint8)
        self.same(self.label(a, None, volume=True), scipy_label(a != 0, 6)[0], "default 3-D")
        b = a[2]
        self.same(self.label(b), scipy_label(b != 0, 4)[0], "default 2-D")

    def test_03_pipeline_last_stage(self):
        a = (rng.random((97, 131)) * 100).astype(np.float32)
        np.save(self.p("f.npy"), a)
        want, _ = scipy_label(a > 60, 8)
        for extra in ([], ["--band-rows", "2", "--threads", "2"]):
            self.run_tool([OOCRUN, self.p("f.npy"), self.p("o.npy"),
                           "threshold value=60 ! label connectivity=8", *extra])
            self.same(np.load(self.p("o.npy")), want, f"threshold ! label {extra}")
        # A volume's 3-D filter before it: the stages before label run in both passes.
        v = (rng.random((7, 25, 27)) * 100).astype(np.float32)
        np.save(self.p("v.npy"), v)
        self.run_tool([OOCRUN, self.p("v.npy"), self.p("o.npy"),
                       "maximum size=3 ! threshold value=97 ! label connectivity=26",
                       "--band-rows", "4", "--border", "nearest"])
        m = ndi.maximum_filter(v, size=3, mode="nearest") > 97
        self.same(np.load(self.p("o.npy")), scipy_label(m, 26)[0], "maximum ! threshold ! label")

    def test_04_late_merges_across_many_bands(self):
        # A comb whose teeth join only at the bottom row, and a spiral: each component spans
        # every band and merges late; diagonal-only touches across band corners.
        comb = np.zeros((57, 64), np.uint8)
        comb[:, ::2] = 1
        comb[-1, :] = 1
        spiral = np.zeros((61, 61), np.uint8)
        y, x, d = 0, 0, 0
        lo, hi = 0, 60
        for _ in range(15):
            spiral[lo, lo:hi + 1] = 1
            spiral[lo:hi + 1, hi] = 1
            spiral[hi, lo + 2:hi + 1] = 1
            spiral[lo + 2:hi + 1, lo + 2] = 1
            lo, hi = lo + 4, hi - 4
            if lo + 2 >= hi:
                break
        diag = np.eye(40, dtype=np.uint8)[::-1] | np.eye(40, dtype=np.uint8)
        for name, a in (("comb", comb), ("spiral", spiral), ("diagonals", diag)):
            for conn in (4, 8):
                want, _ = scipy_label(a != 0, conn)
                for rows in ("1", "2", "7"):
                    with self.subTest(name=name, conn=conn, rows=rows):
                        self.same(self.label(a, conn, "--band-rows", rows), want,
                                  f"{name} {conn} {rows}")
        # Many components under a small budget: the provisional table in its scratch file.
        a = random_mask((700, 640), 0.3, np.uint8)
        want, n = scipy_label(a != 0, 4)
        self.assertGreater(n, 40000)
        self.same(self.label(a, 4, "--mem-limit", "1M"), want, "table in a file")
        # A volume whose columns join only in the last plane.
        v = np.zeros((9, 12, 14), np.uint8)
        v[:, ::3, ::3] = 1
        v[-1] = 1
        for conn in (6, 26):
            self.same(self.label(v, conn, "--band-rows", "1", volume=True),
                      scipy_label(v != 0, conn)[0], f"columns {conn}")

    def test_05_bytes_independent_of_the_plan(self):
        a = random_mask((150, 77), 0.5, np.uint8)
        v = random_mask((6, 30, 33), 0.4, np.uint8)
        for arr, conn, vol in ((a, 8, False), (v, 26, True)):
            want = self.label(arr, conn, volume=vol).tobytes()
            for extra in (["--band-rows", "1"], ["--band-rows", "4", "--threads", "1"],
                          ["--band-rows", "6", "--threads", "2"], ["--mem-limit", "512K"]):
                with self.subTest(conn=conn, extra=extra):
                    self.assertEqual(self.label(arr, conn, *extra, volume=vol).tobytes(), want)

    def test_06_empty_full_and_planes(self):
        for shape, conns, vol in (((13, 17), (4, 8), False), ((3, 13, 17), (6, 26), True)):
            for conn in conns:
                z = self.label(np.zeros(shape, np.uint8), conn, "--band-rows", "3", volume=vol)
                self.same(z, np.zeros(shape, np.uint32), f"all background {shape}")
                o = self.label(np.full(shape, 7, np.uint16), conn, "--band-rows", "3", volume=vol)
                self.same(o, np.ones(shape, np.uint32), f"all foreground {shape}")
        # --planes: each plane labelled apart, the numbers going on from plane to plane.
        v = random_mask((4, 21, 23), 0.45, np.uint8)
        for conn in (4, 8):
            self.same(self.label(v, conn, "--planes", "--band-rows", "5", volume=True),
                      scipy_label(v != 0, conn, planes_apart=True)[0], f"--planes {conn}")

    def test_07_poisoned_output_replaced(self):
        a = random_mask((45, 38), 0.5, np.uint8)
        want, _ = scipy_label(a != 0, 8)
        np.save(self.p("in.npy"), a)
        for out in ("out.raw", "out.npy"):
            with open(self.p(out), "wb") as f:
                f.write(b"\xa5" * (a.size * 4 + 128))
            self.run_tool([OOCLABEL, self.p("in.npy"), self.p(out), "--connectivity", "8",
                           "--band-rows", "4"])
            got = (np.fromfile(self.p(out), np.uint32).reshape(a.shape) if out.endswith(".raw")
                   else np.load(self.p(out)))
            self.same(got, want, out)

    def test_08_refusals(self):
        a = random_mask((30, 31), 0.5, np.uint8)
        n = scipy_label(a != 0, 4)[1]
        np.save(self.p("in.npy"), a)
        out = self.p("refused.npy")

        def refused(args, words, env=None):
            r = self.run_tool(args, env=env, code=2)
            for w in words:
                self.assertIn(w, r.stderr)
            self.assertFalse(os.path.exists(out), args)
            self.assertFalse(os.path.exists(out + ".partial"), args)

        base = [OOCLABEL, self.p("in.npy"), out]
        # More components than u32 labels hold (the limit lowered for the test): refused where
        # u32 is asked for (auto and u64: test_label_types.py).
        refused(base + ["--band-rows", "3", "--label-type", "u32"],
                ["components", "u32", "--label-type u64"],
                env={"OOC_LABEL_MAX_FOR_TESTS": str(n - 1)})
        self.run_tool(base + ["--label-type", "u32"], env={"OOC_LABEL_MAX_FOR_TESTS": str(n)})
        os.remove(out)
        # oocrun's label stage in parts (ooclabel's: test_label_parts.py).
        refused([OOCRUN, self.p("in.npy"), out, "label", "--part", "0/2"], ["label", "--part"])
        refused(base + ["--connectivity", "5"], ["connectivity=5", "4 or 8"])
        np.save(self.p("v.npy"), np.zeros((3, 8, 9), np.uint8))
        refused([OOCLABEL, self.p("v.npy"), out, "--connectivity", "8"], ["6, 18 or 26"])
        refused([OOCRUN, self.p("in.npy"), out, "label ! gaussian sigma=1"], ["last stage"])
        np.save(self.p("rgb.npy"), np.zeros((8, 9, 3), np.uint8))
        refused([OOCLABEL, self.p("rgb.npy"), out], ["one channel"])
        # Reduced-resolution levels of labels (2 x 2 means would name no component), from either
        # tool, before any output is made; a COG without overviews is written.
        for name, extra in (("l.zarr", ["--pyramid"]), ("l.tif", ["--levels", "2"]),
                            ("l.tif", ["--cog"])):
            for argv in ([OOCLABEL, self.p("in.npy"), self.p(name)],
                         [OOCRUN, self.p("in.npy"), self.p(name), "label"]):
                r = self.run_tool(argv + extra, code=2)
                self.assertIn("labels take no reduced-resolution levels", r.stderr)
                self.assertFalse(os.path.exists(self.p(name)), argv + extra)
        self.run_tool([OOCLABEL, self.p("in.npy"), self.p("l.tif"), "--cog", "--levels", "0"])
        self.assertTrue(os.path.exists(self.p("l.tif")))

    def test_09_regions_and_min_size(self):
        # The regions table against skimage.measure.regionprops_table's definitions (label, area,
        # bbox from and to, exclusive; centroid: the mean coordinates), computed with scipy; a
        # minimum size as skimage's remove_small_objects then label.
        def props(lab, n):
            t = {"label": np.arange(1, n + 1),
                 "area": np.bincount(lab.ravel(), minlength=n + 1)[1:]}
            boxes = ndi.find_objects(lab)
            d = lab.ndim
            for i in range(d):
                t["bbox-%d" % i] = np.array([b[i].start for b in boxes])
            for i in range(d):
                t["bbox-%d" % (d + i)] = np.array([b[i].stop for b in boxes])
            c = np.array(ndi.center_of_mass(np.ones_like(lab), lab, np.arange(1, n + 1)))
            for i in range(d):
                t["centroid-%d" % i] = c[:, i]
            return t

        for shape, conn, vol in (((60, 70), 8, False), ((6, 20, 21), 6, True),
                                 ((5, 18, 19), 26, True)):
            a = random_mask(shape, 0.4, np.uint16)
            for min_size in (0, 3):
                with self.subTest(shape=shape, conn=conn, min_size=min_size):
                    got = self.label(a, conn, "--regions", self.p("r.csv"), "--min-size",
                                     str(min_size), "--band-rows", "3", volume=vol)
                    want, n = scipy_label(a != 0, conn)
                    if min_size:
                        keep = np.bincount(want.ravel()) >= min_size
                        keep[0] = False
                        want, n = scipy_label(keep[want], conn)
                    self.same(got, want, "min-size")
                    t = props(want.astype(np.int64), n)
                    with open(self.p("r.csv")) as f:
                        header = f.readline().strip().split(",")
                        rows = np.loadtxt(f, delimiter=",", ndmin=2)
                    self.assertEqual(header, list(t))
                    self.assertEqual(rows.shape[0], n)
                    for j, k in enumerate(header):
                        np.testing.assert_allclose(rows[:, j], t[k], rtol=1e-12, err_msg=k)
        # The stage's parameters in a pipeline.
        a = random_mask((40, 45), 0.5, np.uint8)
        np.save(self.p("in.npy"), a)
        self.run_tool([OOCRUN, self.p("in.npy"), self.p("o.npy"), "label connectivity=4 "
                       "min-size=2 regions=" + self.p("p.csv")])
        want = scipy_label(a != 0, 4)[0]
        keep = np.bincount(want.ravel()) >= 2
        keep[0] = False
        self.same(np.load(self.p("o.npy")), scipy_label(keep[want], 4)[0], "pipeline min-size")
        self.assertTrue(os.path.exists(self.p("p.csv")))

    def test_10_intensity(self):
        # --intensity: skimage.measure.regionprops_table's intensity_mean/_min/_max, and the sum
        # and the population deviation (scipy.ndimage.sum, standard_deviation) of each region,
        # under band plans of 1 and 4 rows and a small --mem-limit (tables in scratch files); one
        # region (all foreground) and none (a header alone).
        try:
            from skimage.measure import regionprops_table
        except ImportError:
            self.skipTest("scikit-image is not installed (python3-skimage)")

        def check(a, inten, conn, vol, extra, what):
            np.save(self.p("i.npy"), inten)
            got = self.label(a, conn, "--regions", self.p("r.csv"), "--intensity",
                             self.p("i.npy"), *extra, volume=vol).astype(np.int64)
            want, n = scipy_label(a != 0, conn)
            self.same(got.astype(np.uint32), want, what)
            with open(self.p("r.csv")) as f:
                header = f.readline().strip().split(",")
                body = f.read()
            rows = (np.loadtxt(body.splitlines(), delimiter=",", ndmin=2) if body else
                    np.zeros((0, len(header))))
            self.assertEqual(header[-5:], ["intensity_sum", "intensity_mean", "intensity_min",
                                           "intensity_max", "intensity_std"], what)
            self.assertEqual(rows.shape[0], n, what)
            if n == 0:
                return
            t = regionprops_table(got, inten, properties=(
                "label", "area", "bbox", "centroid", "intensity_mean", "intensity_min",
                "intensity_max"))
            idx = np.arange(1, n + 1)
            f64 = inten.astype(np.float64)
            t["intensity_sum"] = ndi.sum(f64, got, idx)
            t["intensity_std"] = ndi.standard_deviation(f64, got, idx)
            # float32 images: skimage's mean is NumPy's float32 mean; ooc's sums are float64.
            tol = 1e-5 if inten.dtype == np.float32 else 1e-10
            for k, v in t.items():
                np.testing.assert_allclose(rows[:, header.index(k)], v, rtol=tol, atol=1e-9,
                                           err_msg=what + " " + k)

        cases = (((57, 66), 8, False, np.float32), ((53, 40), 4, False, np.uint8),
                 ((6, 17, 19), 26, True, np.uint16), ((5, 16, 18), 6, True, np.int16),
                 ((4, 15, 13), 18, True, np.float64))
        for shape, conn, vol, itype in cases:
            a = random_mask(shape, 0.45, np.uint8)
            inten = (rng.random(shape) * 300 - (100 if itype in (np.int16, np.float32,
                                                                 np.float64) else 0))
            inten = (inten + (1e6 if itype == np.float64 else 0)).astype(itype)
            for extra in ([], ["--band-rows", "1"], ["--band-rows", "4", "--threads", "2"],
                          ["--mem-limit", "512K"]):
                with self.subTest(shape=shape, conn=conn, extra=extra):
                    check(a, inten, conn, vol, extra, "%s %s" % (shape, extra))
        inten = rng.random((9, 11)).astype(np.float32)
        check(np.ones((9, 11), np.uint8), inten, 8, False, ["--band-rows", "2"], "one region")
        check(np.zeros((9, 11), np.uint8), inten, 8, False, [], "no region")
        # An intensity image of another size, and one without a regions table, are refused.
        np.save(self.p("in.npy"), np.ones((9, 11), np.uint8))
        np.save(self.p("i2.npy"), np.ones((9, 12), np.float32))
        for args, word in (([self.p("i2.npy"), "--regions", self.p("x.csv")], "same size"),
                           ([self.p("i.npy")], "regions")):
            r = self.run_tool([OOCLABEL, self.p("in.npy"), self.p("x.npy"), "--intensity"] + args,
                              code=2)
            self.assertIn(word, r.stderr)
            self.assertFalse(os.path.exists(self.p("x.npy")) or os.path.exists(self.p("x.csv")))

    def test_11_count_is_the_jobs_result(self):
        # The count comes out of the job (--stats json's "components", the summary line), after
        # --min-size's drops too, and from oocrun's label stage: nobody scans the labels for it.
        a = random_mask((40, 37), 0.45, np.uint8)
        want, n = scipy_label(a != 0, 8)
        kept = int(np.count_nonzero(np.bincount(want.ravel())[1:] >= 3))
        np.save(self.p("in.npy"), a)
        for tool, extra, count in (
                ([OOCLABEL], ["--connectivity", "8"], n),
                ([OOCLABEL], ["--connectivity", "8", "--min-size", "3"], kept),
                ([OOCRUN], ["label connectivity=8"], n)):
            out = self.p("c.npy")
            r = subprocess.run(tool + [self.p("in.npy"), out] + extra +
                               ["--band-rows", "3", "--stats", "json"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["components"], count, extra)
            if tool == [OOCLABEL]:
                self.assertIn("ooclabel: %d components" % count, r.stderr)
            os.remove(out)

    def test_13_under_a_memory_cgroup(self):
        # Both passes and the table inside --mem-limit: 128 MiB of blobs (32768 components) to
        # null: under 48M in a 200M memory cgroup (test_hostile_limits.py's, skipped where none
        # can be made), the peak RSS under the limit plus the process's code (about 40 MiB).
        try:
            os.environ.setdefault("OOC_BIN_DIR", BIN)
            from test_hostile_limits import MemoryCgroup
            from hostile_support import run
        except Exception as e:  # noqa: BLE001 (its module's setup: no cgroup test here)
            self.skipTest("test_hostile_limits.py's cgroup: %s" % e)
        limit = 200 << 20
        with MemoryCgroup(limit) as cg:
            r = run([OOCLABEL, "synth:gaussian-spots", "null:", "--width", "8192", "--height",
                     "16384", "--type", "u8", "--connectivity", "8", "--mem-limit", "48M",
                     "--stats", "json", "-q"], timeout=120, preexec_fn=cg.preexec,
                    measure_rss=True)
            peak, kills = cg.peak(), cg.oom_kills()
        self.assertEqual(r.rc, 0, str(r))
        self.assertEqual(kills, 0, "the cgroup saw an OOM kill\n%s" % r)
        self.assertEqual(json.loads(r.out)["components"], 8192 * 16384 // 4096, str(r))
        if peak is not None:
            self.assertLessEqual(peak, limit, str(r))
        self.assertLess(r.rss_kb, (48 << 20) // 1024 + 40 * 1024, str(r))


    def test_14_mpi_ranks_equal_one_process(self):
        # Each rank labels its rows; the ranks join their first and last rows' runs and agree on
        # scipy's numbering. One image stacks a comb, a spiral, crossing diagonals and random
        # blobs, beside a comb whose teeth span every rank and join only in the last row; a
        # --planes volume cut inside and at planes, and in 3-D; regions with min-size.
        mpirun, env = self.mpirun()

        def mpi(ranks, a, args, code=0):
            np.save(self.p("in.npy"), a)
            out = self.p("mpi.npy")
            r = subprocess.run([mpirun, "-np", str(ranks), OOCLABEL, self.p("in.npy"), out] +
                               args + ["-q"], capture_output=True, text=True, env=env,
                               timeout=120)
            self.assertEqual(r.returncode, code, r.stderr)
            return r if code else np.load(out)

        a = late_merging_image(random_mask((63, 64), 0.45, np.uint8))
        for ranks, conn, extra in ((3, 4, []), (4, 8, ["--band-rows", "2"])):
            with self.subTest(ranks=ranks, conn=conn):
                self.same(mpi(ranks, a, ["--connectivity", str(conn)] + extra),
                          scipy_label(a != 0, conn)[0], f"{ranks} ranks, {conn}")
        v = random_mask((5, 13, 17), 0.5, np.uint8)
        self.same(mpi(3, v, ["--connectivity", "8", "--planes", "--volume"]),
                  scipy_label(v != 0, 8, planes_apart=True)[0], "--planes under 3 ranks")
        # A volume in 3-D: the ranks exchange a plane and a row each way (cuts inside planes).
        for ranks, conn in ((2, 6), (3, 18), (4, 26)):
            with self.subTest(ranks=ranks, conn=conn, volume=True):
                self.same(mpi(ranks, v, ["--connectivity", str(conn), "--volume", "--band-rows",
                                         "2"]), scipy_label(v != 0, conn)[0], f"volume {conn}")
        # Regions and min-size: one process's labels and table (to 1e-9: the pieces of a
        # component across ranks fold in another order).
        np.save(self.p("i.npy"), (rng.random(v.shape) * 50).astype(np.float32))
        args = ["--connectivity", "26", "--volume", "--min-size", "3", "--intensity",
                self.p("i.npy")]
        self.run_tool([OOCLABEL, self.p("in.npy"), self.p("one.npy"), "--regions",
                       self.p("one.csv")] + args)
        got = mpi(3, v, args + ["--regions", self.p("mpi.csv")])
        self.same(got, np.load(self.p("one.npy")), "regions under 3 ranks")
        with open(self.p("mpi.csv")) as f, open(self.p("one.csv")) as g:
            self.assertEqual(f.readline(), g.readline())
        t1 = np.loadtxt(self.p("mpi.csv"), delimiter=",", skiprows=1, ndmin=2)
        t2 = np.loadtxt(self.p("one.csv"), delimiter=",", skiprows=1, ndmin=2)
        self.assertEqual(t1.shape, t2.shape)
        self.assertTrue(np.allclose(t1, t2, rtol=1e-9, atol=1e-9))


if __name__ == "__main__":
    unittest.main(argv=["test_label"] + _REST)
