"""Pipelines of oocrun's stages from Python: ooc.stages() (oocrun --list as data), ooc.run (files to
files, as oocrun, whole or in parts that ooc.finish completes) and ooc.pipeline (arrays, memmaps
and .npy paths through the same bounded pass), with the helpers that turn their keywords into
oocrun's words and options."""

import os

import numpy as np

from . import (_check_progress, _core, _device, _is_volume, _load, _mode, _nodata_text, _output,
               _output_options, _run_options, _shared, _type_name, _usage)


def stages():
    """oocrun --list as data: a list of {"name", "help", "reduction", "params"}, each parameter
    {"name", "kind", "default", "min", "max", "min_exclusive", "help"}. A default is the text a
    pipeline takes ("auto" where it is computed), None where the parameter is required; an
    unbounded min or max is None. A reduction (equalize) adds a pass over the image."""
    return _core.stage_declarations()


def _pipeline_words(pipeline):
    """A pipeline as oocrun takes it: one string, or its words ("gaussian sigma=2", "!", ...)."""
    if isinstance(pipeline, str):
        return [pipeline]
    try:
        words = list(pipeline)
    except TypeError:
        words = None
    if not words or not all(isinstance(w, str) for w in words):
        raise _usage("pipeline must be a string such as 'gaussian sigma=2 ! convert type=u8' (or "
                     "a list of its words), got %r" % (pipeline,))
    return words


# ooc's names of sample types, which a pipeline's convert takes too (NumPy reads "u8" as uint64).
_OOC_TYPES = {"u8": "uint8", "u16": "uint16", "i16": "int16", "u32": "uint32", "i32": "int32",
              "f32": "float32", "f64": "float64"}


def _sample_name(t, what):
    """NumPy's name of a sample type given as ooc's name or anything numpy.dtype takes; _core
    refuses the types it does not have (float16...) with the list of those it has."""
    if isinstance(t, str) and t in _OOC_TYPES:
        return _OOC_TYPES[t]
    try:
        return np.dtype(t).newbyteorder("=").name
    except TypeError:
        raise _usage("%s must be a dtype or a type name such as 'u8' or 'float32', got %r"
                     % (what, t)) from None


def _voxel_text(voxel_size):
    """voxel_size (z, y, x) or (y, x) micrometres as oocrun's --voxel-size text; _core checks it."""
    if voxel_size is None or isinstance(voxel_size, str):
        return voxel_size
    try:
        return ",".join(repr(float(v)) for v in voxel_size)
    except (TypeError, ValueError):
        raise _usage("voxel_size takes (z, y, x) or (y, x) micrometres, got %r"
                     % (voxel_size,)) from None


def _pipeline_options(options, mode, cval, out_type, precision, voxel_size=None, nodata=None):
    o = _run_options(options)
    o["nodata"] = _nodata_text(nodata)
    # cval and precision go to _core as given: it names them when they are of the wrong type.
    o.update(mode=_mode(mode), cval=cval, precision=precision,
             out_type=None if out_type is None else _sample_name(out_type, "out_type"),
             voxel_size=_voxel_text(voxel_size))
    return o


def run(input, output, pipeline, *, mode="reflect", cval=0.0, out_type=None, precision="auto",
        width=None, height=None, type=None, channels=None, in_format="auto", page=None,
        input_level=-1, seed=1, format="auto", tile=0, compress=None, level=-1, bigtiff="auto",
        chunk=0, pyramid=False, levels=None, zarr_version=2, shard=0, cog=False,
        progress=None, predictor="auto", depth=None, volume=False, pages=None, planes=False,
        voxel_size=None, nodata=None, part=None, rows=None, **options):
    """oocrun INPUT OUTPUT PIPELINE (see oocrun --help, ooc.stages()); returns --stats json.

    pipeline: stages separated by "!", e.g. "gaussian sigma=2 ! convert type=u8" (or a list of
    its words). mode (oocrun's --border; scipy's names too) and cval apply to every stage, each on
    its own input; intermediates are float32 (float64 with precision="f64"); the output has the
    input's type unless a last convert or out_type says otherwise. width/height/type/channels
    describe a raw input, depth, volume, page and pages a volume (see convolve_file); a volume's
    stages filter in 3-D, or each plane with planes=True (oocrun --planes). format, tile,
    compress, level, predictor and bigtiff describe the output file. A pipeline with equalize
    reads the input once more per equalize ("passes" in the stats). The output is written under a
    temporary name and renamed when complete; on any error nothing is left. voxel_size (z, y, x)
    micrometres (oocrun --voxel-size) stands for the input's, for sigma-um and OME outputs.
    nodata (oocrun --nodata): a value, numpy.nan or "none"; None takes the input's GDAL_NODATA.
    part=(i, n): part i of n (oocrun --part I/N), its rows (whole chunk rows of a Zarr output)
    into the output's temporary, shared with the other parts, which may run at once in other
    processes; ooc.finish(output) then checks them and puts the output in place. rows=(a, b):
    such a part of rows [a, b) (oocrun --rows A:B; a Zarr output's chunk rows).
    """
    o = _pipeline_options(options, mode, cval, out_type, precision, voxel_size, nodata)
    o.update(width=width, height=height, type=None if type is None else _type_name(type),
             channels=channels, in_format=in_format, page=page, input_level=input_level,
             seed=seed, format=format, tile=tile, compress=compress or "", level=level, bigtiff=bigtiff,
             predictor=predictor, depth=depth, volume=bool(volume), pages=pages,
             planes=bool(planes),
             **_output_options(chunk, pyramid, levels, zarr_version, shard, cog))
    for value, keys, what in ((part, ("part_index", "part_count"), "(i, n), part i of n parts "
                               "(0 <= i < n)"),
                              (rows, ("rows_begin", "rows_end"), "(a, b), rows a to b - 1 "
                               "(0 <= a < b <= height)")):
        if value is not None:
            try:
                o.update(zip(keys, (int(v) for v in value), strict=True))
            except (TypeError, ValueError):
                raise _usage("%s takes %s, got %r" % (keys[0].split("_")[0], what,
                                                      value)) from None
    return _core.run_file(os.fspath(input), os.fspath(output), _pipeline_words(pipeline), o,
                          _check_progress(progress))


def finish(output):
    """oocconv --finish OUTPUT: checks that the parts run with ooc.run(..., part=(i, n)) cover the
    output, from one input and the same options, and puts it in place; returns a summary line."""
    return _core.finish_output(os.fspath(output))


def pipeline(input, pipeline, output=None, *, mode="reflect", cval=0.0, out_type=None,
             precision="auto", volume=None, planes=False, progress=None, voxel_size=None,
             nodata=None, **options):
    """The stages of ooc.run over an array: 2-D (H, W), 3-D (H, W, C), or a volume (Z, Y, X)
    or (Z, Y, X, C) (see volume in the module's help), an ndarray, a memmap or a .npy path,
    streamed band by band as the other array functions are. A volume's stages filter in 3-D
    where they have a 3-D version (oocrun --list), or each plane in 2-D with planes=True (oocrun
    --planes); the others are refused (ooc.UsageError). Returns the output: `output` itself, or
    a new array of the pipeline's output type (the last convert's or equalize's, else the
    input's, unless out_type says) when output is None or a dtype. An output array's dtype is
    the pipeline's output type; one sharing the input's memory is handled as in the filters.
    voxel_size (z, y, x) or (y, x) micrometres: what gaussian sigma-um divides by. nodata (a
    value or numpy.nan; None: none): holes, as oocrun --nodata.
    """
    a = _load(input)
    if a.ndim == 1:
        raise _usage("a pipeline takes a 2-D (H, W), 3-D or 4-D array, got shape %s: give "
                     "a 1-D signal as one row, a[numpy.newaxis]" % (a.shape,))
    vol = _is_volume(a, volume)
    words = _pipeline_words(pipeline)
    o = _pipeline_options(options, mode, cval, out_type, precision, voxel_size, nodata)
    o.update(volume=vol, planes=bool(planes))
    if _device.is_device(a):  # filtered on its GPU, into a device array (_device.py)
        out = _device.pipeline_output(a, output, words, o)
        if o["out_type"] not in (None, out.dtype.name):
            raise _usage("output is %s, out_type %s: give one or the other"
                         % (out.dtype.name, o["out_type"]))
        o["out_type"] = out.dtype.name
        return _core.pipeline_array(a, out, words, o, None)[0]
    out = None
    if output is None or isinstance(output, np.ndarray):
        out = None if output is None else _output(output, a)
        # An output array's dtype decides, as in scipy.ndimage (_core swaps the samples of one
        # in the other byte order).
        given = None if out is None else out.dtype.newbyteorder("=").name
    else:
        given = _sample_name(output, "output")
    if given is not None:
        if o["out_type"] not in (None, given):
            raise _usage("output is %s, out_type %s: give one or the other"
                         % (given, o["out_type"]))
        o["out_type"] = given
    if out is not None:
        o["alias"] = _shared(a, out)
    result, _ = _core.pipeline_array(a, out, words, o, _check_progress(progress))
    return result
