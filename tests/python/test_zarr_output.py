"""Zarr and pyramid outputs from the Python file functions: the same store oocconv writes, read by
zarr-python, with the keywords named as oocconv's options."""
import numpy as np
import pytest

import ooc

zarr = pytest.importorskip("zarr")


def test_convolve_file_writes_an_ome_zarr_pyramid(tmp_path):
    rng = np.random.default_rng(4)
    img = (rng.random((300, 270)) * 1000 + 1).astype(np.uint16)
    src = tmp_path / "in.npy"
    np.save(src, img)
    flat = tmp_path / "flat.npy"
    ooc.convolve_file(src, flat, radius=2)
    out = tmp_path / "out.zarr"
    ooc.convolve_file(src, out, radius=2, chunk=64, levels=2)
    g = zarr.open_group(str(out), mode="r")
    assert [d["path"] for d in g.attrs["multiscales"][0]["datasets"]] == ["0", "1", "2"]
    assert g["0"].chunks == (64, 64)
    assert g["0"].compressor.codec_id == "blosc"  # the format's default, not "none"
    np.testing.assert_array_equal(g["0"][:], np.load(flat))
    f = np.load(flat).astype(np.float64)
    want = np.rint((f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]) / 4)
    np.testing.assert_array_equal(g["1"][:], want.astype(np.uint16))


def test_run_writes_zarr3_shards(tmp_path):
    src = tmp_path / "in.npy"
    np.save(src, (np.arange(200 * 180, dtype=np.float32).reshape(200, 180) % 97) + 1)
    out = tmp_path / "out.zarr"
    ooc.run(src, out, "gaussian sigma=1", zarr_version=3, chunk=32, shard=64, pyramid=False)
    assert (out / "zarr.json").is_file() and (out / "0" / "zarr.json").is_file()
    assert (out / "0" / "c" / "0" / "0").is_file()
