#!/usr/bin/env python3
"""--io direct end to end through oocconv (issue 34 item 3).

Outputs made with --io direct (O_DIRECT reads and writes) must be byte-identical (cmp) to --io
mmap runs: raw and .npy, widths whose rows are not multiples of 512 bytes, files that are not a
multiple of the block, odd band heights, several threads, three parts (--part) finished with
--finish, a run stopped by SIGTERM and resumed. --stats json and text say which I/O ran. On a file
system that refuses O_DIRECT (a ramfs mounted for the test when run as root, or /dev/shm on a
kernel whose tmpfs refuses it) the run falls back to the page cache with a note on stderr.

Usage: test_direct_io.py --bin-dir DIR [unittest options, e.g. -v, -k NAME]
"""
import filecmp
import json
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
RESUMABLE = 75


def tool(name):
    return os.path.join(BIN_DIR, name)


def run(cmd, timeout=300, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_", "PMI"))}
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          env=env, **kw)


def direct_refused(directory):
    """Whether the file system of `directory` refuses O_DIRECT at open."""
    probe = os.path.join(directory, ".ooc-direct-probe")
    with open(probe, "wb") as f:
        f.write(b"x")
    try:
        fd = os.open(probe, os.O_RDONLY | os.O_DIRECT)
        os.close(fd)
        return False
    except OSError:
        return True
    finally:
        os.unlink(probe)


class DirectIoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A disk file system: /var/tmp (tmpfs may take O_DIRECT without meaning it).
        cls.d = tempfile.mkdtemp(prefix="ooc-direct-", dir="/var/tmp")
        if direct_refused(cls.d):
            raise unittest.SkipTest("%s refuses O_DIRECT" % cls.d)
        # 1001 x 2999 u16 x 3 channels: rows of 6006 bytes, a file of 18011994 bytes (not a
        # multiple of 4096).
        cls.raw = cls.p("in.raw")
        cls.npy = cls.p("in.npy")
        for path in (cls.raw, cls.npy):
            r = run([tool("oocgen"), path, "--width", "1001", "--height", "2999", "--type", "u16",
                     "--channels", "3", "--pattern", "noise", "-q"])
            assert r.returncode == 0, r.stderr
        cls.raw_opts = ["--width", "1001", "--type", "u16", "--channels", "3"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.d, ignore_errors=True)

    @classmethod
    def p(cls, name):
        return os.path.join(cls.d, name)

    def conv(self, inp, out, io, extra=(), opts=None):
        cmd = [tool("oocconv"), inp, out, "--radius", "3", "--io", io, "-q"]
        cmd += list(self.raw_opts if opts is None and inp.endswith(".raw") else opts or [])
        r = run(cmd + list(extra))
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def assertSame(self, a, b):
        self.assertTrue(filecmp.cmp(a, b, shallow=False), "%s differs from %s" % (a, b))

    def test_raw_and_npy_bands_threads(self):
        for inp in (self.raw, self.npy):
            ext = os.path.splitext(inp)[1]
            ref = self.p("ref" + ext)
            self.conv(inp, ref, "mmap")
            for extra in (["--band-rows", "37", "--threads", "2"], ["--band-rows", "500"],
                          ["--band-rows", "1", "--slots", "3", "--threads", "1"]):
                with self.subTest(input=inp, extra=extra):
                    out = self.p("d" + ext)
                    r = self.conv(inp, out, "direct", extra + ["--stats", "json"])
                    stats = json.loads(r.stdout)
                    self.assertEqual(stats["input"]["io"], "direct")
                    self.assertEqual(stats["output"]["io"], "direct")
                    self.assertSame(ref, out)
                    os.unlink(out)

    def test_stats_text_and_mmap(self):
        r = self.conv(self.raw, "null:", "mmap", ["--stats", "text"])
        self.assertIn("io           input mmap, output none", r.stdout)
        r = self.conv(self.npy, self.p("t.raw"), "direct", ["--stats", "text"], opts=[])
        self.assertIn("io           input direct, output direct", r.stdout)

    def test_parts_then_finish(self):
        ref = self.p("pref.npy")
        self.conv(self.raw, ref, "mmap")
        out = self.p("parts.npy")
        for i in (2, 0, 1):  # out of order: parts share the blocks at their boundaries
            self.conv(self.raw, out, "direct", ["--part", "%d/3" % i, "--band-rows", "101"])
        self.assertFalse(os.path.exists(out))
        r = run([tool("oocconv"), "--finish", out, "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(ref, out)

    def test_sigterm_then_resume(self):
        slow = ["synth:noise", "--width", "4099", "--height", "12000", "--radius", "96",
                "--threads", "1", "--method", "direct", "--io", "direct", "-q"]
        ref = self.p("sref.raw")
        r = run([tool("oocconv"), slow[0], ref] + slow[1:-3] + ["--io", "mmap", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = self.p("s.raw")
        proc = subprocess.Popen([tool("oocconv"), slow[0], out] + slow[1:],
                                stderr=subprocess.PIPE, text=True)
        time.sleep(0.8)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        if proc.returncode == 0:
            self.skipTest("the run ended before the signal")
        self.assertEqual(proc.returncode, RESUMABLE, err)
        with open(out + ".partial.journal") as f:
            self.assertIn("done ", f.read())
        r = run([tool("oocconv"), slow[0], out] + slow[1:] + ["--resume"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSame(ref, out)

    def test_refused_falls_back_with_a_note(self):
        mount = None
        where = "/dev/shm" if os.path.isdir("/dev/shm") and direct_refused("/dev/shm") else None
        if where is None and os.geteuid() == 0 and shutil.which("mount"):
            mount = tempfile.mkdtemp(prefix="ooc-ramfs-", dir="/var/tmp")
            if run(["mount", "-t", "ramfs", "none", mount]).returncode == 0:
                where = mount
            else:
                os.rmdir(mount)
                mount = None
        if where is None:
            self.skipTest("no file system here refuses O_DIRECT (tmpfs takes it since Linux 6.6; "
                          "a ramfs needs root)")
        try:
            d = tempfile.mkdtemp(prefix="ooc-nodirect-", dir=where)
            inp = os.path.join(d, "in.npy")
            shutil.copyfile(self.npy, inp)
            ref = self.p("fref.npy")
            self.conv(self.npy, ref, "mmap")
            # A ramfs says it has no free space, which an output refuses up front: the output
            # then goes to the disk and only the input falls back.
            out = os.path.join(d if mount is None else self.d, "out.npy")
            r = run([tool("oocconv"), inp, out, "--radius", "3", "--io", "direct", "-q",
                     "--stats", "json"])
            self.assertEqual(r.returncode, 0, r.stderr)
            notes = [l for l in r.stderr.splitlines() if "refuses direct I/O" in l]
            self.assertEqual(len(notes), 2 if mount is None else 1, r.stderr)
            self.assertTrue(all(l.startswith("ooc: note: ") for l in notes), r.stderr)
            stats = json.loads(r.stdout)
            self.assertTrue(stats["input"]["io"].startswith("mmap (O_DIRECT refused"), stats)
            self.assertTrue(stats["output"]["io"].startswith(
                "buffered (O_DIRECT refused" if mount is None else "direct"), stats)
            self.assertSame(ref, out)
            os.unlink(out)
            shutil.rmtree(d)
        finally:
            if mount:
                run(["umount", mount])
                os.rmdir(mount)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
