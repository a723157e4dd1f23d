"""What the hostile checks (test_hostile_*.py) share: running the tools with limits and timeouts,
inputs made once per module, and the assertions. The checks are end-to-end checks of oocconv,
oocgen, ooccheck and oocinfo (the hardening's proof).

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

Usage: test_hostile_*.py --bin-dir DIR [unittest options, e.g. -v, -k NAME]
"""
import hashlib
import os
import resource
import shlex
import shutil
import signal
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
    cli_args.entry(__name__), description=__doc__.split("\n")[0],
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
    # Each test module has a folder of its own: the cache must not name the last one's files.
    Shared.dir = tempfile.mkdtemp(prefix="ooc-hostile-shared-")
    Shared.cache = {}


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


def main():
    missing = [t for t in ("oocconv", "oocgen", "ooccheck", "oocinfo")
               if not os.access(tool(t), os.X_OK)]
    if missing:
        print("hostile check: missing in %s: %s" % (BIN_DIR, ", ".join(missing)))
        return 1
    prog = unittest.main(argv=[sys.argv[0]] + _REST, exit=False)
    return 0 if prog.result.wasSuccessful() else 1
