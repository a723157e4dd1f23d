#!/usr/bin/env python3
"""What a TIFF output of oocconv / ooceq says about itself must be true of it.

1. Layouts: inputs written by tifffile (separate and interleaved planes, 1, 3 and 4 channels, u8
   u16 f32, strips and tiles, with and without Deflate; tifffile's {"shape": [...]} description)
   and by libvips (`vips tiffsave`), filtered by oocconv (separable taps, reflect border) and by
   ooceq (u8, u16), written as strips or tiles, plain or Deflate. Each output is read by tifffile
   (series[0]: its shape must be the output's array, (H, W) or (H, W, C)), by libvips (`vips
   rawsave`) and by libtiff (oocconv itself, --taps 1 to raw); the three arrays must be identical
   and equal a float64 scipy.ndimage reference (within rounding: 0.51 for integer outputs, 1e-5 of
   the largest value for f32) or the NumPy equalization formula (exactly).
2. Descriptions: free text kept; tifffile JSON (with axes and other keys) and the old
   "shape=(...)" rewritten to the output's shape; an ImageJ description of one image kept, of a
   stack (images=3, channels=3) dropped.
3. GeoTIFF / GDAL tags (33550 33922 34264 34735 34736 34737 42112 42113) written by tifffile for
   EPSG:32633, carried by oocconv into strips, tiles and Deflate outputs: values and counts equal
   (GDAL_METADATA less its STATISTICS_* items); with gdalinfo (gdal-bin, optional: skipped without
   it) the same WKT, geotransform and nodata. GDAL_NODATA -9999 dropped for a u8 output, kept for
   i16. Malformed tags (wrong counts, a key directory pointing past its parameters, wrong types):
   exit 0, right pixels, the bad tags dropped with a warning, the good ones kept.
4. Decode threads follow --threads: the output under --threads 1 is byte-identical to the
   default's, and the process never runs more than a few threads (Linux: /proc/PID/task sampled).

Usage: test_tiff_metadata.py --bin-dir DIR [--keep] [unittest options]   (or under pytest:
conftest.py)
A test lists every failing case; the check is skipped (exit 77 as a script) without tifffile or
scipy.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

import cli_args  # beside this file
import cli_cases
import vips_lib
from cli_cases import report, skip

try:
    import tifffile
    from scipy import ndimage
except ImportError as e:
    cli_cases.skip_module(__name__, str(e))

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
KEEP = cli_args.take_flag(_REST, "--keep")  # as a script: keep the temporary folder
OOCCONV = os.path.join(BIN, "oocconv")
OOCEQ = os.path.join(BIN, "ooceq")
VIPS = shutil.which("vips")
VIPSHEADER = shutil.which("vipsheader")
GDALINFO = shutil.which("gdalinfo")
tmp = tempfile.mkdtemp(prefix="ooc_meta_")
if KEEP:
    print(f"files kept in {tmp}")
else:
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
# One generator for the whole check, drawn in the tests' (numbered) order: cli_cases.py.
rng = np.random.default_rng(20240612)
ROW_TAPS, COL_TAPS = [0.25, 0.5, 0.25], [0.125, 0.375, 0.375, 0.125, 0.0]
TAPS = ["--row-taps=" + ",".join(map(str, ROW_TAPS)), "--col-taps=" + ",".join(map(str, COL_TAPS)),
        "--border", "reflect"]
VIPS_FORMAT = {"uchar": "u1", "ushort": "u2", "short": "i2", "uint": "u4", "int": "i4",
               "float": "f4", "double": "f8"}


def p(name):
    return os.path.join(tmp, name)


def run(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def must(cmd):
    """None, or a problem string when cmd does not exit 0."""
    rc, _, err = run(cmd)
    if rc == 0:
        return None
    return f"`{' '.join(map(str, cmd))}` exit {rc}: {err.strip()[:300]}"


# ---------------------------------------------------------------------------------------------
# Readers: each returns (array as (H, W, C), problem)


def read_tifffile(path, want_shape):
    with tifffile.TiffFile(path) as tf:
        s = tf.series[0]
        if tuple(s.shape) != tuple(want_shape):
            return None, f"tifffile series shape {tuple(s.shape)}, want {tuple(want_shape)} " \
                         f"(description {tf.pages[0].description!r})"
        a = s.asarray()
    return a.reshape(a.shape[0], a.shape[1], -1), None


def read_vips(path, h, w, c):
    if vips_lib.LIB is not None:  # in this process: no vipsheader and vips rawsave each file
        a, problem = vips_lib.LIB.load(path)
        if problem:
            return None, problem
        if a.shape != (h, w, c):
            return None, f"libvips reads {a.shape}, want {(h, w, c)}"
        return a, None
    if not VIPS:
        return None, None
    rc, out, err = run([VIPSHEADER, "-a", path])
    if rc != 0:
        return None, f"vipsheader: {err.strip()[:200]}"
    head = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    got = (int(head.get("height", -1)), int(head.get("width", -1)), int(head.get("bands", -1)))
    if got != (h, w, c):
        return None, f"libvips reads {got}, want {(h, w, c)}"
    raw = p("vips.raw")
    problem = must([VIPS, "rawsave", path, raw])
    if problem:
        return None, problem
    return np.fromfile(raw, dtype=VIPS_FORMAT[head["format"]]).reshape(h, w, c), None


def read_libtiff(path, dtype, h, w, c):
    """Through oocconv's libtiff reader, copied by the identity filter into raw."""
    raw = p("libtiff.raw")
    problem = must([OOCCONV, path, raw, "--taps", 1, "-q"])
    if problem:
        return None, problem
    return np.fromfile(raw, dtype=dtype).reshape(h, w, c), None


def same(what, got, want):
    if got is None or want is None:
        return None
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{what}: {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
    if np.array_equal(got, want, equal_nan=True):
        return None
    return f"{what}: {int((got != want).sum())} samples differ"


def near(what, got, ref):
    if got is None:
        return None
    g = got.astype(np.float64)
    if got.dtype.kind == "f":
        err = np.abs(g - ref).max() / max(np.abs(ref).max(), 1e-30)
        return None if err <= 1e-5 else f"{what}: relative error {err:.3g} from the reference"
    info = np.iinfo(got.dtype)
    err = np.abs(g - np.clip(ref, info.min, info.max)).max()
    return None if err <= 0.51 else f"{what}: off by {err:.3g} from the reference"


def check_output(name, out, dtype, h, w, c, reference=None, exact=None, extra=()):
    """The three readers agree, on the right array; the description (if any) is true."""
    shape = (h, w) if c == 1 else (h, w, c)
    a, pa = read_tifffile(out, shape)
    b, pb = read_vips(out, h, w, c)
    lt, pc = read_libtiff(out, dtype, h, w, c)
    problems = [pa, pb, pc, *extra]
    problems.append(same("libvips vs libtiff", b, lt))
    problems.append(same("tifffile vs libtiff", a, lt))
    if exact is not None:
        problems.append(same("libtiff vs reference", lt, exact))
    if reference is not None:
        problems.append(near("libtiff", lt, reference))
    report(name, problems)


def separable_reference(img):
    x = ndimage.convolve1d(img.astype(np.float64), ROW_TAPS, axis=1, mode="reflect")
    return ndimage.convolve1d(x, COL_TAPS, axis=0, mode="reflect")


def eq_reference(img):
    """ooceq's (and cv2.equalizeHist's) formula, per channel, in float32."""
    bins = 256 if img.dtype == np.uint8 else 65536
    out = np.empty_like(img)
    for k in range(img.shape[2]):
        ch = img[:, :, k]
        h = np.bincount(ch.ravel(), minlength=bins).astype(np.int64)
        i0 = int(np.flatnonzero(h)[0])
        if h[i0] == ch.size:
            out[:, :, k] = ch
            continue
        scale = np.float32(bins - 1) / np.float32(ch.size - h[i0])
        lut = np.zeros(bins, np.float64)
        lut[i0 + 1:] = np.rint((np.cumsum(h[i0 + 1:]).astype(np.float32) * scale).astype(
            np.float32))
        out[:, :, k] = lut.astype(img.dtype)[ch]
    return out


def image(dtype, h, w, c):
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-1000, 1000, (h, w, c)).astype(dtype)
    top = np.iinfo(dtype).max
    # Low contrast for equalization to do something; never all one value.
    return rng.integers(top // 8, top // 2, (h, w, c), dtype=dtype, endpoint=True)


# =============================================================================================
# 1. Layouts: tifffile, libvips and libtiff read every output as the same array
H, W = 37, 45
outputs = [[], ["--tile", 32], ["--compress", "deflate"], ["--tile", 16, "--compress", "deflate"]]


def filter_and_check(label, src, name, img, dtype, c, oo):
    """oocconv (and ooceq, for integer samples) on src, written with the options oo; each output
    read back and compared with the reference of img (H x W x c samples of dtype)."""
    out = p(f"{name}_out.tif")
    problem = must([OOCCONV, src, out, *TAPS, "-q", *oo])
    if problem:
        report("oocconv " + label, [problem])
    else:
        check_output("oocconv " + label, out, dtype, H, W, c, reference=separable_reference(img))
    if dtype in ("u1", "u2"):
        out = p(f"{name}_eq.tif")
        problem = must([OOCEQ, src, out, "-q", *oo])
        if problem:
            report("ooceq " + label, [problem])
        else:
            check_output("ooceq " + label, out, dtype, H, W, c, exact=eq_reference(img))


def tifffile_inputs(dtype, k):
    """Inputs of one sample type written by tifffile, k counting the inputs of every type."""
    for c, planar in ((1, None), (3, "separate"), (3, "contig"), (4, "separate"), (4, "contig")):
        k += 1
        img = image(dtype, H, W, c)
        src = p(f"tf{k}.tif")
        data = img[..., 0] if c == 1 else (np.moveaxis(img, 2, 0) if planar == "separate" else img)
        kw = dict(photometric="minisblack" if c == 1 else "rgb")
        if planar:
            kw["planarconfig"] = planar
        store = dict(tile=(16, 16)) if k % 2 else dict(rowsperstrip=7)
        if k % 3:
            store["compression"] = "zlib"
        tifffile.imwrite(src, data, **kw, **store)
        oo = outputs[k % len(outputs)]
        if dtype == "f4" and "deflate" in oo:
            oo = oo[:2] if oo[0] == "--tile" else []  # tifffile needs imagecodecs for the float
            # predictor ooc writes with Deflate
        label = f"tifffile {dtype} c{c} {planar or ''} {' '.join(map(str, store))} -> " \
                f"{' '.join(map(str, oo)) or 'strips'}"
        filter_and_check(label, src, f"tf{k}", img, dtype, c, oo)


# =============================================================================================
# 2. ImageDescription: kept when true, rewritten or dropped when not


def description_of(path):
    with tifffile.TiffFile(path) as tf:
        return tf.pages[0].description


DESCRIPTIONS = [
    # label, array written, description, planar, expected output description (None: none)
    ("free text", (1,), "hello ooc", None, "hello ooc"),
    ("json with axes and keys", (3,), '{"shape": [3, 37, 45], "axes": "CYX", "note": "x"}',
     "separate", '{"shape": [37, 45, 3], "axes": "YXS", "note": "x"}'),
    ("json of a grey stack page", (1,), '{"shape": [5, 37, 45]}', None, '{"shape": [37, 45]}'),
    ("old-style shape=", (3,), "shape=(3,37,45)", "separate", "shape=(37,45,3)"),
    ("ImageJ one image", (1,), "ImageJ=1.11a\nimages=1\nunit=micron", None,
     "ImageJ=1.11a\nimages=1\nunit=micron"),
    ("ImageJ stack", (3,), "ImageJ=1.11a\nimages=3\nchannels=3\nhyperstack=true", "separate",
     None),
]


# =============================================================================================
# 3. GeoTIFF and GDAL tags
GEO_TAGS = (33550, 33922, 34264, 34735, 34736, 34737, 42112, 42113)
KEYS = [1, 1, 0, 5,
        1024, 0, 1, 1,  # GTModelType: projected
        1025, 0, 1, 1,  # GTRasterType: pixel is area
        1026, 34737, 22, 0,  # GTCitation, in GeoAsciiParams
        2057, 34736, 1, 0,  # GeogSemiMajorAxis, in GeoDoubleParams
        3072, 0, 1, 32633]  # ProjectedCSType: WGS 84 / UTM zone 33N
STATS = '  <Item name="STATISTICS_MAXIMUM" sample="0">255</Item>\n'
XML = ('<GDALMetadata>\n  <Item name="AREA_OR_POINT">Area</Item>\n'
       f'{STATS}  <Item name="DESCRIPTION" sample="0" role="description">height</Item>\n'
       '</GDALMetadata>')


def geo_extratags(overrides=None):
    tags = {33550: ("d", (30.0, 30.0, 0.0)),
            33922: ("d", (0.0, 0.0, 0.0, 500000.0, 5000000.0, 0.0)),
            34264: ("d", (30.0, 0, 0, 500000.0, 0, -30.0, 0, 5000000.0, 0, 0, 0, 0, 0, 0, 0, 1)),
            34735: ("H", tuple(KEYS)), 34736: ("d", (6378137.0,)),
            34737: ("s", "WGS 84 / UTM zone 33N|"), 42112: ("s", XML), 42113: ("s", "-9999")}
    tags.update(overrides or {})
    return [(code, dt, 0 if dt == "s" else len(v), v, True) for code, (dt, v) in tags.items()]


def tag_values(path):
    with tifffile.TiffFile(path) as tf:
        tags = tf.pages[0].tags
        return {c: (tags[c].count, tags[c].value) for c in GEO_TAGS if c in tags}


def gdal_facts(path):
    import json
    rc, out, err = run([GDALINFO, "-json", path])
    if rc != 0:
        return None, f"gdalinfo {os.path.basename(path)}: {err.strip()[:200]}"
    j = json.loads(out)
    return (j.get("coordinateSystem", {}).get("wkt"), j.get("geoTransform"),
            j["bands"][0].get("noDataValue")), None


_geo = []


def geo_input():
    """(image, GeoTIFF written by tifffile): drawn by the first test that needs it."""
    if not _geo:
        geo_img = image("f4", H, W, 1)
        geo_src = p("geo_in.tif")
        tifffile.imwrite(geo_src, geo_img[..., 0], extratags=geo_extratags(), tile=(16, 16),
                         compression="zlib")
        _geo.append((geo_img, geo_src))
    return _geo[0]


# Malformed tags: dropped (with a warning), never a crash; the well-formed ones still carried.
HOSTILE = [
    # label, tags replaced, tags that must be gone, whether ooc warns (libtiff itself skips a tag
    # of the wrong type)
    ("ModelPixelScale with 2 values", {33550: ("d", (30.0, 30.0))}, [33550], True),
    ("ModelTransformation with 15 values", {34264: ("d", tuple(range(15)))}, [34264], True),
    ("ModelTiepoint with 5 values", {33922: ("d", (0.0, 0.0, 0.0, 1.0, 2.0))}, [33922], True),
    ("GeoKeyDirectory counting 9 keys", {34735: ("H", tuple(KEYS[:3] + [9] + KEYS[4:]))},
     [34735, 34736, 34737], True),
    ("GeoKey past GeoAsciiParams", {34735: ("H", tuple(KEYS[:14] + [99] + KEYS[15:]))},
     [34735, 34736, 34737], True),
    ("ModelTiepoint as ASCII", {33922: ("s", "0 0 0 1 2 0")}, [33922], False),
    ("GDAL_NODATA as a double", {42113: ("d", (-9999.0,))}, [42113], False),
]


# =============================================================================================
# 4. Decode threads follow --threads


def run_sampled(cmd):
    """(exit code, most threads seen) of cmd, /proc/PID/task sampled every millisecond."""
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    peak = [0]

    def sample():
        while proc.poll() is None:
            try:
                peak[0] = max(peak[0], len(os.listdir(f"/proc/{proc.pid}/task")))
            except OSError:
                pass
            time.sleep(0.001)

    t = threading.Thread(target=sample)
    t.start()
    proc.wait(timeout=120)
    t.join()
    return proc.returncode, peak[0]


class MetaCheck(unittest.TestCase):
    # Numbered in the order they draw their data (cli_cases.py).
    def test_1a_layouts_tifffile_u1(self):
        with cli_cases.cases(self):
            tifffile_inputs("u1", 0)

    def test_1b_layouts_tifffile_u2(self):
        with cli_cases.cases(self):
            tifffile_inputs("u2", 5)

    def test_1c_layouts_tifffile_f4(self):
        with cli_cases.cases(self):
            tifffile_inputs("f4", 10)

    def test_1d_layouts_libvips(self):
        if not VIPS and vips_lib.LIB is None:
            self.skipTest("libvips inputs and readback: no vips (libvips-tools)")
        with cli_cases.cases(self):
            for k, (dtype, vfmt, c, opts) in enumerate((
                    ("u1", "uchar", 1, ["--tile", "--tile-width", 16, "--tile-height", 16]),
                    ("u2", "ushort", 3, ["--compression", "deflate"]),
                    ("f4", "float", 4, []),
                    ("u1", "uchar", 3, ["--tile", "--tile-width", 32, "--tile-height", 32,
                                        "--compression", "deflate"]))):
                img = image(dtype, H, W, c)
                raw, src = p(f"v{k}.raw"), p(f"v{k}.tif")
                img.tofile(raw)
                if vips_lib.LIB is not None:  # the commands' bytes, in this process
                    problem = vips_lib.LIB.save(img, vips_lib.target(src, opts))
                else:
                    problem = must([VIPS, "rawload", raw, p(f"v{k}.v"), W, H, c, "--format",
                                    vfmt]) or must([VIPS, "tiffsave", p(f"v{k}.v"), src, *opts])
                if problem:
                    report(f"libvips input {k}", [problem])
                    continue
                oo = outputs[(k + 1) % len(outputs)] if dtype != "f4" else ["--tile", 32]
                label = f"vips {dtype} c{c} {' '.join(map(str, opts))} -> " \
                        f"{' '.join(map(str, oo)) or 'strips'}"
                filter_and_check(label, src, f"v{k}", img, dtype, c, oo)

    def test_2_descriptions(self):
        with cli_cases.cases(self):
            for label, (c,), desc, planar, want in DESCRIPTIONS:
                img = image("u2", H, W, c)
                src, out = p("desc_in.tif"), p("desc_out.tif")
                data = img[..., 0] if c == 1 else np.moveaxis(img, 2, 0)
                tifffile.imwrite(src, data, description=desc, metadata=None,
                                 photometric="minisblack" if c == 1 else "rgb",
                                 **({"planarconfig": planar} if planar else {}))
                problem = must([OOCCONV, src, out, "--taps", 1, "-q"])
                if problem:
                    report(f"description: {label}", [problem])
                    continue
                got = description_of(out)
                problems = [] if (got or None) == want else [f"description {got!r}, want {want!r}"]
                shape = (H, W) if c == 1 else (H, W, c)
                a, pa = read_tifffile(out, shape)
                problems += [pa, same("tifffile read", a, img)]
                report(f"description: {label}", problems)

    def test_3a_geo_tags(self):
        geo_img, geo_src = geo_input()
        want_tags = tag_values(geo_src)
        want_tags[42112] = (None, XML.replace(STATS, ""))
        with cli_cases.cases(self):
            if not GDALINFO:
                skip("gdalinfo comparisons", "no gdalinfo (gdal-bin is optional)")
            for opts in ([], ["--tile", 16], ["--tile", 32, "--compress", "deflate"],
                         ["--compress", "deflate"]):
                out = p("geo_out.tif")
                name = f"geo tags f32 -> {' '.join(map(str, opts)) or 'strips'}"
                problem = must([OOCCONV, geo_src, out, *TAPS, "-q", *opts])
                if problem:
                    report(name, [problem])
                    continue
                got = tag_values(out)
                problems = []
                for code in GEO_TAGS:
                    wc, wv = want_tags[code]
                    gc, gv = got.get(code, (None, None))
                    if gv != wv or (wc is not None and gc != wc):
                        problems.append(f"tag {code}: {gc} {gv!r}, want {wc} {wv!r}")
                if GDALINFO:
                    a, pa = gdal_facts(geo_src)
                    b, pb = gdal_facts(out)
                    problems += [pa, pb]
                    if a and b and a != b:
                        problems.append(f"gdalinfo: input {a[1:]} {(a[0] or '')[:40]!r}, output "
                                        f"{b[1:]} {(b[0] or '')[:40]!r}")
                    if a and a[2] != -9999:
                        problems.append(f"gdalinfo reads the input's nodata as {a[2]!r}")
                report(name, problems)

    def test_3b_gdal_nodata_in_the_output_type(self):
        """GDAL_NODATA must hold in the output's sample type."""
        _, geo_src = geo_input()
        with cli_cases.cases(self):
            for out_type, keep in (("u8", False), ("i16", True), ("f64", True)):
                out = p("geo_nodata.tif")
                problem = must([OOCCONV, geo_src, out, "--taps", 1, "-q", "--out-type", out_type])
                got = {} if problem else tag_values(out)
                has = got.get(42113, (0, None))[1]
                problems = [problem]
                if not problem and (has == "-9999") != keep:
                    problems.append(f"GDAL_NODATA {has!r} in a {out_type} output (want it "
                                    f"{'kept' if keep else 'dropped'})")
                if not problem and 34735 not in got:
                    problems.append("the other geo tags were dropped too")
                report(f"GDAL_NODATA -9999 with --out-type {out_type}", problems)

    def test_3c_malformed_geo_tags(self):
        geo_img, _ = geo_input()
        with cli_cases.cases(self):
            for label, override, dropped, warns in HOSTILE:
                src, out = p("hostile.tif"), p("hostile_out.tif")
                tifffile.imwrite(src, geo_img[..., 0], extratags=geo_extratags(override))
                rc, _, err = run([OOCCONV, src, out, "--taps", 1, "-q"])
                if rc != 0:
                    report(f"malformed: {label}", [f"exit {rc}: {err.strip()[:300]}"])
                    continue
                got = tag_values(out)
                problems = [f"tag {c} carried over: {got[c][1]!r}" for c in dropped if c in got]
                problems += [f"well-formed tag {c} lost" for c in GEO_TAGS
                             if c not in dropped and c not in got]
                if warns and "warning" not in err:
                    problems.append(f"no warning on stderr (got {err.strip()[:200]!r})")
                a, pa = read_tifffile(out, (H, W))
                problems += [pa, same("pixels", a, geo_img)]
                report(f"malformed: {label}", problems)

    def test_4_decode_threads_follow_threads(self):
        big = image("u2", 1200, 1500, 1)
        src = p("threads_in.tif")
        tifffile.imwrite(src, big[..., 0], tile=(64, 64), compression="zlib")
        outs = {}
        with cli_cases.cases(self):
            for threads in (None, 1, 6):
                out = p(f"threads_{threads}.tif")
                extra = [] if threads is None else ["--threads", threads]
                rc, peak = run_sampled([OOCCONV, src, out, *TAPS, "-q", "--compress", "deflate",
                                        *extra])
                outs[threads] = (rc, peak, open(out, "rb").read() if rc == 0 else b"")
            problems = [f"--threads {t}: exit {rc}" for t, (rc, _, _) in outs.items() if rc != 0]
            if outs[1][2] != outs[None][2] or outs[6][2] != outs[None][2]:
                problems.append("outputs differ between --threads 1, 6 and the default")
            if sys.platform.startswith("linux"):
                # main thread, one decoder, one TBB worker at most, a spare
                if outs[1][1] > 4:
                    problems.append(f"--threads 1 ran {outs[1][1]} threads at once")
                if outs[6][1] < 6:
                    problems.append(f"--threads 6 ran only {outs[6][1]} threads at once")
            report(f"--threads 1 / 6 / default (peak threads {outs[1][1]} / {outs[6][1]} / "
                   f"{outs[None][1]})", problems)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
