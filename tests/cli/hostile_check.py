#!/usr/bin/env python3
"""Hostile end-to-end checks of oocconv, oocgen, ooccheck and oocinfo (the hardening's proof).

Each test reproduces one way a user, a batch system or a bad file can mistreat the tools, and
checks what must happen instead: a clear error with the right exit code (0 done, 2 usage,
3 bad input, 4 I/O, 5 GPU, 128+N killed by signal N), no file lost or clobbered (compared by
bytes before and after), no OUTPUT.partial left behind, no hang (every run has a timeout) and no
crash. Messages are checked loosely (a key word such as the option or file name).

Sections: output files (links, device nodes, .partial), concurrency and signals, resource limits,
--mem-limit, sizes and numbers, TIFF, file modes, precision, radius far beyond the image, a real
memory cgroup, and further hostile cases beyond the original list.

Runs as root (CI) or not: what needs root (device nodes, cgroups, running as another user) is
skipped with the reason. As root, the cases that name /dev/null and /dev/stdout run in a private
mount namespace with a fresh /dev (the tool sees the same paths and node types), so that a tool
that replaces its output cannot replace the machine's /dev/null.

Usage: hostile_check.py --bin-dir DIR [unittest options, e.g. -v, -k NAME]
"""
import filecmp
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

try:
    from scipy import ndimage
except ImportError:  # the tests that need it skip
    ndimage = None
try:
    import tifffile
except ImportError:  # the tests that need it skip
    tifffile = None

import cli_args  # beside this file

# --bin-dir DIR as a script (the other arguments go to unittest.main), $OOC_BIN_DIR under
# pytest (conftest.py).
BIN_DIR, _REST = cli_args.bin_dir_and_rest(
    __name__, description=__doc__.split("\n")[0],
    bin_help="directory holding oocconv, oocgen, ooccheck and oocinfo")
IS_ROOT = os.geteuid() == 0
# A safety net for the cases that must be refused before allocating anything: a tool that does
# allocate gets an error instead of taking the machine's memory. Not on GPU machines (the CUDA
# driver reserves far more address space than it uses).
SAFETY_AS_BYTES = None if os.path.exists("/dev/nvidiactl") else 8 << 30

# The slow run used where something must happen mid-run: 256 MiB of f32, a wide Gaussian, one
# thread (about 2.5 s on the 2-core CI machine, 0.56 s with the GPU of the H200 machine). Signals
# and the second writer come 0.5 s in, or a third of the way through a lone run where that is
# sooner (Shared.mid_run_s): on a fast machine 0.5 s fell in the run's last milliseconds.
SLOW_W = SLOW_H = 8192
# --method direct: the slow sum these runs need (auto takes the FFT at this radius).
SLOW_OPTS = ["--width", str(SLOW_W), "--radius", "128", "--threads", "1", "--method", "direct"]
MID_RUN_S = 0.5

CAPTURE = object()


def tool(name):
    return os.path.join(BIN_DIR, name)


# ---------------------------------------------------------------------------------------------
# Running the tools
# ---------------------------------------------------------------------------------------------

# Peak RSS must be measured in a small process: a child forked (or vforked) from this Python
# inherits its RSS high-water mark through exec. This launcher forks the tool from a bare
# interpreter and writes the tool's wait status and ru_maxrss (KiB) to a file.
_RSS_LAUNCHER = r"""
import os, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write("%d %d\n" % (status, ru.ru_maxrss))
"""


class Result:
    """What a finished run did: rc (negative: killed by that signal; None: timed out and killed),
    out and err (text), out_bytes, secs, rss_kb (where measured), cmd."""

    def __init__(self, cmd, rc, out_bytes, err_bytes, secs, rss_kb, timed_out):
        self.cmd, self.rc, self.secs, self.rss_kb, self.timed_out = cmd, rc, secs, rss_kb, timed_out
        self.out_bytes = out_bytes
        self.out = out_bytes.decode("utf-8", "replace")
        self.err = err_bytes.decode("utf-8", "replace")

    def __iter__(self):  # rc, out, err = run(...)
        return iter((self.rc, self.out, self.err))

    def __str__(self):
        lines = ["$ " + shlex.join(self.cmd)]
        if self.timed_out:
            lines.append("TIMED OUT after %.1f s (killed)" % self.secs)
        elif self.rc is not None and self.rc < 0:
            lines.append("killed by %s after %.2f s" % (signal.Signals(-self.rc).name, self.secs))
        else:
            lines.append("exit %s after %.2f s" % (self.rc, self.secs))
        if self.rss_kb is not None:
            lines.append("peak RSS %.1f MiB" % (self.rss_kb / 1024))
        lines.append("stderr: " + (self.err[-3000:].rstrip() or "(empty)"))
        if self.out.strip():
            lines.append("stdout: " + self.out[-1500:].rstrip())
        return "\n".join(lines)


class Proc:
    """A started tool (in its own process group). poll() -> Result or None; finish(timeout)
    waits, kills the group on timeout, and returns the Result. stdout/stderr: CAPTURE (temporary
    files, so nothing can block), subprocess.PIPE (read after exit), or any Popen value."""

    def __init__(self, cmd, *, stdout=CAPTURE, stderr=CAPTURE, stdin=subprocess.DEVNULL,
                 measure_rss=False, **popen_kw):
        self.cmd = [os.fspath(c) for c in cmd]
        self._out = tempfile.TemporaryFile() if stdout is CAPTURE else None
        self._err = tempfile.TemporaryFile() if stderr is CAPTURE else None
        self._report = None
        argv = self.cmd
        if measure_rss:
            fd, self._report = tempfile.mkstemp(prefix="ooc-rss-")
            os.close(fd)
            argv = [sys.executable, "-I", "-S", "-c", _RSS_LAUNCHER, self._report] + argv
        self.t0 = time.monotonic()
        self.popen = subprocess.Popen(
            argv, stdin=stdin, stdout=self._out if self._out else stdout,
            stderr=self._err if self._err else stderr, start_new_session=True, **popen_kw)
        self.pid = self.popen.pid
        self.result = None

    def poll(self):
        if self.result is None:
            pid, status, ru = os.wait4(self.pid, os.WNOHANG)
            if pid == 0:
                return None
            self._done(status, False)
        return self.result

    def finish(self, timeout):
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, status, _ = os.wait4(self.pid, 0)
                self._done(status, True)
                break
            time.sleep(0.005)
        return self.result

    def _done(self, status, timed_out):
        secs = time.monotonic() - self.t0
        rc = os.waitstatus_to_exitcode(status)
        self.popen.returncode = rc  # reaped here; keep Popen from waiting again
        rss = None
        if self._report:
            with open(self._report) as f:
                fields = f.read().split()
            os.unlink(self._report)
            if len(fields) == 2:  # else the launcher itself died: report its status
                rc, rss = os.waitstatus_to_exitcode(int(fields[0])), int(fields[1])
        out = self._read(self._out, self.popen.stdout)
        err = self._read(self._err, self.popen.stderr)
        self.result = Result(self.cmd, None if timed_out else rc, out, err, secs, rss, timed_out)

    @staticmethod
    def _read(tmp, pipe):
        if tmp is not None:
            tmp.seek(0)
            data = tmp.read()
            tmp.close()
            return data
        if pipe is not None:  # subprocess.PIPE: what is there (a grandchild may hold it open)
            os.set_blocking(pipe.fileno(), False)
            chunks = []
            while True:
                try:
                    b = pipe.read()
                except BlockingIOError:
                    break
                if not b:
                    break
                chunks.append(b)
            pipe.close()
            return b"".join(chunks)
        return b""


def run(cmd, timeout=60, **kw):
    """Runs a tool to the end (or timeout); returns a Result, which unpacks as (rc, out, err)."""
    return Proc(cmd, **kw).finish(timeout)


def limit(res, value):
    return lambda: resource.setrlimit(res, (value, value))


def safety_as():
    if SAFETY_AS_BYTES:
        resource.setrlimit(resource.RLIMIT_AS, (SAFETY_AS_BYTES, SAFETY_AS_BYTES))


def default_signals(*sigs):
    """Default dispositions and an empty mask, as in an interactive shell (a test runner in the
    background may have SIGINT/SIGQUIT ignored, which exec would pass on)."""
    def fn():
        for s in sigs:
            signal.signal(s, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGQUIT/SIGXCPU: no core files
    return fn


# ---------------------------------------------------------------------------------------------
# Images and files
# ---------------------------------------------------------------------------------------------

def random_image(h, w, dtype=np.float32, seed=1, lo=1.0, hi=100.0):
    """A random image with no zero sample (float: uniform in [lo, hi); u8: 1..255)."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.uint8:
        return rng.integers(1, 256, (h, w), dtype=np.uint8)
    return rng.uniform(lo, hi, (h, w)).astype(dtype)


def write_raw(path, arr):
    arr.tofile(path)
    return path


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def partials(*dirs):
    """Names containing '.partial' in the given directories."""
    found = []
    for d in dirs:
        if os.path.isdir(d):
            found += [os.path.join(d, n) for n in os.listdir(d) if ".partial" in n]
    return found


def npy_bytes(header_text, payload):
    """A version 1.0 .npy file with the given header text (padded as NumPy pads it)."""
    head = header_text.encode("latin1")
    pad = (64 - (10 + len(head) + 1) % 64) % 64
    head = head + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head + payload


def gaussian_taps(radius):
    """oocconv's Gaussian for --radius R alone: sigma = R/3, normalized to sum 1."""
    sigma = radius / 3.0
    k = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 * (k / sigma) ** 2)
    return w / w.sum()


def scipy_separable(img, taps, mode="reflect", cval=0.0):
    """float64 reference: convolve1d along x (axis 1), then along y (axis 0)."""
    x = ndimage.convolve1d(img.astype(np.float64), taps, axis=1, mode=mode, cval=cval)
    return ndimage.convolve1d(x, taps, axis=0, mode=mode, cval=cval)


def mount_namespace_usable():
    if not IS_ROOT or not shutil.which("unshare"):
        return False
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


# Runs "$@" with a fresh /dev (tmpfs) in a private mount namespace, then writes the type of
# /dev/null and /dev/stdout and the names in /dev to $OOC_REPORT.
_PRIVATE_DEV = r"""
set -e
mount -t tmpfs -o mode=755 ooc-hostile-dev /dev
mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5; mknod -m 666 /dev/full c 1 7
mknod -m 666 /dev/random c 1 8; mknod -m 666 /dev/urandom c 1 9
ln -s /proc/self/fd /dev/fd; ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
mkdir -m 1777 /dev/shm
set +e
"$@"
rc=$?
{ stat -c '%n: %F' /dev/null /dev/stdout; ls -a /dev; } > "$OOC_REPORT" 2>&1
exit $rc
"""


# ---------------------------------------------------------------------------------------------
# Shared inputs (made once, lazily, in one module directory)
# ---------------------------------------------------------------------------------------------

class Shared:
    dir = None
    cache = {}

    @classmethod
    def slow_input(cls):
        """The 256 MiB f32 input of the slow run, written by NumPy in slices."""
        if "slow" not in cls.cache:
            path = os.path.join(cls.dir, "slow.raw")
            rng = np.random.default_rng(7)
            with open(path, "wb") as f:
                for _ in range(0, SLOW_H, 1024):
                    (rng.random((1024, SLOW_W), dtype=np.float32) + 1.0).tofile(f)
            cls.cache["slow"] = path
        return cls.cache["slow"]

    @classmethod
    def slow_reference(cls, test):
        """(path, sha256) of a lone slow run's output."""
        if "slow_ref" not in cls.cache:
            out = os.path.join(cls.dir, "slow_ref.raw")
            t0 = time.monotonic()
            r = run([tool("oocconv"), cls.slow_input(), out] + SLOW_OPTS + ["-q"], timeout=120)
            cls.cache["slow_s"] = time.monotonic() - t0
            test.assertEqual(r.rc, 0, "the lone slow run (the reference) failed:\n%s" % r)
            cls.cache["slow_ref"] = (out, digest(out))
        return cls.cache["slow_ref"]

    @classmethod
    def mid_run_s(cls, test):
        """When to act on a slow run: 0.5 s in, or a third of a lone run's time if that is less."""
        cls.slow_reference(test)
        return min(MID_RUN_S, cls.cache["slow_s"] / 3)

    @classmethod
    def big_deflate_tiff(cls, test):
        """8192 x 8192 f32 (256 MiB decoded) in ONE Deflate strip; smooth, so about 2 MB."""
        if tifffile is None:
            test.skipTest("this python has no tifffile")
        if "big_tif" not in cls.cache:
            path = os.path.join(cls.dir, "big_one_strip.tif")
            y = np.arange(8192) // 64
            arr = (y[:, None] + y[None, :] + 1).astype(np.float32)
            tifffile.imwrite(path, arr, compression="zlib", rowsperstrip=arr.shape[0])
            del arr
            cls.cache["big_tif"] = path
        return cls.cache["big_tif"]


def setUpModule():
    Shared.dir = tempfile.mkdtemp(prefix="ooc-hostile-shared-")


def tearDownModule():
    shutil.rmtree(Shared.dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Test base
# ---------------------------------------------------------------------------------------------

class HostileBase(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ooc-hostile-")
        self.d = self._tmp.name

    def tearDown(self):
        # Undo the chmods of tests (read-only directories) so that the cleanup can remove all.
        for root, dirs, _ in os.walk(self.d):
            for n in dirs:
                p = os.path.join(root, n)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
        self._tmp.cleanup()

    # paths and images
    def p(self, *names):
        return os.path.join(self.d, *names)

    def raw_f32(self, name, h, w, seed=1, **kw):
        arr = random_image(h, w, np.float32, seed, **kw)
        return write_raw(self.p(name), arr), arr

    # tools
    def oocconv(self, *args, timeout=60, **kw):
        return run([tool("oocconv")] + [os.fspath(a) for a in args], timeout=timeout, **kw)

    def oocgen(self, *args, timeout=60, **kw):
        return run([tool("oocgen")] + [os.fspath(a) for a in args], timeout=timeout, **kw)

    def plain_run(self, inp, name, *args):
        """The output of a normal run (the result every hostile variant must equal)."""
        out = self.p(name)
        r = self.oocconv(inp, out, *args)
        self.assertEqual(r.rc, 0, "the normal run failed:\n%s" % r)
        return out

    # assertions
    def assertExit(self, r, *codes, what=""):
        self.assertIn(r.rc, codes, "%sexpected exit %s\n%s" % (
            what + ": " if what else "", " or ".join(map(str, codes)), r))

    def assertMentions(self, r, *words):
        """stderr names at least one of the words (case-insensitive)."""
        low = r.err.lower()
        self.assertTrue(any(w.lower() in low for w in words),
                        "stderr mentions none of %s\n%s" % (list(words), r))

    def assertNoPartial(self, *dirs, r=None):
        left = partials(*(dirs or (self.d,)))
        self.assertEqual(left, [], "a .partial file was left behind%s" % ("\n%s" % r if r else ""))

    def assertAbsent(self, path, r=None):
        self.assertFalse(os.path.lexists(path), "%s exists%s" % (path, "\n%s" % r if r else ""))

    def assertSameBytes(self, got, want, r=None):
        self.assertTrue(os.path.exists(got), "%s is missing%s" % (got, "\n%s" % r if r else ""))
        self.assertEqual(digest(got), digest(want),
                         "%s differs from %s%s" % (got, want, "\n%s" % r if r else ""))

    def assertKilledBy(self, r, sig):
        self.assertIn(r.rc, (128 + sig, -sig),
                      "expected exit %d or death by %s\n%s" % (128 + sig, sig.name, r))


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


# =============================================================================================
# 5-7, 9-10. Concurrency, closed streams, inputs that change, signals
# =============================================================================================

class RunsUnderAttack(HostileBase):
    def _start_slow(self, out, *extra, **kw):
        return Proc([tool("oocconv"), Shared.slow_input(), out] + SLOW_OPTS + ["-q"] +
                    list(extra), **kw)

    def test_concurrent_writer_to_same_output_refused(self):
        ref, ref_sha = Shared.slow_reference(self)
        out = self.p("o.raw")
        mid = Shared.mid_run_s(self)
        first = self._start_slow(out)
        time.sleep(mid)
        if first.poll() is not None:
            self.skipTest("the slow run finished within %.2f s: nothing to race" % mid)
        second = self.oocconv(Shared.slow_input(), out, "--width", str(SLOW_W), "--radius", "3",
                              "-q", timeout=120)
        f = first.finish(120)
        self.assertExit(second, 4, what="second writer")
        self.assertMentions(second, "pid", "process")
        self.assertExit(f, 0, what="first writer")
        self.assertEqual(digest(out), ref_sha, "the first run's output differs from a lone run's")
        self.assertNoPartial(r=second)

    def test_stderr_closed_with_progress_output_unchanged(self):
        # With fd 2 closed, the next file opened gets fd 2: progress must not land in it. The
        # runs last long enough (about 1 s) for the bar to be drawn several times (every 0.2 s).
        a, _ = self.raw_f32("a.raw", 6144, 4096)
        conv = ["--width", "4096", "--radius", "128", "--threads", "1", "--method", "direct",
                "--progress"]
        gen = ["--width", "8192", "--height", "8192", "--progress"]
        cases = [("oocconv raw", tool("oocconv"), [a], "o.raw", conv),
                 ("oocconv tif", tool("oocconv"), [a], "o.tif", conv),
                 ("oocgen raw", tool("oocgen"), [], "g.raw", gen),
                 ("oocgen tif", tool("oocgen"), [], "g.tif", gen)]
        for name, exe, inp, out, opts in cases:
            with self.subTest(case=name):
                normal = run([exe] + inp + [self.p("normal_" + out)] + opts)
                self.assertExit(normal, 0, what="normal run")
                if normal.err.count("\r[") < 2:
                    self.skipTest("the normal run drew its progress bar under twice: too fast "
                                  "to test\n%s" % normal)
                r = run([exe] + inp + [self.p(out)] + opts, stderr=subprocess.DEVNULL,
                        preexec_fn=lambda: os.close(2))
                self.assertExit(r, 0, 4)
                self.assertSameBytes(self.p(out), self.p("normal_" + out), r)
                self.assertNoPartial(r=r)
                for f in (self.p(out), self.p("normal_" + out)):
                    os.unlink(f)

    def test_input_truncated_while_mapped_fails_cleanly(self):
        inp = self.p("shrinking.raw")
        shutil.copyfile(Shared.slow_input(), inp)
        out = self.p("o.raw")
        proc = Proc([tool("oocconv"), inp, out] + SLOW_OPTS + ["-q"])
        time.sleep(0.4)
        if proc.poll() is not None:
            self.skipTest("the run finished before the truncation (%s)" % proc.result.rc)
        os.truncate(inp, 0)
        r = proc.finish(60)
        if r.rc == 0 and r.secs < 0.45:
            self.skipTest("the run finished before the truncation")
        self.assertExit(r, 3, 4)
        self.assertMentions(r, "shrinking.raw")
        self.assertAbsent(out, r)
        self.assertNoPartial(r=r)

    def test_signal_mid_run_keeps_old_output_and_a_resumable_partial(self):
        # A raw output is resumable: SIGINT/SIGTERM stop after the bands in flight (exit 75),
        # other signals end the run at once; both leave OUTPUT.partial and its journal for
        # --resume (parts_check.py resumes them), and the old output as it was.
        sigs = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                signal.SIGUSR2, signal.SIGALRM, signal.SIGXCPU]
        Shared.slow_input()
        for sig in sigs:
            with self.subTest(signal=sig.name):
                out = self.p("o.raw")
                with open(out, "wb") as f:
                    f.write(b"precious old output\n" * 100)
                before = digest(out)
                proc = self._start_slow(out, preexec_fn=default_signals(*sigs))
                time.sleep(Shared.mid_run_s(self))
                if proc.poll() is not None:
                    self.skipTest("the run ended before %s was sent:\n%s" % (sig.name, proc.result))
                os.kill(proc.pid, sig)
                r = proc.finish(60)
                if sig in (signal.SIGINT, signal.SIGTERM):
                    self.assertExit(r, 75)
                    self.assertMentions(r, "--resume")
                else:
                    self.assertKilledBy(r, sig)
                self.assertEqual(digest(out), before, "the old output changed\n%s" % r)
                self.assertTrue(os.path.exists(out + ".partial.journal"), str(r))
                os.unlink(out + ".partial")
                os.unlink(out + ".partial.journal")

    def test_signal_mid_run_keeps_a_tiff_for_resume(self):
        # A TIFF keeps its compressed blocks: SIGINT/SIGTERM stop it resumably (75), and
        # --resume completes the same bytes as one run. SIGHUP (not a stop request) ends it at
        # once: whatever it leaves, --resume completes the same bytes (from its journal's rows, or
        # from the start).
        Shared.slow_input()
        ref = self.p("ref.tif")
        r = run([tool("oocconv"), Shared.slow_input(), ref] + SLOW_OPTS + ["-q"], timeout=600)
        self.assertEqual(r.rc, 0, str(r))
        for sig in [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]:
            with self.subTest(signal=sig.name):
                out = self.p("o.tif")
                for f in [out] + partials(self.d):
                    if os.path.exists(f):
                        os.unlink(f)
                proc = self._start_slow(out, preexec_fn=default_signals(sig))
                time.sleep(Shared.mid_run_s(self))
                if proc.poll() is not None:
                    self.skipTest("the run ended before %s was sent:\n%s" % (sig.name, proc.result))
                os.kill(proc.pid, sig)
                r = proc.finish(60)
                self.assertFalse(os.path.exists(out), str(r))
                if sig == signal.SIGHUP:
                    self.assertKilledBy(r, sig)
                else:
                    self.assertEqual(r.rc, 75, str(r))
                r2 = run([tool("oocconv"), Shared.slow_input(), out, "--resume"] + SLOW_OPTS +
                         ["-q"], timeout=600)
                self.assertEqual(r2.rc, 0, str(r2))
                self.assertTrue(filecmp.cmp(ref, out, shallow=False), "resumed TIFF differs")
                os.unlink(out)

    def test_progress_into_pipe_closed_by_head_completes(self):
        ref, ref_sha = Shared.slow_reference(self)
        out = self.p("o.raw")
        line = "%s --progress 2>&1 | head -c 60" % shlex.join(
            [tool("oocconv"), Shared.slow_input(), out] + SLOW_OPTS)
        r = run(["sh", "-c", line], timeout=120, preexec_fn=default_signals(signal.SIGPIPE))
        self.assertTrue(os.path.exists(out), "no output: the run died with its stderr\n%s" % r)
        self.assertEqual(digest(out), ref_sha, "the output differs from a normal run's\n%s" % r)
        self.assertNoPartial(r=r)
        if len(r.out_bytes) < 60:
            self.skipTest("progress wrote %d bytes, under 60: the pipe never closed mid-run"
                          % len(r.out_bytes))

    def _stats_case(self):
        a, _ = self.raw_f32("a.raw", 500, 1000)
        opts = ["--width", "1000", "--radius", "3"]
        return a, opts, self.plain_run(a, "plain.raw", *opts)

    def test_stats_json_into_closed_pipe_is_io_error_with_complete_output(self):
        a, opts, plain = self._stats_case()
        rd, wr = os.pipe()
        os.close(rd)  # no reader from the start: the first write fails (EPIPE / SIGPIPE)
        try:
            r = self.oocconv(a, "o.raw", *opts, "--stats", "json", stdout=wr, cwd=self.d,
                             preexec_fn=default_signals(signal.SIGPIPE))
        finally:
            os.close(wr)
        self.assertExit(r, 4)
        self.assertSameBytes(self.p("o.raw"), plain, r)
        self.assertNoPartial(r=r)

    def test_stats_json_into_dev_full_is_io_error_with_complete_output(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        a, opts, plain = self._stats_case()
        with open("/dev/full", "wb") as full:
            r = self.oocconv(a, "o.raw", *opts, "--stats", "json", stdout=full, cwd=self.d)
        self.assertExit(r, 4)
        self.assertSameBytes(self.p("o.raw"), plain, r)
        self.assertNoPartial(r=r)

    def test_stats_json_exit_0_when_stdout_works(self):
        a, opts, plain = self._stats_case()
        r = self.oocconv(a, "o.raw", *opts, "--stats", "json", cwd=self.d)
        self.assertExit(r, 0)
        self.assertEqual(json.loads(r.out)["output"]["bytes"], 500 * 1000 * 4, str(r))
        self.assertSameBytes(self.p("o.raw"), plain, r)


# =============================================================================================
# 8, 11. Resource limits
# =============================================================================================

class ResourceLimits(HostileBase):
    def test_file_size_limit_is_io_error(self):
        # 16 MiB outputs under `ulimit -f` of 1 MiB; Popen restores SIGXFSZ to its default, as a
        # shell has it, so the tool must ignore it itself.
        a, _ = self.raw_f32("a.raw", 2048, 2048)
        conv = [tool("oocconv"), a, None, "--width", "2048", "--radius", "1"]
        gen = [tool("oocgen"), None, "--width", "2048", "--height", "2048"]
        for name, cmd, out in [("oocconv raw", conv, "o.raw"), ("oocconv tif", conv, "o.tif"),
                               ("oocgen raw", gen, "g.raw"), ("oocgen tif", gen, "g.tif")]:
            with self.subTest(case=name):
                r = run([self.p(out) if c is None else c for c in cmd],
                        preexec_fn=limit(resource.RLIMIT_FSIZE, 1 << 20))
                self.assertExit(r, 4)
                self.assertMentions(r, "limit", "too large")
                self.assertAbsent(self.p(out), r)
                self.assertNoPartial(r=r)

    def test_five_file_descriptors_is_io_error(self):
        img = random_image(50, 100)
        inputs = {"raw": write_raw(self.p("in.raw"), img)}
        np.save(self.p("in.npy"), img)
        inputs["npy"] = self.p("in.npy")
        if tifffile is not None:
            tifffile.imwrite(self.p("in.tif"), img)
            inputs["tif"] = self.p("in.tif")
        for ext, inp in inputs.items():
            with self.subTest(input=ext):
                out = self.p("o_%s.raw" % ext)
                r = self.oocconv(inp, out, "--width", "100", "--radius", "1",
                                 preexec_fn=limit(resource.RLIMIT_NOFILE, 5), close_fds=True)
                self.assertExit(r, 4)
                self.assertAbsent(out, r)
                self.assertNoPartial(r=r)
        if tifffile is None:
            self.skipTest("tif case not run: this python has no tifffile")


# =============================================================================================
# 12-14. --mem-limit and sizes that cannot fit
# =============================================================================================

class MemoryLimits(HostileBase):
    def _mid(self):
        return self.raw_f32("mid.raw", 2000, 1000)[0]

    def test_tile_65536_refused_quickly(self):
        r = self.oocconv(self._mid(), "o.tif", "--width", "1000", "--radius", "1", "--tile",
                         "65536", cwd=self.d, timeout=30, preexec_fn=safety_as)
        self.assertExit(r, 2)
        self.assertLess(r.secs, 5, str(r))
        self.assertMentions(r, "--tile")
        self.assertNoPartial(r=r)

    def test_tile_8192_under_16M_mem_limit_refused_or_small(self):
        r = self.oocconv(self._mid(), "o.tif", "--width", "1000", "--radius", "1", "--tile",
                         "8192", "--mem-limit", "16M", cwd=self.d, timeout=60,
                         measure_rss=True, preexec_fn=safety_as)
        self.assertExit(r, 2, 0)
        if r.rc == 0:
            self.assertLess(r.rss_kb, 40 * 1024, "succeeded but over 40 MiB:\n%s" % r)
        self.assertNoPartial(r=r)

    def test_oocgen_tile_1G_refused_quickly(self):
        r = self.oocgen("o.tif", "--width", "1000", "--height", "1000", "--tile", "1073741824",
                        cwd=self.d, timeout=30, preexec_fn=safety_as)
        self.assertExit(r, 2)
        self.assertLess(r.secs, 5, str(r))
        self.assertAbsent(self.p("o.tif"), r)
        self.assertNoPartial(r=r)

    def test_one_256M_deflate_strip_over_mem_limit_refused(self):
        big = Shared.big_deflate_tiff(self)
        # The CPU backend: a CUDA context alone takes about 100 MiB of host memory.
        r = self.oocconv(big, "o.raw", "--radius", "1", "--mem-limit", "16M", "--device", "cpu",
                         cwd=self.d, timeout=60, measure_rss=True, preexec_fn=safety_as)
        self.assertExit(r, 2)
        self.assertRegex(r.err, r"\d\s*(KiB|MiB|GiB|kB|MB|GB)", "no size named\n%s" % r)
        self.assertLess(r.secs, 5, str(r))
        self.assertLess(r.rss_kb, 100 * 1024, str(r))
        self.assertAbsent(self.p("o.raw"), r)
        self.assertNoPartial(r=r)

    def test_one_256M_deflate_strip_with_2G_mem_limit_succeeds(self):
        big = Shared.big_deflate_tiff(self)
        out = self.p("o.raw")
        r = self.oocconv(big, out, "--radius", "1", "--mem-limit", "2G", timeout=120)
        self.assertExit(r, 0)
        self.assertEqual(os.path.getsize(out), 8192 * 8192 * 4)
        if ndimage is not None:  # the top 100 rows against scipy (radius 1 needs 101 rows)
            y = np.arange(8192) // 64
            top = (y[:102, None] + y[None, :] + 1).astype(np.float64)
            ref = scipy_separable(top, gaussian_taps(1))[:100]
            got = np.fromfile(out, "<f4", count=100 * 8192).reshape(100, 8192)
            self.assertLessEqual(np.abs(got - ref).max(), 1e-5 * np.abs(ref).max())

    def test_huge_radius_refused_quickly_and_small(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        for radius in ["100000000", "1e9"]:
            with self.subTest(radius=radius):
                r = self.oocconv(a, "o.raw", "--width", "100", "--radius", radius, cwd=self.d,
                                 timeout=30, measure_rss=True, preexec_fn=safety_as)
                self.assertExit(r, 2)
                self.assertLess(r.secs, 2, str(r))
                self.assertLess(r.rss_kb, 100 * 1024, str(r))
                self.assertAbsent(self.p("o.raw"), r)


# =============================================================================================
# 15-16. Numbers: sizes that overflow, non-finite values, zero and negative counts, bad .npy
# =============================================================================================

class Numbers(HostileBase):
    def test_radius_2_pow_62_refused_by_every_tool(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        shutil.copyfile(a, self.p("out.raw"))
        big = "4611686018427387904"
        geo = ["--width", "100", "--radius", big]
        cases = {
            "oocconv": [tool("oocconv"), a, self.p("o.raw")] + geo,
            "oocconv box": [tool("oocconv"), a, self.p("o.raw")] + geo + ["--filter", "box"],
            "ooccheck": [tool("ooccheck"), self.p("out.raw"), a] + geo,
            "ooccheck box": [tool("ooccheck"), self.p("out.raw"), a] + geo + ["--filter", "box"],
            "oocinfo": [tool("oocinfo"), a] + geo,  # oocinfo has --radius, no --filter
        }
        for name, cmd in cases.items():
            with self.subTest(case=name):
                r = run(cmd, timeout=30, preexec_fn=safety_as)
                self.assertExit(r, 2)
                self.assertAbsent(self.p("o.raw"), r)

    def test_non_finite_sigma_and_huge_radius_refused(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        shutil.copyfile(a, self.p("out.raw"))
        cases = [("--sigma", "inf"), ("--sigma", "1e300"), ("--sigma", "nan"),
                 ("--sigma", "-inf"), ("--radius", "1000000000000000000")]
        for opt, value in cases:
            for exe, files in [("oocconv", [a, self.p("o.raw")]),
                               ("ooccheck", [self.p("out.raw"), a])]:
                with self.subTest(tool=exe, option=opt, value=value):
                    r = run([tool(exe)] + files + ["--width", "100", opt, value], timeout=30,
                            preexec_fn=safety_as)
                    self.assertExit(r, 2)
                    self.assertMentions(r, opt.lstrip("-"))
                    self.assertAbsent(self.p("o.raw"), r)

    def test_zero_negative_and_absurd_counts_are_usage_errors(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        base = [a, "o.raw", "--width", "100", "--radius", "1"]
        synth = ["synth:noise", "null:", "--width", "100", "--height", "100", "--radius", "1"]
        cases = [
            ("--height -1", base + ["--height", "-1"], "height"),
            ("--width -5", [a, "o.raw", "--width", "-5", "--radius", "1"], "width"),
            ("--threads 0", base + ["--threads", "0"], "threads"),
            ("--slots 0", base + ["--slots", "0"], "slots"),
            ("--band-rows 0", base + ["--band-rows", "0"], "band-rows"),
            ("--page 1 on synth:", synth + ["--page", "1"], "page"),
            ("--threads 100000", base + ["--threads", "100000"], "--threads"),
            ("empty output name", [a, "", "--width", "100", "--radius", "1"], None),
        ]
        for name, args, word in cases:
            with self.subTest(case=name):
                r = self.oocconv(*args, cwd=self.d, timeout=30)
                self.assertExit(r, 2)
                if word:
                    self.assertMentions(r, word)
                self.assertAbsent(self.p("o.raw"), r)
                self.assertNoPartial(r=r)

    def test_npy_with_negative_shape_is_bad_input(self):
        payload = random_image(20, 30).tobytes()
        with open(self.p("neg.npy"), "wb") as f:
            f.write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-20, 30), }",
                              payload))
        r = self.oocconv("neg.npy", "o.raw", "--radius", "1", cwd=self.d, timeout=30)
        self.assertExit(r, 3)
        self.assertAbsent(self.p("o.raw"), r)

    def test_npy_header_without_closing_brace_is_bad_input(self):
        payload = random_image(20, 30).tobytes()
        with open(self.p("open.npy"), "wb") as f:
            f.write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (20, 30), ",
                              payload))
        r = self.oocconv("open.npy", "o.raw", "--radius", "1", cwd=self.d, timeout=30)
        self.assertExit(r, 3)
        self.assertAbsent(self.p("o.raw"), r)

    def test_threads_8_really_runs_8_threads(self):
        proc = Proc([tool("oocconv"), "synth:noise", "null:", "--width", "8192", "--height",
                     "16384", "--radius", "64", "--threads", "8", "--method", "direct",
                     "--stats", "json", "-q"])
        most, deadline = 0, time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                most = max(most, len(os.listdir("/proc/%d/task" % proc.pid)))
            except FileNotFoundError:
                pass
            time.sleep(0.005)
        r = proc.finish(60)
        self.assertExit(r, 0)
        self.assertGreaterEqual(most, 8, "at most %d threads seen\n%s" % (most, r))
        self.assertEqual(json.loads(r.out)["plan"]["threads"], 8, str(r))


# =============================================================================================
# 18-20. TIFF layouts and names, file modes
# =============================================================================================

class TiffAndModes(HostileBase):
    def test_tiff_with_image_depth_refused(self):
        if tifffile is None:
            self.skipTest("this python has no tifffile")
        vol = random_image(3 * 64, 64).reshape(3, 64, 64)
        for tile in [(1, 16, 16), (3, 16, 16)]:
            with self.subTest(tile_depth=tile[0]):
                path = self.p("vol%d.tif" % tile[0])
                tifffile.imwrite(path, vol, tile=tile, volumetric=True, photometric="minisblack")
                self.assertEqual(tifffile.TiffFile(path).pages[0].imagedepth, 3)  # the writer
                r = self.oocconv(path, "o.raw", "--radius", "1", cwd=self.d, timeout=30)
                self.assertExit(r, 3)
                self.assertMentions(r, "depth")
                self.assertAbsent(self.p("o.raw"), r)

    def test_btf_and_tf8_outputs_are_bigtiff(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        opts = ["--width", "100", "--radius", "2"]
        plain = self.plain_run(a, "plain.raw", *opts)
        for ext in ["btf", "tf8"]:
            with self.subTest(ext=ext):
                out = self.p("o." + ext)
                r = self.oocconv(a, out, *opts)
                self.assertExit(r, 0)
                with open(out, "rb") as f:
                    head = f.read(4)
                self.assertIn(head, (b"II+\x00", b"MM\x00+"), "not BigTIFF: %r\n%s" % (head, r))
                if tifffile is not None:
                    got = tifffile.imread(out)
                    want = np.fromfile(plain, "<f4").reshape(50, 100)
                    np.testing.assert_array_equal(got, want)

    def test_overwrite_keeps_existing_mode(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        for mode in [0o600, 0o640]:
            with self.subTest(mode=oct(mode)):
                out = self.p("o.raw")
                with open(out, "wb") as f:
                    f.write(b"old")
                os.chmod(out, mode)
                r = self.oocconv(a, out, "--width", "100", "--radius", "2")
                self.assertExit(r, 0)
                self.assertEqual(oct(stat.S_IMODE(os.stat(out).st_mode)), oct(mode), str(r))
                self.assertEqual(os.path.getsize(out), 50 * 100 * 4)

    def test_new_output_mode_follows_umask(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        for umask in [0o022, 0o027, 0o002]:
            with self.subTest(umask=oct(umask)):
                out = self.p("new_%o.raw" % umask)
                r = self.oocconv(a, out, "--width", "100", "--radius", "2", umask=umask)
                self.assertExit(r, 0)
                self.assertEqual(oct(stat.S_IMODE(os.stat(out).st_mode)), oct(0o666 & ~umask))


# =============================================================================================
# 21-22. Precision, and radii far beyond the image
# =============================================================================================

class Precision(HostileBase):
    def setUp(self):
        if ndimage is None:
            self.skipTest("this python has no scipy")
        super().setUp()

    def test_f32_input_to_i32_output_is_exact_to_1(self):
        # Around 2e7 an f32 holds steps of 2: sums in f32 would be off by more than 1.
        a, img = self.raw_f32("a.raw", 64, 64, lo=1e7, hi=3e7)
        r = self.oocconv(a, "o.raw", "--width", "64", "--radius", "3", "--out-type", "i32",
                         cwd=self.d)
        self.assertExit(r, 0)
        got = np.fromfile(self.p("o.raw"), "<i4").reshape(64, 64).astype(np.float64)
        ref = np.round(scipy_separable(img, gaussian_taps(3)))
        self.assertLessEqual(np.abs(got - ref).max(), 1, str(r))

    def _timed(self, args, limit_s):
        r = self.oocconv(*args, cwd=self.d, timeout=3 * limit_s + 10)
        self.assertExit(r, 0)
        self.assertLess(r.secs, limit_s, "too slow:\n%s" % r)
        return r

    def test_radius_10000_on_100x50_is_fast_and_right(self):
        a, img = self.raw_f32("a.raw", 50, 100)
        self._timed([a, "o.raw", "--width", "100", "--radius", "10000"], 3)
        got = np.fromfile(self.p("o.raw"), "<f4").reshape(50, 100)
        ref = scipy_separable(img, gaussian_taps(10000))
        self.assertLessEqual(np.abs(got - ref).max(), 1e-4 * np.abs(ref).max())

    def test_radius_30000_on_100x50_is_fast(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        self._timed([a, "o.raw", "--width", "100", "--radius", "30000"], 6)

    def test_taps_file_of_100001_taps_is_fast(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        taps = np.random.default_rng(3).uniform(0.5, 1.5, 100001)
        taps /= taps.sum()
        with open(self.p("taps.txt"), "w") as f:
            f.write(",".join("%.9g" % t for t in taps) + "\n")
        self._timed([a, "o.raw", "--width", "100", "--taps-file", "taps.txt"], 10)

    def test_radius_5000_on_2000x50_is_fast(self):
        a, _ = self.raw_f32("a.raw", 50, 2000)
        self._timed([a, "o.raw", "--width", "2000", "--radius", "5000"], 3)


# =============================================================================================
# 23. A real memory cgroup
# =============================================================================================

class MemoryCgroup:
    """A memory cgroup (v1, else v2) with a limit; preexec() moves the child into it."""

    V1 = "/sys/fs/cgroup/memory"

    def __init__(self, limit_bytes):
        self.limit = limit_bytes
        self.path = None
        self.kind = None

    def __enter__(self):
        name = "ooc_hostile_%d_%d" % (os.getpid(), time.monotonic_ns() % 1000000)
        reasons = []
        if os.path.isdir(self.V1) and os.access(self.V1, os.W_OK):
            try:
                self.path = os.path.join(self.V1, name)
                os.mkdir(self.path)
                self.kind = 1
                self._write("memory.limit_in_bytes", self.limit)
                if os.path.exists(os.path.join(self.path, "memory.memsw.limit_in_bytes")):
                    self._write("memory.memsw.limit_in_bytes", self.limit)
                return self
            except OSError as e:
                self._remove()
                reasons.append("cgroup v1: %s" % e)
        else:
            reasons.append("cgroup v1: %s is not writable" % self.V1)
        v2 = self._v2_root()
        if v2 and os.access(v2, os.W_OK):
            try:
                self.path = os.path.join(v2, name)
                os.mkdir(self.path)
                self.kind = 2
                if not os.path.exists(os.path.join(self.path, "memory.max")):
                    raise OSError("the memory controller is not enabled at %s" % v2)
                self._write("memory.max", self.limit)
                if os.path.exists(os.path.join(self.path, "memory.swap.max")):
                    self._write("memory.swap.max", 0)
                return self
            except OSError as e:
                self._remove()
                reasons.append("cgroup v2: %s" % e)
        else:
            reasons.append("cgroup v2: no writable mount")
        raise unittest.SkipTest("no memory cgroup can be made (%s)" % "; ".join(reasons))

    def __exit__(self, *exc):
        self._remove()

    @staticmethod
    def _v2_root():
        with open("/proc/self/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[2] == "cgroup2":
                    return fields[1]
        return None

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def _read(self, name):
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return None

    def _remove(self):
        if self.path and os.path.isdir(self.path):
            for _ in range(50):  # the child may still be leaving it
                try:
                    os.rmdir(self.path)
                    break
                except OSError:
                    time.sleep(0.1)
        self.path = None

    def preexec(self):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def peak(self):
        v = self._read("memory.max_usage_in_bytes" if self.kind == 1 else "memory.peak")
        return int(v) if v else None

    def oom_kills(self):
        text = self._read("memory.oom_control" if self.kind == 1 else "memory.events") or ""
        m = re.search(r"oom_kill (\d+)", text)
        return int(m.group(1)) if m else 0


class RealCgroup(HostileBase):
    LIMIT = 200 << 20

    def test_deflate_strip_under_200M_cgroup_refused_not_oom_killed(self):
        with MemoryCgroup(self.LIMIT) as cg:
            big = Shared.big_deflate_tiff(self)
            r = self.oocconv(big, "o.raw", "--radius", "1", "--mem-limit", "16M", "--device", "cpu",
                             cwd=self.d, timeout=60, preexec_fn=cg.preexec, measure_rss=True)
            kills = cg.oom_kills()
        self.assertNotIn(r.rc, (-9, 137), "OOM-killed\n%s" % r)
        self.assertEqual(kills, 0, "the cgroup saw an OOM kill\n%s" % r)
        self.assertExit(r, 2)
        self.assertNoPartial(r=r)

    def test_2G_synth_under_200M_cgroup_with_64M_mem_limit(self):
        # null: the memory bound is the point; a file would also charge the cgroup for page
        # cache, and where /tmp lives in memory (gVisor on the GPU machine) for the whole file.
        out = "null:"
        with MemoryCgroup(self.LIMIT) as cg:
            r = self.oocconv("synth:noise", out, "--width", "16384", "--height", "32768",
                             "--radius", "16", "--mem-limit", "64M", "--device", "cpu", "-q",
                             timeout=240,
                             preexec_fn=cg.preexec, measure_rss=True)
            peak, kills = cg.peak(), cg.oom_kills()
        if out != "null:" and os.path.exists(out):
            size = os.path.getsize(out)
            os.unlink(out)  # 2 GiB: not kept until the directory goes
            self.assertEqual(size, 16384 * 32768 * 4)
        self.assertExit(r, 0)
        self.assertEqual(kills, 0, "the cgroup saw an OOM kill\n%s" % r)
        if peak is not None:
            self.assertLessEqual(peak, self.LIMIT, str(r))
        self.assertLess(r.rss_kb, self.LIMIT // 1024, str(r))
        self.assertNoPartial(r=r)


    def test_pipeline_of_six_stages_stays_under_its_mem_limit(self):
        # The halos of every stage and each stage's intermediate rows are planned inside
        # --mem-limit: 512 MiB of f32 through six stages in a 200M cgroup with a 48M limit.
        chain = ("gaussian sigma=3 ! dog sigma1=1 sigma2=2 ! gradient-magnitude ! "
                 "white-tophat size=15 ! scale mul=4 ! convert type=u8")
        with MemoryCgroup(self.LIMIT) as cg:
            r = run([tool("oocrun"), "synth:noise", "null:", chain, "--width", "8192",
                     "--height", "16384", "--mem-limit", "48M", "--device", "cpu", "-q"],
                    timeout=300, preexec_fn=cg.preexec, measure_rss=True)
            peak, kills = cg.peak(), cg.oom_kills()
        self.assertExit(r, 0)
        self.assertEqual(kills, 0, "the cgroup saw an OOM kill\n%s" % r)
        if peak is not None:
            self.assertLessEqual(peak, self.LIMIT, str(r))
        # The limit plus the process's own code and libraries (about 30 MiB here).
        self.assertLess(r.rss_kb, (48 << 20) // 1024 + 40 * 1024, str(r))

    def test_defaults_follow_the_cgroup_limit(self):
        # No --mem-limit: the default is a quarter of the cgroup's limit (not of the node's RAM),
        # and oocinfo names the cgroup file it came from.
        with MemoryCgroup(self.LIMIT) as cg:
            r = self.oocconv("synth:noise", "null:", "--width", "4096", "--height", "4096",
                             "--radius", "16", "--device", "cpu", "--stats", "json",
                             preexec_fn=cg.preexec)
            info = run([tool("oocinfo")], preexec_fn=cg.preexec)
        self.assertExit(r, 0)
        self.assertEqual(json.loads(r.out)["plan"]["mem_limit_bytes"], self.LIMIT // 4, str(r))
        self.assertExit(info, 0)
        self.assertIn("default --mem-limit: 50.0 MiB", info.out, str(info))
        self.assertIn("cgroup limit /sys/fs/cgroup", info.out, str(info))


class CpuAffinity(HostileBase):
    def test_defaults_follow_the_affinity_mask(self):
        # As Slurm's --cpus-per-task leaves it: one allowed core means one thread by default,
        # for the pipeline and for TIFF decoding alike.
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("this process may use one core only: nothing to narrow")
        one = {min(os.sched_getaffinity(0))}
        pin = lambda: os.sched_setaffinity(0, one)
        r = self.oocconv("synth:noise", "null:", "--width", "512", "--height", "512",
                         "--radius", "2", "--device", "cpu", "--stats", "json", preexec_fn=pin)
        self.assertExit(r, 0)
        self.assertEqual(json.loads(r.out)["plan"]["threads"], 1, str(r))
        info = run([tool("oocinfo")], preexec_fn=pin)
        self.assertIn("default --threads: 1, from the CPU affinity mask (1 of", info.out,
                      str(info))
        # --threads still wins over the mask (the user asked for it).
        r = self.oocconv("synth:noise", "null:", "--width", "512", "--height", "512",
                         "--radius", "2", "--device", "cpu", "--threads", "3", "--stats", "json",
                         preexec_fn=pin)
        self.assertEqual(json.loads(r.out)["plan"]["threads"], 3, str(r))


# =============================================================================================
# Further hostile cases (beyond the original list): odd names, unwritable places, nonsense
# options, inputs and taps files that are not regular files, NaN borders, absurd geometry.
# Expected everywhere: a clear error, non-zero exit, nothing lost, no hang, no crash.
# =============================================================================================

class FurtherHostile(HostileBase):
    def test_names_with_spaces_newlines_and_leading_dashes(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        opts = ["--width", "100", "--radius", "3"]
        plain = self.plain_run(a, "plain.raw", *opts)
        odd_in, odd_out = "-in put\n.raw", "-out put\n.raw"
        shutil.copyfile(a, self.p(odd_in))
        r = self.oocconv(*opts, "--", odd_in, odd_out, cwd=self.d)
        self.assertExit(r, 0)
        self.assertSameBytes(self.p(odd_out), plain, r)
        g = self.oocgen("--width", "100", "--height", "50", "--", "-gen\n.raw", cwd=self.d)
        self.assertExit(g, 0)
        self.assertEqual(os.path.getsize(self.p("-gen\n.raw")), 50 * 100 * 4)
        self.assertNoPartial(r=r)

    def test_output_in_read_only_directory_is_io_error(self):
        # Root ignores directory permissions: as root the tool runs as nobody.
        a, _ = self.raw_f32("a.raw", 50, 100)
        ro = self.p("ro")
        os.mkdir(ro)
        kw = {}
        if IS_ROOT:
            os.chmod(self.d, 0o755)
            os.chmod(a, 0o644)
            os.chmod(ro, 0o755)  # owned by root: nobody cannot write
            kw = dict(user=65534, group=65534, extra_groups=[])
            if run(["test", "-r", a], **kw).rc != 0:
                self.skipTest("user nobody cannot reach %s (a parent directory is private)" % a)
        else:
            os.chmod(ro, 0o555)
        r = self.oocconv(a, os.path.join(ro, "o.raw"), "--width", "100", "--radius", "1", **kw)
        self.assertExit(r, 4)
        self.assertMentions(r, "o.raw")
        self.assertEqual(os.listdir(ro), [], str(r))

    def test_output_is_a_directory(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        os.mkdir(self.p("dir.raw"))
        with open(self.p("dir.raw", "keep"), "w") as f:
            f.write("keep")
        r = self.oocconv(a, "dir.raw", "--width", "100", "--radius", "1", cwd=self.d)
        self.assertExit(r, 2, 4)
        self.assertTrue(os.path.isdir(self.p("dir.raw")))
        self.assertEqual(os.listdir(self.p("dir.raw")), ["keep"])
        self.assertNoPartial(r=r)

    def test_output_in_missing_directory(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        r = self.oocconv(a, "no/such/dir/o.raw", "--width", "100", "--radius", "1", cwd=self.d)
        self.assertExit(r, 2, 4)
        self.assertMentions(r, "o.raw", "no/such")
        self.assertAbsent(self.p("no"), r)

    def test_output_name_at_name_max(self):
        # 255 bytes: a valid name whose ".partial" sibling is too long. Either it works (another
        # temporary name) or it fails cleanly; nothing is left either way.
        a, _ = self.raw_f32("a.raw", 50, 100)
        opts = ["--width", "100", "--radius", "1"]
        plain = self.plain_run(a, "plain.raw", *opts)
        name = "n" * 251 + ".raw"
        r = self.oocconv(a, name, *opts, cwd=self.d)
        self.assertExit(r, 0, 2, 4)
        if r.rc == 0:
            self.assertSameBytes(self.p(name), plain, r)
        else:
            self.assertAbsent(self.p(name), r)
        self.assertEqual(sorted(os.listdir(self.d)), sorted(["a.raw", "plain.raw"] +
                                                             ([name] if r.rc == 0 else [])))

    def test_mem_limit_nonsense_refused(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        for value in ["0", "-1", "1e400", "abc", "16X", "", "99999999999999999999999G", "nan"]:
            with self.subTest(mem_limit=value):
                r = self.oocconv(a, "o.raw", "--width", "100", "--radius", "1", "--mem-limit",
                                 value, cwd=self.d, timeout=30, preexec_fn=safety_as)
                self.assertExit(r, 2)
                self.assertMentions(r, "mem-limit", "memory")
                self.assertAbsent(self.p("o.raw"), r)

    def test_taps_file_that_is_not_a_regular_file(self):
        a, _ = self.raw_f32("a.raw", 50, 100)
        os.mkdir(self.p("tapsdir"))
        os.mkfifo(self.p("tapsfifo"))  # no writer: a blocking open hangs
        cases = [("/dev/zero", (2, 3)), ("tapsdir", (2, 3)), ("tapsfifo", (2, 3)),
                 ("missing.txt", (2, 3, 4))]
        for taps, codes in cases:
            with self.subTest(taps_file=taps):
                r = self.oocconv(a, "o.raw", "--width", "100", "--taps-file", taps, cwd=self.d,
                                 timeout=10, measure_rss=True, preexec_fn=safety_as)
                self.assertExit(r, *codes)
                self.assertLess(r.secs, 5, str(r))
                self.assertLess(r.rss_kb, 200 * 1024, str(r))
                self.assertMentions(r, os.path.basename(taps))
                self.assertAbsent(self.p("o.raw"), r)

    def test_input_that_is_not_a_regular_file(self):
        os.mkdir(self.p("indir"))
        os.mkfifo(self.p("infifo"))
        open(self.p("empty.raw"), "wb").close()
        for inp in ["/dev/zero", "indir", "infifo", "empty.raw"]:
            with self.subTest(input=inp):
                r = self.oocconv(inp, "o.raw", "--width", "100", "--radius", "1", cwd=self.d,
                                 timeout=10, measure_rss=True, preexec_fn=safety_as)
                self.assertExit(r, 2, 3, 4)
                self.assertLess(r.secs, 5, str(r))
                self.assertLess(r.rss_kb, 200 * 1024, str(r))
                self.assertAbsent(self.p("o.raw"), r)
                self.assertNoPartial(r=r)

    def test_input_partial_under_another_spelling_refused(self):
        # The same file as OUTPUT.partial, named otherwise: a path with "..", a symlink, a
        # hard link. Identity must be by file, not by string.
        a, _ = self.raw_f32("a.raw", 50, 100)
        shutil.copyfile(a, self.p("x.raw.partial"))
        before = digest(self.p("x.raw.partial"))
        os.mkdir(self.p("sub"))
        os.symlink("x.raw.partial", self.p("link.raw"))
        os.link(self.p("x.raw.partial"), self.p("hard.raw"))
        for inp in ["sub/../x.raw.partial", "link.raw", "hard.raw"]:
            with self.subTest(input=inp):
                r = self.oocconv(inp, "x.raw", "--width", "100", "--radius", "3", cwd=self.d)
                self.assertExit(r, 2)
                self.assertEqual(digest(self.p("x.raw.partial")), before, str(r))
                self.assertAbsent(self.p("x.raw"), r)

    def test_border_value_nan_or_inf(self):
        # Refused naming the option, or taken as scipy takes cval (NaN/inf near the edges).
        if ndimage is None:
            self.skipTest("this python has no scipy")
        a, img = self.raw_f32("a.raw", 20, 30)
        for value in ["nan", "inf"]:
            with self.subTest(border_value=value):
                r = self.oocconv(a, "o.raw", "--width", "30", "--radius", "2", "--border",
                                 "constant", "--border-value", value, "--precision", "f64",
                                 cwd=self.d, timeout=30)
                self.assertExit(r, 0, 2)
                if r.rc == 2:
                    self.assertMentions(r, "border-value")
                    continue
                got = np.fromfile(self.p("o.raw"), "<f4").reshape(20, 30).astype(np.float64)
                ref = scipy_separable(img, gaussian_taps(2), "constant", float(value))
                np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
                fin = np.isfinite(ref)
                np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-5)
                np.testing.assert_array_equal(got[~fin], ref[~fin])

    def test_absurd_synth_geometry_to_null_refused_quickly(self):
        cases = [["--width", "4611686018427387904", "--height", "1"],
                 ["--width", "3000000000", "--height", "3000000000"],
                 ["--width", "4294967296", "--height", "4294967296", "--channels", "4", "--type",
                  "f64"],
                 ["--width", "3000000000", "--height", "1", "--mem-limit", "64M"]]
        for geo in cases:
            with self.subTest(geometry=" ".join(geo)):
                r = self.oocconv("synth:noise", "null:", *geo, "--radius", "1", timeout=30,
                                 measure_rss=True, preexec_fn=safety_as)
                self.assertExit(r, 2)
                self.assertLess(r.secs, 5, str(r))
                self.assertLess(r.rss_kb, 200 * 1024, str(r))

    def test_stdout_closed_with_stats_json_output_unchanged(self):
        # With fd 1 closed, the output file may get fd 1: the JSON must not land in it.
        a, _ = self.raw_f32("a.raw", 500, 1000)
        opts = ["--width", "1000", "--radius", "3"]
        plain = self.plain_run(a, "plain.raw", *opts)
        r = self.oocconv(a, "o.raw", *opts, "--stats", "json", cwd=self.d,
                         stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
        self.assertExit(r, 4)  # the report is lost: said, though the output is complete
        self.assertSameBytes(self.p("o.raw"), plain, r)
        self.assertNoPartial(r=r)

    def test_progress_to_dev_full_completes(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        a, _ = self.raw_f32("a.raw", 2048, 4096)
        opts = ["--width", "4096", "--radius", "64", "--threads", "1"]
        plain = self.plain_run(a, "plain.raw", *opts)
        with open("/dev/full", "wb") as full:
            r = self.oocconv(a, "o.raw", *opts, "--progress", cwd=self.d, stderr=full)
        self.assertExit(r, 0, 4)
        self.assertSameBytes(self.p("o.raw"), plain, r)
        self.assertNoPartial(r=r)

    def test_oocgen_output_symlink_is_written_through(self):
        normal = self.oocgen("plain.raw", "--width", "100", "--height", "50", cwd=self.d)
        self.assertExit(normal, 0)
        with open(self.p("target.raw"), "wb") as f:
            f.write(b"old")
        os.symlink("target.raw", self.p("g.raw"))
        r = self.oocgen("g.raw", "--width", "100", "--height", "50", cwd=self.d)
        self.assertExit(r, 0)
        self.assertTrue(os.path.islink(self.p("g.raw")), "the link was replaced\n%s" % r)
        self.assertSameBytes(self.p("target.raw"), self.p("plain.raw"), r)
        self.assertNoPartial(r=r)

    def test_oocgen_signal_mid_run_keeps_old_output(self):
        out = self.p("g.raw")
        with open(out, "wb") as f:
            f.write(b"precious\n")
        before = digest(out)
        for sig in [signal.SIGTERM, signal.SIGINT]:
            with self.subTest(signal=sig.name):
                # 1 GiB: several seconds of writing on the CI machine
                proc = Proc([tool("oocgen"), out, "--width", "16384", "--height", "16384", "-q"],
                            preexec_fn=default_signals(sig))
                time.sleep(0.3)
                if proc.poll() is not None:
                    self.skipTest("oocgen ended before %s:\n%s" % (sig.name, proc.result))
                os.kill(proc.pid, sig)
                r = proc.finish(60)
                self.assertKilledBy(r, sig)
                self.assertEqual(digest(out), before, str(r))
                self.assertNoPartial(r=r)

    def test_oocgen_btf_output_is_bigtiff(self):
        r = self.oocgen("g.btf", "--width", "100", "--height", "50", cwd=self.d)
        self.assertExit(r, 0)
        with open(self.p("g.btf"), "rb") as f:
            self.assertIn(f.read(4), (b"II+\x00", b"MM\x00+"), str(r))


# =============================================================================================
# File systems without fcntl locks (some network file systems): refused unless --no-locks
# =============================================================================================

_NOLOCK_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
static int nolock(int fd, int cmd, void *arg, const char *name) {
  if (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK) { errno = ENOLCK; return -1; }
  int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, name);
  return real(fd, cmd, arg);
}
int fcntl(int fd, int cmd, ...) { va_list a; va_start(a, cmd); void *p = va_arg(a, void *);
  va_end(a); return nolock(fd, cmd, p, "fcntl"); }
int fcntl64(int fd, int cmd, ...) { va_list a; va_start(a, cmd); void *p = va_arg(a, void *);
  va_end(a); return nolock(fd, cmd, p, "fcntl64"); }
"""


class NoLocks(HostileBase):
    def test_lockless_file_system_is_refused_unless_no_locks(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler for the lock shim")
        src, shim = self.p("shim.c"), self.p("nolock.so")
        with open(src, "w") as f:
            f.write(_NOLOCK_SHIM)
        r = run([cc, "-shared", "-fPIC", "-o", shim, src, "-ldl"])
        self.assertEqual(r.rc, 0, str(r))
        a, arr = self.raw_f32("a.raw", 60, 100)
        env = dict(os.environ, LD_PRELOAD=shim)
        for extra in ([], ["--part", "0/2"]):
            with self.subTest(extra=extra):
                out = self.p("o%d.raw" % len(extra))
                r = self.oocconv(a, out, "--width", "100", "--radius", "2", *extra, env=env)
                self.assertExit(r, 2)
                self.assertMentions(r, "--no-locks")
                self.assertAbsent(out)
                self.assertNoPartial(r=r)
        out = self.p("ok.raw")
        r = self.oocconv(a, out, "--width", "100", "--radius", "2", "--no-locks", env=env)
        self.assertExit(r, 0)
        want = scipy_separable(arr.astype(np.float64), gaussian_taps(2))
        got = np.fromfile(out, np.float32).reshape(arr.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)



# =============================================================================================
# Every tool that writes parts finishes them; refused runs leave nothing; lost --stats reports
# =============================================================================================

class PartsRefusalsReports(HostileBase):
    def tool(self, name, *args, timeout=60, **kw):
        return run([tool(name)] + [os.fspath(a) for a in args], timeout=timeout, **kw)

    def test_oocrun_and_ooceq_finish_parts(self):
        # oocrun's parts, finished by oocrun --finish, equal one process and scipy.
        arr = random_image(161, 123, np.float32, seed=7)
        src = self.p("in.npy")
        np.save(src, arr)
        one, parted = self.p("one.npy"), self.p("parted.npy")
        stage = "gaussian sigma=2"
        r = self.tool("oocrun", src, one, stage, "-q")
        self.assertExit(r, 0)
        for i in range(3):
            r = self.tool("oocrun", src, parted, stage, "--part", "%d/3" % i)
            self.assertExit(r, 0)
            self.assertMentions(r, "oocrun --finish")
        self.assertAbsent(parted)
        r = self.tool("oocrun", "--finish", parted)
        self.assertExit(r, 0)
        self.assertSameBytes(parted, one, r)
        self.assertNoPartial(r=r)
        if ndimage is not None:  # sigma 2: radius 6
            want = scipy_separable(arr.astype(np.float64), gaussian_taps(6))
            np.testing.assert_allclose(np.load(parted), want, rtol=1e-5, atol=1e-4)
        # --finish takes no operands, in each tool; ooceq knows the option (nothing to finish).
        for name in ("oocconv", "oocrun", "ooceq"):
            with self.subTest(name):
                r = self.tool(name, src, self.p("x.npy"), "--finish", parted)
                self.assertExit(r, 2)
                self.assertMentions(r, "--finish OUT takes no INPUT")
                r = self.tool(name, "--finish", self.p("none.npy"))
                self.assertExit(r, 3)
                self.assertMentions(r, "no parts to finish")

    def test_stats_to_a_closed_stdout_is_an_io_error(self):
        # Every tool that prints --stats: the report that cannot be written is exit 4 with a
        # message (as a broken pipe is), the output still complete; no --stats: exit 0.
        arr = (random_image(90, 70, np.float32, seed=3) * 600).astype(np.uint16)
        src = self.p("in.npy")
        np.save(src, arr)
        runs = {"oocconv": ["--radius", "2"], "oocrun": ["abs"], "ooceq": []}
        for name, extra in runs.items():
            for stats in ("json", "text", None):
                with self.subTest(tool=name, stats=stats):
                    out = self.p("%s-%s.npy" % (name, stats))
                    args = [src, out] + extra + (["--stats", stats] if stats else []) + ["-q"]
                    r = self.tool(name, *args, stdout=subprocess.DEVNULL,
                                  preexec_fn=lambda: os.close(1))
                    if stats is None:
                        self.assertExit(r, 0)
                    else:
                        self.assertExit(r, 4)
                        self.assertMentions(r, "--stats report could not be written")
                    ref = self.p("ref-%s-%s.npy" % (name, stats))
                    self.assertExit(self.tool(name, src, ref, *extra, "-q"), 0)
                    self.assertSameBytes(out, ref, r)
        self.assertNoPartial()

    def test_refused_runs_leave_nothing_new(self):
        # An input that is the output's temporary, or the output itself, is refused under
        # --resume, --part and --rows too, and no file appears (the job's manifest included).
        arr = random_image(60, 40, np.float32, seed=5)
        np.save(self.p("q.npy"), arr)
        shutil.copyfile(self.p("q.npy"), self.p("q.npy.partial"))
        shutil.copyfile(self.p("q.npy"), self.p("k.npy"))
        before = {n: digest(self.p(n)) for n in os.listdir(self.d)}
        cases = [("q.npy.partial", "q.npy", extra) for extra in
                 (["--resume"], [], ["--part", "0/2"], ["--rows", "0:10"],
                  ["--resume", "--part", "1/2"])]
        cases += [("k.npy", "k.npy", ["--resume"]), ("k.npy", "k.npy", ["--part", "0/2"])]
        for name, op in (("oocconv", ["--radius", "1"]), ("oocrun", ["abs"])):
            for src, out, extra in cases:
                with self.subTest(tool=name, src=src, out=out, extra=extra):
                    r = self.tool(name, src, out, *op, *extra, "-q", cwd=self.d)
                    self.assertExit(r, 2)
                    self.assertMentions(r, "temporary name", "is the input file")
                    now = {n: digest(self.p(n)) for n in os.listdir(self.d)}
                    self.assertEqual(now, before, str(r))


def main():
    missing = [t for t in ("oocconv", "oocgen", "ooccheck", "oocinfo")
               if not os.access(tool(t), os.X_OK)]
    if missing:
        print("hostile check: missing in %s: %s" % (BIN_DIR, ", ".join(missing)))
        return 1
    prog = unittest.main(argv=[sys.argv[0]] + _REST, exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
