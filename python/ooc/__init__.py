"""ooc: out-of-core filtering of images larger than memory, from Python.

Files to files, as the tools do (oocconv, ooceq), with the run's stats as a dict::

    stats = ooc.convolve("in.tif", "out.tif", radius=16, border="reflect",
                         mem_limit="4G", progress=lambda done, total: print(done, total))
    ooc.equalize("scan.tif", "eq.tif")

NumPy arrays with scipy.ndimage's semantics and names (correlate1d, convolve1d,
gaussian_filter1d, gaussian_filter, uniform_filter1d, uniform_filter, correlate, convolve,
median_filter, percentile_filter, rank_filter, minimum_filter, maximum_filter, grey_opening,
grey_closing)::

    big = numpy.load("big.npy", mmap_mode="r")          # or numpy.memmap, or a .npy path
    out = numpy.lib.format.open_memmap("out.npy", "w+", big.dtype, big.shape)
    ooc.gaussian_filter(big, 4.0, output=out, mem_limit="2G")

An array (a memmap too, or a strided view of one such as big[:, ::2]) is streamed band by band
through the same bounded pipeline as a file, so memory stays within mem_limit whatever its size.
An output that shares the input's memory or file (output=input, or two mappings of one file) gets
a copy of the input first, counted in mem_limit; where that does not fit, ooc.Error says how much
memory it would need. Arrays are 1-D, 2-D (H, W), 3-D (H, W, C) with C <= 4 interleaved channels
(filtered along axes 0 and 1 only), or volumes: 3-D (Z, Y, X) and 4-D (Z, Y, X, C), filtered in
3-D as scipy.ndimage filters them. The keyword volume of the array functions says how to read a
3-D array: None (the default) reads one whose last axis has 1 to 4 entries as (H, W, C) and any
other as (Z, Y, X); True and False decide. dtypes uint8, uint16, int16, uint32, int32, float32,
float64. Sums are in float64 as scipy's; unlike scipy, integer results are
rounded to nearest and saturated, not truncated. Every call releases the GIL while it runs.

Pipelines of oocrun's stages in one pass (a pass more for each equalize), on files and on arrays;
ooc.stages() lists the stages and their parameters::

    ooc.run("in.tif", "out.tif", "gaussian sigma=2 ! unsharp sigma=1 amount=0.7 ! convert type=u8")
    view = ooc.pipeline(big, "subtract-background sigma=60 ! scale mul=4 ! convert type=u8")

Errors are ooc.Error (a RuntimeError) carrying ooc's message, with .kind ("usage", "input", "io"
or "device") and .exit_code (the tools' exit code for it); usage errors (arguments refused) are
ooc.UsageError, an ooc.Error that is a ValueError too. scipy's modes map to ooc's borders:
reflect = grid-mirror (d c b a | a b c d), mirror (d c b | a b c d), nearest, wrap = grid-wrap,
constant = grid-constant (cval).

Extra keywords of every function: device ("auto", "cpu" or "cuda"), devices ("all" or "0,1"),
mem_limit (bytes or "512M", "4G"), threads, band_rows, slots, tile_cols, and progress, a callable
progress(done_rows, total_rows) called between bands; an exception raised there (or Ctrl-C) stops
the run and propagates, and a file output's temporary is removed. The array functions also take
halo_rows=(above, below): arrays (or None) of the input's layout read as the image's rows just
before and after the input's along axis 0, never written (ooc.dask's blocks get their neighbours'
rows so, without a copy into one array); the output is the input's shape.

CuPy arrays (device memory) are filtered on their GPU by the CUDA kernels, into CuPy arrays,
with no copy to or from the host (ooc/_device.py); equalize and label take NumPy arrays only.
"""

import numbers
import os
import tempfile
import threading

import numpy as np

from . import _core, _device
from ._aliasing import _shared
from ._core import Error, UsageError

__all__ = [
    "Error", "UsageError", "convolve", "equalize", "correlate1d", "convolve1d",
    "gaussian_filter1d", "gaussian_filter", "uniform_filter1d", "uniform_filter", "correlate",
    "cuda_device_count", "run", "finish", "pipeline", "stages", "median_filter",
    "percentile_filter", "rank_filter", "minimum_filter", "maximum_filter", "grey_opening",
    "grey_closing", "label", "regionprops_table",
]

cuda_device_count = _core.cuda_device_count

# scipy.ndimage's modes (filters) -> ooc's border rules.
_MODES = {
    "reflect": "reflect", "grid-mirror": "reflect", "mirror": "mirror", "nearest": "nearest",
    "wrap": "wrap", "grid-wrap": "wrap", "constant": "constant", "grid-constant": "constant",
}
_RUN_KEYS = ("device", "devices", "mem_limit", "threads", "band_rows", "slots", "tile_cols")


def _usage(message):
    e = UsageError(message)
    e.kind, e.exit_code = "usage", 2
    return e


def _is_path(x):
    return isinstance(x, (str, os.PathLike))


def _nodata_text(nodata):
    """nodata= as oocrun's --nodata: None the input's GDAL_NODATA tag (an array has none), "none",
    numpy.nan or a number: the samples that are holes (docs/design.md, "Nodata")."""
    if nodata is None:
        return ""
    if isinstance(nodata, str):
        return nodata
    v = float(nodata)
    return "nan" if v != v else repr(v)


def _run_options(options):
    unknown = set(options) - set(_RUN_KEYS) - {"precision", "method", "nodata", "halo_rows"}
    if unknown:
        raise TypeError("unexpected keyword argument(s): " + ", ".join(sorted(unknown)))
    o = dict(options)
    if "nodata" in o:
        o["nodata"] = _nodata_text(o["nodata"])
    if isinstance(o.get("devices"), (list, tuple)):
        o["devices"] = ",".join(str(int(d)) for d in o["devices"])
    m = o.get("mem_limit")
    # Whole floats (2e9) and NumPy integers are byte counts too; _core checks the range and says
    # what is valid for anything else.
    if isinstance(m, numbers.Real) and not isinstance(m, (bool, numbers.Integral)):
        if float(m).is_integer():
            o["mem_limit"] = int(m)
    elif isinstance(m, numbers.Integral) and not isinstance(m, bool):
        o["mem_limit"] = int(m)
    return o


def _check_progress(progress):
    if progress is not None and not callable(progress):
        raise _usage("progress must be a callable progress(done_rows, total_rows) or None")
    return progress


def _type_name(t):
    return t if isinstance(t, str) else str(np.dtype(t))


# ---- files to files ----

def _taps(taps):
    """Taps as the user wrote them (text), or as a list of floats: values, never text."""
    if taps is None or isinstance(taps, str):
        return taps
    return [float(t) for t in np.asarray(taps, dtype=np.float64).ravel()]


def _output_options(chunk, pyramid, levels, zarr_version, shard, cog):
    """Zarr and pyramid keywords as oocconv's --chunk, --pyramid, --levels, --zarr-version,
    --shard and --cog."""
    return dict(chunk=int(chunk), pyramid_levels=int(levels) if levels is not None else
                (-1 if pyramid or cog else 0), zarr_version=int(zarr_version), shard=int(shard),
                cog=bool(cog))


def convolve_file(input, output, *, radius=None, sigma=None, filter="gaussian", taps=None,
                  row_taps=None, col_taps=None, taps_file=None, kernel=None, border="reflect",
                  border_value=0.0, out_type=None, precision="auto", width=None, height=None,
                  type=None, channels=None, in_format="auto", page=None, input_level=-1, seed=1,
                  format="auto", tile=0, compress=None, level=-1, bigtiff="auto", chunk=0,
                  pyramid=False, levels=None, zarr_version=2, shard=0, cog=False, progress=None,
                  predictor="auto", depth=None, volume=False, pages=None, planes=False,
                  **options):
    """oocconv INPUT OUTPUT with the same options (see oocconv --help); returns --stats json.

    radius / sigma / filter ("gaussian" or "box") make a separable filter; taps, row_taps,
    col_taps (sequences or "a,b,c") or taps_file give explicit taps (scipy.ndimage.convolve1d);
    kernel is a 2-D kernel: a 2-D array, a file, or a built-in ("box:N", "gaussian2d:S",
    "laplace", "sobel-x", "sobel-y"), with scipy.ndimage.convolve's semantics; method="auto",
    "direct" or "fft" (overlap-save tiles) picks how it is applied (oocconv --method). border takes
    ooc's and scipy's mode names. width/height/type/channels describe a raw input, depth a raw
    volume's planes, volume a 3-D .npy as (Z, Y, X), page a TIFF's page (None: a stack of pages
    alike is a volume, pages="A:B" some of its planes), input_level an OME-Zarr input's level
    (input may be a .zarr store); planes=True filters a volume plane by plane. format, tile,
    compress (None: the format's default), level, predictor, bigtiff, chunk, pyramid, levels,
    zarr_version, shard and cog the output file, as oocconv's options of those names. The output
    is written under a temporary name and renamed when complete; on any error (or an exception
    from progress) nothing is left.
    """
    o = _run_options(options)
    o.update(radius=radius, sigma=sigma, filter=filter, taps=_taps(taps),
             row_taps=_taps(row_taps), col_taps=_taps(col_taps),
             taps_file=None if taps_file is None else os.fspath(taps_file),
             border=_MODES.get(border, border), border_value=float(border_value),
             out_type=None if out_type is None else _type_name(out_type), precision=precision,
             width=width, height=height, type=None if type is None else _type_name(type),
             channels=channels, in_format=in_format, page=page, input_level=input_level,
             seed=seed, format=format, tile=tile, compress=compress or "", level=level, bigtiff=bigtiff,
             predictor=predictor, depth=depth, volume=bool(volume), pages=pages,
             planes=bool(planes),
             **_output_options(chunk, pyramid, levels, zarr_version, shard, cog))
    if isinstance(kernel, (str, os.PathLike)):
        o["kernel"] = os.fspath(kernel)
    elif kernel is not None:
        o["kernel_array"] = np.asarray(kernel, dtype=np.float64)
    return _core.convolve_file(os.fspath(input), os.fspath(output), o, _check_progress(progress))


def equalize_file(input, output, *, width=None, height=None, type=None, channels=None,
                  in_format="auto", page=None, input_level=-1, seed=1, format="auto", tile=0,
                  compress=None, level=-1, bigtiff="auto", chunk=0, pyramid=False, levels=None,
                  zarr_version=2, shard=0, cog=False, progress=None, predictor="auto",
                  depth=None, volume=False, pages=None, **options):
    """ooceq INPUT OUTPUT: histogram equalization of u8/u16 (cv2.equalizeHist per channel);
    returns --stats json (with "histogram" and "passes"); the input options as convolve_file's."""
    o = _run_options(options)
    o.update(width=width, height=height, type=None if type is None else _type_name(type),
             channels=channels, in_format=in_format, page=page, input_level=input_level,
             seed=seed, format=format, tile=tile, compress=compress or "", level=level, bigtiff=bigtiff,
             predictor=predictor, depth=depth, volume=bool(volume), pages=pages,
             **_output_options(chunk, pyramid, levels, zarr_version, shard, cog))
    return _core.equalize_file(os.fspath(input), os.fspath(output), o, _check_progress(progress))


# ---- NumPy arrays ----

def _load(input):
    """The array behind `input` (an ndarray, a memmap or a .npy path), as it is: never a copy,
    since the image may be larger than memory. _core gathers strided or byte-swapped rows band by
    band."""
    if _is_path(input):
        input = np.load(os.fspath(input), mmap_mode="r")
    # A CuPy array (device memory) stays where it is: its GPU filters it (_device.py).
    a = _device.prepared(input) if _device.is_device(input) else np.asarray(input)
    if a.ndim not in (1, 2, 3, 4) or 0 in a.shape:
        raise _usage("input must be a non-empty 1-D, 2-D (H, W), 3-D (H, W, C) or (Z, Y, X) or "
                     "4-D (Z, Y, X, C) array, got shape " + str(a.shape))
    return a


def _is_volume(a, volume):
    """Whether `a` is a volume: 4-D always; 3-D by the keyword volume, or where it is None, when
    its last axis has other than 1 to 4 entries (which (H, W, C) takes)."""
    if a.ndim == 4:
        if volume is False:
            raise _usage("a 4-D array is a (Z, Y, X, C) volume: volume=False takes none")
        return True
    if a.ndim == 3:
        return not 1 <= a.shape[2] <= 4 if volume is None else bool(volume)
    if volume:
        raise _usage("volume=True takes a 3-D (Z, Y, X) or 4-D (Z, Y, X, C) array, got shape %s"
                     % (a.shape,))
    return False


def _spatial(a, vol):
    """How many of a's first axes are spatial (the rest, at most one, holds the channels)."""
    return 3 if vol else min(a.ndim, 2)


def _shape_name(a, vol):
    return ("(Z, Y, X, C)" if vol else "(H, W, C)") if a.ndim > _spatial(a, vol) else ""


def _output(output, a):
    """The array to write (and return): a new one, one of a given dtype, or `output` itself."""
    if _device.is_device(a):
        return _device.output(output, a)
    if output is None:
        return np.empty(a.shape, a.dtype)
    if isinstance(output, (np.dtype, str, type)):
        return np.empty(a.shape, np.dtype(output))
    if not isinstance(output, np.ndarray):
        raise _usage("output must be an array, a dtype or None")
    if output.shape != a.shape:
        raise _usage("output has shape %s, the input %s: give an output of the input's shape"
                     % (output.shape, a.shape))
    if not output.flags.writeable:
        raise _usage("output is read-only: give a writeable array")
    return output


def _array_options(a, out, options):
    o = _run_options(options)
    o["alias"] = _shared(a, out)
    return o


def _axis(axis, a, vol):
    ndim, n = a.ndim, _spatial(a, vol)
    if not -ndim <= axis < ndim:
        raise _usage("axis %d is out of range for a %d-D array" % (axis, ndim))
    axis %= ndim
    if axis >= n:
        raise _usage("axis %d runs across the channels of a %s array: ooc filters along axes %s"
                     % (axis, _shape_name(a, vol), "0, 1 and 2" if vol else "0 and 1"))
    return axis


def _mode(mode, used=None):
    """ooc's border for `mode` (a name, or one per axis): all of them must be scipy's names, and
    the axes that filter (`used`, a list of the modes given for them) must share one border. The
    messages echo `mode` as the user gave it."""
    modes = [mode] if isinstance(mode, str) else mode
    try:
        modes = list(modes)
        bad = [m for m in modes if not isinstance(m, str) or m not in _MODES]
    except TypeError:
        modes, bad = [], [mode]
    if bad or not modes:
        raise _usage("mode must be one of %s (or one per axis), got %r"
                     % (", ".join(_MODES), mode)) from None
    mapped = {_MODES[m] for m in (modes if used is None else used)}
    if len(mapped) != 1:
        raise _usage("ooc takes one border for every axis that filters, got mode=%r: give one "
                     "mode" % (mode,))
    return mapped.pop()


def _conv_taps(weights, origin):
    """1-D correlation weights and origin (scipy.ndimage.correlate1d) -> taps of odd count in
    convolution order, zero-padded so that the centre tap is the output sample."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise _usage("weights must be a non-empty 1-D sequence")
    n = w.size
    origin = int(origin)
    if not -(n // 2) <= origin <= n - 1 - n // 2:
        raise _usage("invalid origin %d for %d weights" % (origin, n))
    offsets = np.arange(n) - n // 2 - origin
    r = int(max(abs(offsets[0]), abs(offsets[-1])))
    c = np.zeros(2 * r + 1)
    c[offsets + r] = w
    return c[::-1].copy()


# Where a thread asks (ooc.dask, _dask_store.py), each _run_separable call's taps and settings are
# appended to its list `calls`: the stage a named filter amounts to, for the CLI's words.
_separable_record = threading.local()


def _run_separable(input, output, taps_by_axis, mode, cval, progress, options, used=None,
                   volume=None):
    """taps_by_axis: {axis: convolution-order taps} over the spatial axes of the image (0 and 1;
    a volume's 0, 1 and 2); used: the modes of the axes that filter (see _mode)."""
    a = _load(input)
    vol = _is_volume(a, volume)
    out = _output(output, a)
    src, dst = a, out
    if a.ndim == 1:  # a 1-D signal: one row (a view, whatever the stride)
        src, dst = a[np.newaxis], out[np.newaxis]
        taps_by_axis = {1: taps_by_axis[0]} if 0 in taps_by_axis else {}
    if not vol:  # an image's axes as a volume's of one plane
        taps_by_axis = {ax + 1: t for ax, t in taps_by_axis.items()}
    plane, col, row = (taps_by_axis.get(ax, np.ones(1)) for ax in (0, 1, 2))
    o = _array_options(a, out, options)
    o["volume"] = vol
    border = _mode(mode, used)
    calls = getattr(_separable_record, "calls", None)
    if calls is not None:  # ooc.dask's store path asks what a named filter runs
        calls.append(dict(volume=vol, row=row, col=col, plane=plane, mode=border,
                          cval=float(cval), options=dict(o)))
    if vol and a.shape[0] == 1 and plane.size > 1:
        return _one_plane(src, dst, row, col, plane, border, float(cval), o, progress)
    _core.filter_array(src, dst, row, col, plane, border, float(cval), o,
                       _check_progress(progress))
    return out


def _one_plane(src, dst, row, col, plane, border, cval, o, progress):
    """A volume of one plane is an image to the library, which has no z to filter along: the z
    taps see that plane alone, as scipy's modes extend an axis of one sample (the sample itself,
    or cval outside it), so they scale it (and add cval's share), a scale stage before the 2-D
    pass."""
    centre = float(plane[plane.size // 2])
    mul, add = (centre, cval * (float(plane.sum()) - centre)) if border == "constant" else \
        (float(plane.sum()), 0.0)
    text = ",".join(repr(float(t)) for t in np.asarray(row).ravel()), \
        ",".join(repr(float(t)) for t in np.asarray(col).ravel())
    words = ["scale mul=%r add=%r ! separable row=%s col=%s method=%s"
             % (mul, add, text[0], text[1], o.pop("method", None) or "auto")]
    o.update(mode=border, cval=cval, out_type=dst.dtype.newbyteorder("=").name,
             precision=o.get("precision") or "f64")
    _core.pipeline_array(src, dst, words, o, _check_progress(progress))
    return dst


def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
                volume=None, progress=None, **options):
    """scipy.ndimage.correlate1d (a volume's axis: 0 z, 1 y, 2 x)."""
    a = _load(input)
    ax = _axis(axis, a, _is_volume(a, volume))
    return _run_separable(a, output, {ax: _conv_taps(weights, origin)}, mode, cval, progress,
                          options, volume=volume)


def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
               volume=None, progress=None, **options):
    """scipy.ndimage.convolve1d."""
    w = np.asarray(weights, dtype=np.float64)[::-1]
    origin = -int(origin)
    if not w.size & 1:
        origin -= 1
    return correlate1d(input, w, axis, output, mode, cval, origin, volume=volume,
                       progress=progress, **options)


def _sequence(value, n, name):
    if isinstance(value, (str, numbers.Number)) or value is None:
        return [value] * n
    value = list(value)
    if len(value) != n:
        raise _usage("%s needs one value per axis (%d), got %d" % (name, n, len(value)))
    return value


def _axes(axes, ndim):
    if axes is None:
        return list(range(ndim))
    axes = [int(x) for x in (axes if not isinstance(axes, numbers.Integral) else [axes])]
    for x in axes:
        if not -ndim <= x < ndim:
            raise _usage("axis %d is out of range for a %d-D array" % (x, ndim))
    axes = [x % ndim for x in axes]
    if len(set(axes)) != len(axes):
        raise _usage("axes must be unique")
    return axes


def _gaussian_kernel1d(sigma, order, radius):
    """scipy.ndimage's _gaussian_kernel1d: the correlation weights of gaussian_filter1d are
    this reversed."""
    if order < 0:
        raise _usage("order must be non-negative")
    exponent_range = np.arange(order + 1)
    sigma2 = sigma * sigma
    x = np.arange(-radius, radius + 1)
    phi_x = np.exp(-0.5 / sigma2 * x ** 2)
    phi_x = phi_x / phi_x.sum()
    if order == 0:
        return phi_x
    q = np.zeros(order + 1)
    q[0] = 1
    D = np.diag(exponent_range[1:], 1)
    P = np.diag(np.ones(order) / -sigma2, -1)
    Q_deriv = D + P
    for _ in range(order):
        q = Q_deriv.dot(q)
    q = (x[:, None] ** exponent_range).dot(q)
    return q * phi_x


def _gaussian_taps(sigma, order, truncate, radius):
    sigma = float(sigma)
    r = int(float(truncate) * sigma + 0.5) if radius is None else int(radius)
    if r < 0:
        raise _usage("radius must be a nonnegative integer")
    return _conv_taps(_gaussian_kernel1d(sigma, int(order), r)[::-1], 0)


def _filter_axes(a, vol, axes, per_axis, build, name):
    """{axis: taps} for the axes that filter (build returns None for the identity); an (H, W, C)
    or (Z, Y, X, C) array must leave its channels alone."""
    taps = {}
    n = _spatial(a, vol)
    for ax, params in zip(axes, per_axis):
        t = build(*params)
        if t is None:
            continue
        if ax >= n:
            raise _usage("%s would filter across the channels (axis %d) of a %s array: give "
                         "axes=%s, or 0 for axis %d" % (name, ax, _shape_name(a, vol),
                                                        tuple(range(n)), ax))
        taps[ax] = t
    return taps


def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0,
                      truncate=4.0, *, radius=None, volume=None, progress=None, **options):
    """scipy.ndimage.gaussian_filter1d (a volume's axis: 0 z, 1 y, 2 x)."""
    a = _load(input)
    ax = _axis(axis, a, _is_volume(a, volume))
    return _run_separable(a, output, {ax: _gaussian_taps(sigma, order, truncate, radius)}, mode,
                          cval, progress, options, volume=volume)


def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0, truncate=4.0,
                    *, radius=None, axes=None, volume=None, progress=None, **options):
    """scipy.ndimage.gaussian_filter (axes with sigma 0 are left alone). On a volume, sigma is
    one number or one per axis (z, y, x), each axis with its own taps, as scipy's."""
    a = _load(input)
    vol = _is_volume(a, volume)
    axes = _axes(axes, a.ndim)
    n = len(axes)
    per_axis = zip(_sequence(sigma, n, "sigma"), _sequence(order, n, "order"),
                   _sequence(radius, n, "radius"))

    def build(s, o, r):
        return _gaussian_taps(s, o, truncate, r) if float(s) > 1e-15 else None

    modes = _sequence(mode, n, "mode")
    taps = _filter_axes(a, vol, axes, per_axis, build, "sigma")
    used = [m for ax, m in zip(axes, modes) if ax in taps] or modes[:1]
    return _run_separable(a, output, taps, mode, cval, progress, options, used, volume)


def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
                     volume=None, progress=None, **options):
    """scipy.ndimage.uniform_filter1d (the mean over `size` samples)."""
    if int(size) < 1:
        raise _usage("incorrect filter size")
    a = _load(input)
    taps = _conv_taps(np.full(int(size), 1.0 / int(size)), origin)
    return _run_separable(a, output, {_axis(axis, a, _is_volume(a, volume)): taps}, mode, cval,
                          progress, options, volume=volume)


def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None,
                   volume=None, progress=None, **options):
    """scipy.ndimage.uniform_filter (axes of size 1 are left alone; even sizes as scipy's)."""
    a = _load(input)
    vol = _is_volume(a, volume)
    axes = _axes(axes, a.ndim)
    n = len(axes)
    per_axis = zip(_sequence(size, n, "size"), _sequence(origin, n, "origin"))

    def build(s, o):
        s = int(s)
        if s < 1:
            raise _usage("incorrect filter size")
        return _conv_taps(np.full(s, 1.0 / s), o) if s > 1 else None

    modes = _sequence(mode, n, "mode")
    taps = _filter_axes(a, vol, axes, per_axis, build, "size")
    used = [m for ax, m in zip(axes, modes) if ax in taps] or modes[:1]
    return _run_separable(a, output, taps, mode, cval, progress, options, used, volume)


def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, volume=None,
              progress=None, **options):
    """scipy.ndimage.correlate with 2-D weights (non-separable; (K, L, 1) for an (H, W, C)
    array, each channel on its own); method="auto", "direct" or "fft" among the options picks
    how the weights are applied (auto: FFT tiles for large kernels). A volume takes 3-D weights,
    (D, K, L) (or (D, K, L, 1)): the sum over their planes of the 2-D correlations of the
    matching planes; weights of one plane filter each plane in 2-D."""
    a = _load(input)
    vol = _is_volume(a, volume)
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != a.ndim:
        raise _usage("weights have %d dimensions, the input %d: give one per input axis"
                     % (w.ndim, a.ndim))
    if a.ndim == 1:
        return correlate1d(a, w, -1, output, mode, cval, origin, progress=progress, **options)
    origins = _sequence(origin, a.ndim, "origin")
    if vol:
        if a.ndim == 4:
            if w.shape[3] != 1:
                raise _usage("weights of a (Z, Y, X, C) volume must be (D, K, L, 1): ooc "
                             "filters each channel on its own")
            w = w[..., 0]
        if w.shape[0] != 1 or int(origins[0]) != 0:
            return _correlate3d(a, w, origins[:3], output, mode, cval, progress, options)
        w, origins = w[0], origins[1:]
    if w.ndim == 3:
        if w.shape[2] != 1:
            raise _usage("weights of an %s array must be %s: ooc filters each channel on its "
                         "own" % (_shape_name(a, vol), "(1, K, L, 1)" if vol else "(K, L, 1)"))
        w = w[:, :, 0]
    origins = origins[:2]
    if w.size == 0:
        raise _usage("weights must not be empty")
    # Each axis padded as _conv_taps pads one: the centre is the output sample.
    rows = _conv_taps(np.ones(w.shape[0]), origins[0])
    cols = _conv_taps(np.ones(w.shape[1]), origins[1])
    c = np.zeros((rows.size, cols.size))
    r0, r1 = rows.size // 2, cols.size // 2
    off0 = np.arange(w.shape[0]) - w.shape[0] // 2 - int(origins[0]) + r0
    off1 = np.arange(w.shape[1]) - w.shape[1] // 2 - int(origins[1]) + r1
    c[np.ix_(off0, off1)] = w
    kernel = c[::-1, ::-1].copy()  # convolution order
    out = _output(output, a)
    o = _array_options(a, out, options)
    o.update(volume=vol, planes=vol)
    _core.conv2d_array(a, out, kernel, _mode(mode), float(cval), o, _check_progress(progress))
    return out


def _correlate3d(a, w, origins, output, mode, cval, progress, options):
    """A volume's correlation with 3-D weights: the pipeline's convolve stage with the weights
    flipped (convolution order), each axis zero-padded so that its centre is the output sample,
    through a .npy file."""
    if w.size == 0:
        raise _usage("weights must not be empty")
    if a.shape[0] == 1:
        # One plane (an image to the library): every plane of the window is that plane, except
        # under constant, where only the window's own plane is.
        centre = w.shape[0] // 2 + int(origins[0])
        if not 0 <= centre < w.shape[0]:
            raise _usage("invalid origin %d for %d planes" % (int(origins[0]), w.shape[0]))
        fold = w[centre] if _mode(mode) == "constant" else w.sum(axis=0)
        fold = fold[np.newaxis]
        return correlate(a, fold[..., np.newaxis] if a.ndim == 4 else fold, output, mode, cval,
                         [0] + list(origins[1:]) + [0] * (a.ndim - 3), volume=True,
                         progress=progress, **options)
    axes = [_conv_taps(np.ones(n), o) for n, o in zip(w.shape, origins)]
    c = np.zeros(tuple(t.size for t in axes))
    offs = [np.arange(n) - n // 2 - int(o) + t.size // 2 for n, o, t in zip(w.shape, origins, axes)]
    c[np.ix_(*offs)] = w
    kernel = c[::-1, ::-1, ::-1].copy()  # convolution order
    out = _output(output, a)
    o = _run_options(options)
    method = o.pop("method", "auto")
    o.update(mode=_mode(mode), cval=float(cval), volume=True, planes=False,
             out_type=_sample_name(out.dtype, "output"), alias=_shared(a, out))
    o.setdefault("precision", "auto")
    with tempfile.TemporaryDirectory(prefix="ooc-kernel-") as tmp:
        path = os.path.join(tmp, "kernel.npy")
        np.save(path, kernel)
        _core.pipeline_array(a, out, ["convolve kernel=%s method=%s" % (path, method)], o,
                             _check_progress(progress))
    return out


def _convolve_array(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *,
                    progress=None, **options):
    w = np.asarray(weights, dtype=np.float64)
    origins = _sequence(origin, w.ndim, "origin")
    w = w[(slice(None, None, -1),) * w.ndim]
    origins = [-int(o) - (0 if w.shape[i] & 1 else 1) for i, o in enumerate(origins)]
    return correlate(input, w, output, mode, cval, origins, progress=progress, **options)


def convolve(input, *args, **kwargs):
    """Two forms, told apart by the second argument:

    convolve("in.tif", "out.tif", radius=16, ...) -> dict: oocconv on files (see convolve_file).
    convolve(array, weights, output=None, mode="reflect", cval=0.0, origin=0) -> array:
    scipy.ndimage.convolve with 2-D weights (input: ndarray, memmap or .npy path).
    """
    second = args[0] if args else kwargs.get("output", kwargs.get("weights"))
    if _is_path(second) and "weights" not in kwargs:
        if args:
            return convolve_file(input, *args, **kwargs)
        return convolve_file(input, kwargs.pop("output"), **kwargs)
    return _convolve_array(input, *args, **kwargs)


def equalize(input, output=None, *, progress=None, **kwargs):
    """Histogram equalization of uint8/uint16 images (cv2.equalizeHist, each channel on its own).

    equalize("in.tif", "out.tif", ...) -> dict: ooceq on files (see equalize_file).
    equalize(array, output=None, volume=None) -> array (input: ndarray, memmap or .npy path); a
    volume's histogram is that of all its planes.
    """
    if _is_path(input) and _is_path(output):
        return equalize_file(input, output, progress=progress, **kwargs)
    a = _load(input)
    vol = _is_volume(a, kwargs.pop("volume", None))
    out = _output(output, a)
    src, dst = (a[np.newaxis], out[np.newaxis]) if a.ndim == 1 else (a, out)
    o = _array_options(a, out, kwargs)
    o["volume"] = vol
    _core.equalize_array(src, dst, o, _check_progress(progress))
    return out


# After the helpers they share.
from ._pipeline import _sample_name, finish, pipeline, run, stages  # noqa: E402
from ._rank import (grey_closing, grey_opening, maximum_filter, median_filter,  # noqa: E402
                    minimum_filter, percentile_filter, rank_filter)
from ._labels import label, regionprops_table  # noqa: E402
