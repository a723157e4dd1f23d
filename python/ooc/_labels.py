"""ooc.label: connected components of an array, a memmap or a .npy path as scipy.ndimage.label
returns them, (labels, count), computed by oocrun's `label` stage over the array band by band (a
pass labelling and joining the bands, then one writing), so its memory is the output's plus the
band ring's, whatever the input's size. ooc.regionprops_table: the same stage's regions table
(area, bbox, centroid and intensity statistics, measured in its first pass) as a dict of arrays,
as skimage.measure.regionprops_table returns it."""

import os
import tempfile

import numpy as np

from . import _check_progress, _core, _is_path, _load, _output, _shared, _usage, pipeline, run
from ._pipeline import _pipeline_options

# Connectivity by scipy's structure rank (generate_binary_structure(ndim, rank)).
_BY_RANK = {2: {1: 4, 2: 8}, 3: {1: 6, 2: 18, 3: 26}}


def _connectivity(structure, connectivity, ndim):
    if structure is not None and connectivity is not None:
        raise _usage("give structure or connectivity, not both")
    if structure is not None:
        s = np.asarray(structure).astype(bool)
        for rank, conn in _BY_RANK[ndim].items():
            if s.shape == (3,) * ndim and np.array_equal(s, _generate(ndim, rank)):
                return conn
        raise _usage("structure must be scipy.ndimage.generate_binary_structure(%d, r) for r in "
                     "%s (the %s-connected neighbourhoods); other structures are not supported"
                     % (ndim, sorted(_BY_RANK[ndim]), "/".join(map(str, _BY_RANK[ndim].values()))))
    if connectivity is None:
        return _BY_RANK[ndim][1]
    c = int(connectivity)
    if c in _BY_RANK[ndim]:  # skimage's spelling: 1 .. ndim
        return _BY_RANK[ndim][c]
    if c in _BY_RANK[ndim].values():
        return c
    raise _usage("connectivity must be %s on a %d-D array (or skimage's 1 to %d), got %r"
                 % (" or ".join(map(str, _BY_RANK[ndim].values())), ndim, ndim, connectivity))


def _generate(ndim, rank):
    grid = np.indices((3,) * ndim) - 1
    return np.abs(grid).sum(axis=0) <= rank


def label(input, structure=None, output=None, *, connectivity=None, volume=None, progress=None,
          label_type="auto", **options):
    """Labels the connected components of the non-zero samples of `input` (a 2-D (H, W) array,
    or a volume (Z, Y, X): 3-D arrays are volumes unless volume=False), numbered 1, 2, ... in
    raster order of each component's first sample, exactly as scipy.ndimage.label. Returns
    (labels, count) like scipy: labels are int32 (the bytes of ooc's u32 labels below 2^31), int64
    where they are u64 (label_type "u64", or "auto" on an array large enough to hold more than
    2^32 - 1 components; "u32" refuses a count that does not fit), or written into `output` (an
    int32 or uint32 array, or int64 or uint64 for u64 labels, of the input's shape). For files,
    ooc.run(IN, OUT, "label connectivity=C") or ooclabel.

    structure: scipy's generate_binary_structure(ndim, r); or connectivity: 4 or 8 on an image,
    6, 18 or 26 on a volume (skimage's 1 to ndim too). Default: 4 or 6, as scipy's.
    options: ooc.run's keywords (mem_limit, threads, band_rows, ...).
    """
    a = _load(input)
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    if a.ndim not in (2, 3):
        raise _usage("label takes a 2-D (H, W) or 3-D (Z, Y, X) array, got shape %s"
                     % (a.shape,))
    vol = a.ndim == 3
    if vol and volume is False:
        raise _usage("label takes one channel: a 3-D array is a (Z, Y, X) volume")
    conn = _connectivity(structure, connectivity, 3 if vol else 2)
    if label_type not in ("auto", "u32", "u64"):
        raise _usage("label_type must be 'auto', 'u32' or 'u64', got %r" % (label_type,))
    if output is not None and (not isinstance(output, np.ndarray) or output.dtype not in (
            np.int32, np.uint32, np.int64, np.uint64)):
        raise _usage("output must be None or an int32, uint32, int64 or uint64 array of the "
                     "input's shape")
    wide = output is not None and output.dtype.itemsize == 8
    if wide and label_type == "u32":
        raise _usage("label_type='u32' into a 64-bit output: give an int32 or uint32 output, or "
                     "label_type='u64'")
    words = "label connectivity=%d label-type=%s" % (conn, "u64" if wide else label_type)
    # ooc.pipeline's call, made here for the stats it drops: the count is the job's result (its
    # "components"), so nothing scans the labels for it.
    out = None if output is None else _output(output, a)
    if wide:  # the u64 labels' own type, into an int64 array as its bytes
        out = out.view(np.uint64)
    o = _pipeline_options(options, "reflect", 0.0,
                          None if out is None or wide else out.dtype.newbyteorder("=").name,
                          "auto")
    o.update(volume=vol, planes=False)
    if out is not None:
        o["alias"] = _shared(a, out)
    out, stats = _core.pipeline_array(a, out, [words], o, _check_progress(progress))
    count = int(stats["components"])
    if output is None:
        out = out.view(np.int64 if out.dtype.itemsize == 8 else np.int32)
    elif wide:
        out = output
    return out, count


# The table's columns by skimage's property names ("bbox" stands for bbox-0, bbox-1, ...).
_PROPERTIES = ("label", "area", "bbox", "centroid", "intensity_sum", "intensity_mean",
               "intensity_min", "intensity_max", "intensity_std")


def regionprops_table(input, intensity_image=None, properties=None, *, structure=None,
                      connectivity=None, min_size=0, volume=None, progress=None, **options):
    """Labels the non-zero samples of `input` as ooc.label does (a 2-D array or a (Z, Y, X)
    volume, an ndarray, a memmap or a .npy path) and returns each label's measurements as
    skimage.measure.regionprops_table(labels, intensity_image) does: a dict of arrays, one entry
    per label in label order, keyed label, area, bbox-0 ..., centroid-0 ... and, with
    intensity_image (an array, memmap or .npy path of input's shape), intensity_mean,
    intensity_min and intensity_max (skimage's names and values), intensity_sum and
    intensity_std (NumPy's std, ddof 0). Measured in the label stage's first pass, band by
    band: no label image is kept (a path input is labelled into no output at all).

    properties: skimage's names to keep (default: every column above); min_size: components
    of fewer samples are dropped and the rest numbered on (remove_small_objects, then label);
    structure/connectivity as ooc.label; options: ooc.run's keywords (mem_limit, threads, ...).
    """
    a = _load(input)
    if a.ndim not in (2, 3):
        raise _usage("regionprops_table takes a 2-D (H, W) or 3-D (Z, Y, X) array, got shape %s"
                     % (a.shape,))
    vol = a.ndim == 3
    if vol and volume is False:
        raise _usage("regionprops_table takes one channel: a 3-D array is a (Z, Y, X) volume")
    conn = _connectivity(structure, connectivity, 3 if vol else 2)
    keep = _PROPERTIES if properties is None else tuple(properties)
    unknown = [p for p in keep if p not in _PROPERTIES]
    if unknown:
        raise _usage("properties %s are not measured: give some of %s"
                     % (unknown, ", ".join(_PROPERTIES)))
    if intensity_image is None and any(p.startswith("intensity") for p in keep):
        if properties is not None:
            raise _usage("intensity properties need an intensity_image")
        keep = tuple(p for p in keep if not p.startswith("intensity"))
    with tempfile.TemporaryDirectory(prefix="ooc_regions_") as tmp:
        table = os.path.join(tmp, "regions.csv")
        words = "label connectivity=%d min-size=%d regions=%s" % (conn, int(min_size), table)
        if intensity_image is not None:
            if _is_path(intensity_image):
                ipath = os.fspath(intensity_image)
            else:
                inten = np.asarray(intensity_image)
                if inten.shape != a.shape:
                    raise _usage("intensity_image has shape %s, input %s: give one of the "
                                 "input's shape" % (inten.shape, a.shape))
                ipath = os.path.join(tmp, "intensity.npy")
                np.save(ipath, inten)
            words += " intensity=" + ipath
        if _is_path(input):
            run(input, "null:", words, volume=vol, progress=progress, **options)
        else:
            if a.dtype == np.bool_:
                a = a.view(np.uint8)
            pipeline(a, words, volume=vol, progress=progress, **options)
        return _read_table(table, keep)


def _read_table(path, keep):
    with open(path) as f:
        header = f.readline().strip().split(",")
        body = f.read()
    body = body.strip()
    # One C parse of every number (np.loadtxt's per-line work is several times slower).
    values = np.fromstring(body.replace("\n", ","), sep=",") if body else np.zeros(0)
    values = values.reshape(-1, len(header))
    out = {}
    for j, name in enumerate(header):
        base = name.split("-")[0]
        if base not in keep:
            continue
        col = values[:, j]
        if base in ("label", "area", "bbox"):
            col = col.astype(np.int64)
        out[name] = col
    return out
