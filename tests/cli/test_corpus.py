#!/usr/bin/env python3
"""Byte-compare corpus: every tool, pipeline stage, file format, border and sample type run on
small images, each output hashed (sha256 of every file the command leaves, in sorted order) and
compared with the digests in corpus.json. A refactoring that promises "the same bytes" proves it
here; a deliberate change of output re-records the digests (--record) in the same commit.

  test_corpus.py --bin-dir DIR                        compare with corpus.json's digests
  test_corpus.py --bin-dir DIR --record               rewrite corpus.json's digests
  test_corpus.py --bin-dir NEW --reference-bin-dir OLD [--device cuda]
                                                       run both, compare their outputs
  test_corpus.py ... -k NAME                          only the cases whose name has NAME

The stored digests are CPU results: float sums depend on the kernels' instruction set (oocinfo's
"kernels avx2+fma" against "baseline"), so where it differs from the one recorded, the stored
comparison is skipped (exit 77), not failed. --device X adds --device X to every tool that takes
it; with a GPU only the two-bin-dir comparison means anything.
Inputs are written here by NumPy from fixed seeds (their digests are stored too), or are outputs
of earlier cases (TIFF, Zarr and pyramid inputs come from oocgen's cases)."""
import argparse
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

import cli_args  # beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus.json")
# Tools that take --device (ooccheck, oocgen and oocinfo do not).
DEVICE_TOOLS = {"oocconv", "oocrun", "ooceq", "oocatax"}
H, W = 217, 300  # odd, not a multiple of any band, tile or chunk size


def write_inputs(d):
    """The NumPy inputs, in d. The same bytes on every run: fixed seeds, explicit dtypes."""
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(44)

    def ints(dtype, shape):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)

    arrays = {
        "u8": ints(np.uint8, (H, W)),
        "u8c3": ints(np.uint8, (H, W, 3)),
        "u16": ints(np.uint16, (H, W)),
        "u16c2": ints(np.uint16, (H, W, 2)),
        "i16": ints(np.int16, (H, W)),
        "u32": ints(np.uint32, (H, W)),
        "i32": ints(np.int32, (H, W)),
        "f32": (rng.random((H, W)) * 200 - 50).astype(np.float32),
        "f64": rng.standard_normal((H, W)) * 10,
        "f32c4": rng.random((77, 129, 4)).astype(np.float32),
        # Dim: equalize spreads it.
        "u8dim": (rng.random((H, W)) * 40 + 100).astype(np.uint8),
        # A matrix for oocatax (M x N) and an X of N rows.
        "A": rng.standard_normal((H, W)),
        "x": rng.standard_normal(W),
    }
    for name, a in arrays.items():
        np.save(os.path.join(d, name + ".npy"), a)
    arrays["f32"].tofile(os.path.join(d, "f32.raw"))
    arrays["u16"].tofile(os.path.join(d, "u16.raw"))
    arrays["A"].astype(np.float32).tofile(os.path.join(d, "A32.raw"))
    fp = np.array([[0, 1, 0], [1, 1, 1], [1, 1, 1], [0, 1, 0], [0, 0, 1]], np.uint8)
    np.save(os.path.join(d, "fp.npy"), fp)
    np.save(os.path.join(d, "k.npy"), rng.random((5, 7)) - 0.3)
    with open(os.path.join(d, "k.txt"), "w") as f:
        f.write("1 2 1\n0 0 0\n-1 -2 -1\n0.5 0.25 0.5\n0 1 0\n")
    with open(os.path.join(d, "taps.txt"), "w") as f:
        f.write("0.1,0.2,0.4,0.2,0.1\n0.25,0.5,0.25\n")
    with open(os.path.join(d, "x.txt"), "w") as f:
        for v in arrays["x"][:H]:
            f.write(f"{v!r}\n")


def tree_digests(d):
    """{relative path: sha256} of every file under d."""
    out = {}
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(root, name)
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            out[os.path.relpath(p, d)] = h.hexdigest()
    return dict(sorted(out.items()))


def isa_facts(bin_dir):
    """What the CPU kernels' results depend on: the architecture, the CPU's AVX2 and FMA, and the
    kernels oocinfo says it runs (avx2+fma or baseline)."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    kernels = "?"
    try:
        r = subprocess.run([os.path.join(bin_dir, "oocinfo")], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
        m = re.search(r"kernels (\S+)", r.stdout)
        if m:
            kernels = m.group(1)
    except OSError:
        pass
    return {"machine": platform.machine(), "avx2": "avx2" in flags, "fma": "fma" in flags,
            "kernels": kernels}


class Corpus:
    def __init__(self, data, root, device=None):
        self.data, self.root, self.device = data, root, device

    def command(self, case, bin_dir):
        """(argv, stdout file or None) of one case, run in its own folder beside ../in."""
        if "python" in case:
            return [sys.executable, "-c", case["python"]], None
        argv = shlex.split(case["cmd"])
        tool = argv[0]
        argv[0] = os.path.join(bin_dir, tool)
        if self.device and tool in DEVICE_TOOLS:
            argv += ["--device", self.device]
        return argv, case.get("stdout")

    def run_side(self, side, bin_dir, cases):
        """Runs `cases` with the tools of bin_dir under root/side; {name: (rc, digests, stderr,
        seconds)}."""
        base = os.path.join(self.root, side)
        shutil.rmtree(base, ignore_errors=True)
        write_inputs(os.path.join(base, "in"))
        env = dict(os.environ, PYTHONPATH=os.path.join(bin_dir, "python"),
                   OOC_CPU_START=os.environ.get("OOC_CPU_START", "auto"))
        results = {}
        for case in cases:
            d = os.path.join(base, case["name"])
            os.makedirs(d)
            argv, stdout_name = self.command(case, bin_dir)
            t = time.monotonic()
            out = open(os.path.join(d, stdout_name), "w") if stdout_name else subprocess.DEVNULL
            try:
                r = subprocess.run(argv, cwd=d, env=env, stdout=out, stderr=subprocess.PIPE,
                                   text=True, timeout=120)
            finally:
                if stdout_name:
                    out.close()
            results[case["name"]] = (r.returncode, tree_digests(d), r.stderr,
                                     time.monotonic() - t)
        return results


def diff_digests(want, got):
    """Lines naming the files that differ between two {path: sha256} maps."""
    lines = []
    for p in sorted(set(want) | set(got)):
        if p not in got:
            lines.append(f"    {p}: missing")
        elif p not in want:
            lines.append(f"    {p}: not expected")
        elif want[p] != got[p]:
            lines.append(f"    {p}: sha256 {got[p][:16]}..., expected {want[p][:16]}...")
    return lines


def selected(data, only):
    cases = data["cases"]
    if only:
        # An earlier case whose output a selected one reads runs too.
        keep = {c["name"] for c in cases if any(o in c["name"] for o in only)}
        for c in reversed(cases):
            if c["name"] in keep:
                text = c.get("cmd", "") + c.get("python", "")
                keep |= set(re.findall(r"\.\./([\w-]+)/", text)) - {"in"}
        cases = [c for c in cases if c["name"] in keep]
    return cases


def record(data, bin_dir, root, only):
    corpus = Corpus(data, root)
    cases = selected(data, only)
    first = corpus.run_side("a", bin_dir, cases)
    again = corpus.run_side("b", bin_dir, cases)
    bad = 0
    for c in cases:
        rc, digests, err, _ = first[c["name"]]
        if rc != 0:
            print(f"{c['name']}: exit {rc}: {err.strip()}")
            bad += 1
            continue
        if again[c["name"]][1] != digests:
            print(f"{c['name']}: not deterministic:\n" +
                  "\n".join(diff_digests(digests, again[c['name']][1])))
            bad += 1
            continue
        c["sha256"] = digests
    if bad:
        print(f"{bad} case(s) not recorded; corpus.json unchanged")
        return 1
    data["isa"] = isa_facts(bin_dir)
    data["inputs"] = tree_digests(os.path.join(root, "a", "in"))
    with open(CORPUS, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    print(f"recorded {len(cases)} case(s) with {bin_dir} ({data['isa']})")
    return 0


def make_tests(data, bin_dir, ref_dir, device, root, only):
    cases = selected(data, only)

    class CorpusTest(unittest.TestCase):
        """One test per corpus case; the whole corpus runs once, in setUpClass."""

        @classmethod
        def setUpClass(cls):
            cls.skip_reason = None
            corpus = Corpus(data, root, device)
            if ref_dir is None:
                here = isa_facts(bin_dir)
                if here != data.get("isa"):
                    cls.skip_reason = (f"digests recorded where {data.get('isa')}, here {here}: "
                                       "float results may differ; compare two builds with "
                                       "--reference-bin-dir instead")
                    return
            t = time.monotonic()
            cls.new = corpus.run_side("new", bin_dir, cases)
            cls.ref = corpus.run_side("ref", ref_dir, cases) if ref_dir else None
            cls.seconds = time.monotonic() - t
            if ref_dir is None:
                got = tree_digests(os.path.join(root, "new", "in"))
                if got != data.get("inputs"):
                    cls.skip_reason = ("this NumPy writes other input bytes than the ones the "
                                       "digests were recorded with: " +
                                       "; ".join(diff_digests(data.get("inputs", {}), got)))

        def check(self, case):
            if self.skip_reason:
                self.skipTest(self.skip_reason)
            missing = self.missing(case)
            if missing:
                self.skipTest(f"{missing} is not built")
            rc, got, err, _ = self.new[case["name"]]
            what = case.get("cmd") or case.get("python")
            if self.ref is None:
                self.assertEqual(rc, 0, f"{what}: exit {rc}: {err.strip()}")
                want = case.get("sha256")
                self.assertIsNotNone(want, f"{case['name']}: no digests recorded (--record)")
            else:
                ref_rc, want, ref_err, _ = self.ref[case["name"]]
                self.assertEqual(rc, ref_rc, f"{what}: exit {rc}, the reference's {ref_rc}\n"
                                 f"  new: {err.strip()}\n  reference: {ref_err.strip()}")
            lines = diff_digests(want, got)
            if lines:
                self.fail(f"{what}: output differs:\n" + "\n".join(lines))

        @staticmethod
        def missing(case):
            """The tool or Python module a case needs where this build has none (a build
            without Python, or without oocatax), else None."""
            if "python" in case:
                p = os.path.join(bin_dir, "python", "ooc")
            else:
                p = os.path.join(bin_dir, shlex.split(case["cmd"])[0])
            return None if os.path.exists(p) else p

    for case in cases:
        def test(self, case=case):
            self.check(case)
        setattr(CorpusTest, "test_" + case["name"].replace("-", "_"), test)
    return CorpusTest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True, help="the tools under test (and python/ooc)")
    ap.add_argument("--record", action="store_true", help="write the digests to corpus.json")
    ap.add_argument("--reference-bin-dir", help="compare with these tools' outputs instead")
    ap.add_argument("--device", choices=["cpu", "cuda", "auto"],
                    help="--device for the tools that take it")
    ap.add_argument("-k", action="append", default=[], help="only cases whose name has this")
    ap.add_argument("--keep", action="store_true", help="keep the outputs (their folder printed)")
    args, rest = ap.parse_known_args()
    with open(CORPUS) as f:
        data = json.load(f)
    root = tempfile.mkdtemp(prefix="ooc_corpus_",
                            dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        bin_dir = os.path.abspath(args.bin_dir)
        if args.record:
            if args.device or args.reference_bin_dir:
                ap.error("--record takes the CPU digests of --bin-dir only")
            return record(data, bin_dir, root, args.k)
        ref = os.path.abspath(args.reference_bin_dir) if args.reference_bin_dir else None
        if args.device == "cuda" and not ref:
            print("note: the stored digests are CPU results; --device cuda is meant with "
                  "--reference-bin-dir", file=sys.stderr)
        test = make_tests(data, bin_dir, ref, args.device, root, args.k)
        t = time.monotonic()
        verbosity = 2 if cli_args.take_flag(rest, "-v") else 1
        if rest:
            ap.error("unknown arguments: " + " ".join(rest))
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(test)
        result = unittest.TextTestRunner(verbosity=verbosity).run(suite)
        print(f"corpus: {result.testsRun} case(s) in {time.monotonic() - t:.1f} s")
        if result.testsRun and len(result.skipped) == result.testsRun:
            print(f"skipped: {result.skipped[0][1]}")
            return 77
        return 0 if result.wasSuccessful() else 1
    finally:
        if args.keep:
            print(f"outputs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
else:
    # Under pytest (conftest.py): the stored comparison of $OOC_BIN_DIR's tools.
    _bin, _ = cli_args.bin_dir_and_rest(__name__)
    with open(CORPUS) as _f:
        _data = json.load(_f)
    _root = tempfile.mkdtemp(prefix="ooc_corpus_",
                             dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    import atexit
    atexit.register(shutil.rmtree, _root, True)
    CorpusTest = make_tests(_data, _bin, None, None, _root, [])
