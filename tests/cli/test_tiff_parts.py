#!/usr/bin/env python3
"""TIFF outputs made in pieces (issue 31, items 3 and 4), end to end.

Every TIFF made by several writers -- --part I/N in shuffled orders then --finish, --rows ranges,
mpirun ranks, a run stopped by SIGTERM and resumed (also twice, and a stopped part) -- must be
byte-identical (cmp) to one uninterrupted single-process run: strips and tiles, none / deflate /
zstd, 1 and 3 channels, u8 / u16 / f32, SubIFD pyramids and COGs. tifffile, where installed, reads
them. Also: --finish names a part that never ran (exit 3), --rows off the strip or tile grid is
refused (exit 2), nothing appears under the final name before it is complete. The MPI case skips
without mpirun.

Usage: test_tiff_parts.py --bin-dir DIR [unittest options, e.g. -v, -k NAME]
"""
import filecmp
import os
import random
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
RESUMABLE = 75
try:
    import tifffile
except ImportError:
    tifffile = None
# Long enough (about 2 s on one thread of the 2-core CI machine) to be stopped mid-way: the
# direct sum (auto takes the FFT at this radius).
SLOW = ["synth:noise", "--width", "4096", "--height", "6000", "--type", "u16", "--radius", "96",
        "--threads", "1", "--method", "direct", "-q"]


def tool(name):
    return os.path.join(BIN_DIR, name)


def run(cmd, env=None, timeout=300):
    full = dict(os.environ, **(env or {}))
    for k in list(full):  # never a launcher's variables inherited from the caller
        if k.startswith(("OMPI_COMM_WORLD", "PMI_", "PMIX_", "SLURM_")) and k not in (env or {}):
            del full[k]
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=full,
                          timeout=timeout)


class TiffPartsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        cls.d = tempfile.mkdtemp(prefix="ooc-tiff-parts-", dir=base)
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.d, ignore_errors=True)

    def p(self, name):
        TiffPartsTest.n += 1
        return os.path.join(self.d, "%d-%s" % (TiffPartsTest.n, name))

    def conv(self, out, args, *extra, ok=True):
        r = run([tool("oocconv"), args[0], out] + list(args[1:]) + list(extra))
        if ok:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def ref(self, args):
        out = self.p("ref.tif")
        self.conv(out, args)
        return out

    def same(self, ref, out):
        self.assertTrue(os.path.exists(out), out)
        self.assertTrue(filecmp.cmp(ref, out, shallow=False), "%s differs from %s" % (out, ref))
        left = [f for f in os.listdir(self.d) if f.startswith(os.path.basename(out) + ".partial")]
        self.assertEqual(left, [], "the writers' files are left behind")
        if tifffile is not None:
            with tifffile.TiffFile(out) as t, tifffile.TiffFile(ref) as u:
                self.assertEqual(len(t.series[0].levels), len(u.series[0].levels))
                try:
                    self.assertTrue((t.asarray() == u.asarray()).all())
                except ValueError as e:
                    # Debian's tifffile decodes zstd only with imagecodecs, which Debian lacks;
                    # the files are byte-identical (cmp above) all the same.
                    if "imagecodecs" not in str(e):
                        raise

    def parts(self, args, n, order=None):
        out = self.p("parts.tif")
        order = order or random.Random(n).sample(range(n), n)
        for i in order:
            self.conv(out, args, "--part", "%d/%d" % (i, n))
            self.assertFalse(os.path.exists(out))
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def test_parts_in_shuffled_orders(self):
        cases = [  # (type, channels, layout and codec, parts)
            ("u8", 1, [], 2), ("u16", 3, ["--compress", "zstd"], 3),
            ("f32", 1, ["--compress", "deflate"], 5), ("f32", 3, ["--tile", "64"], 3),
            ("u16", 1, ["--tile", "32", "--compress", "deflate"], 5),
            ("u8", 3, ["--tile", "16", "--compress", "zstd", "--level", "5"], 2),
            ("u16", 3, ["--compress", "deflate"], 5), ("u8", 1, ["--compress", "zstd"], 3)]
        for t, c, layout, n in cases:
            with self.subTest(type=t, channels=c, layout=layout, parts=n):
                # Strips of about 1 MiB: 2000 x 1500 gives every case a strip for each part.
                args = ["synth:gradient", "--width", "2000", "--height", "1500", "--type", t,
                        "--channels", str(c), "--sigma", "2.5", "-q"] + layout
                self.same(self.ref(args), self.parts(args, n))

    def test_pyramids_in_parts(self):
        for layout, n in ((["--pyramid", "--tile", "64", "--compress", "zstd"], 5),
                          (["--cog", "--tile", "32", "--compress", "deflate"], 3),
                          (["--pyramid", "--levels", "3", "--tile", "16"], 2)):
            with self.subTest(layout=layout, parts=n):
                args = ["synth:noise", "--width", "700", "--height", "1001", "--type", "u16",
                        "--channels", "3", "--sigma", "1.5", "-q"] + layout
                self.same(self.ref(args), self.parts(args, n))

    def test_rows_ranges(self):
        args = ["synth:gradient", "--width", "900", "--height", "500", "--type", "u16", "--tile",
                "64", "--compress", "zstd", "--pyramid", "--levels", "2", "--sigma", "2", "-q"]
        ref = self.ref(args)
        out = self.p("rows.tif")
        for rows in ("192:500", "0:64", "64:192"):
            self.conv(out, args, "--rows", rows)
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.same(ref, out)

    def test_misaligned_rows_are_refused(self):
        args = ["synth:gradient", "--width", "900", "--height", "500", "--type", "u16", "--tile",
                "64", "--sigma", "2", "-q"]
        out = self.p("bad.tif")
        r = self.conv(out, args, "--rows", "0:100", ok=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("multiples of 64", r.stderr)

    def test_too_many_parts_names_the_tiff_options(self):
        """More parts than rows of strips or tiles: the fix named is TIFF's (fewer parts, --tile),
        never Zarr's --chunk."""
        args = ["synth:gradient", "--width", "500", "--height", "700", "--type", "u16",
                "--sigma", "2", "-q"]
        for layout, says in (([], "a tiled output (--tile N"),
                             (["--tile", "64"], "a smaller --tile"),
                             (["--cog"], "a smaller --tile")):
            with self.subTest(layout=layout):
                out = self.p("many.tif")
                r = self.conv(out, args + layout, "--part", "0/20", ok=False)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("use fewer parts or " + says, r.stderr)
                self.assertNotIn("--chunk", r.stderr)
                self.assertFalse([f for f in os.listdir(self.d)
                                  if f.startswith(os.path.basename(out))])

    def test_finish_names_a_missing_part(self):
        args = ["synth:gradient", "--width", "1000", "--height", "777", "--type", "u16",
                "--compress", "zstd", "--tile", "64", "--sigma", "2", "-q"]
        out = self.p("missing.tif")
        for i in (0, 2):
            self.conv(out, args, "--part", "%d/3" % i)
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("part 1/3", r.stderr)
        self.assertFalse(os.path.exists(out))
        # Running it then finishes the same file as one process.
        self.conv(out, args, "--part", "1/3")
        self.assertEqual(run([tool("oocconv"), "--finish", out]).returncode, 0)
        self.same(self.ref(args), out)

    @unittest.skipUnless(MPIRUN, "mpirun not installed")
    def test_mpirun_three_ranks(self):
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
               "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl": "self,vader",
               "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
        for layout in (["--compress", "zstd"], ["--pyramid", "--tile", "32", "--compress",
                                                "deflate"]):
            with self.subTest(layout=layout):
                args = ["synth:gradient", "--width", "800", "--height", "600", "--type", "f32",
                        "--channels", "3", "--sigma", "2", "-q"] + layout
                out = self.p("mpi.tif")
                r = run([MPIRUN, "-np", "3", tool("oocconv"), args[0], out] + args[1:], env=env,
                        timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.same(self.ref(args), out)

    def stop(self, out, *extra, journal=None):
        """Starts a slow run, sends SIGTERM once it is under way; returns (exit code, stderr).
        A stop's message names the file it kept (a TIFF keeps blocks files, no OUT.partial) and
        the journal: both must exist."""
        proc = subprocess.Popen([tool("oocconv"), SLOW[0], out] + SLOW[1:] + list(extra),
                                stderr=subprocess.PIPE, text=True)
        journal = journal or out + ".partial.journal"
        deadline = time.monotonic() + 60
        while proc.poll() is None and not os.path.exists(journal) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # past the setup: mid-run
        if proc.poll() is not None:
            self.skipTest("the run ended before the signal")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        if proc.returncode == RESUMABLE:
            for key in ("kept '", "journal '"):
                named = err.split(key)[1].split("'")[0]
                self.assertTrue(os.path.exists(named), "the stop names %s: %s" % (named, err))
        return proc.returncode, err

    def test_sigterm_then_resume(self):
        for layout in (["--compress", "zstd"], ["--pyramid", "--tile", "64", "--compress",
                                                 "deflate"]):
            with self.subTest(layout=layout):
                ref = self.p("slow_ref.tif")
                self.conv(ref, SLOW, *layout)
                out = self.p("resumed.tif")
                rc, err = self.stop(out, *layout)
                self.assertEqual(rc, RESUMABLE, err)
                self.assertIn("--resume", err)
                self.assertFalse(os.path.exists(out))
                # Stopped again while resumed, then resumed to the end.
                rc, err = self.stop(out, *layout, "--resume")
                self.assertIn(rc, (0, RESUMABLE), err)
                if rc == RESUMABLE:
                    self.conv(out, SLOW, *layout, "--resume")
                self.same(ref, out)

    def test_stopped_part_resumes(self):
        layout = ["--compress", "zstd", "--tile", "128"]
        ref = self.p("slow_ref.tif")
        self.conv(ref, SLOW, *layout)
        out = self.p("part.tif")
        self.conv(out, SLOW, *layout, "--part", "1/2")
        rc, err = self.stop(out, *layout, "--part", "0/2",
                            journal=out + ".partial.part-0-of-2.journal")
        self.assertEqual(rc, RESUMABLE, err)
        r = run([tool("oocconv"), "--finish", out])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("stopped at row", r.stderr)
        self.conv(out, SLOW, *layout, "--part", "0/2", "--resume")
        self.assertEqual(run([tool("oocconv"), "--finish", out]).returncode, 0)
        self.same(ref, out)


def main():
    unittest.main(argv=[sys.argv[0]] + _REST)


if __name__ == "__main__":
    main()
