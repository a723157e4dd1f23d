"""One block of ooc.dask through an ooc array function, with the rows of its neighbours that the
operation reaches: a NumPy block reads them where they lie (halo_rows), a CuPy block is joined
with them on its GPU and filtered there (the output trimmed back to the block's rows), as
dask-image hands CuPy blocks to cupyx.scipy.ndimage. Imports no dask, so that a machine without it
(the GPU machine's Python) can test the block step."""

import numpy as np

from . import _device


def run_block(block, above, below, fn, args, kw):
    """fn(block, *args, **kw) with `above` and `below` (None at the array's edges) as rows of the
    same image before and after the block along axis 0, never written."""
    if _device.is_device(block):
        if above is None and below is None:
            return fn(block, *args, **kw)
        import cupy
        parts = [p for p in (above, block, below) if p is not None]
        first = 0 if above is None else above.shape[0]
        with block.device:
            out = fn(cupy.concatenate(parts, axis=0), *args, **kw)
        return out[first:first + block.shape[0]]
    if above is not None or below is not None:
        kw = dict(kw, halo_rows=(None if above is None else np.asarray(above),
                                 None if below is None else np.asarray(below)))
    return fn(np.asarray(block), *args, **kw)
