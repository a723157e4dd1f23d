"""ooc's filters on dask arrays: scipy.ndimage's (and dask-image's) names, and ooc.pipeline fused
per block, each block one call of ooc's native kernels with the worker's threads::

    import dask.array as da, ooc.dask
    x = da.from_zarr("scan.zarr")                        # 2-D (H, W[, C]) or 3-D (Z, Y, X[, C])
    x = x.rechunk(ooc.dask.suggest_chunks(x.shape, x.dtype, "gaussian sigma=2 ! median size=3x3"))
    y = ooc.dask.pipeline(x, "gaussian sigma=2 ! median size=3x3", mode="nearest")
    y.to_zarr("out.zarr")                                # or ooc.dask.to_zarr(y, "out.zarr")

The result equals, byte for byte, the ooc function (ooc.pipeline, ooc.gaussian_filter, ...) on the
whole array, for any chunking and every border: each block is overlapped with its neighbours by
exactly what the operation reaches (a pipeline's stages added up: ooc._core.pipeline_reach),
and the array's own edges get no overlap (dask's boundary='none'), so ooc applies the border
there itself, stage by stage, as on the whole array; wrap takes the far side as the overlap
(boundary='periodic'), which a shift-invariant stage maps onto itself. Padding a block at the
edges instead would be exact for one stage only: a second stage must see the border rule applied
to the first one's output, not the first stage applied to a padded input. Chunks smaller than
the overlap are merged as dask's map_overlap merges them; an axis the overlap would cross whole
is taken as one chunk. An FFT (oocrun's method=fft, or auto choosing it for a large kernel) fixes
its tiles in image coordinates, so blocks could not be exact: the convolutions here default to
method="direct", and a pipeline whose plan takes the FFT is refused unless it is one block.

Each call is one map_overlap over the input: one task per block whatever the number of stages.
Arguments are checked (on a few samples, or by planning the pipeline on the whole shape) before
any graph is built, so a bad stage or dtype raises at the call, not at compute().

Per task, ooc runs threads=cpus // (tasks running at once on the machine: a distributed worker's
threads, those of the other workers of its host included; 1 on dask's threaded scheduler once
there are as many blocks as cpus) and mem_limit=(a distributed worker's memory_limit / its
threads) / 2 (the rest holds the block's input and output), else ooc's default; both are
keywords of every function. suggest_chunks gives blocks of about 128 MiB with at most 10% of
overlap per axis: whole rows where they fit, ooc's bands being whole rows.

On dask-distributed, whose workers start with MALLOC_TRIM_THRESHOLD_=65536, zarr-python's chunk
buffers are mapped and unmapped afresh one by one, which made Zarr through the workers 15-20x
slower than the same reads in the client: start them with the buffers kept in the heap, e.g.
dask.config.set({"distributed.nanny.pre-spawn-environ": dict(dask.config.get(
"distributed.nanny.pre-spawn-environ"), MALLOC_MMAP_THRESHOLD_="33554432")}) before LocalCluster.

A filter (pipeline, or one separable pass: gaussian_filter, uniform_filter, correlate1d...) of an
image read straight from a Zarr store (da.from_zarr, or the store given for the array: a path, a
zarr Array or Group) that goes to ooc.dask.to_zarr runs as the CLI's parts (_dask_store.py):
each task reads its rows and writes its chunk rows with ooc's own Zarr reader and writer, the
graph carrying no samples; the same bytes as the general path, which every other array takes.

equalize_hist reduces the blocks' histograms (a tree sum) into ooc's table, then maps every block
with it; to_zarr writes oocrun's OME-Zarr layout and its pyramid, each task whole chunks of a
level; label numbers components as scipy.ndimage.label, the blocks' faces joined by a reduction.
"""

import functools
import math
import numbers
import operator
import os

import numpy as np

import dask
import dask.array as da
from dask.array.utils import meta_from_array
from dask.highlevelgraph import HighLevelGraph

from . import (_MODES, _conv_taps, _core, _gaussian_taps, _is_volume, _mode, _sequence, _spatial,
               _usage)
from ._pipeline import _OOC_TYPES, _pipeline_options, _pipeline_words, _sample_name
from . import _axes as _axes_of
from . import _dask_block, _dask_store, _dask_zarr
import ooc as _ooc  # the package's array functions, which each block runs

__all__ = [
    "pipeline", "gaussian_filter", "gaussian_filter1d", "uniform_filter", "uniform_filter1d",
    "correlate1d", "convolve1d", "correlate", "convolve", "median_filter", "percentile_filter",
    "rank_filter", "minimum_filter", "maximum_filter", "grey_opening", "grey_closing",
    "suggest_chunks", "reach", "equalize_hist", "to_zarr", "label",
]

_TYPES = ("uint8", "uint16", "int16", "uint32", "int32", "float32", "float64")
_CHUNK_BYTES = 128 << 20
_OVERHEAD = 0.1


# ---- threads and memory of a task ----

_host_threads = None  # tasks the workers of this host run at once (asked once per process)


def _worker_threads(w):
    state = getattr(w, "state", None)  # where newer distributed keeps it
    return int(getattr(state, "nthreads", None) or getattr(w, "nthreads", 1) or 1)


def _worker_concurrency(w):
    global _host_threads
    if _host_threads is None:
        mine = _worker_threads(w)
        try:
            from distributed import get_client
            workers = get_client().scheduler_info()["workers"].values()
            host = w.address.rsplit(":", 1)[0]
            _host_threads = sum(int(v.get("nthreads", 1)) for v in workers
                                if v.get("host") and host.endswith(v["host"])) or mine
        except Exception:  # no client reachable: this worker's threads alone
            _host_threads = mine
    return _host_threads


def _worker():
    try:
        from distributed import get_worker
        return get_worker()
    except (ImportError, ValueError):
        return None


def _task_options(threads, mem_limit, blocks):
    cpus = len(os.sched_getaffinity(0))
    w = _worker()
    if threads is None:
        if w is not None:
            running = _worker_concurrency(w)
        elif dask.config.get("scheduler", None) in ("sync", "synchronous", "single-threaded"):
            running = 1
        else:
            running = cpus
        threads = max(1, cpus // max(1, min(running, blocks)))
    o = {"threads": int(threads)}
    if mem_limit is None and w is not None:
        manager = getattr(w, "memory_manager", None)
        limit = getattr(manager, "memory_limit", None) if manager else getattr(w, "memory_limit",
                                                                               None)
        if limit:
            mem_limit = int(limit / _worker_threads(w) / 2)
    if mem_limit is not None:
        o["mem_limit"] = mem_limit
    return o


def _run_block(block, above=None, below=None, *, fn, args, kwargs, threads, mem_limit, blocks):
    """One block through ooc: `fn` is an ooc function of the array (ooc.gaussian_filter...);
    above and below, the neighbours' rows it reaches (or None at the array's edges), are read
    where they lie (the keyword halo_rows), not copied into one array with the block; a CuPy
    block is filtered on its GPU (_dask_block.py)."""
    kw = dict(kwargs)
    kw.update(_task_options(threads, mem_limit, blocks))
    return _dask_block.run_block(block, above, below, fn, args, kw)


def _rows_overlap(x, d, fn, dtype, name):
    """fn(block, above, below) on every block of x, above and below the last and first d
    entries along axis 0 of the blocks before and after it (None at the array's edges): what
    map_overlap with depth d along axis 0 alone and boundary 'none' computes, without its
    concatenation of the three into a new array per block."""
    dsk = {}
    for ix in np.ndindex(*x.numblocks):
        rest = tuple(ix[1:])
        above = (operator.getitem, (x.name, ix[0] - 1) + rest, (slice(-d, None),)) \
            if ix[0] > 0 else None
        below = (operator.getitem, (x.name, ix[0] + 1) + rest, (slice(0, d),)) \
            if ix[0] + 1 < x.numblocks[0] else None
        dsk[(name,) + tuple(ix)] = (fn, (x.name,) + tuple(ix), above, below)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, chunks=x.chunks, dtype=np.dtype(dtype),
                    meta=meta_from_array(x, x.ndim, np.dtype(dtype)))


# ---- checks and the overlap ----

def _check(x):
    if not isinstance(x, da.Array):
        raise _usage("ooc.dask takes a dask array, got %s: dask.array.from_array or "
                     "from_zarr make one" % type(x).__name__)
    if np.dtype(x.dtype).newbyteorder("=").name not in _TYPES:
        raise _usage("dtype %s is not supported: use %s" % (x.dtype, ", ".join(_TYPES)))
    if x.ndim not in (2, 3, 4) or any(n == 0 for n in x.shape):
        raise _usage("ooc.dask takes a non-empty 2-D (H, W), 3-D (H, W, C) or (Z, Y, X) or 4-D "
                     "(Z, Y, X, C) array, got shape %s" % (x.shape,))
    if any(math.isnan(n) for n in x.shape):
        raise _usage("the array's chunk sizes are unknown: call compute_chunk_sizes() first")


def _layout(x, volume):
    """(volume?, spatial axes): the array read as ooc reads it."""
    vol = _is_volume(x, volume)
    n = _spatial(x, vol)
    if x.ndim > n and not 1 <= x.shape[n] <= 4:
        raise _usage("the last axis holds %d channels: ooc takes 1 to 4" % x.shape[n])
    return vol, n


def _apply(x, depth, wrap, call, dtype, threads, mem_limit, name):
    """call(block) on every block of x overlapped by depth[axis] (0 for the channels), trimmed
    back: map_overlap with boundary 'none' (the array's edges left to ooc's border) or, where
    the border is wrap, 'periodic'."""
    chunks, depth = list(x.chunks), list(depth)
    for ax, d in enumerate(depth):
        if d <= 0 or len(chunks[ax]) == 1:
            depth[ax] = 0
            continue
        n = x.shape[ax]
        if 2 * d >= n:  # the overlap would span the axis: one chunk, which ooc borders itself
            chunks[ax], depth[ax] = (n,), 0
            continue
        merged = da.overlap.ensure_minimum_chunksize(d, chunks[ax])
        chunks[ax] = merged
        if len(merged) == 1:
            depth[ax] = 0
    n_spatial = len(depth)
    for ax in range(n_spatial, x.ndim):  # the channels: one chunk
        chunks[ax] = (x.shape[ax],)
    if tuple(chunks) != x.chunks:
        x = x.rechunk(tuple(chunks))
    blocks = int(np.prod(x.numblocks))
    fn = functools.partial(_run_block, fn=call[0], args=call[1], kwargs=call[2],
                           threads=threads, mem_limit=mem_limit, blocks=blocks)
    depth_map = {ax: (depth[ax] if ax < n_spatial else 0) for ax in range(x.ndim)}
    boundary = {ax: ("periodic" if wrap and depth_map[ax] > 0 else "none")
                for ax in range(x.ndim)}
    token = dask.base.tokenize(x, call[0].__name__, call[1], call[2], threads, mem_limit)
    if depth_map[0] > 0 and not wrap and not any(depth_map[ax] for ax in range(1, x.ndim)):
        # The usual blocks (whole rows, suggest_chunks's): the neighbours' rows without a copy.
        # Blocks of one plane would take the array functions' path for a volume of one plane
        # (its z taps folded into a 2-D filter), which halo_rows' planes are not: two at least.
        if min(x.chunks[0]) < 2:
            x = x.rechunk({0: da.overlap.ensure_minimum_chunksize(2, x.chunks[0])})
        return _rows_overlap(x, depth_map[0], fn, dtype, "ooc-%s-%s" % (name, token))
    return da.map_overlap(fn, x, depth=depth_map, boundary=boundary, trim=True,
                          dtype=np.dtype(dtype),
                          meta=meta_from_array(x, x.ndim, np.dtype(dtype)),
                          name="ooc-%s-%s" % (name, token))


def _probe(x, vol, n, fn, args, kwargs):
    """Runs fn on a few samples of x's dtype and layout: the arguments' errors now, not at
    compute(); returns the output dtype and the separable stage fn ran, if one (_dask_store)."""
    shape = tuple(min(s, 5) for s in x.shape[:n]) + tuple(x.shape[n:])
    out, call = _dask_store.record(fn, np.zeros(shape, x.dtype), args,
                                   dict(kwargs, volume=vol, threads=1))
    return out.dtype, call


def _is_wrap(mode):
    modes = [mode] if isinstance(mode, str) else list(mode)
    return any(_MODES.get(m) == "wrap" for m in modes if isinstance(m, str))


def _filter(x, fn, args, kwargs, reach_fn, mode, volume, threads, mem_limit):
    """A named filter: reach_fn(vol, n) gives the reach per spatial axis."""
    _check(x)
    vol, n = _layout(x, volume)
    kwargs = dict(kwargs, mode=mode)
    dtype, call = _probe(x, vol, n, fn, args, kwargs)
    depth = reach_fn(vol, n)
    kwargs["volume"] = vol
    y = _apply(x, depth, _is_wrap(mode), (fn, tuple(args), kwargs), dtype, threads, mem_limit,
               fn.__name__)
    store = _dask_store.source_of(x)
    run = _dask_store.separable_words(call) if store else None
    if run:  # to_zarr may run it as the CLI's parts (_dask_store.py)
        _dask_store.keep(y, store, run[0], run[1], threads, mem_limit, suggest_chunks)
    return y


# ---- the reach of the named filters (what ooc's own functions build) ----

def _per_axis(x, n, axes, values, name):
    """{axis: value} over the axes a filter acts on, refusing the channels' axis as ooc does
    (ooc's own message comes from _probe first)."""
    axes = _axes_of(axes, x.ndim)
    vals = _sequence(values, len(axes), name)
    return {ax: v for ax, v in zip(axes, vals) if ax < n}


def _depth(n, reach_by_axis):
    return [int(reach_by_axis.get(ax, 0)) for ax in range(n)]


def gaussian_filter(x, sigma, order=0, output=None, mode="reflect", cval=0.0, truncate=4.0, *,
                    radius=None, axes=None, volume=None, threads=None, mem_limit=None,
                    **options):
    """ooc.gaussian_filter (scipy.ndimage's) on a dask array."""
    options.setdefault("method", "direct")

    def reach(vol, n):
        ax = _axes_of(axes, x.ndim)
        s, o, r = (_sequence(v, len(ax), k) for v, k in ((sigma, "sigma"), (order, "order"),
                                                          (radius, "radius")))
        return _depth(n, {a: _gaussian_taps(si, oi, truncate, ri).size // 2
                          for a, si, oi, ri in zip(ax, s, o, r) if float(si) > 1e-15 and a < n})

    return _filter(x, _ooc.gaussian_filter, (sigma, order, output),
                   dict(cval=cval, truncate=truncate, radius=radius, axes=axes, **options),
                   reach, mode, volume, threads, mem_limit)


def gaussian_filter1d(x, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0,
                      truncate=4.0, *, radius=None, volume=None, threads=None, mem_limit=None,
                      **options):
    """ooc.gaussian_filter1d on a dask array."""
    options.setdefault("method", "direct")

    def reach(vol, n):
        return _depth(n, {axis % x.ndim: _gaussian_taps(sigma, order, truncate, radius).size // 2})

    return _filter(x, _ooc.gaussian_filter1d, (sigma, axis, order, output),
                   dict(cval=cval, truncate=truncate, radius=radius, **options), reach, mode,
                   volume, threads, mem_limit)


def uniform_filter(x, size=3, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None,
                   volume=None, threads=None, mem_limit=None, **options):
    """ooc.uniform_filter on a dask array."""
    options.setdefault("method", "direct")

    def reach(vol, n):
        ax = _axes_of(axes, x.ndim)
        s, o = _sequence(size, len(ax), "size"), _sequence(origin, len(ax), "origin")
        return _depth(n, {a: _conv_taps(np.ones(int(si)), oi).size // 2
                          for a, si, oi in zip(ax, s, o) if int(si) > 1 and a < n})

    return _filter(x, _ooc.uniform_filter, (size, output),
                   dict(cval=cval, origin=origin, axes=axes, **options), reach, mode, volume,
                   threads, mem_limit)


def uniform_filter1d(x, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
                     volume=None, threads=None, mem_limit=None, **options):
    """ooc.uniform_filter1d on a dask array."""
    options.setdefault("method", "direct")

    def reach(vol, n):
        return _depth(n, {axis % x.ndim: _conv_taps(np.ones(int(size)), origin).size // 2})

    return _filter(x, _ooc.uniform_filter1d, (size, axis, output),
                   dict(cval=cval, origin=origin, **options), reach, mode, volume, threads,
                   mem_limit)


def correlate1d(x, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
                volume=None, threads=None, mem_limit=None, **options):
    """ooc.correlate1d on a dask array."""
    options.setdefault("method", "direct")
    weights = np.asarray(weights, dtype=np.float64)

    def reach(vol, n):
        return _depth(n, {axis % x.ndim: _conv_taps(weights, origin).size // 2})

    return _filter(x, _ooc.correlate1d, (weights, axis, output),
                   dict(cval=cval, origin=origin, **options), reach, mode, volume, threads,
                   mem_limit)


def convolve1d(x, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
               volume=None, threads=None, mem_limit=None, **options):
    """ooc.convolve1d on a dask array."""
    options.setdefault("method", "direct")
    weights = np.asarray(weights, dtype=np.float64)
    o = -int(origin) - (0 if weights.size & 1 else 1)

    def reach(vol, n):
        return _depth(n, {axis % x.ndim: _conv_taps(weights, o).size // 2})

    return _filter(x, _ooc.convolve1d, (weights, axis, output),
                   dict(cval=cval, origin=origin, **options), reach, mode, volume, threads,
                   mem_limit)


def _kernel_reach(shape, origins):
    return {a: _conv_taps(np.ones(k), o).size // 2 for a, (k, o) in enumerate(zip(shape, origins))}


def correlate(x, weights, output=None, mode="reflect", cval=0.0, origin=0, *, volume=None,
              threads=None, mem_limit=None, **options):
    """ooc.correlate (2-D weights; a volume's 3-D ones) on a dask array."""
    options.setdefault("method", "direct")
    weights = np.asarray(weights, dtype=np.float64)

    def reach(vol, n):
        origins = _sequence(origin, weights.ndim, "origin")
        r = _kernel_reach(weights.shape, origins)
        return _depth(n, {a: v for a, v in r.items() if a < n})

    return _filter(x, _ooc.correlate, (weights, output),
                   dict(cval=cval, origin=origin, **options), reach, mode, volume, threads,
                   mem_limit)


def convolve(x, weights, output=None, mode="reflect", cval=0.0, origin=0, *, volume=None,
             threads=None, mem_limit=None, **options):
    """ooc.convolve's array form (scipy.ndimage.convolve) on a dask array."""
    options.setdefault("method", "direct")
    weights = np.asarray(weights, dtype=np.float64)

    def reach(vol, n):
        origins = [-int(o) - (0 if k & 1 else 1)
                   for k, o in zip(weights.shape, _sequence(origin, weights.ndim, "origin"))]
        r = _kernel_reach(weights.shape, origins)
        return _depth(n, {a: v for a, v in r.items() if a < n})

    return _filter(x, _ooc.convolve, (weights, output),
                   dict(cval=cval, origin=origin, **options), reach, mode, volume, threads,
                   mem_limit)


def _window_reach(x, n, size, footprint, axes, twice=False):
    if footprint is not None:
        sizes = np.asarray(footprint).shape
        ax = _axes_of(axes, x.ndim)
        per = dict(zip(ax, sizes))
    else:
        per = _per_axis(x, n, axes, size, "size")
    k = 2 if twice else 1
    return _depth(n, {a: k * (int(s) // 2) for a, s in per.items() if a < n})


def _rank(fn, x, args, size, footprint, output, mode, cval, origin, axes, volume, threads,
          mem_limit, twice=False, **extra):
    return _filter(x, fn, args, dict(size=size, footprint=footprint, output=output, cval=cval,
                                     origin=origin, axes=axes, **extra),
                   lambda vol, n: _window_reach(x, n, size, footprint, axes, twice), mode, volume,
                   threads, mem_limit)


def median_filter(x, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0,
                  *, axes=None, volume=None, threads=None, mem_limit=None):
    """ooc.median_filter on a dask array."""
    return _rank(_ooc.median_filter, x, (), size, footprint, output, mode, cval, origin, axes,
                 volume, threads, mem_limit)


def percentile_filter(x, percentile, size=None, footprint=None, output=None, mode="reflect",
                      cval=0.0, origin=0, *, axes=None, volume=None, threads=None,
                      mem_limit=None):
    """ooc.percentile_filter on a dask array."""
    return _rank(_ooc.percentile_filter, x, (percentile,), size, footprint, output, mode, cval,
                 origin, axes, volume, threads, mem_limit)


def rank_filter(x, rank, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                origin=0, *, axes=None, volume=None, threads=None, mem_limit=None):
    """ooc.rank_filter on a dask array."""
    return _rank(_ooc.rank_filter, x, (rank,), size, footprint, output, mode, cval, origin, axes,
                 volume, threads, mem_limit)


def minimum_filter(x, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                   origin=0, *, axes=None, volume=None, threads=None, mem_limit=None):
    """ooc.minimum_filter on a dask array."""
    return _rank(_ooc.minimum_filter, x, (), size, footprint, output, mode, cval, origin, axes,
                 volume, threads, mem_limit)


def maximum_filter(x, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                   origin=0, *, axes=None, volume=None, threads=None, mem_limit=None):
    """ooc.maximum_filter on a dask array."""
    return _rank(_ooc.maximum_filter, x, (), size, footprint, output, mode, cval, origin, axes,
                 volume, threads, mem_limit)


def grey_opening(x, size=None, footprint=None, structure=None, output=None, mode="reflect",
                 cval=0.0, origin=0, *, axes=None, volume=None, threads=None, mem_limit=None):
    """ooc.grey_opening (flat windows) on a dask array: an erosion then a dilation, twice the
    window's reach."""
    return _rank(_ooc.grey_opening, x, (), size, footprint, output, mode, cval, origin, axes,
                 volume, threads, mem_limit, twice=True, structure=structure)


def grey_closing(x, size=None, footprint=None, structure=None, output=None, mode="reflect",
                 cval=0.0, origin=0, *, axes=None, volume=None, threads=None, mem_limit=None):
    """ooc.grey_closing (flat windows) on a dask array."""
    return _rank(_ooc.grey_closing, x, (), size, footprint, output, mode, cval, origin, axes,
                 volume, threads, mem_limit, twice=True, structure=structure)


# ---- pipelines ----

def _geometry(shape, vol, n):
    """(depth, height, width, channels) as _core.pipeline_reach takes it (depth 0: an image)."""
    c = shape[n] if len(shape) > n else 1
    return [shape[0], shape[1], shape[2], c] if vol else [0, shape[0], shape[1], c]


def reach(shape, dtype, pipeline, *, mode="reflect", cval=0.0, out_type=None, precision="auto",
          volume=None, planes=False, voxel_size=None):
    """What `pipeline` reaches over an array of `shape` and `dtype` as ooc plans it on the whole
    array: {"depth": overlap per spatial axis ((planes,) rows, columns; None where the plan needs
    whole rows: an FFT), "passes", "out_type" (a NumPy dtype), "stages" (as built)}. Refuses a
    bad pipeline (ooc.UsageError)."""

    class _Shape:  # _is_volume reads ndim and shape only
        pass

    s = _Shape()
    s.shape, s.ndim = tuple(int(v) for v in shape), len(shape)
    vol = _is_volume(s, volume)
    n = _spatial(s, vol)
    o = _pipeline_options({}, mode, cval, out_type, precision, voxel_size)
    o.update(volume=vol, planes=bool(planes))
    r = _core.pipeline_reach(_geometry(s.shape, vol, n), _sample_name(dtype, "dtype"),
                             _pipeline_words(pipeline), o)
    last = r["passes"][-1]
    depth = [last["rows"], last["columns"]]
    if vol:
        depth = [last["planes"]] + depth
    return {"depth": depth, "passes": len(r["passes"]), "projects": last["projects"],
            "out_type": np.dtype(_OOC_TYPES[r["out_type"]]), "stages": r["stages"]}


def pipeline(x, pipeline, *, mode="reflect", cval=0.0, out_type=None, precision="auto",
             volume=None, planes=False, voxel_size=None, threads=None, mem_limit=None,
             **options):
    """ooc.pipeline(block, pipeline, ...) on every block, all stages fused in one task per block;
    equal to ooc.pipeline on the whole array. Pipelines with a reduction (equalize: see
    equalize_hist) or a projection along z are refused, as are plans that take the FFT on an
    array of several blocks (add method=direct to the stage)."""
    _check(x)
    vol, n = _layout(x, volume)
    r = reach(x.shape, x.dtype, pipeline, mode=mode, cval=cval, out_type=out_type,
              precision=precision, volume=vol, planes=planes, voxel_size=voxel_size)
    if r["passes"] > 1:
        raise _usage("ooc.dask.pipeline takes no reduction (equalize): its table is the whole "
                     "array's; use ooc.dask.equalize_hist, then the pipeline")
    if r["projects"]:
        raise _usage("ooc.dask.pipeline keeps each block's shape: a projection along z is not "
                     "one (reduce the dask array instead)")
    depth = r["depth"]
    if None in depth:
        several = any(len(c) > 1 for c in x.chunks[:n])
        if several:
            raise _usage("the plan takes the FFT (%s), whose tiles are fixed in the image: add "
                         "method=direct to the stage, or give one chunk"
                         % "; ".join(r["stages"]))
        depth = [0] * n
    _mode(mode)
    kwargs = dict(mode=mode, cval=cval, out_type=out_type, precision=precision, volume=vol,
                  planes=planes, voxel_size=voxel_size, **options)
    y = _apply(x, depth, _MODES[mode] == "wrap" if isinstance(mode, str) else False,
               (_ooc.pipeline, (pipeline,), kwargs), r["out_type"], threads, mem_limit,
               "pipeline")
    store = _dask_store.source_of(x)
    if store:  # to_zarr may run it as the CLI's parts (_dask_store.py)
        settings = dict(options, mode=mode, cval=cval, precision=precision,
                        voxel_size=voxel_size)
        _dask_store.keep(y, store, _pipeline_words(pipeline), settings, threads, mem_limit,
                         suggest_chunks)
    return y


# ---- blocks sized for ooc ----

def suggest_chunks(shape, dtype, pipeline=None, *, volume=None, chunk_bytes=_CHUNK_BYTES,
                   overhead=_OVERHEAD, **reach_options):
    """Chunks (a tuple for dask's rechunk) for ooc over an array of `shape` and `dtype`: blocks
    of about chunk_bytes (128 MiB), each axis's overlap at most `overhead` (10%) of its block
    (a block at least 2 x reach / overhead long), whole rows (the width whole) where a block of
    such rows fits, then whole planes. `pipeline` (or none: no reach) as ooc.dask.pipeline takes
    it. A task holds its block with the overlap, its output and ooc's bands: about 2.5 x
    chunk_bytes."""
    shape = tuple(int(v) for v in shape)
    if pipeline is not None:
        depth = reach(shape, dtype, pipeline, volume=volume, **reach_options)["depth"]
        vol = len(depth) == 3
    else:

        class _Shape:
            pass

        s = _Shape()
        s.shape, s.ndim = shape, len(shape)
        vol = _is_volume(s, volume)
        depth = [0] * (3 if vol else 2)
    n = len(depth)
    item = np.dtype(dtype).itemsize * (shape[n] if len(shape) > n else 1)
    least = [min(shape[a], max(1, math.ceil(2 * (d or 0) / overhead))) for a, d in
             enumerate(depth)]
    chunks = list(shape[:n])
    # From the outermost axis in: as long a block along it as fits with the inner axes whole;
    # where not even its shortest does, the next axis is cut too.
    for a in range(n):
        outer = int(np.prod(chunks[:a], dtype=np.int64))
        inner = item * int(np.prod(chunks[a + 1:], dtype=np.int64))
        fit = chunk_bytes // max(1, outer * inner)
        if fit >= least[a] or a == n - 1:
            chunks[a] = min(shape[a], max(least[a], fit))
            break
        chunks[a] = least[a]
    if None in depth:  # the FFT: one block
        chunks = list(shape[:n])
    return tuple(chunks) + tuple(shape[n:])



# ---- writing ----

def to_zarr(x, url, *, pyramid=False, levels=None, pyramid_z=False, chunk=512, chunk_z=1,
            nodata=None, compress=None, level=-1, voxel_size=None, volume=None, parts=None,
            compute=True):
    """x into a new OME-Zarr 0.4 store at `url` laid out as oocrun's Zarr output, sample for
    sample: (y, x), (c, y, x) for channels, (z, y, x) for a volume; square chunks of `chunk`
    pixels, chunk_z planes; compress as oocrun's --compress (blosc: lz4 with shuffle; none...).
    pyramid=True adds 2 x 2 mean levels until the smaller side is under 256 (levels=N: N of
    them; pyramid_z: a volume's levels halve z too), as --pyramid, --levels, --pyramid-z; nodata
    (a value, or nan) is the fill_value and the holes the levels' means leave out (images), as
    --nodata. Each task writes whole chunks of one level, level k + 1 made from level k's blocks.
    compute=False returns the dask task. An image filtered by ooc.dask straight from a Zarr
    store is written as the CLI's parts (see the module's help): `parts` of them (default: the
    filter's blocks, at most two per task the scheduler runs at once)."""
    _check(x)
    vol, n = _layout(x, volume)
    if x.name.startswith(_LABELS_NAME) and (pyramid or (levels is not None and levels != 0)):
        raise _usage("labels take no reduced-resolution levels (a 2 x 2 mean of labels names no "
                     "component): write ooc.dask.label's labels with pyramid=False, as ooclabel "
                     "refuses --pyramid")
    if parts is not None and (not isinstance(parts, numbers.Integral) or parts < 1):
        raise _usage("parts is a positive number of tasks, got %r" % (parts,))
    plan = _dask_store.writes(x, url, nodata, pyramid_z, vol)
    if plan is not None:  # x is ooc's filter of a Zarr store: the CLI's parts write it
        _dask_zarr.check_options(chunk, chunk_z, levels, compress, level)
        return _dask_store.to_zarr(plan, url, pyramid=pyramid, levels=levels, chunk=chunk,
                                   compress=compress, level=level, voxel_size=voxel_size,
                                   parts=parts, compute=compute)
    return _dask_zarr.to_zarr(x, url, vol, n, pyramid=pyramid, levels=levels,
                              pyramid_z=pyramid_z, chunk=chunk, chunk_z=chunk_z, nodata=nodata,
                              compress=compress, level=level, voxel_size=voxel_size,
                              compute=compute)


from ._dask_label import LABELS_NAME as _LABELS_NAME, label  # noqa: E402  (it runs _task_options)
from ._dask_equalize import equalize_hist  # noqa: E402  (it takes _check, _layout of this module)


def _stores_too(fn):
    """fn taking a Zarr store too (a path, a zarr Array or Group), for its array
    (_dask_store.open_store)."""
    @functools.wraps(fn)
    def call(x, *args, **kwargs):
        if _dask_store.is_store(x):
            x = _dask_store.open_store(x, suggest_chunks)
        return fn(x, *args, **kwargs)
    return call


for _name in ("pipeline", "gaussian_filter", "gaussian_filter1d", "uniform_filter",
              "uniform_filter1d", "correlate1d", "convolve1d", "correlate", "convolve",
              "median_filter", "percentile_filter", "rank_filter", "minimum_filter",
              "maximum_filter", "grey_opening", "grey_closing"):
    globals()[_name] = _stores_too(globals()[_name])
del _name
