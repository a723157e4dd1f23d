# ooc.dask: every function on a dask array equals the ooc function on the whole array, byte for
# byte, whatever the chunks (not dividing the shape, smaller than the overlap, one chunk) and the
# border, on images, images of channels and volumes; a LocalCluster of processes gives the same
# bytes; errors come at the call; a pipeline is one task per block whatever its stages.
import numpy as np
import pytest

pytest.importorskip("dask.array", reason="python3-dask is not installed (tools/bootstrap.sh)")
import dask  # noqa: E402
import dask.array as da  # noqa: E402

import ooc  # noqa: E402
import ooc.dask as od  # noqa: E402

MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]
CVAL = 2.5


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.random(shape) * 200 - 50).astype(dtype)
    return rng.integers(1, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)


# (shape, dtype, chunkings): chunks that do not divide the shape, chunks smaller than every
# reach below, one chunk; the channels chunked too (ooc.dask joins them); blocks of whole rows
# (planes), whose neighbours' rows ooc reads where they lie (halo_rows), some thinner than the
# reach.
IMAGE = ((37, 53), np.float32, [(10, 16), (3, 4), (37, 53), (4, 53)])
CHANNELS = ((29, 31, 3), np.uint16, [(8, 9, 2), (3, 2, 3), (7, 31, 3)])
VOLUME = ((13, 17, 19), np.float32, [(5, 6, 7), (3, 4, 4), (13, 17, 19), (4, 17, 19)])
VOLUME_C = ((9, 11, 12, 2), np.uint8, [(4, 5, 5, 1)])

# name, args, keywords: an asymmetric correlation, an even window, an origin, two reaches.
IMAGE_CALLS = [
    ("gaussian_filter", (1.5,), {}),
    ("gaussian_filter", ((1.0, 2.0),), {"order": (0, 1)}),
    ("gaussian_filter1d", (1.2,), {"axis": 0}),
    ("uniform_filter", ((4, 3),), {"origin": (1, 0)}),
    ("uniform_filter1d", (5,), {"axis": 1}),
    ("correlate1d", ([1.0, 2.0, -1.0, 0.5],), {"axis": 0, "origin": 1}),
    ("convolve1d", ([0.5, 1.0, -2.0],), {"axis": 1}),
    ("correlate", (np.arange(12.0).reshape(3, 4) - 5,), {}),
    ("convolve", (np.arange(6.0).reshape(2, 3) / 7,), {"origin": (0, 1)}),
    ("median_filter", (), {"size": 3}),
    ("percentile_filter", (30,), {"size": (3, 4)}),
    ("rank_filter", (2,), {"size": (2, 3)}),
    ("minimum_filter", (), {"size": 4}),
    ("maximum_filter", (), {"footprint": np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]])}),
    ("grey_opening", (), {"size": 3}),
    ("grey_closing", (), {"size": (2, 3)}),
]
VOLUME_CALLS = [
    ("gaussian_filter", ((1.0, 1.5, 0.8),), {}),
    ("uniform_filter", (3,), {}),
    ("correlate1d", ([1.0, -1.0, 3.0],), {"axis": 0}),
    ("correlate", (np.arange(18.0).reshape(2, 3, 3) / 9 - 1,), {}),
    ("convolve", (np.ones((3, 1, 2)) / 6,), {}),
    ("median_filter", (), {"size": 3}),
    ("percentile_filter", (70,), {"size": (3, 2, 3)}),
    ("minimum_filter", (), {"size": (2, 3, 3)}),
    ("maximum_filter", (), {"size": 3}),
    ("grey_opening", (), {"size": (3, 3, 1)}),
    ("grey_closing", (), {"size": 2}),
]
PIPELINE_2D = "gaussian sigma=1.5 ! median size=3x5 ! uniform size=3 ! gradient-magnitude"
PIPELINE_3D = "gaussian sigma=1 ! median size=3x3 size-z=3 ! uniform size=3 size-z=1"


@pytest.fixture(autouse=True)
def _sync():
    # The blocks one after the other: fewer threads on a shared machine, the same bytes.
    with dask.config.set(scheduler="synchronous"):
        yield


def _cases(spec, calls):
    """Every border on the first chunking; on the others (many tiny blocks, or one) one border a
    call, in turn, so that each border meets each chunking and the suite stays quick."""
    shape, dtype, chunkings = spec
    a = _data(shape, dtype, len(shape))
    for k, chunks in enumerate(chunkings):
        x = da.from_array(a, chunks=chunks)
        for i, (name, args, kw) in enumerate(calls):
            for mode in (MODES if k == 0 else [MODES[(i + k) % len(MODES)]]):
                yield a, x, name, args, kw, mode


def _check(spec, calls, volume=None):
    for a, x, name, args, kw, mode in _cases(spec, calls):
        extra = {} if volume is None else {"volume": volume}
        want = getattr(ooc, name)(a, *args, mode=mode, cval=CVAL, **kw, **extra)
        got = getattr(od, name)(x, *args, mode=mode, cval=CVAL, **kw, **extra).compute()
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), \
            (name, kw, mode, x.chunks)


def test_image_filters():
    _check(IMAGE, IMAGE_CALLS)


def test_channels_and_volumes():
    two_d = [("gaussian_filter", (1.5,), {"axes": (0, 1)}),
             ("uniform_filter1d", (4,), {"axis": 1}),
             ("median_filter", (), {"size": (3, 3, 1)}),
             ("grey_closing", (), {"size": (2, 3), "axes": (0, 1)})]
    _check(CHANNELS, two_d)
    _check(VOLUME, VOLUME_CALLS)
    _check(VOLUME_C, [("gaussian_filter", (1.0,), {"axes": (0, 1, 2)}),
                      ("median_filter", (), {"size": (3, 3, 3, 1)})])


@pytest.mark.parametrize("spec,words,volume", [(IMAGE, PIPELINE_2D, None),
                                               (CHANNELS, PIPELINE_2D, None),
                                               (VOLUME, PIPELINE_3D, True),
                                               (VOLUME_C, PIPELINE_3D, None)])
def test_pipeline(spec, words, volume):
    shape, dtype, chunkings = spec
    a = _data(shape, dtype, 7)
    for chunks in chunkings:
        x = da.from_array(a, chunks=chunks)
        for mode in MODES:
            want = ooc.pipeline(a, words, mode=mode, cval=CVAL, volume=volume)
            got = od.pipeline(x, words, mode=mode, cval=CVAL, volume=volume).compute()
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), \
                (mode, x.chunks)


def test_pipeline_output_type_and_reach():
    a = _data((40, 30), np.uint16, 3)
    x = da.from_array(a, chunks=(9, 11))
    words = "gaussian sigma=2 ! median size=5x3 ! convert type=u8"
    got = od.pipeline(x, words, mode="nearest").compute()
    assert got.dtype == np.uint8
    assert got.tobytes() == ooc.pipeline(a, words, mode="nearest").tobytes()
    r = od.reach(a.shape, a.dtype, words)
    # The stage's radius (3 sigma) and the window's half heights added up: rows, columns.
    assert r["depth"] == [6 + 2, 6 + 1] and r["out_type"] == np.uint8


def test_graph_does_not_grow_with_stages():
    x = da.from_array(_data((60, 50), np.float32, 1), chunks=(16, 16))
    one = od.pipeline(x, "gaussian sigma=1")
    many = od.pipeline(x, "gaussian sigma=1 ! median size=3x3 ! uniform size=3 ! abs ! "
                          "scale mul=2")
    assert len(one.__dask_graph__()) == len(many.__dask_graph__())
    blocks = int(np.prod(x.numblocks))
    # The input's blocks, map_overlap's pieces and joins, then one ooc task per block.
    assert len([k for k in many.__dask_graph__() if k[0] == many.name]) == blocks
    rows = da.from_array(_data((60, 50), np.float32, 1), chunks=(16, 50))
    one = od.pipeline(rows, "gaussian sigma=1")
    many = od.pipeline(rows, "gaussian sigma=1 ! median size=3x3 ! uniform size=3 ! abs")
    # Blocks of whole rows: the input's blocks, the neighbours' rows, one ooc task per block.
    assert len(one.__dask_graph__()) == len(many.__dask_graph__())
    assert len([k for k in many.__dask_graph__() if k[0] == many.name]) == rows.numblocks[0]


def test_errors_before_compute():
    x = da.from_array(_data((20, 20), np.float32, 2), chunks=10)
    with pytest.raises(ooc.UsageError):
        od.pipeline(x, "gaussian sigma=2 ! nosuchstage")
    with pytest.raises(ooc.UsageError):
        od.pipeline(x, "gaussian sigma=-1")
    with pytest.raises(ooc.UsageError):
        od.gaussian_filter(da.zeros((20, 20), dtype=np.float16, chunks=10), 1.0)
    with pytest.raises(ooc.UsageError):
        od.median_filter(da.zeros((20, 20), dtype=np.int64, chunks=10), size=3)
    with pytest.raises(ooc.UsageError):
        od.median_filter(x, size=3, mode="bogus")
    with pytest.raises(ooc.UsageError):
        od.pipeline(x, "equalize")
    with pytest.raises(ooc.UsageError):  # the FFT's tiles are fixed in the image
        od.pipeline(x, "gaussian sigma=2 method=fft")


def test_suggest_chunks():
    words = "gaussian sigma=4"
    c = od.suggest_chunks((20000, 30000), np.float32, words)
    rows = od.reach((20000, 30000), np.float32, words)["depth"][0]
    assert c[1] == 30000 and 120 << 20 <= c[0] * 30000 * 4 <= 136 << 20
    assert c[0] >= 2 * rows / 0.1
    shape = (300, 4000, 5000)
    v = od.suggest_chunks(shape, np.uint16, words)
    depth = od.reach(shape, np.uint16, words)["depth"]
    assert all(n >= 2 * d / 0.1 for n, d in zip(v, depth)) and np.prod(v) * 2 <= 136 << 20
    assert od.suggest_chunks((100, 120, 3), np.uint8) == (100, 120, 3)


def _readme_example():
    """The README's ooc.dask example: its Python block from the line naming ooc.dask on."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    code = text[text.index("# ooc.dask: "):]
    return code[:code.index("```")]


# Debian's distributed starts tornado's loop the old way; the warning is theirs.
@pytest.mark.filterwarnings("ignore:make_current is deprecated:DeprecationWarning")
def test_readme_example_on_a_local_cluster(tmp_path, monkeypatch, capsys):
    # The one LocalCluster of processes here: the README's example as written (blocks made small
    # so that there are several), compared with ooc.pipeline and scipy on the whole volume.
    pytest.importorskip("distributed", reason="python3-distributed is not installed")
    zarr = pytest.importorskip("zarr")
    import functools
    a = (np.random.default_rng(8).random((6, 300, 280)) * 200).astype(np.float32)
    zarr.open_group(str(tmp_path / "scan.zarr"), mode="w").create_dataset(
        "0", data=a, chunks=(1, 128, 128))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(od, "suggest_chunks",
                        functools.partial(od.suggest_chunks, chunk_bytes=200_000))
    with dask.config.set(scheduler=None):
        exec(compile(_readme_example(), "README.md", "exec"), {"__name__": "__main__"})
    want = ooc.pipeline(a, "gaussian sigma=2 ! median size=3", volume=True)
    got = zarr.open(str(tmp_path / "smooth.zarr"), "r")
    assert got["0"][:].tobytes() == want.tobytes()
    assert got["1"].shape == (6, 150, 140) and "2" not in got
    n = _scipy_label(want > 100, 26)[1]
    assert capsys.readouterr().out.strip() == "%d components" % n


@pytest.mark.parametrize("shape,dtype,chunks,volume", [
    ((97, 83), np.uint8, (20, 30), None), ((61, 47, 3), np.uint16, (20, 15, 2), None),
    ((9, 30, 31), np.uint16, (4, 7, 9), True)])
def test_equalize_hist(shape, dtype, chunks, volume):
    rng = np.random.default_rng(1)
    top = np.iinfo(dtype).max
    a = (rng.normal(0.4, 0.1, shape) * top).clip(0, top).astype(dtype)
    got = od.equalize_hist(da.from_array(a, chunks=chunks), volume=volume).compute()
    assert got.tobytes() == ooc.equalize(a, volume=volume).tobytes()
    with pytest.raises(ooc.UsageError):
        od.equalize_hist(da.from_array(a.astype(np.float32), chunks=chunks))


# Shapes no chunk divides, odd sides at every level; the CLI's --levels, --pyramid-z, --nodata,
# --voxel-size and --compress; chunks of the dask array cut off the store's chunks.
ZARR_CASES = [
    ((301, 517), np.float32, (100, 130), None, ["--pyramid", "--chunk", "64"],
     dict(pyramid=True, chunk=64)),
    ((61, 47, 3), np.uint16, (20, 15, 2), None, ["--levels", "3", "--chunk", "9"],
     dict(levels=3, chunk=9)),
    ((7, 70, 61), np.float64, (3, 30, 25), True,
     ["--levels", "2", "--pyramid-z", "--chunk", "16", "--chunk-z", "2", "--voxel-size",
      "2,0.5,0.25"], dict(levels=2, pyramid_z=True, chunk=16, chunk_z=2, voxel_size=(2, .5, .25))),
    ((5, 33, 47), np.uint8, (2, 10, 20), True, ["--levels", "2", "--chunk", "8"],
     dict(levels=2, chunk=8)),
    ((99, 131), np.float32, (40, 50), None,
     ["--levels", "3", "--chunk", "16", "--nodata", "-5", "--compress", "none"],
     dict(levels=3, chunk=16, nodata=-5, compress="none")),
]


@pytest.mark.parametrize("shape,dtype,chunks,volume,flags,kw", ZARR_CASES)
def test_to_zarr_as_the_cli(tmp_path, shape, dtype, chunks, volume, flags, kw):
    zarr = pytest.importorskip("zarr")
    from conftest import same_zarr_stores, tool
    import subprocess
    a = _data(shape, dtype, 4)
    if "nodata" in kw:
        a[np.random.default_rng(0).random(shape) < 0.3] = kw["nodata"]
    np.save(tmp_path / "in.npy", a)
    words = "median size=3x3" if "nodata" in kw else "gaussian sigma=2 ! median size=3x3"
    cli, mine = tmp_path / "cli.zarr", tmp_path / "mine.zarr"
    subprocess.run([tool("oocrun"), str(tmp_path / "in.npy"), str(cli), words, "-q"] + flags +
                   (["--volume"] if volume else []), check=True)
    nd = {"nodata": kw["nodata"]} if "nodata" in kw else {}
    od.to_zarr(od.pipeline(da.from_array(a, chunks=chunks), words, volume=volume, **nd), mine,
               volume=volume, **kw)
    assert len(same_zarr_stores(cli, mine)) > 1


def test_to_zarr_levels_from_blocks():
    # Each level's tasks read a few blocks of the level above, not the whole array.
    zarr = pytest.importorskip("zarr")
    x = da.from_array(_data((300, 260), np.float32, 3), chunks=(64, 64))
    task = od.to_zarr(x, zarr.storage.MemoryStore(), levels=2, chunk=32, compute=False)
    graph = dict(task.__dask_graph__())
    deps = [len(dask.core.get_dependencies(graph, k)) for k in graph if "level" in str(k)]
    assert deps and max(deps) <= 4


def _scipy_label(a, conn):
    ndi = pytest.importorskip("scipy.ndimage")
    rank = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}[conn]
    want, n = ndi.label(a, ndi.generate_binary_structure(a.ndim, rank))
    return want.astype(np.int32), n


def _snake(shape):
    """One component winding through every block: rows of ones joined at alternate ends."""
    a = np.zeros(shape, np.uint8)
    a[::2] = 1
    a[1::4, -1] = 1
    a[3::4, 0] = 1
    return a


@pytest.mark.parametrize("shape,chunks,conns", [((57, 83), (10, 13), (4, 8)),
                                                ((13, 17, 19), (4, 5, 6), (6, 18, 26)),
                                                ((23, 29), (23, 29), (4, 8))])
def test_label_as_scipy(shape, chunks, conns):
    rng = np.random.default_rng(11)
    for density in (0.35, 0.6):
        a = ((rng.random(shape) < density) * rng.integers(1, 250, shape)).astype(np.uint16)
        for conn in conns:
            want, n = _scipy_label(a, conn)
            lab, count = od.label(da.from_array(a, chunks=chunks), connectivity=conn)
            got = lab.compute()
            assert int(count.compute()) == n and got.dtype == np.int32, (conn, density)
            assert got.tobytes() == want.tobytes(), (conn, density)


def test_label_diagonal_corners_and_long_components():
    # Samples meeting only at a corner of four blocks (dask-image#320), along both diagonals,
    # and a snake through every block; in 3-D, a corner of eight blocks.
    a = np.zeros((12, 12), np.uint8)
    a[3, 3] = a[4, 4] = 1      # across the corner at (4, 4)
    a[3, 8] = a[4, 7] = 1      # the other diagonal, at (4, 8)
    a[7, 4] = a[8, 3] = 2
    for conn, count in ((8, 3), (4, 6)):
        lab, n = od.label(da.from_array(a, chunks=4), connectivity=conn)
        assert int(n.compute()) == count
        assert lab.compute().tobytes() == _scipy_label(a, conn)[0].tobytes()
    v = np.zeros((6, 6, 6), np.uint8)
    v[2, 2, 2] = v[3, 3, 3] = 1
    for conn in (6, 18, 26):
        lab, n = od.label(da.from_array(v, chunks=3), connectivity=conn)
        assert lab.compute().tobytes() == _scipy_label(v, conn)[0].tobytes()
        assert int(n.compute()) == (1 if conn == 26 else 2)
    s = _snake((61, 47))
    lab, n = od.label(da.from_array(s, chunks=(5, 6)), connectivity=4)
    assert int(n.compute()) == 1 and lab.compute().tobytes() == _scipy_label(s, 4)[0].tobytes()
    with pytest.raises(ooc.UsageError):
        od.label(da.from_array(s, chunks=10), connectivity=6)


def test_labels_take_no_levels(tmp_path):
    # A 2 x 2 mean of labels names no component: levels of them are refused before anything is
    # written, as ooclabel's --pyramid is; level 0 alone is written as the labels.
    a = (np.random.default_rng(3).random((40, 52)) > 0.6).astype(np.uint8)
    lab, n = od.label(da.from_array(a, chunks=16), connectivity=8)
    for kw in ({"pyramid": True}, {"levels": 2}):
        with pytest.raises(ooc.UsageError, match="labels take no reduced-resolution levels"):
            od.to_zarr(lab, str(tmp_path / "l.zarr"), **kw)
        assert not (tmp_path / "l.zarr").exists()
    od.to_zarr(lab, str(tmp_path / "l0.zarr"), levels=0)
    zarr = pytest.importorskip("zarr")
    got = np.asarray(zarr.open_group(str(tmp_path / "l0.zarr"), mode="r")["0"])
    assert got.tobytes() == _scipy_label(a, 8)[0].tobytes()


def test_halo_rows_of_another_layout_are_refused():
    a = _data((12, 9), np.float32, 4)
    with pytest.raises(ooc.UsageError, match="halo_rows"):
        ooc.gaussian_filter(a, 1.0, halo_rows=(np.zeros((3, 8), np.float32), None))
    with pytest.raises(ooc.UsageError, match="halo_rows"):
        ooc.pipeline(a, "gaussian sigma=1", halo_rows=(None, np.zeros((3, 9), np.uint8)))
