#!/usr/bin/env python3
"""Hostile runs: a second writer of one output, closed stderr and stdout, inputs truncated
while mapped, signals mid-run (the old output kept, a resumable .partial), reports into closed pipes
and full devices (hostile_support.py says what every hostile check expects).
Usage: test_hostile_signals.py --bin-dir DIR [unittest options]"""

import filecmp
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import hostile_support
from hostile_support import (HostileBase, Proc, SLOW_OPTS, SLOW_W, Shared, default_signals, digest,
    main, partials, run, tool)

# The module's shared inputs: made in a folder before its tests, removed after them.
setUpModule = hostile_support.setUpModule
tearDownModule = hostile_support.tearDownModule


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
        # --resume (test_parts_and_resume.py resumes them), and the old output as it was.
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


if __name__ == "__main__":
    sys.exit(main())
