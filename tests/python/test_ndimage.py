# ooc's NumPy functions against scipy.ndimage, computed in float64 from the same input: shapes
# (1 x N, N x 1, odd, smaller than the radius), every mode, axes, dtypes, origins, poisoned outputs,
# memmaps and .npy paths in and out, 1-D and (H, W, C) arrays. The three sweeps run on the CPU and,
# where there is a CUDA device, on the GPU, against the same float64 reference.
import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc

MODES = ["reflect", "mirror", "nearest", "wrap", "constant", "grid-mirror", "grid-wrap",
         "grid-constant"]
SHAPES = [(1, 37), (41, 1), (17, 23), (4, 3), (64, 51)]
DTYPES = [np.float32, np.float64, np.uint16]
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    ooc.cuda_device_count() == 0, reason="no CUDA device on this machine"))]


def image(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random(shape) * 2 - 0.5
    if np.dtype(dtype).kind in "ui":
        x = rng.integers(0, 60000 if dtype == np.uint16 else 200, shape)
    return x.astype(dtype)


def check(got, ref64, dtype):
    """got (dtype) against scipy's float64 result: 1e-6 relative (of the image's scale) for f32,
    1e-12 for f64; integers are ooc's rounding of it (scipy truncates), within 1."""
    assert got.dtype == np.dtype(dtype)
    assert not np.isnan(got).any() if got.dtype.kind == "f" else True
    scale = max(float(np.abs(ref64).max()), 1.0)  # the inputs are of order 1
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


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("device", DEVICES)
def test_correlate1d_convolve1d(shape, dtype, mode, device):
    x = image(shape, dtype)
    rng = np.random.default_rng(1)
    for axis in (0, 1, -1):
        for n, origin in ((5, 0), (4, 1), (2, -1), (9, 3)):
            w = rng.random(n) - 0.3
            for ours, theirs in ((ooc.correlate1d, ndi.correlate1d),
                                 (ooc.convolve1d, ndi.convolve1d)):
                ref = theirs(x.astype(np.float64), w, axis=axis, mode=mode, cval=0.25,
                             origin=origin)
                out = poisoned(shape, dtype)
                got = ours(x, w, axis=axis, output=out, mode=mode, cval=0.25, origin=origin,
                           device=device)
                assert got is out
                check(got, ref, dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("device", DEVICES)
def test_gaussian_uniform(shape, dtype, mode, device):
    x = image(shape, dtype, seed=2)
    x64 = x.astype(np.float64)
    # sigma 6 (radius 24) is larger than most of these images: the border rule repeats.
    for sigma in (0.8, (2.0, 1.0), 6.0):
        ref = ndi.gaussian_filter(x64, sigma, mode=mode, cval=1.5)
        check(ooc.gaussian_filter(x, sigma, mode=mode, cval=1.5, device=device), ref, dtype)
    ref = ndi.gaussian_filter(x64, 1.5, mode=mode, truncate=2.0, order=(1, 0))
    if np.dtype(dtype).kind == "f":
        check(ooc.gaussian_filter(x, 1.5, mode=mode, truncate=2.0, order=(1, 0), device=device),
              ref, dtype)
    for axis in (0, -1):
        ref = ndi.gaussian_filter1d(x64, 2.5, axis=axis, mode=mode)
        check(ooc.gaussian_filter1d(x, 2.5, axis=axis, mode=mode, device=device), ref, dtype)
        ref = ndi.uniform_filter1d(x64, 4, axis=axis, mode=mode, origin=1)
        check(ooc.uniform_filter1d(x, 4, axis=axis, mode=mode, origin=1, device=device), ref,
              dtype)
    for size, origin in ((3, 0), ((2, 5), (0, -2)), (7, 0)):
        ref = ndi.uniform_filter(x64, size, mode=mode, origin=origin)
        check(ooc.uniform_filter(x, size, mode=mode, origin=origin, device=device), ref, dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES[:5])
@pytest.mark.parametrize("device", DEVICES)
def test_correlate_convolve_2d(shape, dtype, mode, device):
    x = image(shape, dtype, seed=3)
    rng = np.random.default_rng(4)
    for wshape, origin in (((3, 5), 0), ((4, 2), (1, 0)), ((5, 5), (-2, 1))):
        w = rng.random(wshape) - 0.4
        for ours, theirs in ((ooc.correlate, ndi.correlate), (ooc.convolve, ndi.convolve)):
            ref = theirs(x.astype(np.float64), w, mode=mode, cval=-1.0, origin=origin)
            out = poisoned(shape, dtype)
            check(ours(x, w, output=out, mode=mode, cval=-1.0, origin=origin, device=device), ref,
                  dtype)


def test_radius_override_and_output_dtype():
    x = image((30, 40), np.float32)
    ref = ndi.gaussian_filter(x.astype(np.float64), 2.0, radius=3)
    got = ooc.gaussian_filter(x, 2.0, radius=3, output=np.float64)
    check(got, ref, np.float64)


def test_one_dimensional_and_channels():
    x = image((101,), np.float64)
    check(ooc.gaussian_filter(x, 3.0), ndi.gaussian_filter(x, 3.0), np.float64)
    check(ooc.convolve1d(x, [1, 2, 3, 4], mode="wrap"),
          ndi.convolve1d(x, [1, 2, 3, 4], mode="wrap"), np.float64)
    rgb = image((25, 31, 3), np.float32)
    ref = ndi.gaussian_filter(rgb.astype(np.float64), (2.0, 1.5, 0), mode="nearest")
    check(ooc.gaussian_filter(rgb, (2.0, 1.5, 0), mode="nearest"), ref, np.float32)
    check(ooc.gaussian_filter(rgb, 2.0, axes=(0, 1)),
          ndi.gaussian_filter(rgb.astype(np.float64), (2.0, 2.0, 0)), np.float32)
    w = np.random.default_rng(5).random((3, 5, 1))
    check(ooc.correlate(rgb, w, mode="mirror"),
          ndi.correlate(rgb.astype(np.float64), w, mode="mirror"), np.float32)


def test_memmap_and_npy_path(tmp_path):
    x = image((123, 77), np.float32)
    src = tmp_path / "in.npy"
    np.save(src, x)
    ref = ndi.gaussian_filter(x.astype(np.float64), 3.0, mode="mirror")
    # A .npy path in, a memmap out (written in place, in small bands).
    out = np.lib.format.open_memmap(tmp_path / "out.npy", "w+", np.float32, x.shape)
    out[...] = np.nan
    got = ooc.gaussian_filter(str(src), 3.0, output=out, mode="mirror", mem_limit="1M",
                              band_rows=7)
    assert got is out
    out.flush()
    check(np.load(tmp_path / "out.npy"), ref, np.float32)
    # A numpy.memmap in.
    mm = np.memmap(tmp_path / "raw.bin", np.float32, "w+", shape=x.shape)
    mm[...] = x
    check(ooc.gaussian_filter(mm, 3.0, mode="mirror"), ref, np.float32)
    check(ooc.gaussian_filter(np.load(src, mmap_mode="r"), 3.0, mode="mirror"), ref, np.float32)


def test_in_place_and_non_contiguous():
    x = image((50, 60), np.float64)
    ref = ndi.uniform_filter(x, 5)
    y = x.copy()
    assert ooc.uniform_filter(y, 5, output=y) is y
    check(y, ref, np.float64)
    xt = np.asfortranarray(x)
    check(ooc.uniform_filter(xt, 5), ref, np.float64)
    check(ooc.uniform_filter(x[::2, ::3], 3), ndi.uniform_filter(x[::2, ::3], 3), np.float64)


def test_equalize_array():
    x = image((40, 50), np.uint8)
    eq = ooc.equalize(x)
    assert eq.dtype == np.uint8 and eq.shape == x.shape
    assert eq.min() == 0 and eq.max() == 255
    # Monotone: the order of the values is kept.
    order = np.argsort(x, axis=None, kind="stable")
    assert np.all(np.diff(eq.ravel()[order].astype(int)) >= 0)


def test_same_result_any_band_height_and_threads():
    x = image((97, 45), np.float32)
    a = ooc.gaussian_filter(x, 2.0, band_rows=1, threads=1)
    b = ooc.gaussian_filter(x, 2.0, band_rows=13, threads=2, slots=3)
    assert a.tobytes() == b.tobytes()


def test_cuda_matches_cpu(needs_cuda):
    x = image((300, 257), np.float32)
    a = ooc.gaussian_filter(x, 3.0, device="cpu")
    b = ooc.gaussian_filter(x, 3.0, device="cuda")
    np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)


def test_equalize_cuda_matches_cpu(needs_cuda):
    x = image((300, 257), np.uint16)
    a = ooc.equalize(x, device="cpu")
    b = ooc.equalize(x, device="cuda")
    assert a.tobytes() == b.tobytes()
