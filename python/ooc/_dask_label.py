"""ooc.dask.label: scipy.ndimage.label on a dask array, the same bytes, without a whole-graph
union. Each block is labelled in memory by ooc.label, and each of its labels is named by the
global linear index of its first sample (a block's raster order agrees with the array's, so a
component's first sample is the least of its blocks' first samples). One task per face between
two rows of blocks pairs the names of the samples that touch across it (the planes on either
side, with the diagonal offsets the connectivity allows, so corners are seen too); one task
joins those pairs by union-find over the face labels only and ranks every component's least
name; then each block is renumbered from the block's own labels, the join and the ranks."""

import itertools

import numpy as np

import dask
import dask.array as da
from dask.highlevelgraph import HighLevelGraph

from . import _usage
from ._labels import _connectivity

_RANK = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}


def _label_block(block, conn, offset, shape, options):
    """(labels, names): ooc's labels of the block and, per label, the array's linear index of its
    first sample (labels are numbered in the block's raster order of first samples)."""
    import ooc
    b = np.asarray(block)
    if b.dtype == np.bool_:
        b = b.view(np.uint8)
    lab, n = ooc.label(b, connectivity=conn, **options)
    flat = lab.reshape(-1)
    if n == 0:
        return lab, np.zeros(0, np.int64)
    top = np.maximum.accumulate(flat)
    first = np.flatnonzero(np.diff(top, prepend=0))  # where label k first appears, k = 1..n
    local = np.unravel_index(first, b.shape)
    names = np.ravel_multi_index(tuple(i + o for i, o in zip(local, offset)), shape)
    return lab, names.astype(np.int64)


def _names(part, plane):
    """The names of a block's samples in one plane (-1: background)."""
    lab, names = part
    return np.concatenate([[-1], names])[lab[plane]]


def _face(axis, rank, grid, *parts):
    """The (name, name) pairs touching across a face along `axis`: the last plane of the blocks
    before it against the first of those after it, each side assembled over the other axes'
    blocks (grid: their numbers of blocks), every offset of at most `rank` steps in all."""
    k = len(parts) // 2
    lower, upper = parts[:k], parts[k:]

    def plane(side, index):
        tiles = [_names(p, tuple(index if a == axis else slice(None)
                                 for a in range(p[0].ndim)))
                 for p in side]
        blocks = np.empty(grid, dtype=object)
        for i, t in enumerate(tiles):
            blocks.flat[i] = t
        return np.block(blocks.tolist()) if len(grid) else tiles[0]

    p, q = plane(lower, -1), plane(upper, 0)
    pairs = []
    for d in itertools.product((-1, 0, 1), repeat=p.ndim):
        if 1 + sum(map(abs, d)) > rank:
            continue
        sp = tuple(slice(max(0, -s), n - max(0, s)) for s, n in zip(d, p.shape))
        sq = tuple(slice(max(0, s), n - max(0, -s)) for s, n in zip(d, p.shape))
        a, b = p[sp], q[sq]
        m = (a >= 0) & (b >= 0)
        if m.any():
            pairs.append(np.stack([a[m], b[m]], axis=1))
    if not pairs:
        return np.zeros((0, 2), np.int64)
    return np.unique(np.concatenate(pairs), axis=0)


def _join(names, *faces):
    """(face names, their components' least names, every component's least name, sorted): a
    union-find over the names the faces pair, the least name of each set its root."""
    pairs = np.concatenate([np.zeros((0, 2), np.int64)] + list(faces))
    ids = np.unique(pairs)
    root = np.arange(ids.size)
    if pairs.size:
        u, v = np.searchsorted(ids, pairs[:, 0]), np.searchsorted(ids, pairs[:, 1])
        while True:  # hook each pair's larger root on its smaller, then halve the paths
            ru, rv = root[u], root[v]
            lo = np.minimum(ru, rv)
            before = root.copy()
            np.minimum.at(root, ru, lo)
            np.minimum.at(root, rv, lo)
            while True:
                r2 = root[root]
                if np.array_equal(r2, root):
                    break
                root = r2
            if np.array_equal(root, before):
                break
    roots = ids[root]  # ids are sorted: the least index is the least name
    every = np.concatenate([np.zeros(0, np.int64)] + list(names))
    joined = ids[roots != ids]  # names that are not their component's least
    least = np.sort(np.setdiff1d(every, joined, assume_unique=True))
    return ids, roots, least


def _renumber(part, join):
    lab, names = part
    ids, roots, least = join
    if names.size == 0:
        return lab.astype(np.int32, copy=False)
    r = names.copy()
    i = np.searchsorted(ids, names)
    hit = i < ids.size
    hit[hit] = ids[i[hit]] == names[hit]
    r[hit] = roots[i[hit]]
    table = np.concatenate([[0], np.searchsorted(least, r) + 1]).astype(np.int32)
    return table[lab]


def _count(join):
    return np.int64(join[2].size)


# The name of every labels array label returns starts so (to_zarr refuses levels of them).
LABELS_NAME = "ooc-label-out-"


def label(x, structure=None, *, connectivity=None, threads=None, mem_limit=None):
    """scipy.ndimage.label on a dask array (2-D, or a 3-D volume; non-zero samples are the
    foreground): (labels, count), labels an int32 dask array with x's chunks, numbered in raster
    order of each component's first sample as scipy numbers them, count a 0-d dask array.
    connectivity: 4 or 8 (an image), 6, 18 or 26 (a volume), or scipy's structure."""
    if not isinstance(x, da.Array):
        raise _usage("ooc.dask.label takes a dask array, got %s" % type(x).__name__)
    if x.ndim not in (2, 3) or any(n == 0 for n in x.shape):
        raise _usage("label takes a non-empty 2-D (H, W) or 3-D (Z, Y, X) array, got shape %s"
                     % (x.shape,))
    if any(np.isnan(c) for cs in x.chunks for c in cs):
        raise _usage("the array's chunk sizes are unknown: call compute_chunk_sizes() first")
    conn = _connectivity(structure, connectivity, x.ndim)
    rank = _RANK[conn]
    token = dask.base.tokenize(x, conn, threads, mem_limit)
    first, face, join = ("ooc-label-%s-%s" % (s, token) for s in ("blocks", "faces", "join"))
    out = LABELS_NAME + token
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int) for c in x.chunks]
    grid = list(itertools.product(*(range(n) for n in x.numblocks)))
    blocks = int(np.prod(x.numblocks))
    dsk = {}
    for idx in grid:
        offset = tuple(int(s[i]) for s, i in zip(starts, idx))
        dsk[(first,) + idx] = (_block_task, (x.name,) + idx, conn, offset, x.shape,
                               threads, mem_limit, blocks)
    faces = []
    for axis in range(x.ndim):
        others = [a for a in range(x.ndim) if a != axis]
        sub = [x.numblocks[a] for a in others]
        for b in range(x.numblocks[axis] - 1):
            side = []
            for at in (b, b + 1):
                for rest in itertools.product(*(range(n) for n in sub)):
                    idx = list(rest)
                    idx.insert(axis, at)
                    side.append((first,) + tuple(idx))
            key = (face, axis, b)
            dsk[key] = (_face, axis, rank, tuple(sub)) + tuple(side)
            faces.append(key)
    dsk[(join,)] = (_join_task, [(first,) + idx for idx in grid]) + tuple(faces)
    for idx in grid:
        dsk[(out,) + idx] = (_renumber, (first,) + idx, (join,))
    dsk[("ooc-label-count-" + token,)] = (_count, (join,))
    graph = HighLevelGraph.from_collections(out, dsk, dependencies=[x])
    labels = da.Array(graph, out, chunks=x.chunks, dtype=np.int32,
                      meta=np.empty((0,) * x.ndim, np.int32))
    count = da.Array(graph, "ooc-label-count-" + token, chunks=(), dtype=np.int64,
                     meta=np.empty((), np.int64))
    return labels, count


def _block_task(block, conn, offset, shape, threads, mem_limit, blocks):
    from .dask import _task_options
    return _label_block(block, conn, offset, shape, _task_options(threads, mem_limit, blocks))


def _join_task(parts, *faces):
    return _join([p[1] for p in parts], *faces)
