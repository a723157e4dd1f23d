#!/usr/bin/env python3
"""Stress of the Zarr writer's tasks against the engine's pipeline: hundreds of short oocrun runs
(1-4 threads, 1-3 row bands, 0-3 levels, chunk sizes odd and even, Zarr 2 and 3), each with a
deadline, each store equal to its configuration's reference store; then runs sent SIGTERM at
random moments (before, during and after the bands), each gone within a second of the signal,
stopped ones resumed to the reference. A lost wake-up (a thread waiting, inside one of the
writer's chunk tasks, for that very task) hung about one run in 300 here before.
Usage: test_zarr_stress.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py).
OOC_STRESS_RUNS sets the number of plain runs (default 200; a fifth of that get SIGTERM)."""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

import cli_args  # beside this file
import cli_cases
import store_tree
from cli_cases import fail

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCRUN = os.path.join(BIN, "oocrun")
tmp = tempfile.mkdtemp(prefix="ooc_stress_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
atexit.register(shutil.rmtree, tmp, True)
rng = np.random.default_rng(43)
RUNS = int(os.environ.get("OOC_STRESS_RUNS", "200"))
DEADLINE = 20  # seconds for one run of a few hundred rows: far past any honest run

# Configurations (chunk, levels, zarr version): their reference stores are made once, by one
# thread in bands of 64 rows.
CONFIGS = [(c, lv, v) for c in (7, 16, 17) for lv in (0, 1, 2, 3) for v in (2, 3)]


def source():
    p = os.path.join(tmp, "h.npy")
    if not os.path.exists(p):
        np.save(p, (rng.random((300, 129, 4)) * 254 + 1).astype(np.uint8))
    return p


def args_of(config):
    chunk, levels, version = config
    a = ["--chunk", chunk, "--levels", levels]
    if version == 3:
        a += ["--zarr-version", 3, "--shard", chunk * 3]
    return [str(x) for x in a]


def start(out, config, threads, band_rows, *extra):
    return subprocess.Popen([OOCRUN, source(), out, "abs", "--threads", str(threads),
                             "--band-rows", str(band_rows), *args_of(config), *extra, "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


_ref_trees = {}


def stores_equal(x, y):
    """The same files, byte for byte (the metadata naming the store aside); y, a reference store
    made once, is read once."""
    ignore = (".zattrs", "zarr.json")
    if y not in _ref_trees:
        _ref_trees[y] = store_tree.tree(y, ignore)
    return store_tree.same(x, y, ignore, _ref_trees[y])


_refs = {}


def reference(config):
    if config not in _refs:
        ref = os.path.join(tmp, "ref_%d_%d_%d.zarr" % config)
        p = start(ref, config, 1, 64)
        err = p.communicate(timeout=120)[1]
        if p.returncode:
            raise RuntimeError(f"the reference {config}: exit {p.returncode}: {err}")
        _refs[config] = ref
    return _refs[config]


def finish_within(p, seconds):
    """(exit code, or None (killed) when it is still there after `seconds`; its stderr)."""
    try:
        err = p.communicate(timeout=seconds)[1]
        return p.returncode, err
    except subprocess.TimeoutExpired:
        p.kill()
        return None, p.communicate()[1]


class StressCheck(unittest.TestCase):
    def test_1_runs_end(self):
        """RUNS runs, each ended within DEADLINE and equal to its reference."""
        with cli_cases.cases(self, verbose=False):
            hung = wrong = 0
            for i in range(RUNS):
                config = CONFIGS[int(rng.integers(len(CONFIGS)))]
                threads, band_rows = int(rng.integers(1, 5)), int(rng.integers(1, 4))
                ref = reference(config)
                out = os.path.join(tmp, "o.zarr")
                shutil.rmtree(out, ignore_errors=True)
                p = start(out, config, threads, band_rows)
                rc, err = finish_within(p, DEADLINE)
                case = f"run {i}: {args_of(config)} --threads {threads} --band-rows {band_rows}"
                if rc is None:
                    hung += 1
                    fail(f"{case}: still running after {DEADLINE} s (killed)")
                    shutil.rmtree(out + ".partial", ignore_errors=True)
                elif rc or not stores_equal(out, ref):
                    wrong += 1
                    fail(f"{case}: exit {rc}: {err} equal {rc == 0 and stores_equal(out, ref)}")
                if hung + wrong >= 5:
                    break

    def test_2_sigterm_answered(self):
        """SIGTERM at a random moment of a run: the process is gone within a second, its exit
        says what it did (0 done, 75 stopped and resumable, 143 stopped at once, or killed
        before its handlers were set), and a stopped run resumes to the reference store."""
        with cli_cases.cases(self, verbose=False):
            config = (16, 2, 2)
            ref = reference(config)
            # How long one run takes here: the signals fall from its start to past its end.
            t0 = time.monotonic()
            p = start(os.path.join(tmp, "timing.zarr"), config, 2, 1)
            finish_within(p, DEADLINE)
            took = time.monotonic() - t0
            seen = set()
            for i in range(max(8, RUNS // 5)):
                threads = int(rng.integers(1, 5))
                delay = float(rng.random()) * took * 1.2
                out = os.path.join(tmp, "t.zarr")
                for d in (out, out + ".partial"):
                    shutil.rmtree(d, ignore_errors=True)
                p = start(out, config, threads, 1)
                time.sleep(delay)
                p.send_signal(signal.SIGTERM)
                rc, err = finish_within(p, 1.0)
                case = f"SIGTERM {delay:.3f} s into a run of --threads {threads}"
                seen.add(rc)
                if rc is None:
                    fail(f"{case}: still running a second later (killed)")
                    continue
                # 143: stopped at once, its temporaries removed (the signal came before the
                # run could stop at a band); -15: before the handlers were set.
                if rc not in (0, 75, 128 + signal.SIGTERM, -signal.SIGTERM):
                    fail(f"{case}: exit {rc}: {err}")
                    continue
                if rc == 0 and not stores_equal(out, ref):
                    fail(f"{case}: exit 0 and a store unlike the reference")
                if rc != 75:
                    if os.path.exists(out + ".partial"):
                        fail(f"{case}: exit {rc} left {out}.partial")
                    continue
                r = start(out, config, threads, 1, "--resume")
                rc2, err = finish_within(r, DEADLINE)
                if rc2 != 0 or not stores_equal(out, ref):
                    fail(f"{case}: --resume: exit {rc2}: {err}")
            if 75 not in seen:
                fail(f"no run was stopped by its SIGTERM (exits {sorted(map(str, seen))}): "
                     "the signals all came too early or too late")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
