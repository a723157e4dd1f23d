"""method= of the Python 2-D convolution (oocconv --method): FFT tiles and the direct sum both
match scipy.ndimage in float64, on arrays and on files."""
import numpy as np
import pytest
import scipy.ndimage as ndi

import ooc


@pytest.mark.parametrize("method", ["fft", "direct", "auto"])
@pytest.mark.parametrize("mode", ["reflect", "constant", "wrap"])
def test_correlate_method_matches_scipy(method, mode):
    rng = np.random.default_rng(7)
    a = rng.random((157, 203)).astype(np.float32) + 0.5
    w = rng.uniform(-1, 1, (41, 33))
    want = ndi.correlate(a.astype(np.float64), w, mode=mode, cval=0.25)
    got = ooc.correlate(a, w, mode=mode, cval=0.25, method=method)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 2e-5 * scale


def test_convolve_file_method_fft(tmp_path):
    rng = np.random.default_rng(8)
    a = (rng.random((120, 90)) + 1).astype(np.float32)
    src = tmp_path / "in.npy"
    np.save(src, a)
    k = rng.uniform(-1, 1, (31, 31))
    out = tmp_path / "out.npy"
    stats = ooc.convolve_file(src, out, kernel=k, method="fft")
    want = ndi.convolve(a.astype(np.float64), k, mode="reflect")
    assert np.abs(np.load(out) - want).max() <= 2e-5 * np.abs(want).max()
    # "FFT (overlap-save, ...; kissfft / cuFFT)" where CUDA is built, "FFT on the CPU (...)" where not.
    assert "FFT" in stats["operation"] and "overlap-save" in stats["operation"], stats["operation"]


def test_bad_method_is_a_clear_error():
    with pytest.raises(Exception, match="method"):
        ooc.correlate(np.ones((8, 8), np.float32), np.ones((3, 3)), method="fast")
