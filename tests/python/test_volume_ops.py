# The Python module's 3-D weights and footprints on volumes against scipy.ndimage in 3-D:
# correlate and convolve with (D, K, L) weights (and (D, K, L, 1) on (Z, Y, X, C)), origins, a
# volume of one plane; the rank filters and grey morphology with 3-D footprints (exact); the
# 3-D pipeline stages (gradient-magnitude, top-hats) through ooc.pipeline.
import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc

MODES = ["reflect", "nearest", "mirror", "wrap", "constant"]


def volume(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 100, shape).astype(dtype)


@pytest.mark.parametrize("mode", MODES)
def test_3d_weights(mode):
    rng = np.random.default_rng(1)
    k = rng.uniform(-1, 1, (3, 5, 3))
    for shape in [(5, 9, 8), (1, 7, 6), (2, 6, 7)]:
        v = volume(shape, np.float32, seed=len(shape))
        ref = ndi.convolve(v.astype(np.float64), k, mode=mode)
        got = ooc.convolve(v, k, mode=mode)
        assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max(), shape
        ref = ndi.correlate(v.astype(np.float64), k, mode=mode, origin=(1, 0, -1))
        got = ooc.correlate(v, k, mode=mode, origin=(1, 0, -1))
        assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max(), shape
    rgb = volume((4, 7, 6, 3), np.float32, seed=2)
    ref = ndi.convolve(rgb.astype(np.float64), k[..., np.newaxis], mode=mode)
    got = ooc.convolve(rgb, k[..., np.newaxis], mode=mode, method="fft")
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()


@pytest.mark.parametrize("mode", MODES)
def test_3d_footprints(mode):
    rng = np.random.default_rng(2)
    fp = rng.random((3, 3, 5)) < 0.5
    fp[1, 1, 2] = True
    v = (volume((5, 9, 8), np.float32, seed=3) * 2).astype(np.uint8)
    for f in ("median_filter", "minimum_filter", "maximum_filter", "grey_opening",
              "grey_closing"):
        assert np.array_equal(getattr(ooc, f)(v, footprint=fp, mode=mode),
                              getattr(ndi, f)(v, footprint=fp, mode=mode)), f
    assert np.array_equal(ooc.percentile_filter(v, 70, footprint=fp, mode=mode),
                          ndi.percentile_filter(v, 70, footprint=fp, mode=mode))


def test_3d_stages_through_pipeline():
    v = volume((4, 11, 9), np.float32, seed=4)
    got = ooc.pipeline(v, "gradient-magnitude")
    ref = ndi.generic_gradient_magnitude(v.astype(np.float64), ndi.sobel)
    assert np.abs(got - ref).max() <= 3e-6 * np.abs(ref).max()
    assert np.array_equal(ooc.pipeline(v, "white-tophat size=3 size-z=1"),
                          ndi.white_tophat(v, (1, 3, 3)))
    assert np.array_equal(ooc.pipeline(v, "black-tophat size=3"), ndi.black_tophat(v, 3))
