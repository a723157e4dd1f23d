#!/usr/bin/env python3
"""OME-Zarr volumes in chunks of several planes (--chunk-z) and pyramids halving z (--pyramid-z):
every level read back (zarr-python for Zarr 2; the spec's Zarr 3 reader of test_zarr_volumes.py for
sharded Zarr 3) equal to a float64 NumPy pyramid (2 x 2 means of each plane, or 2 x 2 x 2 means;
integers rounded half to even, an odd last plane, row or column averaged with itself), its chunks
and NGFF scales as said; chunk-z not dividing the depth, larger than it, with channels; parts
joined by --finish and a run stopped by SIGTERM and resumed equal to one run; bad values refused
(exit 2, a message naming the option, no output).

Usage: test_zarr_chunk_z.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

import cli_args  # beside this file
import cli_cases

try:
    import zarr
except ImportError:
    cli_cases.skip_module(__name__, "zarr-python is not installed")

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCRUN = os.path.join(BIN, "oocrun")
COPY = "scale mul=1"
os.environ.setdefault("OOC_BIN_DIR", BIN)  # for the shared module's own import
from test_zarr_volumes import read_v3  # noqa: E402  (a Zarr 3 reader of the spec, sharded)

rng = np.random.default_rng(46)


def run(*args):
    return subprocess.run([OOCRUN, *map(str, args)], capture_output=True, text=True)


def random_volume(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = (rng.random(shape) * 2000 - 1000).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(max(info.min, 1), min(info.max, 60000), shape).astype(dt)
    a[a == 0] = 1
    return a


def reduce(x, halve_z):
    """One level of a (z, y, x[, c]) volume from the one above, as stored: odd last planes, rows
    and columns doubled, the 4 (8) samples summed in float64 and rounded once."""
    f = x.astype(np.float64)
    for axis in (0, 1, 2) if halve_z else (1, 2):
        if f.shape[axis] % 2:
            f = np.concatenate([f, np.take(f, [-1], axis=axis)], axis)
    quad = lambda p: p[:, 0::2, 0::2] + p[:, 1::2, 0::2] + p[:, 0::2, 1::2] + p[:, 1::2, 1::2]
    m = (quad(f[0::2]) + quad(f[1::2])) / 8 if halve_z else quad(f) / 4
    return np.rint(m).astype(x.dtype) if x.dtype.kind in "iu" else m.astype(x.dtype)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def read_level(store, k, version):
    path = os.path.join(store, str(k))
    if version == 2:
        arr = zarr.open_array(path, mode="r")
        return arr[...], arr.chunks
    meta = load_json(os.path.join(path, "zarr.json"))
    inner = meta["codecs"][0]["configuration"]["chunk_shape"]
    outer = meta["chunk_grid"]["configuration"]["chunk_shape"]
    return read_v3(path), (tuple(inner), tuple(outer))


def scales(store, version):
    if version == 2:
        ms = load_json(os.path.join(store, ".zattrs"))["multiscales"][0]
    else:
        ms = load_json(os.path.join(store, "zarr.json"))["attributes"]["ome"]["multiscales"][0]
    return [d["coordinateTransformations"][0]["scale"] for d in ms["datasets"]]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class ZarrChunkZ(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ooc_zarr_chunk_z_")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def test_1_levels(self):
        """Levels 0-2 of chunk-z stores equal the NumPy pyramid; chunks and scales as said."""
        with cli_cases.cases(self):
            # dtype, channels, Zarr version, --chunk-z, depth, --pyramid-z
            for dt, channels, version, cz, depth, halve_z in (
                    ("u2", 1, 2, 3, 7, True),    # chunk-z not dividing the depth
                    ("u1", 3, 2, 2, 5, True),    # channels: (c, z, y, x)
                    ("f4", 1, 3, 4, 6, True),    # Zarr 3, shards chunk-z deep
                    ("u2", 1, 2, 8, 3, False),   # chunk-z over the depth; --pyramid keeps z
                    ("i2", 3, 3, 3, 7, False),
                    ("f4", 1, 2, 2, 9, True),
                    ("u2", 1, 3, 1, 5, True)):   # --pyramid-z with planes a chunk
                shape = (depth, 37, 45) + ((channels,) if channels > 1 else ())
                a = random_volume(shape, dt)
                src = self.p("in.npy")
                out = self.p(f"o_{dt}_{channels}_{version}_{cz}_{depth}_{halve_z}.zarr")
                np.save(src, a)
                extra = ["--chunk", 16, "--chunk-z", cz, "--levels", 2]
                extra += ["--pyramid-z"] if halve_z else []
                extra += ["--zarr-version", 3, "--shard", 32] if version == 3 else []
                name = f"{dt} x{channels} zarr {version} chunk-z {cz} depth {depth} " + (
                    "--pyramid-z" if halve_z else "--levels")
                r = run(src, out, COPY, "-q", *extra)
                if r.returncode:
                    cli_cases.fail(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                problems = []
                level = a
                lead = 1 if channels > 1 else 0
                got_scales = scales(out, version)
                for k in range(3):
                    want = np.moveaxis(level, -1, 0) if channels > 1 else level
                    got, chunks = read_level(out, k, version)
                    deep = min(cz, level.shape[0])
                    want_chunks = (1,) * lead + (deep, 16, 16)
                    if version == 3:
                        want_chunks = (want_chunks, (1,) * lead + (deep, 32, 32))
                    if chunks != want_chunks:
                        problems.append(f"level {k}: chunks {chunks}, want {want_chunks}")
                    if got.shape != want.shape or got.dtype != want.dtype:
                        problems.append(f"level {k}: {got.dtype} {got.shape}, want {want.shape}")
                    elif not np.array_equal(got, want):
                        problems.append(f"level {k} differs (max {np.abs(got.astype(float) - want).max()})")
                    f = 2.0 ** k
                    want_scale = [1.0] * lead + [f if halve_z else 1.0, f, f]
                    if got_scales[k] != want_scale:
                        problems.append(f"level {k}: scale {got_scales[k]}, want {want_scale}")
                    level = reduce(level, halve_z)
                if len(got_scales) != 3:
                    problems.append(f"{len(got_scales)} datasets, want 3")
                cli_cases.report(name, problems)

    def same_store(self, x, y):
        problems = []
        for root, _, files in os.walk(x):
            for f in files:
                a = os.path.join(root, f)
                b = os.path.join(y, os.path.relpath(a, x))
                if f in (".zattrs", "zarr.json") and root == x:
                    continue  # the group's name is the store's
                if not os.path.exists(b) or read_bytes(a) != read_bytes(b):
                    problems.append(f"{os.path.relpath(a, x)} differs")
        n = sum(len(f) for _, _, f in os.walk(x)), sum(len(f) for _, _, f in os.walk(y))
        if n[0] != n[1]:
            problems.append(f"{n[0]} files, {n[1]} in the other")
        return problems[:5]

    def test_2_parts_and_resume(self):
        """Parts on slabs joined by --finish, and a run stopped inside a slab and resumed: the
        store one run makes. Parts off the slabs are refused, naming the fix."""
        with cli_cases.cases(self):
            a = random_volume((12, 48, 50, 2), "u2")
            np.save(self.p("pv.npy"), a)
            for version, extra in ((2, ["--chunk", 16, "--chunk-z", 3]),
                                   (3, ["--chunk", 8, "--zarr-version", 3, "--shard", 16,
                                        "--chunk-z", 3])):
                one, parts = self.p(f"one{version}.zarr"), self.p(f"parts{version}.zarr")
                problems = []
                r = run(self.p("pv.npy"), one, "gaussian sigma=1", "-q", *extra)
                if r.returncode:
                    problems.append(f"one run: exit {r.returncode}: {r.stderr.strip()}")
                for i in (3, 0, 2, 1):
                    r = run(self.p("pv.npy"), parts, "gaussian sigma=1", "-q", *extra,
                            "--part", f"{i}/4")
                    if r.returncode:
                        problems.append(f"part {i}: exit {r.returncode}: {r.stderr.strip()}")
                r = run("--finish", parts)
                if r.returncode:
                    problems.append(f"--finish: exit {r.returncode}: {r.stderr.strip()}")
                if not problems:
                    problems = self.same_store(one, parts)
                cli_cases.report(f"4 parts of 4 slabs, zarr {version}", problems)
            # 3 parts of 4 slabs of 3 planes: the second starts at plane 4.
            out = self.p("offslab.zarr")
            r = run(self.p("pv.npy"), out, COPY, "-q", "--chunk", 16, "--chunk-z", 3,
                    "--part", "1/3")
            cli_cases.report("a part off the slabs refused", [
                f"exit {r.returncode}, want 2" if r.returncode != 2 else None,
                None if "--chunk-z 3" in r.stderr and "--rows" in r.stderr
                else f"stderr {r.stderr.strip()!r}",
                "a store was made" if os.path.exists(out) else None])
            # Stopped part way (a slow run on one thread), then resumed.
            slow = random_volume((40, 192, 192), "f4")
            np.save(self.p("slow.npy"), slow)
            args = [self.p("slow.npy"), None, "median size=7", "-q", "--chunk", 32,
                    "--chunk-z", 6, "--threads", 1, "--band-rows", 8]
            ref = self.p("ref.zarr")
            r = run(*[ref if x is None else x for x in args])
            if r.returncode:
                return cli_cases.fail(f"resume reference: exit {r.returncode}: {r.stderr}")
            cli_cases.stop_and_resume(
                "a chunk-z volume stopped and resumed",
                lambda out: [OOCRUN, *map(str, [out if x is None else x for x in args])],
                lambda attempt: self.p(f"resumed{attempt}.zarr"),
                lambda out: self.same_store(ref, out))

    def test_3_refusals(self):
        """Bad values: exit 2, a message naming the option, and no output."""
        with cli_cases.cases(self):
            vol, plane = self.p("vol.npy"), self.p("plane.npy")
            np.save(vol, random_volume((4, 20, 24), "u2"))
            np.save(plane, random_volume((20, 24), "u2"))
            for what, src, out, extra, phrases in (
                    ("--chunk-z 0", vol, "a.zarr", ["--chunk-z", 0], ["--chunk-z", "got 0"]),
                    ("--chunk-z -2", vol, "b.zarr", ["--chunk-z", -2], ["--chunk-z", "got -2"]),
                    ("--chunk-z of a plane", plane, "c.zarr", ["--chunk-z", 2],
                     ["--chunk-z", "is for volumes"]),
                    ("--pyramid-z of a plane", plane, "d.zarr", ["--pyramid-z"],
                     ["--pyramid-z", "is for volumes"]),
                    ("--chunk-z of a .npy output", vol, "e.npy", ["--chunk-z", 2],
                     ["--chunk-z", "Zarr"]),
                    ("--chunk-z over --mem-limit", "synth:noise", "f.zarr",
                     ["--width", 512, "--height", 512, "--depth", 64, "--type", "f32",
                      "--chunk-z", 64, "--mem-limit", "64M"], ["--chunk-z", "--mem-limit"])):
                dst = self.p(out)
                r = run(src, dst, COPY, "-q", *extra)
                left = [n for n in os.listdir(self.tmp) if n.startswith(out)]
                cli_cases.report(f"{what} refused", [
                    f"exit {r.returncode}, want 2" if r.returncode != 2 else None,
                    *[None if ph in r.stderr else f"no {ph!r} in {r.stderr.strip()!r}"
                      for ph in phrases],
                    f"left {left}" if left else None])


if __name__ == "__main__":
    unittest.main(argv=[__file__, *_REST])
