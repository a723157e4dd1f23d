#!/usr/bin/env python3
"""TIFF input and output of oocconv (and oocgen), checked against independent TIFF writers and
readers. Every pixel comparison is exact (numpy array equality), through the identity filter
`--taps 1`.

1. libvips-written TIFFs (`vips rawload` + `vips tiffsave`): u8 u16 i16 u32 i32 f32 f64 with 1 and 3
   channels (and 2 and 4 channels for some types), each saved with no options, tiles 64 x 32 and
   16 x 16, BigTIFF, every compression vips and ooc share (none lzw deflate zstd packbits) and
   predictors none / horizontal / float (float only for float types, where it applies); read by
   oocconv and compared with the array they were made from. Skipped (and said so) without `vips`.
2. tifffile-written TIFFs: every type with 1 to 4 channels, each in big-endian strips, separate
   planes (striped and tiled), tiles overhanging the right and bottom edges (100 x 75 image, 32 x 48
   tiles), 1 and 7 rows per strip, Deflate (with and without the horizontal predictor), LZMA and
   BigTIFF; small --band-rows so that strips and tiles straddle bands; a 3-page file read with
   --page (and a page that does not exist: exit 2 naming the page count); sample types ooc does not
   read (i8, f16, u64, i64, complex) rejected with exit 3.
3. Round trips: raw -> oocconv -> .tif for every type x 1..4 channels x every --compress x
   {strips, --tile 16, --tile 64} (sizes from 1 x 1 up), read back both by tifffile (independent
   reader; LZW, ZSTD and the float predictor, which tifffile cannot decode without imagecodecs,
   through `tiffcp -c none` first) and by oocconv itself, plus the tags (compression, tiling, bits,
   sample format, ExtraSamples); multi-strip images; --level for deflate and zstd (readable, and
   the top level smaller than level 1); --bigtiff yes/no/auto; all-zero images (sparse blocks);
   NaN and infinities; usage errors of the TIFF output options (exit 2, no output).
   oocgen: the same seed written as .tif (tiled/compressed) and as raw gives the same pixels.
4. Metadata carried over from a TIFF input: photometric (RGB, min-is-black with extra samples,
   min-is-white, CMYK), XResolution / YResolution / ResolutionUnit, ExtraSamples (RGBA unassociated
   and associated alpha) and ImageDescription, also into tiled / compressed outputs; --out-type
   f32 / i16 / f64 / u32 give the matching SampleFormat and BitsPerSample.
5. Bad files, made by a small hand-written TIFF writer (so every tag is under control), each
   checked to give exit 3 (2 for usage errors), a message naming the problem, no crash and no
   output file (nor OUTPUT.partial): truncated files, wrong magic, strips/tiles past the end of the
   file, empty strips/tiles, 1-bit, 12-bit, palette, garbage Deflate/LZW/ZSTD data, a short Deflate
   stream, 5 samples per pixel, an uncompressed strip too short for its rows, too few strips,
   absurd sizes (10^6 x 10^6, width 2^32-1), a missing ImageLength, a directory past the end,
   --width/--height/--type/--channels contradicting the tags. The writer itself is checked by
   unbroken twins (strips, tiles, Deflate) and unusual but valid layouts (strips in reverse order
   or with filler between them, no RowsPerStrip, 20 x 24 tiles) that must read back exactly.
6. --predictor auto / none / horizontal / float x every --compress x every type: the Predictor
   tag, exact read-back, --stats naming it, the refused combinations; auto deflate floats are
   read by tifffile without imagecodecs.

Usage: tiff_check.py --bin-dir DIR [--keep] [-v] [unittest options]   (or under pytest:
   conftest.py). DIR holds oocconv (and oocgen). Prints one line per case (ok / FAIL / skip); a
   test lists every failing case; skipped (exit 77 as a script) if this python has no tifffile.
   -v also prints the command of a failing error case and the messages of passing ones.
"""
import atexit
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import numpy as np

import cli_args  # beside this file
import cli_cases
from cli_cases import report, skip

try:
    import tifffile
except ImportError:
    cli_cases.skip_module(__name__, "this python has no tifffile (pip install tifffile)")

TYPES = ["u8", "u16", "i16", "u32", "i32", "f32", "f64"]
NP = {"u8": "<u1", "u16": "<u2", "i16": "<i2", "u32": "<u4", "i32": "<i4", "f32": "<f4",
      "f64": "<f8"}
VIPS_FORMAT = {"u8": "uchar", "u16": "ushort", "i16": "short", "u32": "uint", "i32": "int",
               "f32": "float", "f64": "double"}
COMPRESS = {"none": 1, "lzw": 5, "deflate": 8, "zstd": 50000, "packbits": 32773}
TIMEOUT = 120

BIN, _REST = cli_args.bin_dir_and_rest(__name__)
KEEP = cli_args.take_flag(_REST, "--keep")  # as a script: keep the temporary folder
VERBOSE = "-v" in _REST  # as a script (unittest's -v too)

OOCCONV = os.path.join(BIN, "oocconv")
OOCGEN = os.path.join(BIN, "oocgen")
VIPS = shutil.which("vips")
TIFFCP = shutil.which("tiffcp")
if not os.access(OOCCONV, os.X_OK):
    sys.exit(f"tiff_check: no executable oocconv in {BIN}")

tmp = tempfile.mkdtemp(prefix="ooc_tiff_")
if KEEP:
    print(f"files kept in {tmp}")
else:
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
# One generator for the whole check, drawn in the tests' (numbered) order: cli_cases.py.
rng = np.random.default_rng(20240611)
# Outputs that tifffile cannot decode without imagecodecs, read back by oocconv only (no tiffcp).
unverified = [0]


def p(name):
    return os.path.join(tmp, name)


# ---------------------------------------------------------------------------------------------
# Running the binaries


def run(cmd):
    """Runs a command; returns (returncode, stdout, stderr). A timeout, or a command that cannot
    be started, reads as returncode None with the reason as stderr."""
    cmd = [str(c) for c in cmd]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=TIMEOUT)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {TIMEOUT} s"
    except OSError as e:
        return None, "", f"cannot run it: {e}"


def show(cmd):
    return " ".join(os.path.basename(str(c)) if i == 0 else str(c) for i, c in enumerate(cmd))


def exit_problem(cmd, rc, err, want=0):
    """A problem string when rc is not `want` (crash, timeout, wrong code), else None."""
    if rc == want:
        return None
    if rc is None:
        what = "did not finish"
    elif rc < 0:
        what = f"crashed with signal {-rc}"
    else:
        what = f"exit {rc}"
    return f"`{show(cmd)}`: {what} (want exit {want}); stderr: {err.strip()[:400]!r}"


def oocconv_read(path, shape, t, extra=()):
    """The image oocconv reads from `path`, copied through --taps 1 into raw; (array, problem)."""
    out = p("readback.raw")
    if os.path.exists(out):
        os.remove(out)
    cmd = [OOCCONV, path, out, "--taps", 1, "-q", *extra]
    rc, _, err = run(cmd)
    problem = exit_problem(cmd, rc, err)
    if problem:
        return None, problem
    dt = np.dtype(NP[t])
    want = int(np.prod(shape)) * dt.itemsize
    size = os.path.getsize(out)
    if size != want:
        return None, f"`{show(cmd)}` wrote {size} bytes, the image has {want}"
    return np.fromfile(out, dtype=dt).reshape(shape), None


def tifffile_read(path, page=0):
    """The image tifffile reads, as (H, W, C); LZW/ZSTD/float-predictor data, which tifffile
    cannot decode without imagecodecs, through `tiffcp -c none` first. (array, how, problem)."""
    def load(f):
        with tifffile.TiffFile(f) as tf:
            pg = tf.pages[page]
            a = pg.asarray()
            if pg.samplesperpixel > 1 and pg.planarconfig == 2:
                a = np.moveaxis(a, 0, -1)
            if pg.samplesperpixel == 1:
                a = a[..., np.newaxis]
            return a
    try:
        return load(path), "tifffile", None
    except ValueError as e:
        if "imagecodecs" not in str(e):
            return None, "tifffile", f"tifffile cannot read {os.path.basename(path)}: {e}"
    if not TIFFCP:
        unverified[0] += 1
        return None, "skipped", None
    plain = p("plain.tif")
    cmd = [TIFFCP, "-c", "none", path, plain]
    rc, _, err = run(cmd)
    if rc != 0:
        return None, "tiffcp", f"`{show(cmd)}` failed ({rc}): {err.strip()[:300]}"
    try:
        return load(plain), "tiffcp+tifffile", None
    except Exception as e:  # noqa: BLE001 - any reader failure is a finding
        return None, "tiffcp+tifffile", f"tifffile cannot read the tiffcp copy: {e}"


def compare(what, got, want):
    """A problem string when `got` differs from `want` in shape, type or any sample."""
    if got is None:
        return None
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, want {want.shape}"
    if got.dtype.kind != want.dtype.kind or got.dtype.itemsize != want.dtype.itemsize:
        return f"{what}: dtype {got.dtype}, want {want.dtype}"
    if np.array_equal(got, want, equal_nan=want.dtype.kind == "f"):
        return None
    if want.dtype.kind == "f":
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    else:
        bad = got != want
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{what}: {int(bad.sum())} of {bad.size} samples differ, first at (y, x, c) = {first}: "
            f"{got[first]!r}, want {want[first]!r}")


def random_image(t, h, w, c):
    """A random (H, W, C) image with no zero sample: integers over the type's whole range, floats
    over many magnitudes and both signs."""
    dt = np.dtype(NP[t])
    if dt.kind == "f":
        top = 30 if t == "f32" else 200
        img = rng.standard_normal((h, w, c)) * 10.0 ** rng.integers(-top, top, (h, w, c))
        img = img.astype(dt)
        img[img == 0] = 1.5
    else:
        info = np.iinfo(dt)
        img = rng.integers(info.min, info.max, (h, w, c), endpoint=True, dtype=dt)
        img.flat[:2] = (info.min or 1, info.max)
        img[img == 0] = 1
    return img


def raw_args(img, t):
    return ["--width", img.shape[1], "--type", t, "--channels", img.shape[2]]


def write_raw(img, name="in.raw"):
    path = p(name)
    img.tofile(path)
    return path


# ---------------------------------------------------------------------------------------------
# A minimal classic little-endian TIFF writer, so that the bad files have exactly the tags chosen.

BYTE, ASCII, SHORT, LONG, RATIONAL = 1, 2, 3, 4, 5
TYPE_BYTES = {BYTE: 1, ASCII: 1, SHORT: 2, LONG: 4, RATIONAL: 8}


def _tag_payload(typ, values):
    if typ == ASCII:
        return values if isinstance(values, bytes) else values.encode() + b"\0"
    if typ == RATIONAL:
        return b"".join(struct.pack("<II", n, d) for n, d in values)
    return struct.pack("<" + {BYTE: "B", SHORT: "H", LONG: "I"}[typ] * len(values), *values)


def write_tiff(path, tags, chunks, tiled=False, offsets=None, byte_counts=None, ifd_offset=None,
               cut=None, placement=None, gap=0):
    """Header, one IFD right after it, the tag values that do not fit the IFD, then `chunks` (strip
    or tile data), in the file in `placement` order (indices; default in turn), `gap` filler bytes
    after each. tags: {tag: (type, values)}. The chunk offset and byte count tags are filled in;
    `offsets` / `byte_counts` ({index: value}) override single entries, `ifd_offset` the header's
    IFD pointer, and `cut` truncates the file to that many bytes. Returns the file size before
    any cut."""
    off_tag, cnt_tag = (324, 325) if tiled else (273, 279)
    tags = dict(tags)
    tags[off_tag] = (LONG, [0] * len(chunks))
    tags[cnt_tag] = (LONG, [len(c) for c in chunks])
    order = sorted(tags)
    ifd_size = 2 + 12 * len(order) + 4
    pos = 8 + ifd_size
    placed = {}
    for tag in order:
        size = len(_tag_payload(*tags[tag]))
        if size > 4:
            pos += pos & 1
            placed[tag] = pos
            pos += size
    pos += pos & 1
    data_start = pos
    placement = list(range(len(chunks))) if placement is None else list(placement)
    starts, pos = [0] * len(chunks), data_start
    for i in placement:
        starts[i] = pos
        pos += len(chunks[i]) + gap
    for i, v in (offsets or {}).items():
        starts[i] = v
    sizes = [len(c) for c in chunks]
    for i, v in (byte_counts or {}).items():
        sizes[i] = v
    tags[off_tag] = (LONG, starts)
    tags[cnt_tag] = (LONG, sizes)
    out = bytearray(b"II*\0" + struct.pack("<I", 8 if ifd_offset is None else ifd_offset))
    out += struct.pack("<H", len(order))
    for tag in order:
        typ, values = tags[tag]
        payload = _tag_payload(typ, values)
        count = len(payload) // TYPE_BYTES[typ]
        if tag in placed:
            field = struct.pack("<I", placed[tag])
        else:
            field = payload.ljust(4, b"\0")
        out += struct.pack("<HHI", tag, typ, count) + field
    out += struct.pack("<I", 0)
    for tag in order:
        if tag in placed:
            out += b"\0" * (placed[tag] - len(out))
            out += _tag_payload(*tags[tag])
    out += b"\0" * (data_start - len(out))
    for i in placement:
        out += chunks[i] + b"\xa5" * gap
    full = len(out)
    with open(path, "wb") as f:
        f.write(bytes(out[:cut] if cut is not None else out))
    return full


def base_tags(w, h, bps=8, spp=1, photometric=1, compression=1, sample_format=1, rps=None,
              tile=None):
    tags = {
        256: (LONG, [w]), 257: (LONG, [h]), 258: (SHORT, [bps] * spp), 259: (SHORT, [compression]),
        262: (SHORT, [photometric]), 277: (SHORT, [spp]), 284: (SHORT, [1]),
        339: (SHORT, [sample_format] * spp),
    }
    if tile:
        tags[322] = (LONG, [tile[0]])
        tags[323] = (LONG, [tile[1]])
    else:
        tags[278] = (LONG, [rps or h])
    if spp > 1 and photometric != 2:
        tags[338] = (SHORT, [0] * (spp - 1))
    elif spp > 3 and photometric == 2:
        tags[338] = (SHORT, [0] * (spp - 3))
    return tags


def strips_of(img, rps):
    """Uncompressed strip payloads of an (H, W, C) little-endian image."""
    return [img[y:y + rps].tobytes() for y in range(0, img.shape[0], rps)]


def tiles_of(img, tw, th):
    """Uncompressed tile payloads (padded with zeros at the edges) of an (H, W, C) image."""
    h, w, c = img.shape
    out = []
    for y in range(0, h, th):
        for x in range(0, w, tw):
            t = np.zeros((th, tw, c), img.dtype)
            part = img[y:y + th, x:x + tw]
            t[:part.shape[0], :part.shape[1]] = part
            out.append(t.tobytes())
    return out



# =============================================================================================
# 1. TIFFs written by libvips, read by oocconv
VIPS_OPTIONS = [
    ("default", [], None),
    ("tile 64x32", ["--tile", "--tile-width", 64, "--tile-height", 32], None),
    ("tile 16x16 zstd",
     ["--tile", "--tile-width", 16, "--tile-height", 16, "--compression", "zstd"], None),
    ("bigtiff", ["--bigtiff"], None),
    ("bigtiff tile 32x16 deflate",
     ["--bigtiff", "--tile", "--tile-width", 32, "--tile-height", 16, "--compression", "deflate"],
     None),
    ("compression none", ["--compression", "none"], None),
    ("compression lzw", ["--compression", "lzw"], None),
    ("compression deflate", ["--compression", "deflate"], None),
    ("compression zstd", ["--compression", "zstd"], None),
    ("compression packbits", ["--compression", "packbits"], None),
    ("deflate predictor none", ["--compression", "deflate", "--predictor", "none"], None),
    ("lzw predictor horizontal", ["--compression", "lzw", "--predictor", "horizontal"], None),
    ("zstd predictor none", ["--compression", "zstd", "--predictor", "none"], None),
    ("lzw predictor float", ["--compression", "lzw", "--predictor", "float"], "f"),
    ("deflate predictor float", ["--compression", "deflate", "--predictor", "float"], "f"),
    ("zstd predictor float", ["--compression", "zstd", "--predictor", "float"], "f"),
]
VIPS_IMAGES = [(t, c) for t in TYPES for c in (1, 3)] + [("u8", 4), ("u16", 2), ("f32", 4),
                                                         ("i32", 4)]
VIPS_SIZES = [(131, 45), (53, 67), (37, 101), (300, 41)]


# =============================================================================================
# 2. TIFFs written by tifffile, read by oocconv
TIFFFILE_LAYOUTS = [
    # label, tifffile.imwrite arguments, extra oocconv arguments
    ("big-endian strips", dict(byteorder=">"), []),
    ("big-endian rps 7 deflate", dict(byteorder=">", rowsperstrip=7, compression="zlib"),
     ["--band-rows", 5]),
    ("separate planes", dict(planarconfig="separate"), []),
    ("separate planes, big-endian, rps 7", dict(planarconfig="separate", byteorder=">",
                                                rowsperstrip=7), ["--band-rows", 3]),
    ("separate planes, tiles 32x48", dict(planarconfig="separate", tile=(48, 32)),
     ["--band-rows", 20]),
    ("tiles 32x48 overhanging", dict(tile=(48, 32)), []),
    ("tiles 32x48 deflate", dict(tile=(48, 32), compression="zlib"), ["--band-rows", 7]),
    ("rows per strip 1", dict(rowsperstrip=1), []),
    ("rows per strip 7", dict(rowsperstrip=7), ["--band-rows", 5]),
    ("rps 7 deflate predictor", dict(rowsperstrip=7, compression="zlib", predictor=True),
     ["--band-rows", 4]),
    ("lzma", dict(compression="lzma", rowsperstrip=16), []),
    ("bigtiff tiles 64x16", dict(bigtiff=True, tile=(16, 64)), ["--band-rows", 9]),
    ("bigtiff big-endian rps 7 deflate", dict(bigtiff=True, byteorder=">", rowsperstrip=7,
                                              compression="zlib"), ["--band-rows", 6]),
    ("separate planes, tiles 32x48 deflate", dict(planarconfig="separate", tile=(48, 32),
                                                  compression="zlib"), ["--band-rows", 11]),
]

out_tif = p("out.tif")


def expect_error(name, cmd, code, keywords, out=None, also=()):
    """Runs cmd and checks: exit `code` (no crash), a stderr line 'oocconv: ...' mentioning one of
    `keywords` (case-insensitive; None: any message), every string of `also`, and no OUTPUT nor
    OUTPUT.partial left behind."""
    for f in (out, out + ".partial") if out else ():
        if os.path.exists(f):
            os.remove(f)
    rc, _, err = run(cmd)
    problems = []
    bad_exit = exit_problem(cmd, rc, err, want=code)
    if bad_exit:
        problems.append(bad_exit)
    low = err.lower()
    prog = os.path.basename(str(cmd[0]))
    if f"{prog}:" not in err:
        problems.append(f"stderr does not start with '{prog}: ': {err.strip()[:300]!r}")
    elif keywords and not any(k.lower() in low for k in keywords):
        problems.append(f"stderr {err.strip()[:400]!r} mentions none of {keywords}")
    for s in also:
        if s.lower() not in low:
            problems.append(f"stderr {err.strip()[:400]!r} does not mention {s!r}")
    for f in (out, out + ".partial") if out else ():
        if os.path.exists(f):
            problems.append(f"{os.path.basename(f)} was left behind after the error")
    if problems and VERBOSE:
        problems.append(f"command: {show(cmd)}")
    report(name, problems)
    if VERBOSE and not problems:
        print(f"        {err.strip()}")



# =============================================================================================
# 3. Round trips: raw -> oocconv -> TIFF, read by tifffile and by oocconv


def check_written(tif, img, t, *, compress="none", tile=0, bigtiff=False):
    """Problems with a TIFF oocconv wrote from `img`: tags, then the pixels as tifffile and as
    oocconv read them."""
    problems = []
    c = img.shape[2]
    dt = np.dtype(NP[t])
    try:
        with tifffile.TiffFile(tif) as tf:
            pg = tf.pages[0]
            if tf.is_bigtiff != bigtiff:
                problems.append(f"BigTIFF is {tf.is_bigtiff}, want {bigtiff}")
            if int(pg.compression) != COMPRESS[compress]:
                problems.append(f"Compression tag {int(pg.compression)}, want {COMPRESS[compress]}")
            if tile and (not pg.is_tiled or (pg.tilewidth, pg.tilelength) != (tile, tile)):
                problems.append(f"not tiled {tile}x{tile} (tiled={pg.is_tiled}, "
                                f"{pg.tilewidth}x{pg.tilelength})")
            if not tile and pg.is_tiled:
                problems.append("tiled, want strips")
            h, w = img.shape[:2]
            if (pg.imagewidth, pg.imagelength, pg.samplesperpixel) != (w, h, c):
                problems.append(f"size {pg.imagewidth}x{pg.imagelength}x{pg.samplesperpixel}, "
                                f"want {img.shape[1]}x{img.shape[0]}x{c}")
            if pg.bitspersample != 8 * dt.itemsize:
                problems.append(f"BitsPerSample {pg.bitspersample}, want {8 * dt.itemsize}")
            fmt = {"u": 1, "i": 2, "f": 3}[dt.kind]
            if int(pg.sampleformat) != fmt:
                problems.append(f"SampleFormat {int(pg.sampleformat)}, want {fmt}")
            base = {2: 3, 5: 4}.get(int(pg.photometric), 1)
            extras = len(pg.extrasamples) if pg.extrasamples else 0
            if c - base > 0 and extras != c - base:
                problems.append(f"photometric {int(pg.photometric)} with {c} samples but "
                                f"{extras} ExtraSamples (TIFF needs {c - base})")
    except Exception as e:  # noqa: BLE001 - any reader failure is a finding
        return [f"tifffile cannot parse the file: {e}"]
    got, how, problem = tifffile_read(tif)  # how == "skipped": LZW/ZSTD without tiffcp
    problems += [x for x in (problem, compare(f"{how} read", got, img)) if x]
    got, problem = oocconv_read(tif, img.shape, t, ["--band-rows", 7])
    problems += [x for x in (problem, compare("oocconv read", got, img)) if x]
    return problems



RT_SIZES = [(37, 45), (61, 83), (129, 47), (75, 100), (17, 131), (1, 1), (3, 5), (64, 64), (16, 48)]

# =============================================================================================
# 4. Metadata carried over from a TIFF input


def tag_value(pg, name):
    tag = pg.tags.get(name)
    return None if tag is None else tag.value


def ratio(v):
    return None if v is None else v[0] / v[1]



META_TAGS = ["PhotometricInterpretation", "XResolution", "YResolution", "ResolutionUnit",
             "ExtraSamples", "ImageDescription"]

# =============================================================================================
# 5. Bad TIFF files: exit 3 (2 for usage), a clear message, no crash, no output

W, H = 100, 75
bad = p("bad.tif")
conv = [OOCCONV, bad, out_tif, "--taps", 1, "-q"]
_grey = []


def grey_image():
    """The 100 x 75 u8 image of the hand-written files, drawn by the first test of section 5."""
    if not _grey:
        _grey.append(rng.integers(1, 255, (H, W, 1), dtype="u1"))
    return _grey[0]


def control(name, img, t="u8", extra=()):
    """The unbroken twin of a bad file must read back exactly: the writer is right."""
    got, problem = oocconv_read(bad, img.shape, t, extra)
    report(f"control: {name}", [x for x in (problem, compare("oocconv read", got, img)) if x])



class TiffCheck(unittest.TestCase):
    # Numbered in the order they draw their data (cli_cases.py).

    @classmethod
    def tearDownClass(cls):
        if unverified[0]:
            print(f"note: no tiffcp: {unverified[0]} outputs that tifffile cannot decode without "
                  "imagecodecs (LZW, ZSTD, float predictor) were read back by oocconv only")

    def test_1_libvips_inputs(self):
        if not VIPS:
            self.skipTest("no `vips` on PATH: the libvips-written TIFF checks did not run")
        with cli_cases.cases(self):
            for n, (t, c) in enumerate(VIPS_IMAGES):
                h, w = VIPS_SIZES[n % len(VIPS_SIZES)]
                img = random_image(t, h, w, c)
                src = write_raw(img, "vips_in.raw")
                vimg = p("vips_in.v")
                cmd = [VIPS, "rawload", src, vimg, w, h, c, "--format", VIPS_FORMAT[t]]
                rc, _, err = run(cmd)
                if rc != 0:
                    report(f"vips {t}x{c} rawload", [exit_problem(cmd, rc, err)])
                    continue
                for label, opts, only in VIPS_OPTIONS:
                    if only and np.dtype(NP[t]).kind != only:
                        continue
                    name = f"vips {t} x{c} {h}x{w} tiffsave {label}"
                    tif = p("vips.tif")
                    cmd = [VIPS, "tiffsave", vimg, tif, *opts]
                    rc, _, err = run(cmd)
                    if rc != 0:
                        skip(name, f"vips could not write it: {err.strip()[:200]}")
                        continue
                    got, problem = oocconv_read(tif, img.shape, t)
                    report(name, [x for x in (problem, compare("oocconv read", got, img)) if x])
                os.remove(vimg)

    def tifffile_layouts(self, only):
        """Every layout of TIFFFILE_LAYOUTS, written by tifffile, for one type."""
        with cli_cases.cases(self):
            for t in (only,):
                for c in (1, 2, 3, 4):
                    h, w = 75, 100
                    img = random_image(t, h, w, c)
                    for label, kw, extra in TIFFFILE_LAYOUTS:
                        kw = dict(kw)
                        if kw.get("predictor") and np.dtype(NP[t]).kind == "f":
                            continue  # tifffile's float predictor needs imagecodecs
                        if kw.get("planarconfig") == "separate" and c == 1:
                            continue  # one sample: separate is contig
                        name = f"tifffile {t} x{c} {label}"
                        tif = p("tifffile.tif")
                        data = img if c > 1 else img[..., 0]
                        kw.setdefault("photometric", "rgb" if c >= 3 else "minisblack")
                        if c > 1:
                            kw.setdefault("planarconfig", "contig")
                        if kw.get("planarconfig") == "separate":
                            data = np.ascontiguousarray(np.moveaxis(img, -1, 0))
                        if "byteorder" in kw:
                            data = data.astype(data.dtype.newbyteorder(kw["byteorder"]))
                        tifffile.imwrite(tif, data, metadata=None, **kw)
                        got, problem = oocconv_read(tif, img.shape, t, extra)
                        if (problem and kw.get("compression") == "lzma" and "compression" in problem.lower()
                                and "exit 3" in problem):
                            skip(name, "this libtiff has no LZMA codec (oocconv said so, exit 3)")
                            continue
                        report(name, [x for x in (problem, compare("oocconv read", got, img)) if x])

    def test_2b_pages(self):
        """A 3-page file, pages of different types, shapes and layouts: --page picks one."""
        with cli_cases.cases(self):
            # A 3-page file, pages of different types, shapes and layouts: --page picks one.
            pages = [random_image("u8", 40, 50, 1), random_image("u16", 37, 61, 3),
                     random_image("f32", 23, 29, 1)]
            multi = p("pages.tif")
            with tifffile.TiffWriter(multi) as tw:
                tw.write(pages[0][..., 0], photometric="minisblack", metadata=None)
                tw.write(pages[1], photometric="rgb", compression="zlib", rowsperstrip=5, metadata=None)
                tw.write(pages[2][..., 0], photometric="minisblack", tile=(16, 16), metadata=None)
            TN = {"u1": "u8", "u2": "u16", "f4": "f32"}
            for page, want in [(None, pages[0])] + list(enumerate(pages)):
                t = TN[want.dtype.str[1:]]
                extra = [] if page is None else ["--page", page]
                got, problem = oocconv_read(multi, want.shape, t, extra)
                report(f"3-page file, {'no --page' if page is None else f'--page {page}'}",
                       [x for x in (problem, compare("oocconv read", got, want)) if x])
            expect_error("3-page file, --page 5: usage error naming the page count",
                         [OOCCONV, multi, out_tif, "--taps", 1, "-q", "--page", 5], 2, ["3 page"], out_tif,
                         also=["5"])
            expect_error("3-page file, --page -1: usage error",
                         [OOCCONV, multi, out_tif, "--taps", 1, "-q", "--page", -1], 2, ["page"], out_tif)

    def test_2c_sample_types_not_read(self):
        with cli_cases.cases(self):
            # Sample types ooc does not read, written by tifffile.
            for dtype, keys in [("i1", ["8-bit signed"]), ("f2", ["16-bit floating"]),
                                ("u8", ["64-bit unsigned"]), ("i8", ["64-bit signed"]),
                                ("c8", ["complex", "sample format"])]:
                bad = p("badtype.tif")
                tifffile.imwrite(bad, np.ones((9, 11), dtype), photometric="minisblack", metadata=None)
                expect_error(f"tifffile {np.dtype(dtype).name} image: exit 3",
                             [OOCCONV, bad, out_tif, "--taps", 1, "-q"], 3, keys, out_tif)

    def round_trips(self, only):
        """raw -> oocconv -> TIFF of one type, every channel count, codec and layout."""
        with cli_cases.cases(self):
            n = TYPES.index(only) * 60  # round trips of the types before
            for t in (only,):
                for c in (1, 2, 3, 4):
                    for compress in COMPRESS:
                        for tile in (0, 16, 64):
                            h, w = RT_SIZES[n % len(RT_SIZES)]
                            n += 1
                            img = random_image(t, h, w, c)
                            src = write_raw(img)
                            layout = f"tile {tile}" if tile else "strips"
                            name = f"round trip {t} x{c} {h}x{w} --compress {compress} {layout}"
                            cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, t),
                                   "--compress", compress, "--band-rows", 1 + n % 9]
                            if tile:
                                cmd += ["--tile", tile]
                            rc, _, err = run(cmd)
                            problem = exit_problem(cmd, rc, err)
                            report(name, [problem] if problem else
                                   check_written(out_tif, img, t, compress=compress, tile=tile))

    def test_3b_multi_strip(self):
        with cli_cases.cases(self):
            # Several strips per image (strips are about 1 MiB): wide samples, many rows.
            for t, c, h, w in [("f64", 4, 301, 300), ("i32", 3, 611, 257), ("u16", 1, 2100, 263)]:
                for compress in ("none", "deflate", "packbits"):
                    img = random_image(t, h, w, c)
                    src = write_raw(img)
                    cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, t), "--compress", compress,
                           "--band-rows", 50]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    problems = [problem] if problem else check_written(out_tif, img, t, compress=compress)
                    if not problem:
                        with tifffile.TiffFile(out_tif) as tf:
                            strips = len(tf.pages[0].dataoffsets)
                        if strips < 2:
                            problems.append(f"expected several strips, got {strips}")
                        name_strips = f"{strips} strips"
                    else:
                        name_strips = "strips"
                    report(f"multi-strip {t} x{c} {h}x{w} --compress {compress} ({name_strips})", problems)

    def test_3c_compression_levels(self):
        with cli_cases.cases(self):
            # --level: readable, and the top level compresses a smooth image better than level 1.
            yy, xx = np.mgrid[0:300, 0:257]
            smooth = ((yy * 97 + xx * 31) % 4096 + rng.integers(0, 16, yy.shape)).astype("<u2")[..., None]
            src = write_raw(smooth)
            for compress, levels in (("deflate", (1, 6, 9)), ("zstd", (1, 3, 22))):
                sizes = {}
                for level in levels:
                    out = p(f"level_{compress}_{level}.tif")
                    cmd = [OOCCONV, src, out, "--taps", 1, "-q", *raw_args(smooth, "u16"), "--compress",
                           compress, "--level", level]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    report(f"--compress {compress} --level {level}",
                           [problem] if problem else check_written(out, smooth, "u16", compress=compress))
                    if not problem:
                        sizes[level] = os.path.getsize(out)
                if len(sizes) == len(levels):
                    lo, hi = sizes[levels[0]], sizes[levels[-1]]
                    report(f"--compress {compress}: --level {levels[-1]} ({hi} bytes) smaller than "
                           f"--level {levels[0]} ({lo} bytes)",
                           [] if hi < lo else [f"level {levels[-1]} gave {hi} bytes, level {levels[0]} {lo}"])

    def test_3d_bigtiff(self):
        with cli_cases.cases(self):
            # --bigtiff yes / no / auto.
            img = random_image("i16", 45, 77, 2)
            src = write_raw(img)
            for mode, want_big in (("yes", True), ("no", False), ("auto", False)):
                for extra, compress in (([], "none"), (["--tile", 32, "--compress", "zstd"], "zstd")):
                    cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, "i16"), "--bigtiff", mode,
                           *extra]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    report(f"--bigtiff {mode} {' '.join(map(str, extra)) or 'strips'}",
                           [problem] if problem else check_written(out_tif, img, "i16", compress=compress,
                                                                   tile=32 if extra else 0, bigtiff=want_big))

    def test_3e_zero_images(self):
        with cli_cases.cases(self):
            # All-zero images (all-zero blocks may become holes in the file) and zero blocks among data.
            for t, c in (("u8", 1), ("f32", 3), ("u16", 4)):
                for tile in (0, 16):
                    for compress in ("none", "deflate"):
                        img = np.zeros((70, 90, c), NP[t])
                        if t == "u16":
                            img[33:40, 50:60] = 7  # one non-zero patch among zero blocks
                        src = write_raw(img)
                        cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, t), "--compress",
                               compress, "--band-rows", 8] + (["--tile", tile] if tile else [])
                        rc, _, err = run(cmd)
                        problem = exit_problem(cmd, rc, err)
                        report(f"zero image {t} x{c} {'tile ' + str(tile) if tile else 'strips'} {compress}",
                               [problem] if problem else check_written(out_tif, img, t, compress=compress,
                                                                       tile=tile))

    def test_3f_nan_and_infinities(self):
        with cli_cases.cases(self):
            # NaN and infinities survive the copy (through TIFF both ways).
            for t in ("f32", "f64"):
                img = random_image(t, 29, 33, 2)
                img[3, 4, 0], img[5, 6, 1], img[7, 8, 0] = np.nan, np.inf, -np.inf
                for compress in ("none", "zstd"):
                    src = write_raw(img)
                    cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, t), "--compress", compress]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    report(f"NaN and infinities {t} {compress}",
                           [problem] if problem else check_written(out_tif, img, t, compress=compress))

    def test_3g_output_usage_errors(self):
        with cli_cases.cases(self):
            # Usage errors of the TIFF output options: exit 2, nothing written.
            img = random_image("u8", 20, 30, 1)
            src = write_raw(img)
            base = [OOCCONV, src, out_tif, "--taps", 1, "-q", *raw_args(img, "u8")]
            for opts, keys in [(["--compress", "deflate", "--level", 10], ["level"]),
                               (["--compress", "deflate", "--level", 0], ["level"]),
                               (["--compress", "zstd", "--level", 23], ["level"]),
                               (["--compress", "lzw", "--level", 5], ["level"]),
                               (["--level", 5], ["level"]),
                               (["--tile", 24], ["multiple of 16"]),
                               (["--tile", -16], ["tile"]),
                               (["--compress", "jpeg"], ["--compress"]),
                               (["--bigtiff", "maybe"], ["--bigtiff"])]:
                expect_error(f"usage: {' '.join(map(str, opts))}", base + opts, 2, keys, out_tif)
            raw_out = p("out.raw")
            expect_error("usage: --compress zstd to a .raw output",
                         [*base[:2], raw_out, *base[3:], "--compress", "zstd"], 2, ["TIFF"], raw_out)

    def test_3h_oocgen_tiff_equals_raw(self):
        """oocgen: one seed written as TIFF and as raw gives the same pixels."""
        if not os.access(OOCGEN, os.X_OK):
            self.skipTest(f"no executable oocgen in {BIN}")
        with cli_cases.cases(self):
            for k, (pattern, t, c, opts, compress, tile) in enumerate([
                    ("noise", "f32", 1, [], "none", 0),
                    ("gradient", "u16", 3, ["--compress", "deflate", "--tile", 32], "deflate", 32),
                    ("checker", "u8", 4, ["--compress", "zstd"], "zstd", 0),
                    ("gaussian-spots", "i16", 1, ["--compress", "lzw", "--tile", 16], "lzw", 16),
                    ("noise", "f64", 2, ["--compress", "packbits", "--tile", 48], "packbits", 48),
                    ("gradient", "i32", 3, ["--bigtiff", "yes"], "none", 0)]):
                h, w = 83, 121
                common = ["--width", w, "--height", h, "--type", t, "--channels", c, "--pattern", pattern,
                          "--seed", 11 + k, "-q"]
                raw_gen, tif_gen = p("gen.raw"), p("gen.tif")
                cmds = [[OOCGEN, raw_gen, *common], [OOCGEN, tif_gen, *common, *opts]]
                problems = []
                for cmd in cmds:
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    if problem:
                        problems.append(problem)
                if not problems:
                    want = np.fromfile(raw_gen, NP[t]).reshape(h, w, c)
                    problems = check_written(tif_gen, want, t, compress=compress, tile=tile,
                                             bigtiff="yes" in opts)
                report(f"oocgen {pattern} {t} x{c} {' '.join(map(str, opts)) or 'strips'}: TIFF == raw",
                       problems)

    def test_4a_metadata_carried_over(self):
        with cli_cases.cases(self):
            META_CASES = [
                # label, image, tifffile.imwrite arguments, oocconv output options
                ("RGB u16", random_image("u16", 31, 47, 3),
                 dict(photometric="rgb", resolution=(300, 150), resolutionunit="CENTIMETER",
                      description="hello ooc"), []),
                ("RGB u16 to tiled zstd", random_image("u16", 31, 47, 3),
                 dict(photometric="rgb", resolution=(300, 150), resolutionunit="CENTIMETER",
                      description="hello ooc"), ["--compress", "zstd", "--tile", 16]),
                ("RGBA u8 unassociated alpha", random_image("u8", 33, 41, 4),
                 dict(photometric="rgb", extrasamples=["UNASSALPHA"], resolution=(72, 96),
                      resolutionunit="INCH", description="rgba image"), []),
                ("RGBA f32 associated alpha, deflate", random_image("f32", 19, 23, 4),
                 dict(photometric="rgb", extrasamples=["ASSOCALPHA"], description="premultiplied"),
                 ["--compress", "deflate"]),
                ("grey + alpha u16", random_image("u16", 21, 35, 2),
                 dict(photometric="minisblack", planarconfig="contig", extrasamples=["UNASSALPHA"],
                      resolution=(10, 20), resolutionunit="CENTIMETER"), ["--tile", 32]),
                ("min-is-black, 3 samples", random_image("u8", 21, 35, 3),
                 dict(photometric="minisblack", planarconfig="contig", description="three bands"), []),
                ("min-is-white u16", random_image("u16", 21, 35, 1),
                 dict(photometric="miniswhite", description="inverted"), ["--compress", "lzw"]),
                ("CMYK u8", random_image("u8", 21, 35, 4),
                 dict(photometric="separated", description="cmyk"), []),
            ]
            for label, img, kw, opts in META_CASES:
                src = p("meta_in.tif")
                data = img if img.shape[2] > 1 else img[..., 0]
                tifffile.imwrite(src, data, metadata=None, software=False, **kw)
                t = {"u1": "u8", "u2": "u16", "f4": "f32"}[img.dtype.str[1:]]
                cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", *opts]
                rc, _, err = run(cmd)
                problem = exit_problem(cmd, rc, err)
                if problem:
                    report(f"metadata {label}", [problem])
                    continue
                problems = []
                with tifffile.TiffFile(src) as a, tifffile.TiffFile(out_tif) as b:
                    pa, pb = a.pages[0], b.pages[0]
                    for tag in META_TAGS:
                        va, vb = tag_value(pa, tag), tag_value(pb, tag)
                        if tag in ("XResolution", "YResolution"):
                            va, vb = ratio(va), ratio(vb)
                        if isinstance(va, (tuple, list)):
                            va, vb = tuple(int(x) for x in va), tuple(int(x) for x in vb or ())
                        elif va is not None and not isinstance(va, (str, float)):
                            va, vb = int(va), None if vb is None else int(vb)
                        if va != vb:
                            problems.append(f"{tag}: input {va!r}, output {vb!r}")
                if kw.get("resolution"):  # what the brief asked for, spelled out
                    with tifffile.TiffFile(out_tif) as b:
                        pb = b.pages[0]
                        want_res = (kw["resolution"][0], kw["resolution"][1])
                        got_res = (ratio(tag_value(pb, "XResolution")), ratio(tag_value(pb, "YResolution")))
                        if got_res != want_res:
                            problems.append(f"resolution {got_res}, want {want_res}")
                got, how, problem = tifffile_read(out_tif)
                problems += [x for x in (problem, compare(f"{how} read", got, img)) if x]
                report(f"metadata {label} {' '.join(map(str, opts))}".rstrip(), problems)

    def test_4b_out_type_tags(self):
        with cli_cases.cases(self):
            # --out-type: the sample format and bits follow the output type; the tags still carry over.
            img = rng.integers(1, 30000, (25, 39, 3), dtype="<u2")
            src = p("meta_in.tif")
            tifffile.imwrite(src, img, photometric="rgb", resolution=(300, 150), resolutionunit="CENTIMETER",
                             description="hello ooc", metadata=None)
            for out_type, fmt, bits, dt in (("f32", 3, 32, "<f4"), ("i16", 2, 16, "<i2"), ("f64", 3, 64, "<f8"),
                                            ("u32", 1, 32, "<u4")):
                for opts in ([], ["--compress", "deflate", "--tile", 16]):
                    cmd = [OOCCONV, src, out_tif, "--taps", 1, "-q", "--out-type", out_type, *opts]
                    rc, _, err = run(cmd)
                    problem = exit_problem(cmd, rc, err)
                    name = f"--out-type {out_type} {' '.join(map(str, opts))}".rstrip()
                    if problem:
                        report(name, [problem])
                        continue
                    problems = []
                    with tifffile.TiffFile(out_tif) as b:
                        pb = b.pages[0]
                        sf, bps = tag_value(pb, "SampleFormat"), tag_value(pb, "BitsPerSample")
                        sf = tuple(int(x) for x in sf) if isinstance(sf, tuple) else (int(sf or 1),) * 3
                        bps = tuple(bps) if isinstance(bps, tuple) else (bps,) * 3
                        if sf != (fmt,) * 3:
                            problems.append(f"SampleFormat {sf}, want {(fmt,) * 3}")
                        if bps != (bits,) * 3:
                            problems.append(f"BitsPerSample {bps}, want {(bits,) * 3}")
                        if int(tag_value(pb, "PhotometricInterpretation")) != 2:
                            problems.append("photometric is no longer RGB")
                        if tag_value(pb, "ImageDescription") != "hello ooc":
                            problems.append(f"ImageDescription {tag_value(pb, 'ImageDescription')!r}")
                        unit = tag_value(pb, "ResolutionUnit")
                        if ratio(tag_value(pb, "XResolution")) != 300 or unit is None or int(unit) != 3:
                            problems.append("resolution not carried over")
                    got, how, problem = tifffile_read(out_tif)
                    problems += [x for x in (problem, compare(f"{how} read", got, img.astype(dt))) if x]
                    report(name, problems)

    def test_5a_truncated_magic_offsets(self):
        grey = grey_image()
        with cli_cases.cases(self):
            # Strips of 7 rows, uncompressed.
            size = write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7))
            control("uncompressed strips of 7 rows (hand-written)", grey)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), cut=size // 2)
            expect_error("(a) truncated file: cut in half, strips past the end", conv, 3,
                         ["truncat", "past the end"], out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), cut=60)
            expect_error("(a) truncated file: cut inside the directory", conv, 3, ["truncat"], out_tif)
            with open(bad, "wb") as f:
                f.write(b"II*\0\x08\0\0\0")
            expect_error("(a) truncated file: header only", conv, 3, ["truncat"], out_tif)
            cmd = [OOCCONV, write_raw(random_image("u16", 40, 60, 3)), bad, "--taps", 1, "-q", "--width", 60,
                   "--type", "u16", "--channels", 3, "--compress", "deflate"]
            rc, _, err = run(cmd)
            if rc != 0:
                report("(a) truncated oocconv output", [exit_problem(cmd, rc, err)])
            else:
                with open(bad, "r+b") as f:
                    f.truncate(os.path.getsize(bad) // 2)
                expect_error("(a) truncated file: an oocconv TIFF (directory at the end) cut in half", conv, 3,
                             ["truncat", "past the end"], out_tif)

            with open(p("x.tif"), "wb") as f:
                f.write(b"IX*\0" + bytes(200))
            expect_error("(b) wrong magic IX*: x.tif", [OOCCONV, p("x.tif"), out_tif, "--taps", 1, "-q"], 3,
                         ["magic", "not a TIFF"], out_tif)
            raw_file = write_raw(random_image("u8", 10, 10, 1), "plain.raw")
            expect_error("(b) --in-format tiff on a raw file", [OOCCONV, raw_file, out_tif, "--taps", 1, "-q",
                         "--in-format", "tiff", "--width", 10, "--type", "u8"], 3, ["not a TIFF"], out_tif)

            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), offsets={3: size + 1000})
            expect_error("(c) strip offset past the end of the file", conv, 3, ["past the end"], out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), byte_counts={10: size})
            expect_error("(c) strip byte count running past the end of the file", conv, 3, ["past the end"],
                         out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), byte_counts={2: 0})
            expect_error("(d) zero byte count strip", conv, 3, ["empty"], out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), byte_counts={4: 300})
            expect_error("(d) uncompressed strip shorter than its rows", conv, 3, ["damaged", "need"], out_tif)

    def test_5b_unsupported_layouts(self):
        grey = grey_image()
        with cli_cases.cases(self):
            row_bits = lambda bits: (W * bits + 7) // 8  # noqa: E731
            write_tiff(bad, base_tags(W, H, bps=1, photometric=0), [bytes(row_bits(1) * H)])
            expect_error("(e) 1-bit bilevel", conv, 3, ["1-bit"], out_tif)
            write_tiff(bad, base_tags(W, H, bps=12), [bytes(row_bits(12) * H)])
            expect_error("(f) 12-bit samples", conv, 3, ["12-bit"], out_tif)
            palette = base_tags(W, H, photometric=3)
            palette[320] = (SHORT, [(i * 257) & 0xFFFF for i in range(256)] * 3)
            write_tiff(bad, palette, [grey.tobytes()])
            expect_error("(g) palette (photometric 3 with a ColorMap)", conv, 3, ["palette"], out_tif)

    def test_5c_unusual_valid_layouts_and_absurd_sizes(self):
        grey = grey_image()
        with cli_cases.cases(self):
            # Unusual but valid layouts: strips stored in reverse order, filler between strips, byte counts
            # larger than the rows need, no RowsPerStrip tag (one strip), a tile size not a multiple of 16.
            strips = strips_of(grey, 7)
            write_tiff(bad, base_tags(W, H, rps=7), strips, placement=reversed(range(len(strips))))
            control("strips stored in reverse order", grey, extra=["--band-rows", 10])
            write_tiff(bad, base_tags(W, H, rps=7), strips, gap=13)
            control("13 filler bytes between strips", grey)
            write_tiff(bad, base_tags(W, H, rps=7), [s + bytes(5) for s in strips])
            control("strip byte counts 5 larger than the rows need", grey)
            no_rps = base_tags(W, H)
            del no_rps[278]
            write_tiff(bad, no_rps, [grey.tobytes()])
            control("no RowsPerStrip tag", grey)
            write_tiff(bad, base_tags(W, H, tile=(20, 24)), tiles_of(grey, 20, 24), tiled=True)
            control("tiles 20x24 (not a multiple of 16)", grey)
            write_tiff(bad, base_tags(W, H, rps=7), strips[:5])
            expect_error("too few strips for the image (5 of 11)", conv, 3, None, out_tif)
            write_tiff(bad, base_tags(1_000_000, 1_000_000, rps=1_000_000), [bytes(100)])
            expect_error("10^6 x 10^6 image with a 100-byte strip", conv, 3, ["truncat", "past the end"],
                         out_tif)
            write_tiff(bad, base_tags(2 ** 32 - 1, 3, spp=4, bps=32, sample_format=3, photometric=2, rps=1,
                                      compression=8), [zlib.compress(b"abc")] * 3)
            expect_error("width 2^32-1 x 4 x f32 Deflate strips", conv, 3, None, out_tif)

    def test_5d_tiles(self):
        grey = grey_image()
        with cli_cases.cases(self):
            # Tiles of 32 x 48 over the 100 x 75 image: 4 x 2 tiles, overhanging.
            tiles = tiles_of(grey, 32, 48)
            size = write_tiff(bad, base_tags(W, H, tile=(32, 48)), tiles, tiled=True)
            control("tiles 32x48 (hand-written)", grey)
            write_tiff(bad, base_tags(W, H, tile=(32, 48)), tiles, tiled=True, offsets={5: size + 64})
            expect_error("(h) tile offset past the end of the file", conv, 3, ["past the end"], out_tif)
            write_tiff(bad, base_tags(W, H, tile=(32, 48)), tiles, tiled=True, byte_counts={6: 0})
            expect_error("(h) zero byte count tile", conv, 3, ["empty"], out_tif)

    def test_5e_damaged_compressed_strips(self):
        grey = grey_image()
        with cli_cases.cases(self):
            # Deflate strips: valid, then garbage, then a valid stream that ends too soon.
            deflated = [zlib.compress(s) for s in strips_of(grey, 16)]
            for code in (8, 32946):
                write_tiff(bad, base_tags(W, H, rps=16, compression=code), deflated)
                control(f"Deflate (compression {code}) strips (hand-written)", grey, extra=["--band-rows", 6])
                garbage = list(deflated)
                garbage[2] = bytes((255 - i) % 256 for i in range(len(garbage[2])))
                write_tiff(bad, base_tags(W, H, rps=16, compression=code), garbage)
                expect_error(f"(i) Deflate (compression {code}) strip of garbage", conv, 3,
                             ["decode", "damaged"], out_tif)
            short = list(deflated)
            short[1] = zlib.compress(strips_of(grey, 16)[1][:500])
            write_tiff(bad, base_tags(W, H, rps=16, compression=8), short)
            expect_error("(i) Deflate strip that decodes to too few bytes", conv, 3, ["decode", "damaged"],
                         out_tif)
            for code, label in ((5, "LZW"), (50000, "ZSTD")):
                write_tiff(bad, base_tags(W, H, rps=16, compression=code),
                           [bytes((7 * i + 13) % 256 for i in range(300)) for _ in range(5)])
                expect_error(f"(i) {label} strips of garbage", conv, 3, ["decode", "damaged"], out_tif)

    def test_5f_samples_contradictions_and_directories(self):
        grey = grey_image()
        with cli_cases.cases(self):
            five = rng.integers(1, 255, (H, W, 5), dtype="u1")
            write_tiff(bad, base_tags(W, H, spp=5), [five.tobytes()])
            expect_error("(j) 5 samples per pixel", conv, 3, ["samples per pixel"], out_tif)

            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7))
            expect_error("(k) --width 99 for a TIFF 100 wide", conv + ["--width", 99], 2, ["width"],
                         out_tif, also=["100", "99"])
            expect_error("(k) --type u16 for a u8 TIFF", conv + ["--type", "u16"], 2, ["type"], out_tif,
                         also=["u8", "u16"])
            expect_error("(k) --channels 3 for a 1-channel TIFF", conv + ["--channels", 3], 2, ["channels"],
                         out_tif)
            expect_error("(k) --height 70 for a TIFF 75 high", conv + ["--height", 70], 2, ["height"],
                         out_tif, also=["75", "70"])

            no_length = base_tags(W, H, rps=7)
            del no_length[257]
            write_tiff(bad, no_length, strips_of(grey, 7))
            expect_error("missing ImageLength", conv, 3, None, out_tif)
            write_tiff(bad, base_tags(W, H, rps=7), strips_of(grey, 7), ifd_offset=10 ** 6)
            expect_error("directory offset past the end of the file", conv, 3, ["truncat", "damaged"], out_tif)
            expect_error("input that does not exist", [OOCCONV, p("nothing.tif"), out_tif, "--taps", 1, "-q"],
                         3, ["does not exist"], out_tif)

    def test_6_predictors(self):
        """--predictor auto|none|horizontal|float x every --compress x every type (1-3 channels,
        strips and tiles): the Predictor tag (auto: horizontal with lzw, deflate and zstd, floats
        too; none otherwise), the pixels read back exactly by tifffile (through tiffcp where
        tifffile needs imagecodecs: LZW, ZSTD, the float predictor) and by oocconv, --stats json
        and text naming the predictor that ran. float on integer samples and any predictor but
        none without lzw/deflate/zstd are refused (exit 2, nothing left). An auto deflate f32/f64
        output is read by tifffile itself (no imagecodecs needed, as Debian ships it)."""
        tag = {"none": 1, "horizontal": 2, "float": 3}
        with cli_cases.cases(self):
            for i, t in enumerate(TYPES):
                img = random_image(t, 23 + i, 37, 1 + i % 3)
                src = write_raw(img)
                for j, compress in enumerate(("none", "packbits", "lzw", "deflate", "zstd")):
                    takes = compress in ("lzw", "deflate", "zstd")
                    tile = 16 if (i + j) % 2 else 0
                    for pred in ("auto", "none", "horizontal", "float"):
                        label = f"{t} x{img.shape[2]} --compress {compress} --predictor {pred}"
                        cmd = [OOCCONV, src, out_tif, "--taps", 1, "--no-progress", "--stats",
                               "json", *raw_args(img, t), "--compress", compress, "--predictor",
                               pred] + (["--tile", tile] if tile else [])
                        if pred in ("horizontal", "float") and (
                                not takes or (pred == "float" and t not in ("f32", "f64"))):
                            expect_error(f"refused: {label}", cmd, 2, ["--predictor"], out_tif)
                            continue
                        rc, out, err = run(cmd)
                        problem = exit_problem(cmd, rc, err)
                        if problem:
                            report(label, [problem])
                            continue
                        want = pred if pred != "auto" else "horizontal" if takes else "none"
                        problems = check_written(out_tif, img, t, compress=compress, tile=tile)
                        with tifffile.TiffFile(out_tif) as tf:
                            if int(tf.pages[0].predictor) != tag[want]:
                                problems.append(f"Predictor tag {int(tf.pages[0].predictor)}, "
                                                f"want {tag[want]} ({want})")
                        said = json.loads(out)["output"].get("predictor")
                        if said != want:
                            problems.append(f"--stats json says predictor {said!r}, want {want!r}")
                        if compress == "deflate" and want != "float":
                            _, how, problem = tifffile_read(out_tif)
                            if how != "tifffile":
                                problems.append(f"tifffile alone cannot read it: {problem}")
                        report(label, problems)
            img = random_image("f64", 30, 20, 1)
            src = write_raw(img)
            cmd = [OOCCONV, src, out_tif, "--taps", 1, "--no-progress", "--stats", "text",
                   *raw_args(img, "f64"), "--compress", "zstd", "--predictor", "float"]
            rc, out, err = run(cmd)
            report("--stats text names the predictor",
                   [exit_problem(cmd, rc, err) or
                    (None if "zstd, predictor float" in out else f"stats text: {out[:300]!r}")])
            oocrun = os.path.join(BIN, "oocrun")
            cmd = [oocrun, src, out_tif, "abs", *raw_args(img, "f64"), "-q", "--compress", "lzw",
                   "--predictor", "float"]
            rc, _, err = run(cmd)
            problem = exit_problem(cmd, rc, err)
            report("oocrun --predictor float",
                   [problem] if problem else check_written(out_tif, np.abs(img), "f64",
                                                           compress="lzw"))
            expect_error("refused: --predictor horizontal to a .npy output",
                         [OOCCONV, src, p("o.npy"), "--taps", 1, "-q", *raw_args(img, "f64"),
                          "--predictor", "horizontal"], 2, ["--predictor"], p("o.npy"))


# One test per type of the two largest sweeps (test_2a_N_..., test_3a_N_...), numbered in order.
for _i, _t in enumerate(TYPES):
    setattr(TiffCheck, f"test_2a_{_i}_tifffile_layouts_{_t}",
            (lambda t: lambda self: self.tifffile_layouts(t))(_t))
    setattr(TiffCheck, f"test_3a_{_i}_round_trips_{_t}",
            (lambda t: lambda self: self.round_trips(t))(_t))

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST)
