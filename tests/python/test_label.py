# ooc.label (issue 47 item 6): connected components of arrays, memmaps and .npy paths as
# scipy.ndimage.label returns them, (labels, count), the same dtype and values, for images and
# volumes, every connectivity (or scipy's structure), small bands; the refusals raise UsageError.
import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc

RANK = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}


def mask(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) < 0.4).astype(np.uint8) * rng.integers(1, 9, shape).astype(np.uint8)


@pytest.mark.parametrize("shape,conn", [((37, 41), 4), ((37, 41), 8), ((5, 19, 23), 6),
                                        ((5, 19, 23), 18), ((5, 19, 23), 26)])
def test_label_matches_scipy(shape, conn):
    a = mask(shape, conn)
    s = ndi.generate_binary_structure(a.ndim, RANK[conn])
    want, n = ndi.label(a, s)
    for kw in ({"connectivity": conn}, {"structure": s}, {"connectivity": conn, "band_rows": 2}):
        got, m = ooc.label(a, **kw)
        assert m == n and got.dtype == want.dtype and np.array_equal(got, want), kw


def test_label_defaults_paths_and_outputs(tmp_path):
    a = mask((4, 17, 18), 1)
    want, n = ndi.label(a)
    path = tmp_path / "m.npy"
    np.save(path, a)
    got, m = ooc.label(path)
    assert m == n and np.array_equal(got, want)
    out = np.full(a.shape, 0xFFFFFFFF, np.uint32)
    got, m = ooc.label(a[1] != 0, output=out[1])
    w1, n1 = ndi.label(a[1])
    assert got is out[1] or np.shares_memory(got, out)
    assert m == n1 and np.array_equal(out[1], w1)
    z, k = ooc.label(np.zeros((6, 7), np.float32))
    assert k == 0 and not z.any()


def test_label_refusals():
    a = mask((9, 10), 2)
    with pytest.raises(ooc.UsageError):
        ooc.label(a, connectivity=6)
    with pytest.raises(ooc.UsageError):
        ooc.label(a, structure=np.ones((3, 3, 3)))
    with pytest.raises(ooc.UsageError):
        ooc.label(a, output=np.zeros(a.shape, np.float32))


# u64 labels: label_type="u64" (int64 labels, scipy's values), an int64 or uint64 output (poisoned
# first), and auto's promotion once the image's bound passes the u32 limit (lowered through the
# stage's test hook); "u32" over that limit is refused.
@pytest.mark.parametrize("shape,conn", [((33, 47), 8), ((4, 13, 15), 26)])
def test_label_u64(shape, conn, monkeypatch):
    a = mask(shape, 7)
    s = ndi.generate_binary_structure(a.ndim, RANK[conn])
    want, n = ndi.label(a, s, output=np.int64)
    got, m = ooc.label(a, connectivity=conn, label_type="u64", band_rows=3)
    assert m == n and got.dtype == np.int64 and np.array_equal(got, want)
    for dt in (np.int64, np.uint64):
        out = np.full(a.shape, 0x5A5A5A5A5A5A5A5A, dt)
        got, m = ooc.label(a, connectivity=conn, output=out)
        assert m == n and got is out and np.array_equal(out, want)
    got, m = ooc.label(a, connectivity=conn)
    assert got.dtype == np.int32  # the bound fits u32
    monkeypatch.setenv("OOC_LABEL_MAX_FOR_TESTS", str(n - 1))
    got, m = ooc.label(a, connectivity=conn)
    assert m == n and got.dtype == np.int64 and np.array_equal(got, want)
    with pytest.raises(ooc.UsageError, match="label-type=u64"):
        ooc.label(a, connectivity=conn, label_type="u32")
    with pytest.raises(ooc.UsageError):
        ooc.label(a, connectivity=conn, label_type="u32", output=np.zeros(a.shape, np.int64))


# ooc.regionprops_table: skimage.measure.regionprops_table's columns and values (intensity_std as
# NumPy's std, intensity_sum as scipy.ndimage.sum), for arrays and .npy paths, small bands.
@pytest.mark.parametrize("shape,conn,itype", [((41, 37), 8, np.float32), ((43, 29), 4, np.uint16),
                                              ((5, 19, 23), 26, np.int16),
                                              ((4, 17, 15), 6, np.float64)])
def test_regionprops_table_matches_skimage(shape, conn, itype, tmp_path):
    measure = pytest.importorskip("skimage.measure")
    a = mask(shape, conn)
    rng = np.random.default_rng(conn)
    inten = (rng.random(shape) * 500 - 100).astype(itype)
    lab, n = ooc.label(a, connectivity=conn)
    want = measure.regionprops_table(lab, inten, properties=(
        "label", "area", "bbox", "centroid", "intensity_mean", "intensity_min", "intensity_max"))
    idx = np.arange(1, n + 1)
    want["intensity_sum"] = ndi.sum(inten.astype(np.float64), lab, idx)
    want["intensity_std"] = ndi.standard_deviation(inten.astype(np.float64), lab, idx)
    np.save(tmp_path / "m.npy", a)
    np.save(tmp_path / "i.npy", inten)
    for args, kw in (((a, inten), {"band_rows": 3}), ((tmp_path / "m.npy", tmp_path / "i.npy"), {})):
        got = ooc.regionprops_table(*args, connectivity=conn, **kw)
        assert set(got) == set(want)
        for k, v in want.items():
            assert got[k].dtype == v.dtype, k
            tol = 1e-5 if itype == np.float32 and "mean" in k else 1e-10
            np.testing.assert_allclose(got[k], v, rtol=tol, err_msg=k)
    # Without an intensity image, a subset of properties, min_size, no region at all.
    got = ooc.regionprops_table(a, properties=("label", "bbox"), connectivity=conn, min_size=3)
    keep = np.bincount(lab.ravel()) >= 3
    keep[0] = False
    lab3, n3 = ooc.label(keep[lab], connectivity=conn)
    want3 = measure.regionprops_table(lab3, properties=("label", "bbox"))
    assert set(got) == set(want3)
    for k in want3:
        np.testing.assert_array_equal(got[k], want3[k], err_msg=k)
    empty = ooc.regionprops_table(np.zeros(shape, np.uint8), inten)
    assert all(v.size == 0 for v in empty.values()) and "intensity_mean" in empty
    with pytest.raises(ooc.UsageError):
        ooc.regionprops_table(a, properties=("eccentricity",))
    with pytest.raises(ooc.UsageError):
        ooc.regionprops_table(a, properties=("intensity_mean",))
