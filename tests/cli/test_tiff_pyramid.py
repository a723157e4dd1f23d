#!/usr/bin/env python3
"""Pyramidal TIFF outputs of oocconv (--pyramid / --levels / --cog), read by independent readers.

1. SubIFD pyramids: u8 / u16 / f32 x 1 and 3 channels x --compress none / deflate / zstd, odd
   sizes and tiles that overhang every level's edges. Level 0 read back equals the same filter's
   flat output (`oocconv IN OUT.raw`); every level k+1 equals a NumPy reference: the 2 x 2 mean in
   float64 of level k as stored (an odd last row or column averaged with itself, integers rounded
   half to even). tifffile's series[0].levels lists every level (also for inputs with a shaped or
   an ImageJ description, without a warning); each reduced level has
   NewSubfileType 1 and the first page's tile size, compression, sample format and photometric.
   Pixels are read by tifffile (none, deflate) and by libvips through `[subifd=k]` (every codec;
   tifffile needs imagecodecs for zstd).
2. OME-TIFF (a name ending .ome.tif / .ome.tiff): tifffile's is_ome, its OME series' shape, dtype
   and levels, and the pixels.
3. Cloud-Optimized GeoTIFF (--cog): GDAL's validator (osgeo_utils.samples.
   validate_cloud_optimized_geotiff, full check) reports no error and no warning, gdalinfo lists
   the overviews, every level equals the reference; from a GeoTIFF input, gdalinfo gives the
   input's coordinate system and geotransform, and every overview's ModelPixelScale is the
   input's times 2^k with the tiepoint unchanged. BigTIFF COG and SubIFD pyramids too.
4. Usage errors (exit 2, nothing left beside the output): --cog to raw, --chunk to TIFF, --cog
   with an .ome.tif name, --levels past 1 x 1; and no spill file is left after a run.

Usage: test_tiff_pyramid.py --bin-dir DIR [--keep] [unittest options]   (or under pytest:
   conftest.py). A test lists every failing case; skipped (exit 77 as a script) without tifffile.
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import cli_args  # beside this file
import cli_cases
import vips_lib
from cli_cases import report, skip

try:
    import tifffile
except ImportError as e:
    cli_cases.skip_module(__name__, str(e))

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
KEEP = cli_args.take_flag(_REST, "--keep")  # as a script: keep the temporary folder
OOCCONV = os.path.join(BIN, "oocconv")
VIPS = shutil.which("vips")
GDALINFO = shutil.which("gdalinfo")
try:
    from osgeo_utils.samples import validate_cloud_optimized_geotiff as cog_validator
except ImportError:
    cog_validator = None
tmp = tempfile.mkdtemp(prefix="ooc_pyr_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
if KEEP:
    print(f"files kept in {tmp}")
else:
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
# One generator for the whole check, drawn in the tests' (numbered) order: cli_cases.py.
rng = np.random.default_rng(20240731)
FILTER = ["--radius", "1", "-q"]
TYPES = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}


def p(name):
    return os.path.join(tmp, name)


def run(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def must(cmd):
    rc, _, err = run(cmd)
    return None if rc == 0 else f"`{' '.join(map(str, cmd))}` exit {rc}: {err.strip()[:300]}"


def reduce(a):
    """Level k+1 from level k (H, W, C) as stored: an odd last row or column is its own partner,
    the four samples added in float64 (top left, bottom left, top right, bottom right)."""
    f = a.astype(np.float64)
    if f.shape[0] % 2:
        f = np.concatenate([f, f[-1:]], axis=0)
    if f.shape[1] % 2:
        f = np.concatenate([f, f[:, -1:]], axis=1)
    m = (f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]) / 4
    return np.rint(m).astype(a.dtype) if a.dtype.kind in "iu" else m.astype(a.dtype)


def same(what, got, want):
    if got is None:
        return f"{what}: not read"
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, want {want.shape}"
    if not np.array_equal(got, want, equal_nan=want.dtype.kind == "f"):
        bad = np.argwhere(got != want)
        return f"{what}: {len(bad)} samples differ, first at {tuple(bad[0])}: " \
               f"{got[tuple(bad[0])]} vs {want[tuple(bad[0])]}"
    return None


def as_hwc(a):
    return a.reshape(a.shape[0], a.shape[1], -1)


def read_vips(path, sub, dtype, shape):
    """Level `sub` (-1: the first page) through libvips, or a problem string."""
    src = path if sub < 0 else f"{path}[subifd={sub}]"
    if vips_lib.LIB is not None:  # in this process: the bytes `vips rawsave` would write
        a, problem = vips_lib.LIB.load(src)
        if problem:
            return None, problem
        a = np.frombuffer(a.tobytes(), dtype=dtype)
    else:
        raw = p("vips.raw")
        problem = must([VIPS, "rawsave", src, raw])
        if problem:
            return None, problem
        a = np.fromfile(raw, dtype=dtype)
    if a.size != np.prod(shape):
        return None, f"libvips level {sub}: {a.size} samples, want {shape}"
    return a.reshape(shape), None


def image(dtype, h, w, c):
    if dtype == np.float32:
        return rng.normal(0, 100, (h, w, c)).astype(np.float32)
    return rng.integers(0, np.iinfo(dtype).max + 1, (h, w, c), dtype=dtype)


def make_input(name, dtype, h, w, c):
    img = image(dtype, h, w, c)
    src = p(name)
    img.tofile(src)
    return src, ["--width", w, "--height", h, "--channels", c, "--type",
                 {np.uint8: "u8", np.uint16: "u16", np.float32: "f32"}[dtype]]


def flat_level0(src, hints, dtype, h, w, c):
    raw = p("flat.raw")
    problem = must([OOCCONV, src, raw, *hints, *FILTER])
    if problem:
        return None, problem
    return np.fromfile(raw, dtype=dtype).reshape(h, w, c), None


def check_levels(levels, base, read, nlevels):
    """levels: the arrays read (None where unread); reference from each stored level."""
    problems = []
    if len(levels) != nlevels + 1:
        return [f"{len(levels)} levels read, want {nlevels + 1}"]
    problems.append(same("level 0 against the flat output", levels[0], base))
    for k in range(1, len(levels)):
        if levels[k - 1] is None:
            break
        problems.append(same(f"level {k} ({read})", levels[k], reduce(levels[k - 1])))
    return problems


def tag_problems(tf, pages, comp):
    """The reduced levels' tags against the first page's."""
    problems = []
    first = pages[0]
    for k, pg in enumerate(pages):
        if k and pg.subfiletype != 1:
            problems.append(f"level {k} NewSubfileType {pg.subfiletype}, want 1")
        for attr in ("tilewidth", "tilelength", "compression", "sampleformat", "photometric",
                     "bitspersample", "samplesperpixel"):
            if getattr(pg, attr) != getattr(first, attr):
                problems.append(f"level {k} {attr} {getattr(pg, attr)} != level 0's "
                                f"{getattr(first, attr)}")
    if first.compression != comp:
        problems.append(f"compression {first.compression}, want {comp}")
    if not first.is_tiled:
        problems.append("not tiled")
    return problems


COMP = {"none": 1, "deflate": 8, "zstd": 50000}


def tifffile_decodes(comp, dtype):
    # Without imagecodecs tifffile has no zstd; deflate it decodes with the horizontal predictor
    # that --predictor auto writes for every type (floats included).
    return comp == "none" or comp == "deflate"


def read_gdal(path, c, n):
    """Level 0 and the n overviews as GDAL reads them (None each where GDAL is missing)."""
    try:
        from osgeo import gdal
    except ImportError:
        return [None] * (n + 1)
    ds = gdal.Open(path)
    bands = [ds.GetRasterBand(b + 1) for b in range(c)]
    got = [np.dstack([b.ReadAsArray() for b in bands])]
    for i in range(n):
        got.append(np.dstack([b.GetOverview(i).ReadAsArray() for b in bands]))
    return got


def pyramid_case(label, out_name, dtype, h, w, c, comp, opts, nlevels, cog=False):
    src, hints = make_input(f"in_{label}.raw", dtype, h, w, c)
    base, problem = flat_level0(src, hints, dtype, h, w, c)
    if problem:
        report(label, [problem])
        return None
    out = p(out_name)
    problem = must([OOCCONV, src, out, *hints, *FILTER, "--compress", comp, *opts])
    if problem:
        report(label, [problem])
        return None
    problems = []
    with tifffile.TiffFile(out) as tf:
        levels = tf.series[0].levels
        if len(levels) != nlevels + 1:
            problems.append(f"tifffile series[0].levels has {len(levels)}, want {nlevels + 1}")
        pages = [lv.keyframe for lv in levels]
        problems += tag_problems(tf, pages, COMP[comp])
        if not cog and nlevels and len(tf.pages) != 1:
            problems.append(f"{len(tf.pages)} pages, want 1 with SubIFDs")
        if cog and len(tf.pages) != nlevels + 1:
            problems.append(f"{len(tf.pages)} pages, want {nlevels + 1}")
        if tifffile_decodes(comp, dtype):
            got = [as_hwc(lv.asarray()) for lv in levels]
            problems += check_levels(got, base, "tifffile", nlevels)
    if cog:
        problems += check_levels(read_gdal(out, c, nlevels), base, "GDAL", nlevels)
    if (VIPS or vips_lib.LIB is not None) and not cog:
        vgot = []
        shape = (h, w, c)
        for k in range(nlevels + 1):
            a, pr = read_vips(out, k - 1, dtype, shape)
            problems.append(pr)
            vgot.append(a)
            shape = ((shape[0] + 1) // 2, (shape[1] + 1) // 2, c)
        problems += check_levels(vgot, base, "libvips subifd", nlevels)
    elif not VIPS and vips_lib.LIB is None:
        skip(label + " (libvips)", "no vips")
    leftovers = sorted(set(os.listdir(tmp)) - known)
    leftovers = [f for f in leftovers if f.endswith(".partial") or ".level" in f]
    if leftovers:
        problems.append(f"left behind: {leftovers}")
    report(label, problems)
    return out


known = set()


def subifd_sweep(tname):
    """SubIFD pyramids of one type over channels and codecs."""
    dtype = TYPES[tname]
    for c in (1, 3):
        for comp in ("none", "deflate", "zstd"):
            h, w = 203, 157
            label = f"subifd {tname} x{c} {comp} {w}x{h} --tile 32 --levels 4"
            pyramid_case(label, "pyr.tif", dtype, h, w, c, comp, ["--tile", 32, "--levels", 4], 4)


# COG from a GeoTIFF input: geo tags on every level, pixel scale times 2^k.
GEO = {33550: ("d", (30.0, 30.0, 0.0)), 33922: ("d", (0.0, 0.0, 0.0, 500000.0, 5000000.0, 0.0)),
       34735: ("H", (1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633)),
       42113: ("s", "7")}


class TiffPyramidCheck(unittest.TestCase):
    # Numbered in the order they draw their data (cli_cases.py).

    # 1. SubIFD pyramids over types, channels and codecs.
    def test_1a_subifd_u8(self):
        with cli_cases.cases(self):
            subifd_sweep("u8")

    def test_1b_subifd_u16(self):
        with cli_cases.cases(self):
            subifd_sweep("u16")

    def test_1c_subifd_f32(self):
        with cli_cases.cases(self):
            subifd_sweep("f32")

    def test_1d_auto_levels_and_default_tile(self):
        """--pyramid's automatic levels (until the smaller side is under 256) and the default
        tile 512."""
        with cli_cases.cases(self):
            out = pyramid_case("subifd u16 x1 deflate 1300x531 --pyramid (auto levels, tile 512)",
                               "auto.tif", np.uint16, 531, 1300, 1, "deflate", ["--pyramid"], 2)
            if out:
                with tifffile.TiffFile(out) as tf:
                    pg = tf.pages[0]
                    report("--pyramid without --tile gives 512 x 512 tiles",
                           [None if (pg.tilewidth, pg.tilelength) == (512, 512)
                            else f"tiles {pg.tilewidth} x {pg.tilelength}"])

    def test_1e_bigtiff(self):
        with cli_cases.cases(self):
            pyramid_case("subifd BigTIFF f32 x3 deflate --bigtiff yes", "big.tif", np.float32, 75,
                         99, 3, "deflate", ["--tile", 16, "--levels", 3, "--bigtiff", "yes"], 3)

    def test_1f_descriptions_from_tifffile_inputs(self):
        """A shaped description goes on every level (tifffile reads the levels of a shaped series
        only then), an ImageJ one is dropped (it cannot tell of levels); series[0].levels lists
        every level either way, without a warning."""
        with cli_cases.cases(self):
            for kind, kw in (("shaped", {}), ("ImageJ", {"imagej": True})):
                img = image(np.uint8, 300, 270, 1)[..., 0]
                src = p(f"desc_{kind}.tif")
                tifffile.imwrite(src, img, **kw)
                out = p(f"desc_{kind}_pyr.tif")
                problems = [must([OOCCONV, src, out, "--taps", 1, "-q", "--levels", 2,
                                  "--tile", 64])]
                if not problems[0]:
                    import logging
                    seen = []
                    handler = logging.Handler()
                    handler.emit = lambda record: seen.append(record.getMessage())
                    logging.getLogger("tifffile").addHandler(handler)
                    with tifffile.TiffFile(out) as tf:
                        levels = tf.series[0].levels
                        if len(levels) != 3:
                            problems.append(f"series[0] ({tf.series[0].kind}) has {len(levels)} "
                                            "levels, want 3")
                        else:
                            got = [as_hwc(lv.asarray()) for lv in levels]
                            problems += check_levels(got, img[..., None], "tifffile", 2)
                    logging.getLogger("tifffile").removeHandler(handler)
                    problems += [f"tifffile warns: {m}" for m in seen]
                report(f"{kind} description from a tifffile input: series levels", problems)

    def test_2_ome_tiff(self):
        with cli_cases.cases(self):
            for tname, dtype, c, comp in (("u16", np.uint16, 3, "deflate"),
                                          ("u8", np.uint8, 1, "none"),
                                          ("f32", np.float32, 1, "deflate")):
                name = f"ome_{tname}.ome.tif"
                label = f"OME-TIFF {tname} x{c} {comp}"
                out = pyramid_case(label + " levels", name, dtype, 301, 259, c, comp,
                                   ["--tile", 64, "--levels", 3], 3)
                if out:
                    problems = []
                    with tifffile.TiffFile(out) as tf:
                        if not tf.is_ome:
                            problems.append("tifffile: not is_ome")
                        s = tf.series[0]
                        want = (301, 259, c) if c > 1 else (301, 259)
                        if tuple(s.shape) != want:
                            problems.append(f"OME series shape {s.shape}, want {want}")
                        if s.dtype != dtype:
                            problems.append(f"OME series dtype {s.dtype}")
                        if len(s.levels) != 4:
                            problems.append(f"OME series has {len(s.levels)} levels, want 4")
                        if "<OME" not in (tf.pages[0].description or ""):
                            problems.append("no OME-XML in the first page's ImageDescription")
                    report(label + " is_ome", problems)

    def test_3a_cog(self):
        with cli_cases.cases(self):
            for tname, dtype, c, comp, opts, n in (
                    ("u16", np.uint16, 1, "deflate", ["--tile", 64], 2),  # auto: 700 x 555 -> 2
                    ("f32", np.float32, 3, "zstd", ["--tile", 32, "--levels", 3], 3),
                    ("u8", np.uint8, 1, "none", ["--tile", 64, "--bigtiff", "yes"], 2)):
                label = f"COG {tname} x{c} {comp} {' '.join(map(str, opts))}"
                out = pyramid_case(label, "cog.tif", dtype, 555, 700, c, comp, ["--cog", *opts],
                                   n, cog=True)
                if not out:
                    continue
                problems = []
                if cog_validator:
                    warnings, errors, _ = cog_validator.validate(out, full_check=True)
                    problems += [f"validator error: {e}" for e in errors]
                    problems += [f"validator warning: {w}" for w in warnings]
                else:
                    skip(label + " (validator)", "no python3-gdal")
                if GDALINFO:
                    rc, text, err = run([GDALINFO, "-json", out])
                    if rc:
                        problems.append(f"gdalinfo: {err.strip()[:200]}")
                    else:
                        ovr = json.loads(text)["bands"][0].get("overviews", [])
                        if len(ovr) != n:
                            problems.append(f"gdalinfo lists {len(ovr)} overviews, want {n}")
                report(label + ": validator and gdalinfo", problems)

    def test_3c_cog_levels_0_has_no_overviews(self):
        """--cog --levels 0 (either order; oocrun too) is a COG of one page: no overviews for
        tifffile and gdalinfo, GDAL's validator without errors (its only warning the advice to
        add overviews to an image over 512), level 0 the flat output; --cog alone keeps its
        automatic overviews (2 at 555 x 700)."""
        oocrun = os.path.join(BIN, "oocrun")
        with cli_cases.cases(self):
            out = pyramid_case("COG u16 --levels 0", "cog0.tif", np.uint16, 555, 700, 1,
                               "deflate", ["--cog", "--levels", 0], 0, cog=True)
            src, hints = make_input("cog0.raw", np.uint16, 555, 700, 1)
            for label, cmd, n in (
                    ("oocconv --levels 0 --cog", [OOCCONV, src, p("a.tif"), *hints, *FILTER,
                                                  "--levels", 0, "--cog"], 0),
                    ("oocrun --cog --levels 0", [oocrun, src, p("b.tif"), "abs", *hints, "-q",
                                                 "--cog", "--levels", 0], 0),
                    ("oocrun --cog", [oocrun, src, p("c.tif"), "abs", *hints, "-q", "--cog"], 2),
                    ("oocconv --cog --pyramid --levels 0", [OOCCONV, src, p("d.tif"), *hints,
                                                            *FILTER, "--cog", "--pyramid",
                                                            "--levels", 0], 0)):
                problem = must(cmd)
                problems = [problem]
                if not problem:
                    with tifffile.TiffFile(cmd[2]) as tf:
                        if len(tf.pages) != n + 1 or len(tf.series[0].levels) != n + 1:
                            problems.append(f"{len(tf.pages)} pages, "
                                            f"{len(tf.series[0].levels)} levels, want {n + 1}")
                report(label, problems)
            if not out:
                return
            problems = []
            if cog_validator:
                warnings, errors, _ = cog_validator.validate(out, full_check=True)
                problems += [f"validator error: {e}" for e in errors]
                problems += [f"validator warning: {w}" for w in warnings
                             if "recommended to include internal overviews" not in w]
            else:
                skip("COG --levels 0 (validator)", "no python3-gdal")
            if GDALINFO:
                rc, text, err = run([GDALINFO, "-json", out])
                ovr = json.loads(text)["bands"][0].get("overviews", []) if rc == 0 else None
                if ovr != []:
                    problems.append(f"gdalinfo: overviews {ovr}, exit {rc} {err.strip()[:200]}")
            report("COG --levels 0: validator and gdalinfo", problems)

    def test_3b_cog_from_a_geotiff(self):
        with cli_cases.cases(self):
            geo_img = image(np.uint16, 600, 520, 1)
            geo_img[geo_img == 7] = 8  # 7 is the tag's nodata: holes the levels leave out
            geo_src = p("geo_in.tif")
            tifffile.imwrite(geo_src, geo_img[..., 0], tile=(64, 64),
                             extratags=[(k, dt, 0 if dt == "s" else len(v), v, True)
                                        for k, (dt, v) in GEO.items()])
            out = p("geo_cog.tif")
            problems = [must([OOCCONV, geo_src, out, "--taps", 1, "-q", "--cog", "--compress",
                              "deflate", "--tile", 128])]
            if not problems[0]:
                with tifffile.TiffFile(out) as tf:
                    if len(tf.pages) != 3:
                        problems.append(f"{len(tf.pages)} pages, want 3 (auto levels of 600 x 520)")
                    for k, pg in enumerate(tf.pages):
                        scale = pg.tags.get(33550)
                        tie = pg.tags.get(33922)
                        if scale is None or tie is None:
                            problems.append(f"level {k}: geo tags missing")
                            continue
                        if tuple(scale.value) != (30.0 * 2 ** k, 30.0 * 2 ** k, 0.0):
                            problems.append(f"level {k}: ModelPixelScale {scale.value}")
                        if tuple(tie.value) != GEO[33922][1]:
                            problems.append(f"level {k}: ModelTiepoint {tie.value}")
                        if 34735 not in pg.tags:
                            problems.append(f"level {k}: no GeoKeyDirectory")
                    levels = [as_hwc(pg.asarray()) for pg in tf.pages]
                    problems += check_levels(levels, geo_img, "tifffile", 2)
                if cog_validator:
                    warnings, errors, _ = cog_validator.validate(out, full_check=True)
                    problems += [f"validator: {e}" for e in errors + warnings]
                if GDALINFO:
                    rc, text, err = run([GDALINFO, "-json", out])
                    j = json.loads(text) if rc == 0 else {}
                    if j.get("geoTransform") != [500000.0, 30.0, 0.0, 5000000.0, 0.0, -30.0]:
                        problems.append(f"gdalinfo geoTransform {j.get('geoTransform')}")
                    if "32633" not in json.dumps(j.get("coordinateSystem", {})):
                        problems.append("gdalinfo: not EPSG 32633")
                    if len(j.get("bands", [{}])[0].get("overviews", [])) != 2:
                        problems.append("gdalinfo lists no 2 overviews")
                    if j.get("bands", [{}])[0].get("noDataValue") != 7:
                        problems.append(f"nodata {j.get('bands', [{}])[0].get('noDataValue')}")
            report("COG from a GeoTIFF: geo tags on every level, gdalinfo, validator", problems)

    def test_4a_usage_errors_and_small_images(self):
        """Usage errors: exit 2 and nothing left behind; the smallest pyramids."""
        with cli_cases.cases(self):
            src, hints = make_input("small.raw", np.uint8, 40, 50, 1)
            for what, out, opts, says in (
                    ("--cog to a raw output", "e.raw", ["--cog"], "--cog"),
                    ("--chunk to a TIFF output", "e.tif", ["--chunk", 64], "--tile"),
                    ("--cog with an .ome.tif name", "e.ome.tif", ["--cog"], "OME"),
                    ("--levels 7 on 50 x 40 (1 x 1 at level 6)", "e.tif", ["--levels", 7],
                     "too many"),
                    ("--pyramid to .npy", "e.npy", ["--pyramid"], "--pyramid")):
                before = set(os.listdir(tmp))
                rc, _, err = run([OOCCONV, src, p(out), *hints, "-q", "--taps", 1, *opts])
                problems = []
                if rc != 2 or says not in err:
                    problems.append(f"exit {rc}, want 2 and a message naming {says!r}: "
                                    f"{err.strip()[:200]}")
                new = set(os.listdir(tmp)) - before
                if new:
                    problems.append(f"left behind: {sorted(new)}")
                report(f"usage error: {what} ({err.strip()[:90]})", problems)
            rc, _, err = run([OOCCONV, src, p("ok6.tif"), *hints, "-q", "--taps", 1,
                              "--levels", 6])
            report("--levels 6 on 50 x 40 (down to 1 x 1) works",
                   [None if rc == 0 else err.strip()[:200]])
            rc, _, err = run([OOCCONV, src, p("small.tif"), *hints, "-q", "--taps", 1,
                              "--pyramid"])
            problems = [None if rc == 0 else err.strip()[:200]]
            if rc == 0:
                with tifffile.TiffFile(p("small.tif")) as tf:
                    pg = tf.pages[0]
                    if not pg.is_tiled or pg.tilewidth != 512 or len(tf.series[0].levels) != 1:
                        problems.append(f"tiled {pg.is_tiled} {pg.tilewidth}, "
                                        f"{len(tf.series[0].levels)} levels")
            report("--pyramid on 50 x 40 (no level below 256): one tiled 512 level", problems)

    def test_4b_input_level(self):
        """ooc reads a pyramidal TIFF's reduced levels back (--input-level K: SubIFD K-1 of the
        page), as tifffile reads them; a level that is not there is refused."""
        with cli_cases.cases(self):
            src, hints = make_input("lv", np.uint16, 301, 257, 1)
            lv = p("lv.tif")
            rc, _, err = run([OOCCONV, src, lv, *hints, "--taps", 1, "--levels", 3, "--tile", 32,
                              "--compress", "deflate", "-q"])
            problems = [None if rc == 0 else err.strip()[:200]]
            if rc == 0:
                with tifffile.TiffFile(lv) as tf:
                    want = [np.asarray(level.asarray()) for level in tf.series[0].levels]
                for k in range(4):
                    back = p(f"lv{k}.npy")
                    rc, _, err = run([OOCCONV, lv, back, "--input-level", k, "--taps", 1, "-q"])
                    if rc != 0:
                        problems.append(f"--input-level {k}: exit {rc}: {err.strip()[:200]}")
                    else:
                        got = np.load(back)
                        if got.size != want[k].size or \
                                not np.array_equal(got.ravel(), want[k].ravel()):
                            problems.append(f"--input-level {k} ({got.shape}) differs from "
                                            f"tifffile's level {k} ({want[k].shape})")
                rc, _, err = run([OOCCONV, lv, p("lv9.npy"), "--input-level", 9, "--taps", 1,
                                  "-q"])
                if rc != 2 or "does not exist" not in err:
                    problems.append(f"--input-level 9 of 3 levels: exit {rc}: "
                                    f"{err.strip()[:200]}")
            report("--input-level reads every reduced level as tifffile does", problems)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
