#!/usr/bin/env python3
"""Zarr volumes (z-stacks) in and out: OME-Zarr volumes written by oocrun (Zarr 2, and Zarr 3 with
shards) read back by zarr-python (or, for Zarr 3, by a reader of the spec here) equal to the NumPy
array, their NGFF 0.4 / 0.5 metadata checked against the spec's rules; arrays and OME-Zarr groups
written by zarr-python (chunks of several planes, (z, y, x), (c, z, y, x), (t, c, z, y, x)) and
sharded Zarr 3 arrays written here, read through oocrun 'scale mul=1' equal to the array; a 3-D
Gaussian through Zarr equal to the same run on .npy; oocinfo's depth; pyramids of volumes (each
plane's 2 x 2 means, every plane kept); parts joined by --finish and a run stopped by SIGTERM and
resumed (planes whole chunk rows high), and their refusal otherwise.

Usage: test_zarr_volumes.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py)"""
import itertools
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
    import numcodecs
    import zarr
except ImportError:
    cli_cases.skip_module(__name__, "zarr-python is not installed")

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCRUN = os.path.join(BIN, "oocrun")
OOCINFO = os.path.join(BIN, "oocinfo")
COPY = "scale mul=1"
rng = np.random.default_rng(23)


def run(tool, *args):
    return subprocess.run([tool, *map(str, args)], capture_output=True, text=True)


def random_volume(shape, dtype):
    """Random samples of `dtype`, none zero (a volume read as zeros would pass otherwise)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = (rng.random(shape) * 2000 - 1000).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(max(info.min, 1), min(info.max, 60000), shape).astype(dt)
    a[a == 0] = 1
    return a


def load_json(path):
    with open(path) as f:
        return json.load(f)


def save_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def crc32c(b):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = 0x82F63B78 ^ (c >> 1) if c & 1 else c >> 1
        table.append(c)
    c = 0xFFFFFFFF
    for x in b:
        c = table[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def v3_codec(cfgs):
    for c in cfgs:
        if c["name"] == "bytes":
            assert c.get("configuration", {}).get("endian", "little") == "little", c
            continue
        cfg = c.get("configuration", {})
        if c["name"] == "blosc":
            return numcodecs.Blosc(cname=cfg["cname"], clevel=cfg["clevel"])
        if c["name"] == "zstd":
            return numcodecs.Zstd(level=cfg["level"])
        if c["name"] == "gzip":
            return numcodecs.GZip(level=cfg["level"])
        raise ValueError(f"codec {c}")
    return None


def read_v3(path):
    """A Zarr 3 array of any rank, sharded (index at the end, CRC-32C) or not, as the spec reads it
    (default chunk keys, '/')."""
    meta = load_json(os.path.join(path, "zarr.json"))
    assert meta["zarr_format"] == 3 and meta["node_type"] == "array", meta
    shape, dt = meta["shape"], np.dtype(meta["data_type"]).newbyteorder("<")
    outer = meta["chunk_grid"]["configuration"]["chunk_shape"]
    out = np.full(shape, 99, dtype=dt)  # poisoned: every sample must be written over
    shard = [c for c in meta["codecs"] if c["name"] == "sharding_indexed"]
    for grid in itertools.product(*[range(-(-s // o)) for s, o in zip(shape, outer)]):
        key = os.path.join(path, "c", *map(str, grid))
        data = read_bytes(key)
        origin = [g * o for g, o in zip(grid, outer)]
        if not shard:
            dec = v3_codec(meta["codecs"])
            pieces = [(origin, outer, dec.decode(data) if dec else data)]
        else:
            conf = shard[0]["configuration"]
            inner, dec = conf["chunk_shape"], v3_codec(conf["codecs"])
            per = [o // i for o, i in zip(outer, inner)]
            n = int(np.prod(per))
            index_bytes, crc = data[-4 - 16 * n:-4], int.from_bytes(data[-4:], "little")
            if crc32c(index_bytes) != crc:
                raise ValueError(f"{key}: the index's CRC-32C differs")
            index = np.frombuffer(index_bytes, "<u8").reshape(n, 2)
            pieces = []
            for i, at in enumerate(itertools.product(*[range(p) for p in per])):
                off, size = index[i]
                o = [g + a * c for g, a, c in zip(origin, at, inner)]
                if off == 2**64 - 1:
                    if all(x < s for x, s in zip(o, shape)):
                        raise ValueError(f"{key}: chunk {at} inside the array is empty")
                    continue
                raw = data[off:off + size]
                pieces.append((o, inner, dec.decode(raw) if dec else raw))
        for o, cs, raw in pieces:
            chunk = np.frombuffer(raw, dt).reshape(cs)
            sl = tuple(slice(a, min(a + c, s)) for a, c, s in zip(o, cs, shape))
            out[sl] = chunk[tuple(slice(0, x.stop - x.start) for x in sl)]
    return out


def write_v3(path, a, inner, outer=None, names=None, codec="zstd"):
    """A Zarr 3 array of `a`, chunks `inner`, in shards `outer` where given, compressed by
    numcodecs' `codec` (zstd or none)."""
    os.makedirs(path)
    comp = numcodecs.Zstd(level=3) if codec == "zstd" else None
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if comp:
        codecs.append({"name": "zstd", "configuration": {"level": 3, "checksum": False}})
    grid_shape = outer or inner

    def chunk_bytes(o, cs):
        c = np.zeros(cs, a.dtype)
        sl = tuple(slice(x, min(x + n, s)) for x, n, s in zip(o, cs, a.shape))
        c[tuple(slice(0, s.stop - s.start) for s in sl)] = a[sl]
        raw = c.astype(a.dtype.newbyteorder("<")).tobytes()
        return comp.encode(raw) if comp else raw

    for grid in itertools.product(*[range(-(-s // o)) for s, o in zip(a.shape, grid_shape)]):
        origin = [g * o for g, o in zip(grid, grid_shape)]
        key = os.path.join(path, "c", *map(str, grid))
        os.makedirs(os.path.dirname(key), exist_ok=True)
        if not outer:
            data = chunk_bytes(origin, inner)
        else:
            per = [o // i for o, i in zip(outer, inner)]
            data, index = b"", []
            for at in itertools.product(*[range(p) for p in per]):
                o = [g + x * c for g, x, c in zip(origin, at, inner)]
                if not all(x < s for x, s in zip(o, a.shape)):
                    index += [2**64 - 1, 2**64 - 1]
                    continue
                z = chunk_bytes(o, inner)
                index += [len(data), len(z)]
                data += z
            ib = np.array(index, "<u8").tobytes()
            data += ib + crc32c(ib).to_bytes(4, "little")
        with open(key, "wb") as f:
            f.write(data)
    dtn = {"u1": "uint8", "u2": "uint16", "f4": "float32"}[a.dtype.str[1:]]
    meta = {"zarr_format": 3, "node_type": "array", "shape": list(a.shape), "data_type": dtn,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid_shape}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "attributes": {}}
    if outer:
        meta["codecs"] = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": codecs, "index_location": "end",
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}]}}]
    else:
        meta["codecs"] = codecs
    if names:
        meta["dimension_names"] = names
    save_json(os.path.join(path, "zarr.json"), meta)


def reduce(x):
    """One pyramid level of a plane (y, x[, c]) from the one above, as stored."""
    f = x.astype(np.float64)
    if f.shape[0] % 2:
        f = np.concatenate([f, f[-1:]], 0)
    if f.shape[1] % 2:
        f = np.concatenate([f, f[:, -1:]], 1)
    m = (f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]) / 4
    return np.rint(m).astype(x.dtype) if x.dtype.kind in "iu" else m.astype(x.dtype)


def ngff_problems(store, ndim, version, channels):
    """The group's multiscales against NGFF 0.4 (Zarr 2) / 0.5 (Zarr 3): axes of types time, then
    channel, then 2 or 3 space axes (z, y, x); each dataset's scale of the array's rank."""
    p = []
    if version == 2:
        attrs = load_json(os.path.join(store, ".zattrs"))
        ms = attrs["multiscales"][0]
        if ms.get("version") != "0.4":
            p.append(f"multiscales version {ms.get('version')}, want 0.4")
    else:
        g = load_json(os.path.join(store, "zarr.json"))
        if g.get("node_type") != "group":
            p.append("zarr.json is not a group")
        ome = g["attributes"]["ome"]
        if ome.get("version") != "0.5":
            p.append(f"ome version {ome.get('version')}, want 0.5")
        ms = ome["multiscales"][0]
    axes = ms["axes"]
    names = [a["name"] for a in axes]
    want = (["c"] if channels > 1 else []) + ["z", "y", "x"]
    if names != want:
        p.append(f"axes {names}, want {want}")
    order = {"time": 0, "channel": 1, "space": 2}
    types = [a.get("type") for a in axes]
    if any(t not in order for t in types) or [order[t] for t in types] != sorted(
            order[t] for t in types):
        p.append(f"axis types {types} out of NGFF's order (time, channel, space)")
    if types.count("space") not in (2, 3) or types[-types.count("space"):] != ["space"] * \
            types.count("space"):
        p.append(f"axis types {types}: 2 or 3 space axes last")
    for a in axes:
        if a["name"] in "zyx" and a.get("type") != "space":
            p.append(f"axis {a['name']} of type {a.get('type')}")
        if a["name"] == "c" and a.get("type") != "channel":
            p.append(f"axis c of type {a.get('type')}")
        if "unit" in a and a["type"] == "space" and a["unit"] not in (
                "micrometer", "nanometer", "millimeter", "meter", "angstrom", "centimeter"):
            p.append(f"axis {a['name']} unit {a['unit']}")
    if len(axes) != ndim:
        p.append(f"{len(axes)} axes for an array of rank {ndim}")
    for d in ms["datasets"]:
        ts = d["coordinateTransformations"]
        if [t["type"] for t in ts][:1] != ["scale"]:
            p.append(f"dataset {d['path']}: first transformation not scale")
        else:
            f = 2.0 ** int(d["path"])  # levels halve y and x, keep every plane
            want = [1.0] * (ndim - 2) + [f, f]
            if ts[0]["scale"] != want:
                p.append(f"dataset {d['path']}: scale {ts[0]['scale']}, want {want}")
    return p


class ZarrVolumes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ooc_zarr_volume_")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def read_case(self, name, src, want, extra=()):
        """oocrun SRC out.npy 'scale mul=1': the (z, y, x[, c]) array `want`."""
        out = self.p("out.npy")
        if os.path.exists(out):
            os.remove(out)
        r = run(OOCRUN, src, out, COPY, "-q", *extra)
        if r.returncode:
            return cli_cases.fail(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
        got = np.load(out)
        problems = []
        if got.shape != want.shape or got.dtype != want.dtype:
            problems.append(f"read as {got.dtype} {got.shape}, want {want.dtype} {want.shape}")
        elif not np.array_equal(got, want):
            planes = [z for z in range(want.shape[0]) if not np.array_equal(got[z], want[z])]
            problems.append(f"planes {planes} differ")
        cli_cases.report(name, problems)

    def test_1_write(self):
        """Volumes written as OME-Zarr (v2; v3 sharded) equal the array, in NGFF's (c, z, y, x)."""
        with cli_cases.cases(self):
            for dt, channels, version in itertools.product(("u1", "u2", "f4"), (1, 3), (2, 3)):
                shape = (5, 37, 45) + ((channels,) if channels > 1 else ())
                a = random_volume(shape, dt)
                src, out = self.p("in.npy"), self.p(f"out_{dt}_{channels}_{version}.zarr")
                np.save(src, a)
                extra = ["--chunk", 16] + (["--zarr-version", 3, "--shard", 32]
                                           if version == 3 else [])
                name = f"write {dt} x{channels} zarr {version}"
                r = run(OOCRUN, src, out, COPY, "-q", *extra)
                if r.returncode:
                    cli_cases.fail(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                want = np.moveaxis(a, -1, 0) if channels > 1 else a
                if version == 2:
                    arr = zarr.open_array(os.path.join(out, "0"), mode="r")
                    got = arr[...]
                    chunks_ok = arr.chunks == ((1,) if channels > 1 else ()) + (1, 16, 16)
                else:
                    got = read_v3(os.path.join(out, "0"))
                    meta = load_json(os.path.join(out, "0", "zarr.json"))
                    chunks_ok = meta["dimension_names"] == (["c"] if channels > 1 else []) + [
                        "z", "y", "x"]
                problems = ngff_problems(out, want.ndim, version, channels)
                if not chunks_ok:
                    problems.append("chunks or dimension names not as written")
                if got.shape != want.shape or got.dtype != want.dtype:
                    problems.append(f"read as {got.dtype} {got.shape}, want {want.shape}")
                elif not np.array_equal(got, want):
                    problems.append("samples differ")
                # And back through ooc: the store read as the volume it wrote.
                cli_cases.report(name, problems)
                self.read_case(f"{name} read back", out, a)

    def test_2_read_zarr_python(self):
        """zarr-python's arrays and OME-Zarr groups of volumes, chunks of several planes."""
        with cli_cases.cases(self):
            for dt in ("u1", "u2", "f4"):
                a = random_volume((13, 30, 41), dt)
                for chunks in ((4, 16, 16), (13, 30, 41), (1, 7, 9), (5, 64, 64)):
                    store = self.p(f"arr_{dt}_{chunks[0]}_{chunks[1]}.zarr")
                    zarr.save_array(store, a, chunks=chunks)
                    self.read_case(f"zarr-python (z, y, x) {dt} chunks {chunks}", store, a)
            # Chunks of 32 planes under memory limits that hold some of a plane of them (the
            # others decoded again for each plane) or all.
            a = random_volume((32, 256, 256), "u2")
            store = self.p("deep.zarr")
            zarr.save_array(store, a, chunks=(32, 32, 32))
            for limit in ("6M", "8M", "64M"):
                self.read_case(f"chunks of 32 planes, --mem-limit {limit}", store, a,
                               ["--mem-limit", limit])
            # An OME-Zarr group (t, c, z, y, x) of 3 channels and one of 1, chunks of 3 planes.
            for channels in (1, 3):
                a = random_volume((9, 22, 27, 3) if channels > 1 else (9, 22, 27), "u2")
                tczyx = np.moveaxis(a, -1, 0)[None] if channels > 1 else a[None, None]
                store = self.p(f"ome_{channels}.zarr")
                g = zarr.open_group(store, mode="w")
                g.create_dataset("0", data=tczyx, chunks=(1, 1, 3, 10, 10))
                axes = [{"name": "t", "type": "time"}, {"name": "c", "type": "channel"},
                        {"name": "z", "type": "space", "unit": "micrometer"},
                        {"name": "y", "type": "space", "unit": "micrometer"},
                        {"name": "x", "type": "space", "unit": "micrometer"}]
                g.attrs["multiscales"] = [{"version": "0.4", "axes": axes, "datasets": [
                    {"path": "0", "coordinateTransformations": [
                        {"type": "scale", "scale": [1, 1, 2.0, 0.5, 0.5]}]}]}]
                self.read_case(f"OME-Zarr 0.4 (t, c, z, y, x) x{channels}", store, a)
            # A (c, z, y, x) array without names: channels first (NGFF), of 4 axes.
            a = random_volume((6, 19, 23, 2), "f4")
            store = self.p("czyx.zarr")
            zarr.save_array(store, np.moveaxis(a, -1, 0), chunks=(1, 4, 8, 8))
            self.read_case("zarr-python (c, z, y, x) unnamed", store, a)
            # (z, y, x, c) unnamed (the first axis over 4: planes), big endian; and a big-endian
            # (z, y, x) stored uncompressed.
            a = random_volume((6, 19, 23, 2), "u2")
            store = self.p("zyxc.zarr")
            zarr.save_array(store, a.astype(">u2"), chunks=(4, 8, 8, 1))
            self.read_case("zarr-python (z, y, x, c) big endian", store, a)
            a = random_volume((9, 19, 23), "u2")
            store = self.p("be.zarr")
            zarr.save_array(store, a.astype(">u2"), chunks=(4, 8, 8), compressor=None)
            self.read_case("zarr-python (z, y, x) big endian uncompressed", store, a)

    def test_3_read_zarr3(self):
        """Zarr 3 arrays and OME-Zarr 0.5 groups, sharded along z too."""
        with cli_cases.cases(self):
            for dt, inner, outer in (("u2", [3, 8, 8], [6, 16, 16]), ("f4", [2, 16, 16], None),
                                     ("u1", [4, 5, 7], [8, 10, 14])):
                a = random_volume((11, 21, 30), dt)
                store = self.p(f"v3_{dt}.zarr")
                write_v3(store, a, inner, outer, ["z", "y", "x"])
                self.read_case(f"zarr 3 {dt} chunks {inner} shards {outer}", store, a)
            a = random_volume((7, 20, 25, 3), "u2")
            group = self.p("v3_ome.zarr")
            write_v3(os.path.join(group, "0"), np.moveaxis(a, -1, 0), [1, 2, 8, 8], [1, 4, 16, 16],
                     ["c", "z", "y", "x"])
            axes = [{"name": "c", "type": "channel"}] + [{"name": n, "type": "space"}
                                                         for n in "zyx"]
            save_json(os.path.join(group, "zarr.json"), {"zarr_format": 3, "node_type": "group", "attributes": {"ome": {
                "version": "0.5", "multiscales": [{"axes": axes, "datasets": [{
                    "path": "0", "coordinateTransformations": [
                        {"type": "scale", "scale": [1, 1, 1, 1]}]}]}]}}})
            self.read_case("OME-Zarr 0.5 (c, z, y, x) sharded", group, a)

    def test_4_filter_through_zarr(self):
        """A 3-D Gaussian through Zarr in and out gives the bytes of the same run on .npy."""
        with cli_cases.cases(self):
            a = random_volume((12, 40, 33), "f4")
            np.save(self.p("in.npy"), a)
            zarr.save_array(self.p("in.zarr"), a, chunks=(6, 16, 16))
            runs = [(self.p("in.npy"), self.p("g.npy"), []),
                    (self.p("in.zarr"), self.p("g.zarr"), ["--chunk", 16]),
                    (self.p("in.zarr"), self.p("g3.zarr"), ["--chunk", 16, "--zarr-version", 3])]
            problems = []
            for src, dst, extra in runs:
                r = run(OOCRUN, src, dst, "gaussian sigma=1", "-q", *extra)
                if r.returncode:
                    problems.append(f"{src} -> {dst}: exit {r.returncode}: {r.stderr.strip()}")
            if not problems:
                want = np.load(self.p("g.npy"))
                got2 = zarr.open_array(self.p("g.zarr/0"), mode="r")[...]
                got3 = read_v3(self.p("g3.zarr/0"))
                for what, got in (("zarr 2", got2), ("zarr 3", got3)):
                    if got.shape != want.shape or not np.array_equal(got, want):
                        problems.append(f"{what} output differs from the .npy run")
            cli_cases.report("gaussian sigma=1 through Zarr = .npy", problems)

    def test_5_oocinfo_and_refusals(self):
        with cli_cases.cases(self):
            a = random_volume((6, 20, 24), "u2")
            np.save(self.p("in.npy"), a)
            r = run(OOCRUN, self.p("in.npy"), self.p("o.zarr"), COPY, "-q")
            info = run(OOCINFO, self.p("o.zarr"))
            cli_cases.report("oocinfo lists the level's depth", [
                f"exit {r.returncode} {r.stderr}" if r.returncode else None,
                f"oocinfo exit {info.returncode}: {info.stderr}" if info.returncode else None,
                None if "depth 6" in info.stdout else f"no 'depth 6' in {info.stdout!r}"])
            # A volume of one plane stays one through an OME-Zarr store ((z, y, x), z named); a
            # bare (1, y, x) array without names is a plane, as before.
            one = random_volume((1, 20, 30), "f4")
            np.save(self.p("one.npy"), one)
            r = run(OOCRUN, self.p("one.npy"), self.p("one.zarr"), COPY, "-q")
            if r.returncode:
                cli_cases.fail(f"one plane: exit {r.returncode}: {r.stderr.strip()}")
            else:
                self.read_case("a volume of one plane through OME-Zarr", self.p("one.zarr"), one)
            zarr.save_array(self.p("flat.zarr"), one, chunks=(1, 10, 10))
            self.read_case("a bare (1, y, x) array is a plane", self.p("flat.zarr"), one[0])
            for what, extra, phrase in (
                    ("--rows, chunks across planes", ["--rows", "0:16", "--chunk", 16],
                     "--chunk dividing 20"),
                    ("--part with --levels 1", ["--part", "0/2", "--chunk", 10, "--levels", 1],
                     "no pyramid")):
                out = self.p(f"refused{len(phrase)}.zarr")
                r = run(OOCRUN, self.p("in.npy"), out, COPY, "-q", *extra)
                cli_cases.report(f"a volume's {what} refused", [
                    f"exit {r.returncode}, want 2" if r.returncode != 2 else None,
                    None if phrase in r.stderr else f"stderr {r.stderr.strip()!r}",
                    "a store was left" if os.path.exists(out) else None])

    def test_6_pyramid(self):
        """--levels of a volume: each plane's 2 x 2 means, every plane kept, scale z 1."""
        with cli_cases.cases(self):
            for dt, channels, version in (("u2", 1, 2), ("f4", 3, 2), ("u1", 3, 3), ("u2", 1, 3)):
                shape = (3, 37, 45) + ((channels,) if channels > 1 else ())
                a = random_volume(shape, dt)
                src, out = self.p("in.npy"), self.p(f"pyr_{dt}_{channels}_{version}.zarr")
                np.save(src, a)
                extra = ["--chunk", 8, "--levels", 2] + (["--zarr-version", 3, "--shard", 16]
                                                         if version == 3 else [])
                name = f"pyramid {dt} x{channels} zarr {version}"
                r = run(OOCRUN, src, out, COPY, "-q", *extra)
                if r.returncode:
                    cli_cases.fail(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                problems = ngff_problems(out, a.ndim, version, channels)
                level = a
                for k in range(3):
                    path = os.path.join(out, str(k))
                    got = zarr.open_array(path, mode="r")[...] if version == 2 else read_v3(path)
                    want = np.moveaxis(level, -1, 0) if channels > 1 else level
                    if got.shape != want.shape:
                        problems.append(f"level {k}: shape {got.shape}, want {want.shape}")
                    elif not (np.array_equal(got, want) if a.dtype.kind in "iu" else
                              np.allclose(got, want, rtol=1e-6)):
                        problems.append(f"level {k} differs")
                    level = np.stack([reduce(p) for p in level])
                cli_cases.report(name, problems)

    def same_store(self, x, y):
        """The chunks and arrays of two stores are the same files (the group's name differs)."""
        problems = []
        for root, _, files in os.walk(x):
            for f in files:
                a = os.path.join(root, f)
                b = os.path.join(y, os.path.relpath(a, x))
                if f in (".zattrs", "zarr.json") and root == x:
                    continue
                if not os.path.exists(b) or read_bytes(a) != read_bytes(b):
                    problems.append(f"{os.path.relpath(a, x)} differs")
        return problems[:5]

    def test_7_parts_and_resume(self):
        """Parts of a volume in any order, joined by --finish, and a run stopped by SIGTERM and
        resumed: the store one run makes, where the planes are whole chunk rows high."""
        with cli_cases.cases(self):
            a = random_volume((7, 48, 50, 3), "u2")
            np.save(self.p("pv.npy"), a)
            for version, extra in ((2, ["--chunk", 16]),
                                   (3, ["--chunk", 8, "--zarr-version", 3, "--shard", 16])):
                one, parts = self.p(f"one{version}.zarr"), self.p(f"parts{version}.zarr")
                problems = []
                r = run(OOCRUN, self.p("pv.npy"), one, "gaussian sigma=1", "-q", *extra)
                if r.returncode:
                    problems.append(f"one run: exit {r.returncode}: {r.stderr.strip()}")
                for i in (2, 0, 1):
                    r = run(OOCRUN, self.p("pv.npy"), parts, "gaussian sigma=1", "-q", *extra,
                            "--part", f"{i}/3")
                    if r.returncode:
                        problems.append(f"part {i}: exit {r.returncode}: {r.stderr.strip()}")
                r = run(OOCRUN, "--finish", parts)
                if r.returncode:
                    problems.append(f"--finish: exit {r.returncode}: {r.stderr.strip()}")
                if not problems:
                    problems = self.same_store(one, parts)
                cli_cases.report(f"3 parts of a volume, zarr {version}", problems)
            # Stopped part way (a slow run on one thread), then resumed.
            slow = random_volume((48, 256, 256), "f4")
            np.save(self.p("slow.npy"), slow)
            args = [self.p("slow.npy"), None, "gaussian sigma=5", "-q", "--chunk", 32,
                    "--threads", 1, "--band-rows", 8]
            ref = self.p("ref.zarr")
            r = run(OOCRUN, *[ref if x is None else x for x in args])
            if r.returncode:
                return cli_cases.fail(f"resume reference: exit {r.returncode}: {r.stderr}")
            cli_cases.stop_and_resume(
                "a volume stopped and resumed",
                lambda out: [OOCRUN, *map(str, [out if x is None else x for x in args])],
                lambda attempt: self.p(f"resumed{attempt}.zarr"),
                lambda out: self.same_store(ref, out))


if __name__ == "__main__":
    unittest.main(argv=[__file__, *_REST])
