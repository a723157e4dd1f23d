#!/usr/bin/env python3
"""Zarr outputs of oocconv, read back by zarr-python: level 0 equals the same filter's raw output,
every pyramid level equals a NumPy float64 2 x 2 mean of the level above (integers rounded half to
even, odd last rows and columns averaged with themselves), the OME-Zarr 0.4 metadata is right
(channels first: c, y, x); over types, channels, chunk sizes and codecs. Parts (in any order, odd
chunk boundaries, chunks of any size: level rows made of two parts' rows), MPI ranks and a run
stopped by SIGTERM and resumed give the same chunk files as one run. GDAL reads the channels. Hostile
cases: an existing store, a second writer, a temporary in the way, misaligned --rows, bad
options. Zarr 3 (OME-Zarr 0.5) sharded stores read by an independent decoder and by ooc.
Usage: test_zarr_write.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py);
skipped (exit 77 as a script) without zarr-python."""
import atexit
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

import numpy as np

import cli_args  # beside this file
import cli_cases
import store_tree
from cli_cases import fail

try:
    import zarr
    import numcodecs
except ImportError as e:
    cli_cases.skip_module(__name__, f"python3-zarr is not installed ({e})")

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
conv = os.path.join(BIN, "oocconv")
tmp = tempfile.mkdtemp(prefix="ooc_zarr_w_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
atexit.register(shutil.rmtree, tmp, True)
# One generator for the whole check, drawn in the tests' (numbered) order: cli_cases.py.
rng = np.random.default_rng(31)


def run(*args, env=None):
    # A time limit: a writer that hangs (tasks left in an arena nobody serves) fails, not CI.
    try:
        return subprocess.run([conv, *map(str, args), "-q"], capture_output=True, text=True, env=env,
                              timeout=120)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, 124, "", "timed out after 120 s")


def reduce(x):
    """One pyramid level from the one above, as stored."""
    f = x.astype(np.float64)
    if f.shape[0] % 2:
        f = np.concatenate([f, f[-1:]], 0)
    if f.shape[1] % 2:
        f = np.concatenate([f, f[:, -1:]], 1)
    m = (f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]) / 4
    return np.rint(m).astype(x.dtype) if x.dtype.kind in "iu" else m.astype(x.dtype)


def check_store(case, path, level0, levels, chunk, channels):
    try:
        g = zarr.open_group(path, mode="r")
        ms = g.attrs["multiscales"][0]
    except Exception as e:  # noqa: BLE001 - any failure to open is the finding
        fail(f"{case}: zarr-python cannot open the store: {e}")
        return
    axes = [x["name"] for x in ms["axes"]]
    # NGFF orders axes by type: the channel before space, a plane per chunk.
    want_axes = (["c"] if channels > 1 else []) + ["y", "x"]
    if ms.get("version") != "0.4" or axes != want_axes or len(ms["datasets"]) != levels + 1:
        fail(f"{case}: multiscales {ms.get('version')} axes {axes} datasets {len(ms['datasets'])}")
        return
    cur = level0
    for k, d in enumerate(ms["datasets"]):
        arr = g[d["path"]]
        scale = d["coordinateTransformations"][0]["scale"]
        if scale != [1.0] * (channels > 1) + [2.0**k, 2.0**k]:
            fail(f"{case}: level {k} scale {scale}")
        if arr.chunks != (1,) * (channels > 1) + (chunk, chunk):
            fail(f"{case}: level {k} chunks {arr.chunks}")
        got = arr[:]
        if channels > 1:
            got = np.moveaxis(got, 0, -1)
        want = cur if k == 0 else reduce(cur)
        if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
            bad = "shape" if got.shape != want.shape else f"max diff {np.abs(got.astype(float) - want).max()}"
            fail(f"{case}: level {k} {got.dtype}{got.shape} differs from the reference ({bad})")
            return
        cur = got


def stores_equal(x, y):
    """Same chunk files and array metadata (the group's metadata, which names the store, aside)."""
    v3 = os.path.exists(os.path.join(x, "zarr.json"))
    if v3 and not all(filecmp.cmp(os.path.join(x, d, "zarr.json"), os.path.join(y, d, "zarr.json"),
                                  shallow=False) for d in os.listdir(x) if d.isdigit()):
        return False
    return store_tree.same(x, y, ["zarr.json" if v3 else ".zattrs"])


def make_input(shape, dt):
    dt = np.dtype(dt)
    if dt.kind == "f":
        img = (rng.random(shape) * 2000 - 1000).astype(dt)
    else:
        info = np.iinfo(dt)
        img = rng.integers(max(info.min, -30000), min(info.max, 60000), shape).astype(dt)
    img[img == 0] = 1
    p = os.path.join(tmp, f"in_{dt.str[1:]}_{len(shape)}.npy")
    np.save(p, img)
    return p



# python3-zarr 2.13 has no Zarr 3: the shards are taken apart here, by the spec (inner chunks in
# C order, an index of (offset, size) pairs and its CRC-32C at the end), and the chunks decoded by
# numcodecs.
CRC_TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = 0x82F63B78 ^ (c >> 1) if c & 1 else c >> 1
    CRC_TABLE.append(c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC_TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def read_v3(path):
    meta = json.load(open(os.path.join(path, "zarr.json")))
    assert meta["zarr_format"] == 3 and meta["node_type"] == "array", meta
    shape, dt = meta["shape"], np.dtype(meta["data_type"]).newbyteorder("<")
    outer = meta["chunk_grid"]["configuration"]["chunk_shape"]
    (sh,) = [c for c in meta["codecs"] if c["name"] == "sharding_indexed"]
    conf = sh["configuration"]
    inner, codecs = conf["chunk_shape"], conf["codecs"]
    assert codecs[0]["name"] == "bytes" and codecs[0]["configuration"]["endian"] == "little"
    dec = None
    if len(codecs) > 1:
        c = codecs[1]
        cfg = c["configuration"]
        dec = {"blosc": lambda: numcodecs.Blosc(cname=cfg["cname"], clevel=cfg["clevel"]),
               "zstd": lambda: numcodecs.Zstd(level=cfg["level"]),
               "gzip": lambda: numcodecs.GZip(level=cfg["level"])}[c["name"]]()
    planes = shape[0] if len(shape) == 3 else None  # (c, y, x): a shard per channel
    if planes:
        assert meta["dimension_names"] == ["c", "y", "x"] and outer[0] == inner[0] == 1, meta
        return np.stack([read_v3_plane(path, meta, shape[1:], outer[1:], inner[1:], dec, dt, k)
                         for k in range(planes)], -1)
    return read_v3_plane(path, meta, shape, outer, inner, dec, dt, None)


def read_v3_plane(path, meta, shape, outer, inner, dec, dt, plane):
    """One channel's plane (plane None: the array is 2-D) as (y, x)."""
    out = np.full(shape, 99, dtype=dt)  # poisoned: every sample must be written over
    per = outer[0] // inner[0]
    for sr in range(-(-shape[0] // outer[0])):
        for sc in range(-(-shape[1] // outer[1])):
            key = os.path.join(path, "c", *([str(plane)] if plane is not None else []), str(sr),
                               str(sc))
            data = open(key, "rb").read()
            n_index = per * per * 16
            index_bytes, crc = data[-4 - n_index:-4], int.from_bytes(data[-4:], "little")
            if crc32c(index_bytes) != crc:
                raise ValueError(f"{key}: the index's CRC-32C differs")
            index = np.frombuffer(index_bytes, "<u8").reshape(per * per, 2)
            for i, (off, size) in enumerate(index):
                r, c = divmod(i, per)
                y0, x0 = sr * outer[0] + r * inner[0], sc * outer[1] + c * inner[1]
                if off == 2**64 - 1:
                    if y0 < shape[0] and x0 < shape[1]:
                        raise ValueError(f"{key}: chunk {r},{c} inside the image is empty")
                    continue
                raw = data[off:off + size]
                raw = dec.decode(raw) if dec else raw
                chunk = np.frombuffer(raw, dt).reshape(inner)
                h, w = min(inner[0], shape[0] - y0), min(inner[1], shape[1] - x0)
                out[y0:y0 + h, x0:x0 + w] = chunk[:h, :w]
    return out



CODECS = ["blosc", "blosc-zstd", "zstd", "zlib", "gzip", "none"]
SWEEP = [(i, dt, channels) for i, dt in enumerate(["u1", "u2", "i2", "u4", "i4", "f4", "f8"])
         for channels in (1, 3)]
# The slow run of section 3, also the second writer's input in section 4 (--method direct: the
# slow sum; auto takes the FFT at this radius).
SLOW = ["--width", 1024, "--radius", 200, "--threads", 1, "--band-rows", 16, "--method", "direct",
        "--pyramid", "--chunk", 64]
V3_CASES = [("u2", 1, "blosc", 32, 128), ("f4", 3, "zstd", 16, 64), ("u1", 1, "gzip", 64, 64),
            ("i4", 1, "none", 16, 48), ("f8", 1, "blosc-zstd", 32, 96)]
_made = {}


def once(key, make):
    """make() on the first call for key (in the numbered order: where the script made it)."""
    if key not in _made:
        _made[key] = make()
    return _made[key]


def slow_input():
    def make():
        src = os.path.join(tmp, "slow.raw")
        (rng.random((2048, 1024), dtype=np.float32) + 0.5).tofile(src)
        return src
    return once("slow", make)


def parts_input():
    """The 999 x 1001 x 3 input of section 2 and its one-process store."""
    def make():
        src = make_input((999, 1001, 3), "f4")
        one = os.path.join(tmp, "one.zarr")
        r = run(src, one, "--radius", 1, "--levels", 6, "--chunk", 16)
        return src, one, r
    return once("parts", make)


def hostile_input():
    return once("hostile", lambda: make_input((64, 48), "f4"))


def v3_store(dt, channels, codec, chunk, shard):
    """A Zarr 3 store and its flat twin: (store, flat, case, problem)."""
    shape = (203, 157) if channels == 1 else (131, 97, 3)
    src = make_input(shape, dt)
    out, flat = os.path.join(tmp, f"v3_{dt}.zarr"), os.path.join(tmp, "flat.npy")
    r = run(src, out, "--radius", 2, "--zarr-version", 3, "--chunk", chunk, "--shard", shard,
            "--compress", codec, "--levels", 3)
    rf = run(src, flat, "--radius", 2)
    case = f"zarr 3 {dt} c{channels} {codec} chunk {chunk} shard {shard}"
    problem = None
    if r.returncode or rf.returncode:
        problem = f"{case}: exit {r.returncode}/{rf.returncode}: {r.stderr}{rf.stderr}"
    return out, flat, case, problem


class ZarrWriteCheck(unittest.TestCase):
    # Numbered in the order they draw their data (cli_cases.py).

    # --- 1. sweep: types, channels, chunks, codecs, levels ---------------------------------------
    def sweep(self, i, dt, channels):
        with cli_cases.cases(self, verbose=False):
            shape = (203, 157) if channels == 1 else (131, 97, 3)
            src = make_input(shape, dt)
            chunk = (16, 64, 512)[(i + channels) % 3]
            codec = CODECS[(i * 2 + channels) % len(CODECS)]
            levels = "--pyramid" if chunk != 16 else "--levels=5"
            n_levels = 0
            case = f"{dt} c{channels} chunk {chunk} {codec} {levels}"
            out, flat = os.path.join(tmp, f"s{i}_{channels}.zarr"), os.path.join(tmp, "flat.npy")
            for p in (out, flat):
                shutil.rmtree(p, ignore_errors=True) if p.endswith(".zarr") else None
            r = run(src, out, "--radius", 2, "--chunk", chunk, "--compress", codec, levels)
            rf = run(src, flat, "--radius", 2)
            if r.returncode or rf.returncode:
                fail(f"{case}: exit {r.returncode}/{rf.returncode}: {r.stderr}{rf.stderr}")
                return
            h, w = shape[:2]
            if levels == "--pyramid":
                while min(h, w) >= 256:
                    h, w, n_levels = (h + 1) // 2, (w + 1) // 2, n_levels + 1
            else:
                n_levels = 5
            check_store(case, out, np.load(flat), n_levels, chunk, channels)
            if os.path.exists(out + ".partial") or [f for f in os.listdir(tmp) if ".journal" in f]:
                fail(f"{case}: a temporary or journal was left behind")

    def test_1b_auto_pyramid(self):
        """The auto rule on a larger image: 600 x 520 -> 300 x 260 -> 150 x 130 (under 256:
        stop)."""
        with cli_cases.cases(self, verbose=False):
            src = make_input((600, 520), "u2")
            out = os.path.join(tmp, "auto.zarr")
            r = run(src, out, "--radius", 1, "--pyramid", "--chunk", 128)
            flat = os.path.join(tmp, "auto_flat.npy")
            run(src, flat, "--radius", 1)
            if r.returncode:
                fail(f"auto pyramid: {r.stderr}")
            else:
                check_store("auto pyramid", out, np.load(flat), 2, 128, 1)

    # --- 2. parts, in any order, odd boundaries in the levels; MPI ranks -------------------------
    def test_2a_parts_in_any_order(self):
        with cli_cases.cases(self, verbose=False):
            src, one, r = parts_input()
            if r.returncode:
                fail(f"one-process store: {r.stderr}")
            # 3 parts on one thread each: their last chunk rows are still compressing when the
            # engine's arena is left (a wait outside it hung).
            for n, order, threads in ((7, [3, 0, 6, 1, 5, 2, 4], 2), (2, [1, 0], 2),
                                      (5, [4, 3, 2, 1, 0], 2), (3, [0, 2, 1], 1)):
                out = os.path.join(tmp, f"parts{n}_threads{threads}.zarr")
                bad = False
                for i in order:
                    r = run(src, out, "--radius", 1, "--levels", 6, "--chunk", 16, "--part",
                            f"{i}/{n}", "--threads", threads)
                    if r.returncode:
                        fail(f"{n} parts: part {i} exit {r.returncode}: {r.stderr}")
                        bad = True
                r = run("--finish", out)
                if bad or r.returncode:
                    fail(f"{n} parts: --finish exit {r.returncode}: {r.stderr}")
                elif not stores_equal(out, one):
                    fail(f"{n} parts (order {order}): the store differs from one process's")

    def test_2b_finish_with_a_part_missing(self):
        """--finish with a part missing names it and leaves the parts' work."""
        with cli_cases.cases(self, verbose=False):
            src, _, _ = parts_input()
            out = os.path.join(tmp, "missing.zarr")
            for i in (0, 2):
                run(src, out, "--radius", 1, "--levels", 3, "--chunk", 16, "--part", f"{i}/3")
            r = run("--finish", out)
            if r.returncode == 0 or "not complete" not in r.stderr or \
                    not os.path.isdir(out + ".partial"):
                fail(f"--finish without part 1: exit {r.returncode}: {r.stderr}")
            run(src, out, "--radius", 1, "--levels", 3, "--chunk", 16, "--part", "1/3")
            r = run("--finish", out)
            if r.returncode:
                fail(f"--finish after the missing part ran: {r.stderr}")

    def test_2c_rows_follow_chunk_rows(self):
        """Explicit --rows must follow chunk rows."""
        with cli_cases.cases(self, verbose=False):
            src, _, _ = parts_input()
            r = run(src, os.path.join(tmp, "rows.zarr"), "--radius", 1, "--chunk", 16, "--rows",
                    "10:100")
            if r.returncode != 2 or "chunk row" not in r.stderr:
                fail(f"--rows 10:100 with 16-row chunks: exit {r.returncode}: {r.stderr}")

    def test_2d_mpirun(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("no mpirun")
        with cli_cases.cases(self, verbose=False):
            src, one, _ = parts_input()
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                       OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader")
            out = os.path.join(tmp, "mpi.zarr")
            r = subprocess.run([mpirun, "-np", "3", conv, src, out, "--radius", "1", "--levels",
                                "6", "--chunk", "16", "-q"], capture_output=True, text=True,
                               env=env)
            if r.returncode or not stores_equal(out, one):
                fail(f"mpirun -np 3: exit {r.returncode}, equal "
                     f"{r.returncode == 0 and stores_equal(out, one)}: {r.stderr[:1500]}")

    # --- 3. stopped by SIGTERM, resumed: the same store ------------------------------------------
    def test_3_sigterm_and_resume(self):
        with cli_cases.cases(self, verbose=False):
            src = slow_input()
            slow = SLOW
            ref = os.path.join(tmp, "slow_ref.zarr")
            run(src, ref, *slow)
            for attempt in range(3):
                out = os.path.join(tmp, f"resumed{attempt}.zarr")
                p = subprocess.Popen([conv, src, out, *map(str, slow), "-q"],
                                     stderr=subprocess.PIPE, text=True)
                time.sleep(0.4 + 0.3 * attempt)
                p.send_signal(signal.SIGTERM)
                err = p.communicate()[1]
                if p.returncode == 0:
                    continue  # finished before the signal: try later in the run
                if p.returncode != 75 or not os.path.isdir(out + ".partial"):
                    fail(f"SIGTERM: exit {p.returncode}, temporary kept "
                         f"{os.path.isdir(out + '.partial')}: {err}")
                    break
                r = run(src, out, *slow, "--resume")
                if r.returncode or not stores_equal(out, ref):
                    fail(f"--resume: exit {r.returncode}: {r.stderr}; equal "
                         f"{r.returncode == 0 and stores_equal(out, ref)}")
                break
            else:
                fail("the run always finished before SIGTERM: make it slower")

    # --- 4. hostile ------------------------------------------------------------------------------
    def test_4a_existing_store(self):
        with cli_cases.cases(self, verbose=False):
            src = hostile_input()
            existing = os.path.join(tmp, "existing.zarr")
            os.makedirs(os.path.join(existing, "other"))
            open(os.path.join(existing, "other", ".zarray"), "w").write("{}")
            r = run(src, existing, "--radius", 1)
            if r.returncode != 2 or "exists" not in r.stderr or \
                    not os.path.exists(os.path.join(existing, "other", ".zarray")):
                fail(f"an existing store: exit {r.returncode}: {r.stderr}")

    def test_4b_foreign_temporary(self):
        """A directory in the way of the temporary that ooc did not make stays."""
        with cli_cases.cases(self, verbose=False):
            src = hostile_input()
            blocked = os.path.join(tmp, "blocked.zarr")
            os.makedirs(blocked + ".partial")
            open(os.path.join(blocked + ".partial", "keep.txt"), "w").write("mine")
            r = run(src, blocked, "--radius", 1)
            if r.returncode != 2 or "in the way" not in r.stderr or \
                    not os.path.exists(os.path.join(blocked + ".partial", "keep.txt")):
                fail(f"a foreign directory at the temporary: exit {r.returncode}: {r.stderr}")

    def test_4c_two_writers(self):
        """Two writers of one store: the second is refused, the first completes."""
        with cli_cases.cases(self, verbose=False):
            src2 = slow_input()
            out = os.path.join(tmp, "two.zarr")
            p = subprocess.Popen([conv, src2, out, "--width", "1024", "--radius", "400",
                                  "--threads", "1", "--band-rows", "16", "--method", "direct",
                                  "-q"],
                                 stderr=subprocess.PIPE, text=True)
            for _ in range(100):
                if os.path.isdir(out + ".partial"):
                    break
                time.sleep(0.02)
            time.sleep(0.1)
            r = run(src2, out, "--width", 1024, "--radius", 400)
            err = p.communicate()[1]
            if r.returncode == 0 or "another process" not in r.stderr:
                fail(f"a second writer of one store: exit {r.returncode}: {r.stderr}")
            if p.returncode != 0 or not os.path.isdir(out):
                fail(f"the first writer, with a second refused: exit {p.returncode}: {err}")

    def test_4d_bad_options(self):
        with cli_cases.cases(self, verbose=False):
            src = hostile_input()
            for args, text in (
                (["--chunk", 70000], "--chunk is 1 to 65536"),
                (["--chunk", -5], "--chunk is 1 to 65536"),
                (["--compress", "lzw"], "--compress for Zarr takes"),
                (["--compress", "zstd", "--level", 30], "--level for zstd"),
                (["--tile", 256], "--tile and --bigtiff apply to TIFF"),
            ):
                out = os.path.join(tmp, "bad.zarr")
                r = run(src, out, "--radius", 1, *args)
                if r.returncode != 2 or text not in r.stderr or os.path.exists(out) or \
                        os.path.exists(out + ".partial"):
                    fail(f"{args}: exit {r.returncode}: {r.stderr}")
            r = run(src, os.path.join(tmp, "flat.raw"), "--radius", 1, "--pyramid")
            if r.returncode != 2 or "Zarr" not in r.stderr:
                fail(f"--pyramid with a raw output: exit {r.returncode}: {r.stderr}")

    def test_4e_trailing_slash(self):
        """A trailing slash names the same store."""
        with cli_cases.cases(self, verbose=False):
            src = hostile_input()
            out = os.path.join(tmp, "slash.zarr")
            r = run(src, out + "/", "--radius", 1)
            if r.returncode or not os.path.isfile(os.path.join(out, "0", ".zarray")):
                fail(f"'x.zarr/': exit {r.returncode}: {r.stderr}")

    # --- 5. Zarr 3 (OME-Zarr 0.5) with sharding, read by an independent decoder -----------------
    def zarr3(self, dt, channels, codec, chunk, shard):
        with cli_cases.cases(self, verbose=False):
            out, flat, case, problem = v3_store(dt, channels, codec, chunk, shard)
            if problem:
                fail(problem)
                return
            try:
                group = json.load(open(os.path.join(out, "zarr.json")))
                ms = group["attributes"]["ome"]["multiscales"][0]
                assert group["attributes"]["ome"]["version"] == "0.5" and len(ms["datasets"]) == 4
                cur = np.load(flat)
                for k in range(4):
                    got = read_v3(os.path.join(out, str(k)))
                    want = cur if k == 0 else reduce(cur)
                    if got.shape != want.shape or not np.array_equal(got, want):
                        fail(f"{case}: level {k} differs from the reference")
                        break
                    cur = got
                # ooc reads its Zarr 3 stores back: every level, through the shards' indexes.
                for k in (0, 2):
                    back, ref = os.path.join(tmp, "back.npy"), os.path.join(tmp, "back_ref.npy")
                    lvl = os.path.join(tmp, "lvl.npy")
                    np.save(lvl, read_v3(os.path.join(out, str(k))))
                    r1 = run(out, back, "--radius", 1, "--input-level", k)
                    r2 = run(lvl, ref, "--radius", 1)
                    if r1.returncode or r2.returncode or \
                            not np.array_equal(np.load(back), np.load(ref)):
                        fail(f"{case}: ooc reading level {k} back: exit {r1.returncode}: "
                             f"{r1.stderr}")
                    for f in (back, ref, lvl):
                        if os.path.exists(f):
                            os.unlink(f)
            except Exception as e:  # noqa: BLE001
                fail(f"{case}: {type(e).__name__}: {e}")

    def test_5b_zarr3_parts(self):
        """Parts of a sharded store own whole shard rows and give one run's files."""
        with cli_cases.cases(self, verbose=False):
            src = make_input((999, 1001, 3), "f4")
            one3 = os.path.join(tmp, "one3.zarr")
            run(src, one3, "--radius", 1, "--zarr-version", 3, "--chunk", 16, "--shard", 48,
                "--levels", 5)
            out = os.path.join(tmp, "parts3.zarr")
            for i in (2, 0, 3, 1):
                r = run(src, out, "--radius", 1, "--zarr-version", 3, "--chunk", 16, "--shard",
                        48, "--levels", 5, "--part", f"{i}/4")
                if r.returncode:
                    fail(f"zarr 3 part {i}/4: {r.stderr}")
            r = run("--finish", out)
            if r.returncode or not stores_equal(out, one3):
                fail(f"zarr 3 in 4 parts: exit {r.returncode} {r.stderr}; equal "
                     f"{r.returncode == 0 and stores_equal(out, one3)}")

    def test_5c_zarr3_bad_options(self):
        with cli_cases.cases(self, verbose=False):
            for args, text in ((["--shard", 100, "--zarr-version", 3, "--chunk", 16],
                                "not a positive multiple"),
                               (["--shard", -32, "--zarr-version", 3, "--chunk", 16],
                                "not a positive multiple"),
                               (["--shard", 64], "--shard is for Zarr 3"),
                               (["--zarr-version", 3, "--compress", "zlib"],
                                "use --compress gzip")):
                r = run(make_input((64, 48), "f4"), os.path.join(tmp, "bad3.zarr"), "--radius", 1,
                        *args)
                if r.returncode != 2 or text not in r.stderr:
                    fail(f"{args}: exit {r.returncode}: {r.stderr}")

    def test_5d_damaged_shard_index(self):
        """A damaged shard index is refused by ooc's reader with its name."""
        with cli_cases.cases(self, verbose=False):
            bad_store = os.path.join(tmp, "v3_u2.zarr")
            if not os.path.isdir(bad_store):  # run alone: make the store of test_5a_0
                v3_store(*V3_CASES[0])
            shard = os.path.join(bad_store, "0", "c", "0", "0")
            with open(shard, "r+b") as f:
                f.seek(-3, os.SEEK_END)
                f.write(b"\x00\x01\x02")
            r = run(bad_store, os.path.join(tmp, "bad_back.npy"), "--radius", 1)
            if r.returncode != 3 or "CRC-32C" not in r.stderr:
                fail(f"a damaged shard index: exit {r.returncode}: {r.stderr}")

    # --- 6. parts of any chunk size: level rows made of two parts' rows, at every level -------
    def test_6a_parts_any_chunk(self):
        """Parts whose boundary (a multiple of an odd chunk) falls on an odd row of some level:
        that level's row below is made by --finish from the two parts' rows, at every level
        (a sample of chunk sizes 1..64 and levels 1..6; the whole sweep is in the report)."""
        with cli_cases.cases(self, verbose=False):
            src = make_input((150, 41), "u2")
            flat = os.path.join(tmp, "anychunk_flat.npy")
            run(src, flat, "--radius", 1)
            for chunk, levels, parts, extra in PARTS_ANY_CHUNK:
                opts = ["--radius", 1, "--chunk", chunk, "--levels", levels, *extra]
                case = f"chunk {chunk} levels {levels} {parts} parts {' '.join(map(str, extra))}"
                one, out = os.path.join(tmp, "anychunk_one.zarr"), os.path.join(tmp, "any.zarr")
                for p in (one, out, out + ".partial"):
                    shutil.rmtree(p, ignore_errors=True)
                r = run(src, one, *opts)
                if r.returncode:
                    fail(f"{case}: one process: exit {r.returncode}: {r.stderr}")
                    continue
                if "--zarr-version" not in extra:
                    check_store(case, one, np.load(flat), levels, chunk, 1)
                problem = None
                for i in reversed(range(parts)):
                    r = run(src, out, *opts, "--part", f"{i}/{parts}")
                    if r.returncode:
                        problem = f"part {i}: exit {r.returncode}: {r.stderr}"
                if not problem:
                    r = run("--finish", out)
                    if r.returncode:
                        problem = f"--finish: exit {r.returncode}: {r.stderr}"
                if not problem and not stores_equal(out, one):
                    problem = "the store differs from one process's"
                if problem:
                    fail(f"{case}: {problem}")

    def test_6b_mpirun_any_chunk(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("no mpirun")
        with cli_cases.cases(self, verbose=False):
            src = make_input((150, 41), "i2")
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                       OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader")
            for extra in (["--chunk", 17, "--levels", 3],
                          ["--chunk", 17, "--shard", 51, "--zarr-version", 3, "--levels", 4]):
                one, out = os.path.join(tmp, "mpi_one.zarr"), os.path.join(tmp, "mpi_any.zarr")
                for p in (one, out):
                    shutil.rmtree(p, ignore_errors=True)
                run(src, one, "--radius", 1, *extra)
                r = subprocess.run([mpirun, "-np", "2", conv, src, out, "--radius", "1",
                                    *map(str, extra), "-q"], capture_output=True, text=True,
                                   env=env, timeout=120)
                if r.returncode or not stores_equal(out, one):
                    fail(f"mpirun -np 2 {extra}: exit {r.returncode}, equal "
                         f"{r.returncode == 0 and stores_equal(out, one)}: {r.stderr[:1500]}")

    # --- 7. other readers of the channels --------------------------------------------------------
    def test_7_gdal_reads_channels_first(self):
        """GDAL's Zarr driver sees each level as (c, y, x): channel k of level j through
        ZARR:"store":/j:k is the reference's plane, as wide and high as the level."""
        try:
            from osgeo import gdal
        except ImportError:
            self.skipTest("no GDAL Python bindings (python3-gdal)")
        with cli_cases.cases(self, verbose=False):
            gdal.UseExceptions()
            src = make_input((83, 57, 3), "u2")
            out, flat = os.path.join(tmp, "gdal.zarr"), os.path.join(tmp, "gdal_flat.npy")
            r = run(src, out, "--radius", 1, "--chunk", 16, "--levels", 2)
            rf = run(src, flat, "--radius", 1)
            if r.returncode or rf.returncode:
                fail(f"exit {r.returncode}/{rf.returncode}: {r.stderr}{rf.stderr}")
                return
            cur = np.load(flat)
            for k in range(3):
                want = cur if k == 0 else reduce(cur)
                for c in range(3):
                    try:
                        d = gdal.Open(f'ZARR:"{out}":/{k}:{c}')
                        got = d.ReadAsArray()
                    except RuntimeError as e:
                        fail(f"GDAL cannot open level {k} channel {c}: {e}")
                        return
                    if got.shape != want.shape[:2] or not np.array_equal(got, want[:, :, c]):
                        fail(f"GDAL's level {k} channel {c} {got.shape} differs from the "
                             f"reference {want.shape}")
                cur = want


# (chunk, levels, parts, extra options) of test_6a: odd chunks whose multiples are odd rows at
# some level, even ones, one-pixel chunks, and Zarr 3 shard rows of 17 and 51.
PARTS_ANY_CHUNK = [(17, 3, 2, []), (19, 5, 3, []), (21, 6, 2, []), (25, 4, 3, []),
                   (33, 3, 2, []), (1, 6, 3, []), (3, 5, 2, []), (5, 2, 3, []), (31, 1, 2, []),
                   (2, 6, 3, []), (64, 6, 2, []), (9, 6, 3, ["--compress", "zstd"]),
                   (17, 4, 2, ["--zarr-version", 3, "--shard", 17]),
                   (17, 3, 2, ["--zarr-version", 3, "--shard", 51])]

# One test per store of the sweeps (test_1a_NN_..., test_5a_N_...), numbered in their order.
for _n, (_i, _dt, _c) in enumerate(SWEEP):
    setattr(ZarrWriteCheck, f"test_1a_{_n:02d}_{_dt}_c{_c}",
            (lambda i, dt, c: lambda self: self.sweep(i, dt, c))(_i, _dt, _c))
for _n, _case in enumerate(V3_CASES):
    setattr(ZarrWriteCheck, f"test_5a_{_n}_zarr3_{_case[0]}_c{_case[1]}_{_case[2]}",
            (lambda case: lambda self: self.zarr3(*case))(_case))

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
