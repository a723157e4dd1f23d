"""What the TIFF checks (test_tiff_*.py) share. They check TIFF input and output of oocconv (and
oocgen) against independent TIFF writers and readers. Every pixel comparison is exact (numpy array
equality), through the identity filter `--taps 1`.

1. libvips-written TIFFs (libvips' tiffsave, in process: VipsWriter): u8 u16 i16 u32 i32 f32 f64
   with 1 and 3 channels (and 2 and 4 channels for some types), each saved with no options, tiles
   64 x 32 and 16 x 16, BigTIFF, every compression vips and ooc share (none lzw deflate zstd packbits) and
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

Usage: test_tiff_*.py --bin-dir DIR [--keep] [-v] [unittest options]   (or under pytest:
   conftest.py). DIR holds oocconv (and oocgen). Prints one line per case (ok / FAIL / skip); a
   test lists every failing case; skipped (exit 77 as a script) if this python has no tifffile.
   -v also prints the command of a failing error case and the messages of passing ones.
"""
import atexit
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import cli_args  # beside this file
import cli_cases
import vips_lib
from cli_cases import report

try:
    import tifffile
except ImportError:
    cli_cases.skip_module(cli_args.entry(__name__),
                          "this python has no tifffile (pip install tifffile)")

TYPES = ["u8", "u16", "i16", "u32", "i32", "f32", "f64"]
NP = {"u8": "<u1", "u16": "<u2", "i16": "<i2", "u32": "<u4", "i32": "<i4", "f32": "<f4",
      "f64": "<f8"}
VIPS_FORMAT = {"u8": "uchar", "u16": "ushort", "i16": "short", "u32": "uint", "i32": "int",
               "f32": "float", "f64": "double"}
COMPRESS = {"none": 1, "lzw": 5, "deflate": 8, "zstd": 50000, "packbits": 32773}
TIMEOUT = 120

BIN, _REST = cli_args.bin_dir_and_rest(cli_args.entry(__name__))
KEEP = cli_args.take_flag(_REST, "--keep")  # as a script: keep the temporary folder
VERBOSE = "-v" in _REST  # as a script (unittest's -v too)

OOCCONV = os.path.join(BIN, "oocconv")
OOCGEN = os.path.join(BIN, "oocgen")
VIPS = shutil.which("vips")
TIFFCP = shutil.which("tiffcp")
if not os.access(OOCCONV, os.X_OK):
    sys.exit(f"test_tiff: no executable oocconv in {BIN}")

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


class VipsWriter:
    """libvips' tiffsave of an (H, W, C) array: in this process (vips_lib.py) where the library
    loads, else `vips rawload` + `vips tiffsave` (the same bytes)."""

    def __init__(self):
        self.lib = vips_lib.LIB

    def save(self, img, t, tif, opts):
        """Writes `img` (of type t) to `tif` with tiffsave options `opts`; None, or why not."""
        if self.lib is not None:
            return self.lib.save(img, vips_lib.target(tif, opts))
        h, w, c = img.shape
        src, vimg = write_raw(img, "vips_in.raw"), p("vips_in.v")
        for cmd in ([VIPS, "rawload", src, vimg, w, h, c, "--format", VIPS_FORMAT[t]],
                    [VIPS, "tiffsave", vimg, tif, *opts]):
            rc, _, err = run(cmd)
            if rc != 0:
                return exit_problem(cmd, rc, err) or err
        os.remove(vimg)
        return None


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


class TiffBase(unittest.TestCase):
    """The TIFF checks' base: at the end, a note of what could only be read back by oocconv."""

    @classmethod
    def tearDownClass(cls):
        if unverified[0]:
            print(f"note: no tiffcp: {unverified[0]} outputs that tifffile cannot decode without "
                  "imagecodecs (LZW, ZSTD, float predictor) were read back by oocconv only")


def main():
    """A check run as a script: unittest.main over the script's tests, with its leftover options."""
    unittest.main(argv=[sys.argv[0]] + _REST)
