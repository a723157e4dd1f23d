# Volumes through the Python module: (Z, Y, X) and (Z, Y, X, C) arrays filtered in 3-D against
# scipy.ndimage in 3-D (float64 reference from the same random input, every mode, several dtypes,
# strided and reversed views, memmaps and .npy paths, a volume of one plane), the rank filters and
# grey morphology exactly, the same bytes as ooc.pipeline's stages, planes=True as each plane in
# 2-D, the keyword volume for 3-D arrays, and the refusals as ValueError (ooc.UsageError).
import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc

MODES = ["reflect", "mirror", "nearest", "wrap", "constant", "grid-mirror", "grid-wrap",
         "grid-constant"]
DTYPES = [np.float32, np.float64, np.uint16, np.int16]
CVAL = 0.75


def volume(shape, dtype, seed=0):
    """Random non-zero samples: integers away from 0, floats in [0.1, 1.6)."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "ui":
        return rng.integers(1, 30000 if dtype == np.int16 else 60000, shape).astype(dtype)
    return (rng.random(shape) * 1.5 + 0.1).astype(dtype)


def check(got, ref64, dtype):
    """got (dtype) against scipy's float64 result: 1e-6 relative of the scale for f32, 1e-12 for
    f64; integers are ooc's rounding of it (scipy truncates), within 1."""
    assert got.dtype == np.dtype(dtype)
    scale = max(float(np.abs(ref64).max()), 1.0)
    if np.dtype(dtype) == np.float32:
        np.testing.assert_allclose(got, ref64, rtol=1e-6, atol=1e-6 * scale)
    elif np.dtype(dtype) == np.float64:
        np.testing.assert_allclose(got, ref64, rtol=1e-12, atol=1e-12 * scale)
    else:
        info = np.iinfo(dtype)
        want = np.clip(np.rint(ref64), info.min, info.max)
        assert np.abs(got.astype(np.float64) - want).max() <= 1


def poisoned(shape, dtype):
    out = np.empty(shape, dtype)
    out[...] = np.nan if np.dtype(dtype).kind == "f" else np.iinfo(dtype).max
    return out


def taps_text(t):
    return ",".join(repr(float(x)) for x in t)


# (ooc's call, scipy's call): both take (array, mode, cval, output).
LINEAR = {
    "gaussian": (lambda v, m, c, o: ooc.gaussian_filter(v, 1.2, mode=m, cval=c, output=o),
                 lambda v, m, c: ndi.gaussian_filter(v, 1.2, mode=m, cval=c)),
    "gaussian_zyx": (lambda v, m, c, o: ooc.gaussian_filter(v, (0.8, 1.5, 1.5), mode=m, cval=c,
                                                            output=o),
                     lambda v, m, c: ndi.gaussian_filter(v, (0.8, 1.5, 1.5), mode=m, cval=c)),
    # A derivative's taps sum to 0: under a constant border of c != 0 each pass pads its own
    # output with c, so the passes' order shows (ooc's separable runs z, x, then y): cval 0.
    "gaussian_anisotropic_order": (
        lambda v, m, c, o: ooc.gaussian_filter(v, (1, 0.7, 2), order=(0, 1, 0), mode=m,
                                               output=o, truncate=3),
        lambda v, m, c: ndi.gaussian_filter(v, (1, 0.7, 2), order=(0, 1, 0), mode=m,
                                            truncate=3)),
    "uniform": (lambda v, m, c, o: ooc.uniform_filter(v, 3, mode=m, cval=c, output=o),
                lambda v, m, c: ndi.uniform_filter(v, 3, mode=m, cval=c)),
    "uniform_even": (lambda v, m, c, o: ooc.uniform_filter(v, (4, 2, 3), mode=m, cval=c,
                                                           output=o),
                     lambda v, m, c: ndi.uniform_filter(v, (4, 2, 3), mode=m, cval=c)),
    "correlate1d_z": (lambda v, m, c, o: ooc.correlate1d(v, [1, -2, 4, 0.5], axis=0, mode=m,
                                                         cval=c, output=o, origin=1),
                      lambda v, m, c: ndi.correlate1d(v, [1, -2, 4, 0.5], axis=0, mode=m,
                                                      cval=c, origin=1)),
    "correlate1d_y": (lambda v, m, c, o: ooc.correlate1d(v, [1, 2, -1], axis=1, mode=m, cval=c,
                                                         output=o),
                      lambda v, m, c: ndi.correlate1d(v, [1, 2, -1], axis=1, mode=m, cval=c)),
    "convolve1d_x": (lambda v, m, c, o: ooc.convolve1d(v, [3, 1, 0.5, 2], axis=-1, mode=m,
                                                       cval=c, output=o),
                     lambda v, m, c: ndi.convolve1d(v, [3, 1, 0.5, 2], axis=-1, mode=m, cval=c)),
    "gaussian1d_z": (lambda v, m, c, o: ooc.gaussian_filter1d(v, 1.5, axis=0, mode=m, cval=c,
                                                              output=o),
                     lambda v, m, c: ndi.gaussian_filter1d(v, 1.5, axis=0, mode=m, cval=c)),
    "uniform1d_z": (lambda v, m, c, o: ooc.uniform_filter1d(v, 4, axis=0, mode=m, cval=c,
                                                            output=o),
                    lambda v, m, c: ndi.uniform_filter1d(v, 4, axis=0, mode=m, cval=c)),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_linear_filters_in_3d_against_scipy(name, dtype, mode):
    ours, theirs = LINEAR[name]
    v = volume((6, 13, 11), dtype, seed=len(name))
    ref = theirs(v.astype(np.float64), mode, CVAL)
    check(ours(v, mode, CVAL, poisoned(v.shape, dtype)), ref, dtype)


# (ooc's, scipy's, extra leading arguments)
RANKS = [(ooc.median_filter, ndi.median_filter, ()),
         (ooc.percentile_filter, ndi.percentile_filter, (30,)),
         (ooc.rank_filter, ndi.rank_filter, (-2,)),
         (ooc.minimum_filter, ndi.minimum_filter, ()),
         (ooc.maximum_filter, ndi.maximum_filter, ()),
         (ooc.grey_opening, ndi.grey_opening, ()),
         (ooc.grey_closing, ndi.grey_closing, ())]


@pytest.mark.parametrize("k", range(len(RANKS)))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32])
@pytest.mark.parametrize("mode", MODES)
def test_rank_and_morphology_in_3d_exact(k, dtype, mode):
    ours, theirs, extra = RANKS[k]
    v = volume((5, 9, 12), dtype, seed=k) if dtype != np.uint8 else \
        np.random.default_rng(k).integers(1, 255, (5, 9, 12)).astype(np.uint8)
    for size in (3, (2, 3, 4), (1, 3, 3), (4, 1, 2)):
        want = theirs(v, *extra, size=size, mode=mode, cval=7)
        got = ours(v, *extra, size=size, mode=mode, cval=7, output=poisoned(v.shape, dtype))
        assert np.array_equal(got, want), (size,)
    box = np.ones((3, 2, 3), bool)
    assert np.array_equal(ours(v, *extra, footprint=box, mode=mode, cval=7),
                          theirs(v, *extra, footprint=box, mode=mode, cval=7))


def test_filters_make_the_pipeline_bytes():
    v = volume((7, 15, 10), np.float32, seed=3)
    for m in ("reflect", "constant"):
        x = ooc.gaussian_filter(v, (1, 2, 2), mode=m, cval=CVAL)
        taps = [ooc._gaussian_taps(s, 0, 4.0, None) for s in (1, 2, 2)]
        text = "separable plane=%s col=%s row=%s" % tuple(taps_text(t) for t in taps)
        y = ooc.pipeline(v, text, mode=m, cval=CVAL, precision="f64")
        assert x.tobytes() == y.tobytes()
        # The gaussian stage at scipy's radii (truncate 4): the library's taps, the same bytes.
        z = ooc.pipeline(v, "gaussian sigma=2 sigma-z=1 radius=8 radius-z=4", mode=m, cval=CVAL,
                         precision="f64")
        assert x.tobytes() == z.tobytes()
        for ax in range(3):
            w = [1, -2, 4]
            x = ooc.correlate1d(v, w, axis=ax, mode=m, cval=CVAL)
            y = ooc.pipeline(v, "correlate1d taps=1,-2,4 axis=%d" % ax, mode=m, cval=CVAL,
                             precision="f64")
            assert x.tobytes() == y.tobytes(), ax
    u = volume((7, 15, 10), np.uint16, seed=4)
    for f, stage in ((ooc.median_filter, "median"), (ooc.minimum_filter, "minimum"),
                     (ooc.grey_closing, "closing")):
        assert f(u, size=(3, 2, 5)).tobytes() == ooc.pipeline(
            u, stage + " size=2x5 size-z=3").tobytes()
    assert ooc.percentile_filter(u, 20, size=3).tobytes() == ooc.pipeline(
        u, "percentile size=3 q=20").tobytes()


def test_bytes_do_not_depend_on_the_plan():
    v = volume((20, 40, 33), np.float32, seed=13)
    for f in (lambda x, **k: ooc.gaussian_filter(x, (2, 1, 1.5), **k),
              lambda x, **k: ooc.median_filter(x, (3, 4, 5), **k),
              lambda x, **k: ooc.pipeline(x, "uniform size=3 size-z=5 ! closing size=2", **k)):
        want = f(v).tobytes()
        for plan in (dict(mem_limit="300K", band_rows=3, threads=1),
                     dict(band_rows=2, threads=2, tile_cols=7), dict(band_rows=40)):
            assert f(v, **plan).tobytes() == want, plan


def test_channels_memmaps_paths_and_views(tmp_path):
    v = volume((5, 11, 9, 3), np.float32, seed=5)
    ref = np.stack([ndi.gaussian_filter(v[..., c].astype(np.float64), (1, 1.5, 1.5))
                    for c in range(3)], axis=-1)
    check(ooc.gaussian_filter(v, (1, 1.5, 1.5, 0)), ref, np.float32)
    check(ooc.gaussian_filter(v, (1, 1.5, 1.5), axes=(0, 1, 2)), ref, np.float32)
    want = ndi.median_filter(v, size=(3, 3, 3, 1))
    assert np.array_equal(ooc.median_filter(v, size=(3, 3, 3, 1)), want)
    assert np.array_equal(ooc.pipeline(v, "median size=3"), want)
    path = tmp_path / "in.npy"
    np.save(path, v[..., 0])
    mm = np.load(path, mmap_mode="r")
    out = np.lib.format.open_memmap(tmp_path / "out.npy", "w+", np.float32, mm.shape)
    ooc.uniform_filter(mm, 3, output=out, mode="wrap", mem_limit="1M")
    out.flush()
    check(np.load(tmp_path / "out.npy"), ndi.uniform_filter(v[..., 0].astype(np.float64), 3,
                                                            mode="wrap"), np.float32)
    assert np.array_equal(ooc.pipeline(str(path), "maximum size=3", band_rows=2),
                          ndi.maximum_filter(v[..., 0], 3))
    # Strided, reversed and transposed views: any strides along z, y and x.
    for view in (v[::-1, ::2, :, 1], v[:, :, ::-1, 2].transpose(2, 1, 0), v[1:4, 3:, 1:8, 0]):
        check(ooc.gaussian_filter(view, 1.0, mode="nearest"),
              ndi.gaussian_filter(view.astype(np.float64), 1.0, mode="nearest"), np.float32)
        assert np.array_equal(ooc.rank_filter(view, 4, size=(2, 3, 2)),
                              ndi.rank_filter(view, 4, size=(2, 3, 2)))
    # Filtering in place: the input is copied first.
    w = v[..., 1].copy()
    ref = ndi.gaussian_filter(w.astype(np.float64), 1.0)
    check(ooc.gaussian_filter(w, 1.0, output=w), ref, np.float32)


@pytest.mark.parametrize("mode", MODES)
def test_a_volume_of_one_plane(mode):
    v = volume((1, 12, 9), np.float64, seed=6)
    for ours, theirs in ((lambda x: ooc.gaussian_filter(x, 1.3, mode=mode, cval=CVAL),
                          lambda x: ndi.gaussian_filter(x, 1.3, mode=mode, cval=CVAL)),
                         (lambda x: ooc.correlate1d(x, [2, -1, 3], 0, mode=mode, cval=CVAL),
                          lambda x: ndi.correlate1d(x, [2, -1, 3], 0, mode=mode, cval=CVAL))):
        check(ours(v), theirs(v), np.float64)
    if "constant" in mode:  # cval in the window along z
        with pytest.raises(ValueError, match="size 1 along z"):
            ooc.median_filter(v, 3, mode=mode, cval=CVAL)
        return
    for ours, theirs, extra in RANKS:
        for size in (3, (2, 3, 2), (4, 2, 3)):
            assert np.array_equal(ours(v, *extra, size=size, mode=mode),
                                  theirs(v, *extra, size=size, mode=mode)), (ours, size)
    for r in (0, 5, -1, -7):
        assert np.array_equal(ooc.rank_filter(v, r, size=(3, 3, 2), mode=mode),
                              ndi.rank_filter(v, r, size=(3, 3, 2), mode=mode))
    for q in (0, 12.5, 50, 99, 100, -30):
        assert np.array_equal(ooc.percentile_filter(v, q, size=(2, 3, 3), mode=mode),
                              ndi.percentile_filter(v, q, size=(2, 3, 3), mode=mode))


def test_the_volume_keyword():
    rgb = volume((10, 12, 3), np.float32, seed=7)
    # Last axis of 1 to 4 entries: (H, W, C) unless volume=True.
    per_channel = ooc.uniform_filter(rgb, (3, 3, 1))
    assert np.array_equal(ooc.median_filter(rgb, size=(3, 3, 1)),
                          ndi.median_filter(rgb, size=(3, 3, 1)))
    check(per_channel, ndi.uniform_filter(rgb.astype(np.float64), (3, 3, 1)), np.float32)
    check(ooc.uniform_filter(rgb, 3, volume=True),
          ndi.uniform_filter(rgb.astype(np.float64), 3), np.float32)
    assert np.array_equal(ooc.median_filter(rgb, 3, volume=True), ndi.median_filter(rgb, 3))
    with pytest.raises(ValueError, match="channels"):
        ooc.uniform_filter(rgb, 3)
    stack = volume((3, 12, 10), np.float32, seed=8)  # last axis of 10: a volume
    check(ooc.gaussian_filter(stack, 1), ndi.gaussian_filter(stack.astype(np.float64), 1),
          np.float32)
    with pytest.raises(ValueError, match="channels"):
        ooc.gaussian_filter(stack, 1, volume=False)
    with pytest.raises(ValueError, match="volume=False"):
        ooc.gaussian_filter(stack[..., np.newaxis], 1, volume=False)
    with pytest.raises(ValueError, match="volume=True"):
        ooc.gaussian_filter(stack[0], 1, volume=True)


def test_planes_filter_each_plane_in_2d():
    v = volume((4, 12, 9), np.float32, seed=9)
    got = ooc.pipeline(v, "gaussian sigma=1 ! median size=3 ! dog sigma1=1 sigma2=2",
                       planes=True)
    for z in range(4):
        assert np.array_equal(got[z], ooc.pipeline(
            v[z], "gaussian sigma=1 ! median size=3 ! dog sigma1=1 sigma2=2"))
    fp = np.array([[[0, 1, 0], [1, 1, 1], [0, 1, 0]]])
    assert np.array_equal(ooc.median_filter(v, footprint=fp), ndi.median_filter(v, footprint=fp))
    w = np.arange(9.0).reshape(1, 3, 3) - 4
    check(ooc.correlate(v, w, mode="mirror"),
          ndi.correlate(v.astype(np.float64), w, mode="mirror"), np.float32)


def test_refusals_are_value_errors():
    v = volume((3, 8, 8), np.float32, seed=1)
    for pipeline in ("convolve kernel=laplace",):
        with pytest.raises(ValueError, match="planes=True") as e:
            ooc.pipeline(v, pipeline)
        assert isinstance(e.value, ooc.Error) and e.value.kind == "usage"
    with pytest.raises(ValueError, match="odd sides"):
        ooc.median_filter(v, footprint=np.ones((2, 3, 3)) - np.eye(3)[None])
    with pytest.raises(ValueError, match="channels"):
        ooc.gaussian_filter(volume((3, 8, 8, 2), np.float32), 1.0)
    with pytest.raises(ValueError, match="origin"):
        ooc.median_filter(v, 3, origin=1)
    with pytest.raises(ValueError, match="structure"):
        ooc.grey_opening(v, structure=np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="one border"):
        ooc.gaussian_filter(v, 1, mode=("reflect", "wrap", "wrap"))


def test_files_of_volumes_run_as_arrays(tmp_path):
    tifffile = pytest.importorskip("tifffile")
    v = volume((5, 14, 11), np.uint16, seed=11)
    np.save(tmp_path / "v.npy", v)
    tifffile.imwrite(tmp_path / "v.tif", v)
    for pipeline, planes in (("gaussian sigma=1 ! median size=3", False),
                             ("dog sigma1=1 sigma2=2", True)):
        want = ooc.pipeline(v, pipeline, planes=planes)
        for name in ("v.npy", "v.tif"):
            out = tmp_path / ("out-" + name + ".npy")
            ooc.run(tmp_path / name, out, pipeline, planes=planes)
            assert np.array_equal(np.load(out), want), (name, pipeline)
    ooc.run(tmp_path / "v.tif", tmp_path / "page.npy", "median size=3", page=2)
    assert np.array_equal(np.load(tmp_path / "page.npy"), ooc.pipeline(v[2], "median size=3"))
    rgbish = volume((6, 9, 3), np.float32, seed=12)  # (Z, Y, X) only with volume=True
    np.save(tmp_path / "r.npy", rgbish)
    ooc.run(tmp_path / "r.npy", tmp_path / "r-out.npy", "uniform size=3", volume=True)
    check(np.load(tmp_path / "r-out.npy"), ndi.uniform_filter(rgbish.astype(np.float64), 3),
          np.float32)
