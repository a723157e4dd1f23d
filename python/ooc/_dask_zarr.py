"""ooc.dask.to_zarr: a dask array into oocrun's OME-Zarr 0.4 layout, with its pyramid (--pyramid,
--levels, --pyramid-z, --nodata, --compress, --chunk, --chunk-z, --voxel-size as the CLI takes
them), equal to the CLI's store sample for sample. Each task writes whole chunks of one level:
level 0's blocks are cut on the store's chunks, and level k + 1 is made block by block from level
k's blocks (2 x 2 means, as io/pyramid.cpp makes them), each level's blocks depending on a few
of the level above only, so no step waits for the whole array."""

import math
import os

import numpy as np

import dask
import dask.array as da

from . import _usage


def _lcm(a, b):
    return a * b // math.gcd(a, b)


def _aligned(chunks, size):
    """Chunks along one axis whose every cut falls on a multiple of `size` (the store's chunk, or
    twice that where a level is made from the blocks), so that each task writes whole chunks of
    the store and no two tasks share one."""
    if all(c % size == 0 for c in chunks[:-1]):
        return tuple(chunks)
    step = max(size, (max(chunks) // size) * size)
    n = sum(chunks)
    return (step,) * (n // step) + ((n % step,) if n % step else ())


def auto_levels(height, width, min_side=256):
    """pyramid_auto_levels: halve until the smaller side is under min_side."""
    k = 0
    while min(width, height) >= min_side and min(width, height) > 1:
        height, width, k = (height + 1) // 2, (width + 1) // 2, k + 1
    return k


def _pairs(a, axis):
    """(even, odd) slices of `a` along axis: rows 2r and 2r + 1, an odd last row with itself."""
    ix = [slice(None)] * a.ndim
    ix[axis] = slice(0, None, 2)
    even = a[tuple(ix)]
    ix[axis] = slice(1, None, 2)
    odd = a[tuple(ix)]
    if a.shape[axis] % 2:
        ix[axis] = slice(-1, None)
        odd = np.concatenate([odd, a[tuple(ix)]], axis=axis)
    return even, odd


def _acc(t):
    return np.float64 if t.kind == "f" else np.int64


def _mean4(b, ay, ax):
    """The 2 x 2 means of mean4 in pyramid.cpp: top left, bottom left, top right, bottom right
    summed in float64 (integers exactly), integers rounded half to even."""
    t = b.dtype
    top, bottom = _pairs(b, ay)
    tl, tr = _pairs(top, ax)
    bl, br = _pairs(bottom, ax)
    acc = _acc(t)
    s = tl.astype(acc) + bl.astype(acc) + tr.astype(acc) + br.astype(acc)
    if t.kind == "f":
        return (s * 0.25).astype(t)
    return ((s + 1 + ((s >> 2) & 1)) >> 2).astype(t)


def _mean8(b, az, ay, ax):
    """pyramid_reduce_row_z: planes 2p and 2p + 1, eight samples summed in its order and rounded
    once; an odd last plane takes the 2 x 2 mean of itself, as the CLI's builder does."""
    t = b.dtype
    n = b.shape[az]
    ix = [slice(None)] * b.ndim
    ix[az] = slice(0, n - n % 2)
    whole = b[tuple(ix)]
    ix[az] = slice(0, None, 2)
    ev = whole[tuple(ix)]
    ix[az] = slice(1, None, 2)
    od = whole[tuple(ix)]
    acc = _acc(t)
    a, bb = (v.astype(acc) for v in _pairs(ev, ay))
    c, d = (v.astype(acc) for v in _pairs(od, ay))
    al, ar = _pairs(a, ax)
    bl, br = _pairs(bb, ax)
    cl, cr = _pairs(c, ax)
    dl, dr = _pairs(d, ax)
    s = al + bl + ar + br + cl + dl + cr + dr
    out = (s * 0.125).astype(t) if t.kind == "f" else ((s + 3 + ((s >> 3) & 1)) >> 3).astype(t)
    if n % 2:
        ix[az] = slice(n - 1, n)
        out = np.concatenate([out, _mean4(b[tuple(ix)], ay, ax)], axis=az)
    return out


def _mean4_masked(b, ay, ax, nodata):
    """reduce_masked: the mean of the valid samples (not NaN, not nodata), nodata where none."""
    t = b.dtype
    top, bottom = _pairs(b, ay)
    tl, tr = _pairs(top, ax)
    bl, br = _pairs(bottom, ax)
    s = np.zeros(tl.shape, np.float64)
    n = np.zeros(tl.shape, np.int64)
    for v in (tl, bl, tr, br):
        v = v.astype(np.float64)
        ok = ~(np.isnan(v) | (v == nodata))
        s = s + np.where(ok, v, 0.0)
        n += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.where(n == 0, nodata, s / np.maximum(n, 1))
    if t.kind == "f":
        return m.astype(t)
    info = np.iinfo(t)
    m = np.clip(np.rint(m), info.min, info.max)
    return np.where(np.isnan(m), 0, m).astype(t)


def _halve(block, *, ay, ax, az, nodata):
    b = np.asarray(block)
    if az is not None:
        return _mean8(b, az, ay, ax)
    if nodata is not None:
        return _mean4_masked(b, ay, ax, nodata)
    return _mean4(b, ay, ax)


def _codec(compress, level):
    import numcodecs
    name = compress or "blosc"
    if name in ("blosc", "blosc-lz4", "blosc-zstd"):
        lv = 5 if level < 0 else level
        if not 0 <= lv <= 9:
            raise _usage("level for %s is 0 to 9, got %d" % (name, level))
        return numcodecs.Blosc(cname="zstd" if name == "blosc-zstd" else "lz4", clevel=lv,
                               shuffle=numcodecs.Blosc.SHUFFLE, blocksize=0)
    if name in ("zstd", "zlib", "gzip"):
        lv = 1 if level < 0 else level
        lo, hi = (1, 22) if name == "zstd" else (0, 9)
        if not lo <= lv <= hi:
            raise _usage("level for %s is %d to %d, got %d" % (name, lo, hi, level))
        return {"zstd": numcodecs.Zstd, "zlib": numcodecs.Zlib, "gzip": numcodecs.GZip}[name](
            level=lv)
    if name == "none":
        return None
    raise _usage("compress for Zarr takes blosc, blosc-zstd, zstd, zlib, gzip or none, got %r"
                 % (compress,))


def _fits(nodata, dtype):
    """Whether the store records nodata (the CLI's rule: an integer type holds the value)."""
    if nodata is None:
        return False
    if np.dtype(dtype).kind == "f":
        return True
    if math.isnan(nodata):
        return False
    info = np.iinfo(dtype)
    return float(nodata).is_integer() and info.min <= nodata <= info.max


def _attrs(name, ndim, channels, vol, levels, pyramid_z, voxel):
    sized = voxel is not None
    z_sized = sized and voxel[0] > 0

    def space(n, unit):
        a = {"name": n, "type": "space"}
        if unit:
            a["unit"] = "micrometer"
        return a

    axes = [space("y", sized), space("x", sized)]
    if vol:
        axes.insert(0, space("z", z_sized))
    if channels:
        axes.insert(0, {"name": "c", "type": "channel"})
    datasets = []
    for k in range(levels + 1):
        f = float(1 << k)
        scale = [voxel[1] * f, voxel[2] * f] if sized else [f, f]
        if vol:
            fz = f if pyramid_z else 1.0
            scale.insert(0, voxel[0] * fz if z_sized else fz)
        if channels:
            scale.insert(0, 1.0)
        datasets.append({"coordinateTransformations": [{"scale": scale, "type": "scale"}],
                         "path": str(k)})
    desc = ("2 x 2 x 2 means; odd last planes, rows and columns averaged with themselves"
            if pyramid_z else "2 x 2 means; odd last rows and columns averaged with themselves")
    return [{"axes": axes, "datasets": datasets,
             "metadata": {"description": desc, "method": "ooc"},
             "name": name, "type": "mean", "version": "0.4"}]


def check_options(chunk, chunk_z, levels, compress, level):
    """The store's options refused as the CLI refuses them, before any task runs."""
    if not 1 <= int(chunk) <= 65536 or not 1 <= int(chunk_z) <= 65536:
        raise _usage("chunk is 1 to 65536 pixels and chunk_z 1 to 65536 planes")
    if levels is not None and not 0 <= int(levels) <= 30:
        raise _usage("levels is 0 to 30, got %d" % int(levels))
    return _codec(compress, int(level))


def to_zarr(x, url, vol, n, *, pyramid=False, levels=None, pyramid_z=False, chunk=512,
            chunk_z=1, nodata=None, compress=None, level=-1, voxel_size=None, compute=True):
    """See ooc.dask.to_zarr (x checked, vol and n its layout)."""
    import zarr

    if vol and x.ndim > n:
        raise _usage("to_zarr takes (Z, Y, X) volumes; give each channel of a (Z, Y, X, C) one "
                     "its own store")
    if pyramid_z and not vol:
        raise _usage("pyramid_z is for volumes (pyramid halves y and x)")
    codec = check_options(chunk, chunk_z, levels, compress, level)
    h, w = x.shape[n - 2], x.shape[n - 1]
    if levels is None:
        levels = auto_levels(h, w) if pyramid else 0
    levels = int(levels)
    pyramid_z = bool(pyramid_z) and levels > 0
    if voxel_size is not None:
        voxel = tuple(float(v) for v in voxel_size)
        voxel = voxel if len(voxel) == 3 else (0.0,) + voxel
        if len(voxel) != 3 or not (voxel[1] > 0 and voxel[2] > 0 and voxel[0] >= 0):
            raise _usage("voxel_size is (z, y, x) or (y, x) micrometres, positive")
    else:
        voxel = None
    channels = x.ndim > n
    if channels:  # channels first, as the CLI stores them
        x = da.moveaxis(x, -1, 0)
    ay, ax = x.ndim - 2, x.ndim - 1
    az = x.ndim - 3 if vol else None
    keep = _fits(nodata, x.dtype)
    nd = float(nodata) if keep else None

    if isinstance(url, (str, os.PathLike)):  # a path, named as the CLI names it; else a store
        url = os.fspath(url)
        name = os.path.basename(url.rstrip("/"))
        name = name[:-5] if name.endswith(".zarr") else name
    else:
        name = ""
    group = zarr.open_group(url, mode="w")
    group.attrs["multiscales"] = _attrs(name, x.ndim, channels, vol, levels, pyramid_z, voxel)
    fill = (float("nan") if math.isnan(nd) else nd) if keep else 0
    if keep and x.dtype.kind != "f":
        fill = int(nd)

    sources, targets = [], []
    cur = x
    for k in range(levels + 1):
        depth = cur.shape[az] if vol else 1
        sizes = [chunk] * 2
        if vol:
            sizes.insert(0, min(int(chunk_z), depth))
        if channels:
            sizes.insert(0, 1)
        # Cuts on the store's chunks; where the next level is made from these blocks, on even
        # rows too, so that only the image's last block has an odd last row.
        step = list(sizes)
        if k < levels:
            for a in (ay, ax) + ((az,) if pyramid_z else ()):
                step[a] = _lcm(step[a], 2)
        cur = cur.rechunk(tuple(_aligned(c, s) for c, s in zip(cur.chunks, step)))
        arr = group.create_dataset(str(k), shape=cur.shape, chunks=tuple(sizes), dtype=cur.dtype,
                                   compressor=codec, fill_value=fill, dimension_separator="/",
                                   overwrite=True)
        sources.append(cur)
        targets.append(arr)
        if k < levels:
            halved = [c if a not in (ay, ax) and not (pyramid_z and a == az)
                      else tuple((v + 1) // 2 for v in c) for a, c in enumerate(cur.chunks)]
            cur = cur.map_blocks(_halve, ay=ay, ax=ax, az=az if pyramid_z else None,
                                 nodata=None if vol else nd, chunks=tuple(halved),
                                 dtype=cur.dtype, name="ooc-level%d-%s" % (
                                     k + 1, dask.base.tokenize(cur.name, nd, pyramid_z)))
    return da.store(sources, targets, lock=False, compute=compute)
