# Zarr stores as inputs of the Python module's file functions: a zarr-python array and an OME-Zarr
# group (input_level) give the bytes the same image gives as .npy.
import numpy as np
import pytest

import ooc

zarr = pytest.importorskip("zarr")


def test_zarr_inputs_match_npy(tmp_path):
    rng = np.random.default_rng(3)
    levels = [rng.random((41, 29)).astype(np.float32) + 1, rng.random((21, 15)).astype(np.float32)]
    group = zarr.open_group(str(tmp_path / "img.zarr"), mode="w")
    for k, img in enumerate(levels):
        group.create_dataset(str(k), data=img, chunks=(8, 10))
        np.save(tmp_path / f"l{k}.npy", img)
    group.attrs["multiscales"] = [{"version": "0.4", "datasets": [{"path": "0"}, {"path": "1"}],
                                   "axes": [{"name": "y"}, {"name": "x"}]}]
    for k, kwargs in [(0, {}), (1, {"input_level": 1})]:
        ooc.convolve_file(tmp_path / "img.zarr", tmp_path / "z.npy", radius=3, band_rows=5, **kwargs)
        ooc.convolve_file(tmp_path / f"l{k}.npy", tmp_path / "n.npy", radius=3, band_rows=5)
        assert np.array_equal(np.load(tmp_path / "z.npy"), np.load(tmp_path / "n.npy"))
    ooc.convolve_file(tmp_path / "img.zarr" / "1", tmp_path / "z.npy", radius=3)
    ooc.convolve_file(tmp_path / "l1.npy", tmp_path / "n.npy", radius=3)
    assert np.array_equal(np.load(tmp_path / "z.npy"), np.load(tmp_path / "n.npy"))
    with pytest.raises(ooc.Error, match="does not exist"):
        ooc.convolve_file(tmp_path / "img.zarr", tmp_path / "z.npy", radius=3, input_level=2)
