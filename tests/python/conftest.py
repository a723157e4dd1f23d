# Shared fixtures of the Python module's tests: the tools' directory (for byte-for-byte comparisons
# with oocconv/ooceq) and whether a CUDA device is present.
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
