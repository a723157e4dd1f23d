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


def test_multichannel_output_is_channels_first_and_reads_back(tmp_path):
    """NGFF orders axes channel before space: a 3-channel output is (c, y, x), a plane a chunk,
    at every level; ooc reads it, and zarr-python's (y, x, c) store of the same image, alike."""
    rng = np.random.default_rng(6)
    img = rng.integers(1, 60000, (75, 61, 3), dtype=np.uint16)
    src = tmp_path / "in.npy"
    np.save(src, img)
    flat = tmp_path / "flat.npy"
    ooc.convolve_file(src, flat, radius=1)
    out = tmp_path / "out.zarr"
    ooc.convolve_file(src, out, radius=1, chunk=16, levels=1)
    g = zarr.open_group(str(out), mode="r")
    ms = g.attrs["multiscales"][0]
    assert [a["name"] for a in ms["axes"]] == ["c", "y", "x"]
    assert ms["datasets"][1]["coordinateTransformations"][0]["scale"] == [1.0, 2.0, 2.0]
    assert g["0"].shape == (3, 75, 61) and g["0"].chunks == (1, 16, 16)
    assert g["1"].shape == (3, 38, 31)
    np.testing.assert_array_equal(np.moveaxis(g["0"][:], 0, -1), np.load(flat))
    # Both axis orders in: the output above (c, y, x) and a (y, x, c) twin by zarr-python.
    yxc = zarr.open(str(tmp_path / "yxc.zarr"), mode="w", shape=img.shape, chunks=(16, 16, 3),
                    dtype=img.dtype)
    yxc[...] = np.load(flat)
    for store in (out, tmp_path / "yxc.zarr"):
        ooc.convolve_file(store, tmp_path / "back.npy", radius=2)
        ooc.convolve_file(flat, tmp_path / "want.npy", radius=2)
        assert np.array_equal(np.load(tmp_path / "back.npy"), np.load(tmp_path / "want.npy"))
