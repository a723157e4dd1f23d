#!/usr/bin/env python3
"""Further hostile cases: odd file names, unwritable places, nonsense options, file systems
without locks (refused unless --no-locks), parts finished by every tool, refused runs leaving
nothing (hostile_support.py says what every hostile check expects).
Usage: test_hostile_names_and_locks.py --bin-dir DIR [unittest options]"""

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

import hostile_support
from hostile_support import (HostileBase, IS_ROOT, Proc, default_signals, digest, gaussian_taps,
    main, ndimage, random_image, run, safety_as, scipy_separable, tool)

# The module's shared inputs: made in a folder before its tests, removed after them.
setUpModule = hostile_support.setUpModule
tearDownModule = hostile_support.tearDownModule


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


if __name__ == "__main__":
    sys.exit(main())
