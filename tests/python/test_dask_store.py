# ooc.dask's store path: a filter of an image read straight from a Zarr store and written by
# ooc.dask.to_zarr runs as the CLI's parts (each task ooc.run(..., rows=(a, b)), then ooc.finish).
# Its store must equal, chunk file for chunk file, oocrun's on the same store, the general path's
# (dask's Zarr I/O) and ooc's function on the whole array, and scipy.ndimage within float
# rounding; for chunkings that divide nothing, parts thinner than the halo, every border, a
# pyramid, nodata; under a LocalCluster of processes too. Its graph holds the parts only, as
# many tasks whatever the stages; what it cannot run as the CLI takes the general path.
import os
import subprocess

import numpy as np
import pytest

pytest.importorskip("dask.array", reason="python3-dask is not installed (tools/bootstrap.sh)")
zarr = pytest.importorskip("zarr", reason="python3-zarr is not installed")
import dask  # noqa: E402
import dask.array as da  # noqa: E402

import ooc  # noqa: E402
import ooc.dask as od  # noqa: E402
from conftest import same_zarr_stores, tool  # noqa: E402


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="synchronous"):
        yield


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.random(shape) * 200 - 50).astype(dtype)
    return rng.integers(1, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)


def _store(path, a, chunks, compressor="default"):
    """An OME-like group with the array as level 0, written by zarr-python."""
    g = zarr.open_group(str(path), mode="w")
    kw = {} if compressor == "default" else {"compressor": compressor}
    g.create_dataset("0", data=a, chunks=chunks, **kw)
    return str(path / "0")


def _parts(task):
    """The store path's graph: its tasks by kind (prepare, part, finish); anything else is a
    block of samples."""
    kinds = {}
    for k in task.__dask_graph__():
        name = k[0] if isinstance(k, tuple) else k
        kind = name.split("-")[2] if name.startswith("ooc-zarr-") else "other"
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def _general(a, chunks, fn, args, kw):
    return fn(da.from_array(a, chunks=chunks), *args, **kw)


# shape, dtype, the dask array's chunks (whole rows: the parts), the store's chunks, the filter
# (a pipeline's words, or a named filter), its keywords, to_zarr's keywords and the CLI's flags.
PIPE = "gaussian sigma=2 ! median size=3x3 ! unsharp sigma=1 amount=0.7"
CASES = [
    ((301, 517), np.float32, (100, 517), (64, 70), PIPE, {},
     dict(pyramid=True, chunk=64), ["--pyramid", "--chunk", "64"]),
    # Parts of 8 rows, thinner than the 11-row reach; wrap and constant borders.
    ((150, 91), np.uint16, (5, 91), (33, 40), "gaussian sigma=3 ! uniform size=5", {"mode": "wrap"},
     dict(levels=3, chunk=8, compress="zstd", parts=19), ["--levels", "3", "--chunk", "8", "--compress",
                                                "zstd", "--border", "wrap"]),
    ((77, 103), np.uint8, (30, 103), (20, 20), "median size=5x3 ! maximum size=3",
     {"mode": "constant", "cval": 7}, dict(chunk=8, compress="none"),
     ["--chunk", "8", "--compress", "none", "--border", "constant", "--border-value", "7"]),
    ((99, 131), np.float32, (40, 131), (16, 16), "median size=3x3", {"nodata": -5.0},
     dict(levels=3, chunk=16, nodata=-5), ["--levels", "3", "--chunk", "16", "--nodata", "-5"]),
]


@pytest.mark.parametrize("shape,dtype,chunks,zchunks,words,kw,zkw,flags", CASES)
def test_pipeline_as_the_cli(tmp_path, shape, dtype, chunks, zchunks, words, kw, zkw, flags):
    a = _data(shape, dtype, 5)
    if "nodata" in kw:
        a[np.random.default_rng(0).random(shape) < 0.3] = kw["nodata"]
    src = _store(tmp_path / "in.zarr", a, zchunks)
    cli, mine, general = (tmp_path / n for n in ("cli.zarr", "mine.zarr", "general.zarr"))
    subprocess.run([tool("oocrun"), src, str(cli), words, "-q"] + flags, check=True)
    y = od.pipeline(da.from_zarr(src, chunks=chunks), words, **kw)
    task = od.to_zarr(y, mine, compute=False, **zkw)
    kinds = _parts(task)
    assert kinds.get("other", 0) == 0 and kinds["part"] > 1, kinds
    task.compute()
    same_zarr_stores(cli, mine)
    od.to_zarr(_general(a, chunks, od.pipeline, (words,), kw), general,
               **{k: v for k, v in zkw.items() if k != "parts"})
    same_zarr_stores(general, mine)
    whole = ooc.pipeline(a, words, **kw)
    assert zarr.open(str(mine / "0"), "r")[:].tobytes() == whole.tobytes()
    assert not any(p.name.startswith("mine.zarr.") for p in tmp_path.iterdir())


# Named filters that are one separable pass, against scipy.ndimage in float64 and, byte for
# byte, the array function on the whole array and the general path.
NAMED = [
    ("gaussian_filter", (2.0,), {}),
    ("gaussian_filter", ((1.0, 2.5),), {"order": (1, 0), "mode": "nearest"}),
    ("gaussian_filter1d", (1.5,), {"axis": 0, "mode": "mirror", "precision": "f32"}),
    ("uniform_filter", ((5, 4),), {"origin": (1, 0), "mode": "constant", "cval": 3.0}),
    ("correlate1d", ([1.0, 2.0, -1.0, 0.5],), {"axis": 1, "mode": "wrap"}),
]


@pytest.mark.parametrize("name,args,kw", NAMED)
def test_named_filters(tmp_path, name, args, kw):
    ndi = pytest.importorskip("scipy.ndimage")
    a = _data((203, 157), np.float32, 6)
    src = _store(tmp_path / "in.zarr", a, (50, 60))
    y = getattr(od, name)(da.from_zarr(src, chunks=(32, 157)), *args, **kw)
    task = od.to_zarr(y, tmp_path / "mine.zarr", chunk=32, levels=2, parts=7, compute=False)
    kinds = _parts(task)
    assert kinds.get("other", 0) == 0 and kinds["part"] == 7, kinds
    task.compute()
    got = zarr.open(str(tmp_path / "mine.zarr" / "0"), "r")[:]
    assert got.tobytes() == getattr(ooc, name)(a, *args, **kw).tobytes()
    od.to_zarr(_general(a, (32, 157), getattr(od, name), args, kw), tmp_path / "general.zarr",
               chunk=32, levels=2)
    same_zarr_stores(tmp_path / "general.zarr", tmp_path / "mine.zarr")
    sp = {k: v for k, v in kw.items() if k != "precision"}
    want = getattr(ndi, name)(a.astype(np.float64), *args, **sp)
    assert np.abs(got - want).max() <= 2e-5 * np.abs(want).max()


# Debian's distributed starts tornado's loop the old way; the warning is theirs.
@pytest.mark.filterwarnings("ignore:make_current is deprecated:DeprecationWarning")
def test_store_path_of_a_path_and_on_a_local_cluster(tmp_path):
    """The store's path, or its zarr array, for the array; the parts in two worker processes at
    once."""
    pytest.importorskip("distributed", reason="python3-distributed is not installed")
    from distributed import Client, LocalCluster
    a = _data((260, 300), np.float32, 7)
    _store(tmp_path / "in.zarr", a, (64, 64))
    words = "gaussian sigma=1.5 ! median size=3x3"
    with dask.config.set(scheduler=None), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=":0") as cluster, Client(cluster):
        for k, store in enumerate((str(tmp_path / "in.zarr"), zarr.open(str(tmp_path / "in.zarr"),
                                                                         "r")["0"])):
            y = od.pipeline(store, words)
            task = od.to_zarr(y, tmp_path / ("path%d.zarr" % k), chunk=32, compute=False)
            assert _parts(task).get("other", 0) == 0
            task.compute()
        y = od.pipeline(da.from_zarr(str(tmp_path / "in.zarr" / "0"), chunks=(64, 300)), words)
        task = od.to_zarr(y, tmp_path / "mine.zarr", chunk=32, pyramid=True, compute=False)
        # 5 blocks, 2 tasks at once: 4 parts asked, cut on 32-row chunks (96 rows): 3.
        assert _parts(task)["part"] == 3
        task.compute()
    got = zarr.open(str(tmp_path / "mine.zarr"), "r")
    want = ooc.pipeline(a, words)
    assert got["0"][:].tobytes() == want.tobytes()
    for k in range(2):
        assert zarr.open(str(tmp_path / ("path%d.zarr" % k) / "0"), "r")[:].tobytes() == \
            want.tobytes()
    assert "1" in got and "2" not in got  # 130 x 150: under 256, the last level


def test_graph_does_not_grow_with_stages(tmp_path):
    a = _data((120, 90), np.float32, 8)
    src = _store(tmp_path / "in.zarr", a, (16, 30))
    x = da.from_zarr(src, chunks=(16, 90))
    one = od.to_zarr(od.pipeline(x, "gaussian sigma=1"), tmp_path / "1.zarr", chunk=16,
                     parts=8, compute=False)
    many = od.to_zarr(od.pipeline(x, "gaussian sigma=1 ! median size=3x3 ! uniform size=3 ! "
                                     "abs ! scale mul=2"), tmp_path / "5.zarr", chunk=16,
                      parts=8, compute=False)
    assert _parts(one) == _parts(many) == {"prepare": 1, "part": 8, "finish": 1}


def test_other_arrays_take_the_general_path(tmp_path):
    """A slice of the store, another nodata for the output, a result rechunked, a codec ooc does
    not read, a volume, a store in memory: dask's Zarr I/O, the same bytes."""
    numcodecs = pytest.importorskip("numcodecs")
    a = _data((90, 70), np.float32, 9)
    src = _store(tmp_path / "in.zarr", a, (20, 20))
    x = da.from_zarr(src, chunks=(30, 70))
    words = "gaussian sigma=1"
    cases = [
        (od.pipeline(x[5:], words), {}, ooc.pipeline(a[5:], words)),
        (od.pipeline(x, words), {"nodata": 3.0}, None),
        (od.pipeline(x, words).rechunk((45, 35)), {}, ooc.pipeline(a, words)),
        (od.pipeline(da.from_zarr(_store(tmp_path / "lz.zarr", a, (20, 20),
                                         numcodecs.LZMA()), chunks=(30, 70)), words), {},
         ooc.pipeline(a, words)),
    ]
    for k, (y, zkw, want) in enumerate(cases):
        task = od.to_zarr(y, tmp_path / ("o%d.zarr" % k), compute=False, chunk=16, **zkw)
        assert _parts(task).get("other", 0) > 0, k
        task.compute()
        if want is not None:
            assert zarr.open(str(tmp_path / ("o%d.zarr" % k) / "0"), "r")[:].tobytes() == \
                want.tobytes()
    v = _data((4, 30, 20), np.float32, 10)
    y = od.pipeline(da.from_zarr(_store(tmp_path / "v.zarr", v, (1, 16, 16)), chunks=(2, 30, 20)),
                    words, volume=True)
    task = od.to_zarr(y, tmp_path / "v_out.zarr", compute=False, chunk=16, volume=True)
    assert _parts(task).get("other", 0) > 0
    mem = zarr.storage.MemoryStore()
    task = od.to_zarr(od.pipeline(x, words), mem, compute=False, chunk=16)
    assert _parts(task).get("other", 0) > 0
    task.compute()
    assert zarr.open(mem, "r")["0"][:].tobytes() == ooc.pipeline(a, words).tobytes()


def test_errors_before_the_graph_runs(tmp_path):
    a = _data((40, 30), np.float32, 11)
    src = _store(tmp_path / "in.zarr", a, (16, 16))
    y = od.pipeline(da.from_zarr(src, chunks=(16, 30)), "gaussian sigma=1")
    with pytest.raises(ooc.UsageError):
        od.to_zarr(y, tmp_path / "o.zarr", compress="bogus", compute=False)
    with pytest.raises(ooc.UsageError):
        od.to_zarr(y, tmp_path / "o.zarr", chunk=0, compute=False)
    with pytest.raises(ooc.UsageError):
        od.to_zarr(y, tmp_path / "o.zarr", levels=40, compute=False)
    with pytest.raises(ooc.UsageError):
        od.to_zarr(y, tmp_path / "o.zarr", parts=0, compute=False)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(ooc.UsageError):
        od.to_zarr(y, tmp_path / "notes", compute=False)
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"
    with pytest.raises(ooc.UsageError):
        od.pipeline(str(tmp_path / "in.zarr"), "gaussian sigma=1 ! nosuchstage")
    # An earlier store at the path is replaced, as zarr's mode "w" replaces it.
    od.to_zarr(y, tmp_path / "o.zarr", chunk=8)
    od.to_zarr(od.pipeline(da.from_zarr(src, chunks=(16, 30)), "scale mul=2"),
               tmp_path / "o.zarr", chunk=8)
    assert zarr.open(str(tmp_path / "o.zarr" / "0"), "r")[:].tobytes() == (a * 2).tobytes()
    assert sorted(os.listdir(tmp_path)) == ["in.zarr", "notes", "o.zarr"]


def test_run_in_parts_and_finish(tmp_path):
    """ooc.run's part= and rows= (oocrun --part, --rows) and ooc.finish: the one-process store."""
    a = _data((70, 45), np.uint16, 12)
    src = _store(tmp_path / "in.zarr", a, (16, 16))
    words = "gaussian sigma=1.5 ! median size=3x3"
    ooc.run(src, tmp_path / "one.zarr", words, chunk=8, levels=2)
    for i in (2, 0, 1):
        ooc.run(src, tmp_path / "parts.zarr", words, chunk=8, levels=2, part=(i, 3))
    ooc.finish(tmp_path / "parts.zarr")
    for a_, b_ in ((24, 70), (0, 24)):
        ooc.run(src, tmp_path / "rows.zarr", words, chunk=8, levels=2, rows=(a_, b_))
    assert not (tmp_path / "rows.zarr").exists()  # its rows are all there, not yet in place
    ooc.finish(tmp_path / "rows.zarr")
    same_zarr_stores(tmp_path / "one.zarr", tmp_path / "parts.zarr")
    same_zarr_stores(tmp_path / "one.zarr", tmp_path / "rows.zarr")
    assert zarr.open(str(tmp_path / "one.zarr" / "0"), "r")[:].tobytes() == \
        ooc.pipeline(a, words).tobytes()
    with pytest.raises(ooc.UsageError):
        ooc.run(src, tmp_path / "bad.zarr", words, chunk=8, rows=(3, 20))
    for bad in (dict(part=(3, 3)), dict(part=(1,)), dict(rows=5), dict(rows=(0, 8, 16))):
        with pytest.raises(ooc.UsageError):
            ooc.run(src, tmp_path / "bad.zarr", words, chunk=8, **bad)
