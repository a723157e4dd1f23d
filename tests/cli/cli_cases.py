"""Many cases inside one unittest test, for the checks that sweep types, layouts and codecs.

Under pytest 7 without pytest-subtests a failing subTest ends its test, so the sweeps collect
instead: each case is reported on its own line (ok / FAIL / skip) as it finishes, and the test
fails at its end naming every failing case with all its problems, so one failing case hides none
of the others. A test whose every case was skipped (no vips, no mpirun) is reported skipped.

    with cli_cases.cases(self):
        ...
        cli_cases.report("u8 x3 deflate", [problem, ...])   # None entries are no problem
        cli_cases.fail("u16: exit 3: ...")                   # one failing case, by its message

report / skip / fail act on the test running now (one at a time), so helpers shared by the tests
report without being handed a collector.

The tests of a check draw their data from one seeded generator in the order the checks were once
written as a script; they are numbered (test_01_..., test_02_...) because unittest and pytest run a
class's tests in name order, so a full run draws the same data as before. A test run alone draws
other (equally random) data."""
import contextlib
import signal
import subprocess
import sys
import time
import unittest

_current = None


class Cases:
    def __init__(self, verbose):
        self.verbose = verbose
        self.failures = []
        self.ok = 0
        self.skipped = []

    def report(self, name, problems):
        problems = [x for x in problems if x]
        if problems:
            self.failures.append((name, problems))
            print(f"FAIL  {name}: " + " | ".join(problems), flush=True)
        else:
            self.ok += 1
            if self.verbose:
                print(f"ok    {name}", flush=True)

    def skip(self, name, why):
        self.skipped.append(f"{name}: {why}")
        print(f"skip  {name}: {why}", flush=True)


@contextlib.contextmanager
def cases(test, verbose=True):
    """Collects the cases reported while the block runs; then fails `test` listing every failing
    case, or skips it when every case was skipped."""
    global _current
    outer, _current = _current, Cases(verbose)
    c = _current
    try:
        yield c
    finally:
        _current = outer
    if c.failures:
        lines = [f"{len(c.failures)} of {len(c.failures) + c.ok} cases failed:"]
        for name, problems in c.failures:
            lines.append(f"  {name}")
            lines += [f"      {p}" for p in problems]
        test.fail("\n".join(lines))
    if c.skipped and not c.ok:
        raise unittest.SkipTest("; ".join(c.skipped))


def _now():
    if _current is None:
        raise RuntimeError("a case reported outside `with cli_cases.cases(test)`")
    return _current


def report(name, problems):
    """One case: ok when `problems` holds nothing but None / empty entries, else FAIL."""
    _now().report(name, problems)


def skip(name, why):
    _now().skip(name, why)


def fail(what):
    """One failing case, named by its message (the checks that report only failures)."""
    _now().report(what.split(":", 1)[0], [what])


def stop_and_resume(name, command, output_of, same):
    """A run stopped by SIGTERM part way, then resumed: `command(out)` is the run's argv writing
    `out`, `output_of(attempt)` names a fresh output for each attempt (a run that finished before
    the signal is tried again with a later signal), and `same(out)` lists how the resumed output
    differs from the reference. Reports one case `name`."""
    for attempt in range(4):
        out = output_of(attempt)
        cmd = command(out)
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3 + 0.3 * attempt)
        p.send_signal(signal.SIGTERM)
        err = p.communicate()[1]
        if p.returncode == 0:
            continue  # finished before the signal: try earlier work later
        if p.returncode != 75:
            return fail(f"{name}: SIGTERM: exit {p.returncode}: {err}")
        r = subprocess.run(cmd + ["--resume"], capture_output=True, text=True)
        return report(name, [f"--resume: exit {r.returncode}: {r.stderr}"] if r.returncode
                      else same(out))
    skip(name, "every run finished first")


def skip_module(module_name, why):
    """A check that cannot run here (tifffile or zarr-python missing), called at its import: as a
    script (`module_name` "__main__") it exits 77, ctest's SKIP_RETURN_CODE; imported by pytest
    the module is skipped, and conftest.py turns a run that collected nothing but such skips into
    exit 77 too."""
    print(f"skipped: {why}", flush=True)
    if module_name == "__main__":
        sys.exit(77)
    raise unittest.SkipTest(why)
