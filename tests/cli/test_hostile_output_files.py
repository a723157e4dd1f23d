#!/usr/bin/env python3
"""Hostile use of the tools' output files: links, device nodes, FIFOs, inputs named
OUTPUT.partial, leftover .partial files (hostile_support.py says what every hostile check expects).
Usage: test_hostile_output_files.py --bin-dir DIR [unittest options]"""

import os
import shutil
import stat
import subprocess
import sys

import numpy as np

import hostile_support
from hostile_support import (HostileBase, IS_ROOT, _PRIVATE_DEV, digest, main,
    mount_namespace_usable, random_image, run, tifffile, tool)

# The module's shared inputs: made in a folder before its tests, removed after them.
setUpModule = hostile_support.setUpModule
tearDownModule = hostile_support.tearDownModule


# =============================================================================================
# 1-4. Output files: links, device nodes, inputs named OUTPUT.partial, leftover .partial files
# =============================================================================================

class OutputFiles(HostileBase):
    def test_output_symlink_to_regular_file_is_written_through(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        opts = ["--width", "100", "--radius", "3"]
        plain = self.plain_run(a, "plain.raw", *opts)
        os.mkdir(self.p("sub"))
        target = self.p("sub", "target.raw")
        with open(target, "wb") as f:
            f.write(b"old contents")
        os.symlink("sub/target.raw", self.p("o.raw"))
        r = self.oocconv(a, "o.raw", *opts, cwd=self.d)
        self.assertExit(r, 0)
        self.assertTrue(os.path.islink(self.p("o.raw")), "the link was replaced by a file\n%s" % r)
        self.assertEqual(os.readlink(self.p("o.raw")), "sub/target.raw")
        self.assertSameBytes(target, plain, r)
        self.assertNoPartial(self.d, self.p("sub"), r=r)

    def test_output_dangling_symlink_refused(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        os.symlink("nowhere.raw", self.p("o.raw"))
        r = self.oocconv(a, "o.raw", "--width", "100", "--radius", "3", cwd=self.d)
        self.assertExit(r, 2)
        self.assertTrue(os.path.islink(self.p("o.raw")), "the link is gone\n%s" % r)
        self.assertEqual(os.readlink(self.p("o.raw")), "nowhere.raw")
        self.assertAbsent(self.p("nowhere.raw"), r)
        self.assertNoPartial(r=r)

    # Device nodes: the small image (20 KB) fits a pipe's buffer, so a tool that does write
    # into /dev/stdout cannot block on it.
    def _device_cases(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        return [("oocconv", [tool("oocconv"), a, None, "--width", "100", "--radius", "1"]),
                ("oocgen", [tool("oocgen"), None, "--width", "100", "--height", "50"])]

    def _run_on_dev_path(self, cmd, dev_path, **kw):
        """Runs cmd (None = dev_path) where dev_path is in /dev; returns (Result, report) where
        report is the text written in the private namespace ('' when run directly)."""
        cmd = [dev_path if c is None else c for c in cmd]
        if not IS_ROOT:
            return run(cmd, timeout=20, **kw), ""
        if not mount_namespace_usable():
            self.skipTest("as root without a usable mount namespace (unshare): a tool that "
                          "replaces its output would replace the machine's %s" % dev_path)
        report = self.p("dev_report.txt")
        env = dict(os.environ, OOC_REPORT=report)
        r = run(["unshare", "--mount", "--propagation", "private", "sh", "-c", _PRIVATE_DEV,
                 "sh"] + cmd, timeout=20, env=env, **kw)
        if not os.path.exists(report):  # the namespace itself failed: the asserts show r
            return r, ""
        with open(report) as f:
            return r, f.read()

    def test_output_dev_null_refused(self):
        for name, cmd in self._device_cases():
            with self.subTest(tool=name):
                r, report = self._run_on_dev_path(cmd, "/dev/null")
                self.assertExit(r, 2)
                if IS_ROOT:
                    self.assertIn("/dev/null: character special file", report, str(r))
                    self.assertNotIn("null.partial", report, "/dev/null.partial was made\n%s" % r)
                else:
                    self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))
                    self.assertAbsent("/dev/null.partial", r)

    def test_output_dev_stdout_pipe_refused(self):
        for name, cmd in self._device_cases():
            with self.subTest(tool=name):
                r, report = self._run_on_dev_path(cmd, "/dev/stdout", stdout=subprocess.PIPE)
                self.assertExit(r, 2)
                self.assertEqual(r.out_bytes, b"", "the image went into the pipe\n%s" % r)
                if IS_ROOT:
                    self.assertIn("/dev/stdout: symbolic link", report, str(r))
                    self.assertNotIn("stdout.partial", report, "a .partial was made in /dev")
                else:
                    self.assertAbsent("/dev/stdout.partial", r)

    def test_output_character_device_node_refused(self):
        if not IS_ROOT:
            self.skipTest("making a device node needs root")
        for name, cmd in self._device_cases():
            with self.subTest(tool=name):
                node = self.p("node-%s" % name)
                os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))
                r = run([node if c is None else c for c in cmd], timeout=20)
                self.assertExit(r, 2)
                st = os.lstat(node)
                self.assertTrue(stat.S_ISCHR(st.st_mode), "the node was replaced\n%s" % r)
                self.assertEqual(st.st_rdev, os.makedev(1, 3))
                self.assertNoPartial(r=r)

    def test_output_fifo_refused(self):
        # No reader: a tool that opens the FIFO for writing blocks (the timeout reports it).
        for name, cmd in self._device_cases():
            with self.subTest(tool=name):
                fifo = self.p("fifo-%s" % name)
                os.mkfifo(fifo)
                r = run([fifo if c is None else c for c in cmd], timeout=20)
                self.assertExit(r, 2)
                self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "FIFO replaced\n%s" % r)
                self.assertNoPartial(r=r)

    def test_input_named_output_partial_refused(self):
        img = random_image(50, 100)
        sources = {"raw": lambda p: img.tofile(p), "npy": lambda p: np.save(p, img)}
        if tifffile is not None:
            sources["tif"] = lambda p: tifffile.imwrite(p, img)
        for ext, make in sources.items():
            with self.subTest(format=ext):
                src = self.p("src." + ext)
                make(src)
                if not os.path.exists(src):  # np.save appends .npy to names without it
                    os.rename(src + ".npy", src)
                inp = self.p("x.%s.partial" % ext)
                shutil.copyfile(src, inp)
                before = digest(inp)
                extra = ["--width", "100"] if ext == "raw" else []
                r = self.oocconv("x.%s.partial" % ext, "x." + ext, *extra, "--radius", "3",
                                 cwd=self.d)
                self.assertExit(r, 2)
                self.assertEqual(digest(inp), before, "the input was modified\n%s" % r)
                self.assertAbsent(self.p("x." + ext), r)
        if tifffile is None:
            self.skipTest("tif case not run: this python has no tifffile")

    def test_leftover_partial_symlink_refused(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        with open(self.p("important.txt"), "wb") as f:
            f.write(b"do not overwrite me\n")
        before = digest(self.p("important.txt"))
        os.symlink("important.txt", self.p("o.raw.partial"))
        r = self.oocconv(a, "o.raw", "--width", "100", "--radius", "3", cwd=self.d)
        self.assertExit(r, 4)
        self.assertEqual(digest(self.p("important.txt")), before,
                         "the link's target was written\n%s" % r)
        self.assertAbsent(self.p("o.raw"), r)
        self.assertTrue(os.path.islink(self.p("o.raw.partial")),
                        "the leftover link is gone\n%s" % r)
        self.assertEqual(os.readlink(self.p("o.raw.partial")), "important.txt")

    def test_leftover_partial_regular_file_replaced(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        opts = ["--width", "100", "--radius", "3"]
        plain = self.plain_run(a, "plain.raw", *opts)
        with open(self.p("o.raw.partial"), "wb") as f:  # what a killed run leaves
            f.write(b"\x07" * 12345)
        r = self.oocconv(a, "o.raw", *opts, cwd=self.d)
        self.assertExit(r, 0)
        self.assertSameBytes(self.p("o.raw"), plain, r)
        self.assertNoPartial(r=r)


if __name__ == "__main__":
    sys.exit(main())
