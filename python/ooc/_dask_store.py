"""ooc.dask's store path: a filter of a dask array read straight from a Zarr store (da.from_zarr,
maybe rechunked, or a path given to ooc.dask's functions) and written by ooc.dask.to_zarr runs as
the CLI's parts do. Each task is ooc.run(input, output, words, rows=(a, b)): it reads its rows
with their halo through ooc's Zarr reader and writes its whole chunk rows (and its pyramid
levels' rows) through ooc's writer, both multi-threaded; a last task checks the parts and puts the
store in place (ooc.finish). The graph carries the parts' stats, never samples, and the bytes are
the CLI's, which are ooc.pipeline's on the whole array.

Taken where the run is the CLI's exactly: an image (2-D array) of a local v2 store, C order,
native samples, no filters, a codec ooc reads; a pipeline, or a named filter that is one separable
stage (what the filter's own run records: its taps, border and sums); a to_zarr of that result to
a path, the nodata of the filter the store's (or none). Anything else takes the general path
(dask reads and writes the arrays), with the same bytes."""

import math
import os
import shutil
import sys

import numpy as np

import dask
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

_CODECS = {"blosc", "zstd", "zlib", "gzip"}
_PLAN = "_ooc_store_plan"  # a result's attribute: the _Plan the CLI would run to make it


class _Plan:
    def __init__(self, input, words, options, shape, rows, threads, mem_limit):
        self.input, self.words, self.options = input, list(words), dict(options)
        self.shape, self.rows, self.threads, self.mem_limit = shape, rows, threads, mem_limit


def _zarr_array_of(x):
    """The zarr.Array a dask array reads unchanged (its graph: from_zarr, then rechunks only),
    or None."""
    names = list(x.dask.layers)
    originals = [n for n in names if n.startswith("original-from-zarr-")]
    if len(originals) != 1 or not all(n.startswith(("original-from-zarr-", "from-zarr-",
                                                     "rechunk-")) for n in names):
        return None
    try:
        import zarr
    except ImportError:
        return None
    z = x.dask.layers[originals[0]].get(originals[0])
    return z if isinstance(z, zarr.Array) else None


def _local_dir(store):
    """A local store's folder, or None (memory, remote or zip stores)."""
    path = getattr(store, "path", None)
    fs = getattr(store, "fs", None)
    if not isinstance(path, str):
        return None
    if fs is not None and "file" not in np.atleast_1d(getattr(fs, "protocol", "")):
        return None
    return path if os.path.isdir(path) else None


def source_of(x):
    """The folder of the Zarr array x reads unchanged, where ooc's reader gives its samples
    exactly and x is an image (2-D); else None."""
    z = _zarr_array_of(x)
    if z is None or x.ndim != 2 or tuple(z.shape) != tuple(x.shape):
        return None
    if getattr(z, "_version", 2) != 2 or z.order != "C" or z.filters:
        return None
    if not z.dtype.isnative or z.dtype != x.dtype:
        return None
    if z.compressor is not None and getattr(z.compressor, "codec_id", None) not in _CODECS:
        return None
    root = _local_dir(z.store)
    if root is None:
        return None
    path = os.path.join(root, z.path) if z.path else root
    return path if os.path.isfile(os.path.join(path, ".zarray")) else None


def is_store(x):
    """Whether ooc.dask's functions take x as a store: a path, a zarr Array or Group."""
    if isinstance(x, (str, os.PathLike)):
        return True
    zarr = sys.modules.get("zarr")  # x can only be one if zarr is loaded
    return zarr is not None and isinstance(x, (zarr.Array, zarr.hierarchy.Group))


def open_store(url, suggest_chunks):
    """A store given to ooc.dask's functions (a path, a zarr Array or Group): its array (an
    OME-Zarr group's level 0) as a dask array, whole rows of about suggest_chunks' size on the
    store's chunk rows."""
    import zarr
    import dask.array as da
    z = zarr.open(os.fspath(url), mode="r") if isinstance(url, (str, os.PathLike)) else url
    if isinstance(z, zarr.hierarchy.Group):
        if "0" not in z:
            from . import _usage
            raise _usage("%s is a Zarr group without an array 0 (an OME-Zarr level 0): give "
                         "the array's path" % (url,))
        z = z["0"]
    chunks = tuple(z.chunks)
    if z.ndim == 2:
        rows = suggest_chunks(z.shape, z.dtype)[0]
        chunks = (max(z.chunks[0], rows // z.chunks[0] * z.chunks[0]), z.shape[1])
    return da.from_zarr(z, chunks=chunks)


def record(fn, probe, args, kwargs):
    """Runs fn(probe, *args, **kwargs) (ooc.dask's probe) and returns (its output, the separable
    stage it ran: a dict of _run_separable's, or None when it ran something else or several)."""
    from . import _separable_record
    _separable_record.calls = []
    try:
        out = fn(probe, *args, **kwargs)
        calls = _separable_record.calls
    finally:
        _separable_record.calls = None
    return out, (calls[0] if len(calls) == 1 else None)


def _taps_text(t):
    return ",".join(repr(float(v)) for v in np.asarray(t).ravel())


def separable_words(call):
    """The pipeline a named filter's recorded run is (an image's separable pass, convolution
    taps), with its settings for ooc.run; None for a volume."""
    if call is None or call["volume"]:
        return None
    o = call["options"]
    words = "separable row=%s col=%s method=%s" % (_taps_text(call["row"]),
                                                   _taps_text(call["col"]),
                                                   o.get("method") or "auto")
    # Unless the caller says, the array filters sum in float64 (scipy's); the stage's "auto"
    # would sum an f32 image in float32.
    settings = dict(mode=call["mode"], cval=call["cval"], precision=o.get("precision") or "f64")
    for k in ("nodata", "device", "devices", "band_rows", "slots", "tile_cols"):
        if o.get(k) not in (None, ""):
            settings[k] = o[k]
    return [words], settings


def keep(y, input, words, settings, threads, mem_limit, suggest):
    """Records y as the CLI's run of `words` over the store at `input`: parts of y's blocks
    where they are whole rows, else of suggest(shape, dtype)'s."""
    settings = dict(settings)
    if settings.get("nodata") in (None, ""):
        settings["nodata"] = "none"  # an array has no GDAL_NODATA: nor does this run
    settings["out_type"] = np.dtype(y.dtype).name
    rows = max(y.chunks[0]) if len(y.chunks[1]) == 1 else suggest(y.shape, y.dtype)[0]
    # On the array itself (dask arrays keep a __dict__), so that nothing outlives it; an array
    # made from it (a slice, a rechunk) has none: the general path.
    setattr(y, _PLAN, _Plan(input, words, settings, tuple(y.shape), int(rows), threads,
                            mem_limit))


def plan_of(x):
    return getattr(x, _PLAN, None)


def _nodata_value(text):
    if text in (None, "", "none"):
        return None
    return float("nan") if str(text).lower() == "nan" else float(text)


def _same_nodata(a, b):
    if a is None or b is None:
        return a is None and b is None
    return (math.isnan(a) and math.isnan(b)) or a == b


def writes(x, url, nodata, pyramid_z, volume):
    """The plan to run where to_zarr(x, url, ...) can be the CLI's parts, else None."""
    p = plan_of(x)
    if p is None or volume or pyramid_z or not isinstance(url, (str, os.PathLike)):
        return None
    wanted = None if nodata is None else float(nodata)
    return p if _same_nodata(_nodata_value(p.options.get("nodata")), wanted) else None


def _check_output(url):
    """An output path that holds something else than a Zarr store is refused (zarr's mode "w"
    would empty any folder)."""
    from . import _usage
    marks = (".zgroup", ".zarray", "zarr.json")
    if os.path.lexists(url) and (not os.path.isdir(url) or os.path.islink(url) or not any(
            os.path.exists(os.path.join(url, m)) for m in marks)):
        raise _usage("%s exists and is not a Zarr store: remove it or name another output" % url)


def _prepare(url):
    """As zarr's mode "w" does for the general path: an earlier store at url goes, and so do the
    temporaries of an earlier run in parts that did not finish."""
    from . import _core
    _check_output(url)
    if os.path.lexists(url):
        shutil.rmtree(url)
    partial = _core.partial_path(url)
    folder, base = os.path.split(partial)
    for name in os.listdir(folder or "."):
        if name.startswith(base):
            p = os.path.join(folder, name)
            (shutil.rmtree if os.path.isdir(p) and not os.path.islink(p) else os.remove)(p)


def _part(_ready, input, url, words, options, rows, n, threads, mem_limit):
    from . import run
    from .dask import _task_options
    o = dict(options)
    o.update(_task_options(threads, mem_limit, n))
    stats = run(input, url, words, rows=None if n == 1 else rows, **o)
    return {"rows": rows, "seconds": stats["seconds"]["total"]}


def _finish(url, parts):
    from . import finish
    if len(parts) > 1:  # one part is the whole run: its output is in place
        finish(url)
    return parts


def _running_tasks():
    """Tasks the scheduler runs at once: a distributed client's workers' threads, else one on the
    synchronous scheduler, else the cpus."""
    try:
        from distributed import get_client
        return max(1, sum(get_client().nthreads().values()))
    except (ImportError, ValueError):
        pass
    if dask.config.get("scheduler", None) in ("sync", "synchronous", "single-threaded"):
        return 1
    return len(os.sched_getaffinity(0))


def to_zarr(p, url, *, pyramid, levels, chunk, compress, level, voxel_size, parts, compute):
    """ooc.run's parts of plan p into a store at url (see ooc.dask.to_zarr), then ooc.finish."""
    url = os.fspath(url)
    _check_output(url)
    o = dict(p.options)
    o.update(chunk=int(chunk), pyramid=bool(pyramid), levels=levels, compress=compress,
             level=int(level))
    if voxel_size is not None:
        o["voxel_size"] = voxel_size
    # The parts, cut on the store's chunk rows (as the CLI's --rows): `parts`, or the plan's
    # blocks, at most two for each task the scheduler runs at once. ooc streams a part of any
    # size under its memory limit, and each part pays its start: a chunk row above and below
    # decoded for the halo, its buffers allocated and touched afresh (about 0.5 GiB for a
    # 32768-wide f32 image in 512-row chunks, which the workers' allocator returns to the system
    # between tasks). Fewer parts cost less; two a task keep the workers evenly busy.
    height, chunk = p.shape[0], int(chunk)
    if parts is None:
        parts = min(math.ceil(height / max(1, p.rows)), 2 * _running_tasks())
    step = max(1, math.ceil(height / max(1, int(parts)) / chunk)) * chunk
    cuts = list(range(0, height, step)) + [height]
    n = len(cuts) - 1
    tok = dask.base.tokenize(p.input, p.words, o, url, n)
    prepare, part, done = ("ooc-zarr-prepare-" + tok, "ooc-zarr-part-" + tok,
                           "ooc-zarr-finish-" + tok)
    dsk = {prepare: (_prepare, url)}
    for i in range(n):
        dsk[(part, i)] = (_part, prepare, p.input, url, p.words, o, (cuts[i], cuts[i + 1]), n,
                          p.threads, p.mem_limit)
    dsk[done] = (_finish, url, [(part, i) for i in range(n)])
    task = Delayed(done, HighLevelGraph.from_collections(done, dsk, dependencies=()))
    if compute:
        task.compute()
        return None
    return task
