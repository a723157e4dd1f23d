"""scipy.ndimage's rank filters and flat grey morphology over arrays (median_filter,
percentile_filter, rank_filter, minimum_filter, maximum_filter, grey_opening, grey_closing), each
one of oocrun's stages run over the array as ooc.pipeline runs it: exact in the input's type, on
images and on volumes, which they filter in 3-D (a box: size per axis z, y, x; scipy's window
placement for even sizes too; or a 3-D footprint of odd sides)."""

import os
import tempfile

import numpy as np

from . import (_axes, _check_progress, _core, _is_volume, _load, _mode, _output, _run_options,
               _sequence, _shape_name, _shared, _spatial, _usage)
from ._pipeline import _sample_name


def _sizes(a, vol, size, footprint, axes):
    """The window's extent along every axis of `a` (1 where it does not filter) and, for a
    footprint that is not a box, the footprint over the spatial axes; refuses windows across
    the channels."""
    nd = a.ndim
    axes = _axes(axes, nd)
    shape = None
    if footprint is not None:
        fp = np.asarray(footprint).astype(bool)
        if fp.ndim != len(axes) or fp.size == 0:
            raise _usage("footprint has %d dimensions, the input %d (axes %s): give one per axis"
                         % (fp.ndim, nd, tuple(axes)))
        sizes = list(fp.shape)
        shape = None if fp.all() else fp
    elif size is None:
        raise _usage("no footprint or filter size provided")
    else:
        sizes = [int(s) for s in _sequence(size, len(axes), "size")]
    full = [1] * nd
    for ax, s in zip(axes, sizes):
        if s < 1:
            raise _usage("invalid size %d: sizes are at least 1" % s)
        full[ax] = s
    n = _spatial(a, vol)
    if any(s != 1 for s in full[n:]):
        raise _usage("the window would run across the channels (axis %d) of a %s array: give "
                     "size 1 there, or axes=%s" % (n, _shape_name(a, vol), tuple(range(n))))
    if shape is not None:  # over every axis in order (1 where it does not filter), then spatial
        shape = np.transpose(shape, np.argsort(axes)).reshape(full)
        shape = shape[(slice(None),) * n + (0,) * (nd - n)]
    return full[:n], shape


def _rank_stage(input, stage, extra, size, footprint, output, mode, cval, origin, axes, volume,
                progress, options):
    a = _load(input)
    vol = _is_volume(a, volume)
    if any(int(o) != 0 for o in _sequence(origin, a.ndim, "origin")):
        raise _usage("%s takes origin 0 only (the window centred as scipy centres it)" % stage)
    sizes, shape = _sizes(a, vol, size, footprint, axes)
    out = _output(output, a)
    src, dst = (a[np.newaxis], out[np.newaxis]) if a.ndim == 1 else (a, out)
    if a.ndim == 1:
        sizes = [1] + sizes
        shape = None if shape is None else shape[np.newaxis]
    planes = False
    border = _mode(mode)
    if vol:
        z, sizes = sizes[0], sizes[1:]
        if a.shape[0] == 1 and z > 1 and shape is None:
            stage, extra, z = _one_plane(stage, extra, z, sizes, border)
        if shape is not None:
            if z == 1:  # one plane: each plane in 2-D
                shape, planes = shape[0], True
            elif a.shape[0] == 1:
                raise _usage("a volume of one plane takes a footprint of one plane, (1, K, L), "
                             "or a box (size=(z, y, x))")
            elif any(n % 2 == 0 for n in shape.shape):
                raise _usage("a volume's 3-D footprint takes odd sides (its centre the origin), "
                             "got %s" % (shape.shape,))
    o = _run_options(options)
    o.update(mode=border, cval=cval, precision="auto", volume=vol, planes=planes,
             out_type=_sample_name(out.dtype, "output"), alias=_shared(a, out))
    words = "%s size=%dx%d" % (stage, sizes[0], sizes[1])
    if vol and not planes:
        words += " size-z=%d" % z
    with tempfile.TemporaryDirectory(prefix="ooc-footprint-") as tmp:
        if shape is not None:
            path = os.path.join(tmp, "footprint.npy")
            np.save(path, shape.astype(np.uint8))
            words = "%s footprint=%s" % (stage, path)
        _core.pipeline_array(src, dst, [words + extra], o, _check_progress(progress))
    return out


def _one_plane(stage, extra, z, sizes, border):
    """A volume of one plane is an image to the library, whose windows have no z: scipy's modes
    other than constant repeat the plane z times in the window, which keeps its minimum, maximum
    and median; a rank (and so a percentile) r of the z x H x W window is rank r // z of H x W.
    Returns the stage, its extra words and the window along z for the library."""
    if border == "constant":
        raise _usage("a volume of one plane under mode='constant' takes size 1 along z (the "
                     "window would hold cval besides the plane's samples): give size=(1, H, W)")
    n = z * sizes[0] * sizes[1]
    if stage == "percentile":
        q = float(extra.split("=")[1])
        q = q + 100.0 if q < 0 else q
        r = n - 1 if q == 100.0 else int(float(n) * q / 100.0)
    elif stage == "rank":
        r = int(extra.split("=")[1])
        r = r + n if r < 0 else r
        if not 0 <= r < n:
            raise _usage("rank %s is out of the window's %d samples" % (extra.split("=")[1], n))
    else:
        return stage, extra, 1
    return "rank", " index=%d" % (r // z), 1


_ARGS = """ size (one per axis, or one for all; even sizes too) or footprint (a box of ones on
    a volume, or one plane, (1, K, L), filtering each plane; a 2-D footprint of odd sides on an
    image), output (an array or a dtype: other dtypes take ooc's rounding and saturation), mode
    (one for every axis), cval, origin 0, axes, volume (see the module's help); keywords of every
    array function."""


def median_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                  origin=0, *, axes=None, volume=None, progress=None, **options):
    return _rank_stage(input, "median", "", size, footprint, output, mode, cval, origin, axes,
                       volume, progress, options)


def percentile_filter(input, percentile, size=None, footprint=None, output=None, mode="reflect",
                      cval=0.0, origin=0, *, axes=None, volume=None, progress=None, **options):
    return _rank_stage(input, "percentile", " q=%r" % float(percentile), size, footprint, output,
                       mode, cval, origin, axes, volume, progress, options)


def rank_filter(input, rank, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                origin=0, *, axes=None, volume=None, progress=None, **options):
    return _rank_stage(input, "rank", " index=%d" % int(rank), size, footprint, output, mode,
                       cval, origin, axes, volume, progress, options)


def minimum_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                   origin=0, *, axes=None, volume=None, progress=None, **options):
    return _rank_stage(input, "minimum", "", size, footprint, output, mode, cval, origin, axes,
                       volume, progress, options)


def maximum_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                   origin=0, *, axes=None, volume=None, progress=None, **options):
    return _rank_stage(input, "maximum", "", size, footprint, output, mode, cval, origin, axes,
                       volume, progress, options)


def _grey(stage, input, size, footprint, structure, output, mode, cval, origin, axes, volume,
          progress, options):
    if structure is not None:
        raise _usage("grey_%s takes flat windows only (size or footprint): ooc has no "
                     "structure" % stage)
    return _rank_stage(input, stage, "", size, footprint, output, mode, cval, origin, axes,
                       volume, progress, options)


def grey_opening(input, size=None, footprint=None, structure=None, output=None, mode="reflect",
                 cval=0.0, origin=0, *, axes=None, volume=None, progress=None, **options):
    return _grey("opening", input, size, footprint, structure, output, mode, cval, origin, axes,
                 volume, progress, options)


def grey_closing(input, size=None, footprint=None, structure=None, output=None, mode="reflect",
                 cval=0.0, origin=0, *, axes=None, volume=None, progress=None, **options):
    return _grey("closing", input, size, footprint, structure, output, mode, cval, origin, axes,
                 volume, progress, options)


for _f, _what in ((median_filter, "median_filter"), (percentile_filter, "percentile_filter"),
                  (rank_filter, "rank_filter"), (minimum_filter, "minimum_filter"),
                  (maximum_filter, "maximum_filter"), (grey_opening, "grey_opening"),
                  (grey_closing, "grey_closing")):
    _f.__doc__ = "scipy.ndimage.%s, exact in the input's type:%s" % (_what, _ARGS)
