# Shared fixtures of the Python module's tests: the tools' directory (for byte-for-byte comparisons
# with oocconv/ooceq), whether a CUDA device is present, and two OME-Zarr stores compared.
import json
import os
import shutil
from pathlib import Path

import pytest

import ooc

ROOT = Path(__file__).resolve().parents[2]


def tool(name):
    """Path of a tool: $OOC_BIN_DIR (set by ctest), then the usual build directories, then PATH."""
    dirs = [os.environ.get("OOC_BIN_DIR", "")] + [str(p) for p in sorted(ROOT.glob("build*"))]
    for d in dirs:
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    found = shutil.which(name)
    if not found:
        pytest.skip(name + " not built (set OOC_BIN_DIR)")
    return found


@pytest.fixture
def needs_cuda():
    if ooc.cuda_device_count() == 0:
        pytest.skip("no CUDA device on this machine")


def same_zarr_stores(want, got):
    """Two OME-Zarr stores (pathlib paths) alike: every level's samples, .zarray and chunk files
    (the compressed bytes may differ: numcodecs bundles its own blosc, the CLI links the
    system's), and the multiscales but for their names; several levels."""
    zarr = pytest.importorskip("zarr")
    levels = sorted(p.name for p in want.iterdir() if p.is_dir())
    assert levels == sorted(p.name for p in got.iterdir() if p.is_dir()) and levels
    for k in levels:
        a, b = zarr.open(str(want / k), "r")[:], zarr.open(str(got / k), "r")[:]
        assert a.dtype == b.dtype and a.shape == b.shape, k
        assert a.tobytes() == b.tobytes(), k
        meta = [json.loads((s / k / ".zarray").read_text()) for s in (want, got)]
        assert meta[0] == meta[1], k
        files = [sorted(str(f.relative_to(s)) for f in (s / k).rglob("*") if f.is_file())
                 for s in (want, got)]
        assert files[0] == files[1], k
    attrs = [json.loads((s / ".zattrs").read_text())["multiscales"][0] for s in (want, got)]
    assert {**attrs[0], "name": ""} == {**attrs[1], "name": ""}
    return levels
