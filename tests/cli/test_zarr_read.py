#!/usr/bin/env python3
"""oocconv reading Zarr v2 stores written by zarr-python: a sweep of dtypes, chunk shapes (dividing
the image and not, 1-row chunks, chunks larger than the image, channel chunks smaller than the
channels), compressors, byte orders, missing chunks (fill_value), the "/" separator, leading axes
of length 1, and OME-Zarr groups with several levels, channels last (y, x, c) or first (c, y, x);
each filtered with random taps and compared with scipy.ndimage in float64. Then stores that lie or
are damaged: exit 3 and a message naming the problem, never a crash. And oocinfo's description of
a store, Zarr 2 or 3.
Usage: test_zarr_read.py --bin-dir DIR [unittest options]   (or under pytest: conftest.py);
skipped (exit 77 as a script) where zarr-python is missing."""
import atexit
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
from scipy import ndimage

import cli_args  # beside this file
import cli_cases
from cli_cases import fail

try:
    import zarr
    from numcodecs import GZip, Blosc, Zlib, Zstd
except ImportError as e:
    cli_cases.skip_module(__name__, f"zarr-python (python3-zarr) is not installed ({e})")

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
OOCCONV = os.path.join(BIN, "oocconv")
OOCINFO = os.path.join(BIN, "oocinfo")
tmp = tempfile.mkdtemp(prefix="ooc_zarr_read_",
                       dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
atexit.register(shutil.rmtree, tmp, True)
# One generator for the whole check, drawn in the tests' (numbered) order: cli_cases.py.
rng = np.random.default_rng(31)
ROW_TAPS = rng.uniform(-1.0, 2.0, 5)
COL_TAPS = rng.uniform(-1.0, 2.0, 7)  # halo 3: consecutive bands share rows of chunks
TAPS = ["--row-taps=" + ",".join("%.17g" % t for t in ROW_TAPS),
        "--col-taps=" + ",".join("%.17g" % t for t in COL_TAPS)]


def run(tool, *args):
    return subprocess.run([tool, *map(str, args)], capture_output=True, text=True)


def random_image(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        img = rng.uniform(-1000.0, 1000.0, shape)
        img[np.abs(img) < 1e-3] = 1.0
    else:
        info = np.iinfo(dt)
        img = rng.integers(max(info.min, -30000), min(info.max, 60000), shape, endpoint=True)
        img[img == 0] = 1
    return img.astype(dt)


def reference(img):
    """The float64 result of oocconv --row-taps/--col-taps (reflect), shape (H, W, C)."""
    x = img.astype(np.float64)
    if x.ndim == 2:
        x = x[:, :, None]
    x = ndimage.convolve1d(x, ROW_TAPS, axis=1, mode="reflect")
    return ndimage.convolve1d(x, COL_TAPS, axis=0, mode="reflect")


def check_read(name, store, want, extra=()):
    """oocconv STORE out.raw with the taps, compared with scipy on `want` (H, W[, C])."""
    out = os.path.join(tmp, "out.raw")
    if os.path.exists(out):
        os.remove(out)
    r = run(OOCCONV, store, out, *TAPS, "--precision", "f64", "--out-type", "f64", "-q", *extra)
    if r.returncode:
        return fail(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
    ref = reference(want)
    got = np.fromfile(out, dtype="<f8")
    if got.size != ref.size:
        return fail(f"{name}: {got.size} samples, expected {ref.size}")
    got = got.reshape(ref.shape)
    scale = max(float(np.max(np.abs(ref))), 1e-300)
    err = np.abs(got - ref) / np.maximum(np.abs(ref), scale * 1e-6)
    if not np.all(np.isfinite(got)) or float(np.max(err)) > 1e-9:
        i = np.unravel_index(int(np.argmax(np.where(np.isfinite(err), err, np.inf))), ref.shape)
        return fail(f"{name}: differs from scipy at (y, x, c) = {i}: {got[i]} vs {ref[i]}")


def remove_chunks(store, want, chunks, keys, fill, sep="."):
    """Deletes chunk files `keys` (grid indices) of a 2-D/3-D store; sets want's area to fill."""
    for key in keys:
        os.remove(os.path.join(store, sep.join(map(str, key))))
        sl = tuple(slice(k * c, (k + 1) * c) for k, c in zip(key, chunks))
        want[sl] = fill


BLOSC = Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)
# (dtype, shape, chunks, compressor, byte order, extra oocconv options)
CASES = [
    ("u1", (37, 53), (8, 16), BLOSC, "<", ["--band-rows", "5", "--threads", "2"]),
    ("u2", (37, 53), (37, 53), Zstd(level=3), "<", []),
    ("i2", (37, 53), (10, 7), Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE), ">",
     ["--band-rows", "4"]),
    ("u4", (37, 53), (1, 53), Zlib(level=1), "<", ["--band-rows", "3", "--threads", "2"]),
    ("i4", (37, 53), (64, 64), GZip(level=6), ">", []),
    ("f4", (37, 53), (5, 100), None, "<", ["--band-rows", "7"]),
    ("f8", (37, 53), (13, 9), Blosc(cname="lz4hc", clevel=4, shuffle=Blosc.NOSHUFFLE), ">",
     ["--band-rows", "6"]),
    ("f4", (40, 31), (9, 31), Blosc(cname="blosclz", shuffle=Blosc.AUTOSHUFFLE), ">", []),
    ("u1", (29, 41), (6, 5), Blosc(cname="zlib", shuffle=Blosc.AUTOSHUFFLE), "<", []),
    ("u2", (23, 19), (4, 4), Blosc(cname="zstd", shuffle=Blosc.NOSHUFFLE), ">", []),
    ("f8", (1, 1), (1, 1), Zstd(), "<", []),
    ("i2", (200, 150), (7, 64), BLOSC, "<", ["--band-rows", "5", "--threads", "2"]),
    # channels: all in the chunk, one per chunk, two per chunk of 3, 4 in chunks of 3
    ("f4", (30, 33), (8, 8, 3), BLOSC, ">", ["--band-rows", "5"]),
    ("u2", (30, 33), (8, 8, 1), Zstd(), "<", ["--band-rows", "4"]),
    ("i4", (30, 33), (16, 5, 2), Zlib(), ">", []),
    ("u1", (30, 33), (7, 40, 3), None, "|", []),
]


def array_store(i):
    """Store a{i}.zarr of CASES[i] and the image in it."""
    kind, shape, chunks, comp, order, extra = CASES[i]
    channels = 0 if len(chunks) == 2 else 4 if i == len(CASES) - 1 else 3
    full = shape + ((channels,) if channels else ())
    dt = np.dtype(kind if order == "|" else order + kind)
    img = random_image(full, dt)
    store = os.path.join(tmp, f"a{i}.zarr")
    z = zarr.open(store, mode="w", shape=full, chunks=chunks, dtype=dt, compressor=comp)
    z[...] = img
    return store, img, f"{dt.str} {full} chunks {chunks} {comp}"


def needed_array_store(i):
    """a{i}.zarr as the sweep left it; made here when a test runs without the sweep."""
    store = os.path.join(tmp, f"a{i}.zarr")
    if not os.path.isdir(store):
        array_store(i)
    return store


def ome_group(path, levels, channels=0, axes=None, dtype="u2", first=False):
    """An OME-Zarr 0.4 group of `levels` levels (each half the size), returns their images
    (H, W[, C]); first: channels first in the store (c, y, x; NGFF's order), a plane a chunk."""
    g = zarr.open_group(path, mode="w")
    images, datasets = [], []
    h, w = 45, 38
    for k in range(levels):
        shape = (h, w, channels) if channels else (h, w)
        img = random_image(shape, dtype)
        chunks = (16, 16) + ((channels,) if channels else ())
        data = img
        if first and channels:
            data, chunks = np.ascontiguousarray(np.moveaxis(img, -1, 0)), (1, 16, 16)
        z = g.create_dataset(str(k), shape=data.shape, chunks=chunks, dtype=dtype,
                             compressor=BLOSC)
        z[...] = data
        images.append(img)
        scale = [2.0 ** k, 2.0 ** k]
        if channels:
            scale = [1.0] + scale if first else scale + [1.0]
        datasets.append({"path": str(k), "coordinateTransformations": [{"type": "scale",
                                                                          "scale": scale}]})
        h, w = (h + 1) // 2, (w + 1) // 2
    names = axes or ((["c", "y", "x"] if first else ["y", "x", "c"]) if channels else ["y", "x"])
    g.attrs["multiscales"] = [{"version": "0.4", "name": "test", "datasets": datasets,
                               "axes": [{"name": n, "type": "channel" if n == "c" else "space"}
                                        for n in names]}]
    return images


def ome_group_of_3():
    """ome.zarr, the 3-level group of test_05 (made here when a test runs without it)."""
    group = os.path.join(tmp, "ome.zarr")
    return group, ome_group(group, 3)


def needed_ome_group():
    group = os.path.join(tmp, "ome.zarr")
    if not os.path.isdir(group):
        ome_group_of_3()
    return group


def expect(store, code, phrase, what, extra=()):
    """Hostile stores: exit 3 (input) or 2 (usage) and a message naming the problem."""
    out = os.path.join(tmp, "bad.raw")
    r = run(OOCCONV, store, out, "--radius", 1, "-q", *extra)
    if r.returncode != code or phrase not in r.stderr:
        fail(f"{what}: exit {r.returncode} (want {code}), stderr {r.stderr.strip()!r} "
             f"(want {phrase!r})")
    if os.path.exists(out):
        fail(f"{what}: an output was left")


def bad_store(name, meta, chunks=None):
    """A store with this .zarray (dict, merged into a valid u2 one) and chunk files."""
    path = os.path.join(tmp, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    base = {"zarr_format": 2, "shape": [10, 12], "chunks": [5, 6], "dtype": "<u2",
            "compressor": None, "fill_value": 0, "order": "C", "filters": None}
    if isinstance(meta, dict):
        base.update(meta)
    with open(os.path.join(path, ".zarray"), "w") as f:
        f.write(meta if isinstance(meta, str) else json.dumps(base))
    for key, data in (chunks or {}).items():
        with open(os.path.join(path, key), "wb") as f:
            f.write(data)
    return path


CHUNK = np.arange(1, 31, dtype="<u2").tobytes()


class ZarrReadCheck(unittest.TestCase):
    # Numbered in the order they draw their data (cli_cases.py).
    def sweep_case(self, i):
        with cli_cases.cases(self, verbose=False):
            store, img, name = array_store(i)
            check_read(name, store, img, CASES[i][5])

    def test_02_missing_chunks_and_separator(self):
        """Missing chunks read as fill_value; "/" separator; both at once."""
        with cli_cases.cases(self, verbose=False):
            for i, (kind, fill, sep) in enumerate([("f4", 2.5, "."), ("i2", -3, "."),
                                                   ("u2", 9, "/"), ("f8", float("nan"), "/")]):
                shape, chunks = (30, 26), (8, 6)
                img = random_image(shape, kind)
                store = os.path.join(tmp, f"m{i}.zarr")
                z = zarr.open(store, mode="w", shape=shape, chunks=chunks, dtype=kind,
                              fill_value=fill, dimension_separator=sep)
                z[...] = img
                want = img.copy()
                keys = [(0, 0), (1, 2), (3, 4), (2, 1)] if i < 3 else [(3, 0)]
                remove_chunks(store, want, chunks, keys, fill, sep)
                if i == 3:  # NaN fill: a NaN in the taps' window gives NaN; compare only the copy
                    out = os.path.join(tmp, "nan.raw")
                    r = run(OOCCONV, store, out, "--taps", "1", "-q")
                    if r.returncode:
                        fail(f"NaN fill: exit {r.returncode}: {r.stderr.strip()}")
                    elif not np.array_equal(np.fromfile(out, "<f8").reshape(shape), want,
                                            equal_nan=True):
                        fail("NaN fill: the copy differs from the store")
                    continue
                check_read(f"{kind} missing chunks, fill {fill}, separator {sep!r}", store, want,
                           ["--band-rows", "5"])

    def test_03_channels_separator_missing(self):
        """Channels, separator "/", missing channel chunks."""
        with cli_cases.cases(self, verbose=False):
            img = random_image((21, 17, 3), "u2")
            store = os.path.join(tmp, "cs.zarr")
            z = zarr.open(store, mode="w", shape=img.shape, chunks=(5, 6, 2), dtype="u2",
                          fill_value=4, dimension_separator="/", compressor=Zstd())
            z[...] = img
            want = img.copy()
            remove_chunks(store, want, (5, 6, 2), [(1, 1, 1), (4, 2, 0)], 4, "/")
            check_read("u2 (21, 17, 3) chunks (5, 6, 2) separator / missing", store, want)

    def test_04_leading_axes_of_one(self):
        """Leading axes of length 1 (OME's t, c, z) in a bare array."""
        with cli_cases.cases(self, verbose=False):
            img = random_image((1, 1, 26, 19), ">f8")
            store = os.path.join(tmp, "lead.zarr")
            z = zarr.open(store, mode="w", shape=img.shape, chunks=(1, 1, 8, 8), dtype=">f8")
            z[...] = img
            check_read("f8 (1, 1, 26, 19)", store, img[0, 0])

    def test_05_ome_zarr_groups(self):
        with cli_cases.cases(self, verbose=False):
            group, levels = ome_group_of_3()
            check_read("OME-Zarr group, level 0 (default)", group, levels[0])
            check_read("OME-Zarr group, --input-level 2", group, levels[2],
                       ["--input-level", "2"])
            check_read("OME-Zarr group, level 1 by its directory", os.path.join(group, "1"),
                       levels[1])
            group3 = os.path.join(tmp, "ome3.zarr")
            levels3 = ome_group(group3, 2, channels=3, dtype="f4")
            check_read("OME-Zarr group (y, x, c), --input-level 1", group3, levels3[1],
                       ["--input-level", "1"])
            # NGFF's order (c, y, x), a plane a chunk: the group, a level by its directory, and
            # a bare array of that shape (no names: c <= 4 first).
            cyx = os.path.join(tmp, "ome_cyx.zarr")
            levels_cyx = ome_group(cyx, 2, channels=3, dtype="i2", first=True)
            check_read("OME-Zarr group (c, y, x)", cyx, levels_cyx[0])
            check_read("OME-Zarr group (c, y, x), level 1 by its directory",
                       os.path.join(cyx, "1"), levels_cyx[1])
            img = random_image((4, 23, 19), ">f4")
            bare = os.path.join(tmp, "cfirst.zarr")
            zarr.open(bare, mode="w", shape=img.shape, chunks=(3, 8, 7), dtype=">f4",
                      compressor=Zstd())[...] = img
            check_read("bare (4, 23, 19) array, chunks (3, 8, 7)", bare, np.moveaxis(img, 0, -1))

    def test_06_ome_tczyx(self):
        """OME's own order (t, c, z, y, x) with one channel."""
        with cli_cases.cases(self, verbose=False):
            g = zarr.open_group(os.path.join(tmp, "tczyx.zarr"), mode="w")
            img = random_image((1, 1, 1, 20, 30), "i2")
            g.create_dataset("0", shape=img.shape, chunks=(1, 1, 1, 7, 11), dtype="i2")[...] = img
            g.attrs["multiscales"] = [{"version": "0.4", "datasets": [{"path": "0"}],
                                       "axes": [{"name": n} for n in "tczyx"]}]
            check_read("OME-Zarr (t, c, z, y, x) of one channel", os.path.join(tmp, "tczyx.zarr"),
                       img[0, 0, 0])

    def test_07_own_stores(self):
        """ooc's own stores: every level of an oocconv --pyramid output reads back as zarr-python
        reads it; its Zarr 3 (sharded) output reads back as its Zarr 2 twin (test_zarr_write
        decodes the shards independently)."""
        with cli_cases.cases(self, verbose=False):
            for kind, channels in (("f32", 1), ("u16", 3)):
                src = random_image((150, 133, channels), {"f32": "<f4", "u16": "<u2"}[kind])
                src.tofile(os.path.join(tmp, "own.raw"))
                own = os.path.join(tmp, f"own_{kind}.zarr")
                r = run(OOCCONV, os.path.join(tmp, "own.raw"), own, "--width", 133, "--type",
                        kind, "--channels", channels, "--radius", 2, "--pyramid", "--levels", 2,
                        "--chunk", 32, "-q")
                if r.returncode:
                    fail(f"oocconv --pyramid to {own}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                for k in range(3):
                    want = np.asarray(zarr.open_group(own, mode="r")[str(k)])
                    if want.ndim == 3:  # stored (c, y, x), read back as (y, x, c)
                        want = np.moveaxis(want, 0, -1)
                    out = os.path.join(tmp, "own_out.raw")
                    r = run(OOCCONV, own, out, "--input-level", k, "--taps", "1", "-q")
                    got = np.fromfile(out, dtype=want.dtype) if r.returncode == 0 else None
                    if got is None or not np.array_equal(got.reshape(want.shape), want):
                        fail(f"level {k} of ooc's {own}: exit {r.returncode} "
                             f"{r.stderr.strip()}, differs from zarr-python's read")
            # The u16 x 3 input written last above.
            v3, v2 = os.path.join(tmp, "v3.zarr"), os.path.join(tmp, "v2twin.zarr")
            made = [run(OOCCONV, os.path.join(tmp, "own.raw"), z, "--width", 133, "--type", "u16",
                        "--channels", 3, "--radius", 1, *extra, "-q").returncode
                    for z, extra in ((v3, ["--zarr-version", "3", "--chunk", "16", "--shard",
                                           "32"]), (v2, []))]
            if made != [0, 0]:
                fail(f"writing the Zarr 3 / 2 twins: exit {made}")
            else:
                outs = [os.path.join(tmp, "v3.raw"), os.path.join(tmp, "v2.raw")]
                rs = [run(OOCCONV, z, o, "--radius", 1, "-q") for z, o in zip((v3, v2), outs)]
                if any(r.returncode for r in rs) or \
                        not filecmp.cmp(outs[0], outs[1], shallow=False):
                    fail(f"a Zarr 3 input: exit {[r.returncode for r in rs]}, "
                         f"{rs[0].stderr.strip()!r}, differs from its Zarr 2 twin")

    def test_08_oocinfo(self):
        """oocinfo: every level, its shape, scale, chunks and codec."""
        with cli_cases.cases(self, verbose=False):
            group = needed_ome_group()
            r = run(OOCINFO, group, "--device", "cpu")
            for phrase in ["OME-Zarr group, 3 level(s)", "level 2 '2': shape [12, 10]",
                           "scale [4, 4]", "blosc lz4 shuffle", "zarr v2, chunks 16 x 16"]:
                if r.returncode or phrase not in r.stdout:
                    fail(f"oocinfo {group}: exit {r.returncode}, {phrase!r} not in {r.stdout!r} "
                         f"{r.stderr!r}")
            r = run(OOCINFO, needed_array_store(2), "--device", "cpu")
            if r.returncode or "array: shape [37, 53], dtype >i2, chunks [10, 7], blosc zstd " \
                    "bitshuffle" not in r.stdout:
                fail(f"oocinfo of an array: exit {r.returncode}: {r.stdout!r} {r.stderr!r}")
            # Zarr 3: the group (every level, through its zarr.json) and a level alone.
            img = random_image((70, 45, 3), "<u2")
            img.tofile(os.path.join(tmp, "info3.raw"))
            z3 = os.path.join(tmp, "info3.zarr")
            r = run(OOCCONV, os.path.join(tmp, "info3.raw"), z3, "--width", 45, "--type", "u16",
                    "--channels", 3, "--radius", 1, "--zarr-version", 3, "--chunk", 16,
                    "--shard", 32, "--levels", 2, "--compress", "zstd", "-q")
            for path, phrases in (
                    (z3, ["OME-Zarr group (zarr 3), 3 level(s), axes (c, y, x)",
                          "level 0 '0': zarr 3, shape [3, 70, 45], dtype <u2, chunks [1, 16, 16] "
                          "in shards [1, 32, 32], zstd level", "axes (c, y, x), scale [1, 1, 1]",
                          "level 2 '2': zarr 3, shape [3, 18, 12]", "scale [1, 4, 4]"]),
                    (os.path.join(z3, "1"), ["array: zarr 3, shape [3, 35, 23]",
                                             "zarr v3, chunks 1 x 16 x 16 (channels first)"])):
                r = run(OOCINFO, path, "--device", "cpu")
                for phrase in phrases:
                    if r.returncode or phrase not in r.stdout or "unreadable" in r.stdout:
                        fail(f"oocinfo {path}: exit {r.returncode}, {phrase!r} not in "
                             f"{r.stdout!r} {r.stderr!r}")
                        break

    def test_09_hostile_metadata(self):
        with cli_cases.cases(self, verbose=False):
            expect(bad_store("dims", {"chunks": [5, 6, 1]}), 3, "dimensions in", "shape vs chunks")
            expect(bad_store("codec", {"compressor": {"id": "lz4"}}), 3, "compressor 'lz4'",
                   "unknown codec")
            expect(bad_store("dtype", {"dtype": "<c8"}), 3, "dtype '<c8'", "complex dtype")
            expect(bad_store("dtype2", {"dtype": "<i8"}), 3, "dtype '<i8'", "i8 dtype")
            expect(bad_store("nanfill", {"fill_value": "NaN"}), 3, "fill_value \"NaN\"",
                   "NaN fill, u2")
            expect(bad_store("fracfill", {"fill_value": 0.5}), 3, "fill_value 0.5",
                   "fractional fill, u2")
            expect(bad_store("bigchunk", {"chunks": [10 ** 12, 10 ** 12]}), 3, "over 2 GiB",
                   "1e12-sample chunk sides")
            expect(bad_store("bigshape", {"shape": [10 ** 12, 10 ** 12], "chunks": [512, 512]}),
                   3, "larger than 2^63", "1e12 x 1e12 shape")
            expect(bad_store("chunkrow", {"shape": [10, 10 ** 9], "chunks": [4096, 1],
                                          "dtype": "<f8"}), 3, "rechunk",
                   "rows of chunks too large to hold")
            expect(bad_store("negative", {"shape": [-1, 12]}), 3, "negative", "negative shape")
            expect(bad_store("fortran", {"order": "F"}), 3, "Fortran", "F order")
            expect(bad_store("filters", {"filters": [{"id": "delta", "dtype": "<u2"}]}), 3,
                   "filters", "filters")
            expect(bad_store("v3", {"zarr_format": 3}), 3, "version 2", "zarr_format 3")
            expect(bad_store("notjson", "{\"zarr_format\": 2, "), 3, "not JSON",
                   ".zarray not JSON")
            # (A 3-D array is a volume now: test_zarr_volumes.py.) Of 4 axes, neither end channels:
            expect(bad_store("volume", {"shape": [9, 10, 12, 7], "chunks": [1, 5, 6, 7]}), 3,
                   "neither the first nor the last", "4-D array without channels")
            expect(bad_store("onedim", {"shape": [12], "chunks": [6]}), 3, "not an image",
                   "1-D array")
            expect(bad_store("nofill", {"fill_value": None}), 3, "fill_value (null)",
                   "missing chunk without fill_value")

    def test_10_hostile_chunks(self):
        with cli_cases.cases(self, verbose=False):
            chunk = CHUNK
            expect(bad_store("short", {}, {"0.0": chunk[:-2]}), 3, "holds 58 bytes",
                   "truncated raw chunk")
            expect(bad_store("long", {}, {"0.0": chunk * 100}), 3, "is not this array's chunk",
                   "chunk far too large")
            blosc = BLOSC.encode(np.arange(1, 31, dtype="<u2"))
            expect(bad_store("bshort", {"compressor": BLOSC.get_config()},
                             {"1.1": blosc[:len(blosc) // 2]}), 3, "truncated",
                   "truncated blosc chunk")
            expect(bad_store("bother", {"compressor": BLOSC.get_config()},
                             {"0.1": BLOSC.encode(np.arange(1, 11, dtype="<u2"))}), 3,
                   "decodes to 20 bytes", "blosc chunk of another size")
            zl = Zlib().encode(np.arange(1, 31, dtype="<u2").tobytes())
            expect(bad_store("zbad", {"compressor": {"id": "zlib", "level": 1}},
                             {"0.0": zl[:10] + bytes(len(zl) - 10)}), 3, "does not decode",
                   "damaged zlib")
            expect(bad_store("zsbad", {"compressor": {"id": "zstd", "level": 1}},
                             {"0.0": b"garbage!" * 3}), 3, "does not decode", "zstd garbage")

    def test_11_links_and_special_files(self):
        with cli_cases.cases(self, verbose=False):
            chunk = CHUNK
            outside = os.path.join(tmp, "secret.bin")
            with open(outside, "wb") as f:
                f.write(chunk)
            link = bad_store("link", {})
            os.symlink(outside, os.path.join(link, "0.0"))
            expect(link, 3, "outside the store", "chunk linked out of the store")
            link2 = bad_store("link2", {"dimension_separator": "/"})
            os.makedirs(os.path.join(tmp, "elsewhere"), exist_ok=True)
            shutil.copy(outside, os.path.join(tmp, "elsewhere", "0"))
            os.symlink(os.path.join(tmp, "elsewhere"), os.path.join(link2, "0"))
            expect(link2, 3, "outside the store", "chunk directory linked out of the store ('/')")
            dangling = bad_store("dangling", {})
            os.symlink(os.path.join(tmp, "nothing-here"), os.path.join(dangling, "1.0"))
            expect(dangling, 3, "dangling", "dangling chunk link")
            inside = bad_store("inside", {}, {"data.bin": chunk})
            os.symlink("data.bin", os.path.join(inside, "0.0"))
            r = run(OOCCONV, inside, os.path.join(tmp, "ok.raw"), "--taps", "1", "-q")
            if r.returncode or np.fromfile(os.path.join(tmp, "ok.raw"), "<u2")[:6].tolist() != \
                    [1, 2, 3, 4, 5, 6]:
                fail(f"a chunk linked inside the store: exit {r.returncode}: {r.stderr.strip()}")
            isdir = bad_store("isdir", {})
            os.makedirs(os.path.join(isdir, "1.1"))
            expect(isdir, 3, "is a directory", "chunk that is a directory")
            fifo = bad_store("fifo", {})
            os.mkfifo(os.path.join(fifo, "0.1"))
            expect(fifo, 3, "not a regular file", "chunk that is a FIFO (must not block)")
            if os.geteuid() != 0:
                locked = bad_store("locked", {}, {"0.0": chunk})
                os.chmod(os.path.join(locked, "0.0"), 0)
                expect(locked, 3, "cannot open", "unreadable chunk")

    def test_12_groups_and_levels(self):
        with cli_cases.cases(self, verbose=False):
            group = needed_ome_group()
            nogroup = os.path.join(tmp, "plain_group.zarr")
            zarr.open_group(nogroup, mode="w").create_dataset("img", shape=(4, 4), dtype="u1")
            expect(nogroup, 3, "multiscales", "group without multiscales")
            expect(group, 2, "does not exist", "--input-level past the last level",
                   ["--input-level", "3"])
            expect(needed_array_store(0), 2, "applies to OME-Zarr groups",
                   "--input-level on an array", ["--input-level", "1"])
            ycx = os.path.join(tmp, "ycx.zarr")
            g = zarr.open_group(ycx, mode="w")
            g.create_dataset("0", shape=(10, 3, 12), chunks=(5, 3, 6), dtype="u1")[...] = 1
            g.attrs["multiscales"] = [{"datasets": [{"path": "0"}],
                                       "axes": [{"name": n} for n in "ycx"]}]
            expect(ycx, 3, "not right after y", "OME axes (y, c, x)")
            named = os.path.join(tmp, "named.zarr")
            g = zarr.open_group(named, mode="w")
            img = random_image((14, 11), "u2")
            g.create_dataset("0", shape=img.shape, chunks=(4, 4), dtype="u2")[...] = img
            g.attrs["multiscales"] = [{"datasets": [{"path": "0"}], "axes": ["row", "col"]}]
            check_read("OME-Zarr with unknown axis names (the shape decides)", named, img)
            escape = os.path.join(tmp, "escape.zarr")
            zarr.open_group(escape, mode="w")
            with open(os.path.join(escape, ".zattrs"), "w") as f:
                json.dump({"multiscales": [{"datasets": [{"path": "../a0.zarr"}]}]}, f)
            expect(escape, 3, "leaves the store", "dataset path out of the store")
            os.makedirs(os.path.join(tmp, "empty.zarr"), exist_ok=True)
            expect(os.path.join(tmp, "empty.zarr"), 3, "not a Zarr v2 store",
                   "directory without metadata", ["--in-format", "zarr"])


# One test per array of the sweep (test_01_NN_...), numbered in its order.
for _i, _case in enumerate(CASES):
    setattr(ZarrReadCheck, f"test_01_{_i:02d}_{np.dtype(_case[0]).name}_{len(_case[2])}d_chunks",
            (lambda i: lambda self: self.sweep_case(i))(_i))

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
