"""Arrays in CUDA device memory (CuPy's, or any with __cuda_array_interface__) in ooc's array
functions: such an input is filtered on its GPU by the operation's CUDA kernels, where it lies,
into a device array of the same library (made here with cupy.empty), with no copy to or from the
host, as dask-image hands CuPy blocks to cupyx.scipy.ndimage. The run waits for the kernels
(they go to the stream the array names: CuPy's current one). A non-contiguous CuPy view is made
contiguous on the device first. Reductions (equalize, label) take NumPy arrays only."""

import numpy as np


def is_device(x):
    """Whether x is a device array (NumPy arrays never have __cuda_array_interface__)."""
    return not isinstance(x, np.ndarray) and hasattr(x, "__cuda_array_interface__")


def _cupy():
    try:
        import cupy
    except ImportError:  # another library's device array: its output must be given
        return None
    return cupy


def prepared(a):
    """The device input as the kernels read it: whole rows (a strided CuPy view made
    contiguous on its device)."""
    cp = _cupy()
    if cp is not None and isinstance(a, cp.ndarray) and not a.flags.c_contiguous:
        with a.device:
            return cp.ascontiguousarray(a)
    return a


def output(output, a, dtype=None):
    """The device array to write: a new CuPy array on a's device (of `dtype`, or output's if
    that is a dtype, else a's), or `output` itself (a device array of a's shape)."""
    from . import _usage
    if output is None or isinstance(output, (np.dtype, str, type)):
        cp = _cupy()
        if cp is None:
            raise _usage("the input is a device array that is not CuPy's: give a device array "
                         "of its shape as the output")
        t = np.dtype(dtype if dtype is not None else a.dtype if output is None else output)
        with cp.cuda.Device(_device_id(a)):
            return cp.empty(a.shape, t)
    if not is_device(output):
        raise _usage("the input is a device array, the output is not: give a device array "
                     "(cupy.empty) or None")
    if tuple(output.shape) != tuple(a.shape):
        raise _usage("output has shape %s, the input %s: give an output of the input's shape"
                     % (tuple(output.shape), tuple(a.shape)))
    return output


def _device_id(a):
    d = getattr(a, "device", None)
    return getattr(d, "id", 0) if d is not None else 0


def _bounds(x):
    i = x.__cuda_array_interface__
    item = np.dtype(i["typestr"]).itemsize
    shape, strides = i["shape"], i.get("strides")
    lo = hi = i["data"][0]
    if strides is None:
        hi += item * int(np.prod(shape))
        return lo, hi
    for n, s in zip(shape, strides):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    return lo, hi + item


def shared(a, out):
    """How `out` shares device memory with `a`, or None (one on the host, the other not: none)."""
    if not (is_device(a) and is_device(out)):
        return None
    (lo, hi), (lo2, hi2) = _bounds(a), _bounds(out)
    return "both use the same device addresses" if lo < hi2 and lo2 < hi else None


def pipeline_output(a, output, words, options):
    """A pipeline's device output: `output` as given, or a new CuPy array of the type the
    pipeline makes (its plan's, as ooc.dask.reach finds it) or the dtype given."""
    from . import _core, _spatial
    from ._pipeline import _OOC_TYPES
    if output is not None and not isinstance(output, (np.dtype, str, type)):
        return globals()["output"](output, a)
    vol = bool(options.get("volume"))
    n = _spatial(a, vol)
    c = a.shape[n] if a.ndim > n else 1
    geometry = [a.shape[0], a.shape[1], a.shape[2], c] if vol else [0, a.shape[0], a.shape[1], c]
    from ._pipeline import _sample_name
    t = _sample_name(output, "output") if output is not None else options.get("out_type")
    if t is None:
        r = _core.pipeline_reach(geometry, np.dtype(a.dtype).name, words, dict(options))
        t = _OOC_TYPES[r["out_type"]]
    return globals()["output"](None, a, t)
