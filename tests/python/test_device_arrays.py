# Arrays in device memory (CuPy's): ooc's array functions filter them on their GPU, into device
# arrays, with scipy.ndimage's results: random data against scipy in float64, every border, images,
# channels and volumes, a strided view, integer types; the refusals (a host output, an output
# sharing the input's memory, a reduction) come as ooc errors. Without CuPy or a GPU those cases
# skip; an object that only claims device memory is refused on any machine.
import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc

MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]


class _Claims:
    """A host array that says it is in device memory (__cuda_array_interface__)."""

    def __init__(self, a):
        self.a = a
        self.shape, self.dtype, self.ndim = a.shape, a.dtype, a.ndim

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.a.shape, "typestr": self.a.dtype.str, "strides": None,
                "data": (self.a.ctypes.data, False), "version": 3}


def test_host_memory_claiming_to_be_device_memory_is_refused():
    a = np.ones((8, 9), np.float32)
    out = np.full_like(a, np.nan)
    with pytest.raises(ooc.Error, match="device memory|CUDA"):
        ooc.gaussian_filter(_Claims(a), 1.0, output=_Claims(out))
    with pytest.raises(ooc.Error, match="device memory|CUDA"):
        ooc.pipeline(_Claims(a), "gaussian sigma=1", output=_Claims(out))
    assert np.isnan(out).all()  # nothing written


@pytest.fixture
def cp():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    if ooc.cuda_device_count() == 0:
        pytest.skip("no CUDA device (or a build without CUDA)")
    return cupy


def _data(shape, dtype, seed=7):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.random(shape) * 200 - 50).astype(dtype)
    return rng.integers(1, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("mode", MODES)
def test_gaussian_every_border(cp, mode):
    a = _data((61, 77), np.float32)
    d = cp.asarray(a)
    got = ooc.gaussian_filter(d, (1.5, 2.5), mode=mode, cval=3.0)
    assert isinstance(got, cp.ndarray) and got.dtype == np.float32
    want = ndi.gaussian_filter(a.astype(np.float64), (1.5, 2.5), mode=mode, cval=3.0)
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=0, atol=2e-4 * np.abs(want).max())
    host = ooc.gaussian_filter(a, (1.5, 2.5), mode=mode, cval=3.0)
    np.testing.assert_allclose(cp.asnumpy(got), host, rtol=0, atol=1e-4)


def test_filters_on_channels_types_and_views(cp):
    a = _data((40, 53, 3), np.uint16)
    got = cp.asnumpy(ooc.uniform_filter(cp.asarray(a), (5, 3, 1), mode="mirror"))
    want = ndi.uniform_filter(a.astype(np.float64), (5, 3, 1), mode="mirror")
    # ooc rounds integer results to nearest (scipy truncates): within one.
    assert np.abs(got.astype(np.float64) - want).max() <= 1.0
    b = _data((70, 90), np.uint8)
    view = cp.asarray(b)[5:60:2, ::3]  # strided: copied whole on the device first
    got = cp.asnumpy(ooc.median_filter(view, size=(3, 5), mode="nearest"))
    np.testing.assert_array_equal(got, ndi.median_filter(b[5:60:2, ::3], size=(3, 5),
                                                         mode="nearest"))
    w = np.arange(15.0).reshape(3, 5) / 20 - 0.3
    f = _data((33, 47), np.float32)
    got = cp.asnumpy(ooc.correlate(cp.asarray(f), w, mode="reflect"))
    want = ndi.correlate(f.astype(np.float64), w, mode="reflect")
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-4 * np.abs(want).max())


@pytest.mark.parametrize("mode", ["reflect", "constant", "wrap"])
def test_volume(cp, mode):
    a = _data((9, 31, 29), np.float32)
    d = cp.asarray(a)
    got = cp.asnumpy(ooc.gaussian_filter(d, (1.0, 1.5, 0.8), mode=mode, cval=1.0))
    want = ndi.gaussian_filter(a.astype(np.float64), (1.0, 1.5, 0.8), mode=mode, cval=1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-4 * np.abs(want).max())
    got = cp.asnumpy(ooc.median_filter(d, size=3, mode=mode, cval=1.0))
    np.testing.assert_array_equal(got, ndi.median_filter(a, size=3, mode=mode, cval=1.0))


def test_pipeline_matches_the_host_run(cp):
    a = _data((90, 70), np.float32)
    chain = "gaussian sigma=2 ! median size=3x3 ! unsharp sigma=1 amount=0.7"
    for mode in MODES:
        got = ooc.pipeline(cp.asarray(a), chain, mode=mode, cval=2.0)
        assert isinstance(got, cp.ndarray)
        host = ooc.pipeline(a, chain, mode=mode, cval=2.0)
        np.testing.assert_allclose(cp.asnumpy(got), host, rtol=0, atol=1e-3)
    got = ooc.pipeline(cp.asarray(a), "gaussian sigma=1 ! convert type=u8")
    assert got.dtype == np.uint8
    host = ooc.pipeline(a, "gaussian sigma=1 ! convert type=u8")
    # A sum a rounding apart on the two backends may round to the next integer.
    assert np.abs(cp.asnumpy(got).astype(int) - host).max() <= 1
    v = _data((7, 20, 24), np.float32)
    got = ooc.pipeline(cp.asarray(v), "gaussian sigma=1 ! median size=3", volume=True)
    host = ooc.pipeline(v, "gaussian sigma=1 ! median size=3", volume=True)
    np.testing.assert_allclose(cp.asnumpy(got), host, rtol=0, atol=1e-3)


def test_a_dask_block_on_device(cp):
    # ooc.dask's step for one CuPy block with its neighbours' rows: joined and filtered on the
    # GPU, trimmed back to the block (the GPU machine has no dask: the step alone).
    from ooc import _dask_block
    a = _data((50, 40), np.float32)
    d = cp.asarray(a)
    for above, below in ((d[4:10], d[30:36]), (None, d[30:36]), (d[4:10], None)):
        got = _dask_block.run_block(d[10:30], above, below, ooc.gaussian_filter, (1.5,),
                                    {"mode": "nearest"})
        assert isinstance(got, cp.ndarray) and got.shape == (20, 40)
        lo, hi = 4 if above is not None else 10, 36 if below is not None else 30
        want = ooc.gaussian_filter(a[lo:hi], 1.5, mode="nearest")[10 - lo:30 - lo]
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=0, atol=1e-4)


def test_refusals(cp):
    d = cp.asarray(_data((20, 30), np.uint8))
    with pytest.raises(ooc.UsageError, match="shares device memory"):
        ooc.gaussian_filter(d, 1.0, output=d)
    with pytest.raises(ooc.UsageError, match="output"):
        ooc.gaussian_filter(d, 1.0, output=np.empty((20, 30), np.uint8))
    with pytest.raises(ooc.UsageError, match="NumPy"):
        ooc.pipeline(d, "equalize")
    with pytest.raises(ooc.UsageError, match="NumPy"):
        ooc.equalize(d)
