"""ooc.dask.equalize_hist: ooc.equalize on a dask array. Equalization needs global state: the
blocks' histograms are summed by dask's tree reduction, the table (OpenCV's equalizeHist, as ooc's
equalization_lut) is made once, then applied to each block."""

import dask
import dask.array as da
import numpy as np

from . import _usage


def _block_histogram(block, bins, channels):
    """One block's counts per channel, (1, ..., 1, channels x bins): a cell of the blocks' grid."""
    b = np.asarray(block)
    b = b.reshape(-1, channels)
    h = np.concatenate([np.bincount(b[:, c], minlength=bins) for c in range(channels)])
    return h.astype(np.uint64).reshape((1,) * block.ndim + (channels * bins,))


def _equalization_table(counts, channels):
    """ooc's equalization_lut (OpenCV's equalizeHist): per channel, in float32 as they do."""
    counts = np.asarray(counts).reshape(channels, -1)
    bins = counts.shape[1]
    lut = np.zeros((channels, bins), np.uint16)
    for c in range(channels):
        h = counts[c]
        total = int(h.sum())
        if total == 0:
            continue
        i = int(np.flatnonzero(h)[0])
        if int(h[i]) == total:  # one value: returned unchanged
            lut[c] = np.arange(bins)
            continue
        scale = np.float32(bins - 1) / np.float32(total - int(h[i]))
        sums = np.cumsum(h[i + 1:], dtype=np.uint64)
        v = np.rint(sums.astype(np.float32) * scale)
        lut[c, i + 1:] = np.clip(v, 0, bins - 1).astype(np.uint16)
    return lut


def _apply_table(block, lut):
    b = np.asarray(block)
    if lut.shape[0] == 1:
        return lut[0][b].astype(b.dtype)
    return np.stack([lut[c][b[..., c]] for c in range(lut.shape[0])], axis=-1).astype(b.dtype)


def equalize_hist(x, *, volume=None):
    """ooc.equalize on a dask array of uint8 or uint16 (each channel on its own, a volume's
    histogram over all its planes): the blocks' histograms summed by dask's tree reduction, the
    table made once, then applied to each block; equal to ooc.equalize on the whole array."""
    from .dask import _check, _layout
    _check(x)
    if x.dtype not in (np.uint8, np.uint16):
        raise _usage("equalization takes uint8 or uint16 samples, got %s: convert first"
                     % x.dtype)
    vol, n = _layout(x, volume)
    channels = x.shape[n] if x.ndim > n else 1
    if channels > 1 and len(x.chunks[n]) > 1:
        x = x.rechunk({n: -1})
    bins = 256 if x.dtype == np.uint8 else 65536
    grid = tuple((1,) * k for k in x.numblocks) + ((channels * bins,),)
    counts = x.map_blocks(_block_histogram, bins, channels, dtype=np.uint64, chunks=grid,
                          new_axis=[x.ndim]).sum(axis=tuple(range(x.ndim)), dtype=np.uint64)
    table = dask.delayed(_equalization_table)(counts, channels)
    return da.map_blocks(_apply_table, x, table, dtype=x.dtype,
                         name="ooc-equalize-" + dask.base.tokenize(x))
