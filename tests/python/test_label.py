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
